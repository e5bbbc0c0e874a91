//! Tests of the status, its conditions and its events.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::super::conditions::*;
use super::super::events::*;
use super::*;
use celcost_core::report::{PER_RULE_COST_LIMIT, RuleReport, SchemaReport};

fn rule(path: &str, cost: u64) -> RuleReport {
    RuleReport {
        path: path.into(),
        rule: "self.size() > 0".into(),
        max_cost: cost,
        max_cardinality: 1,
        cardinality_used: 1,
        cost,
        exceeds_cost_limit: cost > PER_RULE_COST_LIMIT,
        compiled_by_apiserver: true,
        ..RuleReport::default()
    }
}

fn report(costs: &[u64]) -> ObjectReport {
    let rules: Vec<RuleReport> = costs
        .iter()
        .enumerate()
        .map(|(i, &c)| rule(&format!("^.spec.f{i}"), c))
        .collect();
    ObjectReport {
        kind: "CustomResourceDefinition".into(),
        name: "widgets.example.com".into(),
        kubernetes_version: "v1.36".into(),
        valid: true,
        schemas: vec![SchemaReport {
            schema_field_path: "spec.versions[0].schema.openAPIV3Schema".into(),
            location: None,
            versions: vec!["v1".into()],
            total_cost: costs.iter().fold(0u64, |a, &c| a.saturating_add(c)),
            exceeds_total_limit: false,
            rule_count: costs.len() as u64,
            rules,
            ..SchemaReport::default()
        }],
        ..ObjectReport::default()
    }
}

const CRD: TargetKind = TargetKind::CustomResourceDefinition;

fn versioned(version: &str, costs: &[u64]) -> ObjectReport {
    let mut r = report(costs);
    r.kubernetes_version = version.into();
    r.valid = costs.iter().all(|&c| c <= PER_RULE_COST_LIMIT);
    r
}

/// The condition `type_` of `s`.
#[track_caller]
fn condition<'a>(s: &'a CostReportStatus, type_: &str) -> &'a Condition {
    s.conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition"))
}

