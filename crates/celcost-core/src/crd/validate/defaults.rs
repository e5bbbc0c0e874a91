//! Default values (k8s.io/apiextensions-apiserver pkg/apiserver/schema/defaulting,
//! `ValidateDefaults`): every `default` in the structural part of the schema (not below
//! `additionalProperties`) must survive pruning, be valid object metadata where it is metadata,
//! and validate against its own schema node.
//!
//! Once a default passes those checks, the CEL rules of its node and below are run on it
//! (`default_rules.rs`).

use serde_json::Value;

use super::default_rules::DefaultRules;
use super::objectmeta;
use super::openapi;
use crate::cel::decls::Version;
use crate::cel::env::{CheckerPanic, Env};
use crate::crd::fielderr::{BadValue, FieldError, Path};
use crate::schema::{AdditionalProperties, Schema};

/// What `ValidateDefaults` finds.
pub(super) struct DefaultsChecked {
    pub errors: Vec<FieldError>,
    /// Rules on defaults celcost did not evaluate, and why.
    pub unevaluated: Vec<String>,
    /// A rule on a default the API server's CEL compiler panics on.
    pub panic: Option<(String, CheckerPanic)>,
}

/// `ValidateDefaults(ctx, fld, root, isResourceRoot=true, requirePrunedDefaults=true)`.
pub(super) fn validate_defaults(root: &Schema, fld: &str, env: &Env) -> DefaultsChecked {
    let mut errs = Vec::new();
    let resource = Resource {
        schema: root,
        steps: None,
    };
    let mut rules = DefaultRules::new(env);
    walk(
        &Path::root(fld),
        root,
        true,
        false,
        resource,
        &mut rules,
        &mut errs,
    );
    DefaultsChecked {
        errors: errs,
        unevaluated: rules.unevaluated,
        panic: rules.panic,
    }
}

/// One step from a resource root to a node (`SurroundingObjectFunc.Child` / `.Index`), linked
/// to the previous one.
struct Steps<'p> {
    parent: Option<&'p Steps<'p>>,
    step: Step<'p>,
}

#[derive(Clone, Copy)]
enum Step<'p> {
    Key(&'p str),
    Index,
}

/// The nearest enclosing resource (the root or an embedded resource) and the steps from it.
#[derive(Clone, Copy)]
struct Resource<'s, 'p> {
    schema: &'s Schema,
    steps: Option<&'p Steps<'p>>,
}

/// `validate`: `resource_root` is true for the root (which is validated as if it had
/// `x-kubernetes-embedded-resource`).
fn walk(
    fld: &Path<'_>,
    s: &Schema,
    resource_root: bool,
    inside_meta: bool,
    resource: Resource<'_, '_>,
    rules: &mut DefaultRules<'_>,
    errs: &mut Vec<FieldError>,
) {
    crate::budget::charge(1);
    // A rule went over the per-call limit: `validate` returns (`remainingCost < 0`).
    if rules.stopped {
        return;
    }
    let k = rules.kubernetes();
    let embedded = s.x_embedded_resource || resource_root;
    let (resource, inside_meta) = if embedded {
        let own = Resource {
            schema: s,
            steps: None,
        };
        (own, false)
    } else {
        (resource, inside_meta)
    };
    if let Some(default) = &s.default {
        let dfld = format!("{fld}.default");
        let own = if inside_meta {
            metadata_default(&dfld, s, default, resource, k)
        } else {
            plain_default(&dfld, s, embedded, default, k)
        };
        // The rules run once the default passes the checks before (the pruning check aside).
        let passed = own
            .iter()
            .all(|e| e.detail == "must not have unknown fields" && e.field == dfld);
        errs.extend(own);
        if passed {
            // `isResourceRoot := s == rootSchema`: the root or an embedded resource.
            errs.extend(rules.validate(&dfld, s, embedded, default));
        }
    }
    // additionalProperties are not followed: defaults there are not validated.
    if let Some(items) = &s.items {
        let steps = Steps {
            parent: resource.steps,
            step: Step::Index,
        };
        let r = Resource {
            schema: resource.schema,
            steps: Some(&steps),
        };
        walk(
            &fld.child("items"),
            items,
            false,
            inside_meta,
            r,
            rules,
            errs,
        );
    }
    if s.properties.is_empty() {
        return;
    }
    let props = fld.child("properties");
    for (key, p) in &s.properties {
        let sub_inside_meta =
            inside_meta || (embedded && matches!(key.as_str(), "metadata" | "apiVersion" | "kind"));
        let steps = Steps {
            parent: resource.steps,
            step: Step::Key(key),
        };
        let r = Resource {
            schema: resource.schema,
            steps: Some(&steps),
        };
        walk(&props.key(key), p, false, sub_inside_meta, r, rules, errs);
    }
}

