//! The matrix of one object over a range of minors ([`VersionMatrix`], the report model's
//! `ObjectReport::by_version`), made from its reports, one per minor: the verdicts, the steps of
//! every unit whose value changes, and the upstream change behind each step ([`super::causes`]:
//! what the estimates consulted). Here rather than in `report`, which holds the model's types:
//! the causes read the minors' rules of every layer below (the CEL environments, the schema
//! adaptor's bounds, the field errors' wording, the policies' served versions).

use std::collections::BTreeMap;

use super::causes::{Aspect, consulted_between};
use crate::cel::minor::Minor;
use crate::report::versions::{
    VersionCause, VersionChange, VersionMatrix, VersionStep, VersionVerdict,
};
use crate::report::{
    Consulted, CostUnit, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT,
};

impl VersionMatrix {
    /// The verdicts and changes of one object's reports, one per minor, oldest first.
    pub fn of(reports: &[ObjectReport]) -> VersionMatrix {
        let verdicts: Vec<VersionVerdict> = reports.iter().map(verdict).collect();
        let oldest_accepting = verdicts
            .iter()
            .find(|v| v.valid)
            .map(|v| v.kubernetes_version.clone());
        let rejected_after_accepted = verdicts.iter().skip_while(|v| !v.valid).any(|v| !v.valid);
        // Every unit, in first-seen order, with its value on each minor.
        let mut order: Vec<(String, String)> = Vec::new();
        let mut values: BTreeMap<String, Vec<Option<VersionStep>>> = BTreeMap::new();
        let mut consulted: BTreeMap<String, (Option<String>, Vec<Consulted>)> = BTreeMap::new();
        for (i, r) in reports.iter().enumerate() {
            for (unit, expression, step, schema, c) in units(r) {
                let slot = values.entry(unit.clone()).or_insert_with(|| {
                    order.push((unit.clone(), expression));
                    vec![None; reports.len()]
                });
                slot[i] = Some(step);
                let slot = consulted
                    .entry(unit)
                    .or_insert_with(|| (schema, vec![Consulted::default(); reports.len()]));
                slot.1[i] = c;
            }
        }
        let mut changes = Vec::new();
        for (unit, expression) in order {
            let per_minor = &values[&unit];
            let mut steps: Vec<VersionStep> = Vec::new();
            let mut last: Option<&Option<VersionStep>> = None;
            for (i, v) in per_minor.iter().enumerate() {
                let same = last.is_some_and(|l| same_value(l, v));
                if !same {
                    steps.push(v.clone().unwrap_or_else(|| VersionStep {
                        kubernetes_version: reports[i].kubernetes_version.clone(),
                        ..VersionStep::default()
                    }));
                }
                last = Some(v);
            }
            if steps.len() > 1 {
                let (_, cons) = &consulted[&unit];
                let causes = unit_causes(reports, per_minor, cons);
                changes.push(VersionChange {
                    unit,
                    expression,
                    steps,
                    causes,
                });
            }
        }
        total_causes(&mut changes, &consulted);
        let mut verdicts = verdicts;
        verdict_causes(reports, &mut verdicts, &changes);
        VersionMatrix {
            verdicts,
            oldest_accepting,
            rejected_after_accepted,
            changes,
        }
    }
}

/// The rules `r` was estimated by: those it says made it, else upstream's of its version.
fn minor_of(r: &ObjectReport) -> Option<&'static Minor> {
    r.made_by
        .minor
        .or_else(|| crate::cel::version::Version::parse(&r.kubernetes_version).and_then(Minor::of))
}

