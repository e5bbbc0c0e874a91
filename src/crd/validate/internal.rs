//! The internal Go `JSONSchemaProps` (k8s.io/apiextensions-apiserver pkg/apis/apiextensions) a
//! schema decodes to, seen from its raw JSON: which fields are set, how Go's JSON encoder
//! renders the struct in error values, and `apiequality.Semantic.DeepEqual` of two schemas.

use serde_json::Value;

use super::openapi;
use crate::crd::fielderr::{go_json, go_json_float, go_json_string};

/// How a `JSONSchemaProps` field is zero, for the root-with-status check.
#[derive(Clone, Copy)]
enum GoZero {
    /// A string: zero when empty.
    Str,
    /// A bool: zero when false.
    Bool,
    /// A pointer, slice or map: zero when absent or null.
    Nil,
}

/// The internal `JSONSchemaProps` fields in declaration order, with their JSON keys.
const SCHEMA_FIELDS: [(&str, &str, GoZero); 44] = [
    ("ID", "id", GoZero::Str),
    ("Schema", "$schema", GoZero::Str),
    ("Ref", "$ref", GoZero::Nil),
    ("Description", "description", GoZero::Str),
    ("Type", "type", GoZero::Str),
    ("Nullable", "nullable", GoZero::Bool),
    ("Format", "format", GoZero::Str),
    ("Title", "title", GoZero::Str),
    ("Default", "default", GoZero::Nil),
    ("Maximum", "maximum", GoZero::Nil),
    ("ExclusiveMaximum", "exclusiveMaximum", GoZero::Bool),
    ("Minimum", "minimum", GoZero::Nil),
    ("ExclusiveMinimum", "exclusiveMinimum", GoZero::Bool),
    ("MaxLength", "maxLength", GoZero::Nil),
    ("MinLength", "minLength", GoZero::Nil),
    ("Pattern", "pattern", GoZero::Str),
    ("MaxItems", "maxItems", GoZero::Nil),
    ("MinItems", "minItems", GoZero::Nil),
    ("UniqueItems", "uniqueItems", GoZero::Bool),
    ("MultipleOf", "multipleOf", GoZero::Nil),
    ("Enum", "enum", GoZero::Nil),
    ("MaxProperties", "maxProperties", GoZero::Nil),
    ("MinProperties", "minProperties", GoZero::Nil),
    ("Required", "required", GoZero::Nil),
    ("Items", "items", GoZero::Nil),
    ("AllOf", "allOf", GoZero::Nil),
    ("OneOf", "oneOf", GoZero::Nil),
    ("AnyOf", "anyOf", GoZero::Nil),
    ("Not", "not", GoZero::Nil),
    ("Properties", "properties", GoZero::Nil),
    ("AdditionalProperties", "additionalProperties", GoZero::Nil),
    ("PatternProperties", "patternProperties", GoZero::Nil),
    ("Dependencies", "dependencies", GoZero::Nil),
    ("AdditionalItems", "additionalItems", GoZero::Nil),
    ("Definitions", "definitions", GoZero::Nil),
    ("ExternalDocs", "externalDocs", GoZero::Nil),
    ("Example", "example", GoZero::Nil),
    (
        "XPreserveUnknownFields",
        "x-kubernetes-preserve-unknown-fields",
        GoZero::Nil,
    ),
    (
        "XEmbeddedResource",
        "x-kubernetes-embedded-resource",
        GoZero::Bool,
    ),
    ("XIntOrString", "x-kubernetes-int-or-string", GoZero::Bool),
    ("XListMapKeys", "x-kubernetes-list-map-keys", GoZero::Nil),
    ("XListType", "x-kubernetes-list-type", GoZero::Nil),
    ("XMapType", "x-kubernetes-map-type", GoZero::Nil),
    ("XValidations", "x-kubernetes-validations", GoZero::Nil),
];

/// The Go names of the fields a raw schema sets (non-zero after decoding), in declaration
/// order.
pub fn set_fields(raw: &Value) -> impl Iterator<Item = &'static str> + '_ {
    SCHEMA_FIELDS.iter().filter_map(move |(name, key, zero)| {
        let v = raw.get(*key).unwrap_or(&Value::Null);
        let is_zero = match zero {
            GoZero::Str => v.as_str().is_none_or(str::is_empty),
            GoZero::Bool => v != &Value::Bool(true),
            GoZero::Nil => v.is_null(),
        };
        (!is_zero).then_some(*name)
    })
}

/// The JSON rendering of the internal Go `JSONSchemaProps` a schema converts to (Go field names,
/// every field present, maps with sorted keys).
pub fn go_schema_json(raw: &Value) -> String {
    let mut out = String::new();
    write_go_schema(raw, &mut out);
    out
}

