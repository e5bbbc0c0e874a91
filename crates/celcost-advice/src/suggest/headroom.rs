//! Headroom: for every list, map and string node of a CRD whose size a rule's or a total's cost
//! depends on, the largest `maxItems` / `maxProperties` / `maxLength` (every other bound as it
//! is) at which the CRD stays within the cost limits (or under a share of them) on every minor
//! judged, and what refuses one more. Pure: no IO.
//!
//! # How
//!
//! The nodes are the suggestion search's *sites* ([`super::sites`]) of every rule of a schema:
//! the lists and maps above a rule (its cardinality) and the strings, lists and maps it reads.
//! The cost is monotone non-decreasing in each bound, so each node's answer is a search:
//! galloping up from its bound now (doubling) to the first value refused, then a binary search
//! between the last value accepted and it — O(log V) probes. A probe costs only the rules on
//! the node's way from the root and below it again, each with its compiled expression
//! ([`RuleModel`]), on every minor; the schema's total is the rest of it (as estimated) plus
//! those rules' parts. The answer is then **verified** by whole estimates of the object with
//! the bound at `max` (accepted on every minor) and at `max + 1` (refused on one); where a
//! verification disagrees with the models (or a rule has no model), the node is searched again
//! with whole estimates as probes.
//!
//! # What "refused" means here
//!
//! A value is refused when, on some minor judged, one of the rules whose cost reads the node
//! goes over the per-rule limit (or, with a share, reaches it), or the schema's total goes over
//! the per-schema limit. Other validation errors of the CRD are not weighed. `maxLength` is
//! searched up to `i64::MAX / 4` (the API server counts 4 bytes a character in int64: above
//! that the product wraps), `maxItems` and `maxProperties` up to `i64::MAX`; accepted there, the
//! node's answer is `max: null` (any). Refused even at 0 (the cost is in what the bound does not
//! change), it is `max: -1`.

use std::cell::RefCell;

use serde::Serialize;
use serde_json::Value;

use celcost_core::budget;
use celcost_core::estimate::Estimator;
use celcost_core::report::{
    Keyword, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, SchemaReport,
    judged_rule_cost,
};
use celcost_core::schema::path::{Step, field_path, parse as parse_steps, walk_mut as node_mut};

use super::model::{RuleCost, RuleModel};
use super::sites::{Sites, rule_sites};
use super::{Alike, Root, SEARCH_STACK, Settings};

/// What a headroom search judges by.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeadroomSettings {
    /// Stay below this percent of the limits, not only within them.
    pub near_budget_percent: Option<f64>,
    /// Only the node of this `nodeFieldPath` (as the estimate names it).
    pub field: Option<String>,
}

impl HeadroomSettings {
    fn fits(&self, cost: u64, limit: u64) -> bool {
        match self.near_budget_percent {
            Some(p) => Settings::new(p).fits(cost, limit),
            None => cost <= limit,
        }
    }
}

/// One object's headroom (one JSON line).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectHeadroom {
    pub source: String,
    pub kind: String,
    pub name: String,
    pub kubernetes_versions: Vec<String>,
    pub schemas: Vec<SchemaHeadroom>,
    /// Why the object has no answer (not a CRD, an estimate that stopped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// An estimate stopped over its work budget (the exit status is 2).
    #[serde(skip)]
    pub stopped: bool,
}

/// The headroom of the nodes of one schema (the versions that serve it).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaHeadroom {
    pub versions: Vec<String>,
    pub bounds: Vec<Headroom>,
}

/// One node's headroom.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Headroom {
    /// The node as the estimate's `nodeFieldPath` names it.
    pub path: String,
    pub keyword: Keyword,
    /// Its bound now (`None`: unbounded).
    pub current: Option<i64>,
    /// The largest value accepted on every minor (`None`: any; `-1`: not even 0).
    pub max: Option<i64>,
    /// What refuses `max + 1` (`None` with `max: None`).
    pub limited_by: Option<LimitedBy>,
}

