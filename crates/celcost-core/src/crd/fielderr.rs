//! The API server's field errors (k8s.io/apimachinery pkg/util/validation/field), formatted the
//! way `field.Error.Error()` formats them in each Kubernetes minor.

pub mod govalue;

use std::fmt;

use serde_json::Value;

use crate::cel::decls::Version;
use crate::cel::gofmt::{fixed, shortest_digits};
pub use crate::cel::gofmt::{go_float, go_quote};
pub use crate::report::{CostError, ErrorParts};
pub use govalue::GoValue;

/// Whether `field.Error` renders a bad value that is not a string, number or boolean as JSON
/// (Kubernetes 1.34, kubernetes/kubernetes#132314), rather than with Go's `%#v` after
/// dereferencing one pointer, a nil value being the quoted string `"null"` (before).
pub fn bad_values_as_json(k: Version) -> bool {
    consulted(2);
    k >= Version::new(1, 34)
}

/// Whether a detail still names the field it is about (`uid must not be empty`), or the error
/// type's own words (`Required value: must not be empty`): Kubernetes 1.34 dropped both
/// (kubernetes/kubernetes#132513 and its siblings).
pub fn details_repeat_the_field(k: Version) -> bool {
    consulted(3);
    k < Version::new(1, 34)
}

/// Whether `field.TooLong` and `field.TooMany` say "1 byte", "1 item" rather than "1 bytes",
/// "1 items" (Kubernetes 1.34).
pub fn singular_units(k: Version) -> bool {
    consulted(4);
    k >= Version::new(1, 34)
}

/// Whether `field.TooLong` says "may not be more than N bytes" (Kubernetes 1.32, which merged
/// `TooLongMaxLength` into `TooLong`), rather than `TooLongMaxLength`'s "may not be longer than
/// N" (before).
pub fn too_long_in_bytes(k: Version) -> bool {
    consulted(5);
    k >= Version::new(1, 32)
}

/// Whether a too-long name part is said in bytes (`must be no more than 63 bytes`: Kubernetes
/// 1.35 moved `IsQualifiedName` and `IsLabelValue` to `apimachinery/pkg/api/validate/content`)
/// rather than characters (before, `util/validation.MaxLenError`).
pub fn max_len_in_bytes(k: Version) -> bool {
    consulted(1);
    k >= Version::new(1, 35)
}

/// `must be no more than N bytes` (or `characters`, before 1.35).
pub fn max_len(k: Version, n: usize) -> String {
    let unit = if max_len_in_bytes(k) {
        "bytes"
    } else {
        "characters"
    };
    format!("must be no more than {n} {unit}")
}

/// Whether a stored version missing from `spec.versions` is explained (`missing from
/// spec.versions; v1 was previously a storage version, and must remain ...`: Kubernetes 1.33,
/// apiextensions 567b50c9c) rather than `must appear in spec.versions` (before). Only an update
/// can leave one out.
pub fn stored_version_removal_says_why(k: Version) -> bool {
    consulted(0);
    k >= Version::new(1, 33)
}

/// Every error-wording rule of a minor, for telling whether two minors word every error alike
/// (a range shares one estimate between them then). A new wording rule belongs here too.
pub fn wording(k: Version) -> [bool; 11] {
    // Asked of two minors to compare them: consults nothing.
    crate::cel::version::consulted::ignoring(|| {
        [
            stored_version_removal_says_why(k),
            max_len_in_bytes(k),
            bad_values_as_json(k),
            details_repeat_the_field(k),
            singular_units(k),
            too_long_in_bytes(k),
            output_type_errors_name_the_type(k),
            failed_rules_show_the_value(k),
            optional_type_named_in_full(k),
            api_types_of_1_30(k),
            rules_have_optional_old_self(k),
        ]
    })
}

/// Whether the internal API types printed in errors are 1.30's or later: a
/// `CustomResourceDefinitionVersion` has `SelectableFields` (k8s.io/apiextensions-apiserver
/// v0.30 `types.go`), and a `ValidationRule`'s `OptionalOldSelf` is what the object says
/// (before, the `CRDValidationRatcheting` gate, off by default, drops it on create: nil).
pub fn api_types_of_1_30(k: Version) -> bool {
    consulted(9);
    k >= Version::new(1, 30)
}

/// Whether a `ValidationRule` printed in errors has the `OptionalOldSelf` field
/// (k8s.io/apiextensions-apiserver v0.29 `types.go`).
pub fn rules_have_optional_old_self(k: Version) -> bool {
    consulted(10);
    k >= Version::new(1, 29)
}

