//! `celcost headroom`: every answer proved with the estimator — the CRD with the node's bound at
//! `max` is accepted on every judged minor, at `max + 1` refused on one (by the rule or total
//! `limitedBy` names, at the cost it gives); `any` accepted at the largest value searched. On
//! the fixture `tests/data/headroom/gauges.yaml` (a bounded list of bounded strings, a bounded
//! string, an unbounded map, a list whose rule costs the same at any size), with `--field`,
//! `--near-budget-percent`, the JSON's shape and standard input; and over the corpus
//! (`../shared/corpus/crds`, every 10th bound; gated by `CELCOST_REQUIRE_CORPUS`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use celcost::Estimator;
use celcost::cel::minor::{Distribution, Minor, supported_window};
use celcost::input::{objects_of, parse_documents};
use celcost::report::{
    Keyword, ObjectReport, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, judged_rule_cost,
};
use celcost::schema::path::{parse as parse_steps, walk_mut};
use celcost::suggest::{HeadroomSettings, ObjectHeadroom, Settings, headroom, schema_pointers};

use crate::common::{corpus_dir, files_under};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const FIXTURE: &str = "tests/data/headroom/gauges.yaml";

fn celcost(args: &[&str], input: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_celcost"))
        .current_dir(ROOT)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run celcost");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.unwrap_or_default()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn estimators() -> Vec<Estimator> {
    supported_window(Distribution::Kubernetes)
        .into_iter()
        .filter_map(|v| Minor::of_distribution(v, Distribution::Kubernetes))
        .map(Estimator::for_minor)
        .collect()
}

fn objects(path: &Path) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.display().to_string();
    parse_documents(&text)
        .into_iter()
        .filter_map(|d| Some((d.index, d.value.ok()?)))
        .filter(|(_, v)| v.is_object())
        .flat_map(|(i, v)| objects_of(&format!("{name}#{i}"), v))
        .map(|o| (o.source, o.value))
        .collect()
}

/// `object` with `keyword: value` on the node `path` (a `nodeFieldPath`) of every schema root
/// it is in.
fn with_bound(
    object: &Value,
    versions: &[String],
    path: &str,
    keyword: Keyword,
    value: i64,
) -> Value {
    let mut copy = object.clone();
    let fp = ["spec.validation.openAPIV3Schema"]
        .into_iter()
        .map(String::from)
        .chain((0..64).map(|i| format!("spec.versions[{i}].schema.openAPIV3Schema")))
        .find(|fp| {
            path.strip_prefix(fp.as_str())
                .is_some_and(|r| r.is_empty() || r.starts_with('.'))
        })
        .expect("a schema's path");
    let rest = &path[fp.len()..];
    let pointers = schema_pointers(object, &fp, versions);
    assert!(!pointers.is_empty(), "{path}: no schema root");
    for p in pointers {
        let root = copy.pointer_mut(&p).unwrap();
        let steps = parse_steps(&*root, rest).unwrap_or_else(|| panic!("{path}: not in {p}"));
        let node = walk_mut(root, &steps).unwrap();
        node.as_object_mut()
            .unwrap()
            .insert(keyword.name().to_string(), Value::from(value));
    }
    copy
}

/// What refuses `report`'s schema `fp` (its rule `rule`, or its total), by the threshold.
fn over(report: &ObjectReport, fp: &str, near: Option<f64>) -> Vec<(String, u64)> {
    let fits = |c: u64, l: u64| match near {
        Some(p) => Settings::new(p).fits(c, l),
        None => c <= l,
    };
    let s = report
        .schemas
        .iter()
        .find(|s| s.schema_field_path == fp)
        .expect("the schema");
    let mut out: Vec<(String, u64)> = s
        .rules
        .iter()
        .map(|r| {
            (
                format!("{}[{}]", r.path, r.index),
                judged_rule_cost(r.cost, r.message_expression_cost),
            )
        })
        .filter(|(_, c)| !fits(*c, PER_RULE_COST_LIMIT))
        .collect();
    if !fits(s.total_cost, PER_SCHEMA_COST_LIMIT) {
        out.push((format!("total {fp}"), s.total_cost));
    }
    out
}

