//! Text of suggestions, for the table, markdown, SARIF and events; and the object with the
//! first suggestions applied.

use celcost_core::report::format::num;
use celcost_core::report::{ObjectReport, RuleReport, SchemaReport, Suggestion, suggestion_groups};
use serde_json::Value;

use super::model::RuleCost;
use super::verify::json_node;

/// One alternative (the bounds of one group) as a line a person can act on:
/// `add maxItems: 64 to ^.spec.tags (+kubebuilder:validation:MaxItems=64): cost 9,120,000 →
/// 570,000`; several bounds are joined with `and`, prefixed `together:`.
pub fn suggestion_line(group: &[&Suggestion], cost_before: u64) -> String {
    let parts: Vec<String> = group
        .iter()
        .map(|b| {
            let place = match b.path.strip_prefix("spec.versions[") {
                Some(rest) => {
                    format!(
                        " in spec.versions[{}",
                        rest.split_once(']').map(|x| x.0).unwrap_or_default()
                    ) + "]"
                }
                None => String::new(),
            };
            let marker = format!("{} on {}", b.marker, b.marker_on);
            match b.current {
                Some(c) => format!(
                    "lower {} from {c} to {} on {}{place} ({marker})",
                    b.keyword, b.value, b.schema_path
                ),
                None => format!(
                    "add {}: {} to {}{place} ({marker})",
                    b.keyword, b.value, b.schema_path
                ),
            }
        })
        .collect();
    // What each bound changes for the API's users, after the numbers (a line cut to fit, as
    // an apply-time warning is, keeps them): safe, or breaking.
    let notes: Vec<String> = group
        .iter()
        .filter_map(|b| {
            let whose = if group.len() > 1 {
                format!("{} on {}: ", b.keyword, b.schema_path)
            } else {
                String::new()
            };
            match (&b.implied_by, b.breaks()) {
                (Some(why), _) => Some(format!("safe: {whose}{why}")),
                (None, true) => Some(format!(
                    "breaking: {whose}{}, accepted today, are refused from then on",
                    b.refused()
                )),
                (None, false) => None,
            }
        })
        .collect();
    let prefix = if parts.len() > 1 { "together: " } else { "" };
    let after = group.first().map(|b| b.cost_after).unwrap_or_default();
    let mut line = format!(
        "{prefix}{}: cost {} → {}",
        parts.join(" and "),
        num(cost_before),
        num(after)
    );
    for n in notes {
        line.push_str("; ");
        line.push_str(&n);
    }
    line
}

/// Every alternative as a line (those after the first start with `or: `), or the reason none
/// helps.
pub fn suggestion_lines(
    suggestions: &[Suggestion],
    none: Option<&str>,
    before: u64,
) -> Vec<String> {
    let groups = suggestion_groups(suggestions);
    let mut out: Vec<String> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let l = suggestion_line(g, before);
            if i == 0 { l } else { format!("or: {l}") }
        })
        .collect();
    if !out.is_empty() && groups.iter().all(|g| g.len() > 1) {
        out[0] = format!("{} (no single bound does it)", out[0]);
    }
    if out.is_empty()
        && let Some(n) = none
    {
        out.push(n.to_string());
    }
    out
}

/// A rule's best suggestion as one line, or why none helps; `None` when the rule needs none.
pub fn suggestion_text(r: &RuleReport) -> Option<String> {
    suggestion_lines(
        &r.suggestions,
        r.no_suggestion.as_deref(),
        RuleCost::of_report(r).judged(),
    )
    .into_iter()
    .next()
}

/// A schema total's best suggestion as one line, or why none helps; `None` when it needs none.
pub fn schema_suggestion_text(s: &SchemaReport) -> Option<String> {
    suggestion_lines(&s.suggestions, s.no_suggestion.as_deref(), s.total_cost)
        .into_iter()
        .next()
}

/// The object with the first suggestion of every finding applied (the lowest value where two
/// set the same bound): what the test suite estimates again to check that it is accepted.
pub fn apply_first_suggestions(object: &Value, report: &ObjectReport) -> Value {
    // Each node (its roots and steps, as the suggestion carries them) and keyword once, at the
    // lowest value any first alternative asks for.
    let mut wanted: Vec<(&Suggestion, i64)> = Vec::new();
    let firsts = report.schemas.iter().flat_map(|s| {
        s.rules
            .iter()
            .map(|r| &r.suggestions)
            .chain(std::iter::once(&s.suggestions))
            .filter_map(|v| suggestion_groups(v).into_iter().next())
    });
    for g in firsts {
        for b in g {
            let same = |(w, _): &&mut (&Suggestion, i64)| {
                w.roots == b.roots && w.steps == b.steps && w.keyword == b.keyword
            };
            match wanted.iter_mut().find(same) {
                Some(w) => w.1 = w.1.min(b.value),
                None => wanted.push((b, b.value)),
            }
        }
    }
    let mut copy = object.clone();
    for (b, value) in wanted {
        for root in &b.roots {
            if let Some(o) = json_node(&mut copy, root, &b.steps).and_then(Value::as_object_mut) {
                o.insert(b.keyword.name().to_string(), Value::from(value));
            }
        }
    }
    copy
}
