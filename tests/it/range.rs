//! A range of minors shares estimates between minors that cannot differ on an object
//! (`celcost::estimate::range::RangeEstimator`): on generated CRDs and policies (the fuzzer's
//! generators, which use every library function), every shared report must equal the minor's
//! own estimate, field for field.

use crate::common;
use crate::fuzzgen;

use celcost::Estimator;
use celcost::budget::{self, Limits};
use celcost::cel::minor::{Distribution, KUBERNETES, Minor};
use celcost::estimate::Shared;
use celcost::estimate::range::RangeEstimator;
use celcost::input::{objects_of, parse_documents};
use celcost::schema::catalog::SchemaCatalog;

fn estimators(d: Distribution) -> Vec<Estimator> {
    KUBERNETES
        .iter()
        .map(|m| Estimator::for_minor(Minor::of_distribution(m.kubernetes, d).unwrap()))
        .collect()
}

#[test]
fn shared_estimates_equal_each_minors_own() {
    let fuzzer = fuzzgen::Fuzzer::new(Vec::new());
    let cases: u64 = std::env::var("CELCOST_RANGE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let mut compared = 0usize;
    let mut shared = 0usize;
    let mut typed_over_crds = 0usize;
    let mut taken = (0, 0);
    for d in [Distribution::Kubernetes, Distribution::OpenShift] {
        let singles = estimators(d);
        let range = RangeEstimator::new(estimators(d));
        for seed in 0..cases {
            let (_, text) = fuzzer.case(seed);
            let objects: Vec<_> = parse_documents(&text)
                .into_iter()
                .filter_map(|doc| doc.value.ok())
                .flat_map(|v| objects_of("gen.yaml", v))
                .collect();
            // Policies are typed over the CRDs of their input, as the CLI types them.
            let mut catalog = SchemaCatalog::new();
            for o in &objects {
                if o.value.get("kind").and_then(|k| k.as_str()) == Some("CustomResourceDefinition")
                {
                    catalog.add_crd(o.value.clone());
                }
            }
            for o in &objects {
                let Some(ranged) = range.estimate_each(&o.value, &catalog, |e, s| {
                    e.estimate_shared(s, &o.source, &catalog)
                }) else {
                    continue;
                };
                typed_over_crds += ranged
                    .iter()
                    .flat_map(|r| &r.expressions)
                    .filter(|x| {
                        x.typed
                            .as_ref()
                            .is_some_and(|t| t.against.iter().any(|a| a.starts_with("fuzz.")))
                    })
                    .count();
                for (e, r) in singles.iter().zip(&ranged) {
                    let own = e
                        .estimate_shared(&Shared::new(&o.value), &o.source, &catalog)
                        .unwrap();
                    compared += 1;
                    assert_eq!(
                        serde_json::to_value(&own).unwrap(),
                        serde_json::to_value(r).unwrap(),
                        "seed {seed}, {d:?} 1.{}: the shared report differs from the minor's own\n{text}",
                        e.kubernetes_version().minor
                    );
                }
                shared += ranged
                    .windows(2)
                    .filter(|w| {
                        serde_json::to_value(&w[0].schemas).ok()
                            == serde_json::to_value(&w[1].schemas).ok()
                    })
                    .count();
            }
        }
        taken.0 += range.taken().compilations;
        taken.1 += range.taken().checks;
    }
    println!(
        "{compared} minor reports compared; {shared} consecutive pairs alike; \
         {typed_over_crds} typed estimates over a generated CRD; {} rule compilations and {} \
         type checks taken from another minor's",
        taken.0, taken.1
    );
    assert!(taken.0 > 0 && taken.1 > 0, "no rule was shared: {taken:?}");
    assert!(compared > 1000, "too few cases: {compared}");
    assert!(
        typed_over_crds > 100,
        "too few policies typed over a CRD: {typed_over_crds}"
    );
}

/// What one minor makes for the others of a range ([`Shared`]) is charged to each as if made
/// again: every minor's estimate uses the same steps, and stops where it stops, as alone.
#[test]
fn shared_work_is_charged_to_every_minor() {
    let fuzzer = fuzzgen::Fuzzer::new(Vec::new());
    let all = estimators(Distribution::Kubernetes);
    let mut crds = 0;
    let mut stopped = 0;
    for seed in 0..200 {
        let (_, text) = fuzzer.case(seed);
        for doc in parse_documents(&text) {
            let Ok(v) = doc.value else { continue };
            for o in objects_of("gen.yaml", v) {
                if o.value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition")
                {
                    continue;
                }
                crds += 1;
                let newest = all.last().unwrap();
                // Once before, for the caches of the process: a first estimate of some objects
                // takes a step more than the next ones.
                for e in &all {
                    e.estimate_crd(&o.value, &o.source);
                }
                let (_, alone) = budget::run_measured(Limits::default(), || {
                    newest.estimate_crd(&o.value, &o.source)
                });
                // The oldest minor makes what is shared; the newest reuses it.
                let shared = Shared::new(&o.value);
                all[0].estimate_crd_shared(&shared, &o.source);
                let (_, reusing) = budget::run_measured(Limits::default(), || {
                    newest.estimate_crd_shared(&shared, &o.source)
                });
                assert_eq!(alone.steps, reusing.steps, "seed {seed}\n{text}");
                // Budgets that stop it at a quarter, half and three quarters of the way.
                for k in 1..4 {
                    let limits = Limits {
                        steps: alone.steps * k / 4,
                        ..Limits::default()
                    };
                    let tight = Estimator::for_minor(newest.minor()).with_limits(limits);
                    let own = tight.estimate_crd(&o.value, &o.source);
                    let with_shared = tight.estimate_crd_shared(&shared, &o.source);
                    stopped += usize::from(own.stopped.is_some());
                    assert_eq!(
                        serde_json::to_value(&own).unwrap(),
                        serde_json::to_value(&with_shared).unwrap(),
                        "seed {seed}, {limits:?}\n{text}"
                    );
                }
            }
        }
    }
    println!("{crds} CRDs, {stopped} stopped estimates compared");
    assert!(
        crds > 50 && stopped > 50,
        "too few cases: {crds} CRDs, {stopped} stopped"
    );
}

/// A policy typed over a CRD is estimated again by every minor that converts the CRD's schema
/// differently (`int-or-string` bounded by `maxLength` from 1.34; a resource root's
/// `additionalProperties` kept from 1.31), though its CEL is the same for them: the range's
/// report of each minor is that minor's own.
#[test]
fn policies_typed_over_a_crd_follow_each_minors_schema_conversion() {
    let crd = |node: &str| {
        serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": serde_json::from_str::<serde_json::Value>(node).unwrap()}
                    }}
                }]
            }
        })
    };
    let policy = |expression: &str| {
        serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "widgets"},
            "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["example.com"], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["widgets"]
                }]},
                "validations": [{"expression": expression}]
            }
        })
    };
    let cases = [
        // Sized by maxLength from 1.34, by the request size before.
        (
            r#"{"type": "object", "properties": {"items": {"type": "array", "maxItems": 100,
                "items": {"x-kubernetes-int-or-string": true, "maxLength": 10}}}}"#,
            "object.spec.items.all(i, string(i).matches('^[a-z]+$'))",
            (33, 34),
        ),
        // An embedded resource's additionalProperties are dropped by 1.30's copy of it.
        (
            r#"{"type": "object", "properties": {"inner": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "additionalProperties": {"type": "string", "maxLength": 5}, "maxProperties": 20}}}"#,
            "object.spec.inner.all(k, k.size() < 8)",
            (30, 31),
        ),
    ];
    let singles = estimators(Distribution::Kubernetes);
    let range = RangeEstimator::new(estimators(Distribution::Kubernetes));
    for (node, expression, (before, after)) in cases {
        let mut catalog = SchemaCatalog::new();
        catalog.add_crd(crd(node));
        let vap = policy(expression);
        let ranged = range
            .estimate_each(&vap, &catalog, |e, s| e.estimate_shared(s, "vap", &catalog))
            .unwrap();
        let typed_cost = |r: &celcost::report::ObjectReport| {
            serde_json::to_value(&r.expressions[0].typed).unwrap()
        };
        let own: Vec<_> = singles
            .iter()
            .map(|e| {
                e.estimate_shared(&Shared::new(&vap), "vap", &catalog)
                    .unwrap()
            })
            .collect();
        let at = |m: u32| {
            singles
                .iter()
                .position(|e| e.kubernetes_version().minor == m)
                .unwrap()
        };
        assert_ne!(
            typed_cost(&own[at(before)]),
            typed_cost(&own[at(after)]),
            "{expression}: 1.{before} and 1.{after} should type it differently"
        );
        for ((e, own), r) in singles.iter().zip(&own).zip(&ranged) {
            assert_eq!(
                serde_json::to_value(own).unwrap(),
                serde_json::to_value(r).unwrap(),
                "{expression}, 1.{}: the range's report differs from the minor's own",
                e.kubernetes_version().minor
            );
        }
    }
}

