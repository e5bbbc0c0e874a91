//! The per-minor rules (`celcost::cel::minor`), each shown by an input whose result changes at
//! the minor (and, where OpenShift's build differs, at its carry). Expected numbers come from
//! the cost model's version history, the corpus's per-minor values and the arithmetic of each
//! minor's code; see the comments.

use celcost::Estimator;
use celcost::cel::decls::Version;
use celcost::cel::minor::{Distribution, Minor};
use celcost::report::{ExpressionReport, RuleReport};
use serde_json::{Value, json};

const MAX: u64 = u64::MAX;
/// `factor(MAX, 0.1)`: cel-go's size-based equality of two operands of unknown size.
const UNKNOWN_EQUALITY: u64 = 1_844_674_407_370_955_264;

fn estimator(minor: u32, d: Distribution) -> Estimator {
    Estimator::for_minor(Minor::of_distribution(Version::new(1, minor), d).unwrap())
}

fn upstream(minor: u32) -> Estimator {
    estimator(minor, Distribution::Kubernetes)
}

fn openshift(minor: u32) -> Estimator {
    estimator(minor, Distribution::OpenShift)
}

/// A policy with one validation; its (untyped, upstream) estimate.
fn policy_expression(e: &Estimator, expression: &str) -> ExpressionReport {
    let p = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": expression}]
        }
    });
    let r = e.estimate(&p, "test").unwrap();
    r.expressions
        .into_iter()
        .find(|x| x.field_path == "spec.validations[0].expression")
        .unwrap()
}

fn policy_cost(e: &Estimator, expression: &str) -> u64 {
    let x = policy_expression(e, expression);
    assert_eq!(x.compile_error, None, "`{expression}` should compile");
    x.max_cost.unwrap()
}

/// One rule on `spec` (schema `spec`) of a minimal CRD.
fn rule(e: &Estimator, mut spec: Value, rule: &str) -> RuleReport {
    spec["x-kubernetes-validations"] = json!([{"rule": rule}]);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]
        }
    });
    let r = e.estimate(&crd, "test").unwrap();
    r.schemas
        .into_iter()
        .flat_map(|s| s.rules)
        .find(|r| r.path == "^.spec")
        .unwrap()
}

#[test]
fn iteration_variables_have_no_size_before_cel_go_0_23() {
    // The corpus's kubescape C-0041 shape: 1.32 charges each `object.kind != kind` as an
    // equality of unknown sizes, 1.33 sizes `kind` from the literal (longest 'Deployment' = 10).
    let e = "['Deployment', 'ReplicaSet', 'Job'].all(kind, object.kind != kind)";
    for minor in 30..=32 {
        let c = policy_cost(&upstream(minor), e);
        assert!(c > 3 * UNKNOWN_EQUALITY, "1.{minor}: {c}");
    }
    for minor in 33..=36 {
        assert!(policy_cost(&upstream(minor), e) < 100, "1.{minor}");
    }
}

#[test]
fn an_optmap_costs_the_same_as_a_comprehension_and_as_a_bind() {
    // The cost model's §11 says 17 on 1.32 and 18 on 1.33. By cel-go 0.22's code the bind is a
    // comprehension over `[]`: its range (10), accumulator init `.value()` (2), result (2) and
    // 0 × (step + loop) = 14, as 0.23's `costBind` gives; `optional.of` 1, `hasValue` 1 + 1,
    // `?:` adds nothing, `optional.none()` 1 → 18 on both.
    let e = "optional.of('a').optMap(v, v == 'value').hasValue()";
    assert_eq!(policy_cost(&upstream(32), e), 18);
    assert_eq!(policy_cost(&upstream(33), e), 18);
}

#[test]
fn kubernetes_types_are_compared_at_a_fixed_cost_from_1_32() {
    // library/cost.go 1.32: `_==_` on CIDRs costs 1; before, cel-go's size-based equality of two
    // call results without sizes: factor(MAX, 0.1), plus the two conversions of 1 each.
    let e = "cidr('10.0.0.0/8') == cidr('10.0.0.0/8')";
    assert_eq!(policy_cost(&upstream(31), e), UNKNOWN_EQUALITY + 2);
    assert_eq!(policy_cost(&upstream(32), e), 3);
    assert_eq!(policy_cost(&upstream(36), e), 3);
}

#[test]
fn url_results_have_a_size_from_1_32() {
    // `url('https://a.b')` (11 characters): 2 per conversion; from 1.32 its result has size 11,
    // so `_==_` on URLs costs factor([1, 11], 0.1) = 2.
    let e = "url('https://a.b') == url('https://a.b')";
    assert_eq!(policy_cost(&upstream(31), e), 4 + UNKNOWN_EQUALITY);
    assert_eq!(policy_cost(&upstream(32), e), 6);
    // The size reaches size-based callers too.
    let s = "url('https://a.b').getHost() == 'a.b' && url('https://a.b') == url('https://a.b')";
    assert!(policy_cost(&upstream(32), s) < 100);
}

