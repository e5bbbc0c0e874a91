//! Upgrade day, before it happens (issue 30): what Kubernetes 1.37 refuses that 1.36 accepts,
//! said by `--kubernetes-version 1.36..1.37` in every output, with bounds that fit both minors.
//! The fixtures (`tests/data/upgrade-1.37`, see its README) are gateway-style policy CRDs whose
//! global `matches` on unbounded durations 1.37 costs as cel-go v0.29 does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use celcost::Estimator;
use celcost::cel::decls::Version;
use celcost::cel::minor::Minor;
use celcost::input::parse_documents;
use celcost::report::{ObjectReport, PER_RULE_COST_LIMIT, suggestion_groups};
use celcost::suggest::{Settings, apply_first_suggestions, suggest_across};
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/upgrade-1.37")
}

fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
    parse_documents(&text).remove(0).value.unwrap()
}

/// A CRD whose root rule reads `metadata.name` once per host (100): over the limit while the
/// name is unbounded (1.30..1.36), within it from 1.37 (253).
fn routes_reading_the_name() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "routes.gateway.example.io"},
        "spec": {"group": "gateway.example.io", "scope": "Namespaced",
            "names": {"plural": "routes", "kind": "Route"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.spec.hosts.all(h, h.endsWith(self.metadata.name))"}],
                "properties": {"spec": {"type": "object", "properties": {"hosts": {
                    "type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 64}}}}}}}}]}
    })
}

fn celcost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args(args)
        .output()
        .expect("run celcost")
}

fn minor(m: u32) -> Estimator {
    Estimator::for_minor(Minor::of(Version::new(1, m)).unwrap())
}

/// Suggestions of `primary`'s report over the minors `others`, found as the CLI's range and the
/// operator find them.
fn suggested(primary: &Estimator, others: &[&Estimator], object: &Value) -> ObjectReport {
    let reports: Vec<ObjectReport> = others
        .iter()
        .map(|e| e.estimate(object, "t").unwrap())
        .collect();
    let pairs: Vec<(&Estimator, &ObjectReport)> =
        others.iter().copied().zip(reports.iter()).collect();
    let report = primary.estimate(object, "t").unwrap();
    suggest_across(primary, &pairs, object, report, &Settings::default())
}

#[test]
fn the_fixtures_are_the_issues_numbers() {
    for (file, factor) in [
        ("backendtimeoutpolicies.yaml", "4.0x"),
        ("retrypolicies.yaml", "16.1x"),
    ] {
        let crd = fixture(file);
        let v36 = minor(36).estimate(&crd, file).unwrap();
        assert!(v36.valid, "{file}: {:?}", v36.errors);
        let v37 = minor(37).estimate(&crd, file).unwrap();
        assert!(!v37.valid);
        let rule = &v37.schemas[0].rules[0];
        assert_eq!(rule.max_cost, 2_516_585, "{file}");
        assert!(
            v37.errors.iter().any(|e| e.contains(&format!(
                "estimated rule cost exceeds budget by factor of {factor}"
            ))),
            "{file}: {:?}",
            v37.errors
        );
    }
}

/// Each first suggestion, applied, makes the object accepted on both 1.36 and 1.37; and a
/// finding of the older minor only (a rule 1.36 prices with an unbounded `metadata.name`,
/// 1.37 with 253 characters) gets bounds too, verified on both.
#[test]
fn suggestions_over_a_range_fit_every_minor_of_it() {
    let (v36, v37) = (minor(36), minor(37));
    for file in ["backendtimeoutpolicies.yaml", "retrypolicies.yaml"] {
        let crd = fixture(file);
        for (primary, other) in [(&v37, &v36), (&v36, &v37)] {
            let r = suggested(primary, &[other], &crd);
            let rule = &r.schemas[0].rules[0];
            assert!(
                !rule.suggestions.is_empty(),
                "{file}: {:?}",
                rule.no_suggestion
            );
            let fixed = apply_first_suggestions(&crd, &r);
            for e in [&v36, &v37] {
                let after = e.estimate(&fixed, file).unwrap();
                assert!(
                    after.valid,
                    "{file} on {}: {:?}",
                    e.kubernetes_version(),
                    after.errors
                );
            }
        }
    }
    // Only 1.36 over the limit: `endsWith(self.metadata.name)` on 100 hosts.
    let crd = routes_reading_the_name();
    let before36 = v36.estimate(&crd, "t").unwrap();
    assert!(!before36.valid);
    assert!(v37.estimate(&crd, "t").unwrap().valid);
    let r = suggested(&v37, &[&v36], &crd);
    let rule = &r.schemas[0].rules[0];
    assert!(rule.max_cost * rule.cardinality_used < PER_RULE_COST_LIMIT);
    let groups = suggestion_groups(&rule.suggestions);
    assert!(!groups.is_empty(), "{:?}", rule.no_suggestion);
    let fixed = apply_first_suggestions(&crd, &r);
    assert!(v36.estimate(&fixed, "t").unwrap().valid);
    assert!(v37.estimate(&fixed, "t").unwrap().valid);
    // With one minor, nothing to fix.
    let alone = suggested(&v37, &[], &crd);
    assert!(alone.schemas[0].rules[0].suggestions.is_empty());
}

#[test]
fn every_output_says_accepted_by_1_36_rejected_by_1_37() {
    let dir = fixtures();
    let dir = dir.to_str().unwrap();
    let table = celcost(&["estimate", "--kubernetes-version", "1.36..1.37", dir]);
    assert_eq!(table.status.code(), Some(1));
    let out = String::from_utf8_lossy(&table.stdout);
    assert!(
        out.contains("warning: accepted by 1.36, rejected by 1.37: ^.spec.rules[*].request [0] (40,265,360 = 402.7% (over the limit), factor 4.0x)"),
        "{out}"
    );
    assert!(out.contains("factor 16.1x"), "{out}");
    assert!(
        out.contains("— REJECTED by Kubernetes v1.37 (and 1.36 below)"),
        "{out}"
    );
    let md = celcost(&[
        "estimate",
        "-o",
        "markdown",
        "--kubernetes-version",
        "1.36..1.37",
        dir,
    ]);
    let out = String::from_utf8_lossy(&md.stdout);
    assert!(
        out.contains("- warning: accepted by 1.36, rejected by 1.37: "),
        "{out}"
    );
    let sarif = celcost(&[
        "estimate",
        "-o",
        "sarif",
        "--kubernetes-version",
        "1.36..1.37",
        dir,
    ]);
    let v: Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    let upgrade: Vec<&Value> = results
        .iter()
        .filter(|r| r["ruleId"] == "celcost/newer-version-rejects")
        .collect();
    assert_eq!(upgrade.len(), 3, "{upgrade:?}");
    let text = upgrade[0]["message"]["text"].as_str().unwrap();
    assert!(
        text.contains("accepted by Kubernetes 1.36, rejected by 1.37"),
        "{text}"
    );
    assert!(text.contains("exceeds budget by factor of 4.0x"), "{text}");
    assert!(upgrade[0]["locations"][0]["physicalLocation"]["region"]["startLine"].is_number());
    // JSON keeps the report model: the range's matrix, no text of its own.
    let json = celcost(&[
        "estimate",
        "-o",
        "json",
        "--kubernetes-version",
        "1.36..1.37",
        dir,
    ]);
    // One report per line.
    let first = String::from_utf8_lossy(&json.stdout);
    let v: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let m = &v["byVersion"];
    assert_eq!(m["verdicts"][0]["valid"], true);
    assert_eq!(m["verdicts"][1]["valid"], false);
    assert_eq!(m["rejectedAfterAccepted"], true);
    // One minor: no range, no such line.
    let one = celcost(&["estimate", "--kubernetes-version", "1.37", dir]);
    assert!(!String::from_utf8_lossy(&one.stdout).contains("accepted by 1.36"));
}

#[test]
fn openshift_1_37_is_upstreams_and_says_so() {
    let file = fixtures().join("backendtimeoutpolicies.yaml");
    let file = file.to_str().unwrap();
    for range in ["1.37", "1.36..1.37"] {
        let o = celcost(&[
            "estimate",
            "--distribution",
            "openshift",
            "--kubernetes-version",
            range,
            file,
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("warning: OpenShift has not shipped Kubernetes 1.37"),
            "{err}"
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("note: OpenShift has not shipped Kubernetes 1.37"),
            "{out}"
        );
        // The same numbers as upstream's.
        assert!(out.contains("40,265,360"), "{out}");
    }
    let o = celcost(&[
        "estimate",
        "--distribution",
        "openshift",
        "--kubernetes-version",
        "1.36",
        file,
    ]);
    assert!(!String::from_utf8_lossy(&o.stderr).contains("not shipped"));
}

/// Through the CLI's path (`--kubernetes-version 1.30..1.37`, where minors that cannot differ
/// on an object share one verification): every first suggestion, applied, makes the object
/// accepted on every minor of the range.
#[test]
fn the_clis_range_suggestions_fit_every_minor() {
    use celcost::cli::{Advice, Run};
    use celcost::estimate::range::RangeEstimator;
    let dir = tempfile::tempdir().unwrap();
    for f in ["backendtimeoutpolicies.yaml", "retrypolicies.yaml"] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).unwrap();
    }
    // A rule only 1.30..1.36 put over the limit (an unbounded `metadata.name` before 1.37).
    let routes = routes_reading_the_name();
    std::fs::write(
        dir.path().join("routes.json"),
        serde_json::to_string(&routes).unwrap(),
    )
    .unwrap();
    let minors: Vec<&'static Minor> = (30..=37)
        .map(|m| Minor::of(Version::new(1, m)).unwrap())
        .collect();
    let range = RangeEstimator::new(minors.iter().map(|m| Estimator::for_minor(m)).collect());
    let advice = Advice::suggesting(Some(&Settings::default()));
    let out = Run::new(&range)
        .advising(advice.clone())
        .paths(&[dir.path().to_path_buf()]);
    assert_eq!(out.reports.len(), 3);
    for r in &out.reports {
        let file = r.source.split('#').next().unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        let object = parse_documents(&text).remove(0).value.unwrap();
        let fixed = apply_first_suggestions(&object, r);
        assert_ne!(fixed, object, "{}: no suggestion", r.name);
        for m in &minors {
            let after = Estimator::for_minor(m).estimate(&fixed, "t").unwrap();
            assert!(
                after.valid,
                "{} on {}: {:?}",
                r.name,
                m.label(),
                after.errors
            );
        }
    }
}
