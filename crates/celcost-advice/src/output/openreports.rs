//! `--output openreports` and the operator's report objects: a target's findings
//! ([`super::findings`], the same as SARIF's, with their rule ids as `policy`) as one
//! cluster-scoped OpenReports `ClusterReport` (`openreports.io/v1alpha1`) or policy working
//! group `ClusterPolicyReport` (`wgpolicyk8s.io/v1alpha2`), the objects Policy Reporter shows.
//!
//! Pure: [`body`] turns a report into its results and summary, [`object`] makes the object of
//! one API from them; the operator writes them (owned by the target's CostReport), the command
//! line prints them as a YAML stream.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::findings::{Finding, Level, OBJECT_NOTE, OLDER_VERSION_REJECTS, findings, judged_costs};
use celcost_core::report::ObjectReport;
use celcost_core::report::format::{percent, truncate};

/// `source` of every report and result.
pub const SOURCE: &str = "celcost";
/// `policy` of the one `pass` result of a target within budget (the findings' policies are
/// their SARIF rule ids, [`super::findings::KINDS`]).
pub const WITHIN_BUDGET_POLICY: &str = "celcost/within-budget";
/// `category` of every result.
pub const CATEGORY: &str = "CEL cost";
/// Results listed per report (the summary counts them all).
pub const MAX_RESULTS: usize = 200;
/// Bytes of a result's message.
pub const MAX_MESSAGE: usize = 2048;

/// One of the two report APIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReportApi {
    /// `openreports.io/v1alpha1` `ClusterReport`.
    OpenReports,
    /// `wgpolicyk8s.io/v1alpha2` `ClusterPolicyReport`.
    PolicyReports,
}

impl ReportApi {
    pub const ALL: [ReportApi; 2] = [ReportApi::OpenReports, ReportApi::PolicyReports];

    pub fn group(self) -> &'static str {
        match self {
            ReportApi::OpenReports => "openreports.io",
            ReportApi::PolicyReports => "wgpolicyk8s.io",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            ReportApi::OpenReports => "v1alpha1",
            ReportApi::PolicyReports => "v1alpha2",
        }
    }

    pub fn api_version(self) -> String {
        format!("{}/{}", self.group(), self.version())
    }

    pub fn kind(self) -> &'static str {
        match self {
            ReportApi::OpenReports => "ClusterReport",
            ReportApi::PolicyReports => "ClusterPolicyReport",
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            ReportApi::OpenReports => "clusterreports",
            ReportApi::PolicyReports => "clusterpolicyreports",
        }
    }
}

/// The object a report is about: its `scope` (an ObjectReference).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// Known in a cluster, not in files.
    pub uid: Option<String>,
}

impl Scope {
    /// The scope of an estimated object.
    pub fn of(report: &ObjectReport) -> Scope {
        Scope {
            api_version: report.api_version.clone(),
            kind: report.kind.clone(),
            name: report.name.clone(),
            uid: None,
        }
    }

    fn to_json(&self) -> Value {
        let mut v = json!({
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
        });
        if let Some(uid) = &self.uid {
            v["uid"] = json!(uid);
        }
        v
    }
}

/// A result's verdict (`result`: the CRDs' enum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    Warn,
    Error,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Warn => "warn",
            Verdict::Error => "error",
        }
    }
}

/// One result: a finding, or the target's pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportResult {
    pub policy: String,
    pub rule: Option<String>,
    pub result: Verdict,
    /// `high`, `medium` (`None` for a pass).
    pub severity: Option<&'static str>,
    pub message: String,
    pub properties: BTreeMap<String, String>,
}

/// `summary`: the results by verdict, all of them (also those past [`MAX_RESULTS`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub pass: u64,
    pub fail: u64,
    pub warn: u64,
    pub error: u64,
    pub skip: u64,
}

/// A report's content, whichever API it goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    pub results: Vec<ReportResult>,
    pub summary: Summary,
}

fn severity(level: Level) -> &'static str {
    match level {
        Level::Error => "high",
        Level::Warning => "medium",
        Level::Note => "info",
    }
}

fn verdict(f: &Finding) -> Verdict {
    if f.kind.id == super::findings::ESTIMATE_STOPPED.id {
        // Not judged: the tool's error, not the object's failure.
        Verdict::Error
    } else if f.level == Level::Error {
        Verdict::Fail
    } else {
        Verdict::Warn
    }
}

