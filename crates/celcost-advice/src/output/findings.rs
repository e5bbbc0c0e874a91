//! The findings of a run, what the CI-native outputs say (rules and totals over or near their
//! limits, policy expressions and evaluations over or near their runtime budgets, the API
//! server's errors, estimates that stopped, older minors of a range that reject): rendered as
//! SARIF 2.1.0 for code scanning ([`super::sarif`]) and as GitHub workflow commands that
//! annotate a pull request's diff ([`super::github`]); and `--fail-at`, which fails a run when
//! any rule or total reaches a share of its limit.
//!
//! Every finding points at `file:line:column` of what it is about (the rule's, the
//! expression's, the schema's or the error's node: [`celcost_core::locate`]).

mod update;

use std::collections::{HashMap, HashSet};

use celcost_core::report::CostError;
use celcost_core::report::format::{num, percent};
use celcost_core::report::versions::{VersionStep, fails};
use celcost_core::report::{
    ExpressionReport, MATCH_CONDITIONS_COST_BUDGET, ObjectReport, PER_RULE_COST_LIMIT,
    PER_SCHEMA_COST_LIMIT, RUNTIME_COST_BUDGET, RuleReport, SchemaReport, SourceLocation,
};
use celcost_core::report::{ratio, reaches_share};

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Note,
}

impl Level {
    /// SARIF's `level`.
    pub fn sarif(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }

    /// The GitHub workflow command.
    pub fn github(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "notice",
        }
    }
}

/// A kind of finding: one SARIF rule (`tool.driver.rules[]`).
#[derive(Debug)]
pub struct FindingKind {
    /// `celcost/rule-over-budget`.
    pub id: &'static str,
    /// `RuleOverBudget`.
    pub name: &'static str,
    pub short: &'static str,
    pub full: &'static str,
    pub level: Level,
}

impl FindingKind {
    /// The title of a finding of a cost over or near its limit: `celcost: <what> over budget:
    /// <share> of <named>` (`named`: the limit as the title names it, and what follows it).
    fn budget_title(&self, what: &str, cost: u64, limit: u64, named: &str) -> String {
        let word = if self.level == Level::Error {
            "over budget:"
        } else {
            "near budget:"
        };
        format!("celcost: {what} {word} {} of {named}", percent(cost, limit))
    }

    /// An error's verdict: the minor refuses the CRD.
    fn push_rejects(&self, m: &mut String, version: &str) {
        if self.level == Level::Error {
            m.push_str(&format!(" Kubernetes {version} rejects the CRD."));
        }
    }
}

/// A finding's advice, each part when there is one: the suggested bound, the cheaper rule.
fn push_advice(m: &mut String, suggestion: Option<String>, cheaper: Option<String>) {
    if let Some(s) = suggestion {
        m.push_str(&format!(" Suggestion: {s}"));
    }
    if let Some(rw) = cheaper {
        m.push_str(&format!(" Cheaper: {rw}."));
    }
}

macro_rules! kinds {
    ($($konst:ident = $id:literal, $name:literal, $level:ident, $short:literal, $full:literal;)*) => {
        $(pub const $konst: &FindingKind = &FindingKind {
            id: $id,
            name: $name,
            short: $short,
            full: $full,
            level: Level::$level,
        };)*
        /// Every kind of finding, in the order of `tool.driver.rules`.
        pub const KINDS: &[&FindingKind] = &[$($konst),*];
    };
}