/// A default outside of object metadata: pruned, coerced, metadata-validated, then validated
/// against the node's schema.
fn plain_default(
    dfld: &str,
    s: &Schema,
    embedded: bool,
    default: &Value,
    k: Version,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if would_prune(default, Some(s), embedded) {
        errs.push(FieldError::invalid(
            dfld,
            BadValue::any(default.clone()),
            "must not have unknown fields",
        ));
    }
    let mut value = default.clone();
    if let Err(e) = objectmeta::coerce(dfld, &mut value, Some(s), embedded) {
        errs.push(*e);
        return errs;
    }
    let meta_errs = objectmeta::validate(dfld, &value, Some(s), embedded, k);
    if !meta_errs.is_empty() {
        errs.extend(meta_errs);
        return errs;
    }
    errs.extend(openapi::validate_value(dfld, s, &value));
    errs
}

/// A default inside `apiVersion`, `kind` or `metadata` of a resource: placed into a surrounding
/// object (with `apiVersion: validation/v1`, `kind: Validation` unless given), that object
/// must be valid metadata-wise, and the default must validate against the node's schema.
fn metadata_default(
    dfld: &str,
    s: &Schema,
    default: &Value,
    resource: Resource<'_, '_>,
    k: Version,
) -> Vec<FieldError> {
    let mut obj = default.clone();
    let mut steps = resource.steps;
    while let Some(st) = steps {
        steps = st.parent;
        obj = match st.step {
            Step::Key(k) => {
                let mut m = serde_json::Map::new();
                m.insert(k.to_string(), obj);
                Value::Object(m)
            }
            Step::Index => Value::Array(vec![obj]),
        };
    }
    let Value::Object(mut root) = obj else {
        // "object root default value must be of object type": an internal error upstream.
        return vec![FieldError::invalid(
            dfld.trim_end_matches(".default"),
            BadValue::Str(String::new()),
            "failed to validate default value inside metadata: object root default value must be of object type",
        )];
    };
    root.entry("kind")
        .or_insert_with(|| Value::String("Validation".into()));
    root.entry("apiVersion")
        .or_insert_with(|| Value::String("validation/v1".into()));
    let mut obj = Value::Object(root);
    let bad = |detail: String| {
        vec![FieldError::invalid(
            dfld,
            BadValue::any(default.clone()),
            &format!("must result in valid metadata: {detail}"),
        )]
    };
    if let Err(e) = objectmeta::coerce("", &mut obj, Some(resource.schema), true) {
        return bad(e.render(k));
    }
    let errs = objectmeta::validate("", &obj, Some(resource.schema), true, k);
    if !errs.is_empty() {
        return bad(aggregate(&errs, k));
    }
    openapi::validate_value(dfld, s, default)
}

/// `field.ErrorList.ToAggregate().Error()`: one message, or `[a, b]`.
fn aggregate(errs: &[FieldError], k: Version) -> String {
    let msgs: Vec<String> = errs.iter().map(|e| e.render(k)).collect();
    let mut unique: Vec<&String> = Vec::new();
    for m in &msgs {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    if unique.len() == 1 {
        unique[0].clone()
    } else {
        format!(
            "[{}]",
            unique
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Whether `pruning.Prune(x, s, embedded)` would drop anything: fields that no property,
/// `additionalProperties` or `x-kubernetes-preserve-unknown-fields` keeps (the `apiVersion`,
/// `kind` and `metadata` of a resource are kept).
fn would_prune(x: &Value, s: Option<&Schema>, embedded: bool) -> bool {
    if let Some(s) = s
        && s.x_preserve_unknown_fields == Some(true)
    {
        return would_prune_preserving(x, s, embedded);
    }
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                return !map.is_empty();
            };
            map.iter()
                .any(|(k, v)| would_prune_field(k, v, s, embedded, true))
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            let embedded = item_schema.is_some_and(|i| i.x_embedded_resource);
            items.iter().any(|v| would_prune(v, item_schema, embedded))
        }
        _ => false,
    }
}

/// Whether pruning removes field `k` (value `v`) of an object of schema `s`, or something below
/// it; a field the schema does not know is `unknown` (pruned, or kept by `skipPrune`).
fn would_prune_field(k: &str, v: &Value, s: &Schema, embedded: bool, unknown: bool) -> bool {
    if embedded && is_meta_field(k) {
        return false;
    }
    if let Some(p) = s.properties.get(k) {
        would_prune(v, Some(p), p.x_embedded_resource)
    } else if let Some(ap) = &s.additional_properties {
        would_prune_additional(v, ap)
    } else {
        unknown
    }
}

/// `skipPrune`: unknown fields stay, known ones are pruned below.
fn would_prune_preserving(x: &Value, s: &Schema, embedded: bool) -> bool {
    match x {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| would_prune_field(k, v, s, embedded, false)),
        Value::Array(items) => match s.items.as_deref() {
            Some(i) => items
                .iter()
                .any(|v| would_prune_preserving(v, i, i.x_embedded_resource)),
            None => false,
        },
        _ => false,
    }
}

fn would_prune_additional(v: &Value, ap: &AdditionalProperties) -> bool {
    match ap {
        AdditionalProperties::Schema(a) => would_prune(v, Some(a), a.x_embedded_resource),
        AdditionalProperties::Bool(_) => would_prune(v, None, false),
    }
}

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}