fn props_of(
    cost: u64,
    limit: u64,
    cardinality: Option<u64>,
    version: &str,
) -> BTreeMap<String, String> {
    let mut p = BTreeMap::from([
        ("cost".to_string(), cost.to_string()),
        ("limit".to_string(), limit.to_string()),
        ("percent".to_string(), percent(cost, limit)),
        ("kubernetesVersion".to_string(), version.to_string()),
    ]);
    if let Some(c) = cardinality {
        p.insert("cardinality".to_string(), c.to_string());
    }
    p
}

/// Whether the report's numbers are its matrix's newest minor's (the command line's ranges);
/// the operator's are the cluster minor's, with the next minor after them, where "an older
/// minor rejects" would repeat the cluster minor's own findings.
fn is_newest(report: &ObjectReport) -> bool {
    report.by_version.as_ref().is_none_or(|m| {
        m.verdicts
            .last()
            .is_none_or(|v| v.kubernetes_version == report.kubernetes_version)
    })
}

/// The results and summary of one target: one result per finding of the run's outputs
/// (over or near a limit, refused by the API server or by the next minor, an estimate that
/// stopped; notes are left out), or one `pass` when there is none.
pub fn body(report: &ObjectReport, near_percent: f64) -> Body {
    let newest = is_newest(report);
    let mut results: Vec<ReportResult> = findings(std::slice::from_ref(report), near_percent)
        .into_iter()
        .filter(|f| f.kind.id != OBJECT_NOTE.id)
        .filter(|f| newest || f.kind.id != OLDER_VERSION_REJECTS.id)
        .map(|f| {
            let (rule, properties) = match &f.measure {
                Some(m) => (
                    Some(m.unit.clone()),
                    props_of(m.cost, m.limit, m.cardinality, &m.kubernetes_version),
                ),
                None => (
                    None,
                    BTreeMap::from([(
                        "kubernetesVersion".to_string(),
                        report.kubernetes_version.clone(),
                    )]),
                ),
            };
            ReportResult {
                policy: f.kind.id.to_string(),
                rule,
                result: verdict(&f),
                severity: Some(severity(f.level)),
                message: truncate(&f.message, MAX_MESSAGE).0,
                properties,
            }
        })
        .collect();
    if results.is_empty() {
        // The costliest share of a limit, for the pass.
        let highest = judged_costs(report).into_iter().max_by(|a, b| {
            (a.0 as f64 / a.1.max(1) as f64).total_cmp(&(b.0 as f64 / b.1.max(1) as f64))
        });
        let properties = match highest {
            Some((cost, limit)) => props_of(cost, limit, None, &report.kubernetes_version),
            None => BTreeMap::from([(
                "kubernetesVersion".to_string(),
                report.kubernetes_version.clone(),
            )]),
        };
        results.push(ReportResult {
            policy: WITHIN_BUDGET_POLICY.to_string(),
            rule: None,
            result: Verdict::Pass,
            severity: None,
            message: format!(
                "{} {}: every rule, total and expression is below {}% of its limit on Kubernetes {}.",
                report.kind,
                report.name,
                super::findings::trim_float(near_percent),
                report.kubernetes_version
            ),
            properties,
        });
    }
    with_summary(results)
}

/// The body of a target celcost could not estimate: one `error` result saying why.
pub fn error_body(message: &str, kubernetes_version: &str) -> Body {
    with_summary(vec![ReportResult {
        policy: super::findings::ESTIMATE_STOPPED.id.to_string(),
        rule: None,
        result: Verdict::Error,
        severity: Some(severity(Level::Error)),
        message: truncate(message, MAX_MESSAGE).0,
        properties: BTreeMap::from([(
            "kubernetesVersion".to_string(),
            kubernetes_version.to_string(),
        )]),
    }])
}

fn with_summary(mut results: Vec<ReportResult>) -> Body {
    let mut summary = Summary::default();
    for r in &results {
        match r.result {
            Verdict::Pass => summary.pass += 1,
            Verdict::Fail => summary.fail += 1,
            Verdict::Warn => summary.warn += 1,
            Verdict::Error => summary.error += 1,
        }
    }
    results.truncate(MAX_RESULTS);
    Body { results, summary }
}

