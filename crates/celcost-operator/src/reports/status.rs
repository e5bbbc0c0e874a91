//! From the estimator's report to a `CostReport` status: int64 capping, the summary, bounding,
//! the next minor's verdict. The conditions are [`super::conditions`], the transitions that
//! deserve an event [`super::events`]. Pure: no IO.

use celcost_core::report::format::{PercentStyle, percent_in, thousands, truncate};
use celcost_core::report::versions::{VersionChange, VersionMatrix, VersionStep};
use celcost_core::report::{
    Drivers, ExpressionReport, ObjectReport, PER_CALL_LIMIT, PER_RULE_COST_LIMIT,
    PER_SCHEMA_COST_LIMIT, PolicyBudget, PolicyTyping, RUNTIME_COST_BUDGET, RuleReport,
    SchemaReport, TypedSchema,
};

use crate::resource::{
    BudgetLevel, CostReportStatus, DriversStatus, ExpressionStatus, MAX_DRIVERS, MAX_ERRORS,
    MAX_EXPRESSION_LEN, MAX_LISTED_RULES, MAX_LISTED_SCHEMAS, MAX_TEXT_LEN, NextVersionStatus,
    PolicyBudgetStatus, PolicyTypingStatus, RuleStatus, SchemaStatus, SuggestionStatus, Summary,
    TargetKind, TypedEstimateStatus, TypedSchemaStatus, cap,
};

/// Upper bound of the serialized status. The whole object must stay well below the 256 KiB we
/// promise (and far below etcd's 1.5 MiB); metadata and managedFields take the rest.
pub const MAX_STATUS_BYTES: usize = 200 * 1024;

pub const CONDITION_READY: &str = "Ready";
/// Whether the target has an estimate (False: its estimate failed or went over its work
/// budget).
pub const CONDITION_ESTIMATED: &str = "Estimated";
pub const CONDITION_WITHIN_BUDGET: &str = "WithinBudget";
/// Whether the next Kubernetes minor accepts the object with no rule newly at or above the
/// near-budget threshold.
pub const CONDITION_UPGRADE_SAFE: &str = "UpgradeSafe";

/// Condition and event reasons (PascalCase, a fixed list).
pub mod reason {
    /// `UpgradeSafe=False`: the next minor's API server would reject the object.
    pub const REJECTED_BY_NEXT_VERSION: &str = "RejectedByNextVersion";
    /// `UpgradeSafe=False`: on the next minor a rule or total reaches the near-budget threshold.
    pub const NEAR_BUDGET_ON_NEXT_VERSION: &str = "NearBudgetOnNextVersion";
    /// `UpgradeSafe=True`.
    pub const ACCEPTED_BY_NEXT_VERSION: &str = "AcceptedByNextVersion";
    /// `UpgradeSafe=Unknown`: celcost has no rules for the next minor.
    pub const NEXT_VERSION_UNKNOWN: &str = "NextVersionUnknown";
    pub const ESTIMATED: &str = "Estimated";
    pub const ESTIMATION_FAILED: &str = "EstimationFailed";
    /// The estimate went over its work budget (steps or memory).
    pub const WORK_BUDGET_EXCEEDED: &str = "WorkBudgetExceeded";
    pub const WITHIN_BUDGET: &str = "WithinBudget";
    pub const RULE_NEAR_BUDGET: &str = "RuleNearBudget";
    pub const RULE_OVER_BUDGET: &str = "RuleOverBudget";
    pub const TOTAL_NEAR_BUDGET: &str = "TotalNearBudget";
    pub const TOTAL_OVER_BUDGET: &str = "TotalOverBudget";
    /// Events only: back under the near-budget threshold.
    pub const RULE_WITHIN_BUDGET: &str = "RuleWithinBudget";
    pub const TOTAL_WITHIN_BUDGET: &str = "TotalWithinBudget";
}

