//! The CRD validation checks that are not CEL (k8s.io/apiextensions-apiserver
//! pkg/apis/apiextensions/validation/validation.go): those that gate CEL compilation of a node
//! (schema errors at or below it), and the object-level checks a create runs.

use serde_json::Value;

use super::fielderr::{BadValue, FieldError, go_json_string};
use crate::schema::Schema;

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const SUPPORTED_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Object-level checks of the spec that every create runs.
pub fn validate_crd_spec(crd: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let no_versions = Vec::new();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .unwrap_or(&no_versions);
    let storage = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
        .count();
    if !versions.is_empty() && storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            BadValue::Json(internal_versions_json(versions)),
            "must have exactly one version marked as storage version",
        ));
    }
    if versions.is_empty() {
        errs.push(FieldError::invalid(
            "spec.versions",
            BadValue::Null,
            "must have exactly one version marked as storage version",
        ));
    }
    // The registry strategy sets status.storedVersions to the storage version on create.
    if storage == 0 {
        errs.push(FieldError::invalid(
            "status.storedVersions",
            BadValue::Null,
            "must have at least one stored version",
        ));
    }
    errs
}

/// The internal `[]CustomResourceDefinitionVersion` as Go's JSON encoder renders it in error
/// values (schemas hoisted to spec.validation render as null).
fn internal_versions_json(versions: &[Value]) -> String {
    let first_schema = versions.first().and_then(|v| v.get("schema"));
    let hoisted = versions.iter().all(|v| v.get("schema") == first_schema);
    let items: Vec<String> = versions
        .iter()
        .map(|v| {
            let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            let b = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
            let warning = v
                .get("deprecationWarning")
                .and_then(Value::as_str)
                .map(go_json_string)
                .unwrap_or_else(|| "null".into());
            let schema = if hoisted { "null".to_string() } else { v.get("schema").map(|x| x.to_string()).unwrap_or("null".into()) };
            format!(
                "{{\"Name\":{},\"Served\":{},\"Storage\":{},\"Deprecated\":{},\"DeprecationWarning\":{},\"Schema\":{},\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}}",
                go_json_string(&s("name")),
                b("served"),
                b("storage"),
                b("deprecated"),
                warning,
                schema
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// Root-only checks (`validateCustomResourceDefinitionValidation`).
pub fn validate_root(s: &Schema, fld: &str, status_enabled: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if status_enabled && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(FieldError::invalid(
            &format!("{fld}.type"),
            BadValue::Str(s.type_.clone()),
            r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
        ));
    }
    if s.nullable {
        errs.push(FieldError::forbidden(
            &format!("{fld}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    errs
}

/// Structural-schema checks that, when they fail, turn CEL off for the whole schema.
pub fn validate_structural(s: &Schema, fld: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    structural(s, fld, true, &mut errs);
    errs
}

fn structural(s: &Schema, fld: &str, root: bool, errs: &mut Vec<FieldError>) {
    if s.type_.is_empty()
        && !s.x_int_or_string
        && s.x_preserve_unknown_fields != Some(true)
        && !root
    {
        // Structural schemas need a type everywhere below the root, except where
        // int-or-string or preserve-unknown-fields say otherwise.
        errs.push(FieldError::required(
            &format!("{fld}.type"),
            "must not be empty for specified object fields",
        ));
    }
    if root && s.type_ != "object" && !s.type_.is_empty() {
        errs.push(FieldError::invalid(
            &format!("{fld}.type"),
            BadValue::Str(s.type_.clone()),
            "must be object at the root",
        ));
    }
    if root && s.type_.is_empty() {
        errs.push(FieldError::required(
            &format!("{fld}.type"),
            "must not be empty at the root",
        ));
    }
    for (k, p) in &s.properties {
        structural(p, &format!("{fld}.properties[{k}]"), false, errs);
    }
    if let Some(i) = &s.items {
        structural(i, &format!("{fld}.items"), false, errs);
    }
    if let Some(a) = s.additional_properties_schema() {
        structural(a, &format!("{fld}.additionalProperties"), false, errs);
    }
}

/// Checks of one node that count as schema errors for CEL gating (`ssv.validate` and the
/// per-node checks of `ValidateCustomResourceDefinitionOpenAPISchema`).
pub fn validate_node(
    s: &Schema,
    fld: &str,
    inside_resource_meta: bool,
    _is_root: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !s.type_.is_empty() && !OPENAPI_V3_TYPES.contains(&s.type_.as_str()) && s.type_ != "null" {
        errs.push(FieldError::not_supported(
            &format!("{fld}.type"),
            BadValue::Str(s.type_.clone()),
            &OPENAPI_V3_TYPES,
        ));
    }
    if s.type_ == "null" {
        errs.push(FieldError::forbidden(
            &format!("{fld}.type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if !s.items_array.is_empty() {
        errs.push(FieldError::forbidden(
            &format!("{fld}.items"),
            "items must be a schema object and not an array",
        ));
    }
    if inside_resource_meta && s.x_embedded_resource {
        errs.push(FieldError::forbidden(
            &format!("{fld}.x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if s.unique_items {
        errs.push(FieldError::forbidden(
            &format!("{fld}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if s.additional_properties.is_some() && !s.properties.is_empty() {
        let allows = !matches!(
            s.additional_properties,
            Some(crate::schema::AdditionalProperties::Bool(false))
        );
        if !allows || s.additional_properties_schema().is_some() {
            errs.push(FieldError::forbidden(
                &format!("{fld}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
    }
    if s.x_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            &format!("{fld}.x-kubernetes-preserve-unknown-fields"),
            BadValue::Bool(false),
            "must be true or undefined",
        ));
    }
    if let Some(mt) = &s.x_map_type {
        if s.type_ != "object" {
            if s.type_.is_empty() {
                errs.push(FieldError::required(
                    &format!("{fld}.type"),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            } else {
                errs.push(FieldError::invalid(
                    &format!("{fld}.type"),
                    BadValue::Str(s.type_.clone()),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            }
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                &format!("{fld}.x-kubernetes-map-type"),
                BadValue::Str(mt.clone()),
                &["atomic", "granular"],
            ));
        }
    }
    if let Some(lt) = &s.x_list_type {
        if s.type_ != "array" {
            if s.type_.is_empty() {
                errs.push(FieldError::required(
                    &format!("{fld}.type"),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            } else {
                errs.push(FieldError::invalid(
                    &format!("{fld}.type"),
                    BadValue::Str(s.type_.clone()),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            }
        }
        if lt != "atomic" && lt != "set" && lt != "map" {
            errs.push(FieldError::not_supported(
                &format!("{fld}.x-kubernetes-list-type"),
                BadValue::Str(lt.clone()),
                &["atomic", "set", "map"],
            ));
        }
        if lt == "map" {
            if s.x_list_map_keys.is_empty() {
                errs.push(FieldError::required(
                    &format!("{fld}.x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            match &s.items {
                None => errs.push(FieldError::required(
                    &format!("{fld}.items"),
                    "must have a schema if x-kubernetes-list-type is map",
                )),
                Some(items) if items.type_ != "object" => errs.push(FieldError::invalid(
                    &format!("{fld}.items.type"),
                    BadValue::Str(items.type_.clone()),
                    "must be object if parent array's x-kubernetes-list-type is map",
                )),
                Some(items) => {
                    let mut seen = Vec::new();
                    for k in &s.x_list_map_keys {
                        match items.properties.get(k) {
                            Some(p) if p.type_ == "array" || p.type_ == "object" => errs.push(FieldError::invalid(
                                &format!("{fld}.items.properties[{k}].type"),
                                BadValue::Str(items.type_.clone()),
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            )),
                            Some(_) => {}
                            None => errs.push(FieldError::invalid(
                                &format!("{fld}.x-kubernetes-list-map-keys"),
                                BadValue::Json(serde_json::to_string(&s.x_list_map_keys).unwrap_or_default()),
                                "entries must all be names of item properties",
                            )),
                        }
                        if seen.contains(&k) {
                            errs.push(FieldError::invalid(
                                &format!("{fld}.x-kubernetes-list-map-keys"),
                                BadValue::Json(
                                    serde_json::to_string(&s.x_list_map_keys).unwrap_or_default(),
                                ),
                                "must not contain duplicate entries",
                            ));
                        }
                        seen.push(k);
                    }
                }
            }
        }
    } else if !s.x_list_map_keys.is_empty() {
        errs.push(FieldError::required(
            &format!("{fld}.x-kubernetes-list-type"),
            "must be map if x-kubernetes-list-map-keys is non-empty",
        ));
    }
    for (i, rule) in s.x_validations.iter().enumerate() {
        let base = format!("{fld}.x-kubernetes-validations[{i}]");
        let trimmed_rule = rule.rule.trim();
        let trimmed_msg = rule.message.trim();
        let has_newlines = |x: &str| x.contains('\n') || x.contains('\r');
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                &format!("{base}.rule"),
                "rule is not specified",
            ));
        } else if !rule.message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(
                &format!("{base}.message"),
                BadValue::Str(rule.message.clone()),
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid(
                &format!("{base}.message"),
                BadValue::Str(rule.message.clone()),
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                &format!("{base}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
            errs.push(FieldError::required(
                &format!("{base}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(r) = &rule.reason
            && !SUPPORTED_REASONS.contains(&r.as_str())
        {
            errs.push(FieldError::not_supported(
                &format!("{base}.reason"),
                BadValue::Str(r.clone()),
                &SUPPORTED_REASONS,
            ));
        }
        if !rule.field_path.is_empty() && rule.field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                &format!("{base}.fieldPath"),
                BadValue::Str(rule.field_path.clone()),
                "must be non-empty if specified",
            ));
        }
        if has_newlines(&rule.field_path) {
            errs.push(FieldError::invalid(
                &format!("{base}.fieldPath"),
                BadValue::Str(rule.field_path.clone()),
                "must not contain line breaks",
            ));
        }
    }
    errs
}
