//! `--output openreports` and the operator's report objects (issue 47): the objects validate
//! against the upstream CRDs' schemas (`../shared/crds`, both APIs), and their results and
//! summary count what the CostReport's status counts.

use std::path::{Path, PathBuf};
use std::process::Command;

use celcost::Estimator;
use celcost::cel::decls::Version;
use celcost::cel::minor::Minor;
use celcost::controller::status::estimate_status;
use celcost::controller::{CostEstimator, StatusSettings, TargetKind, WithNextMinor};
use celcost::input::parse_documents;
use celcost::output::openreports::{ReportApi, Scope, body, object, report_name};
use celcost::report::ObjectReport;
use celcost::schema::catalog::SchemaCatalog;
use serde_json::{Value, json};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn crd_file(api: ReportApi) -> PathBuf {
    let (dir, file) = match api {
        ReportApi::OpenReports => ("openreports", "openreports.io_clusterreports.yaml"),
        ReportApi::PolicyReports => ("wgpolicyk8s", "wgpolicyk8s.io_clusterpolicyreports.yaml"),
    };
    Path::new(ROOT).join("../shared/crds").join(dir).join(file)
}

/// The openAPIV3Schema of `api`'s version, from the upstream CRD (`None` without ../shared).
fn schema_of(api: ReportApi) -> Option<Value> {
    let text = std::fs::read_to_string(crd_file(api)).ok()?;
    let crd: Value = serde_yaml_ng::from_str(&text).expect("CRD YAML");
    assert_eq!(crd["spec"]["group"], api.group());
    assert_eq!(crd["spec"]["names"]["kind"], api.kind());
    assert_eq!(crd["spec"]["names"]["plural"], api.plural());
    assert_eq!(crd["spec"]["scope"], "Cluster");
    let v = crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == api.version())
        .unwrap_or_else(|| panic!("{} serves no {}", api.kind(), api.version()));
    assert_eq!(v["served"], true);
    Some(v["schema"]["openAPIV3Schema"].clone())
}

/// What the API server's structural schema checks refuse or prune, for the keywords these
/// CRDs use: types, required fields, enums, unknown fields (pruned: a field we write that
/// the schema does not have is lost), maps' values.
fn validate(schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let ty = schema["type"].as_str().unwrap_or("");
    let ok = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "boolean" => v.is_boolean(),
        "" => true,
        other => panic!("type {other} not handled at {at}"),
    };
    if !ok {
        errors.push(format!("{at}: not of type {ty}: {v}"));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(v)
    {
        errors.push(format!("{at}: {v} not one of {allowed:?}"));
    }
    match v {
        Value::Object(o) => {
            for r in schema["required"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap();
                if !o.contains_key(r) {
                    errors.push(format!("{at}: required {r} missing"));
                }
            }
            let props = schema["properties"].as_object();
            let extra = &schema["additionalProperties"];
            for (k, child) in o {
                let here = format!("{at}.{k}");
                if at.is_empty() && k == "metadata" {
                    // ObjectMeta: the API server's own schema.
                    continue;
                }
                match props.and_then(|p| p.get(k)) {
                    Some(s) => validate(s, child, &here, errors),
                    None if extra.is_object() => validate(extra, child, &here, errors),
                    None if schema["x-kubernetes-preserve-unknown-fields"] == true => {}
                    None => errors.push(format!("{here}: not in the schema (pruned)")),
                }
            }
        }
        Value::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                validate(&schema["items"], item, &format!("{at}[{i}]"), errors);
            }
        }
        _ => {}
    }
}

fn assert_valid(api: ReportApi, schema: &Value, object: &Value) {
    let mut errors = Vec::new();
    validate(schema, object, "", &mut errors);
    assert!(
        errors.is_empty(),
        "{} {} against the upstream schema: {errors:#?}",
        api.kind(),
        object["metadata"]["name"]
    );
    assert_eq!(object["apiVersion"], api.api_version().as_str());
    assert_eq!(object["kind"], api.kind());
}