/// Proves one object's answers with whole estimates: accepted at max on every minor, refused
/// at max + 1 on `limitedBy`'s minor by what it names (none of the object's rules or totals
/// over at max unless already over without the change). `every`: every n-th bound.
fn prove(
    estimators: &[Estimator],
    object: &Value,
    h: &ObjectHeadroom,
    near: Option<f64>,
    every: usize,
) -> usize {
    let mut proved = 0;
    let mut n = 0;
    for s in &h.schemas {
        for b in &s.bounds {
            n += 1;
            if (n - 1) % every != 0 {
                continue;
            }
            let fp = b
                .path
                .split(".properties[")
                .next()
                .unwrap()
                .trim_end_matches(".items")
                .to_string();
            let fp = ["spec.validation.openAPIV3Schema".to_string()]
                .into_iter()
                .chain((0..64).map(|i| format!("spec.versions[{i}].schema.openAPIV3Schema")))
                .find(|x| fp.starts_with(x.as_str()))
                .unwrap();
            let top = match b.keyword {
                Keyword::MaxLength => i64::MAX / 4,
                _ => i64::MAX,
            };
            let est = |v: i64| -> Vec<ObjectReport> {
                let copy = with_bound(object, &s.versions, &b.path, b.keyword, v);
                estimators
                    .iter()
                    .map(|e| e.estimate_crd(&copy, &h.source))
                    .collect()
            };
            let base: Vec<ObjectReport> = estimators
                .iter()
                .map(|e| e.estimate_crd(object, &h.source))
                .collect();
            match b.max {
                None => {
                    assert!(b.limited_by.is_none(), "{}: any with a limit", b.path);
                    // Accepted at the top: nothing over there that is not over without it.
                    for (r, b0) in est(top).iter().zip(&base) {
                        let now = over(r, &fp, near);
                        assert!(
                            now.iter().all(|x| over(b0, &fp, near).contains(x)),
                            "{}: any, but at {top}: {now:?}",
                            b.path
                        );
                    }
                }
                Some(max) => {
                    let l = b.limited_by.as_ref().expect("a limit");
                    if max >= 0 {
                        for (r, b0) in est(max).iter().zip(&base) {
                            let now = over(r, &fp, near);
                            assert!(
                                now.iter().all(|x| over(b0, &fp, near).contains(x)),
                                "{} {} at max {max}: refused by {now:?}",
                                b.path,
                                b.keyword.name()
                            );
                        }
                    }
                    let after = est(max + 1);
                    let i = estimators
                        .iter()
                        .position(|e| e.minor().label() == l.kubernetes_version)
                        .expect("the minor named");
                    let what = match l.index {
                        Some(x) => format!("{}[{x}]", l.path),
                        None => format!("total {}", l.path),
                    };
                    let now = over(&after[i], &fp, near);
                    assert!(
                        now.contains(&(what.clone(), l.cost_at_max_plus_one)),
                        "{} {} at max+1 {}: expected {what} at {} on {}, over: {now:?}",
                        b.path,
                        b.keyword.name(),
                        max + 1,
                        l.cost_at_max_plus_one,
                        l.kubernetes_version
                    );
                }
            }
            proved += 1;
        }
    }
    proved
}

fn fixture() -> (Vec<Estimator>, Value, ObjectHeadroom) {
    let es = estimators();
    let (source, object) = objects(&Path::new(ROOT).join(FIXTURE)).remove(0);
    let refs: Vec<&Estimator> = es.iter().collect();
    let h = headroom(&refs, None, &source, &object, &HeadroomSettings::default());
    (es, object, h)
}

fn bound<'h>(h: &'h ObjectHeadroom, suffix: &str) -> &'h celcost::suggest::Headroom {
    h.schemas[0]
        .bounds
        .iter()
        .find(|b| b.path.ends_with(suffix))
        .unwrap_or_else(|| panic!("no bound on {suffix}: {h:?}"))
}

#[test]
fn the_fixture_s_answers_are_exact() {
    let (es, object, h) = fixture();
    assert_eq!(h.schemas.len(), 1);
    // The bounded list, its bounded strings, the bounded string and the unbounded map have a
    // limit; the others none.
    let tags = bound(&h, "properties[tags]");
    assert_eq!((tags.keyword, tags.current), (Keyword::MaxItems, Some(10)));
    assert!(tags.max.unwrap() > 10);
    let items = bound(&h, "properties[tags].items");
    assert_eq!(
        (items.keyword, items.current),
        (Keyword::MaxLength, Some(64))
    );
    assert!(items.max.unwrap() > 64);
    let name = bound(&h, "properties[name]");
    assert_eq!(
        (name.keyword, name.current),
        (Keyword::MaxLength, Some(100))
    );
    assert!(name.max.unwrap() > 100);
    let labels = bound(&h, "properties[labels]");
    assert_eq!(
        (labels.keyword, labels.current),
        (Keyword::MaxProperties, None)
    );
    assert!(labels.max.is_some());
    let ports = bound(&h, "properties[ports]");
    assert_eq!((ports.max, &ports.limited_by), (None, &None));
    for b in [tags, items, name, labels] {
        let l = b.limited_by.as_ref().unwrap();
        assert_eq!(l.kind, "rule", "{b:?}");
        assert!(l.cost_at_max_plus_one > PER_RULE_COST_LIMIT);
    }
    // Every answer proved by whole estimates at max and max + 1.
    assert_eq!(prove(&es, &object, &h, None, 1), h.schemas[0].bounds.len());
}

