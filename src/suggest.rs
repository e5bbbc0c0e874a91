//! Suggested bounds: for every CRD rule over the per-rule limit, every schema total over the
//! per-schema limit, and every rule or total at or above the near-budget threshold, the
//! `maxItems` / `maxProperties` / `maxLength` that bring it below the threshold — found by
//! re-estimating, never by a formula. Pure: no IO.
//!
//! # What is searched
//!
//! The *sites* of a finding are the schema nodes whose bounds its cost depends on:
//!
//! - the ancestors of the rule's node that are lists or maps (their `maxItems` /
//!   `maxProperties` set the cardinality; while one of them has none, the API server assumes
//!   the request-size cardinality, so every unbounded one must be bounded together — one
//!   *unit*);
//! - the strings, lists and maps the rule (or its messageExpression) reads, as the cost
//!   estimator asks their sizes (`maxLength`, `maxItems`, `maxProperties`), whether they have a
//!   bound already (then the suggestion lowers it) or not.
//!
//! For a schema total, the sites of every rule of the schema that costs anything.
//!
//! # How
//!
//! The cost is monotone in each bound, so the search is a binary search over candidate values:
//! the **1-2-5 series** (1, 2, 5, 10, 20, 50, 100, …) — a suggestion is always the largest
//! 1-2-5 value that fits (or the node's smallest sensible value: its `minItems` /
//! `minProperties` / `minLength`, the length of its default or of its longest enum value).
//! Each probe re-estimates the rule: the node's CEL type is built again from the changed schema
//! (as the API server builds it) and the rule's compiled expression is costed again with it, by
//! the same estimator; the cardinality is recomputed from the changed ancestors. The checked
//! expressions are kept, since bounds change no type.
//!
//! 1. Every site at its smallest sensible value: if even that does not fit, **no bound helps**
//!    (the cost is in fixed parts: literals, regexes on bounded strings, ...), and the reason
//!    says so with the numbers.
//! 2. Each unit alone (the biggest driver first — the one whose smallest value lowers the cost
//!    most): when it fits alone, its largest fitting value.
//! 3. When more than one unit matters, all of them **together**: the largest common value `c`
//!    (every bound set to `c`, or left where it is when lower), then any bound that is not
//!    needed is dropped, then each bound in turn (the biggest driver first) raised to its
//!    largest fitting value. That balances the bounds (`maxItems: 1000` on a list and
//!    `maxLength: 1000` on its strings rather than `maxItems: 2`).
//!
//! The suggestions are ordered least restrictive first (the highest smallest value), at most
//! [`MAX_SUGGESTIONS`]. Every one is then **verified**: applied to a copy of the object and
//! estimated again, whole, by the [`Estimator`]; it is kept only when the rule or total now
//! fits and the object has no error it did not have before; its `costAfter` is that
//! estimate's.
//!
//! # Bounds on the work
//!
//! Every search is finite by construction (binary searches over at most 60 candidates, one
//! pass per unit); on top of that an object gets at most [`Settings::max_evaluations`] probes
//! and [`Settings::max_verifications`] whole re-estimates, and its search runs within the
//! estimator's work budget ([`crate::budget`]): over it, the findings left get a
//! `noSuggestion` saying so.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

use crate::budget::{self, Limits};
use crate::cel::checker::CheckedExpr;
use crate::cel::cost::{AstNode, Size, estimate};
use crate::cel::env::Env;
use crate::cel::k8s_cost::{KubernetesEstimator, SizeSource};
use crate::cel::types::Type;
use crate::crd::{max_elements, multiply_with_overflow_guard, multiply_with_overflow_guard_card};
use crate::estimate::Estimator;
use crate::report::format::num;
use crate::report::{
    ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, RuleReport, SchemaReport, Suggestion,
    suggestion_groups,
};
use crate::schema::Schema;
use crate::schema::decltype::{
    DeclType, DeclTypeProvider, MAX_REQUEST_SIZE_BYTES, RuleSizes, escape, schema_decl_type,
    unescape,
};
use crate::schema::path::{
    Node, Step, field_path, parse as parse_steps, rule_path as schema_path, walk as node,
    walk_mut as node_mut,
};

mod implied;

use implied::Implied;

/// Suggestions kept per finding (alternatives).
pub const MAX_SUGGESTIONS: usize = 3;
/// Units combined at most in one suggestion (the biggest drivers).
const MAX_COMBINED_UNITS: usize = 8;
/// Units a search weighs one by one at most. Each unit takes its own probes (alone, with the
/// others at their smallest, dropped, raised), and each probe costs as much as the rules it
/// re-estimates, which read every unit: over this many, the work would grow as the square of
/// what a rule reads. Beyond it, every unit gets the largest common value that fits (a few
/// probes), and then the units it need not bound are lifted ([`MAX_LIFT_ROUNDS`]). The public
/// corpus's largest search at the default threshold has 49 units.
const MAX_WEIGHED_UNITS: usize = 64;
/// Over [`MAX_WEIGHED_UNITS`]: how many needed units the lifting finds at most. Each round
/// bisects for the longest run of units that can be lifted together (cost only grows as bounds
/// are lifted), so a search takes O(rounds · log units) probes, not one per unit, and sets
/// O(rounds · units) bounds.
const MAX_LIFT_ROUNDS: usize = 8;
/// Rules of a schema whose cost a total's search follows (the costliest); the others count as
/// fixed.
const MAX_TOTAL_RULES: usize = 256;
/// The stack a search runs on (schemas nest to 1,000 levels).
const SEARCH_STACK: usize = 64 << 20;

/// What counts as a finding, and how much work one object's search may take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// A rule or total at or above this percent of its limit (or over the limit) gets
    /// suggestions (the CLI's and the operator's near-budget percent), and a suggestion brings
    /// it below both.
    pub near_budget_percent: f64,
    /// Probes (re-estimates of a rule) one object's search may make.
    pub max_evaluations: usize,
    /// Whole-object re-estimates (verifications) one object may take.
    pub max_verifications: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::new(crate::report::DEFAULT_NEAR_BUDGET_PERCENT)
    }
}

impl Settings {
    /// `near_budget_percent` not above 0 (or not a number) counts as the default.
    pub fn new(near_budget_percent: f64) -> Self {
        let p = if near_budget_percent.is_finite() && near_budget_percent > 0.0 {
            near_budget_percent
        } else {
            crate::report::DEFAULT_NEAR_BUDGET_PERCENT
        };
        Settings {
            near_budget_percent: p,
            max_evaluations: 4_000,
            max_verifications: 48,
        }
    }

    /// Whether `cost` is at most `limit` and below the threshold (the same share the sarif and
    /// github outputs call near budget).
    pub fn fits(&self, cost: u64, limit: u64) -> bool {
        cost <= limit && !crate::report::reaches_share(cost, limit, self.near_budget_percent)
    }
}

/// The schema keywords a suggestion sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keyword {
    MaxItems,
    MaxProperties,
    MaxLength,
}