fn estimate_openreports(args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_celcost"))
        .current_dir(ROOT)
        .args(["estimate", "--output", "openreports"])
        .args(args)
        .output()
        .expect("run celcost");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(
        text.starts_with("---\n"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_documents(&text)
        .into_iter()
        .map(|d| d.value.expect("a YAML document"))
        .collect()
}

fn results_of<'a>(o: &'a Value, verdict: &str) -> Vec<&'a Value> {
    o["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["result"] == verdict)
        .collect()
}

#[test]
fn the_cli_writes_one_cluster_report_per_object_valid_against_the_crd() {
    let objects = estimate_openreports(&["examples/crds", "examples/policies"]);
    assert_eq!(objects.len(), 4, "two CRDs and two policies");
    let names: Vec<&str> = objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"crd.widgets.example.com"), "{names:?}");
    let Some(schema) = schema_of(ReportApi::OpenReports) else {
        eprintln!("SKIPPED: no ../shared/crds");
        return;
    };
    for o in &objects {
        assert_valid(ReportApi::OpenReports, &schema, o);
        assert_eq!(o["source"], "celcost");
        // The summary counts the results.
        for verdict in ["pass", "fail", "warn", "error", "skip"] {
            assert_eq!(
                o["summary"][verdict].as_u64(),
                Some(results_of(o, verdict).len() as u64),
                "{verdict} of {}",
                o["metadata"]["name"]
            );
        }
    }
    // widgets.example.com's rule is near budget: a warn with its numbers and its bound.
    let w = objects
        .iter()
        .find(|o| o["metadata"]["name"] == "crd.widgets.example.com")
        .unwrap();
    assert_eq!(w["scope"]["kind"], "CustomResourceDefinition");
    assert_eq!(w["scope"]["name"], "widgets.example.com");
    let warns = results_of(w, "warn");
    assert_eq!(warns.len(), 1, "{w:#}");
    let r = warns[0];
    assert_eq!(r["policy"], "celcost/rule-near-budget");
    assert_eq!(r["severity"], "medium");
    assert_eq!(r["rule"], "^.spec.hosts [0]");
    assert_eq!(r["properties"]["limit"], "10000000");
    assert_eq!(r["properties"]["cardinality"], "1");
    let cost: u64 = r["properties"]["cost"].as_str().unwrap().parse().unwrap();
    assert!((8_000_000..10_000_000).contains(&cost), "{cost}");
    assert!(r["properties"]["percent"].as_str().unwrap().ends_with('%'));
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("Why:"), "{message}");
    assert!(message.contains("Suggestion: add maxLength"), "{message}");
    // gadgets.example.com is within budget: one pass.
    let g = objects
        .iter()
        .find(|o| o["metadata"]["name"] == "crd.gadgets.example.com")
        .unwrap();
    assert_eq!(results_of(g, "pass").len(), 1);
    assert_eq!(g["results"].as_array().unwrap().len(), 1);
}

fn upstream(m: u32) -> Estimator {
    Estimator::for_minor(Minor::of(Version::new(1, m)).unwrap())
}

fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(ROOT).join("tests/data/upgrade-1.37").join(name))
        .unwrap();
    parse_documents(&text).remove(0).value.unwrap()
}

fn example(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap();
    parse_documents(&text)
        .into_iter()
        .filter_map(|d| d.value.ok())
        .collect()
}

/// The operator's report of `object` (1.36 with 1.37 beside it) and the CostReport status of it.
fn operator_report(object: &Value) -> ObjectReport {
    let pair = WithNextMinor {
        current: upstream(36),
        next: Some(upstream(37)),
        suggest: Some(celcost::suggest::Settings::new(80.0)),
    };
    pair.estimate(object, &SchemaCatalog::new()).unwrap()
}

fn kind_of(r: &ObjectReport) -> TargetKind {
    match r.kind.as_str() {
        "CustomResourceDefinition" => TargetKind::CustomResourceDefinition,
        "ValidatingAdmissionPolicy" => TargetKind::ValidatingAdmissionPolicy,
        _ => TargetKind::MutatingAdmissionPolicy,
    }
}

