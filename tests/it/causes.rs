//! Why a minor moved a number (issue 45, item 2): every cost, total, compile error or verdict
//! that differs between two minors of a range names the upstream change behind it, found by the
//! estimator (what the number's estimate consulted of the minors' rules, `estimate::causes`), never
//! by reading the rule's text. Each difference of `cel::minor` / `decls/*.decl` that moves a
//! number here is the only cause of its case.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use celcost::Estimator;
use celcost::cel::decls::Version;
use celcost::cel::minor::{Distribution, Minor};
use celcost::estimate::versions::combine;
use celcost::report::ObjectReport;
use celcost::report::versions::VersionCause;
use serde_json::{Value, json};

fn estimator(minor: u32, d: Distribution) -> Estimator {
    Estimator::for_minor(Minor::of_distribution(Version::new(1, minor), d).unwrap())
}

fn crd_with_root(root: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": root}}]
        }
    })
}

/// A CRD with one rule on `spec` (schema `spec`).
fn crd_rule(mut spec: Value, rule: &str) -> Value {
    spec["x-kubernetes-validations"] = json!([{"rule": rule}]);
    crd_with_root(json!({"type": "object", "properties": {"spec": spec}}))
}

/// A ValidatingAdmissionPolicy with one validation.
fn policy(expression: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": expression}]
        }
    })
}

/// The newest report of `object` over the minors `from..=to` of `d`, with its matrix.
fn range(from: u32, to: u32, d: Distribution, object: &Value) -> ObjectReport {
    let reports: Vec<ObjectReport> = (from..=to)
        .map(|m| estimator(m, d).estimate(object, "t").unwrap())
        .collect();
    combine(reports)
}

