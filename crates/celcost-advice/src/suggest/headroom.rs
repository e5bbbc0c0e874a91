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
use celcost_core::crd::SchemaCosts;
use celcost_core::estimate::Estimator;
use celcost_core::report::{
    Keyword, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, SchemaReport,
    judged_rule_cost,
};
use celcost_core::schema::Schema;
use celcost_core::schema::path::{Step, field_path, parse as parse_steps, walk_mut as node_mut};

use super::model::{RuleCost, RuleModel};
use super::sites::{Sites, rule_sites};
use super::verify::bounded_nodes;
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
        // Every estimate here is of the object with bounds set: its compiles are kept.
        celcost_core::crd::with_compiles_kept(|| {
            headroom_on_this_stack(estimators, alike, source, object, settings)
        })
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
            settings,
            fp: &schema.schema_field_path,
            alike,
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
    settings: &'a HeadroomSettings,
    /// The schema's field path.
    fp: &'a str,
    /// Whether two minors estimate a copy of the object alike.
    alike: Option<Alike<'a>>,
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
                // A rule the API server does not compile (the schema's CEL off: a default it
                // refuses, a structural error) costs nothing at any bound.
                if r.compile_error.is_some() || !r.compiled_by_apiserver {
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
        let probes: Vec<Probe> = sites
            .sites
            .iter()
            .enumerate()
            .filter(|(_, site)| {
                budget::charge(1);
                let path = field_path(self.fp, &site.node);
                self.settings.field.as_ref().is_none_or(|f| *f == path)
            })
            .map(|(si, site)| Probe {
                cx: self,
                minors: &minors,
                site: si,
                node: &site.node,
                keyword: site.keyword,
                current: site.current,
            })
            .collect();
        // Each node searched by the models, then its answer verified by whole estimates (at max
        // and at max + 1); where a verification disagrees, or a rule that reads the node has no
        // model, searched again with whole estimates. The checks at max are made for many nodes
        // at once where they can be ([`Cx::accepted_at_max_together`]).
        let found: Vec<Option<Answer>> = probes
            .iter()
            .map(|p| p.modeled().then(|| p.search(root, By::Models)))
            .collect();
        let accepted = self.accepted_at_max_together(root, &probes, &found);
        let mut out = Vec::new();
        for ((probe, found), accepted) in probes.iter().zip(found).zip(accepted) {
            let (max, limited) = found
                .and_then(|f| probe.verified(root, f, accepted))
                .unwrap_or_else(|| probe.search(root, By::Estimates));
            out.push(Headroom {
                path: field_path(self.fp, probe.node),
                keyword: probe.keyword,
                current: probe.current,
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

    /// Which probes' answers by the models (`found`) whole estimates accept at max, as far as
    /// checking them **together** tells: nodes whose maxima the models accept all at once are
    /// set to them at once and estimated whole, one check for the group. The cost is monotone
    /// non-decreasing in each bound, so a set of bounds accepted together is accepted with any
    /// of them put back lower — to a bound the node has now, not above its max — one at a time:
    /// each node's own check at max. Only nodes bounded now, with a max not below it, join a
    /// group (an unbounded node's cost is the API server's request-size estimate, not a value
    /// below every bound); a group refused (or of one node) leaves its nodes to their own checks.
    fn accepted_at_max_together(
        &self,
        root: &mut Root,
        probes: &[Probe<'_>],
        found: &[Option<Answer>],
    ) -> Vec<bool> {
        let mut accepted = vec![false; probes.len()];
        let eligible = probes
            .iter()
            .zip(found)
            .enumerate()
            .filter_map(|(i, (p, f))| {
                let top = top(p.keyword);
                let current = p.current?;
                match f.as_ref()?.0 {
                    None => Some((i, top)),
                    Some(m) if m >= current && m < top => Some((i, m)),
                    _ => None,
                }
            });
        let mut groups: Vec<Vec<(usize, i64)>> = Vec::new();
        for e in eligible {
            let set = |g: &[(usize, i64)]| -> Vec<Bound<'_>> {
                g.iter()
                    .chain(std::iter::once(&e))
                    .map(|&(i, v)| probes[i].bound(v))
                    .collect()
            };
            let first = groups.len().saturating_sub(GROUPS_TRIED);
            let fits = (first..groups.len()).find(|&gi| {
                self.refused_by_models(root, probes[0].minors, &set(&groups[gi]))
                    .is_none()
            });
            match fits {
                Some(gi) => groups[gi].push(e),
                None => groups.push(vec![e]),
            }
        }
        for g in groups.iter().filter(|g| g.len() > 1) {
            let bounds: Vec<Bound<'_>> = g.iter().map(|&(i, v)| probes[i].bound(v)).collect();
            if self
                .refused_by_estimates(root, probes[0].minors, &bounds, None)
                .is_none()
            {
                for &(i, _) in g {
                    accepted[i] = true;
                }
            }
        }
        accepted
    }

    /// What the models refuse with `bounds` set: a rule that depends on one of them over the
    /// per-rule limit, or the schema's total over its own, on some minor.
    fn refused_by_models(
        &self,
        root: &mut Root,
        minors: &[MinorRules],
        bounds: &[Bound<'_>],
    ) -> Option<Refusal> {
        let was = set_bounds(&mut root.schema, bounds)?;
        let mut found = None;
        'minors: for (mi, m) in minors.iter().enumerate() {
            let env = self.estimators[mi].env();
            let mut total = m.total;
            for r in &m.rules {
                let Some(model) = r.model.as_ref().filter(|_| depends(r, bounds)) else {
                    continue;
                };
                let Some(now) = model.eval(env, &root.schema, None, None) else {
                    continue;
                };
                total = total
                    .saturating_sub(model.base.total_part())
                    .saturating_add(now.total_part());
                let judged = now.judged();
                if !self.settings.fits(judged, PER_RULE_COST_LIMIT) {
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
            if !self.settings.fits(total, PER_SCHEMA_COST_LIMIT) {
                found = Some(Refusal {
                    kind: "total",
                    path: self.fp.to_string(),
                    index: None,
                    minor: mi,
                    cost: total,
                });
                break;
            }
        }
        put_back(&mut root.schema, bounds, was);
        found
    }

    /// What whole estimates of the schema with `bounds` set refuse: each minor's (`first`
    /// first), a minor that estimates the object's copy as one already estimated skipped. A
    /// whole estimate here is the schema's node walk as the CRD's estimate makes it
    /// ([`Estimator::schema_costs`]), every rule compiled: only the cost limits are weighed.
    fn refused_by_estimates(
        &self,
        root: &mut Root,
        minors: &[MinorRules],
        bounds: &[Bound<'_>],
        first: Option<usize>,
    ) -> Option<Refusal> {
        let n = self.estimators.len();
        let mut order: Vec<usize> = first.filter(|&f| f < n).into_iter().collect();
        order.extend((0..n).filter(|&i| Some(i) != first));
        let was = set_bounds(&mut root.schema, bounds)?;
        let mut found = None;
        let mut done: Vec<usize> = Vec::new();
        for mi in order {
            let e = self.estimators[mi];
            if !done.is_empty() && self.alike_to_one_of(root, bounds, &done, e) {
                continue;
            }
            done.push(mi);
            let costs = e.schema_costs(&root.schema, self.fp);
            if let Some(r) = self.refusal_in(&minors[mi], &costs, bounds, mi) {
                found = Some(r);
                break;
            }
        }
        put_back(&mut root.schema, bounds, was);
        found
    }

    /// Whether minor `e` estimates the object with `bounds` set as one of the minors `done`
    /// does (as a range would share their estimates).
    fn alike_to_one_of(
        &self,
        root: &Root,
        bounds: &[Bound<'_>],
        done: &[usize],
        e: &Estimator,
    ) -> bool {
        let Some(alike) = self.alike else {
            return false;
        };
        let sites = bounds.iter().map(|b| (b.node, b.keyword));
        let Some(nodes) = bounded_nodes(self.object, &root.pointers, sites) else {
            return false;
        };
        let known: Vec<(&Estimator, Option<u64>)> =
            done.iter().map(|&j| (self.estimators[j], None)).collect();
        alike(&known, e, self.object, &nodes)
    }

    /// What refuses `bounds` in one minor's costs of the schema, if anything: a rule that
    /// depends on one of them, or the total.
    fn refusal_in(
        &self,
        rules: &MinorRules,
        costs: &SchemaCosts,
        bounds: &[Bound<'_>],
        mi: usize,
    ) -> Option<Refusal> {
        for r in rules.rules.iter().filter(|r| depends(r, bounds)) {
            let Some(x) = costs
                .rules
                .iter()
                .find(|x| x.node_field_path == r.node_field_path && x.index == r.index)
            else {
                continue;
            };
            let judged = judged_rule_cost(x.cost, x.message_expression_cost);
            if !self.settings.fits(judged, PER_RULE_COST_LIMIT) {
                return Some(Refusal {
                    kind: "rule",
                    path: r.path.clone(),
                    index: Some(r.index),
                    minor: mi,
                    cost: judged,
                });
            }
        }
        (!self.settings.fits(costs.total_cost, PER_SCHEMA_COST_LIMIT)).then(|| Refusal {
            kind: "total",
            path: self.fp.to_string(),
            index: None,
            minor: mi,
            cost: costs.total_cost,
        })
    }
}

/// Groups of nodes a node's check at max tries to join (the newest ones): more would make the
/// grouping quadratic in the nodes.
const GROUPS_TRIED: usize = 4;

/// A node's answer: its max, and what refuses max + 1.
type Answer = (Option<i64>, Option<Refusal>);

/// A bound to set: a site (its index), its node and keyword, and the value.
#[derive(Clone, Copy)]
struct Bound<'a> {
    site: usize,
    node: &'a [Step],
    keyword: Keyword,
    value: i64,
}

/// Whether the rule's cost can change with one of the bounds: its node is one of the rule's
/// sites (an ancestor that sets its cardinality, or a size its cost asked for). Another rule's
/// cost does not read the bound (were it wrong, the verification would find it).
fn depends(r: &Modeled, bounds: &[Bound<'_>]) -> bool {
    bounds.iter().any(|b| r.own.contains(&b.site))
}

/// Sets the bounds on the schema; what each node had, to put back; `None` (nothing set) when
/// a node is not in it.
fn set_bounds(schema: &mut Schema, bounds: &[Bound<'_>]) -> Option<Vec<Option<i64>>> {
    let mut was = Vec::with_capacity(bounds.len());
    for b in bounds {
        match node_mut(schema, b.node) {
            Some(n) => {
                was.push(b.keyword.get(n));
                b.keyword.set(n, Some(b.value));
            }
            None => {
                put_back(schema, &bounds[..was.len()], was);
                return None;
            }
        }
    }
    Some(was)
}

/// Puts back what [`set_bounds`] found, the last set first.
fn put_back(schema: &mut Schema, bounds: &[Bound<'_>], was: Vec<Option<i64>>) {
    for (b, w) in bounds.iter().zip(was).rev() {
        if let Some(n) = node_mut(schema, b.node) {
            b.keyword.set(n, w);
        }
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
    /// The node's bound at `value`.
    fn bound(&self, value: i64) -> Bound<'_> {
        Bound {
            site: self.site,
            node: self.node,
            keyword: self.keyword,
            value,
        }
    }

    /// Whether every rule that depends on the node has a model (the search by models can
    /// judge it).
    fn modeled(&self) -> bool {
        let b = [self.bound(0)];
        self.minors.iter().all(|m| {
            m.rules
                .iter()
                .filter(|r| depends(r, &b))
                .all(|r| r.model.is_some())
        })
    }

    /// The highest value first (most nodes take any), then galloping up from the bound now
    /// and a binary search.
    fn search(&self, root: &mut Root, by: By) -> Answer {
        let top = top(self.keyword);
        let mut judge = |v: i64| self.refused(root, v, by);
        if let Some(r) = judge(0) {
            return (Some(-1), Some(r));
        }
        let Some(at_top) = judge(top) else {
            return (None, None);
        };
        // Invariant: `lo` is accepted; `hi` (once found) refused, with its refusal.
        let mut lo = 0i64;
        let mut next = self.current.unwrap_or(1).clamp(1, top);
        let (mut hi, mut why) = loop {
            if next == top {
                break (top, at_top);
            }
            match judge(next) {
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
    /// max + 1), with what refuses max + 1 as the whole estimate gives it. `accepted`: the
    /// check at max was made already (with other nodes', and passed).
    fn verified(&self, root: &mut Root, (max, why): Answer, accepted: bool) -> Option<Answer> {
        let top = top(self.keyword);
        match max {
            None => (accepted || self.refused(root, top, By::Estimates).is_none())
                .then_some((None, None)),
            Some(m)
                if m < top
                    && (m < 0 || accepted || self.refused(root, m, By::Estimates).is_none()) =>
            {
                self.cx
                    .refused_by_estimates(
                        root,
                        self.minors,
                        &[self.bound(m + 1)],
                        why.map(|w| w.minor),
                    )
                    .map(|r| (Some(m), Some(r)))
            }
            Some(_) => None,
        }
    }

    /// What refuses the node's bound at `v`, if anything.
    fn refused(&self, root: &mut Root, v: i64, by: By) -> Option<Refusal> {
        let b = [self.bound(v)];
        match by {
            By::Models => self.cx.refused_by_models(root, self.minors, &b),
            By::Estimates => self.cx.refused_by_estimates(root, self.minors, &b, None),
        }
    }
}
