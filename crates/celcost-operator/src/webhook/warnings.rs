//! The admission webhook's warnings: one short line per rule, expression or total at or above
//! the near-budget threshold, worst first, within the API server's limits on warnings. Pure: no
//! IO.
//!
//! The API server's limits (k8s.io/apiserver, Kubernetes 1.36):
//! - `pkg/endpoints/filters/warning.go`: `truncateAtTotalRunes = 4 * 1024` and
//!   `truncateItemRunes = 256`. Every warning of a request (the API server's own, each webhook's,
//!   each policy's) goes through one recorder: once their runes add up to more than 4,096, every
//!   warning is cut to 256 runes and later ones are dropped.
//! - `pkg/admission/plugin/webhook/validating/dispatcher.go`: a webhook's `warnings` are added
//!   one by one (`warning.AddWarning`), deduplicated by text.
//! - k8s.io/apimachinery `pkg/util/net/http.go` `NewWarningHeader`: a warning with a control
//!   character is dropped.
//! - k8s.io/api `admission/v1/types.go` (`AdmissionResponse.Warnings`): "Limit warnings to 120
//!   characters if possible. Warnings over 256 characters and large numbers of warnings may be
//!   truncated."
//!
//! So celcost sends at most [`MAX_WARNINGS`] lines of at most [`MAX_WARNING_CHARS`] characters
//! (2,560 runes at most: room is left for the API server's own warnings and other webhooks'),
//! without control characters. Past [`MAX_WARNINGS`] the worst `MAX_WARNINGS - 1` findings are
//! sent, then `celcost: N more findings — see kubectl get costreport <name>`. A line too long has
//! its suggestion, then the middle of its path, cut (with `…`), never its numbers.

use celcost_core::report::{
    ExpressionReport, ObjectReport, PER_CALL_LIMIT, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT,
    RUNTIME_COST_BUDGET, RuleReport,
};

use crate::resource::TargetKind;
use celcost_core::report::format::thousands;

/// Most warning lines per response, the "N more" line included.
pub const MAX_WARNINGS: usize = 10;
/// Most characters (runes, as the API server counts) of one warning line: the API server's
/// `truncateItemRunes`.
pub const MAX_WARNING_CHARS: usize = 256;
/// Every line starts with this, so a reader knows who says it.
pub const PREFIX: &str = "celcost: ";

/// A rule, expression or total at or above the threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// What costs: a schema path (`^.spec.tags[*]`), a field path
    /// (`spec.validations[0].expression`), or a total.
    pub subject: String,
    /// The CRD versions whose schema has it, when the CRD has several schemas.
    pub versions: Vec<String>,
    pub cost: u64,
    pub limit: u64,
    /// `per-rule limit`, `per-call limit`, ...
    pub limit_name: &'static str,
    /// The bound to add, once the estimator suggests one (see [`suggestion_text`]).
    pub suggestion: Option<String>,
}

impl Finding {
    /// `cost / limit`, for ordering (worst first).
    fn share(&self) -> f64 {
        self.cost as f64 / self.limit.max(1) as f64
    }

    /// `costs 9,120,000 = 91% of the 10,000,000 per-rule limit`.
    fn numbers(&self) -> String {
        let limit = format!("{} {}", thousands(self.limit), self.limit_name);
        if self.cost == u64::MAX {
            return format!("is unbounded (far beyond the {limit})");
        }
        let pct = u128::from(self.cost) * 100 / u128::from(self.limit.max(1));
        format!("costs {} = {pct}% of the {limit}", thousands(self.cost))
    }