/// The rule or total that goes over at `max + 1`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitedBy {
    /// `rule` or `total`.
    pub kind: &'static str,
    /// The rule's path (`^.spec.x`), or the schema's field path for a total.
    pub path: String,
    /// The rule's index in its node's `x-kubernetes-validations`.
    pub index: Option<u64>,
    pub kubernetes_version: String,
    pub cost_at_max_plus_one: u64,
}

/// The headroom of one object, judged by `estimators` (oldest first; the newest names the
/// schemas); `alike` (a range's `RangeEstimator::estimate_alike`) spares the verifications of
/// minors that estimate a copy alike. Objects that are not CRDs get a note and no schemas.
pub fn headroom(
    estimators: &[&Estimator],
    alike: Option<Alike<'_>>,
    source: &str,
    object: &Value,
    settings: &HeadroomSettings,
) -> ObjectHeadroom {
    stacker::grow(SEARCH_STACK, || {
        headroom_on_this_stack(estimators, alike, source, object, settings)
    })
}

fn headroom_on_this_stack(
    estimators: &[&Estimator],
    alike: Option<Alike<'_>>,
    source: &str,
    object: &Value,
    settings: &HeadroomSettings,
) -> ObjectHeadroom {
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut out = ObjectHeadroom {
        source: source.to_string(),
        kind: text("/kind"),
        name: text("/metadata/name"),
        kubernetes_versions: estimators.iter().map(|e| e.minor().label()).collect(),
        schemas: Vec::new(),
        note: None,
        stopped: false,
    };
    if out.kind != "CustomResourceDefinition" {
        out.note = Some(format!(
            "a {}, not a CustomResourceDefinition: headroom is of CRD schemas",
            if out.kind.is_empty() {
                "object without a kind"
            } else {
                &out.kind
            }
        ));
        return out;
    }
    if estimators.is_empty() {
        out.note = Some("no Kubernetes minor to judge by".into());
        return out;
    }
    let bases: Vec<ObjectReport> = estimators
        .iter()
        .map(|e| e.estimate_crd(object, source))
        .collect();
    if let Some((e, st)) = estimators
        .iter()
        .zip(&bases)
        .find_map(|(e, r)| r.stopped.as_ref().map(|s| (e, s)))
    {
        out.stopped = true;
        out.note = Some(format!(
            "the estimate on Kubernetes {} stopped: {}",
            e.minor().label(),
            st.message
        ));
        return out;
    }
    let newest = &bases[bases.len() - 1];
    for schema in &newest.schemas {
        let Some(mut root) = Root::read(object, &schema.schema_field_path, &schema.versions) else {
            continue;
        };
        let cx = Cx {
            estimators,
            bases: &bases,
            object,
            source,
            settings,
            fp: &schema.schema_field_path,
            alike,
            copy: RefCell::new(None),
        };
        let limits = estimators[0].limits();
        let (res, _) = budget::run_measured(limits, || cx.schema(&mut root));
        match res {
            Ok(bounds) => out.schemas.push(SchemaHeadroom {
                versions: schema.versions.clone(),
                bounds,
            }),
            Err(stop) => {
                out.stopped = true;
                out.note = Some(format!(
                    "the search over {} stopped: {stop}",
                    schema.schema_field_path
                ));
                return out;
            }
        }
    }
    out
}

/// What one object's search shares.
struct Cx<'a> {
    estimators: &'a [&'a Estimator],
    bases: &'a [ObjectReport],
    object: &'a Value,
    source: &'a str,
    settings: &'a HeadroomSettings,
    /// The schema's field path.
    fp: &'a str,
    /// Whether two minors estimate a copy of the object alike.
    alike: Option<Alike<'a>>,
    /// The object's copy the whole estimates set the bound on (and put back).
    copy: RefCell<Option<Value>>,
}

/// A rule of one minor, with its model if it has one.
struct Modeled {
    node_field_path: String,
    path: String,
    index: u64,
    model: Option<RuleModel>,
    /// Its sites (indices into the schema's sites).
    own: Vec<usize>,
}

