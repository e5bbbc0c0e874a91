//! The transitions between two `CostReport` statuses that deserve an event (a rule or total
//! crossing the near-budget threshold or the limit, the next minor turning unsafe), and the
//! advice they carry. Pure: no IO.

use super::conditions::is_ready;
use super::status::{CONDITION_READY, CONDITION_UPGRADE_SAFE, reason};
use crate::resource::{BudgetLevel, CostReportStatus, RuleStatus, SuggestionStatus, TargetKind};
use celcost_core::report::format::{thousands, truncate};

/// An event to publish about a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    pub warning: bool,
    pub reason: &'static str,
    pub note: String,
}

/// The events a status change deserves: a level of the highest rule or total that changed, or
/// the estimate starting to fail. None when nothing crossed a threshold (resyncs, restarts).
pub fn transitions(
    kind: TargetKind,
    prev: Option<&CostReportStatus>,
    new: &CostReportStatus,
) -> Vec<Transition> {
    let mut out = Vec::new();
    let prev_failed = prev.is_some_and(|p| !is_ready(p) && !p.conditions.is_empty());
    let Some(s) = new.summary.as_ref().filter(|_| is_ready(new)) else {
        if !prev_failed {
            let ready = new.conditions.iter().find(|c| c.type_ == CONDITION_READY);
            let msg = ready.map(|c| c.message.clone()).unwrap_or_default();
            let why = match ready.map(|c| c.reason.as_str()) {
                Some(reason::WORK_BUDGET_EXCEEDED) => reason::WORK_BUDGET_EXCEEDED,
                _ => reason::ESTIMATION_FAILED,
            };
            out.push(Transition {
                warning: true,
                reason: why,
                note: msg,
            });
        }
        return out;
    };
    let (prev_rule, prev_total) = prev
        .filter(|p| is_ready(p))
        .and_then(|p| p.summary.as_ref())
        .map_or(
            (BudgetLevel::WithinBudget, BudgetLevel::WithinBudget),
            |p| (p.rule_level, p.total_level),
        );
    let (rule_word, rule_what, total_what) = match kind {
        TargetKind::CustomResourceDefinition => (
            "rule",
            "per-rule cost limit (estimated)",
            "per-schema cost limit (estimated)",
        ),
        TargetKind::ValidatingAdmissionPolicy => (
            "expression",
            "per-call cost limit (runtime, estimated)",
            "runtime cost budget (estimated)",
        ),
        TargetKind::MutatingAdmissionPolicy => (
            "expression",
            "per-call cost limit (runtime, estimated)",
            "runtime cost budget of a mutation (estimated)",
        ),
    };
    if s.rule_level != prev_rule {
        let top = top_rule(new);
        out.push(level_transition(
            s.rule_level,
            [
                reason::RULE_OVER_BUDGET,
                reason::RULE_NEAR_BUDGET,
                reason::RULE_WITHIN_BUDGET,
            ],
            |head| {
                format!(
                    "Highest {rule_word} cost {} is {} of the {} {rule_what}: {head} budget{top}; {} over, {} at or above {}%.",
                    thousands(s.highest_rule_cost as u64),
                    s.highest_rule_percent,
                    thousands(s.rule_limit as u64),
                    s.rules_over_budget,
                    s.rules_near_budget,
                    s.near_budget_percent
                )
            },
            || top_rule_advice(new),
        ));
    }
    if s.total_level != prev_total {
        out.push(level_transition(
            s.total_level,
            [
                reason::TOTAL_OVER_BUDGET,
                reason::TOTAL_NEAR_BUDGET,
                reason::TOTAL_WITHIN_BUDGET,
            ],
            |head| {
                format!(
                    "Highest total cost {} is {} of the {} {total_what}: {head} budget.",
                    thousands(s.highest_total_cost as u64),
                    s.highest_total_percent,
                    thousands(s.total_limit as u64),
                )
            },
            || top_total_advice(new),
        ));
    }
    // The next minor: a warning when it starts to reject the object or push a rule near its
    // limit (`UpgradeSafe` turning False), whatever the reason was before.
    let upgrade = |st: &CostReportStatus| {
        st.conditions
            .iter()
            .find(|c| c.type_ == CONDITION_UPGRADE_SAFE)
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    };
    if let Some((status, why, message)) = upgrade(new)
        && status == "False"
        && prev
            .and_then(upgrade)
            .is_none_or(|p| p.0 != "False" || p.1 != why)
    {
        let reason = if why == reason::REJECTED_BY_NEXT_VERSION {
            reason::REJECTED_BY_NEXT_VERSION
        } else {
            reason::NEAR_BUDGET_ON_NEXT_VERSION
        };
        out.push(Transition {
            warning: true,
            reason,
            note: truncate(&format!("Upgrade: {message}."), 1024).0,
        });
    }
    // A CRD served though refused on create: which updates pass.
    if let Some((reason, warning, note)) = super::stored::transition(prev, new) {
        out.push(Transition {
            warning,
            reason,
            note,
        });
    }
    out
}

