//! A CRD UPDATE as the API server judges it (k8s.io/apiextensions-apiserver
//! `pkg/apis/apiextensions/validation/validation.go`, `ValidateCustomResourceDefinitionUpdate`,
//! called by the registry strategy's `ValidateUpdate`), which is not the CREATE verdict:
//!
//! - `findVersionsWithUnchangedSchemas`: a version whose schema (`GetSchemaForVersion`, the one
//!   schema every version shares or the version's own) deep-equals the stored object's schema
//!   of the same version is unchanged, and `suppressExpressionCostForUnchangedSchema` lifts the
//!   per-expression cost limit from its rules and messageExpressions. A schema every version
//!   shares is judged by the first version (`spec.version`). Their costs still count in the
//!   per-schema total, which is checked as on create.
//! - `findPreexistingExpressions`: the rule and messageExpression texts anywhere in the stored
//!   object; each of them compiles in the stored-expressions environment (every library of the
//!   minor, `StoredExpressionsEnv`), a new or edited one in the new-expressions environment. In
//!   1.30 a messageExpression is looked up among the stored *rules*
//!   ([`Minor::stored_message_expressions_by_rule`]).
//! - `requireStructuralSchema(old)`: when a stored schema is not structural, no structure,
//!   default or rule of the new object is checked.
//! - The registry strategy keeps the stored status (`PrepareForUpdate`): `status.storedVersions`
//!   is the stored one with the new storage version appended, and every stored version must
//!   remain in `spec.versions`. `spec.group` and `spec.names.plural` are immutable, and so are
//!   `spec.scope` and `spec.names.kind` once the stored object is `Established`.
//!
//! The same from 1.30 to 1.36 (and on master) but for the 1.30 messageExpression lookup and the
//! wording of a removed stored version (1.33, [`super::fielderr::stored_version_removal_says_why`]).
//! Left out, as on create: the checks celcost does not model (object metadata, names,
//! conversion, selectable fields and their ratchet, API approval); the other ratchets of
//! `validationOptions` relax checks only for objects no v1 create ever accepted.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::fielderr::{BadValue, FieldError};
use super::{Prepared, estimate_write, validate};
use crate::cel::decls::Version;
use crate::cel::env::Env;
use crate::cel::minor::Minor;
use crate::report::{
    ObjectReport, RuleReport, StoredOnlyExpression, UpdateVerdict, VersionSchemaChange,
};

/// The rule and messageExpression texts of the stored object, and the environment they
/// compile in.
pub struct StoredExpressions {
    rules: HashSet<String>,
    message_expressions: HashSet<String>,
    minor: &'static Minor,
    env: OnceCell<Env>,
}

impl StoredExpressions {
    /// `preexistingExpressions.RuleEnv`.
    pub(crate) fn rule_env<'a>(&'a self, new: &'a Env, rule: &str) -> &'a Env {
        if self.rules.contains(rule) {
            self.env()
        } else {
            new
        }
    }

    /// `preexistingExpressions.MessageExpressionEnv`.
    pub(crate) fn message_env<'a>(&'a self, new: &'a Env, message_expression: &str) -> &'a Env {
        if !message_expression.is_empty() {
            crate::cel::version::consulted::note(
                crate::cel::version::consulted::STORED_MESSAGE_EXPRESSIONS,
            );
        }
        if self.message_expressions.contains(message_expression) {
            self.env()
        } else {
            new
        }
    }

    fn env(&self) -> &Env {
        self.env.get_or_init(|| Env::stored_for_minor(self.minor))
    }

    /// Whether a rule text is the stored object's.
    pub fn has_rule(&self, rule: &str) -> bool {
        self.rules.contains(rule)
    }
}

