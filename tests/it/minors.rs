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
    let crd = crd_with_root(json!({"type": "object", "properties": {"spec": spec}}));
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

// ------------------------------------------------------------------------------------------------
// Kubernetes 1.37 (cel-go v0.29.2, compatibility 1.36): each delta with the upstream test it is
// taken from.

/// A CRD whose root schema is `root` (rules on the root, where `metadata` is seen).
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

fn root_rules(e: &Estimator, root: Value) -> (celcost::report::ObjectReport, Vec<RuleReport>) {
    let r = e.estimate(&crd_with_root(root), "test").unwrap();
    let rules = r.schemas.iter().flat_map(|s| s.rules.clone()).collect();
    (r, rules)
}

/// cel-expr/cel-go#1350 (cel-go v0.29, Kubernetes 1.37): `cost(matches(input, regex)) ==
/// cost(input.matches(regex))`; cel-go's `checker/cost_test.go` vector for the receiver form is
/// `input.matches('[0-9]')` on an input of size 500: 103. Before, the global form cost 1 + its
/// arguments. The runtime side: `runtime_cost::tests::affixes_and_global_matches_by_minor`.
#[test]
fn the_global_matches_costs_as_the_receiver_form_from_1_37() {
    // maxLength 125: 500 bytes.
    let spec = json!({"type": "string", "maxLength": 125});
    for (minor, global) in [(36, 2), (37, 103)] {
        assert_eq!(
            rule(&upstream(minor), spec.clone(), "self.matches('[0-9]')").max_cost,
            103
        );
        assert_eq!(
            rule(&upstream(minor), spec.clone(), "matches(self, '[0-9]')").max_cost,
            global,
            "1.{minor}"
        );
    }
    // The shape: a duration (Gateway API's pattern, 29 characters) without maxLength:
    // 1 + ceil((3,145,726 + 1) × 0.1) × ceil(29 × 0.25) = 1 + 314,573 × 8.
    let r = "matches(self, '^([0-9]{1,5}(h|m|s|ms)){1,4}$')";
    let spec = json!({"type": "string"});
    assert_eq!(rule(&upstream(36), spec.clone(), r).max_cost, 2);
    assert_eq!(rule(&upstream(37), spec.clone(), r).max_cost, 2_516_585);
    // OpenShift's 1.37 is upstream's.
    assert_eq!(rule(&openshift(37), spec, r).max_cost, 2_516_585);
}

/// apiextensions-apiserver 1f3023483 (`TestWithTypeAndObjectMetaNameLength`,
/// `TestMetadataNameCostIsBounded` of d8632f631, and the validation test of 7fa420cb1):
/// `metadata.name` is a string of at most 253 characters and `generateName` of 252 (or the
/// schema's smaller `maxLength`), where before they had the request size.
#[test]
fn metadata_names_are_bounded_from_1_37() {
    let with = |rule: &str, metadata: Option<Value>| {
        let mut root = json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}]});
        if let Some(m) = metadata {
            root["properties"] = json!({"metadata": m});
        }
        root
    };
    // TestMetadataNameCostIsBounded: non-zero, at most 10,000.
    for r in [
        "self.metadata.name.contains('x')",
        "self.metadata.generateName.contains('x')",
    ] {
        let (_, rules) = root_rules(&upstream(37), with(r, None));
        assert!(
            rules[0].max_cost > 0 && rules[0].max_cost <= 10_000,
            "{r}: {rules:?}"
        );
        let (_, rules) = root_rules(&upstream(36), with(r, None));
        assert!(rules[0].max_cost > 100_000, "1.36 {r}: {rules:?}");
    }
    // The sizes: contains costs ceil(size × 0.1) × ceil(1 × 0.1) + 3 (self, two selects):
    // 253 × 4 bytes → 102, 252 × 4 → 101; an author's maxLength 10 on name → 4; 1000 → capped.
    let cost = |rule: &str, metadata: Option<Value>| {
        root_rules(&upstream(37), with(rule, metadata)).1[0].max_cost
    };
    assert_eq!(cost("self.metadata.name.contains('x')", None), 105);
    assert_eq!(cost("self.metadata.generateName.contains('x')", None), 104);
    let meta = |name: i64, generate: Option<i64>| {
        let mut props = json!({"name": {"type": "string", "maxLength": name}});
        if let Some(g) = generate {
            props["generateName"] = json!({"type": "string", "maxLength": g});
        }
        Some(json!({"type": "object", "properties": props}))
    };
    assert_eq!(cost("self.metadata.name.contains('x')", meta(10, None)), 7);
    assert_eq!(
        cost("self.metadata.generateName.contains('x')", meta(10, None)),
        104
    );
    assert_eq!(
        cost("self.metadata.name.contains('x')", meta(1000, Some(1000))),
        105
    );
    assert_eq!(
        cost(
            "self.metadata.generateName.contains('x')",
            meta(1000, Some(100))
        ),
        43
    );
    // 7fa420cb1: within the limit on 1.37, over it before.
    let r = "self.metadata.name.contains(self.metadata.name) && self.metadata.generateName.contains(self.metadata.generateName)";
    let (v37, _) = root_rules(&upstream(37), with(r, None));
    assert!(v37.valid, "{:?}", v37.errors);
    let (v36, _) = root_rules(&upstream(36), with(r, None));
    assert!(!v36.valid);
    // Policies are typed by the OpenAPI adaptor, which bounds no name in any minor.
    assert_eq!(
        policy_cost(&upstream(37), "object.metadata.name.contains('x')"),
        policy_cost(&upstream(36), "object.metadata.name.contains('x')")
    );
}