    /// The warning line, at most `max_chars` characters.
    pub fn text(&self, max_chars: usize) -> String {
        let versions = if self.versions.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.versions.join(", "))
        };
        let subject = clean(&self.subject);
        let numbers = self.numbers();
        let suggestion = self
            .suggestion
            .as_deref()
            .map(|s| format!("; {}", clean(s)))
            .unwrap_or_default();
        let line = |subject: &str, versions: &str, suggestion: &str| {
            format!("{PREFIX}{subject}{versions} {numbers}{suggestion}")
        };
        let full = line(&subject, &versions, &suggestion);
        let mut over = chars(&full).saturating_sub(max_chars);
        if over == 0 {
            return full;
        }
        // The suggestion first (its end), then the versions, then the middle of the path.
        let suggestion = cut_end(&suggestion, chars(&suggestion).saturating_sub(over));
        over = chars(&line(&subject, &versions, &suggestion)).saturating_sub(max_chars);
        let versions = if over > 0 {
            cut_end(&versions, chars(&versions).saturating_sub(over))
        } else {
            versions
        };
        over = chars(&line(&subject, &versions, &suggestion)).saturating_sub(max_chars);
        let subject = cut_middle(&subject, chars(&subject).saturating_sub(over));
        let out = line(&subject, &versions, &suggestion);
        // Only when even the numbers do not fit (a tiny `max_chars`).
        cut_end(&out, max_chars)
    }
}

/// The bound to add to bring a rule under the threshold, as a short phrase
/// (`add maxItems: 64 to ^.spec.tags`).
/// The first of the rule's verified suggestions ([`celcost_advice::suggest`]), or why no bound helps;
/// `None` when the report carries neither (the webhook answers without them when the search
/// does not finish in time).
pub fn suggestion_text(rule: &RuleReport) -> Option<String> {
    celcost_advice::suggest::suggestion_text(rule)
}

/// What the estimate of an object finds at or above `near_percent` of a limit, worst first.
///
/// - CRDs: each rule (rule × cardinality, or its messageExpression when that costs more) against
///   the 10,000,000 per-rule limit, each schema's total against the 100,000,000 per-schema limit:
///   the API server's static limits. Rules repeated in the schemas of several versions are one
///   finding naming the versions.
/// - Policies: each expression's **typed** worst case (`object`, `oldObject`, `params` typed from
///   schemas) against the 1,000,000 per-call runtime limit, and the policy's (a mutation's) typed
///   worst case against the 10,000,000 runtime budget. Upstream's untyped estimate (`dyn`
///   objects sized from the 3 MiB request limit) is far above any real cost, so an expression
///   without a typed estimate gets no warning, and neither does a total with such an expression.
pub fn findings(kind: TargetKind, report: &ObjectReport, near_percent: u8) -> Vec<Finding> {
    if report.stopped.is_some() {
        return Vec::new();
    }
    let near = |cost: u64, limit: u64| {
        u128::from(cost) * 100 >= u128::from(near_percent) * u128::from(limit)
    };
    let mut out: Vec<Finding> = Vec::new();
    match kind {
        TargetKind::CustomResourceDefinition => {
            let several = report.schemas.len() > 1;
            let mut push = |f: Finding, version: &[String]| {
                // The same rule in several versions' schemas: one finding.
                match out
                    .iter_mut()
                    .find(|o| o.subject == f.subject && o.cost == f.cost && o.limit == f.limit)
                {
                    Some(o) if several => o.versions.extend(version.iter().cloned()),
                    Some(_) => {}
                    None => out.push(Finding {
                        versions: if several {
                            version.to_vec()
                        } else {
                            Vec::new()
                        },
                        ..f
                    }),
                }
            };
            for s in &report.schemas {
                for r in &s.rules {
                    let cost = r.judged_cost();
                    if !near(cost, PER_RULE_COST_LIMIT) {
                        continue;
                    }
                    let same_node = s.rules.iter().filter(|o| o.path == r.path).count();
                    let mut subject = r.path.clone();
                    if same_node > 1 {
                        subject.push_str(&format!(" #{}", r.index));
                    }
                    if r.message_expression_cost.unwrap_or(0) > r.cost {
                        subject.push_str(" messageExpression");
                    }
                    push(
                        Finding {
                            subject,
                            versions: Vec::new(),
                            cost,
                            limit: PER_RULE_COST_LIMIT,
                            limit_name: "per-rule limit",
                            suggestion: suggestion_text(r),
                        },
                        &s.versions,
                    );
                }
                if near(s.total_cost, PER_SCHEMA_COST_LIMIT) {
                    push(
                        Finding {
                            subject: "all rules of the schema".to_string(),
                            versions: Vec::new(),
                            cost: s.total_cost,
                            limit: PER_SCHEMA_COST_LIMIT,
                            limit_name: "per-schema limit",
                            suggestion: celcost_advice::suggest::schema_suggestion_text(s),
                        },
                        &s.versions,
                    );
                }
            }
        }
        TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy => {
            let typed = |e: &ExpressionReport| {
                e.typed
                    .as_ref()
                    .filter(|t| t.error.is_none())
                    .map(|t| t.max_cost)
            };
            for e in &report.expressions {
                let Some(cost) = typed(e) else { continue };
                if near(cost, PER_CALL_LIMIT) {
                    out.push(Finding {
                        subject: e.field_path.clone(),
                        versions: Vec::new(),
                        cost,
                        limit: PER_CALL_LIMIT,
                        limit_name: "per-call limit",
                        suggestion: None,
                    });
                }
            }
            let all_typed = report
                .expressions
                .iter()
                .all(|e| typed(e).is_some() || e.compile_error.is_some());
            let total = report.policy_budget.as_ref().and_then(|b| {
                if kind == TargetKind::MutatingAdmissionPolicy {
                    b.typed_mutation_cost.map(|c| (c, "one mutation"))
                } else {
                    b.typed_validation_cost
                        .map(|c| (c, "one evaluation of the validations"))
                }
            });
            if let Some((cost, what)) = total.filter(|_| all_typed)
                && near(cost, RUNTIME_COST_BUDGET)
            {
                out.push(Finding {
                    subject: what.to_string(),
                    versions: Vec::new(),
                    cost,
                    limit: RUNTIME_COST_BUDGET,
                    limit_name: "runtime budget",
                    suggestion: None,
                });
            }
        }
    }
    // Worst first; equal shares keep the report's order.
    out.sort_by(|a, b| b.share().total_cmp(&a.share()));
    out
}