/// A site and one minor's rules that depend on it.
struct MinorRules {
    rules: Vec<Modeled>,
    /// The schema's total as estimated.
    total: u64,
}

/// Why a value is refused.
#[derive(Clone, Debug)]
struct Refusal {
    kind: &'static str,
    path: String,
    index: Option<u64>,
    minor: usize,
    cost: u64,
}

fn schema_of<'r>(r: &'r ObjectReport, fp: &str) -> Option<&'r SchemaReport> {
    r.schemas.iter().find(|s| s.schema_field_path == fp)
}

/// The highest value of `keyword` searched.
fn top(keyword: Keyword) -> i64 {
    match keyword {
        Keyword::MaxLength => i64::MAX / 4,
        Keyword::MaxItems | Keyword::MaxProperties => i64::MAX,
    }
}

impl Cx<'_> {
    fn schema(&self, root: &mut Root) -> Vec<Headroom> {
        // Every minor's rules, modeled, and the sites they depend on.
        let mut sites = Sites::default();
        let mut notes = Vec::new();
        let mut minors: Vec<MinorRules> = Vec::new();
        for (e, base) in self.estimators.iter().zip(self.bases) {
            let env = e.env();
            let Some(schema) = schema_of(base, self.fp) else {
                minors.push(MinorRules {
                    rules: Vec::new(),
                    total: 0,
                });
                continue;
            };
            let mut rules = Vec::new();
            for r in &schema.rules {
                if r.compile_error.is_some() {
                    continue;
                }
                let built = r
                    .node_field_path
                    .strip_prefix(self.fp)
                    .and_then(|rest| parse_steps(&root.schema, rest))
                    .and_then(|p| RuleModel::build(env, &root.schema, p, r.index as usize));
                let Some(mut m) = built else { continue };
                let reads = RefCell::new(Vec::new());
                let got = m.eval(env, &root.schema, Some(&reads), None);
                let want = RuleCost::of_report(r);
                let own = rule_sites(
                    env,
                    &root.schema,
                    &m,
                    &reads.into_inner(),
                    &mut sites,
                    &mut notes,
                );
                m.base = want;
                rules.push(Modeled {
                    node_field_path: r.node_field_path.clone(),
                    path: r.path.clone(),
                    index: r.index,
                    // A model that does not give the estimate's cost is not used as a probe.
                    model: (got == Some(want)).then_some(m),
                    own,
                });
            }
            minors.push(MinorRules {
                rules,
                total: schema.total_cost,
            });
        }
        let mut out = Vec::new();
        for (si, site) in sites.sites.iter().enumerate() {
            budget::charge(1);
            let path = field_path(self.fp, &site.node);
            if self.settings.field.as_ref().is_some_and(|f| *f != path) {
                continue;
            }
            let probe = Probe {
                cx: self,
                minors: &minors,
                site: si,
                node: &site.node,
                keyword: site.keyword,
                current: site.current,
            };
            let (max, limited) = probe.answer(root);
            out.push(Headroom {
                path,
                keyword: site.keyword,
                current: site.current,
                max,
                limited_by: limited.map(|r| LimitedBy {
                    kind: r.kind,
                    path: r.path,
                    index: r.index,
                    kubernetes_version: self.estimators[r.minor].minor().label(),
                    cost_at_max_plus_one: r.cost,
                }),
            });
        }
        out.sort_by(|a, b| (&a.path, a.keyword).cmp(&(&b.path, b.keyword)));
        out
    }
}

/// One node's search.
struct Probe<'a> {
    cx: &'a Cx<'a>,
    minors: &'a [MinorRules],
    site: usize,
    node: &'a [Step],
    keyword: Keyword,
    current: Option<i64>,
}

/// A way to judge one value: by the models, or by whole estimates.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Models,
    Estimates,
}