/// The bounds of the first suggested alternative, as an event says them: `add maxItems: 64 to
/// .spec.tags (cost 9,120,000 → 570,000)`.
pub fn suggestion_phrase(suggestions: &[SuggestionStatus], before: u64) -> Option<String> {
    let first = suggestions.first()?;
    let parts: Vec<String> = suggestions
        .iter()
        .filter(|b| b.group == first.group)
        .map(|b| {
            let at = b.schema_path.trim_start_matches('^');
            let at = if at.is_empty() { "the schema root" } else { at };
            match b.current {
                Some(c) => format!("lower {} from {c} to {} on {at}", b.keyword, b.value),
                None => format!("add {}: {} to {at}", b.keyword, b.value),
            }
        })
        .collect();
    // What the bounds change for the API's users: safe, or breaking.
    let mut notes = String::new();
    for b in suggestions.iter().filter(|b| b.group == first.group) {
        match (&b.implied_by, b.current.is_some() && !b.safe) {
            (Some(why), _) => notes.push_str(&format!("; safe: {why}")),
            (None, true) => notes.push_str(&format!(
                "; breaking: {}, accepted today, are refused from then on",
                b.keyword.refused(b.value)
            )),
            (None, false) => {}
        }
    }
    Some(format!(
        "{} (cost {} → {}{notes})",
        parts.join(" and "),
        thousands(before),
        thousands(first.cost_after.max(0) as u64)
    ))
}

/// The Event of a budget level reached: a warning unless back within budget, its reason among
/// `[over, near, within]`, its note what `says` with the level's words, then `advice()` unless
/// back within budget.
fn level_transition(
    level: BudgetLevel,
    reasons: [&'static str; 3],
    says: impl FnOnce(&str) -> String,
    advice: impl FnOnce() -> String,
) -> Transition {
    let (warning, reason, head) = match level {
        BudgetLevel::OverBudget => (true, reasons[0], "over"),
        BudgetLevel::NearBudget => (true, reasons[1], "near"),
        BudgetLevel::WithinBudget => (false, reasons[2], "back within"),
    };
    let advice = if warning { advice() } else { String::new() };
    Transition {
        warning,
        reason,
        note: truncate(&(says(head) + &advice), 1024).0,
    }
}

fn advice(suggestions: &[SuggestionStatus], none: Option<&str>, before: u64) -> String {
    match (suggestion_phrase(suggestions, before), none) {
        (Some(p), _) => format!(" To fix: {p}."),
        (None, Some(n)) => format!(" {n}."),
        (None, None) => String::new(),
    }
}

/// What to do about the costliest listed rule (its first suggestion, or why none helps).
fn top_rule_advice(s: &CostReportStatus) -> String {
    costliest_rule(s).map_or_else(String::new, |r| {
        advice(
            &r.suggestions,
            r.no_suggestion.as_deref(),
            r.judged_cost().max(0) as u64,
        )
    })
}

/// What to do about the costliest schema total.
fn top_total_advice(s: &CostReportStatus) -> String {
    first_max(s.schemas.iter(), |sc| sc.total_cost).map_or_else(String::new, |sc| {
        advice(
            &sc.suggestions,
            sc.no_suggestion.as_deref(),
            sc.total_cost.max(0) as u64,
        )
    })
}

/// The first of the costliest listed rules (rules are listed costliest first).
fn costliest_rule(s: &CostReportStatus) -> Option<&RuleStatus> {
    first_max(
        s.schemas.iter().flat_map(|sc| sc.rules.iter()),
        RuleStatus::judged_cost,
    )
}

/// The first of the items with the highest `key`.
fn first_max<'a, T>(items: impl Iterator<Item = &'a T>, key: impl Fn(&T) -> i64) -> Option<&'a T> {
    let mut top: Option<&T> = None;
    for x in items {
        if top.is_none_or(|t| key(x) > key(t)) {
            top = Some(x);
        }
    }
    top
}

/// ` (rule at ^.spec.x #0: self.size() < 10)` for the costliest listed rule or expression.
fn top_rule(s: &CostReportStatus) -> String {
    if let Some(r) = costliest_rule(s) {
        return format!(
            " (rule at {} #{}: {})",
            r.path,
            r.index,
            truncate(&r.rule, 200).0
        );
    }
    if let Some(e) = s.expressions.first() {
        return format!(
            " (expression at {}: {})",
            e.field_path,
            truncate(&e.expression, 200).0
        );
    }
    String::new()
}
