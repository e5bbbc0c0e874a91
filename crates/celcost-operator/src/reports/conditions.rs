//! A `CostReport` status's conditions (`Ready`, `Estimated`, `WithinBudget`, `UpgradeSafe`, and
//! for CRDs `SchemaUpdatable`: [`super::stored`]), the
//! status of a target whose estimate failed, and whether two statuses differ. Pure: no IO.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::status::{
    CONDITION_ESTIMATED, CONDITION_READY, CONDITION_UPGRADE_SAFE, CONDITION_WITHIN_BUDGET, reason,
};
use crate::resource::{BudgetLevel, CostReportStatus, MAX_TEXT_LEN, Summary, TargetKind};
use celcost_core::report::format::{thousands, truncate};

/// The status of a target the estimator could not report on.
pub fn failed_status(kubernetes_version: &str) -> CostReportStatus {
    CostReportStatus {
        kubernetes_version: kubernetes_version.to_string(),
        ..CostReportStatus::default()
    }
}

/// Why a target has no estimate.
pub fn estimation_failed_message(kind: TargetKind, detail: Option<&str>) -> String {
    match (kind, detail) {
        (_, Some(d)) => format!("the estimator failed: {d}"),
        (TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy, None) => {
            "the estimator does not handle this policy's API version".to_string()
        }
        (TargetKind::CustomResourceDefinition, None) => {
            "the estimator returned no report for this object".to_string()
        }
    }
}

/// Why a target has no estimate: a reason of [`reason`] (`EstimationFailed`,
/// `WorkBudgetExceeded`) and a message.
#[derive(Clone, Copy, Debug)]
pub struct Failure<'a> {
    pub reason: &'static str,
    pub message: &'a str,
}

/// Sets `observedGeneration` and the `Ready`, `Estimated` and `WithinBudget` conditions.
/// `failure` says why there is no estimate. `lastTransitionTime` is kept from `prev` unless the
/// condition's status flips.
pub fn with_conditions(
    mut status: CostReportStatus,
    kind: TargetKind,
    generation: Option<i64>,
    failure: Option<Failure<'_>>,
    prev: Option<&CostReportStatus>,
    now: Timestamp,
) -> CostReportStatus {
    status.observed_generation = generation;
    let (ready, within) = match (failure.map(|f| f.message), status.summary.as_ref()) {
        (None, Some(s)) => {
            let mut ready_msg = format!(
                "estimated with the Kubernetes {} cost model",
                status.kubernetes_version
            );
            if status.valid == Some(false) {
                // The cluster stores and serves the object: "refuse on create", never a bare
                // "reject" (see `SchemaUpdatable` for which updates pass).
                ready_msg.push_str(
                    "; the API server of this version would refuse the object on create (the cluster stores and serves it)",
                );
                if let Some(e) = status.errors.first() {
                    ready_msg.push_str(": ");
                    ready_msg.push_str(e);
                }
            }
            (
                ("True", reason::ESTIMATED, ready_msg),
                within_budget(kind, s),
            )
        }
        (f, _) => {
            let msg = f.unwrap_or("no estimate").to_string();
            let why = failure.map_or(reason::ESTIMATION_FAILED, |f| f.reason);
            (("False", why, msg.clone()), ("False", why, msg))
        }
    };
    let estimated = (ready.0, ready.1, ready.2.clone());
    let prev_conds = prev.map(|p| p.conditions.as_slice()).unwrap_or_default();
    let upgrade: (String, String, String) = match (failure, &status.next_version) {
        (None, Some(n)) => (n.upgrade_safe.clone(), n.reason.clone(), n.message.clone()),
        (None, None) => (
            "Unknown".into(),
            reason::NEXT_VERSION_UNKNOWN.into(),
            format!(
                "celcost has no rules for the Kubernetes minor after {} (its newest is v{})",
                status.kubernetes_version,
                celcost_core::cel::minor::NEWEST
            ),
        ),
        (Some(_), _) => (
            "Unknown".into(),
            reason::NEXT_VERSION_UNKNOWN.into(),
            "no estimate".to_string(),
        ),
    };
    let upgrade = (upgrade.0.as_str(), upgrade.1.as_str(), upgrade.2);
    let updatable = super::stored::schema_updatable(kind, &status, failure.is_some());
    status.conditions = vec![
        condition(CONDITION_READY, ready, generation, prev_conds, now),
        condition(CONDITION_ESTIMATED, estimated, generation, prev_conds, now),
        condition(CONDITION_WITHIN_BUDGET, within, generation, prev_conds, now),
        condition(CONDITION_UPGRADE_SAFE, upgrade, generation, prev_conds, now),
    ];
    if let Some(u) = updatable {
        status.conditions.push(condition(
            super::stored::CONDITION_SCHEMA_UPDATABLE,
            u,
            generation,
            prev_conds,
            now,
        ));
    }
    status
}

fn condition(
    type_: &str,
    (status, reason, message): (&str, &str, String),
    generation: Option<i64>,
    prev: &[Condition],
    now: Timestamp,
) -> Condition {
    let last_transition_time = prev
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| Time(now));
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: truncate(&message, MAX_TEXT_LEN).0,
        observed_generation: generation,
        last_transition_time,
    }
}

fn within_budget(kind: TargetKind, s: &Summary) -> (&'static str, &'static str, String) {
    let (rule_word, rule_what, total_what) = match kind {
        TargetKind::CustomResourceDefinition => ("rule", "per-rule limit", "per-schema limit"),
        TargetKind::ValidatingAdmissionPolicy => ("expression", "per-call limit", "runtime budget"),
        TargetKind::MutatingAdmissionPolicy => (
            "expression",
            "per-call limit",
            "runtime budget of a mutation",
        ),
    };
    let rule = format!(
        "highest {rule_word} {} ({} of the {} {rule_what})",
        thousands(s.highest_rule_cost as u64),
        s.highest_rule_percent,
        thousands(s.rule_limit as u64)
    );
    let total = format!(
        "highest total {} ({} of the {} {total_what})",
        thousands(s.highest_total_cost as u64),
        s.highest_total_percent,
        thousands(s.total_limit as u64)
    );
    let counts = format!(
        "{} {rule_word}s over the limit, {} at or above {}%",
        s.rules_over_budget, s.rules_near_budget, s.near_budget_percent
    );
    let reason = match (s.rule_level, s.total_level) {
        (BudgetLevel::OverBudget, _) => reason::RULE_OVER_BUDGET,
        (_, BudgetLevel::OverBudget) => reason::TOTAL_OVER_BUDGET,
        (BudgetLevel::NearBudget, _) => reason::RULE_NEAR_BUDGET,
        (_, BudgetLevel::NearBudget) => reason::TOTAL_NEAR_BUDGET,
        _ => reason::WITHIN_BUDGET,
    };
    let status = if reason == reason::WITHIN_BUDGET {
        "True"
    } else {
        "False"
    };
    (status, reason, format!("{rule}; {total}; {counts}"))
}

/// Whether two statuses are equal apart from `lastTransitionTime`.
pub fn same_status(a: &CostReportStatus, b: &CostReportStatus) -> bool {
    fn strip(s: &CostReportStatus) -> CostReportStatus {
        let mut s = s.clone();
        for c in &mut s.conditions {
            c.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        }
        s
    }
    strip(a) == strip(b)
}

/// Whether the status has an estimate (`Ready=True`).
pub fn is_ready(s: &CostReportStatus) -> bool {
    s.conditions
        .iter()
        .any(|c| c.type_ == CONDITION_READY && c.status == "True")
}
