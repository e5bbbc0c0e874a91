//! Rules on defaults over every library of the environment, as the API server words its
//! answers: each case is one the Kubernetes v1.36.2 API server answered so (`kubectl create
//! --dry-run=server`, the case generators of issue 45), worked out from the upstream functions
//! named in each group. The error sets compare exactly; the cost errors the rest of the schema
//! would have are gone once a default is refused (`validateCustomResourceDefinitionValidation`
//! makes no `CELSchemaContext` then), and so is its total.

use serde_json::{Value, json};

use crate::Estimator;

/// A CRD with one property `f` (the node given, with its default and rules) and, beside it, a
/// property `g` whose rule's estimate is over the per-rule limit and the total.
fn with(node: Value) -> Value {
    super::tests::crd_of(json!({"type": "object", "properties": {
        "f": node,
        "g": {"type": "array", "items": {"type": "string"},
              "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x.matches(y)))"}]}}}))
}

const F: &str = "spec.validation.openAPIV3Schema.properties[f].default";

fn errors_of(node: Value) -> (Vec<String>, Vec<String>, u64) {
    let r = Estimator::new(crate::cel::decls::Version::new(1, 36))
        .estimate(&with(node), "test")
        .unwrap();
    let total = r.schemas.iter().map(|s| s.total_cost).sum();
    (r.errors, r.notes, total)
}

/// Each (node type, default, rule, the API server's detail after `<f>.default: `).
fn check(cases: &[(Value, Value, &str, &str)]) {
    for (schema, default, rule, want) in cases {
        let mut node = schema.clone();
        node["default"] = default.clone();
        node["x-kubernetes-validations"] = json!([{"rule": rule}]);
        let (errors, notes, total) = errors_of(node);
        assert_eq!(errors, [format!("{F}: {want}")], "{rule} on {default}");
        assert!(notes.is_empty(), "{rule}: {notes:?}");
        // The refused default leaves the schema uncompiled: no cost error, no total.
        assert_eq!(total, 0, "{rule}");
    }
}

fn string() -> Value {
    json!({"type": "string"})
}

/// The strings extension (`ext/strings.go`) and the regex library (`library/regex.go`).
#[test]
fn strings_and_regexes() {
    check(&[
        (
            string(),
            json!("abc"),
            "self.charAt(5) == ''",
            "Invalid value: \"string\": index out of range: 5 evaluating rule: self.charAt(5) == ''",
        ),
        (
            string(),
            json!("é😀x"),
            "self.substring(2, 1) == ''",
            "Invalid value: \"string\": invalid substring range. start: 2, end: 1 evaluating rule: self.substring(2, 1) == ''",
        ),
        (
            string(),
            json!("é😀x"),
            "self.indexOf('b') == 1",
            "Invalid value: \"é😀x\": failed rule: self.indexOf('b') == 1",
        ),
    ]);
    check(&[
        (
            string(),
            json!("a"),
            "self.find('[0-9]+') == '10'",
            "Invalid value: \"a\": failed rule: self.find('[0-9]+') == '10'",
        ),
        (
            string(),
            json!("é😀x"),
            "strings.quote(self) == '\"abc\"'",
            "Invalid value: \"é😀x\": failed rule: strings.quote(self) == '\"abc\"'",
        ),
    ]);
}

/// Quantities (`library/quantity.go` over apimachinery's `ParseQuantity`), IPs and CIDRs
/// (`library/ip.go`, `library/cidr.go` over Go's `net/netip`), semvers (`semverlib.go`).
#[test]
fn kubernetes_types() {
    check(&[
        (
            string(),
            json!("a"),
            "quantity(self).isInteger()",
            "Invalid value: \"string\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: quantity(self).isInteger()",
        ),
        (
            string(),
            json!("1.2.3"),
            "ip(self).family() == 4",
            "Invalid value: \"string\": IP Address \"1.2.3\" parse error during conversion from string: ParseAddr(\"1.2.3\"): IPv4 address too short evaluating rule: ip(self).family() == 4",
        ),
        (
            string(),
            json!("a"),
            "cidr(self).prefixLength() == 16",
            "Invalid value: \"string\": network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"a\"): no '/' evaluating rule: cidr(self).prefixLength() == 16",
        ),
        (
            string(),
            json!("é😀x"),
            "isCIDR(self)",
            "Invalid value: \"é😀x\": failed rule: isCIDR(self)",
        ),
    ]);
}