/// Every cause the matrix gives (of its changes and verdicts), each once.
fn all_causes(r: &ObjectReport) -> Vec<VersionCause> {
    let m = r.by_version.as_ref().unwrap();
    let mut out: Vec<VersionCause> = Vec::new();
    for c in m
        .changes
        .iter()
        .flat_map(|c| &c.causes)
        .chain(m.verdicts.iter().flat_map(|v| &v.causes))
    {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

/// From minor `a` to `b` (the next) of `d`, `object` changes some number, and every change has
/// exactly one cause: `reference`, at `b`.
fn only_cause(a: u32, d: Distribution, object: &Value, reference: &str) -> VersionCause {
    let r = range(a, a + 1, d, object);
    let m = r.by_version.as_ref().unwrap();
    assert!(
        !m.changes.is_empty(),
        "1.{a} → 1.{}: nothing changes ({:?})",
        a + 1,
        r.schemas
    );
    for c in &m.changes {
        let refs: Vec<&str> = c.causes.iter().map(|x| x.reference.as_str()).collect();
        assert_eq!(refs, [reference], "{}: {:?}", c.unit, c.causes);
        assert_eq!(c.causes[0].kubernetes_version, format!("v1.{}", a + 1));
    }
    let all = all_causes(&r);
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].clone()
}

const K: Distribution = Distribution::Kubernetes;

#[test]
fn the_global_matches_of_cel_go_0_29() {
    let c = only_cause(
        36,
        K,
        &crd_rule(json!({"type": "string"}), "matches(self, '^a+$')"),
        "cel-expr/cel-go#1350",
    );
    assert_eq!(
        c.text(),
        "1.37: cel-go v0.29.2 estimates the global matches(string, string) like the receiver form (cel-expr/cel-go#1350)"
    );
    // The receiver form costs alike on both: nothing changes, nothing to name.
    let r = range(
        36,
        37,
        K,
        &crd_rule(json!({"type": "string"}), "self.matches('^a+$')"),
    );
    assert!(r.by_version.unwrap().changes.is_empty());
}

#[test]
fn object_names_bounded_from_1_37() {
    let crd = crd_with_root(json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.contains('x')"}]}));
    only_cause(36, K, &crd, "kubernetes/apiextensions-apiserver@1f3023483");
}

#[test]
fn quoted_field_names_of_cel_go_0_28() {
    let spec = json!({"type": "object", "properties": {"maxSkew": {"type": "integer"}}});
    only_cause(
        36,
        K,
        &crd_rule(spec, "self.`maxSkew` <= 5"),
        "cel-expr/cel-go#1295",
    );
}

#[test]
fn duration_of_an_int_gone_in_1_37() {
    let c = only_cause(
        36,
        K,
        &policy("duration(5) == duration('5s')"),
        "cel-expr/cel-go#1300",
    );
    assert!(c.change.contains("stdlib.intToDuration"), "{c:?}");
}

#[test]
fn the_cost_algorithm_of_cel_go_0_23() {
    // 1.32 charges each `object.kind != kind` as an equality of unknown sizes; 1.33 sizes `kind`
    // from the literal.
    only_cause(
        32,
        K,
        &policy("['Deployment', 'ReplicaSet', 'Job'].all(kind, object.kind != kind)"),
        "cel-expr/cel-go#1104",
    );
}

#[test]
fn two_variable_comprehensions_for_new_expressions_of_1_33() {
    let c = only_cause(
        32,
        K,
        &policy("{'a': 1}.all(k, v, v > 0)"),
        "k8s.io/apiserver v0.32 pkg/cel/environment/base.go (ext.TwoVarComprehensions)",
    );
    assert!(c.change.starts_with("new expressions may use "), "{c:?}");
}

#[test]
fn optional_library_version_2_of_cel_go_0_23() {
    let c = only_cause(
        32,
        K,
        &policy("[1, 2].first().hasValue()"),
        "google/cel-go v0.23.0 cel/library.go (optional library version 2)",
    );
    assert!(c.change.contains("cel.lib.optional.v2"), "{c:?}");
}

#[test]
fn kubernetes_type_equality_of_1_32() {
    only_cause(
        31,
        K,
        &policy("cidr('10.0.0.0/8') == cidr('10.0.0.0/8')"),
        "kubernetes/kubernetes#126359",
    );
}

#[test]
fn optional_macros_copy_their_receiver_from_cel_go_0_22() {
    only_cause(
        31,
        K,
        &policy("optional.none().optMap(x, x) == optional.none()"),
        "google/cel-go v0.22.0 cel/library.go (optMap, optFlatMap)",
    );
}

#[test]
fn format_calls_checked_from_cel_go_0_20() {
    only_cause(
        30,
        K,
        &policy("'%d'.format(['x']) == '1'"),
        "google/cel-go v0.20.0 ext/strings.go (stringFormatValidator)",
    );
}

#[test]
fn ip_library_for_new_expressions_of_1_31() {
    let c = only_cause(
        30,
        K,
        &policy("isIP('10.0.0.1')"),
        "k8s.io/apiserver pkg/cel/environment/base.go (IntroducedVersion of the library)",
    );
    assert!(c.change.contains("kubernetes.net.ip"), "{c:?}");
    // OpenShift carries it in 1.30: nothing changes there.
    let r = range(30, 31, Distribution::OpenShift, &policy("isIP('10.0.0.1')"));
    assert!(r.by_version.unwrap().changes.is_empty());
}

#[test]
fn format_library_for_new_expressions() {
    let f = "!format.dns1123Label().validate('a').hasValue()";
    let c = only_cause(
        31,
        K,
        &policy(f),
        "k8s.io/apiserver pkg/cel/environment/base.go (IntroducedVersion of the library)",
    );
    assert!(c.change.contains("kubernetes.format"), "{c:?}");
    // OpenShift's a minor earlier.
    let c = only_cause(
        30,
        Distribution::OpenShift,
        &policy(f),
        "k8s.io/apiserver pkg/cel/environment/base.go (IntroducedVersion of the library)",
    );
    assert!(c.change.contains("kubernetes.format"), "{c:?}");
}

#[test]
fn int_or_string_max_length_upstream_1_34_and_openshift_1_33() {
    let spec = json!({"x-kubernetes-int-or-string": true, "maxLength": 20,
        "anyOf": [{"type": "integer"}, {"type": "string"}]});
    let crd = crd_rule(spec, "quantity(self).isGreaterThan(quantity('0'))");
    only_cause(33, K, &crd, "kubernetes/kubernetes#132837");
    only_cause(
        32,
        Distribution::OpenShift,
        &crd,
        "openshift/kubernetes#2375 (kubernetes/kubernetes#132837)",
    );
}

#[test]
fn reserved_words_as_field_names_for_new_expressions_of_1_32() {
    let spec =
        json!({"type": "object", "properties": {"namespace": {"type": "string", "maxLength": 10}}});
    only_cause(
        31,
        K,
        &crd_rule(spec, "self.namespace == 'a'"),
        "k8s.io/apiserver v0.31 pkg/cel/common/schemas.go (escaped reserved words, compatibility 1.31)",
    );
}

#[test]
fn the_optional_types_name_of_cel_go_0_20() {
    let spec = json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 10}}});
    let c = only_cause(
        30,
        K,
        &crd_rule(spec, "self.?s == 1"),
        "google/cel-go v0.20.0 common/types/optional.go",
    );
    assert!(c.change.contains("optional_type(…)"), "{c:?}");
}