fn result_json(r: &ReportResult) -> Value {
    let mut v = Map::new();
    v.insert("source".into(), json!(SOURCE));
    v.insert("category".into(), json!(CATEGORY));
    v.insert("policy".into(), json!(r.policy));
    if let Some(rule) = &r.rule {
        v.insert("rule".into(), json!(rule));
    }
    v.insert("result".into(), json!(r.result.as_str()));
    if let Some(s) = r.severity {
        v.insert("severity".into(), json!(s));
    }
    v.insert("message".into(), json!(r.message));
    v.insert("properties".into(), json!(r.properties));
    Value::Object(v)
}

/// The name of an object's report, as the operator names its CostReport: `crd.<name>`,
/// `vap.<name>`, `map.<name>` (the kind, lowercased, for another kind).
pub fn report_name(kind: &str, name: &str) -> String {
    let prefix = match kind {
        "CustomResourceDefinition" => "crd".to_string(),
        "ValidatingAdmissionPolicy" => "vap".to_string(),
        "MutatingAdmissionPolicy" => "map".to_string(),
        other => other.to_ascii_lowercase(),
    };
    format!("{prefix}.{name}")
}

/// The whole object of `api` named `name` about `scope`, with `metadata` (labels, owners) as
/// given (its `name` is set).
pub fn object(api: ReportApi, name: &str, scope: &Scope, body: &Body, metadata: Value) -> Value {
    let mut metadata = match metadata {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    metadata.insert("name".into(), json!(name));
    let s = body.summary;
    let mut v = json!({
        "apiVersion": api.api_version(),
        "kind": api.kind(),
        "metadata": metadata,
        "scope": scope.to_json(),
        "results": body.results.iter().map(result_json).collect::<Vec<_>>(),
        "summary": {
            "pass": s.pass,
            "fail": s.fail,
            "warn": s.warn,
            "error": s.error,
            "skip": s.skip,
        },
    });
    if api == ReportApi::OpenReports {
        // The policy working group's v1alpha2 has `source` on each result only.
        v["source"] = json!(SOURCE);
    }
    v
}

/// `--output openreports`: one `ClusterReport` per object, in the order of the run.
pub fn render_openreports(reports: &[ObjectReport], near_percent: f64) -> Vec<Value> {
    reports
        .iter()
        .map(|r| {
            object(
                ReportApi::OpenReports,
                &report_name(&r.kind, &r.name),
                &Scope::of(r),
                &body(r, near_percent),
                json!({"labels": {"app.kubernetes.io/managed-by": SOURCE}}),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_cost_reports() {
        assert_eq!(
            report_name("CustomResourceDefinition", "widgets.example.com"),
            "crd.widgets.example.com"
        );
        assert_eq!(report_name("ValidatingAdmissionPolicy", "p"), "vap.p");
        assert_eq!(report_name("MutatingAdmissionPolicy", "p"), "map.p");
    }

    #[test]
    fn an_error_body_counts_one_error_and_the_summary_counts_past_the_cap() {
        let b = error_body(&"x".repeat(MAX_MESSAGE * 2), "v1.36");
        assert_eq!(
            b.summary,
            Summary {
                error: 1,
                ..Summary::default()
            }
        );
        assert!(b.results[0].message.len() <= MAX_MESSAGE);
        let many: Vec<ReportResult> = (0..MAX_RESULTS + 5).map(|_| b.results[0].clone()).collect();
        let capped = with_summary(many);
        assert_eq!(capped.results.len(), MAX_RESULTS);
        assert_eq!(capped.summary.error, (MAX_RESULTS + 5) as u64);
    }

    #[test]
    fn only_openreports_has_a_top_level_source() {
        let b = error_body("stopped", "v1.36");
        let scope = Scope {
            api_version: "v1".into(),
            kind: "K".into(),
            name: "n".into(),
            uid: None,
        };
        let o = object(ReportApi::OpenReports, "n", &scope, &b, Value::Null);
        let p = object(ReportApi::PolicyReports, "n", &scope, &b, Value::Null);
        assert_eq!(o["source"], SOURCE);
        assert!(p.get("source").is_none());
        assert_eq!(p["apiVersion"], "wgpolicyk8s.io/v1alpha2");
        assert_eq!(p["results"][0]["source"], SOURCE);
        assert!(o["scope"].get("uid").is_none());
    }
}