/// The one-variable boolean quantifiers over every shape a schema gives them (lists and maps of
/// strings, bounded or not, of objects, of lists, of int-or-strings), with bodies calling the
/// functions whose cost depends on sizes: every minor's shared report equals its own. (The cost
/// algorithms before and after cel-go v0.23, 1.32 and 1.33, give straight-line CEL the same
/// costs but not the same drivers — the new one asks the size of every argument — so they share
/// no CEL; `the_corpus_shares_only_what_is_alike` found that.)
#[test]
fn quantifiers_over_every_shape_share_only_what_is_alike() {
    let shapes: &[(&str, serde_json::Value)] = &[
        (
            "strings",
            serde_json::json!({"type": "array", "items": {"type": "string"}}),
        ),
        (
            "bounded strings",
            serde_json::json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20}}),
        ),
        (
            "map of strings",
            serde_json::json!({"type": "object", "additionalProperties": {"type": "string"}}),
        ),
        (
            "objects",
            serde_json::json!({"type": "array", "maxItems": 50, "items": {"type": "object",
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}}}}}),
        ),
        (
            "lists of lists",
            serde_json::json!({"type": "array", "items": {"type": "array", "maxItems": 4, "items": {"type": "string"}}}),
        ),
        (
            "int-or-strings",
            serde_json::json!({"type": "array", "maxItems": 5, "items": {"x-kubernetes-int-or-string": true, "maxLength": 9}}),
        ),
    ];
    let bodies: &[&str] = &[
        "x.size() < 10",
        "x.matches('^[a-z]+$')",
        "matches(x, '^[a-z]{1,5}$')",
        "x.startsWith('a') || x.endsWith('z')",
        "x.contains('-') && x.lowerAscii() == x",
        "x.indexOf('a') >= 0",
        "string(x).size() > 0",
        "x + 'suffix' != ''",
        "x.find('[0-9]+') != ''",
        "isURL(x) && url(x).getHost() != ''",
        "!format.dns1123Label().validate(x).hasValue()",
        "isQuantity(x) && quantity(x).isLessThan(quantity('1Gi'))",
        "x.name.size() < 64 && x.port > 0",
        "x.tags.all(t, t.size() < 8)",
        "x.tags.exists(t, t.matches('^a'))",
        "x.size() > 0 && x.exists(y, y.size() > 1)",
        "type(x) == int || x.size() < 4",
        "self.exists_one(y, y == x)",
    ];
    let singles = estimators(Distribution::Kubernetes);
    let range = RangeEstimator::new(estimators(Distribution::Kubernetes));
    let catalog = SchemaCatalog::new();
    let mut compared = 0;
    for (shape, schema) in shapes {
        for body in bodies {
            for q in ["all", "exists", "exists_one"] {
                let rule = format!("self.{q}(x, {body})");
                let mut node = schema.clone();
                node["x-kubernetes-validations"] = serde_json::json!([{"rule": rule}]);
                let crd = serde_json::json!({
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": "things.example.com"},
                    "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "things", "kind": "Thing"},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                "spec": {"type": "object", "properties": {"l": node}}}}}}]}
                });
                let ranged = range
                    .estimate_each(&crd, &catalog, |e, s| e.estimate_shared(s, "q", &catalog))
                    .expect("a CRD");
                for (e, r) in singles.iter().zip(&ranged) {
                    let own = e
                        .estimate_shared(&Shared::new(&crd), "q", &catalog)
                        .unwrap();
                    compared += 1;
                    assert_eq!(
                        serde_json::to_value(&own).unwrap(),
                        serde_json::to_value(r).unwrap(),
                        "{shape}: `{rule}` on 1.{}: the shared report differs from the minor's own",
                        e.kubernetes_version().minor
                    );
                }
            }
        }
    }
    assert!(compared > 2000, "{compared}");
}