impl Keyword {
    pub fn name(self) -> &'static str {
        match self {
            Keyword::MaxItems => "maxItems",
            Keyword::MaxProperties => "maxProperties",
            Keyword::MaxLength => "maxLength",
        }
    }

    fn marker_name(self) -> &'static str {
        match self {
            Keyword::MaxItems => "MaxItems",
            Keyword::MaxProperties => "MaxProperties",
            Keyword::MaxLength => "MaxLength",
        }
    }

    fn get(self, s: &Schema) -> Option<i64> {
        match self {
            Keyword::MaxItems => s.max_items,
            Keyword::MaxProperties => s.max_properties,
            Keyword::MaxLength => s.max_length,
        }
    }

    fn set(self, s: &mut Schema, v: Option<i64>) {
        match self {
            Keyword::MaxItems => s.max_items = v,
            Keyword::MaxProperties => s.max_properties = v,
            Keyword::MaxLength => s.max_length = v,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Candidate values.

/// The 1-2-5 series within `i64`: 1, 2, 5, 10, 20, 50, …, 5·10^18.
pub fn series_125() -> Vec<i64> {
    let mut out = Vec::new();
    let mut p: i64 = 1;
    loop {
        for m in [1, 2, 5] {
            match p.checked_mul(m) {
                Some(v) => out.push(v),
                None => return out,
            }
        }
        match p.checked_mul(10) {
            Some(n) => p = n,
            None => return out,
        }
    }
}

/// The largest 1-2-5 value at most `n`; `None` below 1.
pub fn round_down_125(n: i64) -> Option<i64> {
    series_125().into_iter().take_while(|&v| v <= n).last()
}

/// The largest of the ascending `candidates` for which `fits` holds, assuming `fits` holds up
/// to some candidate and not after it (the cost is monotone in the bound); `None` when it holds
/// for none. Probes `fits` about log2(len) times.
pub fn largest_fitting<E>(
    candidates: &[i64],
    mut fits: impl FnMut(i64) -> Result<bool, E>,
) -> Result<Option<i64>, E> {
    // Invariant: every candidate below `lo` fits, none from `hi` on does.
    let (mut lo, mut hi) = (0usize, candidates.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(candidates[mid])? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo.checked_sub(1).map(|i| candidates[i]))
}

/// Candidates from `lo` (included) to `below` (excluded; `None`: no end): `lo` and the 1-2-5
/// values between.
fn candidates(lo: i64, below: Option<i64>) -> Vec<i64> {
    let mut out = vec![lo];
    out.extend(
        series_125()
            .into_iter()
            .filter(|&v| v > lo && below.is_none_or(|b| v < b)),
    );
    if below.is_some_and(|b| lo >= b) {
        out.clear();
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Schema paths: `crate::schema::path`.

/// The keyword that bounds the size of a node the estimator reads, if any.
fn size_keyword(s: &Schema) -> Option<Keyword> {
    if s.x_int_or_string {
        return Some(Keyword::MaxLength);
    }
    match s.type_.as_str() {
        "array" => Some(Keyword::MaxItems),
        "object" if s.additional_properties_schema().is_some() => Some(Keyword::MaxProperties),
        "string" => match s.format.as_str() {
            "duration" | "date" | "date-time" => None,
            "byte" => Some(Keyword::MaxLength),
            // Without maxLength, an enum bounds the string (its longest value); a maxLength
            // would replace that bound with a larger one.
            _ if s.max_length.is_none() && !s.enum_values.is_empty() => None,
            _ => Some(Keyword::MaxLength),
        },
        _ => None,
    }
}

/// The keyword that bounds how many children a node has (`extractMaxElements`), if any.
fn cardinality_keyword(s: &Schema) -> Option<Keyword> {
    match s.type_.as_str() {
        "array" => Some(Keyword::MaxItems),
        "object" if s.additional_properties.is_some() => Some(Keyword::MaxProperties),
        _ => None,
    }
}

/// The smallest value a person would accept for the bound: at least 1, its `min*`, its
/// default's size, and (maxLength) its longest enum value.
fn smallest_sensible(s: &Schema, k: Keyword) -> i64 {
    let chars = |v: &Value| v.as_str().map(|t| t.chars().count() as i64).unwrap_or(0);
    let mut lo = 1i64;
    match k {
        Keyword::MaxItems => {
            lo = lo.max(s.min_items.unwrap_or(0));
            if let Some(Value::Array(a)) = &s.default {
                lo = lo.max(a.len() as i64);
            }
        }
        Keyword::MaxProperties => {
            lo = lo
                .max(s.min_properties.unwrap_or(0))
                .max(s.required.len() as i64);
            if let Some(Value::Object(o)) = &s.default {
                lo = lo.max(o.len() as i64);
            }
        }
        Keyword::MaxLength => {
            lo = lo.max(s.min_length.unwrap_or(0));
            if let Some(d) = &s.default {
                lo = lo.max(chars(d));
            }
            for e in &s.enum_values {
                lo = lo.max(chars(e));
            }
        }
    }
    lo
}

// ---------------------------------------------------------------------------------------------
// The rule model: one rule's cost, re-estimated from a changed schema.

/// A size the estimator asked for, below the rule's node (`["spec", "@items"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Read {
    elems: Vec<String>,
    /// Whether the path is in the rule's CEL type (not: fields an open schema does not declare).
    resolved: bool,
}

/// The CRD size estimator ([`RuleSizes`]), recording what it is asked when `record` is set.
struct Sizes<'a> {
    inner: RuleSizes,
    record: Option<&'a RefCell<Vec<Read>>>,
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
struct RuleCost {
    cost: u64,
    message: Option<u64>,
}

impl RuleCost {
    /// What the per-rule limit is compared with (the rule, or its messageExpression).
    fn judged(self) -> u64 {
        crate::report::judged_rule_cost(self.cost, self.message)
    }

    /// What the rule adds to its schema's total.
    fn total_part(self) -> u64 {
        self.cost.saturating_add(self.message.unwrap_or(0))
    }

    fn of_report(r: &RuleReport) -> RuleCost {
        RuleCost {
            cost: r.cost,
            message: r.message_expression_cost,
        }
    }
}

/// One rule, compiled once, costed again for each changed schema.
struct RuleModel {
    /// The rule's node, from the schema root.
    node: Vec<Step>,
    /// The node whose CEL type the rule's is a part of, as the API server builds it: the node
    /// itself, unless the way from the scope root (the highest ancestor with rules) passes
    /// through what a resource root's type replaces (`metadata`, `kind`, `apiVersion`, a map's
    /// values on 1.30), then the scope root.
    convert_at: usize,
    checked: CheckedExpr,
    message: Option<CheckedExpr>,
    base: RuleCost,
}

/// The node's CEL type, as the API server's schema walk gives it: converted at `convert_at`
/// and followed down (converted afresh below a node whose type does not have the child); and
/// the type last converted (whose provider resolves the node's object types).
fn node_decl(
    env: &Env,
    root: &Schema,
    path: &[Step],
    convert_at: usize,
) -> Option<(Arc<DeclType>, Arc<DeclType>)> {
    let mut s = node(root, &path[..convert_at])?;
    let is_root = convert_at == 0;
    let mut d = schema_decl_type(s, is_root || s.x_embedded_resource, env.minor, "selfType")?;
    let mut converted = d.clone();
    for step in &path[convert_at..] {
        let c = Node::child(s, step)?;
        let next = match step {
            Step::Prop(n) => escape(n).and_then(|e| d.field(&e).cloned()),
            Step::Items | Step::Values => d.elem().cloned(),
        };
        d = match next {
            Some(t) => t,
            None => {
                let t = schema_decl_type(c, c.x_embedded_resource, env.minor, "selfType")?;
                converted = t.clone();
                t
            }
        };
        s = c;
    }
    Some((converted, d))
}

/// Where the rule's type must be converted (see [`RuleModel::convert_at`]).
fn conversion_point(root: &Schema, path: &[Step]) -> usize {
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
    fn build(env: &Env, root: &Schema, path: Vec<Step>, index: usize) -> Option<RuleModel> {
        let target = node(root, &path)?;
        let rule = target.x_validations.get(index)?;
        let convert_at = conversion_point(root, &path);
        let (converted, decl) = node_decl(env, root, &path, convert_at)?;
        let provider = DeclTypeProvider::new(&[&converted], env.minor);
        let self_type = decl.cel.clone();
        let old_self = if rule.optional_old_self == Some(true) {
            Type::optional(self_type.clone())
        } else {
            self_type.clone()
        };
        let vars = vec![
            ("self".to_string(), self_type),
            ("oldSelf".to_string(), old_self),
        ];
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

    /// The rule's cost with the schema as it is now; the sizes asked go to `record`.
    fn eval(
        &self,
        env: &Env,
        root: &Schema,
        record: Option<&RefCell<Vec<Read>>>,
    ) -> Option<RuleCost> {
        // The walks down to the node (its type, its cardinality).
        budget::charge(self.node.len() as u64);
        let (_, decl) = node_decl(env, root, &self.node, self.convert_at)?;
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

// ---------------------------------------------------------------------------------------------
// Sites and the search.

/// A bound the search may set.
#[derive(Clone, Debug)]
struct Site {
    node: Vec<Step>,
    keyword: Keyword,
    current: Option<i64>,
    lo: i64,
    /// The highest value worth suggesting. Without a bound: the size the API server assumes for
    /// the node already (from the request size), rounded down; a looser bound would raise the
    /// cost of rules whose cardinality or sizes fall back to it. With an implied bound: its
    /// round figure (or the implied value itself, where the round figure is not below the
    /// bound there now): a higher one refuses no more and reads as arbitrary.
    cap: Option<i64>,
    /// An ancestor that sets the cardinality.
    cardinality: bool,
    /// What the node's own validation already implies ([`implied`]), when a bound at it would
    /// be a change: values from it on refuse nothing the schema accepts today.
    implied: Option<Implied>,
}

/// The size an unbounded node gets from the request size, as a value of `k` (`maxLength`
/// counts characters of up to 4 bytes), rounded down to the 1-2-5 series.
fn unbounded_cap(env: &Env, s: &Schema, k: Keyword) -> Option<i64> {
    let d = schema_decl_type(s, s.x_embedded_resource, env.minor, "selfType")?;
    if d.bounded || d.max_elements <= 0 {
        return None;
    }
    let raw = match k {
        Keyword::MaxLength => d.max_elements / 4,
        Keyword::MaxItems | Keyword::MaxProperties => d.max_elements,
    };
    round_down_125(raw)
}

impl Site {
    /// Values from this one on are not suggested: the bound there now, or above the cap.
    fn ceiling(&self) -> Option<i64> {
        let above_cap = self.cap.map(|c| c.saturating_add(1));
        match (self.current, above_cap) {
            (Some(c), Some(a)) => Some(c.min(a)),
            (c, a) => c.or(a),
        }
    }

    /// Whether `value` refuses nothing the schema accepts today.
    fn is_safe(&self, value: i64) -> bool {
        self.implied.as_ref().is_some_and(|i| value >= i.value)
    }

    /// The safe value a suggestion writes (the implied bound's round figure, or the implied
    /// value where the round figure is not below the bound there now), if any.
    fn safe_value(&self) -> Option<i64> {
        let i = self.implied.as_ref()?;
        let below = |v: i64| {
            self.current.is_none_or(|c| v < c) && self.cap.is_none_or(|c| v <= c) && v >= self.lo
        };
        [i.round(), i.value].into_iter().find(|&v| below(v))
    }

    /// The implied value and its round figure, where they are candidates (for the binary
    /// searches, which otherwise probe the 1-2-5 series only).
    fn implied_candidates(&self) -> Vec<i64> {
        let Some(i) = &self.implied else {
            return Vec::new();
        };
        let top = self.ceiling();
        [i.value, i.round()]
            .into_iter()
            .filter(|&v| v >= self.lo && top.is_none_or(|t| v < t))
            .collect()
    }

    fn has_room(&self) -> bool {
        self.current.is_none_or(|c| c > self.lo)
    }

    fn label(&self) -> String {
        format!("{} on {}", self.keyword.name(), schema_path(&self.node))
    }
}

/// Why a search gave up.
#[derive(Debug)]
enum Stop {
    /// The probes allowed are spent.
    Evaluations,
}

/// The finding a search is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Rule,
    Total,
}

/// What a suggestion changes for the API's users, the gentlest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Change {
    /// Every bound at or above what the node's validation implies: refuses nothing.
    Safe,
    /// A bound added to a node without one: refuses the values above it.
    Adds,
    /// An existing bound lowered: refuses values the API accepts today.
    Lowers,
}

/// A candidate suggestion: site indices and values, and the cost the probes predicted.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    bounds: Vec<(usize, i64)>,
}

struct Search<'a> {
    env: &'a Env,
    root: &'a mut Schema,
    target: Target,
    limit: u64,
    settings: &'a Settings,
    sites: Vec<Site>,
    models: Vec<RuleModel>,
    /// Per model, the sites its cost depends on.
    depends: Vec<Vec<usize>>,
    /// Totals: what no model covers.
    fixed: u64,
    evals_left: &'a mut usize,
    /// Per site, the addresses of its node and its ancestors ([`node_addresses`]).
    addresses: Vec<Vec<usize>>,
    /// Per site, the value set on the schema now (`None`: its own). A probe changes only the
    /// sites whose value differs from the last probe's, and probes follow each other in an
    /// order that changes few ([`Search::run`]): setting every site of a probe again, each by
    /// a walk from the root and a note to each ancestor, took d² per probe of a rule d lists
    /// deep, so d³ for its search.
    applied: Vec<Option<i64>>,
    /// The cost of every set of values probed, and the steps it took.
    probed: HashMap<Vec<Option<i64>>, (u64, u64)>,
}

/// A search's answer: suggestions (unverified), or why there are none.
enum Answer {
    Groups(Vec<Group>),
    None(String),
}

impl Search<'_> {
    fn fits(&self, cost: u64) -> bool {
        self.settings.fits(cost, self.limit)
    }

    fn fits_at(&mut self, values: &[Option<i64>]) -> Result<bool, Stop> {
        let c = self.cost(values)?;
        Ok(self.fits(c))
    }

    /// Sets the sites to `values` (`None`: as they are) on the schema, changing only those whose
    /// value differs from what is set now.
    fn apply(&mut self, values: &[Option<i64>]) {
        budget::charge(values.len() as u64);
        for (i, v) in values.iter().enumerate() {
            let was = self.applied[i];
            if was == *v {
                continue;
            }
            let site = &self.sites[i];
            if let Some(n) = node_mut(self.root, &site.node) {
                let (from, to) = (was.or(site.current), v.or(site.current));
                site.keyword.set(n, to);
                crate::schema::decltype::note_bound_change(&self.addresses[i], i, from, to);
            }
            self.applied[i] = *v;
        }
    }

    /// The schema as it was before the search.
    fn restore(&mut self) {
        let none = vec![None; self.sites.len()];
        self.apply(&none);
    }

    /// The finding's cost with the sites set to `values` (`None`: as they are).
    fn cost(&mut self, values: &[Option<i64>]) -> Result<u64, Stop> {
        if *self.evals_left == 0 {
            return Err(Stop::Evaluations);
        }
        *self.evals_left -= 1;
        // The same bounds asked again (a later phase probing what an earlier one did): the cost
        // found then, its work charged again as if done.
        if let Some(&(cost, steps)) = self.probed.get(values) {
            budget::consume(steps);
            return Ok(cost);
        }
        let before = budget::steps_left();
        let cost = self.probe(values);
        // Bounded: a million values kept at most (a search over many sites keeps fewer probes).
        if (self.probed.len() + 1) * values.len() <= 1 << 20 {
            self.probed.insert(
                values.to_vec(),
                (cost, before.saturating_sub(budget::steps_left())),
            );
        }
        Ok(cost)
    }

    /// The finding's cost with the sites set to `values`, estimated.
    fn probe(&mut self, values: &[Option<i64>]) -> u64 {
        budget::charge(1);
        self.apply(values);
        let mut total = self.fixed;
        let mut judged = 0;
        for (m, deps) in self.models.iter().zip(&self.depends) {
            let changed = deps.iter().any(|&i| values[i].is_some());
            let c = if changed {
                m.eval(self.env, self.root, None).unwrap_or(m.base)
            } else {
                m.base
            };
            total = total.saturating_add(c.total_part());
            judged = judged.max(c.judged());
        }
        match self.target {
            Target::Rule => judged,
            Target::Total => total,
        }
    }

    fn at_lo(&self, units: &[&Vec<usize>], values: &mut [Option<i64>]) {
        for u in units {
            for &i in u.iter() {
                values[i] = Some(self.sites[i].lo);
            }
        }
    }

    /// The search (see the module's documentation). `units` are sets of site indices moved
    /// together; `notes` say what cannot change.
    ///
    /// Bounds that break nobody come first: (1) the bounds the nodes' own validation implies
    /// ([`Search::safe_group`]); (2) bounds added to unbounded nodes, existing bounds lowered
    /// only as far as their implied bound; (3) only when neither finds anything, existing
    /// bounds lowered further (a breaking change, said so on the suggestion).
    fn run(&mut self, units: Vec<Vec<usize>>, notes: &[String]) -> Result<Answer, Stop> {
        let n = self.sites.len();
        let none = vec![None; n];
        let base = self.cost(&none)?;
        let unit_refs: Vec<&Vec<usize>> = units.iter().collect();
        let mut all_lo = none.clone();
        self.at_lo(&unit_refs, &mut all_lo);
        let lowest = if units.is_empty() {
            base
        } else {
            self.cost(&all_lo)?
        };
        if !self.fits(lowest) {
            return Ok(Answer::None(
                self.no_bound_helps(&units, base, lowest, notes),
            ));
        }
        let mut groups = Vec::new();
        if let Some(g) = self.safe_group()? {
            groups.push(g);
        }
        let (gentle, raised) = self.gentle_units(&units);
        let same = gentle == units && raised.is_empty();
        let found = self.search_units(&gentle, same.then_some(lowest));
        for (i, lo) in &raised {
            self.sites[*i].lo = *lo;
        }
        for g in found? {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        if groups.is_empty() && !same {
            groups = self.search_units(&units, Some(lowest))?;
        }
        if groups.is_empty() {
            return Ok(Answer::None(
                self.no_bound_helps(&units, base, lowest, notes),
            ));
        }
        // Safe first, then additions, then lowerings; within each, the least restrictive (the
        // highest smallest value), then fewer bounds.
        groups.sort_by_key(|g| {
            let smallest = g.bounds.iter().map(|b| b.1).min().unwrap_or(0);
            (
                self.change_of(g),
                std::cmp::Reverse(smallest),
                g.bounds.len(),
            )
        });
        groups.truncate(MAX_SUGGESTIONS);
        Ok(Answer::Groups(groups))
    }

    /// What a group changes for the API's users: every bound safe, some added, or some existing
    /// bound lowered below what the node's validation implies.
    fn change_of(&self, g: &Group) -> Change {
        let mut change = Change::Safe;
        for &(i, v) in &g.bounds {
            let s = &self.sites[i];
            if s.is_safe(v) {
                continue;
            }
            change = change.max(if s.current.is_some() {
                Change::Lowers
            } else {
                Change::Adds
            });
        }
        change
    }

    /// The units without the sites whose bound could only be lowered below what their
    /// validation implies (a breaking change); those it implies a bound for may go down to it
    /// (their `lo` raised: the old values are returned, to put back).
    fn gentle_units(&mut self, units: &[Vec<usize>]) -> (Vec<Vec<usize>>, Vec<(usize, i64)>) {
        let mut raised = Vec::new();
        let mut out = Vec::new();
        for u in units {
            let mut kept = Vec::new();
            for &i in u {
                let s = &mut self.sites[i];
                if s.current.is_none() {
                    kept.push(i);
                    continue;
                }
                let Some(imp) = &s.implied else { continue };
                if imp.value > s.lo && !raised.iter().any(|(j, _)| *j == i) {
                    raised.push((i, s.lo));
                    s.lo = imp.value;
                }
                if s.has_room() {
                    kept.push(i);
                }
            }
            if !kept.is_empty() && !out.contains(&kept) {
                out.push(kept);
            }
        }
        (out, raised)
    }

    /// The bounds every node's own validation implies, those that are needed: every site with
    /// a safe value at it (the round figure, else the implied value itself), then the ones not
    /// needed lifted, then each kept implied value raised to its round figure where that fits.
    /// `None` when the safe values together do not fit.
    fn safe_group(&mut self) -> Result<Option<Group>, Stop> {
        let n = self.sites.len();
        let safe: Vec<usize> = (0..n)
            .filter(|&i| self.sites[i].safe_value().is_some())
            .collect();
        if safe.is_empty() {
            return Ok(None);
        }
        let mut round = vec![None; n];
        let mut exact = vec![None; n];
        for &i in &safe {
            let s = &self.sites[i];
            round[i] = s.safe_value();
            exact[i] = s
                .implied
                .as_ref()
                .map(|imp| imp.value.max(s.lo))
                .filter(|&v| s.current.is_none_or(|c| v < c));
        }
        let start = if self.fits_at(&round)? {
            round.clone()
        } else if exact != round && exact.iter().any(Option::is_some) && self.fits_at(&exact)? {
            exact
        } else {
            return Ok(None);
        };
        let units: Vec<Vec<usize>> = safe.iter().map(|&i| vec![i]).collect();
        let mut values = self.lift_unneeded(&units, start);
        for &i in &safe {
            if let (Some(v), Some(r)) = (values[i], round[i])
                && v < r
            {
                let mut w = values.clone();
                w[i] = Some(r);
                if self.fits_at(&w)? {
                    values = w;
                }
            }
        }
        let bounds: Vec<(usize, i64)> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .collect();
        Ok((!bounds.is_empty()).then_some(Group { bounds }))
    }

    /// The search over `units`: each alone, then the ones that matter together (see the
    /// module's documentation); nothing when even every unit at its smallest does not fit
    /// (`lowest`: that cost, when known already).
    fn search_units(
        &mut self,
        units: &[Vec<usize>],
        lowest: Option<u64>,
    ) -> Result<Vec<Group>, Stop> {
        if units.is_empty() {
            return Ok(Vec::new());
        }
        let n = self.sites.len();
        let none = vec![None; n];
        let unit_refs: Vec<&Vec<usize>> = units.iter().collect();
        let mut all_lo = none.clone();
        self.at_lo(&unit_refs, &mut all_lo);
        let lowest = match lowest {
            Some(c) => c,
            None => self.cost(&all_lo)?,
        };
        if !self.fits(lowest) {
            return Ok(Vec::new());
        }
        if units.len() > MAX_WEIGHED_UNITS {
            let every: Vec<usize> = (0..units.len()).collect();
            return Ok(match self.common_value(units, &every)? {
                Some((values, _)) => vec![Group {
                    bounds: self
                        .lift_unneeded(units, values)
                        .iter()
                        .enumerate()
                        .filter_map(|(i, v)| v.map(|v| (i, v)))
                        .collect(),
                }],
                None => Vec::new(),
            });
        }
        // Each unit: its cost alone at its smallest value (the biggest driver lowers most), and
        // whether it matters once everything else is at its smallest. One pass for each, so
        // that a probe changes only two units from the one before.
        let mut alone = Vec::new();
        let mut v = none.clone();
        for (ui, u) in units.iter().enumerate() {
            for &i in u {
                v[i] = Some(self.sites[i].lo);
            }
            alone.push((self.cost(&v)?, ui));
            for &i in u {
                v[i] = None;
            }
        }
        let mut relevant = vec![false; units.len()];
        let mut w = all_lo.clone();
        for (ui, u) in units.iter().enumerate() {
            for &i in u {
                w[i] = None;
            }
            relevant[ui] = self.cost(&w)? != lowest;
            for &i in u {
                w[i] = all_lo[i];
            }
        }
        alone.sort();
        let order: Vec<usize> = alone.iter().map(|(_, ui)| *ui).collect();
        let mut groups = Vec::new();
        for &(c, ui) in &alone {
            if groups.len() >= MAX_SUGGESTIONS {
                break;
            }
            if self.fits(c)
                && let Some(g) = self.shape(units, &[ui])?
            {
                groups.push(g);
            }
        }
        let mut together: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&ui| relevant[ui])
            .take(MAX_COMBINED_UNITS)
            .collect();
        if together.len() >= 2 {
            let mut v = none.clone();
            let refs: Vec<&Vec<usize>> = together.iter().map(|&ui| &units[ui]).collect();
            self.at_lo(&refs, &mut v);
            if !self.fits_at(&v)? {
                // Jointly relevant units the one-at-a-time test missed: all of them.
                together = order.clone();
            }
            if let Some(g) = self.shape(units, &together)?
                && !groups.contains(&g)
            {
                groups.push(g);
            }
        }
        Ok(groups)
    }

    /// The bounds of `chosen` units (in driver order): the largest common value, then the
    /// bounds not needed dropped, then each raised to its largest fitting value.
    fn shape(&mut self, units: &[Vec<usize>], chosen: &[usize]) -> Result<Option<Group>, Stop> {
        let Some((mut values, members)) = self.common_value(units, chosen)? else {
            return Ok(None);
        };
        // Drop what is not needed, the smallest drivers first.
        if chosen.len() > 1 {
            for &ui in chosen.iter().rev() {
                let mut w = values.clone();
                for &i in &units[ui] {
                    w[i] = None;
                }
                if w.iter().any(Option::is_some) && self.fits_at(&w)? {
                    values = w;
                }
            }
        }
        // Raise each, the biggest driver first.
        for &i in &members {
            let Some(v) = values[i] else { continue };
            let site = &self.sites[i];
            let mut above: Vec<i64> = candidates(v, site.ceiling())
                .into_iter()
                .chain(site.implied_candidates())
                .filter(|&x| x > v)
                .collect();
            above.sort_unstable();
            above.dedup();
            let mut w = values.clone();
            if let Some(best) = largest_fitting(&above, |x| {
                w[i] = Some(x);
                self.fits_at(&w)
            })? {
                values[i] = Some(best);
            }
        }
        let bounds: Vec<(usize, i64)> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .collect();
        Ok((!bounds.is_empty()).then_some(Group { bounds }))
    }

    /// The sites of `chosen` units at the largest common value that fits (each left where it
    /// is when lower, and within its smallest sensible value and cap), and the sites in them;
    /// `None` when no value fits.
    #[allow(clippy::type_complexity)]
    fn common_value(
        &mut self,
        units: &[Vec<usize>],
        chosen: &[usize],
    ) -> Result<Option<(Vec<Option<i64>>, Vec<usize>)>, Stop> {
        let n = self.sites.len();
        let mut members: Vec<usize> = Vec::new();
        let mut member = vec![false; n];
        for &ui in chosen {
            for &i in &units[ui] {
                if !member[i] {
                    member[i] = true;
                    members.push(i);
                }
            }
        }
        if members.is_empty() {
            return Ok(None);
        }
        budget::charge(members.len() as u64);
        let assign = |sites: &[Site], c: i64| -> Vec<Option<i64>> {
            let mut v = vec![None; n];
            for &i in &members {
                let s = &sites[i];
                if s.current.is_none_or(|cur| c < cur) {
                    v[i] = Some(s.cap.map_or(c, |cap| c.min(cap)).max(s.lo));
                }
            }
            v
        };
        let min_lo = members.iter().map(|&i| self.sites[i].lo).min().unwrap_or(1);
        let mut cands: Vec<i64> = series_125().into_iter().filter(|&v| v > min_lo).collect();
        cands.extend(members.iter().map(|&i| self.sites[i].lo));
        cands.extend(
            members
                .iter()
                .flat_map(|&i| self.sites[i].implied_candidates()),
        );
        cands.push(min_lo);
        cands.sort_unstable();
        cands.dedup();
        let Some(c) = largest_fitting(&cands, |c| {
            let v = assign(&self.sites, c);
            Ok(v.iter().any(Option::is_some) && self.fits_at(&v)?)
        })?
        else {
            return Ok(None);
        };
        Ok(Some((assign(&self.sites, c), members)))
    }

    /// Over [`MAX_WEIGHED_UNITS`]: `values` (every unit at the common value, which fits) with
    /// the units that need no bound lifted, left as they are. From the first unit on, the
    /// longest run of units that can be lifted together is found by bisection (lifting a bound
    /// never lowers the cost); the unit after it is needed and kept, and the next round starts
    /// past it, for at most [`MAX_LIFT_ROUNDS`] needed units (the ones after stay bounded), and
    /// not after a round that lifted nothing. Out of probes, what was lifted so far stands:
    /// every step was a probe that fits.
    fn lift_unneeded(
        &mut self,
        units: &[Vec<usize>],
        mut values: Vec<Option<i64>>,
    ) -> Vec<Option<i64>> {
        let lifted = |values: &[Option<i64>], run: &[Vec<usize>]| {
            let mut v = values.to_vec();
            for &i in run.iter().flatten() {
                v[i] = None;
            }
            v
        };
        let mut start = 0;
        for _ in 0..MAX_LIFT_ROUNDS {
            let rest = &units[start..];
            if rest.is_empty() {
                break;
            }
            // The longest run rest[..k] that can be lifted: k = 0 fits (it is `values`).
            let (mut lo, mut hi) = (0, rest.len());
            while lo < hi {
                let mid = if lo == 0 && hi == rest.len() {
                    hi // the whole rest first: often nothing more is needed
                } else {
                    lo + (hi - lo).div_ceil(2)
                };
                match self.fits_at(&lifted(&values, &rest[..mid])) {
                    Ok(true) => lo = mid,
                    Ok(false) => hi = mid - 1,
                    Err(Stop::Evaluations) => return lifted(&values, &rest[..lo]),
                }
            }
            values = lifted(&values, &rest[..lo]);
            // All lifted; or none: the units are alike (nested lists) more often than not, and
            // a next round would lift no more.
            if lo == rest.len() || lo == 0 {
                break;
            }
            start += lo + 1;
        }
        values
    }

    fn what(&self) -> &'static str {
        match self.target {
            Target::Rule => "the rule",
            Target::Total => "the total",
        }
    }

    fn no_bound_helps(
        &self,
        units: &[Vec<usize>],
        base: u64,
        lowest: u64,
        notes: &[String],
    ) -> String {
        let limit = self.limit;
        let share = |c: u64| {
            crate::report::format::percent(c, limit, crate::report::format::PercentStyle::REPORT)
        };
        if units.is_empty() && self.sites.iter().all(|s| !s.has_room()) && !notes.is_empty() {
            // What the cost depends on is out of the schema's reach: say that first.
            return format!(
                "no bound helps: {}; so {}'s cost ({} = {} of {}) cannot be lowered with a schema bound",
                notes.join("; "),
                self.what(),
                num(base),
                share(base),
                num(limit)
            );
        }
        let mut why = if units.is_empty() && !self.sites.is_empty() {
            let sites: Vec<String> = self
                .sites
                .iter()
                .map(|s| {
                    format!(
                        "{} {} on {}",
                        s.keyword.name(),
                        s.current.unwrap_or_default(),
                        schema_path(&s.node)
                    )
                })
                .collect();
            format!(
                "no bound helps: the bounds {} depends on ({}) are as low as they sensibly go, and the rest of its cost ({} = {} of {}) is in fixed parts (literals, regexes, fixed-size values)",
                self.what(),
                some_of(&sites, 3),
                num(base),
                share(base),
                num(limit)
            )
        } else if units.is_empty() {
            match self.target {
                Target::Rule => format!(
                    "no bound helps: nothing the rule reads has a size a schema bound sets, and it is in no list or map: its cost ({} = {} of {}) is in fixed parts (literals, regexes, fixed-size values)",
                    num(base),
                    share(base),
                    num(limit)
                ),
                Target::Total => format!(
                    "no bound helps: nothing the rules of this schema read has a size a schema bound sets, and none is in a list or map: the total ({} = {} of {}) is in fixed parts",
                    num(base),
                    share(base),
                    num(limit)
                ),
            }
        } else if lowest == base {
            let sites: Vec<String> = self.sites.iter().map(Site::label).collect();
            format!(
                "no bound helps: even {} at its smallest does not change {}'s cost ({} = {} of {}): it is in fixed parts (literals, regexes, fixed-size values)",
                some_of(&sites, 3),
                self.what(),
                num(base),
                share(base),
                num(limit)
            )
        } else {
            let sites: Vec<String> = units
                .iter()
                .flatten()
                .map(|&i| {
                    let s = &self.sites[i];
                    format!("{}: {} on {}", s.keyword.name(), s.lo, schema_path(&s.node))
                })
                .collect();
            format!(
                "no bound helps: even with {} {} would cost {} = {} of {} (now {}): the rest is in fixed parts (literals, regexes, fixed-size values)",
                some_of(&sites, 3),
                self.what(),
                num(lowest),
                share(lowest),
                num(limit),
                num(base)
            )
        };
        for n in notes {
            why.push_str("; ");
            why.push_str(n);
        }
        why
    }
}