/// k8s.io/apiserver 443aab145: the lists library at version 1 (`includes`) is introduced at 1.37;
/// new expressions of 1.37 are compiled at compatibility 1.36, so only its stored-expressions
/// environment has it (`environment_test.go` `TestBaseEnvironment`: invalid at 1.36 and at the
/// default compatibility version, valid in stored expressions and at 1.37). Its cost is
/// `library/cost.go`'s `indexOf` (`cost_test.go` `TestIncludesCost`).
#[test]
fn includes_is_in_the_stored_environment_of_1_37_only() {
    use celcost::cel::checker::NoTypes;
    use celcost::cel::cost::estimate;
    use celcost::cel::env::Env;
    use celcost::cel::k8s_cost::KubernetesEstimator;
    let e = "[1, 2].includes(2) == true";
    let m36 = Minor::of(Version::new(1, 36)).unwrap();
    let m37 = Minor::of(Version::new(1, 37)).unwrap();
    let compiles = |env: Env| env.compile(e, &[], &NoTypes).is_ok();
    assert!(!compiles(Env::for_minor(m36)));
    assert!(!compiles(Env::stored_for_minor(m36)));
    assert!(!compiles(Env::for_minor(m37)));
    assert!(compiles(Env::stored_for_minor(m37)));
    // A 1.37 policy or CRD rule: undeclared, as for every older minor.
    let err = policy_expression(&upstream(37), "[1, 2].includes(2)")
        .compile_error
        .unwrap();
    assert!(err.contains("undeclared reference to 'includes'"), "{err}");
    // TestIncludesCost, estimated, with its test size estimator (strings and bytes 0..12).
    struct TestSizes;
    impl celcost::cel::k8s_cost::SizeSource for TestSizes {
        fn estimate_size(
            &self,
            node: &celcost::cel::cost::AstNode<'_>,
        ) -> Option<celcost::cel::cost::Size> {
            use celcost::cel::types::Type;
            matches!(node.ty, Type::String | Type::Bytes)
                .then_some(celcost::cel::cost::Size { min: 0, max: 12 })
        }
    }
    let env = Env::stored_for_minor(m37);
    let embedder = KubernetesEstimator {
        sizes: Some(&TestSizes),
        minor: m37,
    };
    let cost = |src: &str| {
        let checked = env.compile(src, &[], &NoTypes).unwrap();
        let c = estimate(&checked, &embedder, env.cost_options());
        (c.min, c.max)
    };
    assert_eq!(cost("[1, 2, 3, 4, 5].includes(3)"), (15, 15));
    assert_eq!(cost("[1.0, 2.0, 3.0, 4.0, 5.0].includes(3.0)"), (15, 15));
    assert_eq!(
        cost("[false, true, false, true, false].includes(true)"),
        (15, 15)
    );
    assert_eq!(
        cost(
            "['012345678901', '012345678901', '012345678901', '012345678901', '012345678901'].includes('x')"
        ),
        (15, 25)
    );
    assert_eq!(
        cost("'01234567890123456789012345678901234567890123456789'.includes('123')"),
        (50, 50)
    );
}

