//! Go values as a `field.Error` holds them (its `BadValue interface{}`), typed the way Go types
//! them, so that they render as each Kubernetes minor renders them: Go syntax (`fmt`'s `%#v`)
//! before 1.34, JSON (`encoding/json`) from 1.34 on.

use serde_json::Value;

use super::{go_float, go_json, go_json_float, go_json_string, go_number, go_quote, write_joined};

/// What `%#v` prints for the address of a non-nil pointer below the top level. The API server
/// prints the pointer's real address there (`(*bool)(0xc000a1b2c8)`), which is not reproducible:
/// this stands in for it.
pub const POINTER_ADDRESS: &str = "0xc000000000";

/// A Go value with its Go type. Type names are those `reflect` gives: the package name, not its
/// path (`apiextensions.ValidationRule`), and `interface {}` with a space.
#[derive(Clone, Debug, PartialEq)]
pub enum GoValue {
    Bool(bool),
    /// A signed integer (`int`, `int32`, `int64`: Go prints them alike in both renderings).
    Int(i64),
    /// A `float64`.
    Float(f64),
    /// A `string`.
    Str(String),
    /// A value of a named string type (`apiextensions.FieldValueErrorReason`, `types.UID`): Go
    /// syntax quotes it as a string, but from 1.34 a `field.Error` renders it as JSON, not with
    /// `%q` (its type is not `string`).
    NamedStr(&'static str, String),
    /// `*T`, with T's name; `None` is nil.
    Ptr(&'static str, Option<Box<GoValue>>),
    /// A slice, with its type's name (`[]string`, `apiextensions.ValidationRules`); `None` is a
    /// nil slice, which differs from an empty one in both renderings.
    Slice(&'static str, Option<Vec<GoValue>>),
    /// A map with string keys, with its type's name; `None` is a nil map. Both renderings sort
    /// the keys.
    Map(&'static str, Option<Vec<(String, GoValue)>>),
    /// A struct without JSON tags (the API's internal types): its name and its fields in
    /// declaration order.
    Struct(&'static str, Vec<(&'static str, GoValue)>),
    /// An interface (`interface {}`, or a named one such as `apiextensions.JSON`), with its name,
    /// holding a decoded JSON value: `map[string]interface {}`, `[]interface {}`, `string`,
    /// `int64` (integers), `float64` (other numbers), `bool`, or nothing (`null`).
    Any(&'static str, Value),
}

impl GoValue {
    /// Whether the value holds a `ValidationRule` or a `CustomResourceDefinitionVersion`, whose
    /// fields changed in 1.29 and 1.30 ([`GoValue::as_api_types_of`]).
    pub fn names_api_types_of_1_30(&self) -> bool {
        match self {
            GoValue::Struct(name, fields) => {
                matches!(
                    *name,
                    "apiextensions.ValidationRule"
                        | "apiextensions.CustomResourceDefinitionVersion"
                ) || fields.iter().any(|(_, v)| v.names_api_types_of_1_30())
            }
            GoValue::Ptr(_, Some(v)) => v.names_api_types_of_1_30(),
            GoValue::Slice(_, Some(vs)) => vs.iter().any(GoValue::names_api_types_of_1_30),
            GoValue::Map(_, Some(es)) => es.iter().any(|(_, v)| v.names_api_types_of_1_30()),
            _ => false,
        }
    }

    /// The value as Kubernetes `k`'s internal API types hold it: before 1.30 a
    /// `CustomResourceDefinitionVersion` has no `SelectableFields` and a `ValidationRule`'s
    /// `OptionalOldSelf` is nil (dropped on create while `CRDValidationRatcheting` is off by
    /// default); before 1.29 a `ValidationRule` has no `OptionalOldSelf`.
    pub fn as_api_types_of(&self, k: super::Version) -> GoValue {
        let before_1_30 = !super::api_types_of_1_30(k);
        let has_old_self = super::rules_have_optional_old_self(k);
        match self {
            GoValue::Struct(name, fields) => GoValue::Struct(
                name,
                fields
                    .iter()
                    .filter(|(f, _)| match (*name, *f) {
                        ("apiextensions.CustomResourceDefinitionVersion", "SelectableFields") => {
                            !before_1_30
                        }
                        ("apiextensions.ValidationRule", "OptionalOldSelf") => has_old_self,
                        _ => true,
                    })
                    .map(|(f, v)| match (*name, *f) {
                        ("apiextensions.ValidationRule", "OptionalOldSelf") if before_1_30 => {
                            (*f, GoValue::ptr_bool(None))
                        }
                        _ => (*f, v.as_api_types_of(k)),
                    })
                    .collect(),
            ),
            GoValue::Ptr(t, Some(v)) => GoValue::Ptr(t, Some(Box::new(v.as_api_types_of(k)))),
            GoValue::Slice(t, Some(vs)) => {
                GoValue::Slice(t, Some(vs.iter().map(|v| v.as_api_types_of(k)).collect()))
            }
            GoValue::Map(t, Some(es)) => GoValue::Map(
                t,
                Some(
                    es.iter()
                        .map(|(n, v)| (n.clone(), v.as_api_types_of(k)))
                        .collect(),
                ),
            ),
            v => v.clone(),
        }
    }

    /// An `interface{}` holding a decoded JSON value.
    pub fn any(v: Value) -> Self {
        GoValue::Any("interface {}", v)
    }

    /// A `*string`.
    pub fn ptr_str(v: Option<&str>) -> Self {
        GoValue::Ptr("string", v.map(|s| Box::new(GoValue::Str(s.to_string()))))
    }

    /// A `*bool`.
    pub fn ptr_bool(v: Option<bool>) -> Self {
        GoValue::Ptr("bool", v.map(|b| Box::new(GoValue::Bool(b))))
    }

    /// A `[]string`.
    pub fn strings(v: Option<&[String]>) -> Self {
        GoValue::Slice(
            "[]string",
            v.map(|v| v.iter().map(|s| GoValue::Str(s.clone())).collect()),
        )
    }

    /// `apiequality.Semantic.DeepEqual`: `reflect.DeepEqual`, but with nil and empty slices and
    /// maps equal.
    pub fn semantic_eq(&self, other: &GoValue) -> bool {
        use GoValue::*;
        match (self, other) {
            (Ptr(_, a), Ptr(_, b)) => match (a, b) {
                (Some(a), Some(b)) => a.semantic_eq(b),
                (a, b) => a.is_none() && b.is_none(),
            },
            (Slice(_, a), Slice(_, b)) => {
                let (a, b) = (
                    a.as_deref().unwrap_or_default(),
                    b.as_deref().unwrap_or_default(),
                );
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.semantic_eq(y))
            }
            (Map(_, a), Map(_, b)) => {
                let (a, b) = (
                    a.as_deref().unwrap_or_default(),
                    b.as_deref().unwrap_or_default(),
                );
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, x)| b.iter().any(|(l, y)| k == l && x.semantic_eq(y)))
            }
            (Struct(_, a), Struct(_, b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|((_, x), (_, y))| x.semantic_eq(y))
            }
            (Any(_, a), Any(_, b)) => go_json(a) == go_json(b),
            (a, b) => a == b,
        }
    }

    /// fmt's `%#v` of the value (as the top-level argument).
    pub fn go_syntax(&self) -> String {
        let mut out = String::new();
        self.write_go_syntax(&mut out, 0);
        out
    }

    /// `encoding/json`'s `Marshal` of the value.
    pub fn json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    /// How `field.Error` of Kubernetes 1.34 and later renders the value as its `BadValue`: with
    /// `%v` if it is an `int64`, `int32`, `float64` or `bool`, `%q` if it is a `string`, else as
    /// JSON (kubernetes/kubernetes#132314).
    pub fn bad_value_json(&self) -> String {
        match self.dynamic() {
            Some(Scalar::Str(s)) => go_quote(s),
            Some(Scalar::Other(v)) => v,
            None => self.json(),
        }
    }

    /// How `field.Error` before Kubernetes 1.34 renders the value as its `BadValue`: a nil
    /// value or nil pointer as the string `"null"` (quoted), a non-nil pointer as what it points
    /// to; then `%v` for an `int64`, `int32`, `float64` or `bool`, `%q` for a `string`, and Go
    /// syntax (`%#v`) for anything else (none of the API's internal types is a `fmt.Stringer`).
    pub fn bad_value_go_syntax(&self) -> String {
        let v = match self {
            GoValue::Ptr(_, None) | GoValue::Any(_, Value::Null) => return go_quote("null"),
            GoValue::Ptr(_, Some(to)) => to,
            v => v,
        };
        match v.dynamic() {
            Some(Scalar::Str(s)) => go_quote(s),
            Some(Scalar::Other(s)) => s,
            None => v.go_syntax(),
        }
    }

    /// The value as `field.Error`'s type switch sees it, when it is one of the types it prints
    /// without JSON or Go syntax.
    fn dynamic(&self) -> Option<Scalar<'_>> {
        match self {
            GoValue::Str(s) | GoValue::Any(_, Value::String(s)) => Some(Scalar::Str(s)),
            GoValue::Bool(b) | GoValue::Any(_, Value::Bool(b)) => {
                Some(Scalar::Other(b.to_string()))
            }
            GoValue::Int(i) => Some(Scalar::Other(i.to_string())),
            GoValue::Float(f) => Some(Scalar::Other(go_float(*f))),
            GoValue::Any(_, Value::Number(n)) => Some(Scalar::Other(go_number(n, go_float))),
            _ => None,
        }
    }