fn some_of(items: &[String], n: usize) -> String {
    if items.len() <= n {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..n].join(", "), items.len() - n)
    }
}

// ---------------------------------------------------------------------------------------------
// Discovering sites.

/// The sites of a search, and each one's index by its node (address) and keyword.
#[derive(Default)]
struct Sites {
    sites: Vec<Site>,
    index: HashMap<(usize, Keyword), usize>,
}

/// The sites of one rule, added to `sites` (deduplicated); returns their indices and the
/// notes about what cannot change.
fn rule_sites(
    env: &Env,
    root: &Schema,
    model: &RuleModel,
    reads: &[Read],
    sites: &mut Sites,
    notes: &mut Vec<String>,
) -> Vec<usize> {
    let mut out = Vec::new();
    let mut mine = std::collections::HashSet::new();
    let mut add = |sites: &mut Sites, s: &Schema, path: &[Step], k: Keyword, cardinality: bool| {
        let at = (s as *const Schema as usize, k);
        let idx = match sites.index.get(&at) {
            Some(&i) => {
                sites.sites[i].cardinality |= cardinality;
                i
            }
            None => {
                let lo = smallest_sensible(s, k);
                let sites_now = &mut sites.sites;
                let current = k.get(s);
                let mut site = Site {
                    node: path.to_vec(),
                    keyword: k,
                    current,
                    lo,
                    cap: current
                        .is_none()
                        .then(|| unbounded_cap(env, s, k))
                        .flatten()
                        .map(|c| c.max(lo)),
                    cardinality,
                    implied: None,
                };
                // A bound the node's validation implies, when one at it would be a change and
                // within what the API server assumes already.
                site.implied = implied::implied_bound(root, path, k, env.minor).filter(|i| {
                    current.is_none_or(|c| i.value < c) && site.cap.is_none_or(|c| i.value <= c)
                });
                match site.safe_value() {
                    Some(v) => site.cap = Some(site.cap.map_or(v, |c| c.min(v))),
                    None => site.implied = None,
                }
                sites_now.push(site);
                sites.index.insert(at, sites_now.len() - 1);
                sites_now.len() - 1
            }
        };
        if mine.insert(idx) {
            out.push(idx);
        }
    };
    // The ancestors, in one walk down.
    let mut s = root;
    for (i, step) in model.node.iter().enumerate() {
        budget::charge(1);
        if let Some(k) = cardinality_keyword(s) {
            add(sites, s, &model.node[..i], k, true);
        }
        match Node::child(s, step) {
            Some(c) => s = c,
            None => break,
        }
    }
    for r in reads {
        budget::charge(1);
        match read_steps(root, &model.node, &r.elems) {
            Ok(Some(path)) => {
                let Some(s) = node(root, &path) else { continue };
                if s.x_int_or_string && !env.minor.int_or_string_max_length {
                    note(
                        notes,
                        format!(
                            "{} is x-kubernetes-int-or-string, whose maxLength Kubernetes {} ignores (1.34 and later count it)",
                            schema_path(&path),
                            env.kubernetes
                        ),
                    );
                    continue;
                }
                if let Some(k) = size_keyword(s) {
                    add(sites, s, &path, k, false);
                }
            }
            Ok(None) => {}
            Err(at) => {
                let shown = schema_path(&at.0);
                let why = if r.resolved {
                    format!(
                        "{shown}.{} is typed by the API server at a resource root (kind, apiVersion, metadata.name and metadata.generateName, unless the schema declares all four), not by this schema{}: no bound on it applies",
                        at.2,
                        if at.1 {
                            ", which has x-kubernetes-preserve-unknown-fields without declaring them"
                        } else {
                            ""
                        }
                    )
                } else if at.1 {
                    format!(
                        "{shown} has x-kubernetes-preserve-unknown-fields: what the rule reads below it ({}) has no schema to bound",
                        at.2
                    )
                } else {
                    format!(
                        "the rule reads {} below {shown}, which the schema does not declare",
                        at.2
                    )
                };
                note(notes, why);
            }
        }
    }
    out
}