impl Probe<'_> {
    /// The node's max and what refuses max + 1.
    fn answer(&self, root: &mut Root) -> (Option<i64>, Option<Refusal>) {
        let modeled = self.minors.iter().all(|m| {
            m.rules
                .iter()
                .filter(|r| self.depends(r))
                .all(|r| r.model.is_some())
        });
        if modeled {
            let found = self.search(root, By::Models);
            if let Some(verified) = self.verified(root, found) {
                return verified;
            }
        }
        self.search(root, By::Estimates)
    }

    /// Whether the rule's cost can change with the node's bound: the node is one of its sites
    /// (an ancestor that sets its cardinality, or a size its cost asked for). Another rule's
    /// cost does not read the bound (were it wrong, the verification would find it).
    fn depends(&self, r: &Modeled) -> bool {
        r.own.contains(&self.site)
    }

    /// Galloping up from the bound now, then a binary search.
    fn search(&self, root: &mut Root, by: By) -> (Option<i64>, Option<Refusal>) {
        let top = top(self.keyword);
        let mut judge = |v: i64| self.refused(root, v, by);
        if let Some(r) = judge(0) {
            return (Some(-1), Some(r));
        }
        // Invariant: `lo` is accepted; `hi` (once found) refused, with its refusal.
        let mut lo = 0i64;
        let mut next = self.current.unwrap_or(1).clamp(1, top);
        let (mut hi, mut why) = loop {
            match judge(next) {
                None if next == top => return (None, None),
                None => {
                    lo = next;
                    next = next.saturating_mul(2).min(top);
                }
                Some(r) => break (next, r),
            }
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match judge(mid) {
                None => lo = mid,
                Some(r) => {
                    hi = mid;
                    why = r;
                }
            }
        }
        (Some(lo), Some(why))
    }

    /// The answer, when whole estimates agree (accepted at max on every minor, refused at
    /// max + 1), with what refuses max + 1 as the whole estimate gives it.
    fn verified(
        &self,
        root: &mut Root,
        (max, why): (Option<i64>, Option<Refusal>),
    ) -> Option<(Option<i64>, Option<Refusal>)> {
        let top = top(self.keyword);
        match max {
            None => self
                .refused(root, top, By::Estimates)
                .is_none()
                .then_some((None, None)),
            Some(m) if m < top && (m < 0 || self.refused(root, m, By::Estimates).is_none()) => self
                .refused_by_estimates(root, m + 1, why.map(|w| w.minor))
                .map(|r| (Some(m), Some(r))),
            Some(_) => None,
        }
    }

    /// What refuses the node's bound at `v`, if anything.
    fn refused(&self, root: &mut Root, v: i64, by: By) -> Option<Refusal> {
        match by {
            By::Models => self.refused_by_models(root, v),
            By::Estimates => self.refused_by_estimates(root, v, None),
        }
    }

    fn refused_by_models(&self, root: &mut Root, v: i64) -> Option<Refusal> {
        let was = node_mut(&mut root.schema, self.node).map(|n| {
            let was = self.keyword.get(n);
            self.keyword.set(n, Some(v));
            was
        })?;
        let mut found = None;
        'minors: for (mi, m) in self.minors.iter().enumerate() {
            let env = self.cx.estimators[mi].env();
            let mut total = m.total;
            for r in &m.rules {
                let Some(model) = r.model.as_ref().filter(|_| self.depends(r)) else {
                    continue;
                };
                let Some(now) = model.eval(env, &root.schema, None, None) else {
                    continue;
                };
                total = total
                    .saturating_sub(model.base.total_part())
                    .saturating_add(now.total_part());
                let judged = now.judged();
                if r.own.contains(&self.site) && !self.cx.settings.fits(judged, PER_RULE_COST_LIMIT)
                {
                    found = Some(Refusal {
                        kind: "rule",
                        path: r.path.clone(),
                        index: Some(r.index),
                        minor: mi,
                        cost: judged,
                    });
                    break 'minors;
                }
            }
            if !self.cx.settings.fits(total, PER_SCHEMA_COST_LIMIT) {
                found = Some(Refusal {
                    kind: "total",
                    path: self.cx.fp.to_string(),
                    index: None,
                    minor: mi,
                    cost: total,
                });
                break;
            }
        }
        if let Some(n) = node_mut(&mut root.schema, self.node) {
            self.keyword.set(n, was);
        }
        found
    }

    /// What whole estimates of the object with the bound at `v` refuse: each minor's (`first`
    /// first), a minor that estimates the copy as one already estimated skipped.
    fn refused_by_estimates(&self, root: &Root, v: i64, first: Option<usize>) -> Option<Refusal> {
        let site = Site1 {
            node: self.node,
            keyword: self.keyword,
        };
        let n = self.cx.estimators.len();
        let mut order: Vec<usize> = first.filter(|&f| f < n).into_iter().collect();
        order.extend((0..n).filter(|&i| Some(i) != first));
        let mut copy = self.cx.copy.borrow_mut();
        let copy = copy.get_or_insert_with(|| self.cx.object.clone());
        with_bounds_at(copy, self.cx.object, &root.pointers, &site, v, |c| {
            let mut done: Vec<usize> = Vec::new();
            for mi in order {
                let e = self.cx.estimators[mi];
                if let Some(alike) = self.cx.alike
                    && done.iter().any(|&j| alike(self.cx.estimators[j], e, c))
                {
                    continue;
                }
                done.push(mi);
                let report = e.estimate_crd(c, self.cx.source);
                if let Some(r) = self.refusal_in(&report, mi) {
                    return Some(r);
                }
            }
            None
        })
        .flatten()
    }

    /// What refuses the bound in one minor's whole estimate, if anything.
    fn refusal_in(&self, report: &ObjectReport, mi: usize) -> Option<Refusal> {
        let schema = schema_of(report, self.cx.fp)?;
        for r in &self.minors[mi].rules {
            if !r.own.contains(&self.site) {
                continue;
            }
            let Some(x) = schema
                .rules
                .iter()
                .find(|x| x.node_field_path == r.node_field_path && x.index == r.index)
            else {
                continue;
            };
            let judged = judged_rule_cost(x.cost, x.message_expression_cost);
            if !self.cx.settings.fits(judged, PER_RULE_COST_LIMIT) {
                return Some(Refusal {
                    kind: "rule",
                    path: r.path.clone(),
                    index: Some(r.index),
                    minor: mi,
                    cost: judged,
                });
            }
        }
        (!self
            .cx
            .settings
            .fits(schema.total_cost, PER_SCHEMA_COST_LIMIT))
        .then(|| Refusal {
            kind: "total",
            path: self.cx.fp.to_string(),
            index: None,
            minor: mi,
            cost: schema.total_cost,
        })
    }
}

/// A node and keyword to set.
struct Site1<'a> {
    node: &'a [Step],
    keyword: Keyword,
}

/// `f` of the object with `keyword: v` at the node of every schema root.
fn with_bounds_at<T>(
    copy: &mut Value,
    object: &Value,
    pointers: &[String],
    site: &Site1<'_>,
    v: i64,
    f: impl FnOnce(&Value) -> T,
) -> Option<T> {
    let mut undo = Vec::new();
    for p in pointers {
        let n = copy
            .pointer_mut(p)
            .and_then(|s| node_mut(s, site.node))
            .and_then(Value::as_object_mut)?;
        undo.push((p, n.insert(site.keyword.name().to_string(), Value::from(v))));
    }
    let out = f(copy);
    for (p, was) in undo.into_iter().rev() {
        let Some(n) = copy
            .pointer_mut(p)
            .and_then(|s| node_mut(s, site.node))
            .and_then(Value::as_object_mut)
        else {
            *copy = object.clone();
            break;
        };
        match was {
            Some(w) => {
                n.insert(site.keyword.name().to_string(), w);
            }
            None => {
                n.shift_remove(site.keyword.name());
            }
        }
    }
    Some(out)
}