kinds! {
    RULE_OVER_BUDGET = "celcost/rule-over-budget", "RuleOverBudget", Error,
        "A CRD validation rule is over the per-rule cost limit",
        "The rule's estimated cost per call times the cardinality of its schema node (or its messageExpression's cost) exceeds 10,000,000: the API server rejects the CustomResourceDefinition.";
    RULE_NEAR_BUDGET = "celcost/rule-near-budget", "RuleNearBudget", Warning,
        "A CRD validation rule is near the per-rule cost limit",
        "The rule's estimated cost (or its messageExpression's) reaches the near-budget threshold of the 10,000,000 per-rule limit: a small change to the rule or the schema may get the CustomResourceDefinition rejected.";
    TOTAL_OVER_BUDGET = "celcost/total-over-budget", "TotalOverBudget", Error,
        "A CRD version's rules together are over the per-schema cost limit",
        "The sum of the estimated costs of every rule of a version's schema exceeds 100,000,000: the API server rejects the CustomResourceDefinition.";
    TOTAL_NEAR_BUDGET = "celcost/total-near-budget", "TotalNearBudget", Warning,
        "A CRD version's rules together are near the per-schema cost limit",
        "The sum of the estimated costs of a version's rules reaches the near-budget threshold of the 100,000,000 per-schema limit.";
    EXPRESSION_OVER_BUDGET = "celcost/expression-over-budget", "ExpressionOverBudget", Error,
        "A policy expression may exceed the runtime per-call cost limit",
        "The worst-case cost of one evaluation of the expression (typed from the schemas of the matched resources where known, else the API server's estimate with object as dyn) exceeds 1,000,000: at runtime the evaluation is stopped for the largest requests.";
    EXPRESSION_NEAR_BUDGET = "celcost/expression-near-budget", "ExpressionNearBudget", Warning,
        "A policy expression is near the runtime per-call cost limit",
        "The worst-case cost of one evaluation of the expression reaches the near-budget threshold of the 1,000,000 per-call limit.";
    EVALUATION_OVER_BUDGET = "celcost/evaluation-over-budget", "EvaluationOverBudget", Error,
        "A policy's evaluation may exceed its runtime cost budget",
        "The worst case of one policy-binding evaluation (validations, messageExpressions and the variables they read), of the matchConditions, of the auditAnnotations or of one mutation exceeds its runtime budget (10,000,000; 2,500,000 for matchConditions).";
    EVALUATION_NEAR_BUDGET = "celcost/evaluation-near-budget", "EvaluationNearBudget", Warning,
        "A policy's evaluation is near its runtime cost budget",
        "The worst case of one policy evaluation reaches the near-budget threshold of its runtime budget.";
    APISERVER_ERROR = "celcost/apiserver-error", "ApiServerError", Error,
        "The API server rejects the object",
        "An error the API server returns when the object is created, in its words (compile errors, schema errors, cost errors not reported as a finding of their own).";
    UPDATE_REFUSED = "celcost/update-refused", "UpdateRefused", Error,
        "The API server refuses the update of the stored object to this one",
        "celcost diff: applied over BASE (the object as the cluster stores it), the CustomResourceDefinition is an update, which the API server refuses with this error.";
    HELD_BY_UNCHANGED_SCHEMA = "celcost/held-by-unchanged-schema", "HeldByUnchangedSchema", Warning,
        "A rule over the per-rule limit passes only because its version's schema is unchanged",
        "celcost diff: on update, the API server does not apply the per-expression cost limit to the rules of a version whose schema is unchanged. The update passes; an update that changes that schema is refused until the rule fits.";
    ESTIMATE_STOPPED = "celcost/estimate-stopped", "EstimateStopped", Error,
        "The estimate of the object stopped",
        "The object needs more work than the per-object budget (--max-steps, --max-memory-mib) allows, or the estimate failed: it was not judged.";
    OLDER_VERSION_REJECTS = "celcost/older-version-rejects", "OlderVersionRejects", Error,
        "An older Kubernetes minor of the range rejects what the newest accepts",
        "With --kubernetes-version A..B: a rule, total or policy expression is over its limit or does not compile on an older minor of the range, while the newest accepts it.";
    NEWER_VERSION_REJECTS = "celcost/newer-version-rejects", "NewerVersionRejects", Error,
        "A newer Kubernetes minor of the range rejects what an older one accepts",
        "With --kubernetes-version A..B (upgrade day, before it happens): accepted by one minor, rejected by the next, because a rule, total or policy expression goes over its limit or stops compiling there. After the upgrade the API server refuses the object on create, and every update that changes its schema.";
    OBJECT_NOTE = "celcost/note", "Note", Note,
        "A note on the object",
        "Something that matters about the object beyond the verdict, e.g. an API version the API server serves only when the cluster enables it.";
}

/// One finding, ready for SARIF or a workflow command.
#[derive(Clone, Debug)]
pub struct Finding {
    pub kind: &'static FindingKind,
    pub level: Level,
    /// A short title (GitHub's annotation title).
    pub title: String,
    /// The whole message: the cost, the share of the limit, why, and what to change.
    pub message: String,
    /// The file the object was read from, when it was read from one.
    pub file: Option<String>,
    /// Where in that file.
    pub location: Option<SourceLocation>,
    /// `source` of the report.
    pub source: String,
    /// What a cost finding measured (a rule's, a total's, an expression's or an evaluation's
    /// cost against its limit), for the outputs that show it as fields (`--output
    /// openreports`); `None` for the other findings.
    pub measure: Option<Measure>,
}

