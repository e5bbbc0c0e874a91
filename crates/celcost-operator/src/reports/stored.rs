//! A CRD the cluster stores and serves though its API server would refuse it on create (after
//! an upgrade to a minor that costs its rules higher, say): what the report says of it. The
//! estimator judges an update that keeps the object as it is ([`celcost_core::report::UpdateVerdict`]);
//! here that verdict becomes `status.update`, the `SchemaUpdatable` condition, its Event, and
//! never a bare "rejected": the object is served, updates that keep its schemas may pass, and
//! a schema change is refused until the named rule fits. Pure: no IO.

use crate::resource::{
    CostReportStatus, HeldExpressionStatus, MAX_ERRORS, MAX_EXPRESSION_LEN, MAX_TEXT_LEN,
    StoredOnlyStatus, TargetKind, UpdateStatus, cap,
};
use celcost_core::report::format::{PercentStyle, percent_in, thousands, truncate};
use celcost_core::report::{PER_RULE_COST_LIMIT, UpdateVerdict};

/// Whether the schemas of a CRD may change, as the API server of the cluster judges an update.
pub const CONDITION_SCHEMA_UPDATABLE: &str = "SchemaUpdatable";

/// Reasons of `SchemaUpdatable` (and of its Events).
pub mod reason {
    /// True: the API server accepts the object as it is, on create as on update.
    pub const ACCEPTED_ON_CREATE: &str = "AcceptedOnCreate";
    /// False: stored and served; updates that keep its schemas pass, a schema change is refused
    /// until the rules it names fit.
    pub const SCHEMA_FROZEN: &str = "SchemaFrozen";
    /// False: stored and served; the API server refuses every update of it.
    pub const UPDATES_REFUSED: &str = "UpdatesRefused";
    /// Unknown: no estimate, or the update could not be judged.
    pub const UPDATE_NOT_JUDGED: &str = "UpdateNotJudged";
}

/// The verdict as the status holds it: capped to int64, cut to the status's bounds.
pub fn update_status(u: &UpdateVerdict) -> UpdateStatus {
    let text = |s: &str, max: usize| truncate(s, max).0;
    UpdateStatus {
        stored_source: text(&u.stored_source, MAX_TEXT_LEN),
        valid: u.valid,
        errors: u
            .errors
            .iter()
            .take(MAX_ERRORS)
            .map(|e| text(e, MAX_TEXT_LEN))
            .collect(),
        held: u
            .held
            .iter()
            .take(MAX_ERRORS)
            .map(|h| {
                let (cost, unbounded) = cap(h.cost);
                HeldExpressionStatus {
                    schema_field_path: text(&h.schema_field_path, 256),
                    versions: h.versions.iter().take(64).map(|v| text(v, 64)).collect(),
                    path: text(&h.path, MAX_TEXT_LEN),
                    index: cap(h.index).0,
                    what: text(&h.what, 32),
                    expression: text(&h.expression, MAX_EXPRESSION_LEN),
                    cost,
                    error: text(&h.error, MAX_TEXT_LEN),
                    unbounded,
                }
            })
            .collect(),
        stored_only: u
            .stored_only
            .iter()
            .take(MAX_ERRORS)
            .map(|s| StoredOnlyStatus {
                field_path: text(&s.field_path, MAX_TEXT_LEN),
                expression: text(&s.expression, MAX_EXPRESSION_LEN),
                compile_error: text(&s.compile_error, MAX_TEXT_LEN),
            })
            .collect(),
        stopped: u.stopped.as_ref().map(|s| text(&s.message, MAX_TEXT_LEN)),
    }
}