/// The causes of the step from report `i - 1` to report `i`: the differences of their minors
/// that move `aspect` and that `c` consulted; else those the estimates of the objects as a
/// whole consulted (`aspect`, then any).
fn step_causes(
    reports: &[ObjectReport],
    i: usize,
    aspect: Aspect,
    c: Consulted,
) -> Vec<VersionCause> {
    let (Some(a), Some(b)) = (minor_of(&reports[i - 1]), minor_of(&reports[i])) else {
        return Vec::new();
    };
    let whole = reports[i - 1]
        .made_by
        .consulted
        .union(reports[i].made_by.consulted);
    // Where no difference that tells its paths was consulted, a cost of either algorithm's.
    let coarse = |r: u64| {
        if r & crate::cel::version::consulted::COST_ALGORITHM != 0 {
            r | crate::cel::version::consulted::ALGORITHM_PATHS
        } else {
            r
        }
    };
    // A policy one of them does not serve has no estimate there: that is the cause.
    let mut found: Vec<_> = if reports[i].kind == "ValidatingAdmissionPolicy" {
        super::causes::vap_serving(&reports[i].api_version, a, b)
            .into_iter()
            .collect()
    } else {
        Vec::new()
    };
    if found.is_empty() {
        found = consulted_between(a, b, aspect, c.rules, c.libraries);
    }
    if found.is_empty() {
        found = consulted_between(a, b, aspect, coarse(c.rules), c.libraries);
    }
    if found.is_empty() && reports[i].kind == "MutatingAdmissionPolicy" {
        found.extend(super::causes::map_serving(&reports[i].api_version, a, b));
    }
    if found.is_empty() {
        found = consulted_between(a, b, aspect, whole.rules, whole.libraries);
    }
    if found.is_empty() {
        found = consulted_between(a, b, aspect, coarse(whole.rules), whole.libraries);
    }
    if found.is_empty() {
        for other in [Aspect::Compile, Aspect::Cost, Aspect::Errors] {
            if other != aspect {
                found.extend(consulted_between(a, b, other, whole.rules, whole.libraries));
            }
        }
    }
    found
        .into_iter()
        .map(|d| VersionCause {
            kubernetes_version: reports[i].kubernetes_version.clone(),
            change: d.change,
            reference: d.reference,
        })
        .collect()
}

/// The causes of a unit's steps (its value on each minor, and what each estimate of it
/// consulted).
fn unit_causes(
    reports: &[ObjectReport],
    per_minor: &[Option<VersionStep>],
    cons: &[Consulted],
) -> Vec<VersionCause> {
    let mut out: Vec<VersionCause> = Vec::new();
    for i in 1..per_minor.len() {
        let (a, b) = (&per_minor[i - 1], &per_minor[i]);
        if same_value(a, b) {
            continue;
        }
        let error = |s: &Option<VersionStep>| s.as_ref().map(|s| s.compile_error.clone());
        let aspect = if error(a) != error(b) {
            Aspect::Compile
        } else {
            Aspect::Cost
        };
        for c in step_causes(reports, i, aspect, cons[i - 1].union(cons[i])) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// A schema total's causes: those of its schema's rules and messageExpressions at the same
/// steps.
fn total_causes(
    changes: &mut [VersionChange],
    units: &BTreeMap<String, (Option<String>, Vec<Consulted>)>,
) {
    let schema_of = |unit: &str| units.get(unit).and_then(|(s, _)| s.clone());
    for t in 0..changes.len() {
        if !changes[t].unit.ends_with(" total") {
            continue;
        }
        let Some(schema) = schema_of(&changes[t].unit) else {
            continue;
        };
        let mut causes: Vec<VersionCause> = Vec::new();
        for step in changes[t].steps.iter().skip(1) {
            for (k, c) in changes.iter().enumerate() {
                if k == t || schema_of(&c.unit).as_deref() != Some(schema.as_str()) {
                    continue;
                }
                for cause in c.causes_at(&step.kubernetes_version) {
                    if !causes.contains(cause) {
                        causes.push(cause.clone());
                    }
                }
            }
        }
        changes[t].causes = causes;
    }
}

/// The causes of each verdict (or number of errors) that is not the previous minor's: those of
/// the changes at that minor, else what the estimates of the object consulted.
fn verdict_causes(
    reports: &[ObjectReport],
    verdicts: &mut [VersionVerdict],
    changes: &[VersionChange],
) {
    for i in 1..verdicts.len() {
        let (a, b) = (&verdicts[i - 1], &verdicts[i]);
        if a.valid == b.valid && a.error_count == b.error_count && a.stopped == b.stopped {
            continue;
        }
        let version = b.kubernetes_version.clone();
        let mut causes: Vec<VersionCause> = Vec::new();
        for c in changes {
            for cause in c.causes_at(&version) {
                if !causes.contains(cause) {
                    causes.push(cause.clone());
                }
            }
        }
        if causes.is_empty() {
            causes = step_causes(reports, i, Aspect::Errors, Consulted::default());
        }
        verdicts[i].causes = causes;
    }
}

fn same_value(a: &Option<VersionStep>, b: &Option<VersionStep>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.cost == b.cost
                && a.exceeds_limit == b.exceeds_limit
                && a.compile_error == b.compile_error
        }
        (None, None) => true,
        _ => false,
    }
}

