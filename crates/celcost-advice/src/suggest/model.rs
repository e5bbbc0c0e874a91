//! The rule model: one rule, compiled once, its cost re-estimated from a changed schema.

use std::cell::RefCell;
use std::sync::Arc;

use celcost_core::budget;
use celcost_core::cel::checker::CheckedExpr;
use celcost_core::cel::cost::{AstNode, Size, estimate};
use celcost_core::cel::env::Env;
use celcost_core::cel::k8s_cost::{KubernetesEstimator, SizeSource};
use celcost_core::cel::types::Type;
use celcost_core::crd::{
    max_elements, multiply_with_overflow_guard, multiply_with_overflow_guard_card,
};
use celcost_core::report::RuleReport;
use celcost_core::schema::Schema;
use celcost_core::schema::decltype::{
    ConversionMemo, DeclType, DeclTypeProvider, MAX_REQUEST_SIZE_BYTES, RuleSizes, escape,
    schema_decl_type,
};
use celcost_core::schema::path::{Node, Step, walk as node};

/// A size the estimator asked for, below the rule's node (`["spec", "@items"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Read {
    pub(super) elems: Vec<String>,
    /// Whether the path is in the rule's CEL type (not: fields an open schema does not declare).
    pub(super) resolved: bool,
}

/// The CRD size estimator ([`RuleSizes`]), recording what it is asked when `record` is set.
pub(super) struct Sizes<'a> {
    pub(super) inner: RuleSizes,
    pub(super) record: Option<&'a RefCell<Vec<Read>>>,
}

impl SizeSource for Sizes<'_> {
    fn estimate_size(&self, node: &AstNode<'_>) -> Option<Size> {
        let path = node.path_elems();
        let t = self.inner.resolve(&path);
        if let Some(rec) = self.record
            && !path.is_empty()
        {
            let elems: Vec<String> = path[1..].iter().map(|e| e.to_string()).collect();
            let mut rec = rec.borrow_mut();
            if !rec.iter().any(|r| r.elems == elems) {
                rec.push(Read {
                    elems,
                    resolved: t.is_some(),
                });
            }
        }
        t.map(|t| Size::new(0, t.max_elements as u64))
    }
}

/// What the API server compares for one rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RuleCost {
    pub(super) cost: u64,
    pub(super) message: Option<u64>,
}

impl RuleCost {
    /// What the per-rule limit is compared with (the rule, or its messageExpression).
    pub(super) fn judged(self) -> u64 {
        celcost_core::report::judged_rule_cost(self.cost, self.message)
    }

    /// What the rule adds to its schema's total.
    pub(super) fn total_part(self) -> u64 {
        self.cost.saturating_add(self.message.unwrap_or(0))
    }

    pub(super) fn of_report(r: &RuleReport) -> RuleCost {
        RuleCost {
            cost: r.cost,
            message: r.message_expression_cost,
        }
    }
}

/// One rule, compiled once, costed again for each changed schema.
#[derive(Clone)]
pub(super) struct RuleModel {
    /// The rule's node, from the schema root.
    pub(super) node: Vec<Step>,
    /// The node whose CEL type the rule's is a part of, as the API server builds it: the node
    /// itself, unless the way from the scope root (the highest ancestor with rules) passes
    /// through what a resource root's type replaces (`metadata`, `kind`, `apiVersion`, a map's
    /// values on 1.30), then the scope root.
    pub(super) convert_at: usize,
    pub(super) checked: CheckedExpr,
    pub(super) message: Option<CheckedExpr>,
    pub(super) base: RuleCost,
}

/// The node's CEL type, as the API server's schema walk gives it: converted at `convert_at`
/// and followed down (converted afresh below a node whose type does not have the child); and
/// the type last converted (whose provider resolves the node's object types).
pub(super) fn node_decl(
    env: &Env,
    root: &Schema,
    path: &[Step],
    convert_at: usize,
    mut memo: Option<&mut ConversionMemo>,
) -> Option<(Arc<DeclType>, Arc<DeclType>)> {
    let mut s = node(root, &path[..convert_at])?;
    let is_root = convert_at == 0;
    let resource_root = is_root || s.x_embedded_resource;
    let mut at = ConversionMemo::ROOT;
    let mut d = match memo.as_deref_mut() {
        Some(m) => {
            at = *m.path(root, &path[..convert_at]).last()?;
            m.schema_decl_type(s, at, resource_root, env.minor)?
        }
        None => schema_decl_type(s, resource_root, env.minor, "selfType")?,
    };
    let mut converted = d.clone();
    for step in &path[convert_at..] {
        let c = Node::child(s, step)?;
        if let Some(m) = memo.as_deref_mut() {
            at = m.child(at, s, step)?;
        }
        let next = match step {
            Step::Prop(n) => escape(n).and_then(|e| d.field(&e).cloned()),
            Step::Items | Step::Values => d.elem().cloned(),
        };
        d = match next {
            Some(t) => t,
            None => {
                let t = match memo.as_deref_mut() {
                    Some(m) => m.schema_decl_type(c, at, c.x_embedded_resource, env.minor)?,
                    None => schema_decl_type(c, c.x_embedded_resource, env.minor, "selfType")?,
                };
                converted = t.clone();
                t
            }
        };
        s = c;
    }
    Some((converted, d))
}