/// Knobs of the status.
#[derive(Clone, Copy, Debug)]
pub struct StatusSettings {
    /// The near-budget threshold, percent of a limit (1..=100).
    pub near_budget_percent: u8,
    /// How many rules (expressions) to list at most.
    pub max_rules: usize,
}

impl Default for StatusSettings {
    fn default() -> Self {
        StatusSettings {
            near_budget_percent: 80,
            max_rules: 100,
        }
    }
}

/// Where `cost` stands against `limit`: over when above it (the API server's test), near when at
/// or above `near_percent` of it.
pub fn level(cost: u64, limit: u64, near_percent: u8) -> BudgetLevel {
    if cost > limit {
        BudgetLevel::OverBudget
    } else if u128::from(cost) * 100 >= u128::from(near_percent) * u128::from(limit) {
        BudgetLevel::NearBudget
    } else {
        BudgetLevel::WithinBudget
    }
}

/// Truncation bookkeeping while converting.
#[derive(Default)]
struct Cut {
    text: bool,
    lists: bool,
}

impl Cut {
    fn text(&mut self, s: &str, max: usize) -> String {
        let (t, cut) = truncate(s, max);
        self.text |= cut;
        t
    }

    fn list(&mut self, v: &[String], max_items: usize, max_len: usize) -> Vec<String> {
        if v.len() > max_items {
            self.lists = true;
        }
        v.iter()
            .take(max_items)
            .map(|s| self.text(s, max_len))
            .collect()
    }
}

fn typing_status(t: &PolicyTyping, cut: &mut Cut) -> PolicyTypingStatus {
    let mut schema = |s: &TypedSchema| TypedSchemaStatus {
        resource: cut.text(&s.resource, 512),
        kind: cut.text(&s.kind, 256),
        origin: cut.text(&s.origin, 512),
    };
    let schemas: Vec<TypedSchemaStatus> = t.schemas.iter().take(32).map(&mut schema).collect();
    let params = t.params.as_ref().map(&mut schema);
    cut.lists |= t.schemas.len() > 32;
    PolicyTypingStatus {
        schemas,
        params,
        not_typed: cut.list(&t.not_typed, MAX_ERRORS, MAX_TEXT_LEN),
    }
}

fn cap_opt(v: Option<u64>, unbounded: &mut bool) -> Option<i64> {
    v.map(|v| {
        let (i, c) = cap(v);
        *unbounded |= c;
        i
    })
}

fn cap_into(v: u64, unbounded: &mut bool) -> i64 {
    let (i, c) = cap(v);
    *unbounded |= c;
    i
}

fn rule_status(r: &RuleReport, cut: &mut Cut) -> RuleStatus {
    let mut unbounded = false;
    RuleStatus {
        path: cut.text(&r.path, MAX_TEXT_LEN),
        rule_field_path: cut.text(&r.rule_field_path, MAX_TEXT_LEN),
        index: cap_into(r.index, &mut unbounded),
        rule: cut.text(&r.rule, MAX_EXPRESSION_LEN),
        max_cost: cap_into(r.max_cost, &mut unbounded),
        max_cardinality: cap_into(r.max_cardinality, &mut unbounded),
        schema_max_cardinality: cap_opt(r.schema_max_cardinality, &mut unbounded),
        cardinality_used: cap_into(r.cardinality_used, &mut unbounded),
        cost: cap_into(r.cost, &mut unbounded),
        exceeds_cost_limit: r.exceeds_cost_limit,
        message_expression_cost: cap_opt(r.message_expression_cost, &mut unbounded),
        uses_old_self: r.uses_old_self,
        compile_error: r
            .compile_error
            .as_deref()
            .or(r.message_expression_compile_error.as_deref())
            .map(|e| cut.text(e, MAX_TEXT_LEN)),
        compiled_by_apiserver: r.compiled_by_apiserver,
        drivers: drivers_status(&r.drivers, cut),
        suggestions: suggestions_status(&r.suggestions, cut, &mut unbounded),
        no_suggestion: r
            .no_suggestion
            .as_deref()
            .map(|n| cut.text(n, MAX_TEXT_LEN)),
        unbounded,
    }
}