#[test]
fn libraries_follow_each_minors_base_environment() {
    let compiles = |e: &Estimator, x: &str| policy_expression(e, x).compile_error.is_none();
    // IP: upstream 1.30 introduces it at 1.30 (not in the 1.29 environment of new
    // expressions); OpenShift's 1.30 at 1.27.
    let ip = "isIP('10.0.0.1')";
    assert!(!compiles(&upstream(30), ip));
    assert!(compiles(&openshift(30), ip));
    assert!(compiles(&upstream(31), ip));
    // Format: absent from upstream 1.30, introduced at 1.31 upstream (new expressions from
    // 1.32), at 1.30 in OpenShift (new expressions from 1.31).
    let f = "!format.dns1123Label().validate('a').hasValue()";
    assert!(!compiles(&upstream(30), f));
    assert!(!compiles(&openshift(30), f));
    assert!(!compiles(&upstream(31), f));
    assert!(compiles(&openshift(31), f));
    assert!(compiles(&upstream(32), f));
    // Optional library version 2 comes with cel-go 0.23.
    let first = "[1, 2].first().hasValue()";
    assert!(!compiles(&upstream(32), first));
    assert!(compiles(&upstream(33), first));
    // Two-variable comprehensions: introduced 1.32, new expressions from 1.33.
    let two = "{'a': 1}.all(k, v, v > 0)";
    assert!(!compiles(&upstream(32), two));
    assert!(compiles(&upstream(33), two));
    // Semver: introduced 1.33; ext.Lists v3: 1.34.
    assert!(!compiles(&upstream(33), "isSemver('1.0.0')"));
    assert!(compiles(&upstream(34), "isSemver('1.0.0')"));
    assert!(!compiles(&upstream(34), "[2, 1].sort() == [1, 2]"));
    assert!(compiles(&upstream(35), "[2, 1].sort() == [1, 2]"));
}

#[test]
fn format_calls_are_checked_statically_from_cel_go_0_20() {
    let e = "'%d'.format(['x']) == '1'";
    let on = |e: &Estimator| policy_expression(e, "'%d'.format(['x']) == '1'").compile_error;
    assert_eq!(on(&upstream(30)), None, "{e}");
    let err = on(&upstream(31)).unwrap();
    assert!(
        err.contains("decimal clause can only be used on integers"),
        "{err}"
    );
}

#[test]
fn int_or_string_max_length_from_1_34_upstream_and_1_33_openshift() {
    // The corpus's clustermonitorings shape: an int-or-string with maxLength 20.
    let spec = json!({"x-kubernetes-int-or-string": true, "maxLength": 20,
        "anyOf": [{"type": "integer"}, {"type": "string"}]});
    let r = "quantity(self).isGreaterThan(quantity('0'))";
    let unbounded = 314_576; // factor(3,145,726, 0.1) + 1 + 1 (the literal) + 1
    let bounded = 11; // factor(80, 0.1) + 1 + 1 + 1
    assert_eq!(rule(&upstream(33), spec.clone(), r).max_cost, unbounded);
    assert_eq!(rule(&openshift(33), spec.clone(), r).max_cost, bounded);
    assert_eq!(rule(&upstream(34), spec.clone(), r).max_cost, bounded);
    assert_eq!(rule(&openshift(32), spec, r).max_cost, unbounded);
}

#[test]
fn comprehension_results_are_sized_by_their_range_before_cel_go_0_23() {
    // Before 0.23 every comprehension's result has the range's size (bounded here by maxItems),
    // from 0.23 only those with a literal accumulator: `exists` has a bool one (size 1), and
    // `size()` of its result is not a sized read. Either way the chained call must stay bounded.
    let spec = json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 10,
        "items": {"type": "string", "maxLength": 5}}}});
    let r = "self.l.map(x, x).exists(v, v == 'b1')";
    for minor in [30, 32, 33, 36] {
        let c = rule(&upstream(minor), spec.clone(), r).max_cost;
        assert!(c > 0 && c < MAX / 2, "1.{minor}: {c}");
    }
}

#[test]
fn old_minors_name_their_build_in_reports() {
    let r = upstream(31)
        .estimate(
            &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "x.y"}, "spec": {}}),
            "t",
        )
        .unwrap();
    assert_eq!(r.kubernetes_version, "v1.31");
}