/// The 1.37-refused gateway CRDs (`tests/data/upgrade-1.37`): the table and the JSON of
/// `estimate --kubernetes-version 1.36..1.37` name cel-expr/cel-go#1350, under the warning and
/// beside each change; the markdown and SARIF too.
#[test]
fn the_gateway_crds_refused_by_1_37_name_cel_go_1350() {
    let dir = fixtures();
    let dir = dir.to_str().unwrap();
    let because = "because 1.37: cel-go v0.29.2 estimates the global matches(string, string) like the receiver form (cel-expr/cel-go#1350)";
    let table = celcost(&["estimate", "--kubernetes-version", "1.36..1.37", dir]);
    let out = String::from_utf8_lossy(&table.stdout);
    let lines: Vec<&str> = out.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.trim_start()
            .starts_with("warning: accepted by 1.36, rejected by 1.37")
            || l.trim_start().starts_with("changes: ")
        {
            assert_eq!(lines.get(i + 1).map(|n| n.trim()), Some(because), "{out}");
        }
    }
    assert_eq!(out.matches(because).count(), 6, "{out}");
    let json = celcost(&[
        "estimate",
        "-o",
        "json",
        "--kubernetes-version",
        "1.36..1.37",
        dir,
    ]);
    let want = json!([{
        "kubernetesVersion": "v1.37",
        "change": "cel-go v0.29.2 estimates the global matches(string, string) like the receiver form",
        "reference": "cel-expr/cel-go#1350"
    }]);
    let mut seen = 0;
    for line in String::from_utf8_lossy(&json.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let m = &v["byVersion"];
        for c in m["changes"].as_array().unwrap() {
            assert_eq!(c["causes"], want, "{c}");
            seen += 1;
        }
        assert_eq!(m["verdicts"][1]["causes"], want);
        assert!(m["verdicts"][0].get("causes").is_none());
    }
    assert_eq!(seen, 4);
    for format in ["markdown", "sarif", "github"] {
        let o = celcost(&[
            "estimate",
            "-o",
            format,
            "--kubernetes-version",
            "1.36..1.37",
            dir,
        ]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("(cel-expr/cel-go#1350)"), "{format}: {out}");
    }
}

