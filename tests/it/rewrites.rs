//! The rewrite catalog over the public corpus (`../shared/corpus/crds`): for each pattern, the
//! rules it fires on and the cost it saves; every offered rewrite is cheaper, was checked on
//! generated values, and — applied to a copy of its CRD and estimated again — costs what it
//! says. Skips without the corpus unless `CELCOST_REQUIRE_CORPUS` is set.

use crate::common;

use common::{corpus_dir, files_under};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use celcost::Estimator;
use celcost::input::{objects_of, parse_documents};
use celcost::report::ObjectReport;
use celcost::rewrite::catalog::CATALOG;
use celcost::rewrite::site::NodePath;
use serde_json::Value;

#[derive(Default)]
struct Tally {
    rules: usize,
    saved: u128,
    max_saved: u64,
    examples: Vec<String>,
}

/// The CRD with one rule's text replaced (every version's, for a shared schema).
fn with_rule(crd: &Value, node_field_path: &str, index: usize, text: &str) -> Value {
    let path = NodePath::parse(node_field_path).expect("node path");
    let mut copy = crd.clone();
    let n = copy
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    for i in 0..n {
        if path.version.is_some_and(|v| v != i) {
            continue;
        }
        let Some(root) = copy.pointer_mut(&format!("/spec/versions/{i}/schema/openAPIV3Schema"))
        else {
            continue;
        };
        let node = path.node_mut(root).expect("node");
        node["x-kubernetes-validations"][index]["rule"] = Value::from(text);
    }
    copy
}