fn note(notes: &mut Vec<String>, n: String) {
    if !notes.contains(&n) {
        notes.push(n);
    }
}

/// The schema node a read names (`Ok(None)`: a map's keys, which no bound sizes), or where it
/// leaves the schema: (the last node, whether it preserves unknown fields, what is read).
#[allow(clippy::type_complexity)]
fn read_steps(
    root: &Schema,
    node_path: &[Step],
    elems: &[String],
) -> Result<Option<Vec<Step>>, (Vec<Step>, bool, String)> {
    let mut path = node_path.to_vec();
    let Some(mut s) = node(root, node_path) else {
        return Ok(None);
    };
    for (i, e) in elems.iter().enumerate() {
        let step = match e.as_str() {
            "@keys" => return Ok(None),
            "@items" => Step::Items,
            "@values" => Step::Values,
            name => match property_named(s, name) {
                Some(p) => Step::Prop(p.clone()),
                None => {
                    let rest = crate::schema::decltype::display_path(
                        &elems[i..]
                            .iter()
                            .map(|e| std::rc::Rc::from(e.as_str()))
                            .collect::<Vec<_>>(),
                    );
                    return Err((path, s.x_preserve_unknown_fields == Some(true), rest));
                }
            },
        };
        match Node::child(s, &step) {
            Some(c) => s = c,
            None => {
                return Err((
                    path,
                    s.x_preserve_unknown_fields == Some(true),
                    e.to_string(),
                ));
            }
        }
        path.push(step);
    }
    Ok(Some(path))
}