/// `celcost diff` over the window: an object 1.36 answers otherwise than 1.37 says why.
#[test]
fn diff_names_why_an_older_minor_answers_otherwise() {
    let head = fixtures().join("backendtimeoutpolicies.yaml");
    let text = std::fs::read_to_string(&head).unwrap();
    let mut base: Value = celcost::input::parse_documents(&text)
        .remove(0)
        .value
        .unwrap();
    base["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["rules"]["items"]["properties"]["request"]["maxLength"] = json!(32);
    let dir = std::env::temp_dir().join(format!("celcost-causes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base_file = dir.join("base.json");
    std::fs::write(&base_file, base.to_string()).unwrap();
    let o = celcost(&[
        "diff",
        "--kubernetes-version",
        "1.36..1.37",
        base_file.to_str().unwrap(),
        head.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(cel-expr/cel-go#1350)"), "{out}");
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/upgrade-1.37")
}

fn celcost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args(args)
        .output()
        .expect("run celcost")
}

/// Every change of every corpus CRD and policy over all minors has a cause, and every verdict
/// that differs from the previous minor's.
#[test]
fn every_change_of_the_corpus_has_a_cause() {
    let Some(dir) = crate::common::corpus_dir() else {
        crate::common::skip(
            "CELCOST_REQUIRE_CORPUS",
            "every_change_of_the_corpus_has_a_cause",
            "no corpus at ../shared/corpus",
        );
        return;
    };
    let mut files = Vec::new();
    for sub in ["crds", "vaps", "maps"] {
        crate::common::files_under(&dir.join(sub), &mut files);
    }
    let range = celcost::estimate::range::RangeEstimator::new(
        celcost::cel::minor::KUBERNETES
            .iter()
            .map(Estimator::for_minor)
            .collect(),
    );
    let catalog = celcost::schema::catalog::SchemaCatalog::new();
    let (mut changes, mut verdicts) = (0, 0);
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for doc in celcost::input::parse_documents(&text) {
            let Ok(v) = doc.value else { continue };
            let Some(reports) =
                range.estimate_each(&v, &catalog, |e, s| e.estimate_shared(s, "t", &catalog))
            else {
                continue;
            };
            let r = combine(reports);
            let m = r.by_version.unwrap();
            for c in &m.changes {
                changes += 1;
                for s in c.steps.iter().skip(1) {
                    assert!(
                        c.causes_at(&s.kubernetes_version).next().is_some(),
                        "{}: {} on {}: no cause ({:?})",
                        f.display(),
                        c.unit,
                        s.kubernetes_version,
                        c.causes
                    );
                }
            }
            for w in m.verdicts.windows(2) {
                if w[0].valid != w[1].valid || w[0].error_count != w[1].error_count {
                    verdicts += 1;
                    assert!(
                        !w[1].causes.is_empty(),
                        "{}: {} on {}: no cause",
                        f.display(),
                        r.name,
                        w[1].kubernetes_version
                    );
                }
            }
        }
    }
    eprintln!("{changes} changes, {verdicts} verdicts, each with its causes");
    assert!(changes > 0);
}

#[test]
fn enum_string_sizes_of_1_29() {
    let spec = json!({"type": "string", "enum": ["a", "bb"]});
    only_cause(
        28,
        K,
        &crd_rule(spec, "self.contains('a')"),
        "k8s.io/apiserver v0.29 pkg/cel/common/schemas.go (estimateMaxStringEnumLength)",
    );
}

#[test]
fn quantity_costs_of_1_30() {
    for d in [K, Distribution::OpenShift] {
        let c = only_cause(
            29,
            d,
            &crd_rule(
                json!({"type": "string"}),
                "quantity(self).isGreaterThan(quantity('0'))",
            ),
            "k8s.io/apiserver v0.30 pkg/cel/library/cost.go (quantity, isQuantity)",
        );
        assert!(c.change.contains("by the size of s"), "{c:?}");
    }
}

#[test]
fn comprehension_result_sizes_of_cel_go_0_17_8() {
    let spec = json!({"type": "array", "maxItems": 5,
        "items": {"type": "string", "maxLength": 5}});
    let c = only_cause(
        29,
        K,
        &crd_rule(spec, "self.map(x, x.size()).sum() < 10"),
        "google/cel-go v0.17.8 checker/cost.go (costComprehension)",
    );
    assert_eq!(
        c.text(),
        "1.30: cel-go v0.17.8 gives a comprehension's result the size of its range (google/cel-go v0.17.8 checker/cost.go (costComprehension))"
    );
}

#[test]
fn validating_admission_policies_v1_from_1_30() {
    let r = range(29, 30, K, &policy("object.spec.replicas > 0"));
    let all = all_causes(&r);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        all[0].reference,
        "kubernetes/enhancements#3488 (KEP-3488: ValidatingAdmissionPolicy v1 in 1.30)"
    );
    assert!(all[0].change.ends_with("v1 is served"), "{:?}", all[0]);
}

#[test]
fn presence_tests_cost_nothing_from_1_29() {
    let spec = json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}}});
    let c = only_cause(
        28,
        K,
        &crd_rule(spec, "!has(self.a)"),
        "k8s.io/apiserver v0.29 pkg/cel/environment/base.go (checker.PresenceTestHasCost(false))",
    );
    assert!(c.change.contains("estimated at 0"), "{c:?}");
}