/// cel-go v0.17.8 (1.30) names the optional type `optional` in compile errors, later cel-go
/// `optional_type`. Which text it reaches is told by the text itself (both names contain
/// `optional`): see [`wording_rules_of`].
fn optional_type_named_in_full(k: Version) -> bool {
    k >= Version::new(1, 31)
}

/// The index in [`wording`] of the rule on which the optional type's name depends.
const OPTIONAL_TYPE_NAME: usize = 8;

/// Which rules of [`wording`] are applied when an error is rendered ([`FieldError::render`]):
/// the bad value's form, details that repeat their field, units and the too-long detail. The others decide text when the error is
/// made.
pub const RENDER_TIME_RULES: u64 = 1 << 2 | 1 << 3 | 1 << 4 | 1 << 5 | 1 << 9 | 1 << 10;

/// Notes that rule `i` of [`wording`] decided some text of the estimate under way.
fn consulted(i: usize) {
    crate::cel::version::consulted::note_wording(i);
}

/// The wording rules a report's errors depend on: those its estimate consulted
/// (`consulted`, a bit per index of [`wording`]), and the optional type's name where some error
/// names it.
pub fn wording_rules_of<'a>(consulted: u64, errors: impl IntoIterator<Item = &'a String>) -> u64 {
    let names_optional = errors.into_iter().any(|e| e.contains("optional"));
    consulted
        | if names_optional {
            1 << OPTIONAL_TYPE_NAME
        } else {
            0
        }
}

/// Whether minors `a` and `b` agree on every wording rule of `rules` (bits by index of
/// [`wording`]).
pub fn worded_alike(rules: u64, a: Version, b: Version) -> bool {
    let (wa, wb) = (wording(a), wording(b));
    (0..wa.len()).all(|i| rules & (1 << i) == 0 || wa[i] == wb[i])
}

/// A rule that fails on a default names the value (a scalar) or none (an object or array) from
/// 1.35; before, the schema type (`Invalid value: "integer"`, `"object"`): apiextensions
/// `schema/cel/validation.go`, `fieldErrorForReason(currentFldPath, sts.Type, …)` until 1.34.
pub fn failed_rules_show_the_value(k: Version) -> bool {
    consulted(7);
    k >= Version::new(1, 35)
}

/// The policy compiler's wrong-output-type error says what the expression evaluates to
/// (apiserver `plugin/cel/compile.go`, 1.32: "must evaluate to bool but got int"; before, "must
/// evaluate to bool").
pub fn output_type_errors_name_the_type(k: Version) -> bool {
    consulted(6);
    k >= Version::new(1, 32)
}

#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// Not shown (Required, Forbidden, Internal).
    Omit,
    /// A `string`.
    Str(String),
    /// A `bool`.
    Bool(bool),
    /// An `int64` (or another signed integer).
    Int(i64),
    /// A `float64`.
    Float(f64),
    /// Any other Go value, with its Go type: its rendering depends on the minor.
    Go(GoValue),
}

impl BadValue {
    /// An `interface{}` holding a decoded JSON value (integers are `int64`, other numbers
    /// `float64`).
    pub fn any(v: Value) -> Self {
        BadValue::Go(GoValue::any(v))
    }