/// The property of `s` whose CEL name (escaped) is `name`: looked up by its unescaped form,
/// the properties searched one by one only when that misses.
fn property_named<'s>(s: &'s Schema, name: &str) -> Option<&'s String> {
    let is = |p: &String| escape(p).as_deref() == Some(name);
    match s.properties.get_key_value(unescape(name).as_str()) {
        Some((p, _)) if is(p) => Some(p),
        _ => s.properties.keys().find(|p| is(p)),
    }
}

/// The units of a set of sites: every ancestor without a bound that sets a rule's cardinality
/// in one (they change nothing until all are bounded), every other site on its own. Sites
/// already as low as they sensibly go are left out.
fn units_of(sites: &[Site], groups: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    for g in groups {
        let unbounded: Vec<usize> = g
            .iter()
            .copied()
            .filter(|&i| sites[i].cardinality && sites[i].current.is_none())
            .collect();
        if !unbounded.is_empty() && !units.contains(&unbounded) {
            units.push(unbounded);
        }
    }
    // (A site on its own is in no unit above, which are of sites without a bound.)
    let mut alone = vec![false; sites.len()];
    for g in groups {
        for &i in g {
            let s = &sites[i];
            if !s.has_room() {
                continue;
            }
            if s.cardinality && s.current.is_none() {
                continue;
            }
            if !alone[i] {
                alone[i] = true;
                units.push(vec![i]);
            }
        }
    }
    units
}

// ---------------------------------------------------------------------------------------------
// The entry point.

/// Where a schema root is in the object.
struct Root {
    /// JSON pointers of the schema (every version's, for a shared one).
    pointers: Vec<String>,
    schema: Schema,
}

impl Root {
    fn read(object: &Value, field_path: &str, versions: &[String]) -> Option<Root> {
        let vs = object.pointer("/spec/versions")?.as_array()?;
        let mut pointers = Vec::new();
        for (i, v) in vs.iter().enumerate() {
            let named = v
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| versions.iter().any(|x| x == n));
            let p = format!("/spec/versions/{i}/schema/openAPIV3Schema");
            let exact = field_path == format!("spec.versions[{i}].schema.openAPIV3Schema");
            let shared = field_path == "spec.validation.openAPIV3Schema" && named;
            if (exact || shared) && object.pointer(&p).is_some_and(|s| !s.is_null()) {
                pointers.push(p);
            }
        }
        let first = object.pointer(pointers.first()?)?;
        let schema = Schema::from_json(first, field_path).ok()?;
        Some(Root { pointers, schema })
    }
}

/// A finding of a schema: a rule (index into its rules) or the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finding {
    Rule(usize),
    Total,
}

/// The report with suggested bounds (or why there are none) on every CRD rule and schema total
/// over its limit or at the near-budget threshold. `object` is the CRD the report is of, and
/// `estimator` the one that made it (any minor). Reports of other kinds, or whose estimate
/// stopped, come back unchanged.
pub fn suggest(
    estimator: &Estimator,
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    // All of it on a stack of its own: reading the schema back, applying bounds to copies of the
    // object and verifying them recurse as deep as the schema nests, whatever the caller's stack
    // (a test thread's, a blocking pool's).
    stacker::grow(SEARCH_STACK, || {
        suggest_on_this_stack(estimator, object, report, settings)
    })
}

/// As [`suggest`], with bounds that fit every minor of a range: `report` is `estimator`'s, and
/// `others` the other minors' estimators with their own reports of the same object. Every
/// suggestion is verified whole on each minor (it is kept only where the finding then fits on
/// all of them, and no minor gets an error it did not have); a rule or total at or over the
/// threshold only on another minor is searched with that minor's estimator, and its suggestions
/// (verified on all) are given to the same rule or total of `report`.
pub fn suggest_across(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    suggest_across_with(estimator, others, None, object, report, settings)
}

/// Whether two minors estimate an object (a copy with bounds applied) alike: a verification on
/// the second is then the first's.
pub type Alike<'a> = &'a (dyn Fn(&Estimator, &Estimator, &Value) -> bool + Sync);

/// [`suggest_across`], skipping the verifications `alike` says would repeat another's (a range's
/// minors that cannot differ on the object: `RangeEstimator::estimate_alike`).
pub fn suggest_across_with(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    alike: Option<Alike<'_>>,
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    stacker::grow(SEARCH_STACK, || {
        suggest_across_on_this_stack(estimator, others, alike, object, report, settings)
    })
}

fn suggest_on_this_stack(
    estimator: &Estimator,
    object: &Value,
    report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    suggest_across_on_this_stack(estimator, &[], None, object, report, settings)
}