fn count(o: &Value, policy: &str) -> i64 {
    o["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["policy"] == policy)
        .count() as i64
}

#[test]
fn the_counts_are_the_cost_reports_and_both_apis_validate() {
    let mut objects = Vec::new();
    for f in [
        "examples/crds/widgets.example.com.yaml",
        "examples/crds/gadgets.example.com.yaml",
        "examples/policies/widget-hosts.yaml",
        "examples/policies/require-team-label.yaml",
    ] {
        objects.extend(example(f));
    }
    objects.push(fixture("backendtimeoutpolicies.yaml"));
    objects.push(fixture("retrypolicies.yaml"));
    let schemas: Vec<(ReportApi, Option<Value>)> =
        ReportApi::ALL.iter().map(|&a| (a, schema_of(a))).collect();
    let mut seen_rejects = 0;
    for obj in &objects {
        let report = operator_report(obj);
        let kind = kind_of(&report);
        let status = estimate_status(kind, &report, StatusSettings::default());
        let summary = status.summary.expect("a summary");
        let b = body(
            &report,
            f64::from(StatusSettings::default().near_budget_percent),
        );
        let scope = Scope {
            uid: Some("0000-1111".into()),
            ..Scope::of(&report)
        };
        for (api, schema) in &schemas {
            let o = object(
                *api,
                &report_name(&report.kind, &report.name),
                &scope,
                &b,
                json!({"labels": {"app.kubernetes.io/managed-by": "celcost"}}),
            );
            if let Some(s) = schema {
                assert_valid(*api, s, &o);
            }
            assert_eq!(o["scope"]["uid"], "0000-1111");
            let (over, near) = match kind {
                TargetKind::CustomResourceDefinition => {
                    ("celcost/rule-over-budget", "celcost/rule-near-budget")
                }
                _ => (
                    "celcost/expression-over-budget",
                    "celcost/expression-near-budget",
                ),
            };
            assert_eq!(count(&o, over), summary.rules_over_budget, "{o:#}");
            assert_eq!(count(&o, near), summary.rules_near_budget, "{o:#}");
            let fails = o["summary"]["fail"].as_i64().unwrap();
            let warns = o["summary"]["warn"].as_i64().unwrap();
            let passes = o["summary"]["pass"].as_i64().unwrap();
            // A pass exactly when nothing is over, near or refused.
            assert_eq!(passes == 1, fails == 0 && warns == 0, "{o:#}");
            assert!(fails >= summary.rules_over_budget);
            assert!(warns >= summary.rules_near_budget);
            if summary.rules_over_budget == 0 && summary.rules_near_budget == 0 && passes == 0 {
                // Something else: the next minor refuses it, or a total.
                assert!(fails + warns > 0);
            }
        }
        // Refused by the next minor: a fail with the next minor's numbers.
        let next = status.next_version.as_ref();
        if next.is_some_and(|n| !n.valid) && report.valid {
            seen_rejects += 1;
            let r = b
                .results
                .iter()
                .find(|r| r.policy == "celcost/newer-version-rejects")
                .unwrap_or_else(|| panic!("no next-minor result for {}: {b:#?}", report.name));
            assert_eq!(r.properties["kubernetesVersion"], "v1.37");
            assert!(r.properties["cost"].parse::<u64>().unwrap() > 10_000_000);
            assert!(r.message.contains("rejected by 1.37"), "{}", r.message);
        }
        // The operator's report is the cluster minor's: no "older minor rejects" for it.
        assert!(
            !b.results
                .iter()
                .any(|r| r.policy == "celcost/older-version-rejects"),
            "{b:#?}"
        );
    }
    assert_eq!(seen_rejects, 2, "both upgrade-day fixtures");
}

#[test]
fn the_schema_check_refuses_what_the_api_server_would() {
    let Some(schema) = schema_of(ReportApi::OpenReports) else {
        eprintln!("SKIPPED: no ../shared/crds");
        return;
    };
    let bad = json!({
        "apiVersion": "openreports.io/v1alpha1", "kind": "ClusterReport",
        "metadata": {"name": "x"},
        "results": [{"result": "maybe", "severity": "medium", "extra": 1, "properties": {"cost": 1}}],
        "summary": {"pass": "one"},
    });
    let mut errors = Vec::new();
    validate(&schema, &bad, "", &mut errors);
    for want in [
        ".results[0]: required policy missing",
        ".results[0].result: \"maybe\" not one of",
        ".results[0].extra: not in the schema (pruned)",
        ".results[0].properties.cost: not of type string",
        ".summary.pass: not of type integer",
    ] {
        assert!(
            errors.iter().any(|e| e.starts_with(want)),
            "{want} in {errors:#?}"
        );
    }
}