/// What an update of a stored CRD is judged by, beside the new object itself.
pub struct UpdateRules {
    stored: StoredExpressions,
    versions: Vec<VersionSchemaChange>,
    unchanged: HashSet<String>,
    require_structural: bool,
    /// The stored `status.storedVersions` (`None`: nil).
    stored_versions: Option<Vec<String>>,
    established: bool,
    /// The stored `spec.scope`, `spec.names.kind`, `spec.group`, `spec.names.plural`.
    old_scope: String,
    old_kind: String,
    old_group: String,
    old_plural: String,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl UpdateRules {
    /// The rules of an update of `old` (the object as the cluster stores it, apiextensions v1
    /// JSON) to `new`, on the API server of `minor`. `old_structural`: whether every schema of
    /// `old` is structural (`None` when celcost cannot read them: taken as structural, as every
    /// schema a v1 create accepted is).
    pub fn new(
        old: &Value,
        new: &Value,
        minor: &'static Minor,
        old_structural: Option<bool>,
    ) -> UpdateRules {
        let (old_schemas, new_schemas) = (SchemasByVersion::of(old), SchemasByVersion::of(new));
        let versions: Vec<VersionSchemaChange> = new
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| {
                let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
                VersionSchemaChange {
                    name: name.to_string(),
                    schema_unchanged: schema_unchanged(&old_schemas, &new_schemas, name),
                }
            })
            .collect();
        let stored_versions = match old.pointer("/status/storedVersions") {
            Some(Value::Array(a)) if !a.is_empty() => Some(
                a.iter()
                    .map(|x| x.as_str().unwrap_or_default().to_string())
                    .collect(),
            ),
            // Defaulting gives a stored object with none its first storage version.
            _ => validate::stored_versions_after_write(None, old),
        };
        let established = match old.pointer("/status/conditions").and_then(Value::as_array) {
            Some(conds) => conds.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Established")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            }),
            // No status (a manifest standing for the stored object): a stored CRD whose names
            // were accepted is established within a moment.
            None => true,
        };
        let unchanged = versions
            .iter()
            .filter(|v: &&VersionSchemaChange| v.schema_unchanged)
            .map(|v| v.name.clone())
            .collect();
        UpdateRules {
            stored: stored_expressions(old, minor),
            versions,
            unchanged,
            require_structural: old_structural.unwrap_or(true),
            stored_versions,
            established,
            old_scope: str_at(old, "/spec/scope").to_string(),
            old_kind: str_at(old, "/spec/names/kind").to_string(),
            old_group: str_at(old, "/spec/group").to_string(),
            old_plural: str_at(old, "/spec/names/plural").to_string(),
        }
    }

    pub(crate) fn stored_expressions(&self) -> &StoredExpressions {
        &self.stored
    }

    /// Every version of the new object, and whether its schema is unchanged.
    pub fn versions(&self) -> &[VersionSchemaChange] {
        &self.versions
    }

    /// `versionsWithUnchangedSchemas.Has(version)`.
    pub fn schema_unchanged(&self, version: &str) -> bool {
        self.unchanged.contains(version)
    }

    /// `requireStructuralSchema(&oldObj.Spec)`.
    pub fn require_structural(&self) -> bool {
        self.require_structural
    }

    /// The object-level errors of the update (the spec's immutable fields, the stored versions).
    pub(crate) fn object_errors(&self, new: &Value, k: Version) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let immutable = |field: &str, now: &str, before: &str, errs: &mut Vec<FieldError>| {
            if now != before {
                errs.push(FieldError::invalid(
                    field,
                    BadValue::Str(now.to_string()),
                    "field is immutable",
                ));
            }
        };
        if self.established {
            immutable(
                "spec.scope",
                str_at(new, "/spec/scope"),
                &self.old_scope,
                &mut errs,
            );
            immutable(
                "spec.names.kind",
                str_at(new, "/spec/names/kind"),
                &self.old_kind,
                &mut errs,
            );
        }
        immutable(
            "spec.group",
            str_at(new, "/spec/group"),
            &self.old_group,
            &mut errs,
        );
        immutable(
            "spec.names.plural",
            str_at(new, "/spec/names/plural"),
            &self.old_plural,
            &mut errs,
        );
        let stored = validate::stored_versions_after_write(self.stored_versions.as_deref(), new);
        errs.extend(validate::validate_stored_versions(
            stored.as_deref(),
            new,
            k,
        ));
        errs
    }
}

/// The API server's verdict on an update of `old` (the object as the cluster stores it) to
/// `new`, on the API server of `env`'s minor. `create` is `new`'s create report in the same
/// environment: what compiles on update and not on create compiles only as a stored expression.
pub fn judge_update(
    env: &Env,
    old: &Value,
    new: &Value,
    create: &ObjectReport,
    stored_source: &str,
) -> UpdateVerdict {
    let old_prepared = Prepared::new(old);
    let old_structural = old_prepared
        .roots
        .as_ref()
        .ok()
        .map(|roots| roots.iter().all(|r| !r.structure.non_structural()));
    drop(old_prepared);
    let rules = UpdateRules::new(old, new, env.minor, old_structural);
    let prepared = Prepared::new(new);
    let (report, held) = estimate_write(env, new, &create.source, &prepared, Some(&rules), None);
    UpdateVerdict {
        stored_source: stored_source.to_string(),
        valid: report.valid,
        stored_only: stored_only(create, &report),
        errors: report.errors,
        error_parts: report.error_parts,
        versions: rules.versions,
        held,
        stopped: None,
    }
}