/// At most this many suggested bounds per rule or total in the status.
const MAX_SUGGESTIONS: usize = 16;

fn suggestions_status(
    s: &[celcost_core::report::Suggestion],
    cut: &mut Cut,
    unbounded: &mut bool,
) -> Vec<SuggestionStatus> {
    if s.len() > MAX_SUGGESTIONS {
        cut.lists = true;
    }
    s.iter()
        .take(MAX_SUGGESTIONS)
        .map(|b| SuggestionStatus {
            path: cut.text(&b.path, MAX_TEXT_LEN),
            keyword: b.keyword,
            value: b.value,
            cost_after: cap_into(b.cost_after, unbounded),
            group: i64::from(b.group),
            schema_path: cut.text(&b.schema_path, MAX_TEXT_LEN),
            current: b.current,
            marker: cut.text(&b.marker, 128),
            marker_on: cut.text(&b.marker_on, MAX_TEXT_LEN),
            safe: b.safe,
            implied_by: b.implied_by.as_ref().map(|w| cut.text(w, 512)),
        })
        .collect()
}

fn drivers_status(d: &Drivers, cut: &mut Cut) -> DriversStatus {
    DriversStatus {
        unbounded_ancestors: cut.list(&d.unbounded_ancestors, MAX_DRIVERS, 512),
        unbounded_fields: cut.list(&d.unbounded_fields, MAX_DRIVERS, 512),
    }
}

fn expression_status(e: &ExpressionReport, cut: &mut Cut) -> ExpressionStatus {
    let mut unbounded = false;
    ExpressionStatus {
        field_path: cut.text(&e.field_path, 256),
        kind: cut.text(&e.kind, 256),
        expression: cut.text(&e.expression, MAX_EXPRESSION_LEN),
        min_cost: cap_opt(e.min_cost, &mut unbounded),
        max_cost: cap_opt(e.max_cost, &mut unbounded),
        max_cost_unbounded: e.max_cost_unbounded,
        per_call_limit: cap_into(e.per_call_limit, &mut unbounded),
        max_cost_exceeds_per_call_limit: e.max_cost_exceeds_per_call_limit,
        compile_error: e
            .compile_error
            .as_deref()
            .map(|s| cut.text(s, MAX_TEXT_LEN)),
        typed: e.typed.as_ref().map(|t| TypedEstimateStatus {
            against: cut.list(&t.against, 16, 256),
            min_cost: cap_into(t.min_cost, &mut unbounded),
            max_cost: cap_into(t.max_cost, &mut unbounded),
            max_cost_unbounded: t.max_cost_unbounded,
            unbounded_fields: cut.list(&t.unbounded_fields, MAX_DRIVERS, 512),
        }),
        unbounded,
    }
}

fn policy_budget_status(b: &PolicyBudget) -> PolicyBudgetStatus {
    let mut unbounded = false;
    PolicyBudgetStatus {
        validation_cost: cap_into(b.validation_cost, &mut unbounded),
        typed_validation_cost: cap_opt(b.typed_validation_cost, &mut unbounded),
        match_conditions_cost: cap_into(b.match_conditions_cost, &mut unbounded),
        typed_match_conditions_cost: cap_opt(b.typed_match_conditions_cost, &mut unbounded),
        audit_annotations_cost: cap_into(b.audit_annotations_cost, &mut unbounded),
        unbounded,
    }
}

/// The cost a policy expression is judged by: the typed estimate when the estimator had schemas,
/// else upstream's (0 for an expression that does not compile: it is never evaluated).
fn expression_cost(e: &ExpressionReport) -> u64 {
    e.typed
        .as_ref()
        .map_or(e.max_cost.unwrap_or(0), |t| t.max_cost)
}