    /// `field.Error`'s rendering of this value in Kubernetes `k`.
    fn render(&self, k: Version) -> String {
        match self {
            BadValue::Omit => String::new(),
            BadValue::Str(s) => go_quote(s),
            BadValue::Bool(b) => b.to_string(),
            BadValue::Int(i) => i.to_string(),
            BadValue::Float(f) => go_float(*f),
            BadValue::Go(v) => {
                let older;
                let v = if v.names_api_types_of_1_30() && !api_types_of_1_30(k) {
                    older = v.as_api_types_of(k);
                    &older
                } else {
                    v
                };
                if bad_values_as_json(k) {
                    v.bad_value_json()
                } else {
                    v.bad_value_go_syntax()
                }
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ErrorType {
    Invalid,
    Required,
    Forbidden,
    Internal,
    NotSupported(Vec<String>),
    Duplicate,
    /// `field.TooLong` with the maximum length in bytes (negative: unknown); before 1.32,
    /// `field.TooLongMaxLength`, which the kube-openapi result conversion called.
    TooLong(i64),
    /// `field.TooMany` with the maximum count (negative: unknown).
    TooMany(i64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub field: String,
    pub kind: ErrorType,
    pub value: BadValue,
    pub detail: String,
    /// The detail before Kubernetes 1.34 where it differs: it repeated the field or the error
    /// type's words ([`details_repeat_the_field`]; [`FieldError::repeating_before_1_34`]).
    pub repeating: Option<String>,
    /// Which cost limit a cost error is about (celcost's, not part of the text).
    pub cost: Option<CostError>,
}

impl FieldError {
    /// `field.Invalid` of the string `value` whose detail, before 1.34, starts with the field's
    /// own name: `message must not contain line breaks`.
    pub fn invalid_string(field: &str, value: &str, clean: &str) -> Self {
        let name = field.rsplit('.').next().unwrap_or(field);
        Self::invalid(field, BadValue::Str(value.to_string()), clean)
            .repeating_before_1_34(&format!("{name} {clean}"))
    }

    /// This error with `detail` as its detail before Kubernetes 1.34, which cleaned up details
    /// that repeat their field (`uid must not be empty`) or their type's words (`Required
    /// value: must not be empty`).
    pub fn repeating_before_1_34(mut self, detail: &str) -> Self {
        self.repeating = Some(detail.to_string());
        self
    }
    /// `field.Duplicate`.
    pub fn duplicate(field: &str, value: BadValue) -> Self {
        FieldError {
            kind: ErrorType::Duplicate,
            ..Self::invalid(field, value, "")
        }
    }

    pub fn invalid(field: &str, value: BadValue, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Invalid,
            value,
            detail: detail.into(),
            repeating: None,
            cost: None,
        }
    }
    pub fn required(field: &str, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Required,
            value: BadValue::Omit,
            detail: detail.into(),
            repeating: None,
            cost: None,
        }
    }
    pub fn forbidden(field: &str, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Forbidden,
            value: BadValue::Omit,
            detail: detail.into(),
            repeating: None,
            cost: None,
        }
    }
    pub fn internal(field: &str, detail: &str) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::Internal,
            value: BadValue::Omit,
            detail: detail.into(),
            repeating: None,
            cost: None,
        }
    }
    pub fn not_supported(field: &str, value: BadValue, valid: &[&str]) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::NotSupported(valid.iter().map(|s| s.to_string()).collect()),
            value,
            detail: String::new(),
            repeating: None,
            cost: None,
        }
    }
    /// `field.NotSupported` for `value`, of the Go string type `go_type`, unless it is one of
    /// `supported`.
    pub fn unless_one_of(
        field: &str,
        go_type: &'static str,
        value: &str,
        supported: &[&str],
    ) -> Option<Self> {
        (!supported.contains(&value)).then(|| {
            Self::not_supported(
                field,
                BadValue::Go(GoValue::NamedStr(go_type, value.into())),
                supported,
            )
        })
    }
    /// `field.TooLong(field, _, max)`.
    pub fn too_long(field: &str, max: i64) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::TooLong(max),
            value: BadValue::Omit,
            detail: String::new(),
            repeating: None,
            cost: None,
        }
    }
    /// `field.TooMany(field, actual, max)`.
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        FieldError {
            field: field.into(),
            kind: ErrorType::TooMany(max),
            value: if actual >= 0 {
                BadValue::Int(actual)
            } else {
                BadValue::Omit
            },
            detail: String::new(),
            repeating: None,
            cost: None,
        }
    }

    /// This error, about the cost limit `cost`.
    pub fn about_cost(mut self, cost: CostError) -> Self {
        self.cost = Some(cost);
        self
    }

    /// `field.Error.Error()` as Kubernetes `k` writes it.
    pub fn render(&self, k: Version) -> String {
        format!("{}: {}", self.field, self.message(k))
    }

    /// The error in parts, its message as Kubernetes `k` writes it.
    pub fn parts(&self, k: Version) -> ErrorParts {
        ErrorParts {
            field: self.field.clone(),
            kind: self.type_words().to_string(),
            message: self.message(k),
            cost: self.cost,
        }
    }

    /// The words of the error's type (`field.ErrorType.String()`).
    fn type_words(&self) -> &'static str {
        match &self.kind {
            ErrorType::Invalid => "Invalid value",
            ErrorType::Required => "Required value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Internal => "Internal error",
            ErrorType::NotSupported(_) => "Unsupported value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::TooLong(_) => "Too long",
            ErrorType::TooMany(_) => "Too many",
        }
    }

    /// The text after the field path: `<type>[: <value>][: <detail>]`.
    fn message(&self, k: Version) -> String {
        let type_str = self.type_words();
        let mut body = match (&self.kind, &self.value) {
            (
                ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::Internal
                | ErrorType::TooLong(_),
                _,
            )
            | (_, BadValue::Omit) => type_str.to_string(),
            (_, v) => format!("{type_str}: {}", v.render(k)),
        };
        if let ErrorType::NotSupported(valid) = &self.kind
            && !valid.is_empty()
        {
            let q: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            body.push_str(&format!(": supported values: {}", q.join(", ")));
        }
        let detail = match self.kind {
            ErrorType::TooLong(max) => too_long_detail(k, max),
            ErrorType::TooMany(max) => too_many_detail(k, max),
            _ => match &self.repeating {
                Some(before) if details_repeat_the_field(k) => before.clone(),
                _ => self.detail.clone(),
            },
        };
        if !detail.is_empty() {
            body.push_str(": ");
            body.push_str(&detail);
        }
        body
    }
}