/// The findings of a report: every rule and total not below the threshold.
fn findings_of(report: &ObjectReport, settings: &Settings) -> Vec<(usize, Finding)> {
    let mut findings = Vec::new();
    for (si, s) in report.schemas.iter().enumerate() {
        for (ri, r) in s.rules.iter().enumerate() {
            if !settings.fits(RuleCost::of_report(r).judged(), PER_RULE_COST_LIMIT) {
                findings.push((si, Finding::Rule(ri)));
            }
        }
        if !settings.fits(s.total_cost, PER_SCHEMA_COST_LIMIT) {
            findings.push((si, Finding::Total));
        }
    }
    findings
}

/// Where a finding of `from` is in `to` (another minor's report of the same object): the schema
/// of the same field path, the rule of the same node and index.
fn same_finding(
    from: &ObjectReport,
    (si, finding): (usize, Finding),
    to: &ObjectReport,
) -> Option<(usize, Finding)> {
    let schema = from.schemas.get(si)?;
    let tsi = to
        .schemas
        .iter()
        .position(|s| s.schema_field_path == schema.schema_field_path)?;
    match finding {
        Finding::Total => Some((tsi, Finding::Total)),
        Finding::Rule(ri) => {
            let r = schema.rules.get(ri)?;
            let tri = to.schemas[tsi]
                .rules
                .iter()
                .position(|x| x.node_field_path == r.node_field_path && x.index == r.index)?;
            Some((tsi, Finding::Rule(tri)))
        }
    }
}

/// Another minor a suggestion must fit: its estimator, its own report of the object, the
/// whole estimates its verifications made, and whether it estimates a copy as the searched
/// minor does.
struct Other<'e> {
    estimator: &'e Estimator,
    base: &'e ObjectReport,
    verified: Verified,
    alike: Option<Alike<'e>>,
    searched: &'e Estimator,
}

fn suggest_across_on_this_stack(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    alike: Option<Alike<'_>>,
    object: &Value,
    mut report: ObjectReport,
    settings: &Settings,
) -> ObjectReport {
    if report.kind != "CustomResourceDefinition" || report.stopped.is_some() {
        return report;
    }
    let others: Vec<(&Estimator, &ObjectReport)> = others
        .iter()
        .copied()
        .filter(|(_, r)| r.stopped.is_none() && r.kind == report.kind)
        .collect();
    let findings = findings_of(&report, settings);
    // Findings on another minor only (the same rule or total fits on `estimator`'s).
    let mut elsewhere: Vec<(usize, usize, Finding)> = Vec::new();
    for (oi, (_, r)) in others.iter().enumerate() {
        for f in findings_of(r, settings) {
            let here = same_finding(r, f, &report);
            let covered = here.is_some_and(|h| findings.contains(&h))
                || elsewhere
                    .iter()
                    .any(|&(pj, psi, pf)| same_finding(others[pj].1, (psi, pf), r) == Some(f));
            if here.is_some() && !covered {
                elsewhere.push((oi, f.0, f.1));
            }
        }
    }
    if findings.is_empty() && elsewhere.is_empty() {
        return report;
    }
    let answers = search_findings(
        estimator, &others, alike, object, &report, findings, settings,
    );
    apply_answers(&mut report, answers);
    // Each other minor's findings, searched with its estimator and verified on every minor.
    for (oi, (e, r)) in others.iter().enumerate() {
        let mine: Vec<(usize, Finding)> = elsewhere
            .iter()
            .filter(|(o, _, _)| *o == oi)
            .map(|&(_, si, f)| (si, f))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut rest: Vec<(&Estimator, &ObjectReport)> = vec![(estimator, &report)];
        rest.extend(
            others
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != oi)
                .map(|(_, x)| *x),
        );
        let answers = search_findings(e, &rest, alike, object, r, mine, settings);
        let moved: Vec<(usize, Finding, Answered)> = answers
            .into_iter()
            .filter_map(|(si, f, a)| {
                same_finding(r, (si, f), &report).map(|(tsi, tf)| (tsi, tf, a))
            })
            .collect();
        apply_answers(&mut report, moved);
    }
    report
}

/// A finding's suggestions, or why there are none.
type Answered = (Vec<Suggestion>, Option<String>);

fn apply_answers(report: &mut ObjectReport, answers: Vec<(usize, Finding, Answered)>) {
    for (si, finding, (sugg, none)) in answers {
        let schema = &mut report.schemas[si];
        match finding {
            Finding::Rule(ri) => {
                schema.rules[ri].suggestions = sugg;
                schema.rules[ri].no_suggestion = none;
            }
            Finding::Total => {
                schema.suggestions = sugg;
                schema.no_suggestion = none;
            }
        }
    }
}

/// Searches `findings` of `report` (`estimator`'s) and verifies each candidate on `estimator`
/// and on every minor of `others`.
fn search_findings(
    estimator: &Estimator,
    others: &[(&Estimator, &ObjectReport)],
    alike: Option<Alike<'_>>,
    object: &Value,
    report: &ObjectReport,
    findings: Vec<(usize, Finding)>,
    settings: &Settings,
) -> Vec<(usize, Finding, Answered)> {
    let mut out = Vec::new();
    if findings.is_empty() {
        return out;
    }
    let mut others: Vec<Other<'_>> = others
        .iter()
        .map(|(e, r)| Other {
            estimator: e,
            base: r,
            verified: Verified::default(),
            alike,
            searched: estimator,
        })
        .collect();
    let limits = estimator.limits();
    let mut steps_left = limits.steps;
    let mut left = SearchBudget {
        evals_left: settings.max_evaluations,
        verifications_left: settings.max_verifications,
    };
    let mut verified = Verified::default();
    let mut roots: Vec<Option<Option<Root>>> = (0..report.schemas.len()).map(|_| None).collect();
    for (si, finding) in findings {
        let schema = &report.schemas[si];
        let root = roots[si]
            .get_or_insert_with(|| Root::read(object, &schema.schema_field_path, &schema.versions));
        let answer: Result<Vec<Vec<Suggestion>>, String> = match root {
            None => Err("no suggestion: the schema could not be read back from the object".into()),
            Some(_) if steps_left == 0 || left.evals_left == 0 || left.verifications_left == 0 => Err(
                "no suggestion: the search's work budget for this object is spent (on the findings above)"
                    .into(),
            ),
            Some(root) => {
                let budget_now = Limits {
                    steps: steps_left,
                    bytes: limits.bytes,
                };
                let (res, usage) = stacker::grow(SEARCH_STACK, || {
                    budget::run_measured(budget_now, || {
                        search_and_verify(
                            &Searched {
                                estimator,
                                object,
                                report,
                                settings,
                            },
                            (si, finding),
                            root,
                            &mut left,
                            &mut verified,
                            &mut others,
                        )
                    })
                });
                steps_left = steps_left.saturating_sub(usage.steps);
                match res {
                    Ok(a) => a,
                    Err(stop) => {
                        // Stopped mid-search: the schema may hold a probe's bounds; read again
                        // for the next finding.
                        roots[si] = None;
                        Err(format!("no suggestion: the search stopped: {stop}"))
                    }
                }
            }
        };
        let (sugg, none) = match answer {
            Ok(groups) => (
                groups
                    .into_iter()
                    .enumerate()
                    .flat_map(|(g, bounds)| {
                        bounds.into_iter().map(move |mut b| {
                            b.group = g as u32;
                            b
                        })
                    })
                    .collect(),
                None,
            ),
            Err(why) => (Vec::new(), Some(why)),
        };
        out.push((si, finding, (sugg, none)));
    }
    out
}

/// Verified bounds kept per object at most (more verifications than that forget them all).
const MAX_VERIFIED: usize = 64;

/// The whole-object estimates of one object's verifications, by the bounds applied: a rule and
/// its schema's total, or rules on the same field, often verify the same bounds. A key is the
/// schema and one number per bound (its site interned here), not the sites' paths.
#[derive(Default)]
struct Verified {
    /// Site nodes by path.
    nodes: HashMap<Vec<Step>, u32>,
    /// The estimate (or why the bounds could not be applied) and the steps it took.
    done: HashMap<VerifiedKey, (Result<Rc<ObjectReport>, String>, u64)>,
    /// The object's copy each verification sets its bounds on and puts back afterwards
    /// ([`with_bounds`]): made once, not once per verification (a copy of a large CRD for each
    /// of an object's findings was 5 % of a run with suggestions at 30 %).
    copy: Option<Value>,
}

/// A schema (its index) and its bounds: (node, keyword, value).
type VerifiedKey = (usize, Vec<(u32, Keyword, i64)>);

impl Verified {
    fn key(&mut self, si: usize, bounds: &[(&Site, i64)]) -> VerifiedKey {
        if self.done.len() >= MAX_VERIFIED {
            self.done.clear();
            self.nodes.clear();
        }
        let ids = bounds
            .iter()
            .map(|(s, v)| {
                let node = match self.nodes.get(s.node.as_slice()) {
                    Some(&n) => n,
                    None => {
                        let n = self.nodes.len() as u32;
                        self.nodes.insert(s.node.clone(), n);
                        n
                    }
                };
                (node, s.keyword, *v)
            })
            .collect();
        (si, ids)
    }
}

/// One finding: search, then verify each candidate on a copy of the object.
/// What an object's search runs on: the estimator, the object, its report and the settings.
struct Searched<'a> {
    estimator: &'a Estimator,
    object: &'a Value,
    report: &'a ObjectReport,
    settings: &'a Settings,
}

/// What is left of an object's search budget: probes and verifications, over its findings.
struct SearchBudget {
    evals_left: usize,
    verifications_left: usize,
}

/// Bounds to verify: set on a copy of `object` at the schema roots `pointers`.
struct Probe<'a> {
    object: &'a Value,
    pointers: &'a [String],
    bounds: &'a [(&'a Site, i64)],
    settings: &'a Settings,
}

