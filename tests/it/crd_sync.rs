//! `crds/costreport.yaml` is generated from the Rust types (`celcost crd`, `just generate`) and
//! must not drift. Our own CRD practises what celcost preaches: bounded strings and lists, and
//! cheap CEL rules, checked with our own estimator.

use celcost::Estimator;
use celcost::cel::decls::Version;
use celcost::controller::crd_yaml;
use celcost::report::{PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT};
use serde_json::Value;

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/crds/costreport.yaml");

#[test]
fn committed_crd_matches_the_rust_types() {
    let generated = crd_yaml();
    if std::env::var_os("CELCOST_UPDATE_CRDS").is_some() {
        std::fs::write(PATH, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(PATH)
        .unwrap_or_else(|e| panic!("cannot read {PATH}: {e}; run `just generate`"));
    assert!(
        committed == generated,
        "crds/costreport.yaml is out of date with crates/celcost-operator/src/resource.rs: run `just generate` \
         (or CELCOST_UPDATE_CRDS=1 cargo test --test it crd_sync::)"
    );
}

fn crd_json() -> Value {
    let yaml = crd_yaml();
    serde_yaml_ng::from_str(&yaml).unwrap()
}

/// Every string has maxLength (or an enum or a date-time format), every array maxItems.
fn check_bounds(path: &str, schema: &Value, problems: &mut Vec<String>) {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => {
            let bounded = schema.get("maxLength").is_some()
                || schema.get("enum").is_some()
                || schema.get("format").and_then(Value::as_str) == Some("date-time");
            if !bounded {
                problems.push(format!("{path}: string without maxLength"));
            }
        }
        Some("array") => {
            if schema.get("maxItems").is_none() {
                problems.push(format!("{path}: array without maxItems"));
            }
            if let Some(items) = schema.get("items") {
                check_bounds(&format!("{path}[*]"), items, problems);
            }
        }
        Some("object") => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    // metadata is the API server's own, with its own limits.
                    if path.is_empty() && k == "metadata" {
                        continue;
                    }
                    check_bounds(&format!("{path}.{k}"), v, problems);
                }
            }
            if let Some(ap) = schema.get("additionalProperties").filter(|v| v.is_object()) {
                if schema.get("maxProperties").is_none() {
                    problems.push(format!("{path}: map without maxProperties"));
                }
                check_bounds(&format!("{path}[*]"), ap, problems);
            }
        }
        _ => {}
    }
}

#[test]
fn every_string_and_list_is_bounded() {
    let crd = crd_json();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut problems = Vec::new();
    check_bounds("", schema, &mut problems);
    assert!(
        problems.is_empty(),
        "unbounded fields:\n{}",
        problems.join("\n")
    );
}

#[test]
fn our_rules_are_accepted_and_cheap() {
    let crd = crd_json();
    let report = Estimator::new(Version::new(1, 33))
        .estimate(&crd, "crds/costreport.yaml")
        .expect("a CRD is estimated");
    assert!(report.valid, "errors: {:?}", report.errors);
    let rules: usize = report.schemas.iter().map(|s| s.rules.len()).sum();
    assert!(rules >= 1, "the targetRef immutability rule is estimated");
    // Far below the limits: under 0.1 %.
    assert!(
        report.highest_rule_cost() * 1000 < PER_RULE_COST_LIMIT,
        "rule cost {}",
        report.highest_rule_cost()
    );
    assert!(
        report.highest_total_cost() * 1000 < PER_SCHEMA_COST_LIMIT,
        "total cost {}",
        report.highest_total_cost()
    );
}

#[test]
fn conditions_merge_per_type_under_server_side_apply() {
    let crd = crd_json();
    let conditions = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
        ["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(conditions["x-kubernetes-list-map-keys"][0], "type");
    assert_eq!(crd["spec"]["scope"], "Cluster");
    assert_eq!(crd["spec"]["names"]["shortNames"][0], "ccr");
    assert_eq!(
        crd["spec"]["versions"][0]["subresources"]["status"],
        serde_json::json!({})
    );
}