/// The errors' texts as Kubernetes `k` writes them, and their parts (a report's `errors` and
/// `error_parts`).
pub fn render_all(errors: &[FieldError], k: Version) -> (Vec<String>, Vec<ErrorParts>) {
    errors
        .iter()
        .map(|e| {
            let parts = e.parts(k);
            (format!("{}: {}", parts.field, parts.message), parts)
        })
        .unzip()
}

/// The detail of `field.TooLong` (before 1.32, `field.TooLongMaxLength`) in Kubernetes `k`.
fn too_long_detail(k: Version, max: i64) -> String {
    match max {
        m if m < 0 => "value is too long".to_string(),
        m if !too_long_in_bytes(k) => format!("may not be longer than {m}"),
        1 if singular_units(k) => "may not be more than 1 byte".to_string(),
        m => format!("may not be more than {m} bytes"),
    }
}

/// The detail of `field.TooMany` in Kubernetes `k`.
fn too_many_detail(k: Version, max: i64) -> String {
    match max {
        m if m < 0 => "has too many items".to_string(),
        1 if singular_units(k) => "must have at most 1 item".to_string(),
        m => format!("must have at most {m} items"),
    }
}

/// `encoding/json`'s rendering of a `float64`.
pub fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (neg, digits, exp) = shortest_digits(f);
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let es = if exp < 0 { '-' } else { '+' };
        let ed = if exp.abs() < 10 && exp >= 0 {
            format!("{:02}", exp)
        } else {
            exp.abs().to_string()
        };
        format!("{}{m}e{es}{ed}", if neg { "-" } else { "" })
    } else if f == 0.0 {
        if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        }
    } else {
        let (neg, digits, exp) = shortest_digits(f);
        format!("{}{}", if neg { "-" } else { "" }, fixed(&digits, exp))
    }
}

/// The `int64` Go holds for this number in a decoded CRD, if it holds an integer: the API
/// server reads manifests as YAML and re-encodes them as JSON (so `1.0` becomes `1`), then
/// apimachinery's JSON decoding tries `Int64` before `Float64`.
pub fn go_int(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        let f = n.as_f64()?;
        let in_range = (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f);
        (f.fract() == 0.0 && in_range).then_some(f as i64)
    })
}

/// `encoding/json`'s rendering of a decoded JSON value (map keys sorted, HTML-escaped strings).
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n, go_json_float)),
        Value::String(s) => out.push_str(&go_json_string(s)),
        Value::Array(a) => write_joined(out, ["[", ",", "]"], a, write_go_json),
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            write_joined(out, ["{", ",", "}"], keys, |k, out| {
                out.push_str(&go_json_string(k));
                out.push(':');
                write_go_json(&o[k.as_str()], out);
            });
        }
    }
}

/// A decoded JSON number as Go holds it: an `int64` if it is one ([`go_int`]), else a
/// `float64`, written by `float`.
fn go_number(n: &serde_json::Number, float: fn(f64) -> String) -> String {
    match go_int(n) {
        Some(i) => i.to_string(),
        None => float(n.as_f64().unwrap_or_default()),
    }
}

/// Writes a composite value's elements as Go prints them: `open`, each of `items` by `write`
/// with `sep` between them, `close`.
fn write_joined<T>(
    out: &mut String,
    [open, sep, close]: [&str; 3],
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(T, &mut String),
) {
    out.push_str(open);
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        write(x, out);
    }
    out.push_str(close);
}