/// What the summary needs, for either kind.
struct Figures {
    rule_limit: u64,
    highest_rule: u64,
    total_limit: u64,
    highest_total: u64,
    rule_costs: Vec<u64>,
}

fn figures(kind: TargetKind, report: &ObjectReport) -> Figures {
    match kind {
        TargetKind::CustomResourceDefinition => Figures {
            rule_limit: PER_RULE_COST_LIMIT,
            highest_rule: report.highest_rule_cost(),
            total_limit: PER_SCHEMA_COST_LIMIT,
            highest_total: report.highest_total_cost(),
            rule_costs: report
                .schemas
                .iter()
                .flat_map(|s| s.rules.iter().map(RuleReport::judged_cost))
                .collect(),
        },
        TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy => {
            let rule_costs: Vec<u64> = report.expressions.iter().map(expression_cost).collect();
            // Validations share one budget per evaluation; each mutation has one of its own.
            let total = report.policy_budget.as_ref().map_or(0, |b| {
                if kind == TargetKind::MutatingAdmissionPolicy {
                    b.typed_mutation_cost
                        .or(b.mutation_cost)
                        .unwrap_or_default()
                } else {
                    b.typed_validation_cost.unwrap_or(b.validation_cost)
                }
            });
            Figures {
                rule_limit: PER_CALL_LIMIT,
                highest_rule: rule_costs.iter().copied().max().unwrap_or(0),
                total_limit: RUNTIME_COST_BUDGET,
                highest_total: total,
                rule_costs,
            }
        }
    }
}

/// The status of a target the estimator reported on, without conditions (see
/// [`with_conditions`]).
pub fn estimate_status(
    kind: TargetKind,
    report: &ObjectReport,
    settings: StatusSettings,
) -> CostReportStatus {
    let f = figures(kind, report);
    let near = settings.near_budget_percent;
    let mut rules_near = 0i64;
    let mut rules_over = 0i64;
    for &c in &f.rule_costs {
        match level(c, f.rule_limit, near) {
            BudgetLevel::NearBudget => rules_near += 1,
            BudgetLevel::OverBudget => rules_over += 1,
            BudgetLevel::WithinBudget => {}
        }
    }
    let (highest_rule_cost, u1) = cap(f.highest_rule);
    let (highest_total_cost, u2) = cap(f.highest_total);
    let summary = Summary {
        rule_limit: f.rule_limit as i64,
        highest_rule_cost,
        highest_rule_percent: percent_in(f.highest_rule, f.rule_limit, PercentStyle::STATUS),
        rule_level: level(f.highest_rule, f.rule_limit, near),
        total_limit: f.total_limit as i64,
        highest_total_cost,
        highest_total_percent: percent_in(f.highest_total, f.total_limit, PercentStyle::STATUS),
        total_level: level(f.highest_total, f.total_limit, near),
        near_budget_percent: i32::from(near),
        rules_near_budget: rules_near,
        rules_over_budget: rules_over,
        rule_count: f.rule_costs.len() as i64,
        rules_listed: 0,
        unbounded: u1 || u2,
    };
    let mut cut = Cut::default();
    let errors = cut.list(&report.errors, MAX_ERRORS, MAX_TEXT_LEN);
    let next_version = report
        .by_version
        .as_ref()
        .and_then(|m| next_version_status(report, m, settings.near_budget_percent, &mut cut));
    let mut status = CostReportStatus {
        observed_generation: None,
        kubernetes_version: report.kubernetes_version.clone(),
        summary: Some(summary),
        valid: Some(report.valid),
        errors,
        policy_budget: report.policy_budget.as_ref().map(policy_budget_status),
        typing: report.typing.as_ref().map(|t| typing_status(t, &mut cut)),
        next_version,
        update: report.update.as_ref().map(super::stored::update_status),
        ..CostReportStatus::default()
    };
    if report.schemas.len() > MAX_LISTED_SCHEMAS {
        cut.lists = true;
    }

    // List the costliest rules, fewer while the status is too large.
    let mut listed = settings
        .max_rules
        .min(MAX_LISTED_RULES)
        .min(f.rule_costs.len());
    loop {
        let mut c = Cut {
            text: cut.text,
            lists: cut.lists,
        };
        match kind {
            TargetKind::CustomResourceDefinition => {
                status.schemas = list_rules(&report.schemas, listed, &mut c);
            }
            TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy => {
                status.expressions = list_expressions(&report.expressions, listed, &mut c);
            }
        }
        if let Some(s) = status.summary.as_mut() {
            s.rules_listed = listed as i64;
        }
        let total = f.rule_costs.len();
        let mut notes = Vec::new();
        if listed < total {
            let what = match kind {
                TargetKind::CustomResourceDefinition => "rules",
                TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy => {
                    "expressions"
                }
            };
            notes.push(format!("lists the {listed} costliest of {total} {what}"));
        }
        if c.text {
            notes.push(format!(
                "CEL text and paths cut at {MAX_EXPRESSION_LEN} bytes"
            ));
        }
        if c.lists {
            notes.push("long lists (errors, drivers, schemas) cut".to_string());
        }
        status.note = if notes.is_empty() {
            String::new()
        } else {
            format!("Abridged: {}.", notes.join("; "))
        };
        let size = serde_json::to_vec(&status).map_or(0, |v| v.len());
        if size <= MAX_STATUS_BYTES || listed == 0 {
            break;
        }
        listed /= 2;
    }
    status
}

