//! Cheaper rules: a catalog of costly patterns seen in real CRDs ([`catalog`]), each rewritten to
//! a form that says the same for less. A rewrite is offered only when
//!
//! - the estimator says it is cheaper: the rewritten rule is compiled and estimated at the same
//!   schema node of the same CRD, with the same estimator ([`site`]); both numbers are shown,
//!   and the saving is at least [`Options::min_saving`] cost units and
//!   [`Options::min_saving_percent`] of the rule's cost;
//! - it is equivalent: the original and the rewrite, evaluated with the `cel` crate's
//!   interpreter on [`Options::cases`] values generated from the node's schema (deterministic;
//!   empty, absent, duplicate, boundary and unicode values among them), give the same value or
//!   both fail ([`check`]). Rules calling a function the interpreter does not evaluate as cel-go
//!   does are not rewritten.
//!
//! A schema rewrite (a uniqueness rule replaced by `x-kubernetes-list-type`) is checked the same
//! way against what the list type enforces, and verified by estimating the changed CRD: no new
//! error at the node, and a lower total.
//!
//! Pure: no IO. Bounded: patterns are matched first (cheap), the estimate and the evaluations
//! only for rules a pattern matches and whose cost allows the saving; each rule's work runs
//! under its own work budget ([`Options::steps`]), and generated values are bounded in size.

pub mod catalog;
pub mod check;
pub mod generate;
pub mod site;
pub use celcost_core::cel::unparse;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use celcost_core::budget::{self, Limits};
use celcost_core::cel::ast::Expr;
use celcost_core::cel::env::Env;
use celcost_core::cel::eval::{Interpreter, Val};
use celcost_core::cel::parse::{ParserOptions, parse_unexpanded};
use celcost_core::estimate::Estimator;
use celcost_core::report::{ObjectReport, Rewrite, RuleReport};
use celcost_core::schema::path::Step;
use celcost_core::schema::{Schema, ValidationRule};

use catalog::{EXPRESSION_PATTERNS, ListChange, UniqueBy};
use check::{Subject, Verdict};
use generate::same_key;
use site::{NodePath, Site, times};

/// Adds cheaper rewrites of a CRD's rules to its report (this module), each rule's search
/// within a work budget of its own; a search that stops leaves its rule without. (Here rather
/// than in `celcost_core::estimate`, which gives no advice.)
pub fn offer_rewrites(estimator: &Estimator, crd: &Value, report: &mut ObjectReport) {
    offer_rewrites_in(estimator, crd, report, Scope::All);
}

/// As [`offer_rewrites`], for the rules of `scope` only.
pub fn offer_rewrites_in(
    estimator: &Estimator,
    crd: &Value,
    report: &mut ObjectReport,
    scope: Scope,
) {
    let opts = Options {
        scope,
        ..Options::default()
    };
    stacker::grow(celcost_core::estimate::OBJECT_STACK, || {
        offer(estimator.env(), crd, report, &opts)
    });
}

/// Which rules get cheaper rewrites offered. Looking for them costs more than the estimate (each
/// candidate is estimated and evaluated on generated values), so by default only the rules a
/// user would act on are searched.
/// `--rewrites`: which CRD rules get cheaper rewrites offered ([`Scope`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Rewrites {
    Near,
    All,
    Off,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scope {
    /// No rule.
    Off,
    /// Rules at or above this percent of the per-rule limit (or over it), and every rule of a
    /// schema whose total is at or above this percent of the per-schema limit (or over it): the
    /// near-budget threshold of the run.
    NearBudget(f64),
    /// Every rule whose cost allows the saving.
    All,
}

impl Default for Scope {
    fn default() -> Self {
        Scope::NearBudget(celcost_core::report::DEFAULT_NEAR_BUDGET_PERCENT)
    }
}