    /// A map's entries, sorted by key as both renderings sort them, or a struct's fields in
    /// declaration order; nothing for another value.
    fn entries(&self) -> Vec<(&str, &GoValue)> {
        match self {
            GoValue::Map(_, Some(entries)) => {
                let mut v: Vec<(&str, &GoValue)> =
                    entries.iter().map(|(k, v)| (k.as_str(), v)).collect();
                v.sort_by(|a, b| a.0.cmp(b.0));
                v
            }
            GoValue::Struct(_, fields) => fields.iter().map(|(n, v)| (*n, v)).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether `%#v` prints a pointer to this value at the top level as `&` and the value.
    fn is_composite(&self) -> bool {
        matches!(
            self,
            GoValue::Struct(..) | GoValue::Slice(..) | GoValue::Map(..)
        )
    }

    /// `%#v` at `depth` (0 for the argument itself): only a top-level pointer to a struct, slice
    /// or map shows what it points to; deeper pointers show their address.
    fn write_go_syntax(&self, out: &mut String, depth: usize) {
        crate::budget::charge(1);
        match self {
            GoValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            GoValue::Int(i) => out.push_str(&i.to_string()),
            GoValue::Float(f) => out.push_str(&go_float(*f)),
            GoValue::Str(s) | GoValue::NamedStr(_, s) => out.push_str(&go_quote(s)),
            GoValue::Ptr(t, None) => {
                out.push_str("(*");
                out.push_str(t);
                out.push_str(")(nil)");
            }
            GoValue::Ptr(_, Some(to)) if depth == 0 && to.is_composite() => {
                out.push('&');
                to.write_go_syntax(out, depth + 1);
            }
            GoValue::Ptr(t, Some(_)) => {
                out.push_str("(*");
                out.push_str(t);
                out.push_str(")(");
                out.push_str(POINTER_ADDRESS);
                out.push(')');
            }
            GoValue::Slice(t, None) | GoValue::Map(t, None) => {
                out.push_str(t);
                out.push_str("(nil)");
            }
            GoValue::Slice(t, Some(items)) => {
                out.push_str(t);
                write_joined(out, ["{", ", ", "}"], items, |x, out| {
                    x.write_go_syntax(out, depth + 1)
                });
            }
            GoValue::Map(t, Some(_)) | GoValue::Struct(t, _) => {
                // A map's keys are quoted, a struct's field names are not.
                let quoted = matches!(self, GoValue::Map(..));
                out.push_str(t);
                write_joined(out, ["{", ", ", "}"], self.entries(), |(k, v), out| {
                    if quoted {
                        out.push_str(&go_quote(k));
                    } else {
                        out.push_str(k);
                    }
                    out.push(':');
                    v.write_go_syntax(out, depth + 1);
                });
            }
            GoValue::Any(t, v) => write_json_value_go_syntax(t, v, out, depth),
        }
    }

    fn write_json(&self, out: &mut String) {
        crate::budget::charge(1);
        match self {
            GoValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            GoValue::Int(i) => out.push_str(&i.to_string()),
            GoValue::Float(f) => out.push_str(&go_json_float(*f)),
            GoValue::Str(s) | GoValue::NamedStr(_, s) => out.push_str(&go_json_string(s)),
            GoValue::Ptr(_, None) | GoValue::Slice(_, None) | GoValue::Map(_, None) => {
                out.push_str("null")
            }
            GoValue::Ptr(_, Some(to)) => to.write_json(out),
            GoValue::Slice(_, Some(items)) => {
                write_joined(out, ["[", ",", "]"], items, GoValue::write_json)
            }
            GoValue::Map(_, Some(_)) | GoValue::Struct(..) => {
                write_joined(out, ["{", ",", "}"], self.entries(), |(k, v), out| {
                    out.push_str(&go_json_string(k));
                    out.push(':');
                    v.write_json(out);
                })
            }
            GoValue::Any(_, v) => out.push_str(&go_json(v)),
        }
    }
}

enum Scalar<'a> {
    Str(&'a str),
    Other(String),
}

/// `%#v` of an interface `iface` holding the decoded JSON value `v`: a nil interface below the
/// top level prints as `iface(nil)` (at the top level, as `<nil>`), anything else as the value
/// it holds, whose own nested values are `interface {}`s.
fn write_json_value_go_syntax(iface: &str, v: &Value, out: &mut String, depth: usize) {
    crate::budget::charge(1);
    match v {
        Value::Null if depth == 0 => out.push_str("<nil>"),
        Value::Null => {
            out.push_str(iface);
            out.push_str("(nil)");
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n, go_float)),
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::Array(items) => {
            write_joined(out, ["[]interface {}{", ", ", "}"], items, |x, out| {
                write_json_value_go_syntax("interface {}", x, out, depth + 1)
            })
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let open = "map[string]interface {}{";
            write_joined(out, [open, ", ", "}"], keys, |k, out| {
                out.push_str(&go_quote(k));
                out.push(':');
                write_json_value_go_syntax("interface {}", &m[k.as_str()], out, depth + 1);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    //! Expected values are what Go 1.26's `fmt` and `encoding/json` print for the same Go values
    //! (through the two `field.Error.ErrorBody` variants).

    use super::*;
    use serde_json::json;

    fn both(v: &GoValue) -> (String, String) {
        (v.bad_value_go_syntax(), v.bad_value_json())
    }

    fn strs(items: &[&str]) -> GoValue {
        GoValue::Slice(
            "[]string",
            Some(items.iter().map(|s| GoValue::Str(s.to_string())).collect()),
        )
    }

    #[test]
    fn nil_and_empty_slices_differ() {
        assert_eq!(
            both(&GoValue::strings(None)),
            ("[]string(nil)".into(), "null".into())
        );
        assert_eq!(
            both(&GoValue::strings(Some(&[]))),
            ("[]string{}".into(), "[]".into())
        );
        assert_eq!(
            GoValue::Map("map[string]interface {}", None).go_syntax(),
            "map[string]interface {}(nil)"
        );
        // The API server's decoded lists of versions: nil when absent, empty when `[]`.
        let ty = "[]apiextensions.CustomResourceDefinitionVersion";
        assert_eq!(
            both(&GoValue::Slice(ty, None)),
            (format!("{ty}(nil)"), "null".into())
        );
        assert_eq!(
            both(&GoValue::Slice(ty, Some(vec![]))),
            (format!("{ty}{{}}"), "[]".into())
        );
    }

    #[test]
    fn strings_escape_as_strconv_quote_and_encoding_json() {
        let v = strs(&[
            "a",
            "b\"c",
            "<x>&",
            "\u{e9}\u{a0}\u{200b}\u{7f}\n\t\u{7}",
            "\u{1f600}",
            "\u{301}x",
        ]);
        assert_eq!(
            v.bad_value_go_syntax(),
            "[]string{\"a\", \"b\\\"c\", \"<x>&\", \"\u{e9}\\u00a0\\u200b\\x7f\\n\\t\\a\", \"\u{1f600}\", \"\u{301}x\"}"
        );
        assert_eq!(
            v.bad_value_json(),
            "[\"a\",\"b\\\"c\",\"\\u003cx\\u003e\\u0026\",\"\u{e9}\u{a0}\u{200b}\u{7f}\\n\\t\\u0007\",\"\u{1f600}\",\"\u{301}x\"]"
        );
        let v = strs(&["\u{8}\u{c}\u{0}\u{1f}\u{7f}\u{2028}\u{2029}<>&\u{feff}\u{1f600}"]);
        assert_eq!(
            v.bad_value_go_syntax(),
            "[]string{\"\\b\\f\\x00\\x1f\\x7f\\u2028\\u2029<>&\\ufeff\u{1f600}\"}"
        );
        assert_eq!(
            v.bad_value_json(),
            "[\"\\b\\f\\u0000\\u001f\u{7f}\\u2028\\u2029\\u003c\\u003e\\u0026\u{feff}\u{1f600}\"]"
        );
    }

    #[test]
    fn nil_values_and_pointers() {
        // A nil `interface{}` or nil pointer was the quoted string "null" before 1.34.
        assert_eq!(
            both(&GoValue::any(Value::Null)),
            ("\"null\"".into(), "null".into())
        );
        assert_eq!(
            both(&GoValue::ptr_str(None)),
            ("\"null\"".into(), "null".into())
        );
        // A top-level pointer shows what it points to, JSON-escaped from 1.34.
        assert_eq!(
            both(&GoValue::ptr_str(Some("a<b>\u{2028}"))),
            (
                "\"a<b>\\u2028\"".into(),
                "\"a\\u003cb\\u003e\\u2028\"".into()
            )
        );
        assert_eq!(
            both(&GoValue::ptr_bool(Some(true))),
            ("true".into(), "true".into())
        );
        let five = GoValue::Ptr("int64", Some(Box::new(GoValue::Int(5))));
        assert_eq!(both(&five), ("5".into(), "5".into()));
        // Only one pointer is followed: a pointer to a pointer shows its address, or nil.
        let to_five = GoValue::Ptr("*int64", Some(Box::new(five)));
        assert_eq!(
            both(&to_five),
            (format!("(*int64)({POINTER_ADDRESS})"), "5".into())
        );
        let to_nil = GoValue::Ptr("*string", Some(Box::new(GoValue::ptr_str(None))));
        assert_eq!(both(&to_nil), ("(*string)(nil)".into(), "null".into()));
        // `%#v` of a top-level pointer to a struct or slice shows `&` and the value.
        let docs = GoValue::Struct(
            "apiextensions.ExternalDocumentation",
            vec![
                ("Description", GoValue::Str(String::new())),
                ("URL", GoValue::Str("u".into())),
            ],
        );
        let p = GoValue::Ptr("apiextensions.ExternalDocumentation", Some(Box::new(docs)));
        assert_eq!(
            p.go_syntax(),
            "&apiextensions.ExternalDocumentation{Description:\"\", URL:\"u\"}"
        );
        assert_eq!(
            GoValue::Ptr("[]string", Some(Box::new(strs(&["a"])))).go_syntax(),
            "&[]string{\"a\"}"
        );
        // Below the top level, pointers show an address (here a stand-in) or nil.
        let list = GoValue::Slice(
            "[]*apiextensions.ExternalDocumentation",
            Some(vec![
                p,
                GoValue::Ptr("apiextensions.ExternalDocumentation", None),
            ]),
        );
        assert_eq!(
            list.bad_value_go_syntax(),
            format!(
                "[]*apiextensions.ExternalDocumentation{{(*apiextensions.ExternalDocumentation)({POINTER_ADDRESS}), (*apiextensions.ExternalDocumentation)(nil)}}"
            )
        );
        assert_eq!(
            list.bad_value_json(),
            "[{\"Description\":\"\",\"URL\":\"u\"},null]"
        );
    }

    #[test]
    fn decoded_json_values() {
        let v = GoValue::any(json!({
            "b": 1, "a": "x", "c": null, "d": [1.5, 2, null, {}],
            "e": 1e21, "f": 1234567.5, "g": 0.00001, "h": true
        }));
        assert_eq!(
            v.bad_value_go_syntax(),
            "map[string]interface {}{\"a\":\"x\", \"b\":1, \"c\":interface {}(nil), \"d\":[]interface {}{1.5, 2, interface {}(nil), map[string]interface {}{}}, \"e\":1e+21, \"f\":1.2345675e+06, \"g\":1e-05, \"h\":true}"
        );
        assert_eq!(
            v.bad_value_json(),
            "{\"a\":\"x\",\"b\":1,\"c\":null,\"d\":[1.5,2,null,{}],\"e\":1e+21,\"f\":1234567.5,\"g\":0.00001,\"h\":true}"
        );
        let v = GoValue::any(json!(["x", 3, 2.5, null, false, []]));
        assert_eq!(
            both(&v),
            (
                "[]interface {}{\"x\", 3, 2.5, interface {}(nil), false, []interface {}{}}".into(),
                "[\"x\",3,2.5,null,false,[]]".into()
            )
        );
        // Scalars are printed alike (strings with `%q`, even from 1.34).
        assert_eq!(
            both(&GoValue::any(json!(1234567.5))),
            ("1.2345675e+06".into(), "1.2345675e+06".into())
        );
        // A whole number is an `int64` once the API server has decoded it.
        assert_eq!(
            both(&GoValue::any(json!(1e6))),
            ("1000000".into(), "1000000".into())
        );
        assert_eq!(
            both(&GoValue::any(json!("\u{e9}\u{a0}<"))),
            ("\"\u{e9}\\u00a0<\"".into(), "\"\u{e9}\\u00a0<\"".into())
        );
    }

    #[test]
    fn named_strings_are_json_from_1_34() {
        let v = GoValue::NamedStr("apiextensions.FieldValueErrorReason", "a<b".into());
        assert_eq!(both(&v), ("\"a<b\"".into(), "\"a\\u003cb\"".into()));
    }

    #[test]
    fn structs_with_nil_and_set_pointers() {
        let reason = "apiextensions.FieldValueErrorReason";
        let rule = |reason_v: Option<&str>, old_self: Option<bool>| {
            GoValue::Struct(
                "apiextensions.ValidationRule",
                vec![
                    ("Rule", GoValue::Str("a\tb".into())),
                    ("Message", GoValue::Str("m\"".into())),
                    ("MessageExpression", GoValue::Str(String::new())),
                    (
                        "Reason",
                        GoValue::Ptr(
                            reason,
                            reason_v.map(|r| Box::new(GoValue::NamedStr(reason, r.into()))),
                        ),
                    ),
                    ("FieldPath", GoValue::Str(String::new())),
                    ("OptionalOldSelf", GoValue::ptr_bool(old_self)),
                ],
            )
        };
        assert_eq!(
            both(&rule(None, None)),
            (
                "apiextensions.ValidationRule{Rule:\"a\\tb\", Message:\"m\\\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}".into(),
                "{\"Rule\":\"a\\tb\",\"Message\":\"m\\\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}".into()
            )
        );
        assert_eq!(
            both(&rule(Some("FieldValueInvalid"), Some(true))),
            (
                format!("apiextensions.ValidationRule{{Rule:\"a\\tb\", Message:\"m\\\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)({POINTER_ADDRESS}), FieldPath:\"\", OptionalOldSelf:(*bool)({POINTER_ADDRESS})}}"),
                "{\"Rule\":\"a\\tb\",\"Message\":\"m\\\"\",\"MessageExpression\":\"\",\"Reason\":\"FieldValueInvalid\",\"FieldPath\":\"\",\"OptionalOldSelf\":true}".into()
            )
        );
    }

    #[test]
    fn maps_sort_their_keys() {
        let m = GoValue::Map(
            "map[string]apiextensions.JSONSchemaPropsOrStringArray",
            Some(vec![
                ("b".into(), strs(&["x"])),
                ("a".into(), GoValue::strings(None)),
            ]),
        );
        assert_eq!(
            m.go_syntax(),
            "map[string]apiextensions.JSONSchemaPropsOrStringArray{\"a\":[]string(nil), \"b\":[]string{\"x\"}}"
        );
        assert_eq!(m.json(), "{\"a\":null,\"b\":[\"x\"]}");
    }

    #[test]
    fn semantic_equality_equates_nil_and_empty() {
        assert!(GoValue::strings(None).semantic_eq(&GoValue::strings(Some(&[]))));
        assert!(!GoValue::strings(None).semantic_eq(&strs(&["a"])));
        assert!(!GoValue::ptr_str(None).semantic_eq(&GoValue::ptr_str(Some(""))));
        assert!(GoValue::Map("m", None).semantic_eq(&GoValue::Map("m", Some(vec![]))));
    }
}