pub(super) fn write_go_schema(raw: &Value, out: &mut String) {
    crate::budget::charge(1);
    let empty = serde_json::Map::new();
    let obj = raw.as_object().unwrap_or(&empty);
    out.push('{');
    for (i, (name, key, zero)) in SCHEMA_FIELDS.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
        let v = obj.get(*key).unwrap_or(&Value::Null);
        match (*zero, *key) {
            (GoZero::Str, _) => out.push_str(&go_json_string(v.as_str().unwrap_or_default())),
            (GoZero::Bool, _) => out.push_str(if v == &Value::Bool(true) {
                "true"
            } else {
                "false"
            }),
            (_, _) if v.is_null() => out.push_str("null"),
            (_, "maximum" | "minimum" | "multipleOf") => {
                out.push_str(&go_json_float(v.as_f64().unwrap_or_default()))
            }
            (_, "items") => {
                out.push_str("{\"Schema\":");
                match v {
                    Value::Array(a) => {
                        out.push_str("null,\"JSONSchemas\":[");
                        for (j, x) in a.iter().enumerate() {
                            if j > 0 {
                                out.push(',');
                            }
                            write_go_schema(x, out);
                        }
                        out.push_str("]}");
                    }
                    Value::Object(_) => {
                        write_go_schema(v, out);
                        out.push_str(",\"JSONSchemas\":null}");
                    }
                    _ => out.push_str("null,\"JSONSchemas\":null}"),
                }
            }
            (_, "allOf" | "oneOf" | "anyOf") => {
                out.push('[');
                for (j, x) in v.as_array().into_iter().flatten().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    write_go_schema(x, out);
                }
                out.push(']');
            }
            (_, "not") => write_go_schema(v, out),
            (_, "properties" | "patternProperties" | "definitions") => {
                write_go_schema_map(v, out, write_go_schema)
            }
            (_, "additionalProperties" | "additionalItems") => match v {
                Value::Bool(b) => {
                    out.push_str(&format!("{{\"Allows\":{b},\"Schema\":null}}"));
                }
                _ => {
                    out.push_str("{\"Allows\":true,\"Schema\":");
                    write_go_schema(v, out);
                    out.push('}');
                }
            },
            (_, "dependencies") => write_go_schema_map(v, out, |d, out| {
                out.push_str("{\"Schema\":");
                match d {
                    Value::Array(a) => {
                        out.push_str("null,\"Property\":");
                        out.push_str(&go_json(&Value::Array(a.clone())));
                    }
                    Value::Object(_) => {
                        write_go_schema(d, out);
                        out.push_str(",\"Property\":null");
                    }
                    _ => out.push_str("null,\"Property\":null"),
                }
                out.push('}');
            }),
            (_, "externalDocs") => {
                let get = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
                out.push_str(&format!(
                    "{{\"Description\":{},\"URL\":{}}}",
                    go_json_string(get("description")),
                    go_json_string(get("url"))
                ));
            }
            (_, "x-kubernetes-validations") => {
                out.push('[');
                for (j, r) in v.as_array().into_iter().flatten().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
                    let reason = r
                        .get("reason")
                        .and_then(Value::as_str)
                        .map_or("null".to_string(), go_json_string);
                    let old_self = r
                        .get("optionalOldSelf")
                        .and_then(Value::as_bool)
                        .map_or("null".to_string(), |b| b.to_string());
                    out.push_str(&format!(
                        "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{reason},\"FieldPath\":{},\"OptionalOldSelf\":{old_self}}}",
                        go_json_string(get("rule")),
                        go_json_string(get("message")),
                        go_json_string(get("messageExpression")),
                        go_json_string(get("fieldPath")),
                    ));
                }
                out.push(']');
            }
            _ => out.push_str(&go_json(v)),
        }
    }
    out.push('}');
}

fn write_go_schema_map(v: &Value, out: &mut String, item: fn(&Value, &mut String)) {
    let Some(m) = v.as_object() else {
        out.push_str("null");
        return;
    };
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    out.push('{');
    for (j, k) in keys.iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        out.push_str(&go_json_string(k));
        out.push(':');
        item(&m[k.as_str()], out);
    }
    out.push('}');
}