impl Scope {
    /// The scope `--rewrites` names, with the run's near-budget percent.
    pub fn of(rewrites: Rewrites, near_budget_percent: f64) -> Scope {
        match rewrites {
            Rewrites::Off => Scope::Off,
            Rewrites::Near => Scope::NearBudget(near_budget_percent),
            Rewrites::All => Scope::All,
        }
    }

    /// Whether a schema's rules are searched at all, and with what rule threshold: `Some(0)`
    /// for every rule, `None` for none.
    fn rule_floor(&self, schema: &celcost_core::report::SchemaReport) -> Option<u64> {
        match *self {
            Scope::Off => None,
            Scope::All => Some(0),
            Scope::NearBudget(percent) => {
                let at = |limit: u64| (limit as f64 * percent / 100.0).ceil() as u64;
                if schema.exceeds_total_limit
                    || schema.total_cost >= at(celcost_core::report::PER_SCHEMA_COST_LIMIT)
                {
                    Some(0)
                } else {
                    Some(at(celcost_core::report::PER_RULE_COST_LIMIT))
                }
            }
        }
    }
}

/// When rewrites are offered, and how hard they are checked.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Generated values each rewrite is checked on.
    pub cases: usize,
    /// The least saving worth a rewrite, in cost units (× cardinality)...
    pub min_saving: u64,
    /// ... and in percent of the rule's cost.
    pub min_saving_percent: u64,
    /// Work budget of one rule's rewrites (steps, as [`celcost_core::budget`] counts them).
    pub steps: u64,
    /// Which rules are searched.
    pub scope: Scope,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cases: 200,
            min_saving: 1_000,
            min_saving_percent: 10,
            steps: 2_000_000,
            scope: Scope::All,
        }
    }
}

/// Adds the rewrites of every rule of a CRD's report (`crd` is the object estimated).
pub fn offer(env: &Env, crd: &Value, report: &mut ObjectReport, opts: &Options) {
    if report.kind != "CustomResourceDefinition" || report.stopped.is_some() {
        return;
    }
    let mut roots: HashMap<Option<usize>, Option<Rc<Schema>>> = HashMap::new();
    for si in 0..report.schemas.len() {
        let Some(floor) = opts.scope.rule_floor(&report.schemas[si]) else {
            continue;
        };
        for ri in 0..report.schemas[si].rules.len() {
            let r = &report.schemas[si].rules[ri];
            if !r.compiled_by_apiserver
                || r.compile_error.is_some()
                || r.cost < opts.min_saving
                || (r.cost < floor && !r.exceeds_cost_limit)
                || r.rule.trim().is_empty()
            {
                continue;
            }
            let limits = Limits {
                steps: opts.steps,
                ..Limits::default()
            };
            let found = budget::run(limits, || rewrites_of(env, crd, r, &mut roots, opts));
            if let Ok(rewrites) = found {
                report.schemas[si].rules[ri].rewrites = rewrites;
            }
        }
        keep_one_list_type_per_node(&mut report.schemas[si].rules);
    }
}

/// A list has one list type: when several rules of a node would each set it (with different
/// keys), only the costliest rule's change is offered.
fn keep_one_list_type_per_node(rules: &mut [RuleReport]) {
    let changes = |r: &RuleReport| {
        r.rewrites
            .iter()
            .any(|rw| rw.pattern == catalog::UNIQUENESS_TO_LIST_TYPE.name)
    };
    let mut best: HashMap<String, (usize, u64)> = HashMap::new();
    for (i, r) in rules.iter().enumerate() {
        if changes(r) {
            let e = best.entry(r.node_field_path.clone()).or_insert((i, r.cost));
            if r.cost > e.1 {
                *e = (i, r.cost);
            }
        }
    }
    for (i, r) in rules.iter_mut().enumerate() {
        if changes(r) && best.get(&r.node_field_path).is_some_and(|b| b.0 != i) {
            r.rewrites
                .retain(|rw| rw.pattern != catalog::UNIQUENESS_TO_LIST_TYPE.name);
        }
    }
}