/// Go `encoding/json` string encoding (HTML-escaped `<`, `>`, `&`; `\b` and `\f` since Go 1.22,
/// which every minor here is built with).
pub fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A field path (`field.Path`) built without allocating: each element borrows its parent, and
/// the path is rendered only when an error needs it.
#[derive(Clone, Copy, Debug)]
pub struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    elem: PathElem<'a>,
}

#[derive(Clone, Copy, Debug)]
enum PathElem<'a> {
    /// An already rendered prefix.
    Root(&'a str),
    Child(&'a str),
    Key(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    pub fn root(rendered: &'a str) -> Self {
        Path {
            parent: None,
            elem: PathElem::Root(rendered),
        }
    }
    /// `.name`
    pub fn child(&'a self, name: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            elem: PathElem::Child(name),
        }
    }
    /// `[key]`
    pub fn key(&'a self, key: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            elem: PathElem::Key(key),
        }
    }
    /// `[i]`
    pub fn index(&'a self, i: usize) -> Path<'a> {
        Path {
            parent: Some(self),
            elem: PathElem::Index(i),
        }
    }
    fn write(&self, out: &mut String) {
        if let Some(p) = self.parent {
            p.write(out);
        }
        match self.elem {
            PathElem::Root(s) => out.push_str(s),
            PathElem::Child(s) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(s);
            }
            PathElem::Key(k) => {
                out.push('[');
                out.push_str(k);
                out.push(']');
            }
            PathElem::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write(&mut out);
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_number_formats() {
        // fmt's %v and encoding/json.
        for (f, v, j) in [
            (1e6, "1e+06", "1000000"),
            (123456789.0, "1.23456789e+08", "123456789"),
            (1.5, "1.5", "1.5"),
            (0.0001, "0.0001", "0.0001"),
            (0.00001, "1e-05", "0.00001"),
            (1e21, "1e+21", "1e+21"),
            (1e-7, "1e-07", "1e-7"),
            (100000.0, "100000", "100000"),
        ] {
            assert_eq!(go_float(f), v);
            assert_eq!(go_json_float(f), j);
        }
    }

    #[test]
    fn strings_quote_as_strconv_quote() {
        // Go 1.26's strconv.Quote of the same string.
        assert_eq!(
            go_quote(
                "\u{8}\u{c}\u{0}\u{1f}\u{7f}\u{2028}\u{2029}<>&\u{feff}\u{1f600}\u{e0001}\u{ad}\u{10ffff}\u{e000}\u{378}\u{301}"
            ),
            "\"\\b\\f\\x00\\x1f\\x7f\\u2028\\u2029<>&\\ufeff\u{1f600}\\U000e0001\\u00ad\\U0010ffff\\ue000\\u0378\u{301}\""
        );
        assert_eq!(
            go_quote("a\"b\\c\u{7}\u{b}\r\u{e9}\u{a0}\u{3000}"),
            "\"a\\\"b\\\\c\\a\\v\\r\u{e9}\\u00a0\\u3000\""
        );
        // A combining mark is printable, at the start of a string too.
        assert_eq!(go_quote("\u{301}"), "\"\u{301}\"");
    }

    #[test]
    fn strings_encode_as_encoding_json() {
        // Go 1.22+ writes \b and \f; DEL and non-ASCII stay as they are.
        assert_eq!(
            go_json_string("\u{8}\u{c}\u{0}\u{1f}\u{7f}\u{2028}\u{2029}<>&\u{feff}"),
            "\"\\b\\f\\u0000\\u001f\u{7f}\\u2028\\u2029\\u003c\\u003e\\u0026\u{feff}\""
        );
    }

    #[test]
    fn go_integers_of_decoded_numbers() {
        // The API server reads manifests as YAML and re-encodes them as JSON first.
        let n = |s: &str| serde_json::from_str::<serde_json::Number>(s).unwrap();
        assert_eq!(go_int(&n("3")), Some(3));
        assert_eq!(go_int(&n("3.0")), Some(3));
        assert_eq!(go_int(&n("3.5")), None);
        assert_eq!(go_int(&n("1e19")), None);
    }

    #[test]
    fn lazy_paths_render_like_field_path() {
        let root = Path::root("spec.validation.openAPIV3Schema");
        let props = root.child("properties");
        let a = props.key("a");
        let items = a.child("allOf");
        assert_eq!(
            items.index(2).to_string(),
            "spec.validation.openAPIV3Schema.properties[a].allOf[2]"
        );
        assert_eq!(Path::root("").child("a").to_string(), "a");
    }
}