/// cel-expr/cel-go#1300 (v0.28.1): `duration(int)` is no overload any more; 1.37's cel-go v0.29.2
/// refuses it when type-checking (before, only the evaluation failed).
#[test]
fn duration_of_an_int_does_not_compile_from_1_37() {
    let e = "duration(5) == duration('5s')";
    assert_eq!(policy_expression(&upstream(36), e).compile_error, None);
    let err = policy_expression(&upstream(37), e).compile_error.unwrap();
    assert!(
        err.contains("found no matching overload for 'duration' applied to '(int)'"),
        "{err}"
    );
}

/// cel-expr/cel-go#1295 (v0.28.0): the parser reads backtick-quoted field names unless told not
/// to, and Kubernetes does not tell it; before, a backtick was a syntax error.
#[test]
fn quoted_field_names_parse_from_1_37() {
    let spec = json!({"type": "object", "properties": {"max-skew": {"type": "integer"}}});
    let r = "self.`max-skew` <= 5";
    let v36 = rule(&upstream(36), spec.clone(), r);
    let err = v36.compile_error.unwrap();
    assert!(err.contains("unsupported syntax: '`'"), "{err}");
    let v37 = rule(&upstream(37), spec, r);
    // The name as written is no field: the schema's `max-skew` is `max__dash__skew` in CEL.
    let err = v37.compile_error.unwrap();
    assert!(!err.contains("unsupported syntax"), "{err}");
    assert!(err.contains("undefined field 'max-skew'"), "{err}");
    let spec = json!({"type": "object", "properties": {"maxSkew": {"type": "integer"}}});
    let ok = rule(&upstream(37), spec.clone(), "self.`maxSkew` <= 5");
    assert_eq!(ok.compile_error, None);
    assert_eq!(
        ok.max_cost,
        rule(&upstream(37), spec, "self.maxSkew <= 5").max_cost
    );
}

#[test]
fn quantities_cost_1_before_1_30() {
    // `quantity(self)` over an unbounded string: 1 before 1.30 (no Kubernetes estimate, so
    // cel-go's 1 for a call), factor(3,145,726, 0.1) = 314,573 from 1.30.
    let r = "quantity(self).isGreaterThan(quantity('0'))";
    let spec = json!({"type": "string"});
    assert_eq!(rule(&openshift(29), spec.clone(), r).max_cost, 4);
    assert_eq!(rule(&openshift(30), spec, r).max_cost, 314_576);
    // 1.28's new expressions (compatibility 1.27) have no quantity library at all.
    let e = rule(&openshift(28), json!({"type": "string"}), r);
    assert!(
        e.compile_error
            .as_deref()
            .is_some_and(|e| e.contains("undeclared reference to 'quantity'")),
        "{e:?}"
    );
}

#[test]
fn enum_strings_are_sized_by_their_longest_value_from_1_29() {
    let spec = json!({"type": "string", "enum": ["a", "bbb"]});
    let r = "self == oldSelf";
    let small = rule(&upstream(29), spec.clone(), r).max_cost;
    let large = rule(&upstream(28), spec, r).max_cost;
    assert!(small < 10, "{small}");
    assert!(large > 300_000, "{large}");
}

#[test]
fn comprehension_results_have_no_size_before_cel_go_0_17_8() {
    let spec = json!({"type": "array", "maxItems": 5,
        "items": {"type": "string", "maxLength": 5}});
    let r = "self.map(x, x.size()).sum() < 10";
    assert!(rule(&upstream(30), spec.clone(), r).max_cost < 100);
    assert!(rule(&upstream(29), spec, r).max_cost > MAX / 2);
}

#[test]
fn validating_admission_policies_v1_are_not_served_before_1_30() {
    for (minor, served) in [(28, false), (29, false), (30, true)] {
        let x = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": {"validations": [{"expression": "object.spec.replicas > 0"}]}
        });
        let r = upstream(minor).estimate(&x, "t").unwrap();
        let said = r
            .errors
            .iter()
            .any(|e| e.contains("not served before 1.30"));
        assert_eq!(said, !served, "1.{minor}: {:?}", r.errors);
        assert_eq!(r.expressions.is_empty(), !served, "1.{minor}");
        if !served {
            assert!(!r.valid);
            assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
        }
    }
}