/// `apiequality.Semantic.DeepEqual` of two versions' `schema` (`*CustomResourceValidation`) after
/// decoding: what decides whether the schemas are hoisted to `spec.validation`. Absent and
/// empty strings, lists and maps are equal; so are `1` and `1.0`.
pub fn same_validation(a: Option<&Value>, b: Option<&Value>) -> bool {
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let sa = a.get("openAPIV3Schema").filter(|v| !v.is_null());
            let sb = b.get("openAPIV3Schema").filter(|v| !v.is_null());
            match (sa, sb) {
                (None, None) => true,
                (Some(x), Some(y)) => same_schema(x, y),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Semantic equality of two decoded `JSONSchemaProps`.
fn same_schema(a: &Value, b: &Value) -> bool {
    crate::budget::charge(1);
    if a == b {
        return true;
    }
    let (Some(ma), Some(mb)) = (a.as_object(), b.as_object()) else {
        return a.is_null() && b.is_null();
    };
    // Only the keys present on either side can differ; unknown keys are dropped on decoding.
    ma.keys().chain(mb.keys()).all(|k| {
        let Some((_, key, zero)) = SCHEMA_FIELDS.iter().find(|(_, key, _)| key == k) else {
            return true;
        };
        let va = a.get(*key).unwrap_or(&Value::Null);
        let vb = b.get(*key).unwrap_or(&Value::Null);
        match (*zero, *key) {
            (GoZero::Str, _) => va.as_str().unwrap_or_default() == vb.as_str().unwrap_or_default(),
            (GoZero::Bool, _) => (va == &Value::Bool(true)) == (vb == &Value::Bool(true)),
            (_, "items") => match (va, vb) {
                (Value::Null, Value::Null) => true,
                (Value::Array(x), Value::Array(y)) => same_list(x, y, same_schema),
                (Value::Object(_), Value::Object(_)) => same_schema(va, vb),
                _ => false,
            },
            (_, "allOf" | "oneOf" | "anyOf") => same_list(
                va.as_array().map_or(&[][..], Vec::as_slice),
                vb.as_array().map_or(&[][..], Vec::as_slice),
                same_schema,
            ),
            (_, "not") => match (va, vb) {
                (Value::Null, Value::Null) => true,
                (Value::Null, _) | (_, Value::Null) => false,
                _ => same_schema(va, vb),
            },
            (_, "properties" | "patternProperties" | "definitions") => {
                same_map(va, vb, same_schema)
            }
            (_, "dependencies") => same_map(va, vb, |x, y| match (x, y) {
                (Value::Array(_), Value::Array(_)) => same_strings(x, y),
                (Value::Object(_), Value::Object(_)) => same_schema(x, y),
                _ => x.is_null() && y.is_null(),
            }),
            (_, "additionalProperties" | "additionalItems") => match (va, vb) {
                (Value::Null, Value::Null) => true,
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Object(_), Value::Object(_)) => same_schema(va, vb),
                _ => false,
            },
            (_, "required" | "x-kubernetes-list-map-keys") => same_strings(va, vb),
            (_, "enum") => same_list(
                va.as_array().map_or(&[][..], Vec::as_slice),
                vb.as_array().map_or(&[][..], Vec::as_slice),
                openapi::go_deep_equal,
            ),
            (_, "x-kubernetes-validations") => same_list(
                va.as_array().map_or(&[][..], Vec::as_slice),
                vb.as_array().map_or(&[][..], Vec::as_slice),
                |x, y| {
                    ["rule", "message", "messageExpression", "fieldPath"]
                        .iter()
                        .all(|k| {
                            x.get(*k).and_then(Value::as_str).unwrap_or_default()
                                == y.get(*k).and_then(Value::as_str).unwrap_or_default()
                        })
                        && ["reason", "optionalOldSelf"].iter().all(|k| {
                            x.get(*k).filter(|v| !v.is_null()) == y.get(*k).filter(|v| !v.is_null())
                        })
                },
            ),
            (_, "externalDocs") => match (va, vb) {
                (Value::Null, Value::Null) => true,
                (Value::Null, _) | (_, Value::Null) => false,
                _ => ["description", "url"].iter().all(|k| {
                    va.get(*k).and_then(Value::as_str).unwrap_or_default()
                        == vb.get(*k).and_then(Value::as_str).unwrap_or_default()
                }),
            },
            (_, "default" | "example") => match (va, vb) {
                (Value::Null, Value::Null) => true,
                (Value::Null, _) | (_, Value::Null) => false,
                _ => openapi::go_deep_equal(va, vb),
            },
            // Other pointers: numbers, strings, booleans.
            _ => match (va, vb) {
                (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
                _ => va == vb,
            },
        }
    })
}

fn same_list(a: &[Value], b: &[Value], eq: fn(&Value, &Value) -> bool) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| eq(x, y))
}

fn same_strings(a: &Value, b: &Value) -> bool {
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect()
    };
    list(a) == list(b)
}

fn same_map(a: &Value, b: &Value, eq: fn(&Value, &Value) -> bool) -> bool {
    let empty = serde_json::Map::new();
    let ma = a.as_object().unwrap_or(&empty);
    let mb = b.as_object().unwrap_or(&empty);
    ma.len() == mb.len() && ma.iter().all(|(k, v)| mb.get(k).is_some_and(|w| eq(v, w)))
}