/// The numbers behind a cost finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    /// What was measured: `<rule path> [<index>]`, a schema's field path, a policy
    /// expression's field path, an evaluation, or a unit of a range's matrix.
    pub unit: String,
    pub cost: u64,
    pub limit: u64,
    /// The cardinality the rule's cost was multiplied by (rules only).
    pub cardinality: Option<u64>,
    /// The minor whose rules gave the cost (`v1.36`).
    pub kubernetes_version: String,
}

impl Finding {
    /// The finding with what it measured.
    fn measured(
        mut self,
        unit: &str,
        cost: u64,
        limit: u64,
        cardinality: Option<u64>,
        version: &str,
    ) -> Self {
        self.measure = Some(Measure {
            unit: unit.to_string(),
            cost,
            limit,
            cardinality,
            kubernetes_version: version.to_string(),
        });
        self
    }
}

/// The text of the bounds to add or rules to rewrite for a rule, when celcost has one; appended
/// to the rule's findings. (The extension point for suggestions: a `suggestions` field of the
/// report, where there is one, is rendered here.)
pub fn suggestion_text(rule: &RuleReport) -> Option<String> {
    crate::suggest::suggestion_text(rule)
}

/// As [`suggestion_text`], for a schema's total.
pub fn schema_suggestion_text(schema: &SchemaReport) -> Option<String> {
    crate::suggest::schema_suggestion_text(schema)
}

/// The file of a report's source (`path#2` → `path`).
fn file_of(source: &str) -> Option<String> {
    match source.rsplit_once('#') {
        Some((f, _)) if !f.is_empty() => Some(f.to_string()),
        _ => None,
    }
}

/// Every cost a `--fail-at` judges, with its limit: rules (× cardinality) and their
/// messageExpressions, schema totals, policy expressions (as the table judges them: the typed
/// estimate where there is one) and policy evaluations (typed where there is one).
pub(crate) fn judged_costs(r: &ObjectReport) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for s in &r.schemas {
        out.push((s.total_cost, PER_SCHEMA_COST_LIMIT));
        for rule in &s.rules {
            out.push((rule.cost, PER_RULE_COST_LIMIT));
            if let Some(m) = rule.message_expression_cost {
                out.push((m, PER_RULE_COST_LIMIT));
            }
        }
    }
    for e in &r.expressions {
        if let Some(c) = e.judged_cost() {
            out.push((c, e.per_call_limit));
        }
    }
    for (_, cost, limit, _) in evaluations(r) {
        out.push((cost, limit));
    }
    out
}

/// `--fail-at PERCENT`: whether any rule, total, policy expression or policy evaluation of the
/// reports (the newest minor's numbers, with a range) reaches `percent` of its limit.
pub fn reaches(reports: &[ObjectReport], percent: f64) -> bool {
    reports.iter().any(|r| {
        judged_costs(r)
            .into_iter()
            .any(|(c, l)| reaches_share(c, l, percent))
    })
}

