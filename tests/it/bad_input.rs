//! Hostile and broken input: each case gets a clear error naming the file, document, object
//! and field path, and never a panic, a hang or lost reports for the other objects.

use celcost::Estimator;
use celcost::cli::{Outcome, Run};
use serde_json::{Value, json};

fn crd_with_rule(rule: &str, spec: Value) -> String {
    let mut spec = spec;
    spec["x-kubernetes-validations"] = json!([{"rule": rule}]);
    serde_json::to_string(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "bads.test.example.com"},
        "spec": {"group": "test.example.com", "scope": "Namespaced", "names": {"plural": "bads", "kind": "Bad"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}
    }))
    .unwrap()
}

const GOOD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: goods.test.example.com}
spec:
  group: test.example.com
  scope: Namespaced
  names: {plural: goods, kind: Good}
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
            x-kubernetes-validations: [{rule: "has(self.a)"}]
            properties: {a: {type: string}}
"#;

fn run(text: &str) -> Outcome {
    let mut o = Outcome::default();
    Run::new(&Estimator::default()).text("in.yaml", text, &mut o);
    o
}

/// The single rule's compile error, and the object's errors.
fn rule_error(rule: &str, spec: Value) -> (String, Vec<String>) {
    let o = run(&crd_with_rule(rule, spec));
    assert_eq!(o.reports.len(), 1, "{:?}", o.input_errors);
    let r = &o.reports[0];
    assert!(!r.valid);
    let e = r.schemas[0].rules[0]
        .compile_error
        .clone()
        .expect("a compile error");
    (e, r.errors.clone())
}

#[test]
fn unparsable_cel_names_the_rule_and_column() {
    let (e, errors) = rule_error(
        "self.a ==",
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
    );
    assert!(
        e.starts_with("compilation failed: ERROR: <input>:1:10: Syntax error:"),
        "{e}"
    );
    assert!(errors.iter().any(|x| x.starts_with(
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.a ==\""
    )));
}

#[test]
fn unknown_functions_and_fields() {
    let (e, _) = rule_error("self.frobnicate()", json!({"type": "object"}));
    assert!(e.contains("undeclared reference to 'frobnicate'"), "{e}");
    let (e, _) = rule_error(
        "self.nope == 1",
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
    );
    assert!(e.contains("undefined field 'nope'"), "{e}");
}

#[test]
fn bad_regexes() {
    let (e, _) = rule_error("self.matches('[')", json!({"type": "string"}));
    assert!(e.contains("invalid matches argument"), "{e}");
    // Go's regexp syntax, not the `regex` crate's: repeat counts above 1000 are refused.
    let (e, _) = rule_error("self.matches('a{1001}')", json!({"type": "string"}));
    assert!(e.contains("invalid matches argument"), "{e}");
    // `find` compiles its literal when the program is built.
    let (e, _) = rule_error("self.find('(') == ''", json!({"type": "string"}));
    assert_eq!(
        e,
        "program instantiation failed: error parsing regexp: missing closing ): `(`"
    );
}

/// A policy's `find`/`findAll` literal that Go cannot compile: the API server refuses the
/// policy with an Internal error at program instantiation, after the output type check; the
/// compile result holds only that error, so the expression has it as its compile error and no
/// cost.
#[test]
fn bad_regexes_in_policies() {
    let policy = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: re}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: "object.metadata.name.find('(') == ''"
    messageExpression: "object.metadata.name.findAll('[', 2).join(',')"
  - expression: "object.metadata.name.find('(')"
"#;
    let o = run(policy);
    let r = &o.reports[0];
    assert!(!r.valid);
    assert_eq!(
        r.errors,
        [
            "spec.validations[0].expression: Internal error: program instantiation failed: error parsing regexp: missing closing ): `(`",
            "spec.validations[0].messageExpression: Internal error: program instantiation failed: error parsing regexp: missing closing ]: `[`",
            "spec.validations[1].expression: Invalid value: \"object.metadata.name.find('(')\": must evaluate to bool but got string",
        ]
    );
    let e = &r.expressions[0];
    assert_eq!(
        e.compile_error.as_deref(),
        Some("program instantiation failed: error parsing regexp: missing closing ): `(`")
    );
    assert_eq!((e.min_cost, e.max_cost), (None, None));
}
#[test]
fn deep_nesting_and_huge_rules() {
    let deep = format!("{}true{}", "(".repeat(5_000), ")".repeat(5_000));
    let (e, _) = rule_error(&deep, json!({"type": "object"}));
    assert!(
        e.contains("expression recursion limit exceeded: 250"),
        "{e}"
    );
    let chain = format!("self{}", ".a".repeat(3_000));
    let (e, _) = rule_error(&chain, json!({"type": "object"}));
    assert!(e.contains("expression recursion limit exceeded"), "{e}");
    let huge = format!("'{}' == self", "a".repeat(1 << 20));
    let (e, _) = rule_error(&huge, json!({"type": "string"}));
    assert!(
        e.contains("expression code point size exceeds limit: size: 1048586, limit 100000"),
        "{e}"
    );
}

