//! Where a rule lives: its schema node in the CRD, the node's CEL type as the estimator's walk
//! (`crate::crd`) builds it, and the estimate of another rule text at the same node.

use std::sync::Arc;

use serde_json::Value;

use crate::cel::env::Env;
use crate::crd::{compile_rule, multiply_with_overflow_guard};
use crate::schema::decltype::{DeclType, DeclTypeProvider, escape, schema_decl_type};
use crate::schema::{Schema, ValidationRule};

/// One step of a node field path below the schema root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Property(String),
    Items,
    AdditionalProperties,
}

/// A schema root of a CRD and the steps to a node, from a `nodeFieldPath`
/// (`spec.versions[1].schema.openAPIV3Schema.properties[spec].items`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePath {
    /// `None` for the hoisted `spec.validation.openAPIV3Schema` (every version's schema).
    pub version: Option<usize>,
    pub steps: Vec<Step>,
}

const HOISTED: &str = "spec.validation.openAPIV3Schema";

impl NodePath {
    pub fn parse(field_path: &str) -> Option<NodePath> {
        let (version, mut rest) = if let Some(r) = field_path.strip_prefix(HOISTED) {
            (None, r)
        } else {
            let r = field_path.strip_prefix("spec.versions[")?;
            let close = r.find(']')?;
            let i: usize = r[..close].parse().ok()?;
            let r = r[close + 1..].strip_prefix(".schema.openAPIV3Schema")?;
            (Some(i), r)
        };
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix(".items") {
                steps.push(Step::Items);
                rest = r;
            } else if let Some(r) = rest.strip_prefix(".additionalProperties") {
                steps.push(Step::AdditionalProperties);
                rest = r;
            } else if let Some(r) = rest.strip_prefix(".properties[") {
                // The name ends at the `]` followed by the next step or the end.
                let mut end = None;
                for (i, _) in r.match_indices(']') {
                    let after = &r[i + 1..];
                    if after.is_empty()
                        || after.starts_with(".properties[")
                        || after.starts_with(".items")
                        || after.starts_with(".additionalProperties")
                    {
                        end = Some(i);
                        break;
                    }
                }
                let end = end?;
                steps.push(Step::Property(r[..end].to_string()));
                rest = &r[end + 1..];
            } else {
                return None;
            }
        }
        Some(NodePath { version, steps })
    }

    /// The raw JSON schema roots this path is in (every version's for the hoisted root).
    pub fn roots<'a>(&self, crd: &'a Value) -> Vec<&'a Value> {
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let root = |v: &'a Value| {
            v.pointer("/schema/openAPIV3Schema")
                .filter(|s| !s.is_null())
        };
        match self.version {
            Some(i) => versions.get(i).and_then(root).into_iter().collect(),
            None => versions.iter().filter_map(root).collect(),
        }
    }

    /// The JSON node below a raw root.
    pub fn node<'a>(&self, mut at: &'a Value) -> Option<&'a Value> {
        for s in &self.steps {
            at = match s {
                Step::Property(p) => at.get("properties")?.get(p)?,
                Step::Items => at.get("items")?,
                Step::AdditionalProperties => at.get("additionalProperties")?,
            };
        }
        Some(at)
    }

    /// The JSON node below a raw root.
    pub fn node_mut<'a>(&self, mut at: &'a mut Value) -> Option<&'a mut Value> {
        for s in &self.steps {
            at = match s {
                Step::Property(p) => at.get_mut("properties")?.get_mut(p)?,
                Step::Items => at.get_mut("items")?,
                Step::AdditionalProperties => at.get_mut("additionalProperties")?,
            };
        }
        Some(at)
    }
}

/// A rule's node, typed as the estimator types it.
pub struct Site {
    /// The node's schema.
    pub node: Schema,
    /// The node's CEL type, and the provider of the type tree it is in.
    pub decl: Arc<DeclType>,
    pub provider: Arc<DeclTypeProvider>,
}

impl Site {
    /// Finds the node of `path` in a parsed schema root, typing it as `crate::crd`'s walk does:
    /// the first node of the path within the scope of rules (the first with rules of its own)
    /// converts its schema, and every node below takes its type from its parent's.
    pub fn locate(env: &Env, root: &Schema, path: &NodePath) -> Option<Site> {
        let mut at = root;
        let mut in_scope = false;
        let mut decl: Option<Arc<DeclType>> = None;
        let mut provider: Option<Arc<DeclTypeProvider>> = None;
        let mut is_root = true;
        let mut i = 0;
        loop {
            crate::budget::charge(1);
            let node_in_scope = in_scope || !at.x_validations.is_empty();
            let (d, p) = if !node_in_scope {
                (None, None)
            } else if let (Some(d), Some(p)) = (decl.take(), provider.take()) {
                (Some(d), Some(p))
            } else {
                let d =
                    schema_decl_type(at, is_root || at.x_embedded_resource, env.minor, "selfType");
                let p = d
                    .as_ref()
                    .map(|d| Arc::new(DeclTypeProvider::new(&[d], env.minor)));
                (d, p)
            };
            let Some(step) = path.steps.get(i) else {
                return Some(Site {
                    node: at.clone(),
                    decl: d?,
                    provider: p?,
                });
            };
            let (next, child) = match step {
                Step::Property(name) => (
                    at.properties.get(name)?,
                    d.as_ref()
                        .and_then(|d| escape(name).and_then(|e| d.field(&e).cloned())),
                ),
                Step::Items => (
                    at.items.as_deref()?,
                    d.as_ref().and_then(|d| d.elem().cloned()),
                ),
                Step::AdditionalProperties => (
                    at.additional_properties_schema()?,
                    d.as_ref().and_then(|d| d.elem().cloned()),
                ),
            };
            decl = child;
            provider = p;
            in_scope = node_in_scope;
            is_root = false;
            at = next;
            i += 1;
        }
    }

    /// The estimated cost per evaluation of `text` as a rule of this node (keeping the original
    /// rule's `optionalOldSelf`), `None` when it does not compile.
    pub fn max_cost(&self, env: &Env, original: &ValidationRule, text: &str) -> Option<u64> {
        let rule = ValidationRule {
            rule: text.to_string(),
            optional_old_self: original.optional_old_self,
            ..ValidationRule::default()
        };
        let c = compile_rule(env, &rule, &self.decl, &self.provider);
        if c.error.is_some() {
            return None;
        }
        Some(c.max_cost)
    }
}

/// `max_cost × cardinality`, as the API server multiplies.
pub fn times(max_cost: u64, cardinality: u64) -> u64 {
    multiply_with_overflow_guard(max_cost, cardinality)
}