fn verdict(r: &ObjectReport) -> VersionVerdict {
    let crd = !r.schemas.is_empty();
    VersionVerdict {
        kubernetes_version: r.kubernetes_version.clone(),
        valid: r.valid,
        stopped: r.stopped.is_some(),
        error_count: r.errors.len(),
        highest_rule_cost: if crd {
            r.highest_rule_cost()
        } else {
            r.expressions
                .iter()
                .filter_map(|e| e.max_cost)
                .max()
                .unwrap_or(0)
        },
        highest_total_cost: crd.then(|| r.highest_total_cost()),
        causes: Vec::new(),
    }
}

/// The units of one report: (key, expression, value, its schema's field path for a CRD's units,
/// what its estimate consulted).
fn units(r: &ObjectReport) -> Vec<(String, String, VersionStep, Option<String>, Consulted)> {
    let step = |cost: Option<u64>, limit: u64, exceeds: bool, err: Option<&String>| VersionStep {
        kubernetes_version: r.kubernetes_version.clone(),
        cost,
        limit,
        exceeds_limit: exceeds,
        compile_error: err.cloned(),
    };
    r.cost_units()
        .into_iter()
        .map(|u| {
            let (schema, consulted) = match u {
                CostUnit::Total(s) => (Some(s.schema_field_path.clone()), Consulted::default()),
                CostUnit::Rule { rule, .. } | CostUnit::MessageExpression { rule, .. } => (
                    r.schemas
                        .iter()
                        .find(|s| s.rules.iter().any(|x| std::ptr::eq(x, rule)))
                        .map(|s| s.schema_field_path.clone()),
                    rule.consulted,
                ),
                CostUnit::Expression(e) => (None, e.consulted),
            };
            let (expression, value) = match u {
                CostUnit::Total(s) => (
                    String::new(),
                    step(
                        Some(s.total_cost),
                        PER_SCHEMA_COST_LIMIT,
                        s.exceeds_total_limit,
                        None,
                    ),
                ),
                CostUnit::Rule { rule, .. } => (
                    rule.rule.clone(),
                    step(
                        rule.compile_error.is_none().then_some(rule.cost),
                        PER_RULE_COST_LIMIT,
                        rule.exceeds_cost_limit,
                        rule.compile_error.as_ref(),
                    ),
                ),
                CostUnit::MessageExpression { rule, .. } => {
                    let cost = rule.message_expression_cost;
                    (
                        rule.message_expression.clone().unwrap_or_default(),
                        step(
                            cost,
                            PER_RULE_COST_LIMIT,
                            cost.is_some_and(|c| c > PER_RULE_COST_LIMIT),
                            rule.message_expression_compile_error.as_ref(),
                        ),
                    )
                }
                CostUnit::Expression(e) => (
                    e.expression.clone(),
                    step(
                        e.max_cost,
                        e.per_call_limit,
                        e.max_cost_exceeds_per_call_limit.unwrap_or(false),
                        e.compile_error.as_ref(),
                    ),
                ),
            };
            (u.label(), expression, value, schema, consulted)
        })
        .collect()
}