fn upgrade_condition(s: &CostReportStatus) -> (String, String, String) {
    let c = condition(s, CONDITION_UPGRADE_SAFE);
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

/// The `UpgradeSafe` condition's message, once its status and reason are checked.
#[track_caller]
fn upgrade_message(s: &CostReportStatus, status: &str, why: &str) -> String {
    let (st, r, msg) = upgrade_condition(s);
    assert_eq!((st.as_str(), r.as_str()), (status, why), "{msg}");
    msg
}

fn status_of(r: &ObjectReport, prev: Option<&CostReportStatus>) -> CostReportStatus {
    let s = estimate_status(CRD, r, StatusSettings::default());
    with_conditions(s, CRD, Some(1), None, prev, Timestamp::UNIX_EPOCH)
}

#[test]
fn the_next_minor_decides_upgrade_safe() {
    use celcost_core::estimate::versions::with_next;
    // The same numbers on the next minor: safe.
    let same = status_of(
        &with_next(versioned("v1.33", &[100]), versioned("v1.34", &[100])),
        None,
    );
    let msg = upgrade_message(&same, "True", reason::ACCEPTED_BY_NEXT_VERSION);
    assert!(msg.contains("v1.34 accepts"), "{msg}");
    assert_eq!(same.next_version.as_ref().unwrap().change_count, 0);
    // A rule over the limit on the next minor: rejected there, naming the rule.
    let rejected = status_of(
        &with_next(
            versioned("v1.31", &[100, 4_100_000]),
            versioned("v1.32", &[100, 12_310_000]),
        ),
        Some(&same),
    );
    let msg = upgrade_message(&rejected, "False", reason::REJECTED_BY_NEXT_VERSION);
    assert!(
        msg.contains("^.spec.f1 [0]") && msg.contains("12,310,000"),
        "{msg}"
    );
    // The cluster keeps serving it after the upgrade; a rule refuses the schema's changes.
    assert!(
        msg.ends_with(
            "refuses any update that changes the schema of that version until the rule fits"
        ),
        "{msg}"
    );
    let next = rejected.next_version.as_ref().unwrap();
    assert!(!next.valid);
    assert_eq!(next.kubernetes_version, "v1.32");
    let t = transitions(CRD, Some(&same), &rejected);
    assert!(
        t.iter()
            .any(|t| t.warning && t.reason == reason::REJECTED_BY_NEXT_VERSION),
        "{t:?}"
    );
    // No repeated event while it stays so.
    let again = status_of(
        &with_next(
            versioned("v1.31", &[100, 4_100_000]),
            versioned("v1.32", &[100, 12_310_000]),
        ),
        Some(&rejected),
    );
    assert!(transitions(CRD, Some(&rejected), &again).is_empty());
    // Newly near the threshold (80%) on the next minor, still accepted.
    let near = status_of(
        &with_next(
            versioned("v1.32", &[5_000_000]),
            versioned("v1.33", &[9_100_000]),
        ),
        None,
    );
    let msg = upgrade_message(&near, "False", reason::NEAR_BUDGET_ON_NEXT_VERSION);
    assert!(msg.contains("91.0%"), "{msg}");
    // Already near on this minor: not a new problem.
    let was_near = status_of(
        &with_next(
            versioned("v1.32", &[8_500_000]),
            versioned("v1.33", &[9_100_000]),
        ),
        None,
    );
    assert_eq!(upgrade_condition(&was_near).0, "True");
    // No rules for the next minor: Unknown.
    let newest = status_of(&versioned("v1.36", &[100]), None);
    upgrade_message(&newest, "Unknown", reason::NEXT_VERSION_UNKNOWN);
    assert!(newest.next_version.is_none());
}

#[test]
fn levels() {
    assert_eq!(level(7_999_999, 10_000_000, 80), BudgetLevel::WithinBudget);
    assert_eq!(level(8_000_000, 10_000_000, 80), BudgetLevel::NearBudget);
    assert_eq!(level(10_000_000, 10_000_000, 80), BudgetLevel::NearBudget);
    assert_eq!(level(10_000_001, 10_000_000, 80), BudgetLevel::OverBudget);
    assert_eq!(level(u64::MAX, u64::MAX, 100), BudgetLevel::NearBudget);
}

#[test]
fn unbounded_costs_are_capped_and_marked() {
    let s = estimate_status(CRD, &report(&[u64::MAX, 3]), StatusSettings::default());
    let sum = s.summary.as_ref().unwrap();
    assert_eq!(sum.highest_rule_cost, i64::MAX);
    assert_eq!(sum.highest_rule_percent, "unbounded");
    assert!(sum.unbounded);
    assert_eq!(sum.rule_level, BudgetLevel::OverBudget);
    let schema = &s.schemas[0];
    assert!(schema.unbounded);
    assert_eq!(schema.total_cost, i64::MAX);
    assert!(schema.rules[0].unbounded);
    assert!(!schema.rules[1].unbounded);
    // It survives JSON as the API server stores it (int64).
    let json = serde_json::to_string(&s).unwrap();
    assert!(json.contains("9223372036854775807"));
    assert!(!json.contains("18446744073709551615"));
}

#[test]
fn keeps_the_costliest_rules_with_a_note() {
    let costs: Vec<u64> = (0..300).collect();
    let settings = StatusSettings {
        near_budget_percent: 80,
        max_rules: 10,
    };
    let s = estimate_status(CRD, &report(&costs), settings);
    let rules = &s.schemas[0].rules;
    assert_eq!(rules.len(), 10);
    assert_eq!(rules[0].cost, 299);
    assert_eq!(rules[9].cost, 290);
    assert_eq!(s.schemas[0].rule_count, 300);
    let sum = s.summary.as_ref().unwrap();
    assert_eq!((sum.rule_count, sum.rules_listed), (300, 10));
    assert!(
        s.note.contains("lists the 10 costliest of 300 rules"),
        "{}",
        s.note
    );
}

#[test]
fn stays_under_the_size_budget() {
    let mut r = report(&vec![5; 200]);
    for rule in &mut r.schemas[0].rules {
        rule.rule = "x".repeat(5000);
        rule.drivers.unbounded_fields = (0..40)
            .map(|i| format!("^.spec.{i}{}", "y".repeat(600)))
            .collect();
    }
    let settings = StatusSettings {
        near_budget_percent: 80,
        max_rules: 200,
    };
    let s = estimate_status(CRD, &r, settings);
    let size = serde_json::to_vec(&s).unwrap().len();
    assert!(size <= MAX_STATUS_BYTES, "{size}");
    assert!(s.schemas[0].rules.len() < 200);
    assert_eq!(s.schemas[0].rules[0].rule.len(), MAX_EXPRESSION_LEN);
    assert!(s.schemas[0].rules[0].drivers.unbounded_fields.len() <= MAX_DRIVERS);
    assert!(s.note.contains("costliest"), "{}", s.note);
    assert!(s.note.contains("cut"), "{}", s.note);
}

#[test]
fn the_status_and_the_warning_event_carry_the_bound_to_add() {
    use crate::{CostEstimator, WithNextMinor};
    use celcost_core::schema::catalog::SchemaCatalog;
    let hosts = serde_json::json!({"type": "array", "maxItems": 100, "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(h, h.matches('^[a-z.]+$'))"}]});
    let schema = serde_json::json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"hosts": hosts}}}});
    let crd = celcost_core::fixtures::crd(
        "example.com",
        "things",
        "Thing",
        "Namespaced",
        serde_json::json!([celcost_core::fixtures::version("v1", true, schema)]),
    );
    let pair = WithNextMinor {
        current: celcost_core::estimate::Estimator::default(),
        next: None,
        suggest: Some(celcost_advice::suggest::Settings::default()),
    };
    let report = pair.estimate(&crd, &SchemaCatalog::new()).unwrap();
    let status = with_conditions(
        estimate_status(CRD, &report, StatusSettings::default()),
        CRD,
        Some(1),
        None,
        None,
        Timestamp::UNIX_EPOCH,
    );
    let rule = &status.schemas[0].rules[0];
    assert!(!rule.suggestions.is_empty(), "{:?}", rule.no_suggestion);
    let first = &rule.suggestions[0];
    assert!(first.cost_after < rule.cost);
    let json = serde_json::to_value(&status).unwrap();
    let s = &json["schemas"][0]["rules"][0]["suggestions"][0];
    for key in ["path", "keyword", "value", "costAfter", "marker"] {
        assert!(!s[key].is_null(), "{key} missing in {s}");
    }
    let t = transitions(CRD, None, &status);
    let warn = t.iter().find(|t| t.warning).expect("a warning");
    let phrase = suggestion_phrase(&rule.suggestions, rule.cost as u64).unwrap();
    assert!(warn.note.contains(&phrase), "{} / {phrase}", warn.note);
    assert!(
        warn.note
            .contains(&format!("{}: {}", first.keyword, first.value)),
        "{}",
        warn.note
    );
    assert!(warn.note.contains(" → "), "{}", warn.note);
    assert!(warn.note.contains(".spec.hosts"), "{}", warn.note);
}