/// The next minor's verdict and changes, from a matrix of (the cluster's minor, the next).
fn next_version_status(
    report: &ObjectReport,
    m: &VersionMatrix,
    near_percent: u8,
    cut: &mut Cut,
) -> Option<NextVersionStatus> {
    let next = m.verdicts.get(1)?;
    let changes: Vec<String> = m.changes.iter().map(change_text).collect();
    let (safe, reason, message) = upgrade_safe(report, m, near_percent);
    Some(NextVersionStatus {
        kubernetes_version: next.kubernetes_version.clone(),
        valid: next.valid,
        upgrade_safe: safe.to_string(),
        reason: reason.to_string(),
        message: cut.text(&message, MAX_TEXT_LEN),
        change_count: changes.len() as i64,
        changes: cut.list(&changes, MAX_ERRORS, MAX_TEXT_LEN),
    })
}

/// `^.spec.x [0]: 4,100,000 (41.0%) on v1.33 → 12,300,000 (123.0%, over the limit) on v1.34`.
fn change_text(c: &VersionChange) -> String {
    let step = |s: &VersionStep| {
        let v = match (s.cost, &s.compile_error) {
            (_, Some(_)) => "does not compile".to_string(),
            (Some(cost), None) => format!(
                "{} ({}{})",
                thousands(cost),
                percent_in(cost, s.limit, PercentStyle::STATUS),
                if s.exceeds_limit {
                    ", over the limit"
                } else {
                    ""
                }
            ),
            (None, None) => "absent".to_string(),
        };
        format!("{v} on {}", s.kubernetes_version)
    };
    let steps: Vec<String> = c.steps.iter().map(step).collect();
    let causes: Vec<String> = c.causes.iter().map(|x| x.text()).collect();
    let because = if causes.is_empty() {
        String::new()
    } else {
        format!(" because {}", causes.join("; "))
    };
    format!("{}: {}{because}", c.unit, steps.join(" → "))
}