/// A policy's evaluations: (what, cost, budget, the expression kinds it covers), typed where
/// there is a typed estimate.
fn evaluations(r: &ObjectReport) -> Vec<(&'static str, u64, u64, &'static [&'static str])> {
    let Some(b) = &r.policy_budget else {
        return Vec::new();
    };
    let mut out = vec![match b.mutation_cost {
        Some(m) => (
            "one mutation (its expression and the variables it reads)",
            b.typed_mutation_cost.unwrap_or(m),
            RUNTIME_COST_BUDGET,
            &["applyConfiguration", "jsonPatch"][..],
        ),
        None => (
            "one evaluation (validations, messageExpressions and their variables)",
            b.typed_validation_cost.unwrap_or(b.validation_cost),
            RUNTIME_COST_BUDGET,
            &["validation", "messageExpression"][..],
        ),
    }];
    // Budgets of their own, for a policy that has such expressions.
    let own = [
        (
            "the matchConditions",
            b.typed_match_conditions_cost
                .unwrap_or(b.match_conditions_cost),
            MATCH_CONDITIONS_COST_BUDGET,
            &["matchCondition"][..],
        ),
        (
            "the auditAnnotations",
            b.typed_audit_annotations_cost
                .unwrap_or(b.audit_annotations_cost),
            RUNTIME_COST_BUDGET,
            &["auditAnnotation"][..],
        ),
    ];
    out.extend(own.into_iter().filter(|(.., kinds)| {
        r.expressions
            .iter()
            .any(|e| kinds.contains(&e.kind.as_str()))
    }));
    out
}

fn one_line(s: &str, max: usize) -> String {
    let l: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if l.chars().count() <= max {
        l
    } else {
        format!(
            "{}…",
            l.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

/// The findings of a run, report by report.
pub fn findings(reports: &[ObjectReport], near_percent: f64) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in reports {
        object_findings(r, near_percent, &mut out);
    }
    out
}

struct Ctx<'a> {
    r: &'a ObjectReport,
    file: Option<String>,
    near: f64,
    /// Field paths whose cost errors a budget finding already carries.
    covered: HashSet<String>,
}

impl Ctx<'_> {
    fn object(&self) -> String {
        format!("{} {}", self.r.kind, self.r.name)
    }

    /// A finding of `kind`, at its level.
    fn finding(
        &self,
        kind: &'static FindingKind,
        title: String,
        message: String,
        location: Option<&SourceLocation>,
    ) -> Finding {
        let location = location.or(self.r.location.as_ref()).cloned();
        Finding {
            kind,
            level: kind.level,
            title,
            message,
            file: location
                .as_ref()
                .map(|l| l.file.clone())
                .or_else(|| self.file.clone()),
            location,
            source: self.r.source.clone(),
            measure: None,
        }
    }

    /// Over or near: the kind and level, or `None` when neither.
    fn judge(
        &self,
        cost: u64,
        limit: u64,
        over: bool,
        kinds: (&'static FindingKind, &'static FindingKind),
    ) -> Option<&'static FindingKind> {
        if over {
            Some(kinds.0)
        } else if reaches_share(cost, limit, self.near) {
            Some(kinds.1)
        } else {
            None
        }
    }

    /// Whether error `i` is over a limit (a rule's, a messageExpression's or a total's).
    fn over_limit(&self, i: usize) -> bool {
        self.r
            .error_cost(i)
            .is_some_and(|c| c != CostError::ContributedToTotal)
    }

    /// The API server's own error over a limit on `path`, when it gives one (the path is
    /// `covered` then).
    fn push_api_error(&mut self, m: &mut String, path: &str) {
        let r = self.r;
        if let Some(i) =
            (0..r.errors.len()).find(|&i| r.error_field(i) == path && self.over_limit(i))
        {
            self.covered.insert(path.to_string());
            m.push_str(&format!(" The API server: {}", r.errors[i]));
        }
    }

    fn share_text(&self, kind: &FindingKind) -> String {
        if kind.level == Level::Error {
            String::new()
        } else {
            format!(
                " (at or above the near-budget threshold of {}%)",
                trim_float(self.near)
            )
        }
    }
}