/// Whether the text calls one of the functions every pattern starts from (`filter`, `map`,
/// `matches`, `all`, `exists`, `exists_one`): rules that do not are not parsed again.
fn may_match(text: &str) -> bool {
    const NAMES: &[&str] = &["filter", "map", "matches", "all", "exists", "exists_one"];
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if word(b[i]) && (i == 0 || !word(b[i - 1])) {
            let start = i;
            while i < b.len() && word(b[i]) {
                i += 1;
            }
            let mut j = i;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < b.len() && b[j] == b'(' && NAMES.contains(&&text[start..i]) {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

/// A rewrite before it is estimated and checked.
struct Candidate {
    pattern: String,
    text: String,
    expr: Expr,
}

thread_local! {
    static INTERPRETERS: RefCell<HashMap<ParserOptions, Rc<Interpreter>>> = RefCell::new(HashMap::new());
}

fn interpreter(opts: ParserOptions) -> Rc<Interpreter> {
    INTERPRETERS.with(|m| {
        m.borrow_mut()
            .entry(opts)
            .or_insert_with(|| Rc::new(Interpreter::new(opts)))
            .clone()
    })
}

/// Checks already made, by what decides them: the rule, the candidate (or the list type's
/// keys), the node's path below its root and its schema, the options. A check is deterministic
/// in these, and many CRDs repeat a rule on the same node (every version of a shared-looking
/// schema, the standard and experimental channels of a project): those are checked once.
/// Bounded: cleared when full.
const CHECKED_CAPACITY: usize = 4096;

thread_local! {
    static CHECKED: RefCell<HashMap<u64, Verdict>> = RefCell::new(HashMap::new());
    /// Rules no pattern matches (as written, so they are not parsed again), and list-type
    /// changes already estimated (by the skeleton, the change and the rule removed).
    static NO_PATTERN: RefCell<std::collections::HashSet<(ParserOptions, String)>> =
        RefCell::new(std::collections::HashSet::new());
    static ESTIMATED: RefCell<HashMap<u64, bool>> = RefCell::new(HashMap::new());
}

fn checked(key: u64, check: impl FnOnce() -> Verdict) -> Verdict {
    if let Some(v) = CHECKED.with(|c| c.borrow().get(&key).cloned()) {
        return v;
    }
    let v = check();
    CHECKED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CHECKED_CAPACITY {
            c.clear();
        }
        c.insert(key, v.clone());
    });
    v
}

/// The key of a check: `what` is checked of `rule` at the node (its path and schema).
fn check_key(env: &Env, node: &str, r: &RuleReport, what: &str, opts: &Options) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (env.parser, node, &r.rule, r.uses_old_self, what, opts.cases).hash(&mut h);
    h.finish()
}

/// A stable seed per rule.
fn seed_of(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The expression rewrites of a rule: each pattern alone, then all of them together.
fn candidates(surface: &Expr) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut all = surface.clone();
    let mut fired = Vec::new();
    for (p, t) in EXPRESSION_PATTERNS {
        let (e, n) = catalog::rewrite_everywhere(surface, *t);
        if n == 0 {
            continue;
        }
        if let Some(text) = unparse::unparse(&e) {
            out.push(Candidate {
                pattern: p.name.to_string(),
                text,
                expr: e,
            });
        }
        let (e2, n2) = catalog::rewrite_everywhere(&all, *t);
        if n2 > 0 {
            all = e2;
            fired.push(p.name);
        }
    }
    if fired.len() > 1
        && let Some(text) = unparse::unparse(&all)
    {
        out.push(Candidate {
            pattern: fired.join(" + "),
            text,
            expr: all,
        });
    }
    out
}