#[test]
fn undeclared_member_calls_are_untyped_in_cel_go_0_16() {
    let spec = json!({"type": "string", "maxLength": 5});
    let crd = crd_rule(spec.clone(), "!self.notAFunction()");
    let c = only_cause(
        28,
        K,
        &crd,
        "google/cel-go v0.17 checker/checker.go (checkCall)",
    );
    assert!(c.change.contains("error type"), "{c:?}");
    let old = estimator(28, K).estimate(&crd, "t").unwrap();
    let err = old.schemas[0].rules[0].compile_error.clone().unwrap();
    assert!(
        err.contains("found no matching overload for '!_' applied to '(<nil>)'"),
        "{err}"
    );
}

#[test]
fn optional_old_self_from_1_30() {
    let mut spec = json!({"type": "string", "maxLength": 5});
    spec["x-kubernetes-validations"] =
        json!([{"rule": "oldSelf.hasValue() || self == 'a'", "optionalOldSelf": true}]);
    let crd = crd_with_root(json!({"type": "object", "properties": {"spec": spec}}));
    let r = range(29, 30, K, &crd);
    let refs: Vec<String> = all_causes(&r).into_iter().map(|c| c.reference).collect();
    assert!(
        refs.contains(
            &"kubernetes/enhancements#4008 (KEP-4008: CRD validation ratcheting, beta in 1.30)"
                .to_string()
        ),
        "{refs:?}"
    );
    let m = r.by_version.as_ref().unwrap();
    let rule = m
        .changes
        .iter()
        .find(|c| c.unit.starts_with("^.spec"))
        .unwrap();
    let refs: Vec<&str> = rule.causes.iter().map(|c| c.reference.as_str()).collect();
    assert_eq!(
        refs,
        ["kubernetes/enhancements#4008 (KEP-4008: CRD validation ratcheting, beta in 1.30)"],
        "{:?}",
        rule.causes
    );
}

#[test]
fn cost_factors_past_2_64_are_clamped_from_cel_go_0_17() {
    // `in` over an unsized comprehension (1.28, cel-go v0.16.1): a factor of 1 on 2^64 − 1,
    // which v0.16.1 converts to 2^63; 1.29 clamps it. Both minors give the result no size.
    let spec = json!({"type": "object", "properties": {
        "d": {"type": "string", "maxLength": 5},
        "l": {"type": "array", "maxItems": 5, "items": {"type": "object",
            "properties": {"n": {"type": "string", "maxLength": 5}}}}}});
    let crd = crd_rule(spec, "self.d in self.l.map(s, s.n)");
    let cost = |m: u32| estimator(m, K).estimate(&crd, "t").unwrap().schemas[0].rules[0].max_cost;
    assert!(
        cost(28) > 1 << 63 && cost(28) < (1 << 63) + 1000,
        "{}",
        cost(28)
    );
    assert_eq!(cost(29), u64::MAX);
    let c = only_cause(
        28,
        K,
        &crd,
        "google/cel-go v0.17 checker/cost.go (multiplyByCostFactor, doubleTwoTo64)",
    );
    assert!(c.change.contains("clamps"), "{c:?}");
}
