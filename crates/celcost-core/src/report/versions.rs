//! One object over a range of Kubernetes minors: the verdict per minor, the oldest minor that
//! accepts it, and every rule or expression whose cost or verdict changes between minors.
//!
//! The types of the report model (`ObjectReport::by_version`) and what the outputs ask of them;
//! the matrix is made from an object's reports, one per minor, by `estimate::versions`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ObjectReport;

/// An object's verdict on one minor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionVerdict {
    /// `v1.31`.
    pub kubernetes_version: String,
    /// Whether that minor's API server accepts the object on create.
    pub valid: bool,
    /// Set when the estimate stopped (work budget): nothing was judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// How many field errors that minor gives.
    pub error_count: usize,
    /// CRDs: the highest rule cost (× cardinality) and schema total; policies: the highest
    /// expression cost (upstream's estimate).
    pub highest_rule_cost: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_total_cost: Option<u64>,
    /// Where the verdict or the number of errors is not the previous minor's: the upstream
    /// changes behind it (those of the changes below, or what else the estimate consulted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<VersionCause>,
}

/// An upstream change that moved a number from one minor to the next: a rule of the minor's
/// (`crate::estimate::causes`) that the number's estimate consulted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionCause {
    /// The minor it comes with (`v1.37`).
    pub kubernetes_version: String,
    /// What that minor does differently (`cel-go v0.29.2 estimates the global
    /// matches(string, string) like the receiver form`).
    pub change: String,
    /// Where upstream made the change (`cel-expr/cel-go#1350`).
    pub reference: String,
}

impl VersionCause {
    /// `1.37: cel-go v0.29.2 estimates … (cel-expr/cel-go#1350)`.
    pub fn text(&self) -> String {
        format!(
            "{}: {} ({})",
            self.kubernetes_version.trim_start_matches('v'),
            self.change,
            self.reference
        )
    }
}

/// A rule, messageExpression, schema total or policy expression whose number or verdict is not
/// the same on every minor of the range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionChange {
    /// `^.spec.cidrs[*] [0]` (a rule), `^.spec.cidrs[*] [0] messageExpression`,
    /// `spec.validation.openAPIV3Schema total`, or a policy expression's field path.
    pub unit: String,
    /// The expression, when the unit is one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expression: String,
    /// The value on the first minor of the range, then on each minor where it changes.
    pub steps: Vec<VersionStep>,
    /// The upstream changes behind each step, by the minor it comes with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<VersionCause>,
}

impl VersionChange {
    /// The causes of the step to `version`.
    pub fn causes_at<'a>(&'a self, version: &'a str) -> impl Iterator<Item = &'a VersionCause> {
        self.causes
            .iter()
            .filter(move |c| c.kubernetes_version == version)
    }
}

/// A unit's value from one minor on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionStep {
    pub kubernetes_version: String,
    /// The cost compared with the unit's limit (absent when it does not compile there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
    /// The limit it is compared with.
    pub limit: u64,
    /// Over the limit: the API server rejects the CRD (rules, totals), or the runtime would
    /// stop the expression (policies).
    pub exceeds_limit: bool,
    /// The compile error on that minor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_error: Option<String>,
}

/// An object's estimates over a range of minors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionMatrix {
    /// Oldest first.
    pub verdicts: Vec<VersionVerdict>,
    /// The oldest minor of the range whose API server accepts the object (`v1.32`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_accepting: Option<String>,
    /// Whether some minor rejects it while an older one accepts it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejected_after_accepted: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<VersionChange>,
}

/// What a unit key of [`VersionMatrix::changes`] names in a report.
#[derive(Clone, Copy, Debug)]
pub enum Unit<'a> {
    Rule(&'a super::SchemaReport, &'a super::RuleReport),
    MessageExpression(&'a super::SchemaReport, &'a super::RuleReport),
    Total(&'a super::SchemaReport),
    Expression(&'a super::ExpressionReport),
}

/// The rule, messageExpression, total or expression a unit key names in `r` (one of the reports
/// the matrix was made of, or one of the same object).
pub fn find_unit<'a>(r: &'a ObjectReport, key: &str) -> Option<Unit<'a>> {
    let several = r.schemas.len() > 1;
    for s in &r.schemas {
        if key == format!("{} total", s.schema_field_path) {
            return Some(Unit::Total(s));
        }
        let prefix = if several {
            format!("{}: ", s.schema_field_path)
        } else {
            String::new()
        };
        for rule in &s.rules {
            let k = format!("{prefix}{} [{}]", rule.path, rule.index);
            if key == k {
                return Some(Unit::Rule(s, rule));
            }
            if key.strip_suffix(" messageExpression") == Some(k.as_str()) {
                return Some(Unit::MessageExpression(s, rule));
            }
        }
    }
    r.expressions
        .iter()
        .find(|e| e.field_path == key)
        .map(Unit::Expression)
}

/// Where an object is accepted by one minor and rejected by the next, in the order of the
/// range: (the accepting minor, the rejecting one), e.g. `("v1.36", "v1.37")`.
pub fn accepted_then_rejected(m: &VersionMatrix) -> Vec<(&str, &str)> {
    m.verdicts
        .windows(2)
        .filter(|w| w[0].valid && !w[0].stopped && !w[1].valid && !w[1].stopped)
        .map(|w| {
            (
                w[0].kubernetes_version.as_str(),
                w[1].kubernetes_version.as_str(),
            )
        })
        .collect()
}

/// A unit's value on `version` (one of the matrix's minors): the last step at or before it, in
/// the order of `verdicts`.
pub fn value_at<'a>(
    m: &VersionMatrix,
    c: &'a VersionChange,
    version: &str,
) -> Option<&'a VersionStep> {
    let pos = |v: &str| m.verdicts.iter().position(|x| x.kubernetes_version == v);
    let at = pos(version)?;
    c.steps
        .iter()
        .rev()
        .find(|s| pos(&s.kubernetes_version).is_some_and(|p| p <= at))
}

/// Whether a step is a rejection: over its limit, or not compiling.
pub fn fails(s: &VersionStep) -> bool {
    s.exceeds_limit || s.compile_error.is_some()
}

/// The units that fit (or are absent) on `accepting` and fail on `rejecting`: what makes the
/// newer minor reject the object.
pub fn newly_failing<'a>(
    m: &'a VersionMatrix,
    accepting: &str,
    rejecting: &str,
) -> Vec<&'a VersionChange> {
    m.changes
        .iter()
        .filter(|c| {
            value_at(m, c, rejecting).is_some_and(fails)
                && !value_at(m, c, accepting).is_some_and(fails)
        })
        .collect()
}

/// Why minor `rejecting` rejects what the minor before it accepts: the causes at `rejecting` of
/// the units that newly fail there ([`newly_failing`]), else those of its verdict.
pub fn rejection_causes(m: &VersionMatrix, rejecting: &str) -> Vec<VersionCause> {
    let accepting = m
        .verdicts
        .iter()
        .position(|v| v.kubernetes_version == rejecting)
        .and_then(|i| i.checked_sub(1))
        .map(|i| m.verdicts[i].kubernetes_version.as_str());
    let mut out: Vec<VersionCause> = Vec::new();
    if let Some(accepting) = accepting {
        for c in newly_failing(m, accepting, rejecting) {
            for cause in c.causes_at(rejecting) {
                if !out.contains(cause) {
                    out.push(cause.clone());
                }
            }
        }
    }
    if out.is_empty()
        && let Some(v) = m
            .verdicts
            .iter()
            .find(|v| v.kubernetes_version == rejecting)
    {
        out = v.causes.clone();
    }
    out
}