fn rewrites_of(
    env: &Env,
    crd: &Value,
    r: &RuleReport,
    roots: &mut HashMap<Option<usize>, Option<Rc<Schema>>>,
    opts: &Options,
) -> Vec<Rewrite> {
    if !may_match(&r.rule)
        || NO_PATTERN.with(|n| n.borrow().contains(&(env.parser, r.rule.clone())))
    {
        return vec![];
    }
    let Ok(parsed) = parse_unexpanded(&r.rule, env.parser) else {
        return vec![];
    };
    let surface = parsed.expr;
    let cands = candidates(&surface);
    let unique = catalog::uniqueness_shape(&surface);
    if cands.is_empty() && unique.is_none() {
        NO_PATTERN.with(|n| {
            let mut n = n.borrow_mut();
            if n.len() >= CHECKED_CAPACITY {
                n.clear();
            }
            n.insert((env.parser, r.rule.clone()));
        });
        return vec![];
    }
    // The node, typed as the estimator typed it.
    let Some(path) = NodePath::parse(&r.node_field_path) else {
        return vec![];
    };
    let root = roots
        .entry(path.version)
        .or_insert_with(|| {
            let raw = path.roots(crd).into_iter().next()?;
            Schema::from_json(raw, "schema").ok().map(Rc::new)
        })
        .clone();
    let Some(root) = root else { return vec![] };
    let Some(site) = Site::locate(env, &root, &path) else {
        return vec![];
    };
    let Some(original) = site.node.x_validations.get(r.index as usize) else {
        return vec![];
    };
    // The same rule, the same estimate: anything else means the node was not found as the
    // estimator found it.
    if original.rule != r.rule
        || original.optional_old_self == Some(true)
        || site.max_cost(env, original, &r.rule) != Some(r.max_cost)
    {
        return vec![];
    }
    if !Interpreter::supports(&surface) {
        return vec![];
    }
    let interp = interpreter(env.parser);
    let rule = Located {
        env,
        crd,
        r,
        path: &path,
        surface: &surface,
        subject: Subject {
            interpreter: &interp,
            schema: &site.node,
            decl: &site.decl,
            uses_old_self: r.uses_old_self,
            cases: opts.cases,
            seed: seed_of(&r.rule),
        },
        opts,
        node_key: std::cell::OnceCell::new(),
    };
    let mut out = Vec::new();
    out.extend(rule.expression_rewrite(&site, original, cands));
    if let Some(by) = unique {
        out.extend(rule.uniqueness_rewrite(&site, by));
    }
    out
}

/// A rule found again on its node and typed as the estimator typed it: what its rewrites are
/// checked against.
struct Located<'a> {
    env: &'a Env,
    crd: &'a Value,
    r: &'a RuleReport,
    path: &'a NodePath,
    surface: &'a Expr,
    subject: Subject<'a>,
    opts: &'a Options,
    node_key: std::cell::OnceCell<String>,
}