fn search_and_verify(
    cx: &Searched<'_>,
    (si, finding): (usize, Finding),
    root: &mut Root,
    left: &mut SearchBudget,
    verified: &mut Verified,
    others: &mut [Other<'_>],
) -> Result<Vec<Vec<Suggestion>>, String> {
    let Searched {
        estimator,
        object,
        report,
        settings,
    } = *cx;
    let env = estimator.env();
    let schema = &report.schemas[si];
    let fp = schema.schema_field_path.as_str();
    // The models: the rule, or every rule of the schema that costs anything.
    let chosen: Vec<usize> = match finding {
        Finding::Rule(ri) => vec![ri],
        Finding::Total => {
            let mut v: Vec<usize> = (0..schema.rules.len())
                .filter(|&ri| RuleCost::of_report(&schema.rules[ri]).total_part() > 0)
                .collect();
            v.sort_by_key(|&ri| {
                std::cmp::Reverse(RuleCost::of_report(&schema.rules[ri]).total_part())
            });
            v.truncate(MAX_TOTAL_RULES);
            v
        }
    };
    let mut models = Vec::new();
    let mut depends = Vec::new();
    let mut found = Sites::default();
    let mut notes = Vec::new();
    let mut fixed = schema.total_cost;
    let mut unit_groups = Vec::new();
    for &ri in &chosen {
        let r = &schema.rules[ri];
        let built = r
            .node_field_path
            .strip_prefix(fp)
            .and_then(|rest| parse_steps(&root.schema, rest))
            .and_then(|path| RuleModel::build(env, &root.schema, path, r.index as usize));
        let Some(mut m) = built else {
            if finding != Finding::Total {
                return Err(if r.compile_error.is_some() || !r.compiled_by_apiserver {
                    "no suggestion: the rule does not compile".into()
                } else {
                    "no suggestion: internal: the rule could not be found again in the schema"
                        .into()
                });
            }
            continue;
        };
        let reads = RefCell::new(Vec::new());
        let got = m.eval(env, &root.schema, Some(&reads));
        let want = RuleCost::of_report(r);
        if got != Some(want) {
            if finding == Finding::Total {
                continue;
            }
            return Err(format!(
                "no suggestion: internal: re-estimating the rule gives {:?}, the estimate {want:?}",
                got
            ));
        }
        m.base = want;
        fixed = fixed.saturating_sub(want.total_part());
        let own = rule_sites(
            env,
            &root.schema,
            &m,
            &reads.into_inner(),
            &mut found,
            &mut notes,
        );
        unit_groups.push(own);
        models.push(m);
    }
    let sites = found.sites;
    // A model depends on every site on its node's way from the root and below it.
    for m in &models {
        depends.push(
            (0..sites.len())
                .filter(|&i| {
                    let s: &Site = &sites[i];
                    s.node.starts_with(&m.node) || m.node.starts_with(&s.node)
                })
                .collect(),
        );
    }
    let units = units_of(&sites, &unit_groups);
    let (limit, before) = match finding {
        Finding::Rule(ri) => (
            PER_RULE_COST_LIMIT,
            RuleCost::of_report(&schema.rules[ri]).judged(),
        ),
        Finding::Total => (PER_SCHEMA_COST_LIMIT, schema.total_cost),
    };
    let target = match finding {
        Finding::Rule(_) => Target::Rule,
        Finding::Total => Target::Total,
    };
    let addresses = sites
        .iter()
        .map(|s: &Site| node_addresses(&root.schema, &s.node))
        .collect();
    let n_sites = sites.len();
    let mut search = Search {
        env,
        root: &mut root.schema,
        addresses,
        target,
        limit,
        settings,
        sites,
        models,
        depends,
        fixed,
        evals_left: &mut left.evals_left,
        applied: vec![None; n_sites],
        probed: HashMap::new(),
    };
    // Only the sites' bounds change during the search: a subtree is converted again only for
    // bounds below it it has not been converted with.
    let answer = crate::schema::decltype::with_conversion_memo(|| {
        let answer = search.run(units, &notes);
        search.restore();
        answer
    });
    let answer = match answer {
        Ok(a) => a,
        Err(Stop::Evaluations) => {
            return Err(format!(
                "no suggestion: the search's probes for this object ({}) are spent",
                settings.max_evaluations
            ));
        }
    };
    let groups = match answer {
        Answer::None(why) => return Err(why),
        Answer::Groups(g) => g,
    };
    let sites = search.sites;
    let mut out = Vec::new();
    let mut rejected = Vec::new();
    for g in groups {
        if left.verifications_left == 0 {
            break;
        }
        left.verifications_left -= 1;
        let bounds: Vec<(&Site, i64)> = g.bounds.iter().map(|&(i, v)| (&sites[i], v)).collect();
        let probe = Probe {
            object,
            pointers: &root.pointers,
            bounds: &bounds,
            settings,
        };
        match verify(estimator, report, (si, finding), &probe, verified) {
            Ok(after) if settings.fits(after, limit) && after < before => {
                match fits_elsewhere(others, report, (si, finding), &probe, limit, left) {
                    Ok(()) => out.push(
                        bounds
                            .iter()
                            .map(|(s, v)| suggested_bound(fp, s, *v, after))
                            .collect(),
                    ),
                    Err(e) => rejected.push(e),
                }
            }
            Ok(after) => rejected.push(format!(
                "{} gives {} once estimated whole",
                bounds
                    .iter()
                    .map(|(s, v)| format!("{}: {v} on {}", s.keyword.name(), schema_path(&s.node)))
                    .collect::<Vec<_>>()
                    .join(" and "),
                num(after)
            )),
            Err(e) => rejected.push(e),
        }
    }
    if out.is_empty() {
        return Err(if rejected.is_empty() {
            "no suggestion: the search's verifications for this object are spent".into()
        } else {
            format!(
                "no bound helps without breaking the schema: {}",
                rejected.join("; ")
            )
        });
    }
    Ok(out)
}

/// Whether bounds that fit the finding on the searched minor fit it on every other minor too
/// (each estimated whole with them, as [`verify`] does); an error naming the first that does not.
fn fits_elsewhere(
    others: &mut [Other<'_>],
    report: &ObjectReport,
    finding: (usize, Finding),
    probe: &Probe<'_>,
    limit: u64,
    left: &mut SearchBudget,
) -> Result<(), String> {
    let Probe {
        object,
        pointers,
        bounds,
        settings,
    } = *probe;
    for o in others.iter_mut() {
        // A rule another minor does not compile (or a schema it does not have) is not judged
        // there.
        let Some((osi, of)) = same_finding(report, finding, o.base) else {
            continue;
        };
        // A minor that estimates the bounded copy as the searched one does: the same answer.
        if let Some(alike) = o.alike
            && apply_bounds(object, pointers, bounds)
                .is_ok_and(|copy| alike(o.searched, o.estimator, &copy))
        {
            continue;
        }
        if left.verifications_left == 0 {
            return Err("the search's verifications for this object are spent".into());
        }
        left.verifications_left -= 1;
        let after = verify(o.estimator, o.base, (osi, of), probe, &mut o.verified)
            .map_err(|e| format!("on Kubernetes {}: {e}", o.estimator.kubernetes_version()))?;
        if !settings.fits(after, limit) {
            return Err(format!(
                "{} gives {} on Kubernetes {}",
                bounds
                    .iter()
                    .map(|(s, v)| format!("{}: {v} on {}", s.keyword.name(), schema_path(&s.node)))
                    .collect::<Vec<_>>()
                    .join(" and "),
                num(after),
                o.estimator.kubernetes_version()
            ));
        }
    }
    Ok(())
}

/// The addresses of a site's node and of its ancestors, from the root (one walk down).
fn node_addresses(root: &Schema, path: &[Step]) -> Vec<usize> {
    let mut out = Vec::with_capacity(path.len() + 1);
    let mut s = root;
    out.push(s as *const Schema as usize);
    for step in path {
        match Node::child(s, step) {
            Some(c) => {
                s = c;
                out.push(s as *const Schema as usize);
            }
            None => break,
        }
    }
    out
}

/// Applies the bounds to a copy of the object, estimates it whole, and returns the finding's
/// cost then; an error when the copy has an error the object did not have (other than costs).
fn verify(
    estimator: &Estimator,
    report: &ObjectReport,
    (si, finding): (usize, Finding),
    probe: &Probe<'_>,
    verified: &mut Verified,
) -> Result<u64, String> {
    let Probe {
        object,
        pointers,
        bounds,
        settings,
    } = *probe;
    let key = verified.key(si, bounds);
    let after = match verified.done.get(&key) {
        Some((after, steps)) => {
            // The same bounds were estimated for another finding of this object: that estimate,
            // its steps taken again as if it had run (the budgets, so the outputs, are as
            // without it).
            budget::consume(*steps);
            after.clone()
        }
        None => {
            let before = budget::steps_left();
            let copy = verified.copy.get_or_insert_with(|| object.clone());
            let after = with_bounds(copy, object, pointers, bounds, |copy| {
                Rc::new(estimator.estimate_crd(copy, &report.source))
            });
            let steps = before.saturating_sub(budget::steps_left());
            verified.done.insert(key, (after.clone(), steps));
            after
        }
    }?;
    if let Some(st) = &after.stopped {
        return Err(st.message.clone());
    }
    // A new error other than a cost one (those the search weighs).
    if let Some(e) = after
        .errors
        .iter()
        .enumerate()
        .find(|&(i, e)| after.error_cost(i).is_none() && !report.errors.contains(e))
        .map(|(_, e)| e)
    {
        return Err(format!("the bounds make the schema invalid: {e}"));
    }
    let schema = &report.schemas[si];
    let version = schema.versions.first();
    let Some(now) = after.schemas.iter().find(|s| {
        s.schema_field_path == schema.schema_field_path
            || version.is_some_and(|v| s.versions.contains(v))
    }) else {
        return Err("the schema is not estimated any more".into());
    };
    // Nothing that fit before may stop fitting (a bound looser than the request-size estimate
    // raises the rules that fall back to it).
    if now.total_cost > schema.total_cost
        && settings.fits(schema.total_cost, PER_SCHEMA_COST_LIMIT)
        && !settings.fits(now.total_cost, PER_SCHEMA_COST_LIMIT)
    {
        return Err(format!(
            "the bounds raise the schema's total to {}",
            num(now.total_cost)
        ));
    }
    for x in &now.rules {
        let was = schema
            .rules
            .iter()
            .find(|r| r.index == x.index && r.path == x.path)
            .map(|r| RuleCost::of_report(r).judged());
        let is = RuleCost::of_report(x).judged();
        if let Some(was) = was
            && is > was
            && settings.fits(was, PER_RULE_COST_LIMIT)
            && !settings.fits(is, PER_RULE_COST_LIMIT)
        {
            return Err(format!(
                "the bounds raise the rule at {} to {}",
                x.path,
                num(is)
            ));
        }
    }
    match finding {
        Finding::Total => Ok(now.total_cost),
        Finding::Rule(ri) => {
            let r = &schema.rules[ri];
            let rel = r
                .node_field_path
                .strip_prefix(schema.schema_field_path.as_str())
                .unwrap_or_default();
            now.rules
                .iter()
                .find(|x| {
                    x.index == r.index
                        && x.node_field_path
                            .strip_prefix(now.schema_field_path.as_str())
                            == Some(rel)
                })
                .map(|x| RuleCost::of_report(x).judged())
                .ok_or_else(|| "the rule is not estimated any more".to_string())
        }
    }
}

/// A copy of the object with the bounds set on every version's schema.
fn apply_bounds(
    object: &Value,
    pointers: &[String],
    bounds: &[(&Site, i64)],
) -> Result<Value, String> {
    let mut copy = object.clone();
    for p in pointers {
        for (site, v) in bounds {
            let Some(n) = json_node(&mut copy, p, &site.node) else {
                return Err(format!("{} is not in the object", schema_path(&site.node)));
            };
            if let Some(o) = n.as_object_mut() {
                o.insert(site.keyword.name().to_string(), Value::from(*v));
            }
        }
    }
    Ok(copy)
}

/// `f` of `copy` (a copy of `object`) with the bounds set as [`apply_bounds`] sets them on a
/// copy; `copy` is as it was afterwards (each member set is put back, or removed in place when
/// it was not there, so the members' order is the same too).
fn with_bounds<T>(
    copy: &mut Value,
    object: &Value,
    pointers: &[String],
    bounds: &[(&Site, i64)],
    f: impl FnOnce(&Value) -> T,
) -> Result<T, String> {
    let mut undo: Vec<(&str, &Site, Option<Value>)> = Vec::new();
    let mut missing = None;
    'set: for p in pointers {
        for (site, v) in bounds {
            let Some(n) = json_node(copy, p, &site.node) else {
                missing = Some(format!("{} is not in the object", schema_path(&site.node)));
                break 'set;
            };
            if let Some(o) = n.as_object_mut() {
                let was = o.insert(site.keyword.name().to_string(), Value::from(*v));
                undo.push((p.as_str(), *site, was));
            }
        }
    }
    let out = match missing {
        Some(e) => Err(e),
        None => Ok(f(copy)),
    };
    for (p, site, was) in undo.into_iter().rev() {
        let Some(o) = json_node(copy, p, &site.node).and_then(Value::as_object_mut) else {
            // Cannot happen (the node's bound was just set there); the copy is made again.
            *copy = object.clone();
            break;
        };
        match was {
            Some(w) => {
                o.insert(site.keyword.name().to_string(), w);
            }
            None => {
                o.shift_remove(site.keyword.name());
            }
        }
    }
    out
}

fn json_node<'v>(object: &'v mut Value, pointer: &str, path: &[Step]) -> Option<&'v mut Value> {
    node_mut(object.pointer_mut(pointer)?, path)
}