pub(crate) fn trim_float(f: f64) -> String {
    let s = format!("{f:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn object_findings(r: &ObjectReport, near: f64, out: &mut Vec<Finding>) {
    let start = out.len();
    let mut c = Ctx {
        r,
        file: file_of(&r.source),
        near,
        covered: HashSet::new(),
    };
    let version = &r.kubernetes_version;
    if let Some(st) = &r.stopped {
        out.push(c.finding(
            ESTIMATE_STOPPED,
            "celcost: estimate stopped".into(),
            format!("{}: {}", c.object(), st.message),
            st.location.as_ref(),
        ));
    }
    for s in &r.schemas {
        for rule in &s.rules {
            rule_findings(&mut c, rule, out);
        }
        out.extend(total_finding(&mut c, s, version));
    }
    for e in &r.expressions {
        expression_findings(&c, e, out);
    }
    evaluation_findings(&c, r, out);
    error_findings(&c, r, out);
    older_minor_findings(&c, out);
    update::update_findings(&c, start, out);
    for n in &r.notes {
        out.push(c.finding(
            OBJECT_NOTE,
            "celcost: note".into(),
            format!("{}: {n}", c.object()),
            None,
        ));
    }
}

/// The finding of a schema's total near or over the per-schema limit, if it is.
fn total_finding(c: &mut Ctx<'_>, s: &SchemaReport, version: &str) -> Option<Finding> {
    let kind = c.judge(
        s.total_cost,
        PER_SCHEMA_COST_LIMIT,
        s.exceeds_total_limit,
        (TOTAL_OVER_BUDGET, TOTAL_NEAR_BUDGET),
    )?;
    let mut rules: Vec<&RuleReport> = s.rules.iter().collect();
    rules.sort_by_key(|x| std::cmp::Reverse(x.cost));
    let worst: Vec<String> = rules
        .iter()
        .take(3)
        .filter(|x| x.cost > 0)
        .map(|x| {
            let at = x
                .location
                .as_ref()
                .map(|l| format!(" at {l}"))
                .unwrap_or_default();
            format!(
                "{} [{}] {} ({}){at}",
                x.path,
                x.index,
                num(x.cost),
                percent(x.cost, PER_SCHEMA_COST_LIMIT)
            )
        })
        .collect();
    let mut m = format!(
        "{}: the rules of {} (versions {}; {} rules) cost {} together = {} of the per-schema limit {}{}.",
        c.object(),
        s.schema_field_path,
        s.versions.join(", "),
        s.rule_count,
        num(s.total_cost),
        percent(s.total_cost, PER_SCHEMA_COST_LIMIT),
        num(PER_SCHEMA_COST_LIMIT),
        c.share_text(kind),
    );
    kind.push_rejects(&mut m, version);
    if !worst.is_empty() {
        m.push_str(&format!(" The costliest: {}.", worst.join("; ")));
    }
    c.push_api_error(&mut m, &s.schema_field_path);
    push_advice(
        &mut m,
        schema_suggestion_text(s),
        crate::rewrite::schema_rewrites_text(s),
    );
    Some(
        c.finding(
            kind,
            kind.budget_title("CRD total", s.total_cost, PER_SCHEMA_COST_LIMIT, "100M"),
            m,
            s.location.as_ref(),
        )
        .measured(
            &s.schema_field_path,
            s.total_cost,
            PER_SCHEMA_COST_LIMIT,
            None,
            version,
        ),
    )
}

/// The findings of a policy's evaluation budgets near or over their limits.
fn evaluation_findings(c: &Ctx<'_>, r: &ObjectReport, out: &mut Vec<Finding>) {
    let version = &r.kubernetes_version;
    for (what, cost, limit, kinds) in evaluations(r) {
        let Some(kind) = c.judge(
            cost,
            limit,
            ratio(cost, limit) > 1.0,
            (EVALUATION_OVER_BUDGET, EVALUATION_NEAR_BUDGET),
        ) else {
            continue;
        };
        // Located at the costliest expression it covers.
        let worst = r
            .expressions
            .iter()
            .filter(|e| kinds.contains(&e.kind.as_str()))
            .max_by_key(|e| e.judged_cost().unwrap_or(0));
        let mut m = format!(
            "{}: the worst case of {what} may cost {} = {} of its runtime budget {}{}.",
            c.object(),
            num(cost),
            percent(cost, limit),
            num(limit),
            c.share_text(kind)
        );
        if let Some(w) = worst {
            m.push_str(&format!(
                " The costliest: {} `{}` ({}).",
                w.kind,
                one_line(&w.expression, 120),
                w.field_path
            ));
        }
        out.push(
            c.finding(
                kind,
                kind.budget_title("policy evaluation", cost, limit, &num(limit)),
                m,
                worst.and_then(|w| w.location.as_ref()),
            )
            .measured(what, cost, limit, None, version),
        );
    }
}

/// The API server's errors, but those a cost finding already explains.
fn error_findings(c: &Ctx<'_>, r: &ObjectReport, out: &mut Vec<Finding>) {
    let version = &r.kubernetes_version;
    let locations: HashMap<usize, &SourceLocation> = r
        .error_locations
        .iter()
        .map(|l| (l.error as usize, &l.location))
        .collect();
    for (i, e) in r.errors.iter().enumerate() {
        let path = r.error_field(i);
        if !path.is_empty() && c.covered.contains(path) && c.over_limit(i) {
            continue;
        }
        // Explained by the total's finding.
        if r.error_cost(i) == Some(CostError::ContributedToTotal)
            && r.schemas.iter().any(|s| s.exceeds_total_limit)
        {
            continue;
        }
        out.push(c.finding(
            APISERVER_ERROR,
            format!("celcost: rejected by Kubernetes {version}"),
            format!("{}: {e}", c.object()),
            locations.get(&i).copied(),
        ));
    }
}

fn rule_findings(c: &mut Ctx<'_>, rule: &RuleReport, out: &mut Vec<Finding>) {
    let version = &c.r.kubernetes_version;
    let unit = format!("{} [{}]", rule.path, rule.index);
    if let Some(kind) = c.judge(
        rule.cost,
        PER_RULE_COST_LIMIT,
        rule.exceeds_cost_limit,
        (RULE_OVER_BUDGET, RULE_NEAR_BUDGET),
    ) {
        let mut m = format!(
            "{}: rule `{}` on {unit} costs {} = {} of the per-rule limit {} ({} per call × cardinality {}){}.",
            c.object(),
            one_line(&rule.rule, 200),
            num(rule.cost),
            percent(rule.cost, PER_RULE_COST_LIMIT),
            num(PER_RULE_COST_LIMIT),
            num(rule.max_cost),
            num(rule.cardinality_used),
            c.share_text(kind)
        );
        kind.push_rejects(&mut m, version);
        let why = super::rows::drivers_why(rule);
        if !why.is_empty() {
            m.push_str(&format!(" Why: {}.", why.join("; ")));
        }
        c.push_api_error(&mut m, &rule.rule_field_path);
        push_advice(
            &mut m,
            suggestion_text(rule),
            crate::rewrite::rewrite_text(rule),
        );
        out.push(
            c.finding(
                kind,
                kind.budget_title(
                    "rule",
                    rule.cost,
                    PER_RULE_COST_LIMIT,
                    &format!("10M ({unit})"),
                ),
                m,
                rule.location.as_ref(),
            )
            .measured(
                &unit,
                rule.cost,
                PER_RULE_COST_LIMIT,
                Some(rule.cardinality_used),
                version,
            ),
        );
    }
    if let (Some(me), Some(cost)) = (&rule.message_expression, rule.message_expression_cost)
        && let Some(kind) = c.judge(
            cost,
            PER_RULE_COST_LIMIT,
            cost > PER_RULE_COST_LIMIT,
            (RULE_OVER_BUDGET, RULE_NEAR_BUDGET),
        )
    {
        let path = rule
            .rule_field_path
            .strip_suffix(".rule")
            .map(|p| format!("{p}.messageExpression"))
            .unwrap_or_default();
        let mut m = format!(
            "{}: the messageExpression `{}` of the rule on {unit} costs {} = {} of the per-rule limit {}{}.",
            c.object(),
            one_line(me, 200),
            num(cost),
            percent(cost, PER_RULE_COST_LIMIT),
            num(PER_RULE_COST_LIMIT),
            c.share_text(kind)
        );
        kind.push_rejects(&mut m, version);
        c.push_api_error(&mut m, &path);
        out.push(
            c.finding(
                kind,
                kind.budget_title(
                    "messageExpression",
                    cost,
                    PER_RULE_COST_LIMIT,
                    &format!("10M ({unit})"),
                ),
                m,
                rule.message_expression_or_rule_location(),
            )
            .measured(
                &format!("{unit} messageExpression"),
                cost,
                PER_RULE_COST_LIMIT,
                None,
                version,
            ),
        );
    }
}

fn expression_findings(c: &Ctx<'_>, e: &ExpressionReport, out: &mut Vec<Finding>) {
    let Some(cost) = e.judged_cost() else {
        return;
    };
    let limit = e.per_call_limit.max(1);
    let Some(kind) = c.judge(
        cost,
        limit,
        ratio(cost, limit) > 1.0,
        (EXPRESSION_OVER_BUDGET, EXPRESSION_NEAR_BUDGET),
    ) else {
        return;
    };
    let mut m = format!(
        "{}: {} `{}` ({}) may cost up to {} = {} of the per-call limit {}{}",
        c.object(),
        e.kind,
        one_line(&e.expression, 200),
        e.field_path,
        num(cost),
        percent(cost, limit),
        num(limit),
        c.share_text(kind)
    );
    match &e.typed {
        Some(t) if t.error.is_none() => {
            m.push_str(&format!(
                " (typed against {}; upstream, with object as dyn: {}).",
                t.worst_against
                    .as_deref()
                    .unwrap_or("the matched resources"),
                e.max_cost.map(num).unwrap_or_else(|| "-".into())
            ));
            if !t.unbounded_fields.is_empty() {
                m.push_str(&format!(
                    " Drivers: {} (no maxLength/maxItems/maxProperties: sized from the 3 MiB request).",
                    t.unbounded_fields.join(", ")
                ));
            }
            if !t.unknown_size_fields.is_empty() {
                m.push_str(&format!(
                    " Size unknown: {} (no schema gives a size).",
                    t.unknown_size_fields.join(", ")
                ));
            }
        }
        _ => m.push_str(" (upstream's estimate: object, oldObject and params typed dyn)."),
    }
    if kind.level == Level::Error {
        m.push_str(" At runtime the evaluation is stopped when a request makes it cost more.");
    }
    out.push(
        c.finding(
            kind,
            kind.budget_title(&e.kind, cost, limit, "1M"),
            m,
            e.location.as_ref(),
        )
        .measured(&e.field_path, cost, limit, None, &c.r.kubernetes_version),
    );
}

/// With a range of minors: the units an older minor rejects (over the limit, or not compiling
/// there) while the newest accepts them; or, when no unit says why, the minors that reject the
/// object.
fn older_minor_findings(c: &Ctx<'_>, out: &mut Vec<Finding>) {
    let r = c.r;
    let Some(m) = &r.by_version else {
        return;
    };
    let newest = m.verdicts.last().map(|v| v.kubernetes_version.as_str());
    // Each unit of the newest report (the keys of `celcost_core::report::versions`) and where it is.
    let units: HashMap<String, Option<&SourceLocation>> = r
        .cost_units()
        .iter()
        .map(|u| (u.label(), u.location()))
        .collect();
    let crd = !r.schemas.is_empty();
    let mut any = false;
    for ch in &m.changes {
        let Some(last) = ch.steps.last() else {
            continue;
        };
        if fails(last) {
            continue;
        }
        let names: Vec<&str> = m
            .verdicts
            .iter()
            .map(|v| v.kubernetes_version.trim_start_matches('v'))
            .collect();
        // The minors a step holds for: from its own to the next step's (exclusive).
        let span = |i: usize| {
            let name = |k: usize| {
                ch.steps
                    .get(k)
                    .map(|s| s.kubernetes_version.trim_start_matches('v'))
            };
            let from = names.iter().position(|n| Some(*n) == name(i));
            let to = name(i + 1).and_then(|n| names.iter().position(|x| *x == n));
            match (from, to) {
                (Some(f), Some(t)) if t > f + 2 => format!("{} to {}", names[f], names[t - 1]),
                (Some(f), Some(t)) if t == f + 2 => format!("{} and {}", names[f], names[f + 1]),
                _ => name(i).unwrap_or_default().to_string(),
            }
        };
        let older: Vec<String> = ch
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| fails(s) && Some(s.kubernetes_version.as_str()) != newest)
            .map(|(i, s)| format!("on Kubernetes {}: {}", span(i), failure(s, false)))
            .collect();
        if older.is_empty() {
            continue;
        }
        any = true;
        let mut finding = c.finding(
            OLDER_VERSION_REJECTS,
            format!("celcost: an older Kubernetes version rejects {}", ch.unit),
            format!(
                "{}: {} — {}; on {} it compiles and is within its limit.{}",
                c.object(),
                ch.unit,
                older.join("; "),
                newest.unwrap_or("the newest").trim_start_matches('v'),
                because(ch.causes.iter())
            ),
            units.get(&ch.unit).copied().flatten(),
        );
        if !crd {
            finding.level = Level::Warning;
        }
        out.push(finding);
    }
    upgrade_day_findings(c, m, &units, out);
    let stopped: Vec<&str> = m
        .verdicts
        .iter()
        .filter(|v| v.stopped && Some(v.kubernetes_version.as_str()) != newest)
        .map(|v| v.kubernetes_version.trim_start_matches('v'))
        .collect();
    if !stopped.is_empty() {
        out.push(c.finding(
            ESTIMATE_STOPPED,
            "celcost: estimate stopped on an older Kubernetes version".into(),
            format!(
                "{}: the estimate for Kubernetes {} stopped (over its work budget, or failed): not judged there.",
                c.object(),
                stopped.join(", ")
            ),
            None,
        ));
    }
    let rejecting: Vec<&str> = m
        .verdicts
        .iter()
        .filter(|v| !v.valid && !v.stopped && Some(v.kubernetes_version.as_str()) != newest)
        .map(|v| v.kubernetes_version.trim_start_matches('v'))
        .collect();
    if !any && r.valid && !rejecting.is_empty() {
        out.push(c.finding(
            OLDER_VERSION_REJECTS,
            "celcost: an older Kubernetes version rejects the object".into(),
            format!(
                "{}: rejected by Kubernetes {} (accepted from {}); run celcost with --kubernetes-version {} for the errors.",
                c.object(),
                rejecting.join(", "),
                m.oldest_accepting
                    .as_deref()
                    .unwrap_or("none")
                    .trim_start_matches('v'),
                rejecting[0]
            ),
            None,
        ));
    }
}

