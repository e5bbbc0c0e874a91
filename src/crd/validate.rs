//! The CRD validation checks that are not CEL (k8s.io/apiextensions-apiserver
//! pkg/apis/apiextensions/validation/validation.go): the object-level checks a create runs, the
//! schema-level checks that decide whether CEL runs at all (`validateCustomResourceDefinitionValidation`:
//! structural schema, defaults), and the per-node checks whose errors turn CEL off for the node
//! and its ancestors (`ValidateCustomResourceDefinitionOpenAPISchema`, `specStandardValidatorV3`).

mod default_rules;
mod defaults;
mod formats;
use crate::goregexp;
mod internal;
mod node;
mod objectmeta;
mod openapi;
mod structural;
#[cfg(test)]
mod tests;

use std::fmt::Display;

use serde_json::Value;

pub use internal::{go_rule, same_validation};
pub use node::{NodeContext, nested_schemas, validate_node};

use super::fielderr::{BadValue, FieldError, GoValue};
use crate::schema::Schema;

/// Object-level checks of the spec that every create runs.
pub fn validate_crd_spec(crd: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let versions = crd.pointer("/spec/versions");
    let storage = versions
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
        .count();
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            BadValue::Go(internal::go_versions(versions)),
            "must have exactly one version marked as storage version",
        ));
    }
    // The registry strategy sets status.storedVersions to the storage version on create (from
    // an empty status).
    if storage == 0 {
        errs.push(FieldError::invalid(
            "status.storedVersions",
            BadValue::Go(GoValue::strings(None)),
            "must have at least one stored version",
        ));
    }
    errs
}

/// The schema-level checks of `validateCustomResourceDefinitionValidation`, made before the
/// node walk.
pub struct RootChecks {
    pub errors: Vec<FieldError>,
    /// Whether the schema is structural with valid defaults, so that CEL rules are compiled
    /// (the API server's `celContext` is non-nil).
    pub cel_enabled: bool,
    /// `NewStructural`'s error: the API server reports it only when nothing else is wrong with
    /// this schema (its other errors usually say the same).
    pub conversion_error: Option<FieldError>,
    /// Rules on defaults celcost did not evaluate (see `default_rules.rs`), and why.
    pub unevaluated_default_rules: Vec<String>,
    /// A rule on a default the API server's CEL compiler panics on.
    pub panic: Option<(String, crate::cel::env::CheckerPanic)>,
}

/// The fields allowed at the root of a schema when the status subresource is enabled.
const ALLOWED_AT_ROOT_WITH_STATUS: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// The checks of [`validate_root`] that involve no CEL, so that every Kubernetes minor makes
/// them alike: the root restrictions, then `NewStructural` and `ValidateStructural`, each only
/// if the previous passed.
#[derive(Debug)]
pub struct StructuralChecks {
    pub errors: Vec<FieldError>,
    /// `NewStructural`'s error (see [`RootChecks::conversion_error`]).
    pub conversion_error: Option<FieldError>,
    /// Whether the schema is structural: its defaults are validated next.
    pub structural: bool,
}

/// The first part of `validateCustomResourceDefinitionValidation`: see [`StructuralChecks`].
pub fn validate_structure(
    s: &Schema,
    raw: &Value,
    fld: &str,
    status_enabled: bool,
) -> StructuralChecks {
    let mut checks = StructuralChecks {
        errors: Vec::new(),
        conversion_error: None,
        structural: false,
    };
    if status_enabled {
        checks.errors.extend(status_root_error(s, raw, fld));
    }
    if s.nullable {
        checks.errors.push(FieldError::forbidden(
            &format!("{fld}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    if let Some(e) = structural::conversion_error(s) {
        checks.conversion_error = Some(FieldError::invalid(fld, BadValue::Str(String::new()), e));
        return checks;
    }
    let structural_errors = structural::validate_structural(s, fld);
    checks.structural = structural_errors.is_empty();
    checks.errors.extend(structural_errors);
    checks
}

/// `validateCustomResourceDefinitionValidation` up to the node walk: the checks of
/// [`validate_structure`] (made once for every minor), then `ValidateDefaults` if they passed;
/// CEL runs only if all of them pass.
pub fn validate_root(
    s: &Schema,
    fld: &str,
    structure: &StructuralChecks,
    env: &crate::cel::env::Env,
) -> RootChecks {
    let mut checks = RootChecks {
        errors: structure.errors.clone(),
        cel_enabled: false,
        conversion_error: structure.conversion_error.clone(),
        unevaluated_default_rules: Vec::new(),
        panic: None,
    };
    if !structure.structural {
        return checks;
    }
    let defaults = defaults::validate_defaults(s, fld, env);
    checks.unevaluated_default_rules = defaults.unevaluated;
    checks.panic = defaults.panic;
    if !defaults.errors.is_empty() {
        // Then the API server compiles no rule of this schema: no cost checks either.
        checks.errors.extend(defaults.errors);
        return checks;
    }
    checks.cel_enabled = true;
    checks
}

/// With the status subresource, the root may only be an object and use some fields: the
/// first non-zero field (in declaration order) that breaks this is reported.
fn status_root_error(s: &Schema, raw: &Value, fld: &str) -> Option<FieldError> {
    for name in internal::set_fields(raw) {
        if name == "Type" {
            if s.type_ != "object" {
                return Some(FieldError::invalid(
                    &format!("{fld}.type"),
                    BadValue::Str(s.type_.clone()),
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                ));
            }
            continue;
        }
        if !ALLOWED_AT_ROOT_WITH_STATUS.contains(&name) {
            return Some(FieldError::invalid(
                fld,
                BadValue::Go(internal::go_schema(raw)),
                &format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    ALLOWED_AT_ROOT_WITH_STATUS.join(" ")
                ),
            ));
        }
    }
    None
}

/// `Required` when the type is empty, else `Invalid` with the type.
fn type_error(fld: impl Display, type_: &str, detail: &str) -> FieldError {
    if type_.is_empty() {
        FieldError::required(&format!("{fld}.type"), detail)
    } else {
        FieldError::invalid(
            &format!("{fld}.type"),
            BadValue::Str(type_.to_string()),
            detail,
        )
    }
}