/// `SchemaUpdatable` of a CRD's status (status, reason, message); `None` for policies. The
/// status has an estimate (`failed` is false) unless said.
pub fn schema_updatable(
    kind: TargetKind,
    status: &CostReportStatus,
    failed: bool,
) -> Option<(&'static str, &'static str, String)> {
    if kind != TargetKind::CustomResourceDefinition {
        return None;
    }
    let k = &status.kubernetes_version;
    if failed {
        return Some(("Unknown", reason::UPDATE_NOT_JUDGED, "no estimate".into()));
    }
    if status.valid != Some(false) {
        return Some((
            "True",
            reason::ACCEPTED_ON_CREATE,
            format!(
                "the API server of Kubernetes {k} accepts the object as it is, on create and on update"
            ),
        ));
    }
    let refused_on_create = format!(
        "The cluster stores and serves this object, but the API server of Kubernetes {k} would refuse it on create{}.",
        status
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default()
    );
    let Some(u) = status.update.as_ref() else {
        return Some((
            "Unknown",
            reason::UPDATE_NOT_JUDGED,
            format!("{refused_on_create} Its updates were not judged."),
        ));
    };
    if let Some(why) = &u.stopped {
        return Some((
            "Unknown",
            reason::UPDATE_NOT_JUDGED,
            format!("{refused_on_create} Its updates could not be judged: {why}"),
        ));
    }
    if !u.valid {
        return Some((
            "False",
            reason::UPDATES_REFUSED,
            format!(
                "{refused_on_create} It refuses every update of it too, even one that keeps its schemas: {}",
                // The total's own error says more than what contributed to it. Told by its text:
                // this sees the status only, whose errors are text (`UpdateStatus::errors`, what
                // the CRD stores). The parts (`UpdateVerdict::error_parts`, `CostError::
                // ContributedToTotal`) are in the estimator's report, which `update_status` has
                // already turned into this text; carrying them over would take a new status
                // field, a change of the CRD's schema.
                u.errors
                    .iter()
                    .find(|e| !e.contains("contributed to estimated rule cost total"))
                    .or(u.errors.first())
                    .map(String::as_str)
                    .unwrap_or("(no error)")
            ),
        ));
    }
    Some((
        "False",
        reason::SCHEMA_FROZEN,
        format!("{refused_on_create} {}", what_passes(status, u)),
    ))
}

/// Which updates pass and which are refused until what fits.
fn what_passes(status: &CostReportStatus, u: &UpdateStatus) -> String {
    let mut out = String::new();
    // The versions of each schema root with held expressions, and those expressions.
    let mut roots: Vec<(&[String], Vec<&HeldExpressionStatus>)> = Vec::new();
    for h in &u.held {
        match roots.iter_mut().find(|(v, _)| *v == h.versions.as_slice()) {
            Some(r) => r.1.push(h),
            None => roots.push((&h.versions, vec![h])),
        }
    }
    let total = status
        .summary
        .as_ref()
        .map(|s| {
            format!(
                " (the highest total, {}, fits the {} limit)",
                thousands(s.highest_total_cost.max(0) as u64),
                thousands(s.total_limit.max(0) as u64)
            )
        })
        .unwrap_or_default();
    if roots.is_empty() {
        out.push_str(&format!("Updates pass{total}"));
    } else {
        let kept: Vec<String> = roots.iter().map(|(v, _)| v.join(", ")).collect();
        let which = if kept.len() == 1 {
            format!("the schema of {}", kept[0])
        } else {
            format!("the schemas of {}", kept.join(" and of "))
        };
        out.push_str(&format!(
            "Updates that keep {which} pass{total}; an update that changes "
        ));
        let parts: Vec<String> = roots
            .iter()
            .map(|(versions, held)| {
                let named: Vec<String> = held
                    .iter()
                    .take(3)
                    .map(|h| {
                        let cost = h.cost.max(0) as u64;
                        format!(
                            "{} [{}] ({} {}, {} of the per-expression limit)",
                            h.path,
                            h.index,
                            h.what,
                            thousands(cost),
                            percent_in(cost, PER_RULE_COST_LIMIT, PercentStyle::STATUS)
                        )
                    })
                    .collect();
                let more = if held.len() > 3 {
                    format!(" and {} more", held.len() - 3)
                } else {
                    String::new()
                };
                format!(
                    "the schema of {} is refused until {}{more} {}",
                    versions.join(", "),
                    named.join(", "),
                    if held.len() == 1 { "fits" } else { "fit" }
                )
            })
            .collect();
        out.push_str(&parts.join("; one that changes "));
    }
    if let Some(s) = u.stored_only.first() {
        out.push_str(&format!(
            "; a new or edited expression is compiled as new: {} compiles only as the stored one ({})",
            s.field_path, s.compile_error
        ));
    }
    out.push('.');
    out
}