/// `current`'s report, carrying the matrix of it and the next minor's (the operator's view: the
/// cluster's minor, and what its upgrade would change).
pub fn with_next(current: ObjectReport, next: ObjectReport) -> ObjectReport {
    let matrix = VersionMatrix::of(&[current.clone(), next]);
    ObjectReport {
        by_version: Some(matrix),
        ..current
    }
}

/// The newest report, carrying the matrix of all of them.
pub fn combine(reports: Vec<ObjectReport>) -> ObjectReport {
    combine_keeping(reports).0
}

/// [`combine`], and the other reports (oldest first), as they were.
pub fn combine_keeping(mut reports: Vec<ObjectReport>) -> (ObjectReport, Vec<ObjectReport>) {
    let matrix = VersionMatrix::of(&reports);
    let mut newest = reports.pop().unwrap_or_default();
    if !matrix.verdicts.is_empty() {
        newest.by_version = Some(matrix);
    }
    (newest, reports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RuleReport, SchemaReport};

    fn crd(version: &str, cost: u64, err: Option<&str>) -> ObjectReport {
        ObjectReport {
            kind: "CustomResourceDefinition".into(),
            name: "x".into(),
            kubernetes_version: version.into(),
            valid: cost <= PER_RULE_COST_LIMIT && err.is_none(),
            schemas: vec![SchemaReport {
                schema_field_path: "spec.validation.openAPIV3Schema".into(),
                total_cost: cost,
                rules: vec![RuleReport {
                    path: "^.spec.cidrs[*]".into(),
                    index: 0,
                    rule: "isCIDR(self)".into(),
                    cost,
                    exceeds_cost_limit: cost > PER_RULE_COST_LIMIT,
                    compile_error: err.map(String::from),
                    ..RuleReport::default()
                }],
                ..SchemaReport::default()
            }],
            ..ObjectReport::default()
        }
    }

    #[test]
    fn the_oldest_accepting_minor_and_the_steps_of_a_changing_rule() {
        let m = VersionMatrix::of(&[
            crd("v1.30", 0, Some("undeclared reference to 'isCIDR'")),
            crd("v1.31", 12_310_000, None),
            crd("v1.32", 4_100_000, None),
            crd("v1.33", 4_100_000, None),
        ]);
        assert_eq!(m.oldest_accepting.as_deref(), Some("v1.32"));
        assert!(!m.rejected_after_accepted);
        let rule = m
            .changes
            .iter()
            .find(|c| c.unit == "^.spec.cidrs[*] [0]")
            .unwrap();
        let at: Vec<(&str, Option<u64>, bool)> = rule
            .steps
            .iter()
            .map(|s| (s.kubernetes_version.as_str(), s.cost, s.exceeds_limit))
            .collect();
        assert_eq!(
            at,
            [
                ("v1.30", None, false),
                ("v1.31", Some(12_310_000), true),
                ("v1.32", Some(4_100_000), false)
            ]
        );
        assert!(rule.steps[0].compile_error.is_some());
        assert_eq!(m.verdicts.iter().filter(|v| v.valid).count(), 2);
    }

    #[test]
    fn nothing_changes_nothing_is_listed() {
        let m = VersionMatrix::of(&[crd("v1.35", 5, None), crd("v1.36", 5, None)]);
        assert!(m.changes.is_empty());
        assert_eq!(m.oldest_accepting.as_deref(), Some("v1.35"));
    }

    #[test]
    fn a_later_rejection_is_flagged() {
        let m = VersionMatrix::of(&[crd("v1.32", 5, None), crd("v1.33", 20_000_000, None)]);
        assert!(m.rejected_after_accepted);
        assert_eq!(m.oldest_accepting.as_deref(), Some("v1.32"));
        let c = combine(vec![crd("v1.32", 5, None), crd("v1.33", 20_000_000, None)]);
        assert_eq!(c.kubernetes_version, "v1.33");
        assert_eq!(c.by_version.unwrap().verdicts.len(), 2);
    }
}