/// Where the rule's type must be converted (see [`RuleModel::convert_at`]).
pub(super) fn conversion_point(root: &Schema, path: &[Step]) -> usize {
    let mut nodes = vec![root];
    for step in path {
        match nodes.last().and_then(|s| Node::child(*s, step)) {
            Some(c) => nodes.push(c),
            None => return path.len(),
        }
    }
    let Some(scope) = nodes.iter().position(|s| !s.x_validations.is_empty()) else {
        return path.len();
    };
    for i in scope..path.len() {
        let resource_root = i == 0 || nodes[i].x_embedded_resource;
        let replaced = match &path[i] {
            Step::Prop(n) => matches!(n.as_str(), "metadata" | "kind" | "apiVersion"),
            Step::Values => true,
            Step::Items => false,
        };
        if resource_root && replaced {
            return scope;
        }
    }
    path.len()
}

impl RuleModel {
    /// Compiles rule `index` of the node at `path`, as `compile_rule` does; `None` when it does
    /// not compile (no cost to lower).
    pub(super) fn build(
        env: &Env,
        root: &Schema,
        path: Vec<Step>,
        index: usize,
    ) -> Option<RuleModel> {
        let target = node(root, &path)?;
        let rule = target.x_validations.get(index)?;
        let convert_at = conversion_point(root, &path);
        let (converted, decl) = node_decl(env, root, &path, convert_at, None)?;
        let provider = DeclTypeProvider::new(&[&converted], env.minor);
        let vars = celcost_core::crd::rule_variables(rule, &decl);
        let checked = env.compile(&rule.rule, &vars, &provider).ok()?;
        if *checked.output_type() != Type::Bool || env.program_error(&checked).is_some() {
            return None;
        }
        let message = if rule.message_expression.is_empty() {
            None
        } else {
            env.compile(&rule.message_expression, &vars, &provider)
                .ok()
                .filter(|m| *m.output_type() == Type::String && env.program_error(m).is_none())
        };
        Some(RuleModel {
            node: path,
            convert_at,
            checked,
            message,
            base: RuleCost {
                cost: 0,
                message: None,
            },
        })
    }

    /// The rule's cost with the schema as it is now; the sizes asked go to `record`; its type
    /// converted with `memo` when given (the search's).
    pub(super) fn eval(
        &self,
        env: &Env,
        root: &Schema,
        record: Option<&RefCell<Vec<Read>>>,
        memo: Option<&mut ConversionMemo>,
    ) -> Option<RuleCost> {
        // The walks down to the node (its type, its cardinality).
        budget::charge(self.node.len() as u64);
        let (_, decl) = node_decl(env, root, &self.node, self.convert_at, memo)?;
        let fallback = MAX_REQUEST_SIZE_BYTES as u64 / (decl.min_serialized_size as u64 + 1);
        let sizes = Sizes {
            inner: RuleSizes { root: decl },
            record,
        };
        let est = KubernetesEstimator {
            minor: env.minor,
            sizes: Some(&sizes),
        };
        let max_cost = estimate(&self.checked, &est, env.cost_options()).max;
        let message = self
            .message
            .as_ref()
            .map(|m| estimate(m, &est, env.cost_options()).max);
        let mut card = Some(1u64);
        let mut s = root;
        for step in &self.node {
            card = match (card, max_elements(s)) {
                (Some(c), Some(e)) => Some(multiply_with_overflow_guard_card(c, e)),
                _ => None,
            };
            s = Node::child(s, step)?;
        }
        Some(RuleCost {
            cost: multiply_with_overflow_guard(max_cost, card.unwrap_or(fallback)),
            message,
        })
    }
}
