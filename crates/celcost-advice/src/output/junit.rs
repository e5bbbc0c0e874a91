//! `--output junit`: a run as a JUnit XML report, for the CI systems that show test reports
//! (GitLab's merge-request widget, Jenkins' JUnit plugin, Azure Pipelines, CircleCI, ...).
//!
//! - One `<testsuite>` per file (`name` = the file as given; objects read from a cluster,
//!   whose sources are `cluster:crd/NAME`, are grouped by kind: `cluster:crd`).
//! - One `<testcase>` per object: `name` = `<kind> <name>`, `classname` = the file (and a
//!   `file` attribute, which GitLab links).
//! - `<failure>` where an API server of the run's minors refuses the object (type `rejected`):
//!   its text the object's error findings ([`super::findings`], what sarif and github say); or
//!   where a rule, total or policy expression reaches `--fail-at` (type `fail-at`): its text
//!   the findings at or above that share.
//! - `<error>` where the estimate stopped (type `estimate-stopped`): nothing was judged. Input that
//!   could not be read is one `<testcase>` with an `<error>` each, in a suite of its own
//!   (`celcost: unreadable input`).
//! - Near-budget findings (warnings) and notes are the testcase's `<system-out>`, one per line.
//!
//! The XML is written by `quick-junit` (escaping, the attribute set CI systems read); no
//! timestamps or times, so that the same input gives the same bytes.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::findings::{Finding, Level, findings, reaches};
use celcost_core::report::ObjectReport;

/// The suite of objects that could not be read.
pub const UNREADABLE_SUITE: &str = "celcost: unreadable input";

/// The suite (file) of a report: its source up to the document number (`path#2` → `path`), or,
/// for a source without one (`cluster:crd/NAME`), up to its last `/`.
pub fn suite_of(source: &str) -> &str {
    match source.rsplit_once('#') {
        Some((f, _)) if !f.is_empty() => f,
        _ => source.rsplit_once('/').map_or(source, |(kind, _)| kind),
    }
}

/// The minors that refuse the object on create (the report's own when it has no range).
fn refusing_minors(r: &ObjectReport) -> Vec<String> {
    match &r.by_version {
        Some(m) => m
            .verdicts
            .iter()
            .filter(|v| !v.valid && !v.stopped)
            .map(|v| v.kubernetes_version.clone())
            .collect(),
        None if !r.valid && r.stopped.is_none() => vec![r.kubernetes_version.clone()],
        None => Vec::new(),
    }
}

fn stopped(r: &ObjectReport) -> Option<String> {
    if let Some(st) = &r.stopped {
        return Some(st.message.clone());
    }
    let m = r.by_version.as_ref()?;
    let minors: Vec<&str> = m
        .verdicts
        .iter()
        .filter(|v| v.stopped)
        .map(|v| v.kubernetes_version.as_str())
        .collect();
    (!minors.is_empty())
        .then(|| format!("the estimate stopped on Kubernetes {}", minors.join(", ")))
}

/// One line per finding: `title: message`.
fn lines<'a>(fs: impl Iterator<Item = &'a Finding>) -> String {
    fs.map(|f| format!("{}: {}\n", f.title, f.message))
        .collect()
}

fn non_success(kind: NonSuccessKind, ty: &str, message: String, text: String) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(kind);
    s.set_type(ty).set_message(message);
    if !text.is_empty() {
        s.set_description(text);
    }
    s
}

fn test_case(r: &ObjectReport, near_percent: f64, fail_at: Option<f64>) -> TestCase {
    let found = findings(std::slice::from_ref(r), near_percent);
    let errors = || lines(found.iter().filter(|f| f.level == Level::Error));
    let refusing = refusing_minors(r);
    let status = if let Some(why) = stopped(r) {
        non_success(NonSuccessKind::Error, "estimate-stopped", why, errors())
    } else if !refusing.is_empty() {
        let message = format!("rejected by Kubernetes {}", refusing.join(", "));
        non_success(NonSuccessKind::Failure, "rejected", message, errors())
    } else if let Some(p) = fail_at.filter(|p| reaches(std::slice::from_ref(r), *p)) {
        let message =
            format!("a rule, total or policy expression reaches {p}% of its limit (--fail-at)");
        // What reaches it: the findings at `--fail-at` as the threshold.
        let at = findings(std::slice::from_ref(r), p);
        let text = lines(at.iter().filter(|f| f.level != Level::Note));
        non_success(NonSuccessKind::Failure, "fail-at", message, text)
    } else {
        TestCaseStatus::success()
    };
    let file = suite_of(&r.source);
    let mut case = TestCase::new(format!("{} {}", r.kind, r.name), status);
    case.set_classname(file);
    case.extra.insert("file".into(), file.into());
    let out = lines(found.iter().filter(|f| f.level != Level::Error));
    if !out.is_empty() {
        case.set_system_out(out);
    }
    case
}

/// The run as a JUnit XML report: a suite per file in the order the reports first name it, a case per
/// object; `input_errors` (each naming its source) as error cases of a suite of their own.
pub fn render_junit(
    reports: &[ObjectReport],
    input_errors: &[String],
    near_percent: f64,
    fail_at: Option<f64>,
) -> String {
    let mut suites: indexmap::IndexMap<&str, TestSuite> = indexmap::IndexMap::new();
    for r in reports {
        let name = suite_of(&r.source);
        suites
            .entry(name)
            .or_insert_with(|| {
                let mut s = TestSuite::new(name);
                s.extra.insert("file".into(), name.into());
                s
            })
            .add_test_case(test_case(r, near_percent, fail_at));
    }
    let mut suites: Vec<TestSuite> = suites.into_values().collect();
    if !input_errors.is_empty() {
        let mut s = TestSuite::new(UNREADABLE_SUITE);
        for e in input_errors {
            let status = non_success(
                NonSuccessKind::Error,
                "unreadable",
                e.clone(),
                String::new(),
            );
            s.add_test_case(TestCase::new(e.as_str(), status));
        }
        suites.push(s);
    }
    let mut report = Report::new("celcost");
    report.add_test_suites(suites);
    let mut xml = report.to_string().unwrap_or_default();
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_are_files_and_cluster_kinds() {
        assert_eq!(suite_of("config/a.yaml#2"), "config/a.yaml");
        assert_eq!(suite_of("config/a.yaml#2[3]"), "config/a.yaml");
        assert_eq!(suite_of("<stdin>#1"), "<stdin>");
        assert_eq!(suite_of("cluster:crd/widgets.example.com"), "cluster:crd");
        assert_eq!(suite_of("x"), "x");
    }
}