#[test]
fn rewrite_catalog_over_the_corpus() {
    let Some(corpus) = corpus_dir() else {
        assert!(
            std::env::var_os("CELCOST_REQUIRE_CORPUS").is_none(),
            "CELCOST_REQUIRE_CORPUS is set but there is no corpus"
        );
        println!("SKIPPED: no corpus at ../shared/corpus");
        return;
    };
    let mut files = Vec::new();
    files_under(&corpus.join("crds"), &mut files);
    let e = Estimator::default();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let (mut estimate_time, mut rewrite_time) = (Duration::ZERO, Duration::ZERO);
    let (mut rules, mut offered) = (0usize, 0usize);
    for f in &files {
        let text = std::fs::read_to_string(f).expect("reads");
        for doc in parse_documents(&text) {
            let Ok(v) = doc.value else { continue };
            if !v.is_object() {
                continue;
            }
            for o in objects_of(&f.display().to_string(), v) {
                let t = Instant::now();
                let mut report: ObjectReport = e.estimate_crd(&o.value, &o.source);
                estimate_time += t.elapsed();
                let t = Instant::now();
                celcost::rewrite::offer_rewrites(&e, &o.value, &mut report);
                rewrite_time += t.elapsed();
                for s in &report.schemas {
                    for r in &s.rules {
                        rules += 1;
                        for rw in &r.rewrites {
                            offered += 1;
                            assert!(
                                rw.cost_after < rw.cost_before
                                    && rw.max_cost_after < rw.max_cost_before,
                                "{}: not cheaper: {rw:?}",
                                o.source
                            );
                            assert_eq!(rw.cost_before, r.cost);
                            assert_eq!(rw.checked_cases, 200, "{}: {rw:?}", o.source);
                            if rw.schema_change.is_none() {
                                // Applied to the CRD, the rewrite costs what it says.
                                let changed = with_rule(
                                    &o.value,
                                    &r.node_field_path,
                                    r.index as usize,
                                    &rw.rule,
                                );
                                let again = e.estimate_crd(&changed, &o.source);
                                let same = again
                                    .schemas
                                    .iter()
                                    .flat_map(|s| &s.rules)
                                    .find(|x| x.rule_field_path == r.rule_field_path)
                                    .expect("the rule");
                                assert_eq!(same.rule, rw.rule);
                                assert_eq!(same.compile_error, None);
                                assert_eq!(
                                    (same.max_cost, same.cost),
                                    (rw.max_cost_after, rw.cost_after),
                                    "{}: {}",
                                    o.source,
                                    rw.rule
                                );
                            }
                            let t = tallies.entry(rw.pattern.clone()).or_default();
                            t.rules += 1;
                            t.saved += (rw.cost_before - rw.cost_after) as u128;
                            t.max_saved = t.max_saved.max(rw.cost_before - rw.cost_after);
                            if t.examples.len() < 3 {
                                t.examples.push(format!(
                                    "{} {} [{}]: {}",
                                    o.source.rsplit('/').next().unwrap_or_default(),
                                    r.path,
                                    r.index,
                                    celcost::rewrite::rewrite_line(rw)
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    println!(
        "rewrite catalog over {} files, {rules} rules: {offered} rewrites offered",
        files.len()
    );
    let row = |name: &str, t: Option<&Tally>| {
        println!(
            "| {name} | {} | {} | {} |",
            t.map_or(0, |t| t.rules),
            celcost::report::format::num(t.map_or(0, |t| t.saved.min(u64::MAX as u128) as u64)),
            celcost::report::format::num(t.map_or(0, |t| t.max_saved))
        )
    };
    println!("| pattern | corpus rules fired | total cost saved | max saved |");
    println!("|---|---:|---:|---:|");
    for p in CATALOG {
        row(p.name, tallies.get(p.name));
    }
    for (name, t) in &tallies {
        if !CATALOG.iter().any(|p| p.name == name.as_str()) {
            row(name, Some(t));
        }
    }
    for (name, t) in &tallies {
        println!("\n{name}:");
        for ex in &t.examples {
            println!("  {ex}");
        }
    }
    println!(
        "\ntime: estimate {:.2}s, rewrites {:.2}s (+{:.0}%)",
        estimate_time.as_secs_f64(),
        rewrite_time.as_secs_f64(),
        100.0 * rewrite_time.as_secs_f64() / estimate_time.as_secs_f64().max(1e-9)
    );
    assert!(offered > 0, "the catalog fires on the corpus");
}

/// The CRD `widgets.example.com` whose `spec` has `properties`.
fn widgets_crd(properties: Value) -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": properties}}
                }}
            }]
        }
    })
}

/// A CRD whose `spec.f` (a list of strings without maxItems) carries `rule`.
fn widget_crd(rule: &str) -> Value {
    widgets_crd(serde_json::json!({"f": {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": rule}]
    }}))
}

#[test]
fn every_output_carries_the_rewrite() {
    // 15,728,639 > 10M: over budget; the rewrite (6,291,452) is not.
    let rule = "self.filter(x, x == 'b').size() > 0";
    let dir = std::env::temp_dir().join(format!("celcost-rewrites-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("widgets.json");
    std::fs::write(&file, widget_crd(rule).to_string()).expect("writes");
    let run = |output: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_celcost"))
            .args(["estimate", "--output", output])
            .arg(&file)
            .output()
            .expect("runs celcost");
        assert_eq!(out.status.code(), Some(1), "{output}: rejected");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let json = run("json");
    let v: Value = serde_json::from_str(&json).expect("json");
    let reports = v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
    let rewrites: Vec<&Value> = reports
        .iter()
        .flat_map(|r| r["schemas"].as_array().into_iter().flatten())
        .flat_map(|s| s["rules"].as_array().into_iter().flatten())
        .flat_map(|r| r["rewrites"].as_array().into_iter().flatten())
        .collect();
    let [rw] = rewrites.as_slice() else {
        panic!("one rewrite: {json}");
    };
    assert_eq!(rw["pattern"], "filter-size-to-exists");
    assert_eq!(rw["rule"], "self.exists(x, x == 'b')");
    assert_eq!(
        (rw["costBefore"].as_u64(), rw["costAfter"].as_u64()),
        (Some(15_728_639), Some(6_291_452))
    );
    assert_eq!(rw["checkedCases"], 200);
    let line = "cheaper: self.exists(x, x == 'b') — 15,728,639 → 6,291,452";
    for output in ["table", "markdown"] {
        let text = run(output);
        assert!(text.contains(line), "{output}: {text}");
    }
    let short = "Cheaper: `self.exists(x, x == 'b')` costs 6,291,452 instead of 15,728,639 (filter-size-to-exists, equivalent on 200 generated values).";
    let sarif: Value = serde_json::from_str(&run("sarif")).expect("sarif");
    let messages: Vec<&str> = sarif["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["message"]["text"].as_str())
        .collect();
    assert!(messages.iter().any(|m| m.contains(short)), "{messages:?}");
    let github = run("github");
    let error = github
        .lines()
        .find(|l| l.starts_with("::error") && l.contains("rule over budget"))
        .unwrap_or_else(|| panic!("an error annotation: {github}"));
    assert!(error.contains(short), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CRD with one list rule, on `names` (`maxItems: max_items`) inside each of `groups`
/// (`maxItems: groups`): its cost follows both.
fn crd_with_list(groups: u64, max_items: u64) -> Value {
    widgets_crd(serde_json::json!({"groups": {
        "type": "array", "maxItems": groups,
        "items": {"type": "object", "properties": {"names": {
            "type": "array", "maxItems": max_items,
            "items": {"type": "string", "maxLength": 64},
            "x-kubernetes-validations": [
                {"rule": "self.filter(n, n.startsWith('x')).size() > 0"}
            ]
        }}}
    }}))
}

fn rewrites_of(crd: &Value, scope: celcost::rewrite::Scope) -> (u64, usize) {
    let e = Estimator::default();
    let mut report = e.estimate_crd(crd, "test");
    celcost::rewrite::offer_rewrites_in(&e, crd, &mut report, scope);
    let r = &report.schemas[0].rules[0];
    (r.cost, r.rewrites.len())
}

#[test]
fn rewrites_are_searched_only_in_their_scope() {
    use celcost::rewrite::Scope;
    // Below the threshold: offered only when every rule is asked for.
    let cheap = crd_with_list(1, 1_000);
    let (cost, all) = rewrites_of(&cheap, Scope::All);
    // Below the default near-budget threshold (80% of the per-rule limit).
    assert!(
        cost < celcost::report::PER_RULE_COST_LIMIT * 8 / 10,
        "{cost}"
    );
    assert_eq!(all, 1, "the pattern applies");
    assert_eq!(rewrites_of(&cheap, Scope::default()).1, 0);
    assert_eq!(rewrites_of(&cheap, Scope::Off).1, 0);
    // The same rule at or above the near-budget threshold (a 0.1% threshold here) is searched.
    assert_eq!(rewrites_of(&cheap, Scope::NearBudget(0.1)).1, 1);
    // Over the per-rule limit: searched by default.
    let costly = crd_with_list(1_000, 1_000);
    let (cost, near) = rewrites_of(&costly, Scope::default());
    assert!(cost > celcost::report::PER_RULE_COST_LIMIT, "{cost}");
    assert_eq!(near, 1);
    assert_eq!(rewrites_of(&costly, Scope::Off).1, 0);
}

#[test]
fn rewrites_scope_parses_the_cli_values() {
    use celcost::rewrite::{Rewrites, Scope};
    use clap::ValueEnum;
    let scope = |s: &str| {
        Rewrites::from_str(s, false)
            .map(|r| Scope::of(r, 30.0))
            .ok()
    };
    assert_eq!(scope("near"), Some(Scope::NearBudget(30.0)));
    assert_eq!(scope("all"), Some(Scope::All));
    assert_eq!(scope("off"), Some(Scope::Off));
    assert_eq!(scope("sometimes"), None);
}