#[test]
fn the_operator_estimates_its_minor_with_the_next_beside_it() {
    use celcost::controller::{CostEstimator, WithNextMinor};
    use celcost::schema::catalog::SchemaCatalog;
    let pair = WithNextMinor {
        current: upstream(31),
        next: Some(upstream(32)),
        suggest: None,
    };
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "string", "maxLength": 10,
                    "x-kubernetes-validations": [
                        {"rule": "!format.dns1123Label().validate(self).hasValue()"}]}}}}}]
        }
    });
    let r = pair.estimate(&crd, &SchemaCatalog::new()).unwrap();
    assert_eq!(r.kubernetes_version, "v1.31");
    assert!(
        !r.valid,
        "upstream 1.31 has no Format library for new expressions"
    );
    let m = r.by_version.unwrap();
    assert_eq!(m.oldest_accepting.as_deref(), Some("v1.32"));
    assert_eq!(
        m.changes.iter().filter(|c| c.unit.contains("[0]")).count(),
        1
    );
    assert_eq!(pair.kubernetes_version(), Version::new(1, 31));
}

#[test]
fn wrong_output_types_are_worded_by_minor() {
    let err = |minor: u32| {
        let e = upstream(minor);
        let p = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": {"validations": [{"expression": "1 + 1"}]}
        });
        e.estimate(&p, "t").unwrap().errors
    };
    let has = |errs: &[String], s: &str| errs.iter().any(|e| e.ends_with(s));
    assert!(
        has(&err(31), "\"1 + 1\": must evaluate to bool"),
        "{:?}",
        err(31)
    );
    assert!(
        has(&err(32), "\"1 + 1\": must evaluate to bool but got int"),
        "{:?}",
        err(32)
    );
}

#[test]
fn optional_macros_check_a_shared_receiver_twice_before_cel_go_0_22() {
    // cel-go before v0.22 puts the same receiver nodes in `r.hasValue()` and `r.value()`: a
    // receiver typed with a fresh type parameter fails (differential oracle of 1.30/1.31).
    for e in [
        "optional.none().optMap(v, v == 'value').hasValue()",
        "optional.none().optFlatMap(v, optional.of(v)).hasValue()",
        "optional.of([]).optMap(v, size(v)).hasValue()",
    ] {
        for minor in [30, 31] {
            let err = policy_expression(&upstream(minor), e).compile_error;
            assert!(
                err.as_deref()
                    .is_some_and(|x| x.contains("incompatible type already exists")),
                "1.{minor} `{e}`: {err:?}"
            );
        }
        assert_eq!(
            policy_expression(&upstream(32), e).compile_error,
            None,
            "{e}"
        );
    }
    // A concrete receiver is fine everywhere.
    assert_eq!(
        policy_cost(
            &upstream(30),
            "optional.of('a').optMap(v, v == 'value').hasValue()"
        ),
        18
    );
}

#[test]
fn max_length_times_four_wraps_as_go_int64() {
    // `zeroIfNegative(maxLength) * 4` in int64 (differential oracle, every minor): 2^62 gives a
    // size of 0, 2^62 - 1 a size of 2^64 - 4.
    let r = "self.matches('^a')";
    let s = |m: i64| json!({"type": "string", "maxLength": m});
    assert_eq!(rule(&upstream(36), s(1 << 62), r).max_cost, 2);
    assert_eq!(
        rule(&upstream(36), s((1 << 62) - 1), r).max_cost,
        1_844_674_407_370_955_265
    );
    let ios = json!({"x-kubernetes-int-or-string": true, "maxLength": 1i64 << 62,
        "anyOf": [{"type": "integer"}, {"type": "string"}]});
    assert_eq!(
        rule(&upstream(34), ios, "string(self).size() < 3").max_cost,
        4
    );
}

#[test]
fn qualified_name_lengths_in_characters_before_1_35() {
    let key = "k".repeat(70);
    let errs = |minor: u32| {
        let p = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": {"validations": [{"expression": "true", "reason": "Unauthorized"}],
                "auditAnnotations": [{"key": key, "valueExpression": "'x'"}]}
        });
        upstream(minor).estimate(&p, "t").unwrap().errors
    };
    let (old, new) = (errs(34), errs(35));
    assert!(
        old.iter()
            .any(|e| e.ends_with("name part must be no more than 63 characters")),
        "{old:?}"
    );
    assert!(
        new.iter()
            .any(|e| e.ends_with("name part must be no more than 63 bytes")),
        "{new:?}"
    );
    // `Unauthorized` is no reason a validation may give, in any minor.
    assert!(
        new.iter().any(
            |e| e.contains("reason: Unsupported value: \"Unauthorized\"")
                && e.ends_with(
                    "supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\""
                )
        ),
        "{new:?}"
    );
}