/// The warning lines for `findings` (worst first) of the object whose report is `report_name`:
/// at most `max_warnings` lines of at most `max_chars` characters each.
pub fn warning_lines(
    findings: &[Finding],
    report_name: &str,
    max_warnings: usize,
    max_chars: usize,
) -> Vec<String> {
    let max_warnings = max_warnings.max(1);
    if findings.len() <= max_warnings {
        return findings.iter().map(|f| f.text(max_chars)).collect();
    }
    let shown = max_warnings - 1;
    let mut out: Vec<String> = findings[..shown]
        .iter()
        .map(|f| f.text(max_chars))
        .collect();
    let more = format!(
        "{PREFIX}{} more findings — see kubectl get costreport {}",
        findings.len() - shown,
        clean(report_name)
    );
    out.push(cut_end(&more, max_chars));
    out
}

/// The warnings of an estimate: [`findings`] within [`MAX_WARNINGS`] and [`MAX_WARNING_CHARS`].
pub fn warnings(
    kind: TargetKind,
    name: &str,
    report: &ObjectReport,
    near_percent: u8,
) -> Vec<String> {
    warning_lines(
        &findings(kind, report, near_percent),
        &kind.report_name(name),
        MAX_WARNINGS,
        MAX_WARNING_CHARS,
    )
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Control characters (which make the API server drop the warning) as `\u{..}` escapes.
fn clean(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `s` cut to at most `max` characters, ending with `…` when cut.
fn cut_end(s: &str, max: usize) -> String {
    if chars(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// `s` cut to at most `max` characters by replacing its middle with `…` (a path keeps its root
/// and its leaf).
fn cut_middle(s: &str, max: usize) -> String {
    let n = chars(s);
    if n <= max {
        return s.to_string();
    }
    if max < 3 {
        return cut_end(s, max);
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(n - tail));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use celcost_core::report::{PolicyBudget, SchemaReport, TypedEstimate};

    fn rule(path: &str, index: u64, cost: u64) -> RuleReport {
        RuleReport {
            path: path.to_string(),
            index,
            rule: "self.all(x, x.matches('^[a-z]+$'))".to_string(),
            cost,
            ..RuleReport::default()
        }
    }

    fn crd(schemas: Vec<SchemaReport>) -> ObjectReport {
        ObjectReport {
            kind: "CustomResourceDefinition".into(),
            name: "widgets.example.com".into(),
            valid: true,
            schemas,
            ..ObjectReport::default()
        }
    }

    fn schema(versions: &[&str], rules: Vec<RuleReport>) -> SchemaReport {
        SchemaReport {
            schema_field_path: "spec.versions[0].schema.openAPIV3Schema".into(),
            versions: versions.iter().map(|v| v.to_string()).collect(),
            total_cost: rules.iter().map(|r| r.cost).sum(),
            rule_count: rules.len() as u64,
            rules,
            ..SchemaReport::default()
        }
    }

    /// A CRD of one `v1` schema with `rules`.
    fn v1_crd(rules: Vec<RuleReport>) -> ObjectReport {
        crd(vec![schema(&["v1"], rules)])
    }

    /// The warnings of the CRD `r` at `near_budget_percent`.
    fn crd_warnings(r: &ObjectReport, near_budget_percent: u8) -> Vec<String> {
        warnings(
            TargetKind::CustomResourceDefinition,
            "widgets.example.com",
            r,
            near_budget_percent,
        )
    }

    #[test]
    fn the_example_line() {
        let r = v1_crd(vec![
            rule("^.spec.tags[*]", 0, 9_120_000),
            rule("^.spec.a", 0, 10),
        ]);
        let w = crd_warnings(&r, 80);
        assert_eq!(
            w,
            vec!["celcost: ^.spec.tags[*] costs 9,120,000 = 91% of the 10,000,000 per-rule limit"]
        );
    }

    #[test]
    fn threshold_is_inclusive_and_percent_floors() {
        let r = v1_crd(vec![
            rule("^.a", 0, 8_000_000),
            rule("^.b", 0, 7_999_999),
            rule("^.c", 0, 10_000_000),
        ]);
        let w = crd_warnings(&r, 80);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("^.c costs 10,000,000 = 100% of"), "{w:?}");
        assert!(w[1].contains("^.a costs 8,000,000 = 80% of"), "{w:?}");
        // 79.99999 % is not 80 %.
        let w = crd_warnings(&r, 100);
        assert_eq!(w.len(), 1, "{w:?}");
    }

    #[test]
    fn totals_message_expressions_indexes_and_versions() {
        let mut heavy_message = rule("^.spec.x", 1, 100);
        heavy_message.message_expression_cost = Some(9_000_000);
        let rules = vec![
            rule("^.spec.x", 0, 8_500_000),
            heavy_message,
            rule("^.spec.y", 0, 8_100_000),
            rule("^.spec.z", 0, 8_100_000),
        ];
        let mut s1 = schema(&["v1"], rules.clone());
        s1.total_cost = 95_000_000;
        let mut s2 = schema(&["v2"], rules);
        s2.total_cost = 95_000_000;
        let w = crd_warnings(&crd(vec![s1, s2]), 80);
        assert_eq!(
            w,
            vec![
                "celcost: all rules of the schema (v1, v2) costs 95,000,000 = 95% of the 100,000,000 per-schema limit",
                "celcost: ^.spec.x #1 messageExpression (v1, v2) costs 9,000,000 = 90% of the 10,000,000 per-rule limit",
                "celcost: ^.spec.x #0 (v1, v2) costs 8,500,000 = 85% of the 10,000,000 per-rule limit",
                "celcost: ^.spec.y (v1, v2) costs 8,100,000 = 81% of the 10,000,000 per-rule limit",
                "celcost: ^.spec.z (v1, v2) costs 8,100,000 = 81% of the 10,000,000 per-rule limit",
            ]
        );
    }

    #[test]
    fn count_cap_keeps_the_worst_and_says_how_many_more() {
        let rules: Vec<RuleReport> = (0..25)
            .map(|i| rule(&format!("^.spec.f{i:02}"), 0, 8_000_000 + i * 10_000))
            .collect();
        // (A schema total below its threshold: rules only.)
        let mut s = schema(&["v1"], rules);
        s.total_cost = 1_000;
        let w = crd_warnings(&crd(vec![s]), 80);
        assert_eq!(w.len(), MAX_WARNINGS);
        // Worst first: f24, f23, ...
        for (i, line) in w[..MAX_WARNINGS - 1].iter().enumerate() {
            assert!(
                line.starts_with(&format!("celcost: ^.spec.f{:02} costs", 24 - i)),
                "{line}"
            );
        }
        assert_eq!(
            w[MAX_WARNINGS - 1],
            "celcost: 16 more findings — see kubectl get costreport crd.widgets.example.com"
        );
        let runes: usize = w.iter().map(|l| l.chars().count()).sum();
        assert!(runes <= MAX_WARNINGS * MAX_WARNING_CHARS);
        // Exactly MAX_WARNINGS findings: no "more" line.
        let rules: Vec<RuleReport> = (0..MAX_WARNINGS as u64)
            .map(|i| rule(&format!("^.f{i}"), 0, 9_000_000))
            .collect();
        let mut s = schema(&["v1"], rules);
        s.total_cost = 1_000;
        let w = crd_warnings(&crd(vec![s]), 80);
        assert_eq!(w.len(), MAX_WARNINGS);
        assert!(w.iter().all(|l| !l.contains("more findings")));
    }

    #[test]
    fn long_paths_are_cut_in_the_middle_and_numbers_kept() {
        let long = format!("^.spec{}.leaf", ".deeply_nested_field".repeat(40));
        let r = v1_crd(vec![rule(&long, 0, 9_500_000)]);
        let w = crd_warnings(&r, 80);
        assert_eq!(w.len(), 1);
        let line = &w[0];
        assert_eq!(line.chars().count(), MAX_WARNING_CHARS, "{line}");
        assert!(line.starts_with("celcost: ^.spec.deeply"), "{line}");
        assert!(line.contains("….leaf") || line.contains("…"), "{line}");
        assert!(
            line.ends_with(".leaf costs 9,500,000 = 95% of the 10,000,000 per-rule limit"),
            "{line}"
        );
        // Multi-byte characters are counted as the API server counts them (runes).
        let f = Finding {
            subject: format!("^.spec.{}", "é".repeat(400)),
            versions: Vec::new(),
            cost: 9_000_000,
            limit: PER_RULE_COST_LIMIT,
            limit_name: "per-rule limit",
            suggestion: Some(format!("add maxItems: 10 to {}", "ü".repeat(300))),
        };
        let t = f.text(MAX_WARNING_CHARS);
        assert_eq!(t.chars().count(), MAX_WARNING_CHARS, "{t}");
        assert!(t.contains("costs 9,000,000 = 90% of the 10,000,000 per-rule limit"));
    }

    #[test]
    fn control_characters_are_escaped() {
        let r = v1_crd(vec![rule("^.spec[\"a\nb\"]", 0, 9_000_000)]);
        let w = crd_warnings(&r, 80);
        assert!(!w[0].chars().any(char::is_control), "{w:?}");
        assert!(w[0].contains("a\\u{a}b"), "{w:?}");
    }

    #[test]
    fn policies_warn_on_typed_estimates_only() {
        let typed = |cost: u64| TypedEstimate {
            against: vec!["apps/v1/deployments".into()],
            max_cost: cost,
            ..TypedEstimate::default()
        };
        let expr = |path: &str, max: u64, t: Option<TypedEstimate>| ExpressionReport {
            field_path: path.into(),
            kind: "validation".into(),
            expression: "true".into(),
            max_cost: Some(max),
            per_call_limit: PER_CALL_LIMIT,
            typed: t,
            ..ExpressionReport::default()
        };
        let mut report = ObjectReport {
            kind: "ValidatingAdmissionPolicy".into(),
            name: "p".into(),
            valid: true,
            expressions: vec![
                expr(
                    "spec.validations[0].expression",
                    u64::MAX,
                    Some(typed(950_000)),
                ),
                expr("spec.validations[1].expression", 5_000, Some(typed(100))),
                // Upstream's untyped estimate only: no warning, however high.
                expr("spec.validations[2].expression", 1 << 40, None),
            ],
            policy_budget: Some(PolicyBudget {
                validation_cost: u64::MAX,
                typed_validation_cost: Some(9_500_000),
                ..PolicyBudget::default()
            }),
            ..ObjectReport::default()
        };
        let w = warnings(TargetKind::ValidatingAdmissionPolicy, "p", &report, 80);
        assert_eq!(
            w,
            vec![
                "celcost: spec.validations[0].expression costs 950,000 = 95% of the 1,000,000 per-call limit"
            ]
        );
        // Every expression typed: the total too.
        report.expressions.pop();
        let w = warnings(TargetKind::ValidatingAdmissionPolicy, "p", &report, 80);
        assert_eq!(
            w,
            vec![
                "celcost: spec.validations[0].expression costs 950,000 = 95% of the 1,000,000 per-call limit",
                "celcost: one evaluation of the validations costs 9,500,000 = 95% of the 10,000,000 runtime budget",
            ]
        );
        // Unbounded typed estimates.
        report.expressions[1].typed = Some(TypedEstimate {
            max_cost: u64::MAX,
            max_cost_unbounded: true,
            ..TypedEstimate::default()
        });
        let w = warnings(TargetKind::ValidatingAdmissionPolicy, "p", &report, 80);
        assert_eq!(
            w[0],
            "celcost: spec.validations[1].expression is unbounded (far beyond the 1,000,000 per-call limit)"
        );
        // A mutating policy's total is a mutation's.
        let m = ObjectReport {
            kind: "MutatingAdmissionPolicy".into(),
            expressions: vec![expr(
                "spec.mutations[0].applyConfiguration.expression",
                10,
                Some(typed(10)),
            )],
            policy_budget: Some(PolicyBudget {
                typed_mutation_cost: Some(12_000_000),
                ..PolicyBudget::default()
            }),
            ..ObjectReport::default()
        };
        let w = warnings(TargetKind::MutatingAdmissionPolicy, "m", &m, 80);
        assert_eq!(
            w,
            vec!["celcost: one mutation costs 12,000,000 = 120% of the 10,000,000 runtime budget"]
        );
    }

    #[test]
    fn stopped_estimates_give_no_warning() {
        let mut r = v1_crd(vec![rule("^.a", 0, 9_999_999)]);
        r.stopped = Some(celcost_core::report::EstimateStopped {
            reason: celcost_core::report::StopReason::WorkBudgetExceeded,
            message: "estimate stopped".into(),
            at: None,
            location: None,
        });
        assert!(crd_warnings(&r, 80).is_empty());
    }

    #[test]
    fn cutting() {
        assert_eq!(cut_end("abcdef", 4), "abc…");
        assert_eq!(cut_end("abc", 4), "abc");
        assert_eq!(cut_middle("abcdefghij", 5), "ab…ij");
        assert_eq!(cut_middle("abc", 5), "abc");
    }
}
