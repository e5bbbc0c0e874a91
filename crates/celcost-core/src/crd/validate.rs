//! The CRD validation checks that are not CEL (k8s.io/apiextensions-apiserver
//! pkg/apis/apiextensions/validation/validation.go): the object-level checks a create runs, the
//! schema-level checks that decide whether CEL runs at all (`validateCustomResourceDefinitionValidation`:
//! structural schema, defaults), and the per-node checks whose errors turn CEL off for the node
//! and its ancestors (`ValidateCustomResourceDefinitionOpenAPISchema`, `specStandardValidatorV3`).

mod default_rules;
mod defaults;
pub(crate) mod formats;
use crate::goregexp;
#[cfg(test)]
#[path = "validate/default_tests/tests.rs"]
mod default_tests;
mod internal;
mod node;
mod objectmeta;
mod openapi;
mod structural;
#[cfg(test)]
mod tests;

use std::fmt::Display;

use serde_json::Value;

pub(super) use internal::{go_rule, same_validation};
pub(super) use node::{NodeContext, nested_schemas, validate_node};

use super::fielderr::{BadValue, FieldError, GoValue};
use crate::schema::Schema;

/// Object-level checks of the spec that every create and update runs.
pub(super) fn validate_crd_spec(crd: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let versions = crd.pointer("/spec/versions");
    let storage = versions
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| is_storage(v))
        .count();
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            BadValue::Go(internal::go_versions(versions)),
            "must have exactly one version marked as storage version",
        ));
    }
    errs
}

fn is_storage(v: &Value) -> bool {
    v.get("storage").and_then(Value::as_bool).unwrap_or(false)
}

fn version_name(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// `status.storedVersions` after the registry strategy prepared a write: the stored object's
/// (`PrepareForUpdate` keeps the old status; `None` on create, whose status starts empty) with the
/// first storage version of `crd` appended when it is not in it.
pub(super) fn stored_versions_after_write(
    stored: Option<&[String]>,
    crd: &Value,
) -> Option<Vec<String>> {
    let mut out: Option<Vec<String>> = stored.map(<[String]>::to_vec);
    let first_storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| is_storage(v))
        .map(version_name);
    if let Some(name) = first_storage
        && !out.as_ref().is_some_and(|s| s.iter().any(|x| x == name))
    {
        out.get_or_insert_with(Vec::new).push(name.to_string());
    }
    out
}

/// `ValidateCustomResourceDefinitionStoredVersions` of `status.storedVersions` (`None`: nil)
/// against `spec.versions`, in the words of Kubernetes `k`.
pub(super) fn validate_stored_versions(
    stored: Option<&[String]>,
    crd: &Value,
    k: crate::cel::decls::Version,
) -> Vec<FieldError> {
    let value = || BadValue::Go(GoValue::strings(stored));
    let stored_list = stored.unwrap_or_default();
    if stored_list.is_empty() {
        return vec![FieldError::invalid(
            "status.storedVersions",
            value(),
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    // Go's map of name → (last) index, entries deleted as versions are found; reported in the
    // order of the list (Go's is random: the API server's errors are compared as sets).
    let mut left: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, v) in stored_list.iter().enumerate() {
        left.insert(v, i);
    }
    for v in crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = version_name(v);
        let found = left.remove(name).is_some();
        if is_storage(v) && !found {
            errs.push(FieldError::invalid(
                "status.storedVersions",
                value(),
                &format!("must have the storage version {name}"),
            ));
        }
    }
    let mut left: Vec<(&str, usize)> = left.into_iter().collect();
    left.sort_by_key(|&(_, i)| i);
    for (v, i) in left {
        let detail = if super::fielderr::stored_version_removal_says_why(k) {
            format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            )
        } else {
            "must appear in spec.versions".to_string()
        };
        errs.push(FieldError::invalid(
            &format!("status.storedVersions[{i}]"),
            BadValue::Str(v.to_string()),
            &detail,
        ));
    }
    errs
}

/// The schema-level checks of `validateCustomResourceDefinitionValidation`, made before the
/// node walk.
pub(super) struct RootChecks {
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
pub(super) struct StructuralChecks {
    pub errors: Vec<FieldError>,
    /// `NewStructural`'s error (see [`RootChecks::conversion_error`]).
    pub conversion_error: Option<FieldError>,
    /// Whether the schema is structural: its defaults are validated next.
    pub structural: bool,
    /// How many of `errors` come first from the root's own restrictions (status subresource,
    /// nullable), which are checked whether or not structure is.
    pub root_errors: usize,
}

impl StructuralChecks {
    /// `schemaIsNonStructural`: `NewStructural` fails or `ValidateStructural` finds errors.
    pub(super) fn non_structural(&self) -> bool {
        self.conversion_error.is_some() || !self.structural
    }
}

/// The first part of `validateCustomResourceDefinitionValidation`: see [`StructuralChecks`].
pub(super) fn validate_structure(
    s: &Schema,
    raw: &Value,
    fld: &str,
    status_enabled: bool,
) -> StructuralChecks {
    let mut checks = StructuralChecks {
        errors: Vec::new(),
        conversion_error: None,
        structural: false,
        root_errors: 0,
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
    checks.root_errors = checks.errors.len();
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
pub(super) fn validate_root(
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

/// `validateCustomResourceDefinitionValidation` of an update whose stored object has a
/// non-structural schema (`requireStructuralSchema` false): only the root's own restrictions;
/// no structural check, no default validated and no rule compiled (no `CELSchemaContext`).
pub(super) fn unstructured_root(structure: &StructuralChecks) -> RootChecks {
    RootChecks {
        errors: structure.errors[..structure.root_errors].to_vec(),
        cel_enabled: false,
        conversion_error: None,
        unevaluated_default_rules: Vec::new(),
        panic: None,
    }
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
