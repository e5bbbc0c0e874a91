//! What the table and the Markdown share: an object's header, its rows (rules, totals and policy
//! expressions, worst first, each with why it costs what it does and where it is), the lines of a
//! range of minors and a policy's budgets.

use std::fmt::Write as _;

use celcost_core::report::format::{num, percent};
use celcost_core::report::{
    DEFAULT_NEAR_BUDGET_PERCENT, MATCH_CONDITIONS_COST_BUDGET, ObjectReport, PER_CALL_LIMIT,
    PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, RUNTIME_COST_BUDGET,
};

pub(super) fn truncate(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let t: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{t}…")
    }
}

/// One row of a rendered rule table.
pub(super) struct Row {
    pub(super) cost: u64,
    pub(super) limit: u64,
    pub(super) cells: Vec<String>,
    /// Explanations, one per line: (label, text).
    pub(super) why: Vec<(&'static str, String)>,
}

/// At most `n` items, then how many more.
pub(super) fn some_of(items: &[String], n: usize) -> String {
    if items.len() <= n {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..n].join(", "), items.len() - n)
    }
}

/// `label: a, b, and 3 more (what)`: fields of a kind, at most `n` named, when there are any.
fn push_fields(
    why: &mut Vec<(&'static str, String)>,
    label: &'static str,
    fields: &[String],
    n: usize,
    what: &str,
) {
    if !fields.is_empty() {
        why.push((label, format!("{} ({what})", some_of(fields, n))));
    }
}

/// Why a rule costs what it does: the unbounded ancestors its cardinality comes from, the
/// unbounded fields it reads (the table's why lines, the findings' text).
pub(super) fn drivers_why(rule: &celcost_core::report::RuleReport) -> Vec<String> {
    let mut why = Vec::new();
    if !rule.drivers.unbounded_ancestors.is_empty() {
        why.push(format!(
            "cardinality {} from the request size: no maxItems/maxProperties on {}",
            num(rule.cardinality_used),
            rule.drivers.unbounded_ancestors.join(", ")
        ));
    }
    if !rule.drivers.unbounded_fields.is_empty() {
        why.push(format!(
            "unbounded: {} (add maxLength/maxItems/maxProperties)",
            rule.drivers.unbounded_fields.join(", ")
        ));
    }
    why
}

pub(super) fn crd_rows(r: &ObjectReport) -> Vec<Row> {
    let mut rows = Vec::new();
    for s in &r.schemas {
        for rule in &s.rules {
            let mut why = drivers_why(rule);
            if let Some(e) = &rule.compile_error {
                why.push(format!("does not compile: {}", truncate(e, 120)));
            }
            if !rule.compiled_by_apiserver {
                why.push("not compiled: the schema has errors at or below this node".into());
            }
            let cost = rule.judged_cost();
            rows.push(Row {
                cost,
                limit: PER_RULE_COST_LIMIT,
                cells: vec![
                    num(rule.cost),
                    percent(rule.cost, PER_RULE_COST_LIMIT),
                    num(rule.max_cost),
                    num(rule.cardinality_used),
                    format!("{}[{}]", rule.path, rule.index),
                    truncate(&rule.rule, 60),
                ],
                why: if why.is_empty() {
                    vec![]
                } else {
                    vec![("why", why.join("; "))]
                }
                .into_iter()
                .chain(rule_suggestions(rule))
                .chain(
                    rule.rewrites
                        .iter()
                        .map(|rw| ("cheaper", crate::rewrite::rewrite_line(rw))),
                )
                .collect(),
            });
        }
    }
    rows
}

/// A rule's suggested bounds, one line each (`suggest: add maxItems: 64 to ^.spec.tags ...`).
pub(super) fn rule_suggestions(
    rule: &celcost_core::report::RuleReport,
) -> Vec<(&'static str, String)> {
    crate::suggest::suggestion_lines(
        &rule.suggestions,
        rule.no_suggestion.as_deref(),
        rule.judged_cost(),
    )
    .into_iter()
    .map(|l| ("suggest", l))
    .collect()
}

/// A schema's total against the per-CRD budget: `{path} (versions …): total {n} = {p} of
/// {limit}`, the path between `code` and the total between `strong` (Markdown's marks; none in
/// the table).
pub(super) fn schema_total(
    s: &celcost_core::report::SchemaReport,
    code: &str,
    strong: &str,
) -> String {
    format!(
        "{code}{}{code} (versions {}): total {strong}{}{strong} = {} of {}",
        s.schema_field_path,
        s.versions.join(", "),
        num(s.total_cost),
        percent(s.total_cost, PER_SCHEMA_COST_LIMIT),
        num(PER_SCHEMA_COST_LIMIT)
    )
}

/// A schema total's suggested bounds, one line each.
pub(super) fn total_suggestions(s: &celcost_core::report::SchemaReport) -> Vec<String> {
    crate::suggest::suggestion_lines(&s.suggestions, s.no_suggestion.as_deref(), s.total_cost)
}

pub(super) fn policy_rows(r: &ObjectReport) -> Vec<Row> {
    let mut rows = Vec::new();
    for e in &r.expressions {
        let mut why = Vec::new();
        if let Some(t) = &e.typed {
            if let Some(err) = &t.error {
                why.push(("typed", truncate(err, 200)));
            } else {
                let worst = t.worst_against.clone().unwrap_or_default();
                why.push((
                    "typed",
                    if t.against.len() > 1 {
                        format!(
                            "worst against {worst} (of {} matched resources)",
                            t.against.len()
                        )
                    } else {
                        format!("against {worst}")
                    },
                ));
            }
            push_fields(
                &mut why,
                "drivers",
                &t.unbounded_fields,
                4,
                "no maxLength/maxItems/maxProperties: sized from the 3 MiB request",
            );
            push_fields(
                &mut why,
                "size unknown",
                &t.unknown_size_fields,
                4,
                "no schema gives a size",
            );
            if t.unknown_size_fields.is_empty() && t.max_cost_unbounded && t.error.is_none() {
                why.push((
                    "saturated",
                    "the estimate exceeds 2^64-1 (nested loops over request-sized lists)".into(),
                ));
            }
            push_fields(
                &mut why,
                "not in schema",
                &t.absent_fields,
                2,
                "the runtime stops with an error there",
            );
            if !t.failed_against.is_empty() {
                let first = t.failed_against[0].lines().next().unwrap_or_default();
                let more = if t.failed_against.len() > 1 {
                    format!(" (and {} more)", t.failed_against.len() - 1)
                } else {
                    String::new()
                };
                why.push(("type check", format!("{}{more}", truncate(first, 200))));
            }
        }
        if let Some(c) = &e.compile_error {
            why.push(("does not compile", truncate(c, 120)));
        }
        let judged = e.judged_cost();
        rows.push(Row {
            cost: judged.unwrap_or(0),
            limit: PER_CALL_LIMIT,
            cells: vec![
                e.max_cost.map(num).unwrap_or_else(|| "-".into()),
                e.typed
                    .as_ref()
                    .filter(|t| t.error.is_none())
                    .map(|t| num(t.max_cost))
                    .unwrap_or_else(|| "-".into()),
                judged
                    .map(|c| percent(c, PER_CALL_LIMIT))
                    .unwrap_or_else(|| "-".into()),
                e.kind.clone(),
                e.field_path.clone(),
                truncate(&e.expression, 60),
            ],
            why,
        });
    }
    rows
}

pub(super) fn rows(r: &ObjectReport) -> Vec<Row> {
    let mut rows = crd_rows(r);
    rows.extend(policy_rows(r));
    locate_rows(r, &mut rows);
    rows.sort_by(|a, b| {
        (b.cost as f64 / b.limit as f64)
            .partial_cmp(&(a.cost as f64 / a.limit as f64))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows
}

/// The rows' `at: file:line:column`, where it helps: on rows near their limit or that say what
/// to change (drivers, compile errors). Rows come one per rule (schema by schema), then one per expression.
pub(super) fn locate_rows(r: &ObjectReport, rows: &mut [Row]) {
    let locations = r
        .schemas
        .iter()
        .flat_map(|s| s.rules.iter().map(|x| x.location.as_ref()))
        .chain(r.expressions.iter().map(|e| e.location.as_ref()));
    for (row, loc) in rows.iter_mut().zip(locations) {
        let near = row.cost as f64 >= row.limit as f64 * NEAR_BUDGET_SHARE;
        if let Some(l) = loc
            && (near || row.why.iter().any(|(label, _)| *label != "typed"))
        {
            row.why.insert(0, ("at", l.to_string()));
        }
    }
}

/// The share of a limit from which the table shows where a row's rule is.
const NEAR_BUDGET_SHARE: f64 = DEFAULT_NEAR_BUDGET_PERCENT / 100.0;

/// ` (at file:line:column)` for error `i` of a report, when it was located.
pub(super) fn error_at(r: &ObjectReport, i: usize) -> String {
    r.error_locations
        .iter()
        .find(|l| l.error as usize == i)
        .map(|l| format!(" (at {})", l.location))
        .unwrap_or_default()
}

pub(super) fn header(r: &ObjectReport) -> String {
    if r.stopped.is_some() {
        return format!(
            "{} {} ({}) — NOT ESTIMATED for Kubernetes {}",
            r.kind, r.name, r.source, r.kubernetes_version
        );
    }
    let verdict = if r.valid { "accepted" } else { "REJECTED" };
    let range = match &r.by_version {
        Some(m) if m.verdicts.len() == 2 => format!(
            " (and {} below)",
            minor_name(&m.verdicts[0].kubernetes_version)
        ),
        Some(m) if m.verdicts.len() > 2 => format!(
            " (and {} to {} below)",
            minor_name(&m.verdicts[0].kubernetes_version),
            minor_name(&m.verdicts[m.verdicts.len() - 2].kubernetes_version)
        ),
        _ => String::new(),
    };
    format!(
        "{} {} ({}) — {} by Kubernetes {}{range}",
        r.kind, r.name, r.source, verdict, r.kubernetes_version
    )
}

/// Lines of changes between minors shown per object in the table.
const MAX_CHANGE_LINES: usize = 12;

/// `v1.31` → `1.31`.
pub(super) fn minor_name(v: &str) -> &str {
    v.trim_start_matches('v')
}

/// One value of a unit on a minor: `12,310,000 (rejected)`, `does not compile`.
pub(super) fn step_text(s: &celcost_core::report::versions::VersionStep) -> String {
    match (s.cost, &s.compile_error) {
        (_, Some(_)) => "does not compile".into(),
        (Some(c), None) => {
            let over = if s.exceeds_limit {
                " (over the limit)"
            } else {
                ""
            };
            format!("{} = {}{over}", num(c), percent(c, s.limit))
        }
        (None, None) => "absent".into(),
    }
}

/// The lines of a range of minors: the verdict on each, the oldest accepting, and every unit
/// that changes (`^.spec.cidrs[*] [0]: does not compile on 1.30 → 4,100,000 = 41.0% on 1.31`).
pub(super) fn version_lines(r: &ObjectReport) -> Vec<String> {
    let Some(m) = &r.by_version else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let verdicts: Vec<String> = m
        .verdicts
        .iter()
        .map(|v| {
            let mark = if v.stopped {
                "not estimated"
            } else if v.valid {
                "accepted"
            } else {
                "REJECTED"
            };
            format!("{} {mark}", minor_name(&v.kubernetes_version))
        })
        .collect();
    out.push(format!("by version: {}", verdicts.join(" | ")));
    let (first, last) = (
        m.verdicts
            .first()
            .map(|v| minor_name(&v.kubernetes_version)),
        m.verdicts.last().map(|v| minor_name(&v.kubernetes_version)),
    );
    match &m.oldest_accepting {
        Some(o) if Some(minor_name(o)) == first => {
            out.push(format!(
                "accepted from Kubernetes {} (the oldest in the range)",
                minor_name(o)
            ));
        }
        Some(o) => out.push(format!("accepted from Kubernetes {}", minor_name(o))),
        None => out.push(format!(
            "rejected by every Kubernetes version from {} to {}",
            first.unwrap_or("?"),
            last.unwrap_or("?")
        )),
    }
    // Upgrade day: where a minor accepts the object and the next rejects it, and why.
    let breaks = celcost_core::report::versions::accepted_then_rejected(m);
    for (a, b) in &breaks {
        let why: Vec<String> = celcost_core::report::versions::newly_failing(m, a, b)
            .into_iter()
            .filter_map(|c| {
                let s = celcost_core::report::versions::value_at(m, c, b)?;
                let factor = match (s.cost, &s.compile_error) {
                    (Some(cost), None) if s.exceeds_limit => format!(
                        ", factor {}",
                        celcost_core::report::format::budget_factor(cost, s.limit)
                    ),
                    _ => String::new(),
                };
                Some(format!("{} ({}{factor})", c.unit, step_text(s)))
            })
            .collect();
        out.push(format!(
            "warning: accepted by {}, rejected by {}{}",
            minor_name(a),
            minor_name(b),
            if why.is_empty() {
                String::new()
            } else {
                format!(": {}", why.join("; "))
            }
        ));
        out.extend(because_lines(
            &celcost_core::report::versions::rejection_causes(m, b),
        ));
    }
    if m.rejected_after_accepted && breaks.is_empty() {
        out.push("warning: a newer version rejects what an older one accepts".into());
    }
    // Changes of verdict (a limit crossed, a compile error) first; at most MAX_CHANGE_LINES.
    let mut changes: Vec<&celcost_core::report::versions::VersionChange> =
        m.changes.iter().collect();
    changes.sort_by_key(|c| {
        let first = &c.steps[0];
        !c.steps.iter().any(|s| {
            s.exceeds_limit != first.exceeds_limit
                || s.compile_error.is_some() != first.compile_error.is_some()
        })
    });
    if changes.len() > MAX_CHANGE_LINES {
        let more = changes.len() - MAX_CHANGE_LINES;
        changes.truncate(MAX_CHANGE_LINES);
        out.push(format!(
            "changes: {more} more rules change between versions (all of them: --output json)"
        ));
    }
    for c in changes {
        let steps: Vec<String> = c
            .steps
            .iter()
            .map(|s| format!("{} on {}", step_text(s), minor_name(&s.kubernetes_version)))
            .collect();
        out.push(format!("changes: {}: {}", c.unit, steps.join(" → ")));
        out.extend(because_lines(&c.causes));
    }
    out
}

/// `    because 1.37: … (reference)`, a line per upstream change behind a number.
fn because_lines(causes: &[celcost_core::report::versions::VersionCause]) -> Vec<String> {
    causes
        .iter()
        .map(|c| format!("    because {}", c.text()))
        .collect()
}

/// The lines under a policy's header: notes, what typed the estimates, and the budgets,
/// upstream's (object: dyn) beside the typed ones.
pub(super) fn policy_lines(r: &ObjectReport) -> Vec<String> {
    let mut out: Vec<String> = r.notes.iter().map(|n| format!("note: {n}")).collect();
    if let Some(t) = &r.typing {
        if t.schemas.is_empty() {
            out.push(
                "typed estimate: none (no matched resource has a known schema; see below)".into(),
            );
        } else {
            let mut by_origin: Vec<(String, Vec<String>)> = Vec::new();
            for s in &t.schemas {
                match by_origin.iter_mut().find(|(o, _)| *o == s.origin) {
                    Some((_, v)) => v.push(s.resource.clone()),
                    None => by_origin.push((s.origin.clone(), vec![s.resource.clone()])),
                }
            }
            let parts: Vec<String> = by_origin
                .iter()
                .map(|(o, rs)| format!("{} — {o}", rs.join(", ")))
                .collect();
            out.push(format!(
                "typed estimate: object/oldObject typed against {}",
                parts.join("; ")
            ));
        }
        if let Some(p) = &t.params {
            out.push(format!(
                "typed estimate: params typed as {} {} — {}",
                p.resource, p.kind, p.origin
            ));
        }
        for n in &t.not_typed {
            out.push(format!("not typed: {n}"));
        }
    }
    if let Some(b) = &r.policy_budget {
        let line = |what: &str, upstream: u64, typed: Option<u64>, limit: u64| {
            let mut l = format!(
                "{what} (budget {}): upstream (object: dyn) {} = {}",
                num(limit),
                num(upstream),
                percent(upstream, limit)
            );
            if let Some(t) = typed {
                let _ = write!(l, "; typed {} = {}", num(t), percent(t, limit));
            }
            l
        };
        if let Some(m) = b.mutation_cost {
            out.push(line(
                "runtime cost per mutation: the worst one + the variables it reads",
                m,
                b.typed_mutation_cost,
                RUNTIME_COST_BUDGET,
            ));
        } else {
            out.push(line(
                "runtime cost per evaluation: validations + messageExpressions + their variables",
                b.validation_cost,
                b.typed_validation_cost,
                RUNTIME_COST_BUDGET,
            ));
        }
        if r.expressions.iter().any(|e| e.kind == "matchCondition") {
            out.push(line(
                "matchConditions",
                b.match_conditions_cost,
                b.typed_match_conditions_cost,
                MATCH_CONDITIONS_COST_BUDGET,
            ));
        }
        if r.expressions.iter().any(|e| e.kind == "auditAnnotation") {
            out.push(line(
                "auditAnnotations",
                b.audit_annotations_cost,
                b.typed_audit_annotations_cost,
                RUNTIME_COST_BUDGET,
            ));
        }
    }
    out
}
