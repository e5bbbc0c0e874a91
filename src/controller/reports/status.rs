//! From the estimator's report to a `CostReport` status: int64 capping, the summary, the
//! conditions, bounding, and the transitions that deserve an event. Pure: no IO.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use crate::report::versions::{VersionChange, VersionMatrix, VersionStep};
use crate::report::{
    Drivers, ExpressionReport, ObjectReport, PER_CALL_LIMIT, PER_RULE_COST_LIMIT,
    PER_SCHEMA_COST_LIMIT, PolicyBudget, PolicyTyping, RUNTIME_COST_BUDGET, RuleReport,
    SchemaReport, TypedSchema,
};

use crate::controller::resource::{
    BudgetLevel, CostReportStatus, DriversStatus, ExpressionStatus, MAX_DRIVERS, MAX_ERRORS,
    MAX_EXPRESSION_LEN, MAX_LISTED_RULES, MAX_LISTED_SCHEMAS, MAX_TEXT_LEN, NextVersionStatus,
    PolicyBudgetStatus, PolicyTypingStatus, RuleStatus, SchemaStatus, SuggestionStatus, Summary,
    TargetKind, TypedEstimateStatus, TypedSchemaStatus,
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

/// A u64 cost as the int64 the API server can store, and whether it had to be capped.
pub fn cap(v: u64) -> (i64, bool) {
    match i64::try_from(v) {
        Ok(i) => (i, false),
        Err(_) => (i64::MAX, true),
    }
}

/// `cost` as a percentage of `limit`: `0.3%`, `85.0%`, `1250%`, or `unbounded` for a saturated
/// estimate.
pub fn percent(cost: u64, limit: u64) -> String {
    if cost == u64::MAX {
        return "unbounded".to_string();
    }
    let p = cost as f64 * 100.0 / limit.max(1) as f64;
    if p < 100.0 {
        format!("{p:.1}%")
    } else if p < 100_000.0 {
        format!("{p:.0}%")
    } else {
        // The exact number is in the cost field; a column this wide helps nobody.
        ">99999%".to_string()
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

/// `12345678` as `12,345,678`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Cuts `s` to at most `max` bytes on a char boundary, ending with `…` when cut.
pub fn truncate(s: &str, max: usize) -> (String, bool) {
    if s.len() <= max {
        return (s.to_string(), false);
    }
    let ell = '…';
    let mut end = max.saturating_sub(ell.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = s[..end].to_string();
    out.push(ell);
    (out, true)
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
    s: &[crate::report::Suggestion],
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
            keyword: b.keyword.clone(),
            value: b.value,
            cost_after: cap_into(b.cost_after, unbounded),
            group: i64::from(b.group),
            schema_path: cut.text(&b.schema_path, MAX_TEXT_LEN),
            current: b.current,
            marker: cut.text(&b.marker, 128),
            marker_on: cut.text(&b.marker_on, MAX_TEXT_LEN),
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

/// The cost a CRD rule is judged by: the rule × cardinality, or its messageExpression.
fn rule_cost(r: &RuleReport) -> u64 {
    r.cost.max(r.message_expression_cost.unwrap_or(0))
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
                .flat_map(|s| s.rules.iter().map(rule_cost))
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
        highest_rule_percent: percent(f.highest_rule, f.rule_limit),
        rule_level: level(f.highest_rule, f.rule_limit, near),
        total_limit: f.total_limit as i64,
        highest_total_cost,
        highest_total_percent: percent(f.highest_total, f.total_limit),
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
        .and_then(|m| next_version_status(m, settings.near_budget_percent, &mut cut));
    let mut status = CostReportStatus {
        observed_generation: None,
        kubernetes_version: report.kubernetes_version.clone(),
        summary: Some(summary),
        valid: Some(report.valid),
        errors,
        policy_budget: report.policy_budget.as_ref().map(policy_budget_status),
        typing: report.typing.as_ref().map(|t| typing_status(t, &mut cut)),
        next_version,
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
    m: &VersionMatrix,
    near_percent: u8,
    cut: &mut Cut,
) -> Option<NextVersionStatus> {
    let next = m.verdicts.get(1)?;
    let changes: Vec<String> = m.changes.iter().map(change_text).collect();
    let (safe, reason, message) = upgrade_safe(m, near_percent);
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
                percent(cost, s.limit),
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
    format!("{}: {}", c.unit, steps.join(" → "))
}

/// `UpgradeSafe` from the estimate's matrix (cluster minor, next minor), with the near-budget
/// threshold of the settings.
fn upgrade_safe(m: &VersionMatrix, near_percent: u8) -> (&'static str, &'static str, String) {
    let (cur, next) = (&m.verdicts[0], &m.verdicts[1]);
    let at =
        |c: &VersionChange, v: &str| c.steps.iter().find(|s| s.kubernetes_version == v).cloned();
    if cur.valid && !next.valid {
        let culprit = m
            .changes
            .iter()
            .find(|c| {
                at(c, &next.kubernetes_version)
                    .is_some_and(|s| s.exceeds_limit || s.compile_error.is_some())
            })
            .map(|c| format!(": {}", change_text(c)))
            .unwrap_or_default();
        return (
            "False",
            reason::REJECTED_BY_NEXT_VERSION,
            format!(
                "the API server of Kubernetes {} would reject the object{culprit}",
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
                .map(move |(ri, r)| (si, ri, rule_cost(r)))
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
                ready_msg.push_str("; the API server of this version would reject the object");
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
                crate::cel::minor::NEWEST
            ),
        ),
        (Some(_), _) => (
            "Unknown".into(),
            reason::NEXT_VERSION_UNKNOWN.into(),
            "no estimate".to_string(),
        ),
    };
    let upgrade = (upgrade.0.as_str(), upgrade.1.as_str(), upgrade.2);
    status.conditions = vec![
        condition(CONDITION_READY, ready, generation, prev_conds, now),
        condition(CONDITION_ESTIMATED, estimated, generation, prev_conds, now),
        condition(CONDITION_WITHIN_BUDGET, within, generation, prev_conds, now),
        condition(CONDITION_UPGRADE_SAFE, upgrade, generation, prev_conds, now),
    ];
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
        let advice = match s.rule_level {
            BudgetLevel::WithinBudget => String::new(),
            _ => top_rule_advice(new),
        };
        let (warning, reason, head) = match s.rule_level {
            BudgetLevel::OverBudget => (true, reason::RULE_OVER_BUDGET, "over"),
            BudgetLevel::NearBudget => (true, reason::RULE_NEAR_BUDGET, "near"),
            BudgetLevel::WithinBudget => (false, reason::RULE_WITHIN_BUDGET, "back within"),
        };
        out.push(Transition {
            warning,
            reason,
            note: truncate(
                &format!(
                    "Highest {rule_word} cost {} is {} of the {} {rule_what}: {head} budget{top}; {} over, {} at or above {}%.{advice}",
                    thousands(s.highest_rule_cost as u64),
                    s.highest_rule_percent,
                    thousands(s.rule_limit as u64),
                    s.rules_over_budget,
                    s.rules_near_budget,
                    s.near_budget_percent
                ),
                1024,
            )
            .0,
        });
    }
    if s.total_level != prev_total {
        let advice = match s.total_level {
            BudgetLevel::WithinBudget => String::new(),
            _ => top_total_advice(new),
        };
        let (warning, reason, head) = match s.total_level {
            BudgetLevel::OverBudget => (true, reason::TOTAL_OVER_BUDGET, "over"),
            BudgetLevel::NearBudget => (true, reason::TOTAL_NEAR_BUDGET, "near"),
            BudgetLevel::WithinBudget => (false, reason::TOTAL_WITHIN_BUDGET, "back within"),
        };
        out.push(Transition {
            warning,
            reason,
            note: truncate(
                &format!(
                    "Highest total cost {} is {} of the {} {total_what}: {head} budget.{advice}",
                    thousands(s.highest_total_cost as u64),
                    s.highest_total_percent,
                    thousands(s.total_limit as u64),
                ),
                1024,
            )
            .0,
        });
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
    out
}

/// ` (rule at ^.spec.x #0: self.size() < 10)` for the costliest listed rule or expression.
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
    Some(format!(
        "{} (cost {} → {})",
        parts.join(" and "),
        thousands(before),
        thousands(first.cost_after.max(0) as u64)
    ))
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
    let c = |r: &RuleStatus| r.cost.max(r.message_expression_cost.unwrap_or(0));
    let mut rule: Option<&RuleStatus> = None;
    for r in s.schemas.iter().flat_map(|sc| sc.rules.iter()) {
        if rule.is_none_or(|best| c(r) > c(best)) {
            rule = Some(r);
        }
    }
    rule.map_or_else(String::new, |r| {
        advice(
            &r.suggestions,
            r.no_suggestion.as_deref(),
            c(r).max(0) as u64,
        )
    })
}

/// What to do about the costliest schema total.
fn top_total_advice(s: &CostReportStatus) -> String {
    let mut top: Option<&SchemaStatus> = None;
    for sc in &s.schemas {
        if top.is_none_or(|t| sc.total_cost > t.total_cost) {
            top = Some(sc);
        }
    }
    top.map_or_else(String::new, |sc| {
        advice(
            &sc.suggestions,
            sc.no_suggestion.as_deref(),
            sc.total_cost.max(0) as u64,
        )
    })
}

fn top_rule(s: &CostReportStatus) -> String {
    // The first of the costliest (rules are listed costliest first).
    let mut rule: Option<&RuleStatus> = None;
    for r in s.schemas.iter().flat_map(|sc| sc.rules.iter()) {
        let c = |r: &RuleStatus| r.cost.max(r.message_expression_cost.unwrap_or(0));
        if rule.is_none_or(|best| c(r) > c(best)) {
            rule = Some(r);
        }
    }
    if let Some(r) = rule {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{PER_RULE_COST_LIMIT, RuleReport, SchemaReport};

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

    fn upgrade_condition(s: &CostReportStatus) -> (String, String, String) {
        let c = s
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_UPGRADE_SAFE)
            .unwrap();
        (c.status.clone(), c.reason.clone(), c.message.clone())
    }

    fn status_of(r: &ObjectReport, prev: Option<&CostReportStatus>) -> CostReportStatus {
        let s = estimate_status(CRD, r, StatusSettings::default());
        with_conditions(s, CRD, Some(1), None, prev, Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn the_next_minor_decides_upgrade_safe() {
        use crate::report::versions::with_next;
        // The same numbers on the next minor: safe.
        let same = status_of(
            &with_next(versioned("v1.33", &[100]), versioned("v1.34", &[100])),
            None,
        );
        let (st, why, msg) = upgrade_condition(&same);
        assert_eq!(
            (st.as_str(), why.as_str()),
            ("True", reason::ACCEPTED_BY_NEXT_VERSION)
        );
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
        let (st, why, msg) = upgrade_condition(&rejected);
        assert_eq!(
            (st.as_str(), why.as_str()),
            ("False", reason::REJECTED_BY_NEXT_VERSION)
        );
        assert!(
            msg.contains("^.spec.f1 [0]") && msg.contains("12,310,000"),
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
        let (st, why, msg) = upgrade_condition(&near);
        assert_eq!(
            (st.as_str(), why.as_str()),
            ("False", reason::NEAR_BUDGET_ON_NEXT_VERSION)
        );
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
        let (st, why, _) = upgrade_condition(&newest);
        assert_eq!(
            (st.as_str(), why.as_str()),
            ("Unknown", reason::NEXT_VERSION_UNKNOWN)
        );
        assert!(newest.next_version.is_none());
    }

    #[test]
    fn caps_at_int64() {
        assert_eq!(cap(5), (5, false));
        assert_eq!(cap(i64::MAX as u64), (i64::MAX, false));
        assert_eq!(cap(i64::MAX as u64 + 1), (i64::MAX, true));
        assert_eq!(cap(u64::MAX), (i64::MAX, true));
    }

    #[test]
    fn percents_and_levels() {
        assert_eq!(percent(0, 10), "0.0%");
        assert_eq!(percent(8_240_002, PER_RULE_COST_LIMIT), "82.4%");
        assert_eq!(percent(12_000_000, PER_RULE_COST_LIMIT), "120%");
        assert_eq!(percent(u64::MAX - 1, PER_RULE_COST_LIMIT), ">99999%");
        assert_eq!(percent(u64::MAX, PER_RULE_COST_LIMIT), "unbounded");
        assert_eq!(level(7_999_999, 10_000_000, 80), BudgetLevel::WithinBudget);
        assert_eq!(level(8_000_000, 10_000_000, 80), BudgetLevel::NearBudget);
        assert_eq!(level(10_000_000, 10_000_000, 80), BudgetLevel::NearBudget);
        assert_eq!(level(10_000_001, 10_000_000, 80), BudgetLevel::OverBudget);
        assert_eq!(level(u64::MAX, u64::MAX, 100), BudgetLevel::NearBudget);
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("abc", 3), ("abc".to_string(), false));
        let (t, cut) = truncate("ééééé", 6);
        assert!(cut);
        assert!(t.len() <= 6 && t.ends_with('…'), "{t}");
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
        use crate::controller::{CostEstimator, WithNextMinor};
        use crate::schema::catalog::SchemaCatalog;
        let crd = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "things", "kind": "Thing"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object", "properties": {"hosts": {"type": "array",
                            "maxItems": 100, "items": {"type": "string"},
                            "x-kubernetes-validations": [
                                {"rule": "self.all(h, h.matches('^[a-z.]+$'))"}]}}}}}}}]
            }
        });
        let pair = WithNextMinor {
            current: crate::estimate::Estimator::default(),
            next: None,
            suggest: Some(crate::suggest::Settings::default()),
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
        let settings = StatusSettings::default();
        let within = with_conditions(
            estimate_status(CRD, &report(&[100]), settings),
            CRD,
            Some(1),
            None,
            None,
            now,
        );
        assert!(is_ready(&within));
        assert!(transitions(CRD, None, &within).is_empty());

        let later = Timestamp::from_second(1000).unwrap();
        let near = with_conditions(
            estimate_status(CRD, &report(&[9_000_000, 9_000_000]), settings),
            CRD,
            Some(2),
            None,
            Some(&within),
            later,
        );
        let wb = near
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_WITHIN_BUDGET)
            .unwrap();
        assert_eq!(
            (wb.status.as_str(), wb.reason.as_str()),
            ("False", reason::RULE_NEAR_BUDGET)
        );
        assert_eq!(wb.last_transition_time, Time(later));
        let ready = near
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_READY)
            .unwrap();
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
        let total = with_conditions(
            estimate_status(CRD, &report(&[45_000_000, 45_000_000]), settings),
            CRD,
            Some(3),
            None,
            Some(&near),
            later,
        );
        let t = transitions(CRD, Some(&near), &total);
        let reasons: Vec<&str> = t.iter().map(|t| t.reason).collect();
        assert_eq!(
            reasons,
            [reason::RULE_OVER_BUDGET, reason::TOTAL_NEAR_BUDGET]
        );

        // Estimation fails: one Warning, then nothing while it keeps failing.
        let failed = with_conditions(
            failed_status("v1.36"),
            CRD,
            Some(4),
            Some(Failure {
                reason: reason::ESTIMATION_FAILED,
                message: "boom",
            }),
            Some(&total),
            later,
        );
        assert!(!is_ready(&failed));
        let t = transitions(CRD, Some(&total), &failed);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].reason, reason::ESTIMATION_FAILED);
        assert!(transitions(CRD, Some(&failed), &failed).is_empty());
        let estimated = |s: &CostReportStatus| {
            let c = s
                .conditions
                .iter()
                .find(|c| c.type_ == CONDITION_ESTIMATED)
                .unwrap();
            (c.status.clone(), c.reason.clone())
        };
        assert_eq!(
            estimated(&failed),
            ("False".into(), "EstimationFailed".into())
        );
        assert_eq!(estimated(&total), ("True".into(), "Estimated".into()));

        // Over the work budget: its own reason, on the conditions and the one event.
        let over = with_conditions(
            failed_status("v1.36"),
            CRD,
            Some(4),
            Some(Failure {
                reason: reason::WORK_BUDGET_EXCEEDED,
                message: "estimate stopped: work budget of 10 steps exceeded at spec.x",
            }),
            Some(&total),
            later,
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
        let back = with_conditions(
            estimate_status(CRD, &report(&[100]), settings),
            CRD,
            Some(5),
            None,
            Some(&failed),
            later,
        );
        assert!(transitions(CRD, Some(&failed), &back).is_empty());
    }
}