#[test]
fn conditions_and_transitions() {
    let now = Timestamp::UNIX_EPOCH;
    // The status of rules costing `costs`, at generation `g` and time `at`, after `prev`.
    let estimated_at = |costs: &[u64], g: i64, prev: Option<&CostReportStatus>, at: Timestamp| {
        let s = estimate_status(CRD, &report(costs), StatusSettings::default());
        with_conditions(s, CRD, Some(g), None, prev, at)
    };
    let within = estimated_at(&[100], 1, None, now);
    assert!(is_ready(&within));
    assert!(transitions(CRD, None, &within).is_empty());

    let later = Timestamp::from_second(1000).unwrap();
    let near = estimated_at(&[9_000_000, 9_000_000], 2, Some(&within), later);
    let wb = condition(&near, CONDITION_WITHIN_BUDGET);
    assert_eq!(
        (wb.status.as_str(), wb.reason.as_str()),
        ("False", reason::RULE_NEAR_BUDGET)
    );
    assert_eq!(wb.last_transition_time, Time(later));
    let ready = condition(&near, CONDITION_READY);
    assert_eq!(ready.last_transition_time, Time(now), "Ready did not flip");
    let t = transitions(CRD, Some(&within), &near);
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0].warning, t[0].reason),
        (true, reason::RULE_NEAR_BUDGET)
    );
    assert!(t[0].note.contains("^.spec.f0"), "{}", t[0].note);
    // Same level again: nothing.
    assert!(transitions(CRD, Some(&near), &near).is_empty());
    assert!(same_status(&near, &near.clone()));

    // The total (two rules of 60M... here 2 × 45M = 90M) near: TotalNearBudget.
    let total = estimated_at(&[45_000_000, 45_000_000], 3, Some(&near), later);
    let t = transitions(CRD, Some(&near), &total);
    let reasons: Vec<&str> = t.iter().map(|t| t.reason).collect();
    assert_eq!(
        reasons,
        [reason::RULE_OVER_BUDGET, reason::TOTAL_NEAR_BUDGET]
    );

    // Estimation fails: one Warning, then nothing while it keeps failing.
    let failed_after_total = |reason, message| {
        let failure = Failure { reason, message };
        with_conditions(
            failed_status("v1.36"),
            CRD,
            Some(4),
            Some(failure),
            Some(&total),
            later,
        )
    };
    let failed = failed_after_total(reason::ESTIMATION_FAILED, "boom");
    assert!(!is_ready(&failed));
    let t = transitions(CRD, Some(&total), &failed);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].reason, reason::ESTIMATION_FAILED);
    assert!(transitions(CRD, Some(&failed), &failed).is_empty());
    let estimated = |s: &CostReportStatus| {
        let c = condition(s, CONDITION_ESTIMATED);
        (c.status.clone(), c.reason.clone())
    };
    assert_eq!(
        estimated(&failed),
        ("False".into(), "EstimationFailed".into())
    );
    assert_eq!(estimated(&total), ("True".into(), "Estimated".into()));

    // Over the work budget: its own reason, on the conditions and the one event.
    let over = failed_after_total(
        reason::WORK_BUDGET_EXCEEDED,
        "estimate stopped: work budget of 10 steps exceeded at spec.x",
    );
    assert_eq!(
        estimated(&over),
        ("False".into(), "WorkBudgetExceeded".into())
    );
    let t = transitions(CRD, Some(&total), &over);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].reason, reason::WORK_BUDGET_EXCEEDED);
    assert!(
        t[0].note.contains("work budget of 10 steps"),
        "{}",
        t[0].note
    );

    // Back to an estimate within budget: Normal events for what had been reported near/over
    // before the failure are not repeated (the failure reset the levels).
    let back = estimated_at(&[100], 5, Some(&failed), later);
    assert!(transitions(CRD, Some(&failed), &back).is_empty());
}

#[test]
fn a_total_over_its_limit_on_the_next_minor_refuses_every_update() {
    use celcost_core::estimate::versions::with_next;
    let mut next = versioned("v1.32", &[9_500_000; 11]);
    next.schemas[0].exceeds_total_limit = true;
    next.valid = false;
    let st = status_of(&with_next(versioned("v1.31", &[900_000; 11]), next), None);
    let msg = upgrade_message(&st, "False", reason::REJECTED_BY_NEXT_VERSION);
    assert!(
        msg.contains("104,500,000")
            && msg
                .ends_with("keeps serving it, but refuses every update of it until the total fits"),
        "{msg}"
    );
}