/// Upgrade day: each minor that rejects what the one before it accepted, and the units that
/// newly fail there (located where the unit is).
fn upgrade_day_findings(
    c: &Ctx<'_>,
    m: &celcost_core::report::versions::VersionMatrix,
    units: &HashMap<String, Option<&SourceLocation>>,
    out: &mut Vec<Finding>,
) {
    for (a, b) in celcost_core::report::versions::accepted_then_rejected(m) {
        let (an, bn) = (a.trim_start_matches('v'), b.trim_start_matches('v'));
        let why = celcost_core::report::versions::newly_failing(m, a, b);
        if why.is_empty() {
            out.push(c.finding(
                NEWER_VERSION_REJECTS,
                format!("celcost: accepted by {an}, rejected by {bn}"),
                format!(
                    "{}: accepted by Kubernetes {an}, rejected by {bn}; run celcost with --kubernetes-version {bn} for the errors.{}",
                    c.object(),
                    because(celcost_core::report::versions::rejection_causes(m, b).iter())
                ),
                None,
            ));
        }
        for ch in why {
            let before = celcost_core::report::versions::value_at(m, ch, a);
            let Some(after) = celcost_core::report::versions::value_at(m, ch, b) else {
                continue;
            };
            let was = match before {
                Some(s) => match (s.cost, &s.compile_error) {
                    (Some(cost), None) => against_limit(cost, s.limit),
                    _ => "absent".into(),
                },
                None => "absent".into(),
            };
            let now = failure(after, true);
            let mut finding = c.finding(
                NEWER_VERSION_REJECTS,
                format!("celcost: accepted by {an}, rejected by {bn}: {}", ch.unit),
                format!(
                    "{}: accepted by Kubernetes {an}, rejected by {bn}: {} — {was} on {an}; {now} on {bn}.{}",
                    c.object(),
                    ch.unit,
                    because(ch.causes_at(b))
                ),
                units.get(&ch.unit).copied().flatten(),
            );
            if let Some(cost) = after.cost {
                finding = finding.measured(&ch.unit, cost, after.limit, None, b);
            }
            out.push(finding);
        }
    }
}