/// Over the public corpus (CRDs, Validating and MutatingAdmissionPolicies; skipped when absent
/// unless `CELCOST_REQUIRE_CORPUS` is set), every minor's report from the range of all minors
/// equals that minor's own estimate, field for field: the corpus is what the sharing rules
/// (reworded errors, straight-line CEL across the cost algorithms, what the minors say of serving
/// a MutatingAdmissionPolicy's version) were drawn from.
#[test]
fn the_corpus_shares_only_what_is_alike() {
    let Some(corpus) = common::corpus_dir() else {
        if std::env::var("CELCOST_REQUIRE_CORPUS").is_ok() {
            panic!("../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        }
        eprintln!("SKIPPED: ../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        return;
    };
    let mut files = Vec::new();
    for sub in ["crds", "vaps", "maps"] {
        common::files_under(&corpus.join(sub), &mut files);
    }
    let singles = estimators(Distribution::Kubernetes);
    let range = RangeEstimator::new(estimators(Distribution::Kubernetes));
    let catalog = SchemaCatalog::new();
    let (mut compared, mut copies) = (0, 0);
    for o in objects_in(&files) {
        let Some(ranged) = range.estimate_each(&o.value, &catalog, |e, s| {
            e.estimate_shared(s, &o.source, &catalog)
        }) else {
            continue;
        };
        for (e, r) in singles.iter().zip(&ranged) {
            let own = e
                .estimate_shared(&Shared::new(&o.value), &o.source, &catalog)
                .unwrap();
            compared += 1;
            assert_eq!(
                serde_json::to_value(&own).unwrap(),
                serde_json::to_value(r).unwrap(),
                "{} on 1.{}: the shared report differs from the minor's own",
                o.source,
                e.kubernetes_version().minor
            );
        }
        copies += ranged
            .windows(2)
            .filter(|w| {
                serde_json::to_value(&w[0].schemas).ok() == serde_json::to_value(&w[1].schemas).ok()
            })
            .count();
    }
    let taken = range.taken();
    println!(
        "corpus: {compared} minor reports equal their own ({copies} consecutive pairs alike); \
         {} rule compilations and {} type checks taken from another minor's",
        taken.compilations, taken.checks
    );
    assert!(compared > 3000, "{compared}");
    // The reports compared were made with rules compiled on one minor standing for others'.
    assert!(taken.compilations > 1000 && taken.checks > 100, "{taken:?}");
}

/// Errors whose words a minor decides when it makes them (a detail that repeats its field before
/// 1.34, the policy compiler's output-type message from 1.32, how cel-go names the optional type)
/// or when it renders them: a report is shared only between minors that word its errors alike,
/// and some are shared (a report's errors depend only on the rules its estimate consulted).
#[test]
fn reports_with_errors_are_shared_only_between_minors_that_word_them_alike() {
    let objects = [
        // A CRD rule's fieldPath that names no field: "fieldPath must be a valid path" before
        // 1.34, "must be a valid path" after.
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.a == 'x'"
              fieldPath: ".nope"
            properties:
              a: {type: string, maxLength: 10}
"#,
        // A policy with an owner reference without uid, a bad variable name and expressions of
        // the wrong output type, one of them optional.
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: p
  ownerReferences: [{apiVersion: v1, kind: X, name: y, uid: ""}]
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  variables:
  - name: "bad-name"
    expression: "1"
  validations:
  - expression: "1 + 1"
  - expression: "optional.of(1)"
"#,
        // Only an owner reference without uid: the same words from 1.30 to 1.33.
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: q
  ownerReferences: [{apiVersion: v1, kind: X, name: y, uid: ""}]
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
"#,
        // A MutatingAdmissionPolicy that no minor before 1.36 serves, with the same error.
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: m
  ownerReferences: [{apiVersion: v1, kind: X, name: y, uid: ""}]
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/metadata/labels/a', value: 'b'}]"
"#,
    ];
    let catalog = SchemaCatalog::new();
    let (mut compared, mut estimates, mut with_errors) = (0usize, 0usize, 0usize);
    for d in [Distribution::Kubernetes, Distribution::OpenShift] {
        let singles = estimators(d);
        let range = RangeEstimator::new(estimators(d));
        for text in objects {
            let v: serde_json::Value = serde_yaml_ng::from_str(text).unwrap();
            let made = std::cell::Cell::new(0usize);
            let ranged = range
                .estimate_each(&v, &catalog, |e, s| {
                    made.set(made.get() + 1);
                    e.estimate_shared(s, "t.yaml", &catalog)
                })
                .unwrap();
            estimates += made.get();
            for (e, r) in singles.iter().zip(&ranged) {
                let own = e
                    .estimate_shared(&Shared::new(&v), "t.yaml", &catalog)
                    .unwrap();
                compared += 1;
                with_errors += usize::from(!own.errors.is_empty());
                assert_eq!(
                    serde_json::to_value(&own).unwrap(),
                    serde_json::to_value(r).unwrap(),
                    "{d:?} 1.{}: the shared report differs from the minor's own\n{text}",
                    e.kubernetes_version().minor
                );
            }
        }
    }
    println!("{compared} reports ({with_errors} with errors) from {estimates} estimates");
    assert_eq!(with_errors, compared, "every report has errors");
    assert!(
        estimates < compared,
        "no report with errors was shared: {estimates} estimates for {compared} reports"
    );
}

/// Across the parser options and cel-go estimator of 1.32 and 1.33, a range estimates once what
/// the estimate shows both make alike (a comprehension both estimators cost alike, a parse no
/// option changes) and again what they may not (a two-variable macro, a `cel.bind` the older
/// estimator costs as a comprehension); every shared report equals the minor's own.
#[test]
fn what_the_estimate_consulted_decides_what_is_shared() {
    let minors: Vec<Estimator> = KUBERNETES
        .iter()
        .filter(|m| matches!(m.kubernetes.minor, 32 | 33))
        .map(Estimator::for_minor)
        .collect();
    let singles: Vec<Estimator> = KUBERNETES
        .iter()
        .filter(|m| matches!(m.kubernetes.minor, 32 | 33))
        .map(Estimator::for_minor)
        .collect();
    let range = RangeEstimator::new(minors);
    let catalog = SchemaCatalog::new();
    let cases: &[(&str, usize)] = &[
        ("self.items.all(i, i.name.size() < 64)", 1),
        ("self.items.exists(i, i.name == 'a')", 1),
        ("self.items.all(n, i, i.name.size() < 64)", 2),
        ("cel.bind(xs, self.items, xs.all(i, i.name == 'a'))", 2),
    ];
    for (rule, estimates) in cases {
        let crd = celcost::fixtures::widgets(serde_json::json!({
            "type": "object",
            "properties": {"spec": {"type": "object",
                "x-kubernetes-validations": [{"rule": rule}],
                "properties": {"items": {"type": "array", "maxItems": 20, "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "maxLength": 63}}}}}}},
        }));
        let made = std::cell::Cell::new(0);
        let ranged = range
            .estimate_each(&crd, &catalog, |e, s| {
                made.set(made.get() + 1);
                e.estimate_shared(s, "w", &catalog)
            })
            .unwrap();
        assert_eq!(
            made.get(),
            *estimates,
            "{rule}: estimates for 1.32 and 1.33"
        );
        for (e, r) in singles.iter().zip(&ranged) {
            let own = e.estimate_with(&crd, "w", &catalog).unwrap();
            assert_eq!(
                serde_json::to_value(&own).unwrap(),
                serde_json::to_value(r).unwrap(),
                "{rule} on 1.{}: the shared report differs from the minor's own",
                e.kubernetes_version().minor
            );
        }
    }
}

/// `estimate_alike_given` (what the suggestion search's verifications skip on another minor):
/// over the corpus's CRDs and every pair of minors, where it says two minors estimate an object
/// alike given what the first's estimate consulted, their estimates agree — every schema's rules
/// and total, the verdict and the number of errors — and it says so of at least every pair
/// `estimate_alike` (which presumes what the object's words may reach) does.
#[test]
fn alike_after_an_estimate_is_alike() {
    let Some(corpus) = common::corpus_dir() else {
        eprintln!("SKIPPED: ../shared/corpus not found beside the checkout (set CELCOST_CORPUS)");
        return;
    };
    let mut files = Vec::new();
    common::files_under(&corpus.join("crds"), &mut files);
    let range = RangeEstimator::new(estimators(Distribution::Kubernetes));
    let es = range.estimators();
    let catalog = SchemaCatalog::builtin();
    let (mut after, mut presumed, mut pairs) = (0, 0, 0);
    for o in objects_in(&files) {
        let reports: Vec<_> = es
            .iter()
            .map(|e| e.estimate_crd(&o.value, &o.source))
            .collect();
        for (i, a) in es.iter().enumerate() {
            for (j, b) in es.iter().enumerate().filter(|(j, _)| *j != i) {
                pairs += 1;
                let consulted = reports[i].made_by.consulted.rules;
                let alike = range.estimate_alike_given(a, b, &o.value, catalog, Some(consulted));
                let was = range.estimate_alike(a, b, &o.value, catalog);
                assert!(!was || alike, "{}: alike presumed, not after", o.source);
                presumed += usize::from(was);
                if !alike {
                    continue;
                }
                after += 1;
                let (ra, rb) = (&reports[i], &reports[j]);
                assert_eq!(
                    serde_json::to_value(&ra.schemas).unwrap(),
                    serde_json::to_value(&rb.schemas).unwrap(),
                    "{} on 1.{} and 1.{}: alike, but the schemas differ",
                    o.source,
                    a.kubernetes_version().minor,
                    b.kubernetes_version().minor
                );
                assert_eq!(ra.valid, rb.valid, "{}", o.source);
                assert_eq!(ra.errors.len(), rb.errors.len(), "{}", o.source);
            }
        }
    }
    println!("alike after an estimate: {after} of {pairs} ordered pairs (presumed: {presumed})");
    assert!(after > presumed, "{after} vs {presumed}");
}

/// The objects of `files` (unreadable files and documents left out), one file read at a time.
fn objects_in(files: &[std::path::PathBuf]) -> impl Iterator<Item = celcost::input::FoundObject> {
    files.iter().flat_map(|f| {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let source = f.display().to_string();
        parse_documents(&text)
            .into_iter()
            .filter_map(|doc| doc.value.ok())
            .flat_map(|v| objects_of(&source, v))
            .collect::<Vec<_>>()
    })
}
