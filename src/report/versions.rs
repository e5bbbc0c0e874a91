//! One object over a range of Kubernetes minors: the verdict per minor, the oldest minor that
//! accepts it, and every rule or expression whose cost or verdict changes between minors.
//!
//! Pure: the estimates come from one estimator per minor (`crate::estimate::range`); this module
//! compares their reports. Part of the report model (`ObjectReport::by_version`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CostUnit, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT};

/// An object's verdict on one minor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionVerdict {
    /// `v1.31`.
    pub kubernetes_version: String,
    /// Whether that minor's API server accepts the object on create.
    pub valid: bool,
    /// Set when the estimate stopped (work budget): nothing was judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// How many field errors that minor gives.
    pub error_count: usize,
    /// CRDs: the highest rule cost (× cardinality) and schema total; policies: the highest
    /// expression cost (upstream's estimate).
    pub highest_rule_cost: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_total_cost: Option<u64>,
}

/// A rule, messageExpression, schema total or policy expression whose number or verdict is not
/// the same on every minor of the range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionChange {
    /// `^.spec.cidrs[*] [0]` (a rule), `^.spec.cidrs[*] [0] messageExpression`,
    /// `spec.validation.openAPIV3Schema total`, or a policy expression's field path.
    pub unit: String,
    /// The expression, when the unit is one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expression: String,
    /// The value on the first minor of the range, then on each minor where it changes.
    pub steps: Vec<VersionStep>,
}

/// A unit's value from one minor on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionStep {
    pub kubernetes_version: String,
    /// The cost compared with the unit's limit (absent when it does not compile there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
    /// The limit it is compared with.
    pub limit: u64,
    /// Over the limit: the API server rejects the CRD (rules, totals), or the runtime would
    /// stop the expression (policies).
    pub exceeds_limit: bool,
    /// The compile error on that minor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_error: Option<String>,
}

/// An object's estimates over a range of minors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionMatrix {
    /// Oldest first.
    pub verdicts: Vec<VersionVerdict>,
    /// The oldest minor of the range whose API server accepts the object (`v1.32`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_accepting: Option<String>,
    /// Whether some minor rejects it while an older one accepts it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejected_after_accepted: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<VersionChange>,
}

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
        for (i, r) in reports.iter().enumerate() {
            for (unit, expression, step) in units(r) {
                let slot = values.entry(unit.clone()).or_insert_with(|| {
                    order.push((unit.clone(), expression));
                    vec![None; reports.len()]
                });
                slot[i] = Some(step);
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
                changes.push(VersionChange {
                    unit,
                    expression,
                    steps,
                });
            }
        }
        VersionMatrix {
            verdicts,
            oldest_accepting,
            rejected_after_accepted,
            changes,
        }
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
    }
}

/// What a unit key of [`VersionMatrix::changes`] names in a report.
#[derive(Clone, Copy, Debug)]
pub enum Unit<'a> {
    Rule(&'a super::SchemaReport, &'a super::RuleReport),
    MessageExpression(&'a super::SchemaReport, &'a super::RuleReport),
    Total(&'a super::SchemaReport),
    Expression(&'a super::ExpressionReport),
}

/// The rule, messageExpression, total or expression a unit key names in `r` (one of the reports
/// the matrix was made of, or one of the same object).
pub fn find_unit<'a>(r: &'a ObjectReport, key: &str) -> Option<Unit<'a>> {
    let several = r.schemas.len() > 1;
    for s in &r.schemas {
        if key == format!("{} total", s.schema_field_path) {
            return Some(Unit::Total(s));
        }
        let prefix = if several {
            format!("{}: ", s.schema_field_path)
        } else {
            String::new()
        };
        for rule in &s.rules {
            let k = format!("{prefix}{} [{}]", rule.path, rule.index);
            if key == k {
                return Some(Unit::Rule(s, rule));
            }
            if key.strip_suffix(" messageExpression") == Some(k.as_str()) {
                return Some(Unit::MessageExpression(s, rule));
            }
        }
    }
    r.expressions
        .iter()
        .find(|e| e.field_path == key)
        .map(Unit::Expression)
}

/// Where an object is accepted by one minor and rejected by the next, in the order of the
/// range: (the accepting minor, the rejecting one), e.g. `("v1.36", "v1.37")`.
pub fn accepted_then_rejected(m: &VersionMatrix) -> Vec<(&str, &str)> {
    m.verdicts
        .windows(2)
        .filter(|w| w[0].valid && !w[0].stopped && !w[1].valid && !w[1].stopped)
        .map(|w| {
            (
                w[0].kubernetes_version.as_str(),
                w[1].kubernetes_version.as_str(),
            )
        })
        .collect()
}

/// A unit's value on `version` (one of the matrix's minors): the last step at or before it, in
/// the order of `verdicts`.
pub fn value_at<'a>(
    m: &VersionMatrix,
    c: &'a VersionChange,
    version: &str,
) -> Option<&'a VersionStep> {
    let pos = |v: &str| m.verdicts.iter().position(|x| x.kubernetes_version == v);
    let at = pos(version)?;
    c.steps
        .iter()
        .rev()
        .find(|s| pos(&s.kubernetes_version).is_some_and(|p| p <= at))
}

/// Whether a step is a rejection: over its limit, or not compiling.
pub fn fails(s: &VersionStep) -> bool {
    s.exceeds_limit || s.compile_error.is_some()
}

/// The units that fit (or are absent) on `accepting` and fail on `rejecting`: what makes the
/// newer minor reject the object.
pub fn newly_failing<'a>(
    m: &'a VersionMatrix,
    accepting: &str,
    rejecting: &str,
) -> Vec<&'a VersionChange> {
    m.changes
        .iter()
        .filter(|c| {
            value_at(m, c, rejecting).is_some_and(fails)
                && !value_at(m, c, accepting).is_some_and(fails)
        })
        .collect()
}

/// The units of one report: (key, expression, value).
fn units(r: &ObjectReport) -> Vec<(String, String, VersionStep)> {
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
            (u.label(), expression, value)
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