/// `cost = share of limit`.
fn against_limit(cost: u64, limit: u64) -> String {
    format!("{} = {} of {}", num(cost), percent(cost, limit), num(limit))
}

/// Why a minor's value of a unit fails there: it does not compile, or its cost is over the limit
/// (`factor`: by how much).
fn failure(s: &VersionStep, factor: bool) -> String {
    match (&s.compile_error, s.cost) {
        (Some(e), _) => format!("does not compile ({})", one_line(e, 160)),
        (None, Some(cost)) if factor => format!(
            "{} (over the limit; exceeds budget by factor of {})",
            against_limit(cost, s.limit),
            celcost_core::report::format::budget_factor(cost, s.limit)
        ),
        (None, Some(cost)) => format!("{} (over the limit)", against_limit(cost, s.limit)),
        (None, None) => "over the limit".into(),
    }
}

/// A path as CI tools match it: `/`-separated, without leading `./`.
pub fn ci_path(path: &str) -> String {
    let mut p = path.replace('\\', "/");
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.trim_start_matches('/').to_string();
    }
    p
}

/// ` Because 1.37: … (reference); …` for a finding's message; nothing without causes.
fn because<'a>(
    causes: impl Iterator<Item = &'a celcost_core::report::versions::VersionCause>,
) -> String {
    let texts: Vec<String> = causes.map(|c| c.text()).collect();
    if texts.is_empty() {
        String::new()
    } else {
        format!(" Because {}.", texts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares() {
        assert!(reaches_share(8_000_000, 10_000_000, 80.0));
        assert!(!reaches_share(7_999_999, 10_000_000, 80.0));
        assert!(reaches_share(u64::MAX, 10, 500.0));
        assert_eq!(trim_float(80.0), "80");
        assert_eq!(trim_float(82.5), "82.5");
    }
}