#[test]
fn near_budget_percent_lowers_every_max_and_stays_exact() {
    let (es, object, whole) = fixture();
    let refs: Vec<&Estimator> = es.iter().collect();
    let settings = HeadroomSettings {
        near_budget_percent: Some(30.0),
        field: None,
    };
    let h = headroom(&refs, None, &whole.source, &object, &settings);
    for b in &h.schemas[0].bounds {
        let w = bound(&whole, &b.path);
        match (b.max, w.max) {
            (Some(a), Some(x)) => assert!(a < x, "{b:?} vs {w:?}"),
            (None, None) => {}
            other => panic!("{}: {other:?}", b.path),
        }
    }
    // The labels' rule is at 27.5 % already: a little more reaches 30 %.
    let labels = bound(&h, "properties[labels]");
    assert!(labels.max.is_some());
    assert_eq!(
        prove(&es, &object, &h, Some(30.0), 1),
        h.schemas[0].bounds.len()
    );
}

#[test]
fn a_crd_refused_now_gets_a_max_below_its_bound() {
    let (es, object, whole) = fixture();
    let tags = bound(&whole, "properties[tags]");
    let max = tags.max.unwrap();
    // Raised past its max: the CRD is refused, and the answer is the same max, below it.
    let versions = whole.schemas[0].versions.clone();
    let refused = with_bound(&object, &versions, &tags.path, Keyword::MaxItems, max + 10);
    let refs: Vec<&Estimator> = es.iter().collect();
    let h = headroom(
        &refs,
        None,
        &whole.source,
        &refused,
        &HeadroomSettings::default(),
    );
    let t = bound(&h, "properties[tags]");
    assert_eq!((t.current, t.max), (Some(max + 10), Some(max)));
    let out = celcost(
        &["headroom", "-"],
        Some(&serde_json::to_vec(&refused).unwrap()),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("below current: refused now"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn the_json_shape_field_and_stdin() {
    let out = celcost(&["headroom", "-o", "json", FIXTURE], None);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&v),
        ["kind", "kubernetesVersions", "name", "schemas", "source"]
    );
    assert_eq!(v["kubernetesVersions"].as_array().unwrap().len(), 3);
    let schema = &v["schemas"][0];
    assert_eq!(keys(schema), ["bounds", "versions"]);
    let bounds = schema["bounds"].as_array().unwrap();
    let limited = bounds.iter().find(|b| !b["max"].is_null()).unwrap();
    assert_eq!(
        keys(limited),
        ["current", "keyword", "limitedBy", "max", "path"]
    );
    assert_eq!(
        keys(&limited["limitedBy"]),
        [
            "costAtMaxPlusOne",
            "index",
            "kind",
            "kubernetesVersion",
            "path"
        ]
    );
    assert!(
        bounds
            .iter()
            .any(|b| b["max"].is_null() && b["limitedBy"].is_null())
    );
    // The paths are the estimate's nodeFieldPaths.
    let est = celcost(&["estimate", "-o", "json", FIXTURE], None);
    let est: Value = serde_json::from_slice(&est.stdout).unwrap();
    let nodes: Vec<&str> = est["schemas"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["nodeFieldPath"].as_str().unwrap())
        .collect();
    for n in &nodes {
        assert!(
            bounds.iter().any(|b| b["path"] == *n),
            "{n} not among {bounds:?}"
        );
    }
    // --field: that node only.
    let field = limited["path"].as_str().unwrap();
    let one = celcost(&["headroom", "-o", "json", "--field", field, FIXTURE], None);
    let one: Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!(
        one["schemas"][0]["bounds"],
        Value::Array(vec![limited.clone()])
    );
    // Standard input: the same answers, named <stdin>.
    let fed = celcost(
        &["headroom", "-o", "json", "-"],
        Some(&std::fs::read(Path::new(ROOT).join(FIXTURE)).unwrap()),
    );
    assert!(fed.status.success());
    let fed: Value = serde_json::from_slice(&fed.stdout).unwrap();
    assert_eq!(fed["source"], "<stdin>#1");
    assert_eq!(fed["schemas"], v["schemas"]);
    // Table and markdown name every node.
    for o in ["table", "markdown"] {
        let t = celcost(&["headroom", "-o", o, FIXTURE], None);
        let t = String::from_utf8(t.stdout).unwrap();
        for b in bounds {
            assert!(t.contains(b["path"].as_str().unwrap()), "{o}: {t}");
        }
        assert!(t.contains("any"));
    }
}

#[test]
fn policies_get_a_note_and_unreadable_input_exit_2() {
    let vap = br#"{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"p"},"spec":{"validations":[{"expression":"true"}]}}"#;
    let out = celcost(&["headroom", "-o", "json", "-"], Some(vap));
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schemas"], Value::Array(vec![]));
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains("not a CustomResourceDefinition")
    );
    let out = celcost(&["headroom", "tests/data/headroom/no-such-file.yaml"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = celcost(&["headroom", "-"], Some(b"a: [unclosed"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn corpus_answers_are_exact() {
    let Some(corpus) = corpus_dir() else {
        if std::env::var("CELCOST_REQUIRE_CORPUS").is_ok() {
            panic!("../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        }
        eprintln!("SKIPPED: ../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        return;
    };
    let es = estimators();
    let refs: Vec<&Estimator> = es.iter().collect();
    let mut files = Vec::new();
    files_under(&corpus.join("crds"), &mut files);
    // Every 10th bound proved by whole estimates (`CELCOST_HEADROOM_PROVE_EVERY=1`: every one,
    // as a release run of this test can afford).
    let every: usize = std::env::var("CELCOST_HEADROOM_PROVE_EVERY")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(10);
    let (mut bounds, mut proved) = (0, 0);
    for f in files {
        for (source, object) in objects(&f) {
            if object["kind"] != "CustomResourceDefinition" {
                continue;
            }
            let h = headroom(&refs, None, &source, &object, &HeadroomSettings::default());
            assert!(!h.stopped, "{source}: {:?}", h.note);
            bounds += h.schemas.iter().map(|s| s.bounds.len()).sum::<usize>();
            proved += prove(&es, &object, &h, None, every);
        }
    }
    eprintln!("headroom over the corpus: {bounds} bounds, {proved} proved");
    assert!(proved > 20, "{proved} of {bounds}");
}

/// The costs headroom re-estimates a schema with (`Estimator::schema_costs`: the node walk
/// alone) are the whole estimate's, rule by rule and the total, for every schema of the corpus
/// whose rules the API server compiles, on every minor of the window.
#[test]
fn schema_costs_are_the_whole_estimate_s() {
    let Some(corpus) = corpus_dir() else {
        eprintln!("SKIPPED: ../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        return;
    };
    let es = estimators();
    let mut files = Vec::new();
    files_under(&corpus.join("crds"), &mut files);
    let mut compared = 0;
    for f in files {
        for (source, object) in objects(&f) {
            if object["kind"] != "CustomResourceDefinition" {
                continue;
            }
            for e in &es {
                let report = e.estimate_crd(&object, &source);
                for s in &report.schemas {
                    if !s.rules.iter().any(|r| r.compiled_by_apiserver) {
                        continue;
                    }
                    let pointers = schema_pointers(&object, &s.schema_field_path, &s.versions);
                    let raw = object.pointer(&pointers[0]).unwrap();
                    let schema =
                        celcost::schema::Schema::from_json(raw, &s.schema_field_path).unwrap();
                    let costs = e.schema_costs(&schema, &s.schema_field_path);
                    let key = |r: &celcost::report::RuleReport| {
                        (
                            r.node_field_path.clone(),
                            r.index,
                            r.cost,
                            r.message_expression_cost,
                            r.schema_max_cardinality,
                            r.compile_error.clone(),
                        )
                    };
                    let want: Vec<_> = s.rules.iter().map(key).collect();
                    let got: Vec<_> = costs.rules.iter().map(key).collect();
                    assert_eq!(
                        got,
                        want,
                        "{source} {} on {}",
                        s.schema_field_path,
                        e.minor().label()
                    );
                    assert_eq!(
                        costs.total_cost, s.total_cost,
                        "{source} {}",
                        s.schema_field_path
                    );
                    compared += 1;
                }
            }
        }
    }
    eprintln!("schema costs compared with whole estimates: {compared} schemas");
    assert!(compared > 300, "{compared}");
}