fn suggested_bound(root_field_path: &str, s: &Site, value: i64, cost_after: u64) -> Suggestion {
    let name = s.keyword.marker_name();
    let go = |path: &[Step]| schema_path(path).trim_start_matches('^').to_string();
    let (marker, on) = match (s.node.last(), s.node.iter().rev().nth(1)) {
        (Some(Step::Prop(_)), _) => (
            format!("+kubebuilder:validation:{name}={value}"),
            go(&s.node),
        ),
        (Some(Step::Items), Some(Step::Prop(_))) => (
            format!("+kubebuilder:validation:items:{name}={value}"),
            go(&s.node[..s.node.len() - 1]),
        ),
        (None, _) => (
            format!("+kubebuilder:validation:{name}={value}"),
            "(the root type)".to_string(),
        ),
        _ => (
            format!("+kubebuilder:validation:{name}={value}"),
            format!("(type of {})", go(&s.node)),
        ),
    };
    let implied_by = s
        .implied
        .as_ref()
        .filter(|_| s.is_safe(value))
        .map(|i| i.why.clone());
    Suggestion {
        path: field_path(root_field_path, &s.node),
        schema_path: schema_path(&s.node),
        keyword: s.keyword.name().to_string(),
        value,
        cost_after,
        group: 0,
        current: s.current,
        marker,
        marker_on: on,
        safe: implied_by.is_some(),
        implied_by,
    }
}

// ---------------------------------------------------------------------------------------------
// Text, for the table, markdown, SARIF and events.

/// One alternative (the bounds of one group) as a line a person can act on:
/// `add maxItems: 64 to ^.spec.tags (+kubebuilder:validation:MaxItems=64): cost 9,120,000 →
/// 570,000`; several bounds are joined with `and`, prefixed `together:`.
pub fn suggestion_line(group: &[&Suggestion], cost_before: u64) -> String {
    let parts: Vec<String> = group
        .iter()
        .map(|b| {
            let place = match b.path.strip_prefix("spec.versions[") {
                Some(rest) => {
                    format!(
                        " in spec.versions[{}",
                        rest.split_once(']').map(|x| x.0).unwrap_or_default()
                    ) + "]"
                }
                None => String::new(),
            };
            let marker = format!("{} on {}", b.marker, b.marker_on);
            match b.current {
                Some(c) => format!(
                    "lower {} from {c} to {} on {}{place} ({marker})",
                    b.keyword, b.value, b.schema_path
                ),
                None => format!(
                    "add {}: {} to {}{place} ({marker})",
                    b.keyword, b.value, b.schema_path
                ),
            }
        })
        .collect();
    // What each bound changes for the API's users, after the numbers (a line cut to fit, as
    // an apply-time warning is, keeps them): safe, or breaking.
    let notes: Vec<String> = group
        .iter()
        .filter_map(|b| {
            let whose = if group.len() > 1 {
                format!("{} on {}: ", b.keyword, b.schema_path)
            } else {
                String::new()
            };
            match (&b.implied_by, b.breaks()) {
                (Some(why), _) => Some(format!("safe: {whose}{why}")),
                (None, true) => Some(format!(
                    "breaking: {whose}{}, accepted today, are refused from then on",
                    b.refused()
                )),
                (None, false) => None,
            }
        })
        .collect();
    let prefix = if parts.len() > 1 { "together: " } else { "" };
    let after = group.first().map(|b| b.cost_after).unwrap_or_default();
    let mut line = format!(
        "{prefix}{}: cost {} → {}",
        parts.join(" and "),
        num(cost_before),
        num(after)
    );
    for n in notes {
        line.push_str("; ");
        line.push_str(&n);
    }
    line
}

/// Every alternative as a line (those after the first start with `or: `), or the reason none
/// helps.
pub fn suggestion_lines(
    suggestions: &[Suggestion],
    none: Option<&str>,
    before: u64,
) -> Vec<String> {
    let groups = suggestion_groups(suggestions);
    let mut out: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let l = suggestion_line(g, before);
            if i == 0 { l } else { format!("or: {l}") }
        })
        .collect();
    if !out.is_empty() && groups.iter().all(|g| g.len() > 1) {
        out[0] = format!("{} (no single bound does it)", out[0]);
    }
    if out.is_empty()
        && let Some(n) = none
    {
        out.push(n.to_string());
    }
    out
}

/// A rule's best suggestion as one line, or why none helps; `None` when the rule needs none.
pub fn suggestion_text(r: &RuleReport) -> Option<String> {
    suggestion_lines(
        &r.suggestions,
        r.no_suggestion.as_deref(),
        RuleCost::of_report(r).judged(),
    )
    .into_iter()
    .next()
}

/// A schema total's best suggestion as one line, or why none helps; `None` when it needs none.
pub fn schema_suggestion_text(s: &SchemaReport) -> Option<String> {
    suggestion_lines(&s.suggestions, s.no_suggestion.as_deref(), s.total_cost)
        .into_iter()
        .next()
}

/// The object with the first suggestion of every finding applied (the lowest value where two
/// set the same bound): what the test suite estimates again to check that it is accepted.
pub fn apply_first_suggestions(object: &Value, report: &ObjectReport) -> Value {
    let mut wanted: Vec<(String, String, i64)> = Vec::new();
    let firsts = report.schemas.iter().flat_map(|s| {
        s.rules
            .iter()
            .map(|r| &r.suggestions)
            .chain(std::iter::once(&s.suggestions))
            .filter_map(|v| suggestion_groups(v).into_iter().next())
    });
    for g in firsts {
        for b in g {
            match wanted
                .iter_mut()
                .find(|w| w.0 == b.path && w.1 == b.keyword)
            {
                Some(w) => w.2 = w.2.min(b.value),
                None => wanted.push((b.path.clone(), b.keyword.clone(), b.value)),
            }
        }
    }
    let mut copy = object.clone();
    for s in &report.schemas {
        let Some(root) = Root::read(object, &s.schema_field_path, &s.versions) else {
            continue;
        };
        for (path, keyword, value) in &wanted {
            let Some(rest) = path.strip_prefix(s.schema_field_path.as_str()) else {
                continue;
            };
            let Some(steps) = parse_steps(&root.schema, rest) else {
                continue;
            };
            for p in &root.pointers {
                if let Some(o) = json_node(&mut copy, p, &steps).and_then(Value::as_object_mut) {
                    o.insert(keyword.clone(), Value::from(*value));
                }
            }
        }
    }
    copy
}

#[cfg(test)]
mod tests;