impl Located<'_> {
    /// What decides a check about the node: its path below the root and its schema (written
    /// out only when a check is due: a root's schema is the whole CRD's).
    fn node_key(&self) -> &str {
        self.node_key.get_or_init(|| {
            format!(
                "{:?} {}",
                self.path.steps,
                self.path
                    .roots(self.crd)
                    .first()
                    .and_then(|raw| self.path.node(raw))
                    .map(Value::to_string)
                    .unwrap_or_default()
            )
        })
    }

    /// Whether a cost of `cost_after` saves enough to be offered.
    fn worth(&self, cost_after: u64) -> bool {
        let (r, opts) = (self.r, self.opts);
        let saving = r.cost.saturating_sub(cost_after);
        saving >= opts.min_saving
            && (saving as u128) * 100 >= (r.cost as u128) * (opts.min_saving_percent as u128)
    }

    /// The cheapest expression rewrite that checks out as the same rule, if one does.
    fn expression_rewrite(
        &self,
        site: &Site,
        original: &ValidationRule,
        cands: Vec<Candidate>,
    ) -> Option<Rewrite> {
        let (env, r) = (self.env, self.r);
        let mut costed: Vec<(u64, u64, Candidate)> = cands
            .into_iter()
            .filter_map(|c| {
                let max_after = site.max_cost(env, original, &c.text)?;
                let cost_after = times(max_after, r.cardinality_used);
                (max_after < r.max_cost && self.worth(cost_after))
                    .then_some((max_after, cost_after, c))
            })
            .collect();
        costed.sort_by_key(|(m, _, c)| (*m, c.pattern.len()));
        costed.into_iter().find_map(|(max_after, cost_after, c)| {
            if !Interpreter::supports(&c.expr) {
                return None;
            }
            let key = check_key(env, self.node_key(), r, &c.text, self.opts);
            let Verdict::Equivalent { cases } = checked(key, || {
                check::same_results(&self.subject, (&r.rule, self.surface), (&c.text, &c.expr))
            }) else {
                return None;
            };
            Some(Rewrite {
                pattern: c.pattern,
                rule: c.text,
                max_cost_before: r.max_cost,
                max_cost_after: max_after,
                cost_before: r.cost,
                cost_after,
                checked_cases: cases,
                schema_change: None,
            })
        })
    }

    /// The uniqueness rule replaced by the list type that enforces it (or dropped where the
    /// list type already does), when that checks out and the estimate agrees.
    fn uniqueness_rewrite(&self, site: &Site, by: UniqueBy) -> Option<Rewrite> {
        let (env, r) = (self.env, self.r);
        if !self.worth(0) {
            return None;
        }
        let change = catalog::list_change(&site.node, &by)?;
        let already = change == ListChange::AlreadyEnforced;
        let keys: Vec<String> = match &by {
            UniqueBy::Fields(f) => f.clone(),
            UniqueBy::Items => vec![],
        };
        let oracle = |v: &Val| -> bool {
            if already {
                return true;
            }
            let Val::List(items) = v else { return false };
            let key_of = |x: &Val| -> Vec<Option<Val>> {
                if keys.is_empty() {
                    vec![Some(x.clone())]
                } else {
                    keys.iter().map(|k| x.get(k).cloned()).collect()
                }
            };
            let ks: Vec<_> = items.iter().map(key_of).collect();
            (0..ks.len()).all(|i| (0..i).all(|j| !same_key(&ks[i], &ks[j])))
        };
        let key = check_key(
            env,
            self.node_key(),
            r,
            &format!("{by:?} {change:?}"),
            self.opts,
        );
        let Verdict::Equivalent { cases } = checked(key, || {
            check::same_as_oracle(&self.subject, (&r.rule, self.surface), &oracle, already)
        }) else {
            return None;
        };
        if !verified_by_estimate(env, self.crd, r, self.path, &change) {
            return None;
        }
        Some(Rewrite {
            pattern: if already {
                catalog::UNIQUENESS_ALREADY_ENFORCED.name
            } else {
                catalog::UNIQUENESS_TO_LIST_TYPE.name
            }
            .to_string(),
            rule: String::new(),
            max_cost_before: r.max_cost,
            max_cost_after: 0,
            cost_before: r.cost,
            cost_after: 0,
            checked_cases: cases,
            schema_change: change.describe(&r.path),
        })
    }
}

/// Applies the list-type change and the rule's removal to the CRD and estimates it, before
/// and after: the change holds when the API server has nothing to say about the node and the
/// schema's total is lower. Estimated on the CRD's skeleton for the node (the path to it,
/// with the scalar fields of its ancestors, and the node's whole subtree), which keeps the
/// node's checks and costs and leaves out the rest of a large CRD.
fn verified_by_estimate(
    env: &Env,
    crd: &Value,
    r: &RuleReport,
    path: &NodePath,
    change: &ListChange,
) -> bool {
    let before = skeleton(crd, path);
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let what = format!("{change:?} {} {}", r.node_field_path, r.index);
        // The estimator's version (its minor's rules, by identity).
        let minor = std::ptr::from_ref(env.minor) as usize;
        let version = (minor, env.kubernetes, env.compatibility, env.parser);
        (version, before.to_string(), what).hash(&mut h);
        h.finish()
    };
    if let Some(known) = ESTIMATED.with(|e| e.borrow().get(&key).copied()) {
        return known;
    }
    let verified = estimate_change(env, before, r, path, change);
    ESTIMATED.with(|e| {
        let mut e = e.borrow_mut();
        if e.len() >= CHECKED_CAPACITY {
            e.clear();
        }
        e.insert(key, verified);
    });
    verified
}