/// The rules and messageExpressions that do not compile on create and compile on update.
fn stored_only(create: &ObjectReport, update: &ObjectReport) -> Vec<StoredOnlyExpression> {
    let mut out = Vec::new();
    let rules = |r: &ObjectReport| -> Vec<RuleReport> {
        r.schemas
            .iter()
            .flat_map(|s| s.rules.iter().cloned())
            .collect()
    };
    let (c, u) = (rules(create), rules(update));
    for (c, u) in c.iter().zip(&u) {
        if c.rule_field_path != u.rule_field_path {
            continue;
        }
        if let (Some(e), None) = (&c.compile_error, &u.compile_error) {
            out.push(StoredOnlyExpression {
                field_path: c.rule_field_path.clone(),
                expression: c.rule.clone(),
                compile_error: e.clone(),
            });
        }
        if let (Some(e), None, Some(m)) = (
            &c.message_expression_compile_error,
            &u.message_expression_compile_error,
            &c.message_expression,
        ) && u.compile_error.is_none()
        {
            let node = c
                .rule_field_path
                .strip_suffix(".rule")
                .unwrap_or(&c.rule_field_path);
            out.push(StoredOnlyExpression {
                field_path: format!("{node}.messageExpression"),
                expression: m.clone(),
                compile_error: e.clone(),
            });
        }
    }
    out
}

/// `GetSchemaForVersion` of the internal object the v1 JSON converts to, for every version
/// name: the one schema every version shares when they are all alike (the conversion moves it
/// to `spec.validation`, and it then answers for any version name), else the first version of
/// that name's own. Made once per object: a lookup is then one hash probe.
struct SchemasByVersion<'a> {
    /// `Some(schema)` when the schemas are hoisted (all alike, or no version).
    shared: Option<Option<&'a Value>>,
    own: HashMap<&'a str, Option<&'a Value>>,
}

impl<'a> SchemasByVersion<'a> {
    fn of(crd: &'a Value) -> Self {
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let schema_of = |v: &'a Value| v.get("schema").filter(|s| !s.is_null());
        let first = versions.first().and_then(schema_of);
        if versions
            .iter()
            .all(|v| validate::same_validation(schema_of(v), first))
        {
            return SchemasByVersion {
                shared: Some(first),
                own: HashMap::new(),
            };
        }
        let mut own = HashMap::new();
        for v in versions {
            let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
            own.entry(name).or_insert_with(|| schema_of(v));
        }
        SchemasByVersion { shared: None, own }
    }

    /// `Err` when there is no such version.
    fn get(&self, version: &str) -> Result<Option<&'a Value>, ()> {
        match self.shared {
            Some(s) => Ok(s),
            None => self.own.get(version).copied().ok_or(()),
        }
    }
}

/// `findVersionsWithUnchangedSchemas` for one version of the new object.
fn schema_unchanged(old: &SchemasByVersion<'_>, new: &SchemasByVersion<'_>, version: &str) -> bool {
    match (new.get(version), old.get(version)) {
        (Ok(n), Ok(o)) => validate::same_validation(n, o),
        _ => false,
    }
}

/// `findPreexistingExpressions`: every rule and messageExpression text of the stored object's
/// schemas (`SchemaHas` visits every nested schema, also those CEL never compiles).
fn stored_expressions(old: &Value, minor: &'static Minor) -> StoredExpressions {
    let mut out = StoredExpressions {
        rules: HashSet::new(),
        message_expressions: HashSet::new(),
        minor,
        env: OnceCell::new(),
    };
    let mut stack: Vec<&Value> = old
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    while let Some(s) = stack.pop() {
        crate::budget::charge(1);
        let Some(o) = s.as_object() else { continue };
        for rule in o
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = |k: &str| rule.get(k).and_then(Value::as_str).unwrap_or_default();
            out.rules.insert(text("rule").to_string());
            if !text("messageExpression").is_empty() {
                let key = if minor.stored_message_expressions_by_rule {
                    text("rule")
                } else {
                    text("messageExpression")
                };
                out.message_expressions.insert(key.to_string());
            }
        }
        for key in ["items", "allOf", "anyOf", "oneOf"] {
            match o.get(key) {
                Some(Value::Array(a)) => stack.extend(a.iter()),
                Some(v @ Value::Object(_)) => stack.push(v),
                _ => {}
            }
        }
        for key in ["not", "additionalProperties", "additionalItems"] {
            if let Some(v @ Value::Object(_)) = o.get(key) {
                stack.push(v);
            }
        }
        for key in [
            "properties",
            "patternProperties",
            "definitions",
            "dependencies",
        ] {
            if let Some(Value::Object(m)) = o.get(key) {
                stack.extend(m.values().filter(|v| v.is_object()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