/// What rejects the object on the next minor, for people: the unit and its change, the rule,
/// the factor by which it exceeds its limit there (the API server's words), and the first
/// suggested bounds, which fit both minors (`WithNextMinor` suggests over both):
/// `^.spec.rules[*].timeout [0] \`matches(self, '…')\`: 2 (0.0%) on v1.36 → 40,265,360 (402.7%,
/// over the limit) on v1.37; exceeds budget by factor of 4.0x; a bound that fits v1.36 and v1.37:
/// add maxLength: …`.
fn rejection_text(report: &ObjectReport, c: &VersionChange, next: &VersionStep) -> String {
    let mut text = c.unit.clone();
    if !c.expression.is_empty() {
        let e = if c.expression.len() > 200 {
            let mut end = 200;
            while !c.expression.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &c.expression[..end])
        } else {
            c.expression.clone()
        };
        text.push_str(&format!(" `{e}`"));
    }
    let change = change_text(c);
    text.push_str(change.strip_prefix(c.unit.as_str()).unwrap_or(&change));
    if let (Some(cost), None) = (next.cost, &next.compile_error)
        && next.exceeds_limit
    {
        text.push_str(&format!(
            "; exceeds budget by factor of {}",
            celcost_core::report::format::budget_factor(cost, next.limit)
        ));
    }
    let first = c.steps.first().map(|s| s.kubernetes_version.as_str());
    let both = match first {
        Some(f) if f != next.kubernetes_version => {
            format!("{f} and {}", next.kubernetes_version)
        }
        _ => next.kubernetes_version.clone(),
    };
    let fix = match celcost_core::report::versions::find_unit(report, &c.unit) {
        Some(celcost_core::report::versions::Unit::Rule(_, r)) => {
            fix_text(&r.suggestions, r.no_suggestion.as_deref(), next.cost)
        }
        Some(celcost_core::report::versions::Unit::Total(s)) => {
            fix_text(&s.suggestions, s.no_suggestion.as_deref(), next.cost)
        }
        _ => None,
    };
    match fix {
        Some(Ok(line)) => text.push_str(&format!("; a bound that fits {both}: {line}")),
        Some(Err(none)) => text.push_str(&format!("; {none}")),
        None => {}
    }
    text
}

/// The first suggested bounds (`Ok`), or why there are none (`Err`), with the cost before them
/// on the next minor.
fn fix_text(
    suggestions: &[celcost_core::report::Suggestion],
    none: Option<&str>,
    before: Option<u64>,
) -> Option<Result<String, String>> {
    let groups = celcost_core::report::suggestion_groups(suggestions);
    match (groups.first(), before) {
        (Some(g), Some(before)) => Some(Ok(celcost_advice::suggest::suggestion_line(g, before))),
        _ => none.map(|n| Err(n.to_string())),
    }
}

