//! The internal Go `JSONSchemaProps` (k8s.io/apiextensions-apiserver pkg/apis/apiextensions) a
//! schema decodes to, seen from its raw JSON: which fields are set, how Go's JSON encoder
//! renders the struct in error values, and `apiequality.Semantic.DeepEqual` of two schemas.

use serde_json::Value;

use super::openapi;
use crate::crd::fielderr::{GoValue, go_int};
use crate::schema::ValidationRule;

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
pub(super) fn set_fields(raw: &Value) -> impl Iterator<Item = &'static str> + '_ {
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

/// The internal Go `JSONSchemaProps` a schema converts to, as a Go value (for errors whose bad
/// value is a schema).
pub(super) fn go_schema(raw: &Value) -> GoValue {
    crate::budget::charge(1);
    let empty = serde_json::Map::new();
    let obj = raw.as_object().unwrap_or(&empty);
    let fields = SCHEMA_FIELDS
        .iter()
        .map(|(name, key, zero)| {
            let v = obj.get(*key).unwrap_or(&Value::Null);
            (*name, schema_field(*zero, key, v))
        })
        .collect();
    GoValue::Struct("apiextensions.JSONSchemaProps", fields)
}

const SCHEMA: &str = "apiextensions.JSONSchemaProps";

/// One field of the internal `JSONSchemaProps`, from the raw value of its JSON key.
fn schema_field(zero: GoZero, key: &str, v: &Value) -> GoValue {
    let str_of = |v: &Value| v.as_str().unwrap_or_default().to_string();
    match (zero, key) {
        (GoZero::Str, "$schema") => GoValue::NamedStr("apiextensions.JSONSchemaURL", str_of(v)),
        (GoZero::Str, _) => GoValue::Str(str_of(v)),
        (GoZero::Bool, _) => GoValue::Bool(v == &Value::Bool(true)),
        (_, "maximum" | "minimum" | "multipleOf") => go_ptr("float64", v, || {
            GoValue::Float(v.as_f64().unwrap_or_default())
        }),
        (
            _,
            "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties" | "minProperties",
        ) => go_ptr("int64", v, || {
            let n = v.as_number().and_then(go_int);
            n.map_or_else(|| GoValue::any(v.clone()), GoValue::Int)
        }),
        (_, "default" | "example") => go_ptr("apiextensions.JSON", v, || {
            GoValue::Any("apiextensions.JSON", v.clone())
        }),
        (_, "enum") => go_slice("[]apiextensions.JSON", v, |x| {
            GoValue::Any("apiextensions.JSON", x.clone())
        }),
        (_, "required" | "x-kubernetes-list-map-keys") => {
            go_slice("[]string", v, |x| GoValue::Str(str_of(x)))
        }
        (_, "$ref" | "x-kubernetes-list-type" | "x-kubernetes-map-type") => {
            go_ptr("string", v, || {
                v.as_str()
                    .map_or_else(|| GoValue::any(v.clone()), |s| GoValue::Str(s.into()))
            })
        }
        (_, "x-kubernetes-preserve-unknown-fields") => go_ptr("bool", v, || {
            v.as_bool()
                .map_or_else(|| GoValue::any(v.clone()), GoValue::Bool)
        }),
        (_, "items") => go_ptr("apiextensions.JSONSchemaPropsOrArray", v, || {
            let (schema, schemas) = match v {
                Value::Object(_) => (Some(Box::new(go_schema(v))), None),
                Value::Array(a) => (None, Some(a.iter().map(go_schema).collect())),
                _ => (None, None),
            };
            schema_or_array(schema, schemas)
        }),
        (_, "allOf" | "oneOf" | "anyOf") => {
            go_slice("[]apiextensions.JSONSchemaProps", v, go_schema)
        }
        (_, "not") => go_ptr(SCHEMA, v, || go_schema(v)),
        (_, "properties" | "patternProperties") => {
            schema_map("map[string]apiextensions.JSONSchemaProps", v, go_schema)
        }
        (_, "definitions") => schema_map("apiextensions.JSONSchemaDefinitions", v, go_schema),
        (_, "additionalProperties" | "additionalItems") => {
            go_ptr("apiextensions.JSONSchemaPropsOrBool", v, || {
                let (allows, schema) = match v {
                    Value::Bool(b) => (*b, None),
                    _ => (true, Some(Box::new(go_schema(v)))),
                };
                GoValue::Struct(
                    "apiextensions.JSONSchemaPropsOrBool",
                    vec![
                        ("Allows", GoValue::Bool(allows)),
                        ("Schema", GoValue::Ptr(SCHEMA, schema)),
                    ],
                )
            })
        }
        (_, "dependencies") => schema_map("apiextensions.JSONSchemaDependencies", v, |d| {
            let (schema, property) = match d {
                Value::Array(a) => (
                    None,
                    Some(a.iter().map(|x| GoValue::Str(str_of(x))).collect()),
                ),
                Value::Object(_) => (Some(Box::new(go_schema(d))), None),
                _ => (None, None),
            };
            GoValue::Struct(
                "apiextensions.JSONSchemaPropsOrStringArray",
                vec![
                    ("Schema", GoValue::Ptr(SCHEMA, schema)),
                    ("Property", GoValue::Slice("[]string", property)),
                ],
            )
        }),
        (_, "externalDocs") => go_ptr("apiextensions.ExternalDocumentation", v, || {
            let get = |k: &str| GoValue::Str(v.get(k).map(str_of).unwrap_or_default());
            GoValue::Struct(
                "apiextensions.ExternalDocumentation",
                vec![("Description", get("description")), ("URL", get("url"))],
            )
        }),
        (_, "x-kubernetes-validations") => {
            go_slice("apiextensions.ValidationRules", v, go_raw_rule)
        }
        // Not a field of JSONSchemaProps: SCHEMA_FIELDS has none other.
        _ => GoValue::any(v.clone()),
    }
}

/// A `*T` named `ty`: nil for a null JSON value, else pointing to what `to` makes of it.
fn go_ptr(ty: &'static str, v: &Value, to: impl FnOnce() -> GoValue) -> GoValue {
    GoValue::Ptr(ty, (!v.is_null()).then(|| Box::new(to())))
}

/// A slice named `ty`: nil for a null JSON value, else the items of the JSON array (none when it
/// is no array), each converted by `item`.
fn go_slice(ty: &'static str, v: &Value, item: impl Fn(&Value) -> GoValue) -> GoValue {
    let items = || v.as_array().into_iter().flatten().map(item).collect();
    GoValue::Slice(ty, (!v.is_null()).then(items))
}

/// The `string` field `k` of a JSON object (`""` when it is absent or no string).
fn str_field(v: &Value, k: &str) -> GoValue {
    GoValue::Str(v.get(k).and_then(Value::as_str).unwrap_or_default().into())
}

/// A `JSONSchemaPropsOrArray`.
fn schema_or_array(schema: Option<Box<GoValue>>, schemas: Option<Vec<GoValue>>) -> GoValue {
    GoValue::Struct(
        "apiextensions.JSONSchemaPropsOrArray",
        vec![
            ("Schema", GoValue::Ptr(SCHEMA, schema)),
            (
                "JSONSchemas",
                GoValue::Slice("[]apiextensions.JSONSchemaProps", schemas),
            ),
        ],
    )
}

/// The `*JSONSchemaPropsOrArray` of an `items` that is a list of schemas.
pub(super) fn go_items_list(items: &[Value]) -> GoValue {
    GoValue::Ptr(
        "apiextensions.JSONSchemaPropsOrArray",
        Some(Box::new(schema_or_array(
            None,
            Some(items.iter().map(go_schema).collect()),
        ))),
    )
}

fn schema_map(ty: &'static str, v: &Value, item: impl Fn(&Value) -> GoValue) -> GoValue {
    GoValue::Map(
        ty,
        v.as_object()
            .map(|m| m.iter().map(|(k, x)| (k.clone(), item(x))).collect()),
    )
}

/// An `x-kubernetes-validations` entry as the internal `ValidationRule`.
fn go_raw_rule(r: &Value) -> GoValue {
    let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
    go_rule_of(
        get("rule"),
        get("message"),
        get("messageExpression"),
        r.get("reason").and_then(Value::as_str),
        get("fieldPath"),
        r.get("optionalOldSelf").and_then(Value::as_bool),
    )
}

/// A rule as the internal `ValidationRule` (the bad value of its CEL errors).
pub(crate) fn go_rule(r: &ValidationRule) -> GoValue {
    go_rule_of(
        &r.rule,
        &r.message,
        &r.message_expression,
        r.reason.as_deref(),
        &r.field_path,
        r.optional_old_self,
    )
}

fn go_rule_of(
    rule: &str,
    message: &str,
    message_expression: &str,
    reason: Option<&str>,
    field_path: &str,
    optional_old_self: Option<bool>,
) -> GoValue {
    const REASON: &str = "apiextensions.FieldValueErrorReason";
    GoValue::Struct(
        "apiextensions.ValidationRule",
        vec![
            ("Rule", GoValue::Str(rule.into())),
            ("Message", GoValue::Str(message.into())),
            ("MessageExpression", GoValue::Str(message_expression.into())),
            (
                "Reason",
                GoValue::Ptr(
                    REASON,
                    reason.map(|r| Box::new(GoValue::NamedStr(REASON, r.into()))),
                ),
            ),
            ("FieldPath", GoValue::Str(field_path.into())),
            ("OptionalOldSelf", GoValue::ptr_bool(optional_old_self)),
        ],
    )
}

/// `spec.versions` as the internal `[]CustomResourceDefinitionVersion` the v1 conversion makes
/// of it (nil when absent): the per-version schemas, subresources, printer columns and
/// selectable fields are moved to the spec, and so are nil in every version, when all versions
/// have the same.
pub(super) fn go_versions(versions: Option<&Value>) -> GoValue {
    const TY: &str = "[]apiextensions.CustomResourceDefinitionVersion";
    let Some(list) = versions.and_then(Value::as_array) else {
        return GoValue::Slice(TY, None);
    };
    let first_schema = list.first().and_then(|v| v.get("schema"));
    let schemas_hoisted = list
        .iter()
        .all(|v| same_validation(v.get("schema"), first_schema));
    let per_version = |f: fn(&Value) -> GoValue| {
        let all: Vec<GoValue> = list.iter().map(f).collect();
        let hoisted = all.iter().all(|x| x.semantic_eq(&all[0]));
        all.into_iter()
            .map(|x| if hoisted { None } else { Some(x) })
            .collect::<Vec<_>>()
    };
    let subresources = per_version(go_subresources);
    let columns = per_version(go_columns);
    let selectable = per_version(go_selectable_fields);
    let items = list
        .iter()
        .zip(subresources)
        .zip(columns)
        .zip(selectable)
        .map(|(((v, sub), cols), sel)| {
            let s = |k: &str| str_field(v, k);
            let b = |k: &str| GoValue::Bool(v.get(k).and_then(Value::as_bool).unwrap_or(false));
            let schema = v
                .get("schema")
                .filter(|x| !x.is_null() && !schemas_hoisted)
                .map(|x| {
                    let root = x.get("openAPIV3Schema").filter(|r| !r.is_null());
                    Box::new(GoValue::Struct(
                        "apiextensions.CustomResourceValidation",
                        vec![(
                            "OpenAPIV3Schema",
                            GoValue::Ptr(SCHEMA, root.map(|r| Box::new(go_schema(r)))),
                        )],
                    ))
                });
            GoValue::Struct(
                "apiextensions.CustomResourceDefinitionVersion",
                vec![
                    ("Name", s("name")),
                    ("Served", b("served")),
                    ("Storage", b("storage")),
                    ("Deprecated", b("deprecated")),
                    (
                        "DeprecationWarning",
                        GoValue::ptr_str(v.get("deprecationWarning").and_then(Value::as_str)),
                    ),
                    (
                        "Schema",
                        GoValue::Ptr("apiextensions.CustomResourceValidation", schema),
                    ),
                    (
                        "Subresources",
                        sub.unwrap_or(GoValue::Ptr(
                            "apiextensions.CustomResourceSubresources",
                            None,
                        )),
                    ),
                    (
                        "AdditionalPrinterColumns",
                        cols.unwrap_or(GoValue::Slice(COLUMNS, None)),
                    ),
                    (
                        "SelectableFields",
                        sel.unwrap_or(GoValue::Slice(SELECTABLE_FIELDS, None)),
                    ),
                ],
            )
        })
        .collect();
    GoValue::Slice(TY, Some(items))
}

const COLUMNS: &str = "[]apiextensions.CustomResourceColumnDefinition";
const SELECTABLE_FIELDS: &str = "[]apiextensions.SelectableField";

/// A version's `*CustomResourceSubresources`.
fn go_subresources(v: &Value) -> GoValue {
    const TY: &str = "apiextensions.CustomResourceSubresources";
    let sub = v.get("subresources").filter(|x| !x.is_null());
    GoValue::Ptr(
        TY,
        sub.map(|sub| {
            let status = sub.get("status").filter(|x| !x.is_null()).map(|_| {
                Box::new(GoValue::Struct(
                    "apiextensions.CustomResourceSubresourceStatus",
                    vec![],
                ))
            });
            let scale = sub.get("scale").filter(|x| !x.is_null()).map(|sc| {
                let s = |k: &str| str_field(sc, k);
                Box::new(GoValue::Struct(
                    "apiextensions.CustomResourceSubresourceScale",
                    vec![
                        ("SpecReplicasPath", s("specReplicasPath")),
                        ("StatusReplicasPath", s("statusReplicasPath")),
                        (
                            "LabelSelectorPath",
                            GoValue::ptr_str(sc.get("labelSelectorPath").and_then(Value::as_str)),
                        ),
                    ],
                ))
            });
            Box::new(GoValue::Struct(
                TY,
                vec![
                    (
                        "Status",
                        GoValue::Ptr("apiextensions.CustomResourceSubresourceStatus", status),
                    ),
                    (
                        "Scale",
                        GoValue::Ptr("apiextensions.CustomResourceSubresourceScale", scale),
                    ),
                ],
            ))
        }),
    )
}

/// A version's `[]CustomResourceColumnDefinition`.
fn go_columns(v: &Value) -> GoValue {
    let cols = v.get("additionalPrinterColumns").and_then(Value::as_array);
    GoValue::Slice(
        COLUMNS,
        cols.map(|cols| {
            cols.iter()
                .map(|c| {
                    let s = |k: &str| str_field(c, k);
                    let priority = c
                        .get("priority")
                        .and_then(Value::as_number)
                        .and_then(go_int)
                        .unwrap_or_default();
                    GoValue::Struct(
                        "apiextensions.CustomResourceColumnDefinition",
                        vec![
                            ("Name", s("name")),
                            ("Type", s("type")),
                            ("Format", s("format")),
                            ("Description", s("description")),
                            ("Priority", GoValue::Int(priority)),
                            ("JSONPath", s("jsonPath")),
                        ],
                    )
                })
                .collect()
        }),
    )
}

/// A version's `[]SelectableField`.
fn go_selectable_fields(v: &Value) -> GoValue {
    let fields = v.get("selectableFields").and_then(Value::as_array);
    GoValue::Slice(
        SELECTABLE_FIELDS,
        fields.map(|fields| {
            fields
                .iter()
                .map(|f| {
                    let path = f
                        .get("jsonPath")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    GoValue::Struct(
                        "apiextensions.SelectableField",
                        vec![("JSONPath", GoValue::Str(path.into()))],
                    )
                })
                .collect()
        }),
    )
}

/// `apiequality.Semantic.DeepEqual` of two versions' `schema` (`*CustomResourceValidation`) after
/// decoding: what decides whether the schemas are hoisted to `spec.validation`. Absent and
/// empty strings, lists and maps are equal; so are `1` and `1.0`.
pub(crate) fn same_validation(a: Option<&Value>, b: Option<&Value>) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::fielderr::govalue::POINTER_ADDRESS;

    /// Go 1.26's `%#v` and `encoding/json` of the internal `JSONSchemaProps` this schema converts
    /// to (pointers below the top level print their address, here a stand-in).
    #[test]
    fn schemas_render_as_go_renders_the_internal_struct() {
        let raw: Value = serde_json::from_str(
            r#"{"type":"object","default":{"a":1},"maximum":1.5,"maxLength":3,"enum":["a",null,1],"required":["a"],"properties":{"b":{"type":"string"},"a":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"true"}],"dependencies":{"a":["b"]},"definitions":{}}"#,
        )
        .unwrap();
        let v = go_schema(&raw);
        assert_eq!(
            v.go_syntax(),
            format!(
                "apiextensions.JSONSchemaProps{{ID:\"\", Schema:\"\", Ref:(*string)(nil), Description:\"\", Type:\"object\", Nullable:false, Format:\"\", Title:\"\", Default:(*apiextensions.JSON)({POINTER_ADDRESS}), Maximum:(*float64)({POINTER_ADDRESS}), ExclusiveMaximum:false, Minimum:(*float64)(nil), ExclusiveMinimum:false, MaxLength:(*int64)({POINTER_ADDRESS}), MinLength:(*int64)(nil), Pattern:\"\", MaxItems:(*int64)(nil), MinItems:(*int64)(nil), UniqueItems:false, MultipleOf:(*float64)(nil), Enum:[]apiextensions.JSON{{\"a\", apiextensions.JSON(nil), 1}}, MaxProperties:(*int64)(nil), MinProperties:(*int64)(nil), Required:[]string{{\"a\"}}, Items:(*apiextensions.JSONSchemaPropsOrArray)(nil), AllOf:[]apiextensions.JSONSchemaProps(nil), OneOf:[]apiextensions.JSONSchemaProps(nil), AnyOf:[]apiextensions.JSONSchemaProps(nil), Not:(*apiextensions.JSONSchemaProps)(nil), Properties:map[string]apiextensions.JSONSchemaProps{{\"a\":apiextensions.JSONSchemaProps{{ID:\"\", Schema:\"\", Ref:(*string)(nil), Description:\"\", Type:\"integer\", Nullable:false, Format:\"\", Title:\"\", Default:(*apiextensions.JSON)(nil), Maximum:(*float64)(nil), ExclusiveMaximum:false, Minimum:(*float64)(nil), ExclusiveMinimum:false, MaxLength:(*int64)(nil), MinLength:(*int64)(nil), Pattern:\"\", MaxItems:(*int64)(nil), MinItems:(*int64)(nil), UniqueItems:false, MultipleOf:(*float64)(nil), Enum:[]apiextensions.JSON(nil), MaxProperties:(*int64)(nil), MinProperties:(*int64)(nil), Required:[]string(nil), Items:(*apiextensions.JSONSchemaPropsOrArray)(nil), AllOf:[]apiextensions.JSONSchemaProps(nil), OneOf:[]apiextensions.JSONSchemaProps(nil), AnyOf:[]apiextensions.JSONSchemaProps(nil), Not:(*apiextensions.JSONSchemaProps)(nil), Properties:map[string]apiextensions.JSONSchemaProps(nil), AdditionalProperties:(*apiextensions.JSONSchemaPropsOrBool)(nil), PatternProperties:map[string]apiextensions.JSONSchemaProps(nil), Dependencies:apiextensions.JSONSchemaDependencies(nil), AdditionalItems:(*apiextensions.JSONSchemaPropsOrBool)(nil), Definitions:apiextensions.JSONSchemaDefinitions(nil), ExternalDocs:(*apiextensions.ExternalDocumentation)(nil), Example:(*apiextensions.JSON)(nil), XPreserveUnknownFields:(*bool)(nil), XEmbeddedResource:false, XIntOrString:false, XListMapKeys:[]string(nil), XListType:(*string)(nil), XMapType:(*string)(nil), XValidations:apiextensions.ValidationRules(nil)}}, \"b\":apiextensions.JSONSchemaProps{{ID:\"\", Schema:\"\", Ref:(*string)(nil), Description:\"\", Type:\"string\", Nullable:false, Format:\"\", Title:\"\", Default:(*apiextensions.JSON)(nil), Maximum:(*float64)(nil), ExclusiveMaximum:false, Minimum:(*float64)(nil), ExclusiveMinimum:false, MaxLength:(*int64)(nil), MinLength:(*int64)(nil), Pattern:\"\", MaxItems:(*int64)(nil), MinItems:(*int64)(nil), UniqueItems:false, MultipleOf:(*float64)(nil), Enum:[]apiextensions.JSON(nil), MaxProperties:(*int64)(nil), MinProperties:(*int64)(nil), Required:[]string(nil), Items:(*apiextensions.JSONSchemaPropsOrArray)(nil), AllOf:[]apiextensions.JSONSchemaProps(nil), OneOf:[]apiextensions.JSONSchemaProps(nil), AnyOf:[]apiextensions.JSONSchemaProps(nil), Not:(*apiextensions.JSONSchemaProps)(nil), Properties:map[string]apiextensions.JSONSchemaProps(nil), AdditionalProperties:(*apiextensions.JSONSchemaPropsOrBool)(nil), PatternProperties:map[string]apiextensions.JSONSchemaProps(nil), Dependencies:apiextensions.JSONSchemaDependencies(nil), AdditionalItems:(*apiextensions.JSONSchemaPropsOrBool)(nil), Definitions:apiextensions.JSONSchemaDefinitions(nil), ExternalDocs:(*apiextensions.ExternalDocumentation)(nil), Example:(*apiextensions.JSON)(nil), XPreserveUnknownFields:(*bool)(nil), XEmbeddedResource:false, XIntOrString:false, XListMapKeys:[]string(nil), XListType:(*string)(nil), XMapType:(*string)(nil), XValidations:apiextensions.ValidationRules(nil)}}}}, AdditionalProperties:(*apiextensions.JSONSchemaPropsOrBool)(nil), PatternProperties:map[string]apiextensions.JSONSchemaProps(nil), Dependencies:apiextensions.JSONSchemaDependencies{{\"a\":apiextensions.JSONSchemaPropsOrStringArray{{Schema:(*apiextensions.JSONSchemaProps)(nil), Property:[]string{{\"b\"}}}}}}, AdditionalItems:(*apiextensions.JSONSchemaPropsOrBool)(nil), Definitions:apiextensions.JSONSchemaDefinitions{{}}, ExternalDocs:(*apiextensions.ExternalDocumentation)(nil), Example:(*apiextensions.JSON)(nil), XPreserveUnknownFields:(*bool)(nil), XEmbeddedResource:false, XIntOrString:false, XListMapKeys:[]string(nil), XListType:(*string)(nil), XMapType:(*string)(nil), XValidations:apiextensions.ValidationRules{{apiextensions.ValidationRule{{Rule:\"true\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}}}}}"
            )
        );
        assert_eq!(
            v.json(),
            "{\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"\",\"Type\":\"object\",\"Nullable\":false,\"Format\":\"\",\"Title\":\"\",\"Default\":{\"a\":1},\"Maximum\":1.5,\"ExclusiveMaximum\":false,\"Minimum\":null,\"ExclusiveMinimum\":false,\"MaxLength\":3,\"MinLength\":null,\"Pattern\":\"\",\"MaxItems\":null,\"MinItems\":null,\"UniqueItems\":false,\"MultipleOf\":null,\"Enum\":[\"a\",null,1],\"MaxProperties\":null,\"MinProperties\":null,\"Required\":[\"a\"],\"Items\":null,\"AllOf\":null,\"OneOf\":null,\"AnyOf\":null,\"Not\":null,\"Properties\":{\"a\":{\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"\",\"Type\":\"integer\",\"Nullable\":false,\"Format\":\"\",\"Title\":\"\",\"Default\":null,\"Maximum\":null,\"ExclusiveMaximum\":false,\"Minimum\":null,\"ExclusiveMinimum\":false,\"MaxLength\":null,\"MinLength\":null,\"Pattern\":\"\",\"MaxItems\":null,\"MinItems\":null,\"UniqueItems\":false,\"MultipleOf\":null,\"Enum\":null,\"MaxProperties\":null,\"MinProperties\":null,\"Required\":null,\"Items\":null,\"AllOf\":null,\"OneOf\":null,\"AnyOf\":null,\"Not\":null,\"Properties\":null,\"AdditionalProperties\":null,\"PatternProperties\":null,\"Dependencies\":null,\"AdditionalItems\":null,\"Definitions\":null,\"ExternalDocs\":null,\"Example\":null,\"XPreserveUnknownFields\":null,\"XEmbeddedResource\":false,\"XIntOrString\":false,\"XListMapKeys\":null,\"XListType\":null,\"XMapType\":null,\"XValidations\":null},\"b\":{\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"\",\"Type\":\"string\",\"Nullable\":false,\"Format\":\"\",\"Title\":\"\",\"Default\":null,\"Maximum\":null,\"ExclusiveMaximum\":false,\"Minimum\":null,\"ExclusiveMinimum\":false,\"MaxLength\":null,\"MinLength\":null,\"Pattern\":\"\",\"MaxItems\":null,\"MinItems\":null,\"UniqueItems\":false,\"MultipleOf\":null,\"Enum\":null,\"MaxProperties\":null,\"MinProperties\":null,\"Required\":null,\"Items\":null,\"AllOf\":null,\"OneOf\":null,\"AnyOf\":null,\"Not\":null,\"Properties\":null,\"AdditionalProperties\":null,\"PatternProperties\":null,\"Dependencies\":null,\"AdditionalItems\":null,\"Definitions\":null,\"ExternalDocs\":null,\"Example\":null,\"XPreserveUnknownFields\":null,\"XEmbeddedResource\":false,\"XIntOrString\":false,\"XListMapKeys\":null,\"XListType\":null,\"XMapType\":null,\"XValidations\":null}},\"AdditionalProperties\":null,\"PatternProperties\":null,\"Dependencies\":{\"a\":{\"Schema\":null,\"Property\":[\"b\"]}},\"AdditionalItems\":null,\"Definitions\":{},\"ExternalDocs\":null,\"Example\":null,\"XPreserveUnknownFields\":null,\"XEmbeddedResource\":false,\"XIntOrString\":false,\"XListMapKeys\":null,\"XListType\":null,\"XMapType\":null,\"XValidations\":[{\"Rule\":\"true\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}]}"
        );
    }
}