/// A `dyn` value (int-or-string) at runtime: `refQualify` of a scalar, `evalBinary`'s and the
/// receivers' `no such overload`, a comprehension over what is no iterable (`evalFold`).
#[test]
fn dynamic_values() {
    let ios = json!({"x-kubernetes-int-or-string": true});
    check(&[
        (
            ios.clone(),
            json!("5%"),
            "has(self.a)",
            "Invalid value: \"5%\": failed rule: has(self.a)",
        ),
        (
            ios.clone(),
            json!(5),
            "oldSelf <= '1h'",
            "Invalid value: \"\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: oldSelf <= '1h'",
        ),
        (
            ios.clone(),
            json!(5),
            "size(self) > 0",
            "Invalid value: \"\": 'no such overload: size': call arguments did not match a supported operator, function or macro signature for rule: size(self) > 0",
        ),
        (
            ios.clone(),
            json!(5),
            "self.endsWith('%')",
            "Invalid value: \"\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.endsWith('%')",
        ),
        (
            ios.clone(),
            json!("a"),
            "-self < 0",
            "Invalid value: \"\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: -self < 0",
        ),
        (
            ios,
            json!("a"),
            "self.?b.orValue('').exists_one(x, x == 'a')",
            "Invalid value: \"\": got 'types.String', expected iterable type evaluating rule: self.?b.orValue('').exists_one(x, x == 'a')",
        ),
    ]);
}

/// cel-go's optimizer (`decOptimize`, `OptOptimize` in the Kubernetes environment) evaluates a
/// conversion of a constant when it plans the program: its failure is the rule's compile error.
#[test]
fn constant_conversions_fail_when_planned() {
    check(&[(
        string(),
        json!("abc"),
        "bool(string('é😀'))",
        "Invalid value: \"string\": rule compile error: program instantiation failed: type conversion error from 'string' to 'bool'",
    )]);
}

/// A rule certainly over the per-call limit (`CostTrackerLimit`: `operation cancelled`) is
/// the API server's error, and nothing after it is validated (`validate` returns on a
/// negative remaining budget).
#[test]
fn per_call_limit_ends_the_validation_of_defaults() {
    let long: Vec<String> = (0..400).map(|_| "x".repeat(50)).collect();
    let rule = "self.all(x, self.all(y, x.contains(y)))";
    let (errors, notes, total) = errors_of(json!({
        "type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 100},
        "default": long,
        "x-kubernetes-validations": [{"rule": rule}, {"rule": "self.size() > 1000"}]}));
    assert_eq!(
        errors,
        [format!(
            "{F}: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"
        )]
    );
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(total, 0);
}

/// A messageExpression's value, and its failures: the rule's message (`evalMessageExpression`).
#[test]
fn message_expressions_and_reasons() {
    let rule = "self == 'x'";
    for (me, reason, want) in [
        ("'bad ' + self", None, "Invalid value: \"abc\": bad abc"),
        (
            "self.size() > 0 ? 'long' : ''",
            None,
            "Invalid value: \"abc\": long",
        ),
        (
            "'a\\nb'",
            None,
            "Invalid value: \"abc\": failed rule: self == 'x'",
        ),
        (
            "string(1/0)",
            None,
            "Invalid value: \"abc\": failed rule: self == 'x'",
        ),
        ("  'sp'  ", Some("FieldValueForbidden"), "Forbidden: sp"),
        (
            "'m: ' + self",
            Some("FieldValueRequired"),
            "Required value: m: abc",
        ),
        (
            "'m'",
            Some("FieldValueDuplicate"),
            "Duplicate value: \"abc\"",
        ),
    ] {
        let mut v = json!({"rule": rule, "messageExpression": me});
        if let Some(r) = reason {
            v["reason"] = json!(r);
        }
        let (errors, notes, _) =
            errors_of(json!({"type": "string", "default": "abc", "x-kubernetes-validations": [v]}));
        assert_eq!(errors, [format!("{F}: {want}")], "{me}");
        assert!(notes.is_empty(), "{me}: {notes:?}");
    }
}

/// A list of `x-kubernetes-list-type: set` compares regardless of order on the API server
/// (`unstructuredSetList`): celcost does not guess it, says so, and leaves the verdict unknown.
#[test]
fn set_lists_compared_are_not_guessed() {
    let (_, notes, _) = errors_of(json!({
        "type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set",
        "default": ["a", "b"], "x-kubernetes-validations": [{"rule": "self != ['b', 'a']"}]}));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("verdict unknown"), "{notes:?}");
}