/// `UpgradeSafe` from the estimate's matrix (cluster minor, next minor), with the near-budget
/// threshold of the settings; `report` is the cluster minor's (with suggestions that fit both).
fn upgrade_safe(
    report: &ObjectReport,
    m: &VersionMatrix,
    near_percent: u8,
) -> (&'static str, &'static str, String) {
    let (cur, next) = (&m.verdicts[0], &m.verdicts[1]);
    let at =
        |c: &VersionChange, v: &str| c.steps.iter().find(|s| s.kubernetes_version == v).cloned();
    if cur.valid && !next.valid {
        // A rule before a total: the rule is what to fix.
        let mut changes: Vec<&VersionChange> = m.changes.iter().collect();
        changes.sort_by_key(|c| c.unit.ends_with(" total"));
        let found = changes.into_iter().find_map(|c| {
            at(c, &next.kubernetes_version)
                .filter(|s| s.exceeds_limit || s.compile_error.is_some())
                .map(|s| (c.unit.ends_with(" total"), rejection_text(report, c, &s)))
        });
        let culprit = found
            .as_ref()
            .map(|(_, t)| format!(": {t}"))
            .unwrap_or_default();
        // After the upgrade a stored CRD stays served. Its API server refuses the creates; of
        // the updates, a rule over its limit refuses those that change the schema of the
        // version it is in (apiextensions' unchanged-schema suppression), a total over its
        // limit every one (totals are checked on update whatever changed).
        let after = match (report.kind == "CustomResourceDefinition", &found) {
            (true, Some((true, _))) => {
                "; after the upgrade the cluster keeps serving it, but refuses every update of \
                 it until the total fits"
            }
            (true, _) => {
                "; after the upgrade the cluster keeps serving it, but refuses any update that \
                 changes the schema of that version until the rule fits"
            }
            (false, _) => "",
        };
        return (
            "False",
            reason::REJECTED_BY_NEXT_VERSION,
            format!(
                "the API server of Kubernetes {} would refuse the object on create{culprit}{after}",
                next.kubernetes_version
            ),
        );
    }
    let near = |s: &VersionStep| {
        s.cost
            .is_some_and(|c| level(c, s.limit, near_percent) != BudgetLevel::WithinBudget)
    };
    let newly_near = m.changes.iter().find(|c| {
        let (a, b) = (c.steps.first(), at(c, &next.kubernetes_version));
        b.as_ref().is_some_and(near)
            && !a.is_some_and(|a| a.kubernetes_version == cur.kubernetes_version && near(a))
    });
    if let Some(c) = newly_near {
        return (
            "False",
            reason::NEAR_BUDGET_ON_NEXT_VERSION,
            format!(
                "on Kubernetes {} a rule reaches {near_percent}% of its limit: {}",
                next.kubernetes_version,
                change_text(c)
            ),
        );
    }
    let what = if m.changes.is_empty() {
        "the same numbers".to_string()
    } else {
        format!(
            "{} changed numbers, none newly at or above {near_percent}% of its limit",
            m.changes.len()
        )
    };
    (
        "True",
        reason::ACCEPTED_BY_NEXT_VERSION,
        format!(
            "Kubernetes {} {} the object, with {what}",
            next.kubernetes_version,
            if next.valid {
                "accepts"
            } else {
                "rejects, as this version does,"
            }
        ),
    )
}

/// The `n` costliest rules, each under its schema, costliest first.
fn list_rules(schemas: &[SchemaReport], n: usize, cut: &mut Cut) -> Vec<SchemaStatus> {
    let mut all: Vec<(usize, usize, u64)> = schemas
        .iter()
        .enumerate()
        .flat_map(|(si, s)| {
            s.rules
                .iter()
                .enumerate()
                .map(move |(ri, r)| (si, ri, r.judged_cost()))
        })
        .collect();
    // Stable: equal costs keep schema walk order.
    all.sort_by_key(|r| std::cmp::Reverse(r.2));
    all.truncate(n);
    schemas
        .iter()
        .take(MAX_LISTED_SCHEMAS)
        .enumerate()
        .map(|(si, s)| {
            let mut unbounded = false;
            SchemaStatus {
                schema_field_path: cut.text(&s.schema_field_path, 256),
                versions: cut.list(&s.versions, 64, 64),
                total_cost: cap_into(s.total_cost, &mut unbounded),
                exceeds_total_limit: s.exceeds_total_limit,
                rule_count: cap_into(s.rule_count, &mut unbounded),
                rules: all
                    .iter()
                    .filter(|(i, _, _)| *i == si)
                    .map(|&(_, ri, _)| rule_status(&s.rules[ri], cut))
                    .collect(),
                suggestions: suggestions_status(&s.suggestions, cut, &mut unbounded),
                no_suggestion: s
                    .no_suggestion
                    .as_deref()
                    .map(|n| cut.text(n, MAX_TEXT_LEN)),
                unbounded,
            }
        })
        .collect()
}

/// The `n` costliest expressions, costliest first.
fn list_expressions(exprs: &[ExpressionReport], n: usize, cut: &mut Cut) -> Vec<ExpressionStatus> {
    let mut order: Vec<usize> = (0..exprs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(expression_cost(&exprs[i])));
    order
        .into_iter()
        .take(n)
        .map(|i| expression_status(&exprs[i], cut))
        .collect()
}

#[cfg(test)]
mod tests;