#[test]
fn absurd_and_negative_bounds() {
    let o = run(&crd_with_rule(
        "self.l.all(x, x.size() > 1) && self.s.size() > 1",
        json!({"type": "object", "properties": {
            "l": {"type": "array", "maxItems": i64::MAX, "items": {"type": "string", "maxLength": -5}},
            "s": {"type": "string", "maxLength": -1}}}),
    ));
    let r = &o.reports[0];
    assert_eq!(r.schemas[0].rules[0].compile_error, None);
    // 2^63-1 items: the loop cost saturates rather than wrapping.
    assert_eq!(r.schemas[0].rules[0].max_cost, u64::MAX);
    let o = run(&crd_with_rule(
        "self.size() > 1",
        json!({"type": "string", "maxLength": 1e300}),
    ));
    assert_eq!(o.reports.len() + o.input_errors.len(), 1);
}

#[test]
fn broken_documents_do_not_hide_the_others() {
    let text = format!(
        "{GOOD}\n---\nkind: [unclosed\n---\n{GOOD}\n---\n\n---\nnull\n---\n- just\n- a list\n"
    );
    let o = run(&text);
    assert_eq!(o.reports.len(), 2, "{:?}", o.input_errors);
    assert_eq!(o.input_errors.len(), 1);
    assert!(
        o.input_errors[0].starts_with("in.yaml#2: YAML syntax error"),
        "{}",
        o.input_errors[0]
    );
    assert_eq!(o.reports[1].source, "in.yaml#3");
    assert!(
        o.skipped
            .iter()
            .any(|s| s.contains("not a Kubernetes object"))
    );
}

#[test]
fn binary_files_and_alias_bombs() {
    let o = run("\0\u{1}\u{2}binary");
    assert_eq!(o.input_errors.len(), 1);
    assert!(o.input_errors[0].contains("binary"));
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let o = run(&bomb);
    assert!(
        o.input_errors[0].contains("excessive aliasing"),
        "{:?}",
        o.input_errors
    );
}

#[test]
fn deeply_nested_documents_and_schemas() {
    let deep_yaml = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    let o = run(&deep_yaml);
    assert_eq!(o.input_errors.len(), 1);
    // A schema nested far deeper than any real one: an error naming where, not a crash.
    // Written as text: building it as a `Value` would recurse in the test itself.
    let depth = 2_000;
    let mut text = String::new();
    for _ in 0..depth {
        text.push_str(r#"{"type": "object", "properties": {"a": "#);
    }
    text.push_str(r#"{"type": "string"}"#);
    text.push_str(&"}}".repeat(depth));
    let crd = crd_with_rule("true", json!({"type": "object"})).replace(
        r#""type":"object","x-kubernetes"#,
        &format!(r#""type":"object","properties":{{"deep":{text}}},"x-kubernetes"#),
    );
    assert!(crd.contains("deep"));
    let o = run(&crd);
    let errs: Vec<&String> = o
        .reports
        .iter()
        .flat_map(|r| r.errors.iter())
        .chain(o.input_errors.iter())
        .collect();
    assert!(errs.iter().any(|e| e.contains("too deep")), "{errs:?}");
}

#[test]
fn wrong_json_types_in_a_schema() {
    let o = run(&crd_with_rule(
        "true",
        json!({"type": "object", "properties": {"a": {"type": 5}}}),
    ));
    let r = &o.reports[0];
    assert!(!r.valid);
    assert!(
        r.errors
            .iter()
            .any(|e| e.contains("properties[spec].properties[a].type")),
        "{:?}",
        r.errors
    );
}
