//! Verification: bounds applied to a copy of the object, estimated whole (on every minor),
//! memoized by the bounds; and the suggestions made of them.

use std::collections::HashMap;
use std::rc::Rc;

use celcost_core::budget;
use celcost_core::estimate::{Estimator, Shared};
use celcost_core::report::format::num;
use celcost_core::report::{
    Keyword, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, Suggestion,
};
use celcost_core::schema::path::{
    Step, field_path, rule_path as schema_path, walk as node, walk_mut as node_mut,
};
use serde_json::Value;

use super::model::RuleCost;
use super::object::{Probe, SearchBudget};
use super::search::Site;
use super::{Finding, Other, same_finding};

/// Verified bounds kept per object at most (more verifications than that forget them all).
pub(super) const MAX_VERIFIED: usize = 64;

/// The whole-object estimates of one object's verifications, by the bounds applied: a rule and
/// its schema's total, or rules on the same field, often verify the same bounds. A key is the
/// schema and one number per bound (its site interned here), not the sites' paths.
#[derive(Default)]
pub(super) struct Verified {
    /// Site nodes by path.
    pub(super) nodes: HashMap<Vec<Step>, u32>,
    /// The estimate and the steps it took.
    pub(super) done: HashMap<VerifiedKey, (Rc<ObjectReport>, u64)>,
}

/// A schema (its index) and its bounds: (node, keyword, value).
pub(super) type VerifiedKey = (usize, Vec<(u32, Keyword, i64)>);

impl Verified {
    pub(super) fn key(&mut self, si: usize, bounds: &[(&Site, i64)]) -> VerifiedKey {
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

/// Whether bounds that fit the finding on the searched minor fit it on every other minor too
/// (each estimated whole with them, as [`verify`] does); an error naming the first that does not.
/// `bounded` is the object with the probe's bounds set, shared with the searched minor's
/// verification (what every minor reads of it alike is made once), and `consulted` what the
/// searched minor's estimate of it consulted. A minor that estimates the bounded copy as the
/// searched one does, or as another minor already verified here does, gets the same answer and
/// is not estimated again (where the two minors' own reports of the object have the same errors
/// but for costs: what is new in the copy is then new on both).
#[allow(clippy::too_many_arguments)]
pub(super) fn fits_elsewhere(
    others: &mut [Other<'_>],
    report: &ObjectReport,
    finding: (usize, Finding),
    probe: &Probe<'_>,
    bounded: &Shared<'_>,
    limit: u64,
    left: &mut SearchBudget,
    consulted: u64,
) -> Result<(), String> {
    // The minors whose answer is known to fit, with what their estimate of the copy consulted:
    // the searched one first, then each other minor verified here.
    let Some(searched) = others.first().map(|o| o.searched) else {
        return Ok(());
    };
    let mut fitting: Vec<(&Estimator, u64, &ObjectReport)> = vec![(searched, consulted, report)];
    for o in others.iter_mut() {
        // A rule another minor does not compile (or a schema it does not have) is not judged
        // there.
        let Some((osi, of)) = same_finding(report, finding, o.base) else {
            continue;
        };
        if let (Some(alike), Some(nodes)) = (o.alike, probe.nodes) {
            let known: Vec<(&Estimator, Option<u64>)> = fitting
                .iter()
                .filter(|(_, _, theirs)| same_errors_but_costs(theirs, o.base))
                .map(|&(known, consulted, _)| (known, Some(consulted)))
                .collect();
            if !known.is_empty() && alike(&known, o.estimator, probe.object, nodes) {
                continue;
            }
        }
        if left.verifications_left == 0 {
            return Err("the search's verifications for this object are spent".into());
        }
        left.verifications_left -= 1;
        let (after, theirs) = verify(
            o.estimator,
            o.base,
            (osi, of),
            probe,
            &mut o.verified,
            bounded,
        )
        .map_err(|e| format!("on Kubernetes {}: {e}", o.estimator.kubernetes_version()))?;
        if !probe.settings.fits(after, limit) {
            return Err(format!(
                "{} gives {} on Kubernetes {}",
                probe.bounds_text(),
                num(after),
                o.estimator.kubernetes_version()
            ));
        }
        fitting.push((o.estimator, theirs, o.base));
    }
    Ok(())
}

/// Whether two reports of an object have the same errors, leaving out the cost ones (which a
/// verification weighs on its own).
fn same_errors_but_costs(a: &ObjectReport, b: &ObjectReport) -> bool {
    fn others(r: &ObjectReport) -> Vec<&String> {
        let mut v: Vec<&String> = (r.errors.iter().enumerate())
            .filter(|&(i, _)| r.error_cost(i).is_none())
            .map(|(_, e)| e)
            .collect();
        v.sort();
        v
    }
    std::ptr::eq(a, b) || others(a) == others(b)
}

/// Estimates the object with the probe's bounds (`bounded`: set on a copy) whole, and returns
/// the finding's cost then, and what the estimate consulted (its `made_by.consulted.rules`); an
/// error when the copy has an error the object did not have (other than costs).
pub(super) fn verify(
    estimator: &Estimator,
    report: &ObjectReport,
    (si, finding): (usize, Finding),
    probe: &Probe<'_>,
    verified: &mut Verified,
    bounded: &Shared<'_>,
) -> Result<(u64, u64), String> {
    let Probe {
        bounds, settings, ..
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
            let (after, steps) =
                budget::counted(|| Rc::new(estimator.estimate_crd_shared(bounded, &report.source)));
            verified.done.insert(key, (after.clone(), steps));
            after
        }
    };
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
    let consulted = after.made_by.consulted.rules;
    let cost = match finding {
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
    }?;
    Ok((cost, consulted))
}

/// A copy of the object with the bounds set on every version's schema (what [`with_bounds`]
/// sets in place: its tests compare the two).
#[cfg(test)]
pub(super) fn apply_bounds(
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
pub(super) fn with_bounds<T>(
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

/// The nodes of `object` bounds are set on (each at `steps` below every schema root of
/// `pointers`, with its keyword), for the alike test of the bounded copy ([`super::Alike`]);
/// `None` where one is missing or not an object (no bound can be set there).
pub(super) fn bounded_nodes<'v, 's>(
    object: &'v Value,
    pointers: &[String],
    bounds: impl Iterator<Item = (&'s [Step], Keyword)> + Clone,
) -> Option<Vec<(&'v Value, Keyword)>> {
    let mut nodes = Vec::new();
    for p in pointers {
        for (steps, keyword) in bounds.clone() {
            let n = node(object.pointer(p)?, steps).filter(|n| n.is_object())?;
            nodes.push((n, keyword));
        }
    }
    Some(nodes)
}

pub(super) fn json_node<'v>(
    object: &'v mut Value,
    pointer: &str,
    path: &[Step],
) -> Option<&'v mut Value> {
    node_mut(object.pointer_mut(pointer)?, path)
}

pub(super) fn suggested_bound(
    root_field_path: &str,
    root_pointers: &[String],
    s: &Site,
    value: i64,
    cost_after: u64,
) -> Suggestion {
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
        keyword: s.keyword,
        value,
        cost_after,
        group: 0,
        current: s.current,
        marker,
        marker_on: on,
        safe: implied_by.is_some(),
        implied_by,
        roots: root_pointers.to_vec(),
        steps: s.node.clone(),
    }
}