/// [`verified_by_estimate`] on the skeleton `before`.
fn estimate_change(
    env: &Env,
    before: Value,
    r: &RuleReport,
    path: &NodePath,
    change: &ListChange,
) -> bool {
    let mut after = before.clone();
    let versions: Vec<usize> = match path.version {
        Some(i) => vec![i],
        None => (0..after
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map_or(0, Vec::len))
            .collect(),
    };
    for i in versions {
        let Some(root) = after.pointer_mut(&format!("/spec/versions/{i}/schema/openAPIV3Schema"))
        else {
            continue;
        };
        let Some(node) = path.node_mut(root) else {
            return false;
        };
        let Some(obj) = node.as_object_mut() else {
            return false;
        };
        match change {
            ListChange::Map { keys, .. } => {
                obj.insert("x-kubernetes-list-type".into(), Value::from("map"));
                obj.insert(
                    "x-kubernetes-list-map-keys".into(),
                    Value::from(keys.clone()),
                );
            }
            ListChange::Set { .. } => {
                obj.insert("x-kubernetes-list-type".into(), Value::from("set"));
            }
            ListChange::AlreadyEnforced => {}
        }
        let Some(Value::Array(rules)) = obj.get_mut("x-kubernetes-validations") else {
            return false;
        };
        if (r.index as usize) < rules.len() {
            rules.remove(r.index as usize);
        }
        if rules.is_empty() {
            obj.remove("x-kubernetes-validations");
        }
    }
    let total = |report: &ObjectReport| {
        report
            .schemas
            .iter()
            .find(|s| match path.version {
                None => s.schema_field_path == "spec.validation.openAPIV3Schema",
                Some(i) => {
                    s.schema_field_path == format!("spec.versions[{i}].schema.openAPIV3Schema")
                }
            })
            .map(|s| s.total_cost)
    };
    let before = celcost_core::crd::estimate_crd(env, &before, "rewrite");
    let after = celcost_core::crd::estimate_crd(env, &after, "rewrite");
    // An error about the node itself, its list type or its items.
    let node = r.node_field_path.as_str();
    let at_node = |e: &celcost_core::report::ErrorParts| {
        e.field.strip_prefix(node).is_some_and(|rest| {
            rest.is_empty() || rest.starts_with(".x-kubernetes-list") || rest.starts_with(".items")
        })
    };
    !after.error_parts.iter().any(at_node)
        && matches!((total(&before), total(&after)), (Some(b), Some(a)) if a < b)
}

