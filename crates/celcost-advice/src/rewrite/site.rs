//! Where a rule lives: its schema node in the CRD, the node's CEL type as the estimator's walk
//! (`celcost_core::crd`) builds it, and the estimate of another rule text at the same node.

use std::sync::Arc;

use serde_json::Value;

use celcost_core::cel::env::Env;
use celcost_core::crd::{compile_rule, multiply_with_overflow_guard};
use celcost_core::schema::decltype::{DeclType, DeclTypeProvider, escape, schema_decl_type};
use celcost_core::schema::path::{self, Step};
use celcost_core::schema::{Schema, ValidationRule};

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
        let (version, rest) = if let Some(r) = field_path.strip_prefix(HOISTED) {
            (None, r)
        } else {
            let r = field_path.strip_prefix("spec.versions[")?;
            let close = r.find(']')?;
            let i: usize = r[..close].parse().ok()?;
            let r = r[close + 1..].strip_prefix(".schema.openAPIV3Schema")?;
            (Some(i), r)
        };
        let steps = path::parse_unchecked(rest)?;
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
    pub fn node<'a>(&self, at: &'a Value) -> Option<&'a Value> {
        path::walk(at, &self.steps)
    }

    /// The JSON node below a raw root.
    pub fn node_mut<'a>(&self, at: &'a mut Value) -> Option<&'a mut Value> {
        path::walk_mut(at, &self.steps)
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
    /// Finds the node of `path` in a parsed schema root, typing it as `celcost_core::crd`'s walk does:
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
            celcost_core::budget::charge(1);
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
                Step::Prop(name) => (
                    at.properties.get(name)?,
                    d.as_ref()
                        .and_then(|d| escape(name).and_then(|e| d.field(&e).cloned())),
                ),
                Step::Items => (
                    at.items.as_deref()?,
                    d.as_ref().and_then(|d| d.elem().cloned()),
                ),
                Step::Values => (
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