/// The Event a change of `SchemaUpdatable` deserves: a Warning when it turns False (or its
/// reason changes), a Normal one when it turns True from False. (reason, warning, note).
pub fn transition(
    prev: Option<&CostReportStatus>,
    new: &CostReportStatus,
) -> Option<(&'static str, bool, String)> {
    let cond = |s: &CostReportStatus| {
        s.conditions
            .iter()
            .find(|c| c.type_ == CONDITION_SCHEMA_UPDATABLE)
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    let (status, why, message) = cond(new)?;
    let before = prev.and_then(cond);
    let note = |m: &str| truncate(m, 1024).0;
    match status.as_str() {
        "False" if before.as_ref().is_none_or(|b| b.0 != "False" || b.1 != why) => {
            let r = if why == reason::UPDATES_REFUSED {
                reason::UPDATES_REFUSED
            } else {
                reason::SCHEMA_FROZEN
            };
            Some((r, true, note(&message)))
        }
        "True" if before.is_some_and(|b| b.0 == "False") => {
            Some((reason::ACCEPTED_ON_CREATE, false, note(&message)))
        }
        _ => None,
    }
}

/// `(schema frozen, every update refused)` for the metrics, from `SchemaUpdatable`.
pub fn gauges(status: &CostReportStatus) -> (bool, bool) {
    let c = status
        .conditions
        .iter()
        .find(|c| c.type_ == CONDITION_SCHEMA_UPDATABLE);
    match c.map(|c| c.reason.as_str()) {
        Some(reason::SCHEMA_FROZEN) => (true, false),
        Some(reason::UPDATES_REFUSED) => (true, true),
        _ => (false, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Summary;
    use celcost_core::report::{EstimateStopped, HeldExpression, StoredOnlyExpression};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use k8s_openapi::jiff::Timestamp;

    fn held(path: &str, cost: u64, versions: &[&str]) -> HeldExpression {
        HeldExpression {
            schema_field_path: "spec.validation.openAPIV3Schema".into(),
            versions: versions.iter().map(|v| v.to_string()).collect(),
            path: path.into(),
            index: 0,
            what: "rule".into(),
            expression: "x".repeat(5000),
            cost,
            error: "e".into(),
        }
    }

    fn served(update: Option<UpdateVerdict>) -> CostReportStatus {
        CostReportStatus {
            kubernetes_version: "v1.36".into(),
            valid: Some(false),
            errors: vec!["spec.x: Forbidden: estimated rule cost exceeds budget".into()],
            summary: Some(Summary {
                highest_total_cost: 40_000_000,
                total_limit: 100_000_000,
                ..Summary::default()
            }),
            update: update.as_ref().map(update_status),
            ..CostReportStatus::default()
        }
    }

    #[test]
    fn the_verdict_is_capped_and_cut_for_the_status() {
        let u = UpdateVerdict {
            stored_source: "cluster".into(),
            valid: true,
            errors: (0..40).map(|i| format!("e{i}")).collect(),
            held: vec![held("^.a", u64::MAX, &["v1"])],
            stored_only: vec![StoredOnlyExpression::default(); 30],
            ..UpdateVerdict::default()
        };
        let s = update_status(&u);
        assert_eq!(s.errors.len(), MAX_ERRORS);
        assert_eq!(s.stored_only.len(), MAX_ERRORS);
        assert_eq!((s.held[0].cost, s.held[0].unbounded), (i64::MAX, true));
        assert!(s.held[0].expression.len() <= MAX_EXPRESSION_LEN);
        assert!(s.held[0].expression.ends_with('…'));
    }

    #[test]
    fn served_crds_are_frozen_or_refused_never_rejected() {
        let crd = TargetKind::CustomResourceDefinition;
        assert!(
            schema_updatable(TargetKind::ValidatingAdmissionPolicy, &served(None), false).is_none()
        );
        assert_eq!(
            schema_updatable(crd, &served(None), true).unwrap().1,
            reason::UPDATE_NOT_JUDGED
        );
        let accepted = CostReportStatus {
            valid: Some(true),
            ..served(None)
        };
        assert_eq!(schema_updatable(crd, &accepted, false).unwrap().0, "True");
        // Two roots: each named with what it waits for.
        let frozen = served(Some(UpdateVerdict {
            valid: true,
            held: vec![
                held("^.a", 20_000_000, &["v1"]),
                held("^.b", 30_000_000, &["v1"]),
                held("^.c", 12_000_000, &["v2"]),
            ],
            ..UpdateVerdict::default()
        }));
        let (st, why, m) = schema_updatable(crd, &frozen, false).unwrap();
        assert_eq!((st, why), ("False", reason::SCHEMA_FROZEN));
        assert!(m.starts_with("The cluster stores and serves this object, but the API server of Kubernetes v1.36 would refuse it on create (spec.x: Forbidden"), "{m}");
        assert!(m.contains("Updates that keep the schemas of v1 and of v2 pass (the highest total, 40,000,000, fits the 100,000,000 limit)"), "{m}");
        assert!(m.contains("the schema of v1 is refused until ^.a [0] (rule 20,000,000, 200% of the per-expression limit), ^.b [0] (rule 30,000,000, 300% of the per-expression limit) fit; one that changes the schema of v2 is refused until ^.c [0] (rule 12,000,000, 120% of the per-expression limit) fits."), "{m}");
        assert!(!m.to_lowercase().contains("reject"));
        let refused = served(Some(UpdateVerdict {
            valid: false,
            errors: vec![
                "spec.a: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".into(),
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget".into(),
            ],
            ..UpdateVerdict::default()
        }));
        let (st, why, m) = schema_updatable(crd, &refused, false).unwrap();
        assert_eq!((st, why), ("False", reason::UPDATES_REFUSED));
        assert!(m.ends_with("even one that keeps its schemas: spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget"), "{m}");
        let stopped = served(Some(UpdateVerdict {
            stopped: Some(EstimateStopped {
                message: "work budget".into(),
                ..EstimateStopped::default()
            }),
            ..UpdateVerdict::default()
        }));
        assert_eq!(schema_updatable(crd, &stopped, false).unwrap().0, "Unknown");
    }

    fn with(status: &str, why: &str) -> CostReportStatus {
        CostReportStatus {
            conditions: vec![Condition {
                type_: CONDITION_SCHEMA_UPDATABLE.into(),
                status: status.into(),
                reason: why.into(),
                message: format!("{why}!"),
                observed_generation: None,
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
            }],
            ..CostReportStatus::default()
        }
    }

    #[test]
    fn events_on_transitions_only() {
        let ok = with("True", reason::ACCEPTED_ON_CREATE);
        let frozen = with("False", reason::SCHEMA_FROZEN);
        let refused = with("False", reason::UPDATES_REFUSED);
        assert_eq!(transition(None, &ok), None);
        assert_eq!(
            transition(None, &frozen),
            Some((reason::SCHEMA_FROZEN, true, "SchemaFrozen!".into()))
        );
        assert_eq!(transition(Some(&frozen), &frozen), None);
        assert_eq!(
            transition(Some(&frozen), &refused).unwrap().0,
            reason::UPDATES_REFUSED
        );
        assert_eq!(
            transition(Some(&refused), &ok),
            Some((
                reason::ACCEPTED_ON_CREATE,
                false,
                "AcceptedOnCreate!".into()
            ))
        );
        assert_eq!(gauges(&frozen), (true, false));
        assert_eq!(gauges(&refused), (true, true));
        assert_eq!(gauges(&ok), (false, false));
    }
}