/// The CRD with each schema root reduced to the path to the node: the ancestors keep their
/// own keywords (not their rules or value validations) and their scalar fields, the node its
/// whole subtree.
fn skeleton(crd: &Value, path: &NodePath) -> Value {
    fn prune(s: &Value, steps: &[Step]) -> Value {
        let Some((step, rest)) = steps.split_first() else {
            return s.clone();
        };
        let Some(obj) = s.as_object() else {
            return s.clone();
        };
        let compound = |v: &Value| {
            ["properties", "items", "additionalProperties"]
                .iter()
                .any(|k| {
                    v.get(k)
                        .is_some_and(|x| !x.is_null() && x != &Value::Bool(true))
                })
        };
        let mut out = serde_json::Map::new();
        for (k, v) in obj {
            match k.as_str() {
                "properties" => {
                    let mut props = serde_json::Map::new();
                    if let Some(ps) = v.as_object() {
                        for (name, p) in ps {
                            if matches!(step, Step::Prop(n) if n == name) {
                                props.insert(name.clone(), prune(p, rest));
                            } else if !compound(p) {
                                let mut leaf = p.clone();
                                if let Some(l) = leaf.as_object_mut() {
                                    l.remove("x-kubernetes-validations");
                                }
                                props.insert(name.clone(), leaf);
                            }
                        }
                    }
                    out.insert(k.clone(), Value::Object(props));
                }
                "items" if matches!(step, Step::Items) => {
                    out.insert(k.clone(), prune(v, rest));
                }
                "additionalProperties" if matches!(step, Step::Values) => {
                    out.insert(k.clone(), prune(v, rest));
                }
                "items"
                | "additionalProperties"
                | "x-kubernetes-validations"
                | "allOf"
                | "anyOf"
                | "oneOf"
                | "not"
                | "required" => {}
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        // Required scalar fields stay required (list-map keys among them).
        if let (Some(req), Some(Value::Object(props))) = (
            obj.get("required").and_then(Value::as_array),
            out.get("properties"),
        ) {
            let kept: Vec<Value> = req
                .iter()
                .filter(|r| r.as_str().is_some_and(|n| props.contains_key(n)))
                .cloned()
                .collect();
            out.insert("required".into(), Value::from(kept));
        }
        Value::Object(out)
    }
    let mut copy = crd.clone();
    if let Some(versions) = copy
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut)
    {
        for v in versions {
            if let Some(root) = v.pointer_mut("/schema/openAPIV3Schema") {
                *root = prune(root, &path.steps);
            }
        }
    }
    copy
}

/// One rewrite as a line a person can act on: `<rule> — 1,572,880 → 55 (pattern …, equivalent
/// on 200 generated values)`.
pub fn rewrite_line(rw: &Rewrite) -> String {
    let what = match (&rw.schema_change, rw.rule.is_empty()) {
        (Some(change), true) => change.clone(),
        (Some(change), false) => format!("{} ({change})", rw.rule),
        (None, _) => rw.rule.clone(),
    };
    format!(
        "{what} — {} → {} (pattern {}, equivalent on {} generated values)",
        celcost_core::report::format::num(rw.cost_before),
        celcost_core::report::format::num(rw.cost_after),
        rw.pattern,
        rw.checked_cases
    )
}

/// The rule's rewrite that saves most, short, for other outputs (SARIF, GitHub annotations):
/// `` `self.exists(x, x == 'b')` costs 6,291,452 instead of 15,728,639 (filter-size-to-exists,
/// equivalent on 200 generated values) ``.
pub fn rewrite_text(r: &RuleReport) -> Option<String> {
    let rw = r.rewrites.iter().min_by_key(|rw| rw.cost_after)?;
    let what = match (&rw.schema_change, rw.rule.is_empty()) {
        (Some(change), true) => change.clone(),
        (Some(change), false) => format!("`{}` ({change})", rw.rule),
        (None, _) => format!("`{}`", rw.rule),
    };
    Some(format!(
        "{what} costs {} instead of {} ({}, equivalent on {} generated values)",
        celcost_core::report::format::num(rw.cost_after),
        celcost_core::report::format::num(rw.cost_before),
        rw.pattern,
        rw.checked_cases
    ))
}

/// What the rewrites of a schema's rules save of its total, for other outputs:
/// `2 rules have cheaper forms that save 1,234,567 of the total (see the rules)`.
pub fn schema_rewrites_text(s: &celcost_core::report::SchemaReport) -> Option<String> {
    let saved: Vec<u64> = s
        .rules
        .iter()
        .filter_map(|r| {
            r.rewrites
                .iter()
                .map(|rw| rw.cost_before.saturating_sub(rw.cost_after))
                .max()
        })
        .collect();
    if saved.is_empty() {
        return None;
    }
    let total = saved.iter().fold(0u64, |a, b| a.saturating_add(*b));
    Some(format!(
        "{} rule{} {} cheaper forms that save {} of the total (see the rules)",
        saved.len(),
        if saved.len() == 1 { "" } else { "s" },
        if saved.len() == 1 { "has" } else { "have" },
        celcost_core::report::format::num(total)
    ))
}

#[cfg(test)]
mod tests;
