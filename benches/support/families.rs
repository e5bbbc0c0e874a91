//! Families of generated manifests, one per input dimension of the estimator: the n-th member
//! grows in that dimension only. The scaling benchmark measures them at n, 2n, 4n and 8n; tests
//! check their step counts (deterministic) for linear growth.

// Shared by the test and bench binaries that include this file: `pub` for them, not an API.
#![allow(unreachable_pub)]
#![allow(dead_code)]

use std::fmt::Write as _;

/// A family: its name, its first size, and the manifests (YAML documents) of size n.
pub struct Family {
    pub name: &'static str,
    pub base: usize,
    pub make: fn(usize) -> Vec<String>,
}

/// Every dimension.
pub fn all() -> Vec<Family> {
    vec![
        Family {
            name: "expression length (|| terms)",
            base: 500,
            make: |n| vec![crd_with_rule(&long_expression(n), "")],
        },
        Family {
            name: "string literal length",
            base: 10_000,
            make: |n| vec![crd_with_rule(&format!("self.a == '{}'", "x".repeat(n)), "")],
        },
        Family {
            name: "list literal size",
            base: 1_000,
            make: |n| {
                let items: Vec<String> = (0..n).map(|i| format!("'v{i}'")).collect();
                vec![crd_with_rule(
                    &format!("self.a in [{}]", items.join(", ")),
                    "",
                )]
            },
        },
        Family {
            name: "nesting depth (parentheses)",
            base: 25,
            make: |n| {
                vec![crd_with_rule(
                    &format!("{}self.a == 'x'{}", "(".repeat(n), ")".repeat(n)),
                    "",
                )]
            },
        },
        Family {
            name: "nesting depth (comprehensions)",
            base: 8,
            make: |n| vec![nested_comprehensions(n)],
        },
        Family {
            name: "select chain length",
            base: 25,
            make: |n| vec![select_chain(n)],
        },
        Family {
            name: "variables (independent)",
            base: 250,
            make: |n| vec![policy_variables(n, false)],
        },
        Family {
            name: "variables (chain: v(i) = v(i-1) + v(i-1))",
            base: 250,
            make: |n| vec![policy_variables(n, true)],
        },
        Family {
            name: "policy validations",
            base: 250,
            make: |n| vec![policy_validations(n)],
        },
        Family {
            name: "typed reads per expression",
            base: 100,
            make: |n| vec![policy_typed_reads(n)],
        },
        Family {
            name: "rules per CRD",
            base: 250,
            make: |n| vec![crd_rules(n)],
        },
        Family {
            name: "schema width (properties)",
            base: 1_000,
            make: |n| vec![crd_width(n)],
        },
        Family {
            name: "schema depth (a rule per level)",
            base: 50,
            make: |n| vec![crd_depth(n, true)],
        },
        Family {
            name: "schema depth (one rule at the root)",
            base: 100,
            make: |n| vec![crd_depth(n, false)],
        },
        Family {
            name: "list nesting (maxItems 2 a level, a rule at the bottom)",
            base: 25,
            make: |n| vec![crd_nested(n, Nesting::Lists)],
        },
        Family {
            name: "map nesting (maxProperties 2 a level, a rule at the bottom)",
            base: 25,
            make: |n| vec![crd_nested(n, Nesting::Maps)],
        },
        Family {
            name: "object nesting (a costly rule at the bottom)",
            base: 25,
            make: |n| vec![crd_nested(n, Nesting::Objects)],
        },
        Family {
            name: "schema width (a costly rule reading two of n fields)",
            base: 250,
            make: |n| vec![crd_width_costly(n)],
        },
        Family {
            name: "rule reads (a costly rule reading n unbounded fields)",
            base: 80,
            make: |n| vec![crd_reads(n)],
        },
        Family {
            name: "rules per node (each costly, under a list)",
            base: 25,
            make: |n| vec![crd_rules_per_node(n)],
        },
        Family {
            name: "expression length (costly || terms)",
            base: 100,
            make: |n| vec![crd_costly_terms(n)],
        },
        Family {
            name: "objects per file (each with a costly rule)",
            base: 10,
            make: |n| {
                vec![
                    (0..n)
                        .map(costly_crd_named)
                        .collect::<Vec<_>>()
                        .join("\n---\n"),
                ]
            },
        },
        Family {
            name: "enum size",
            base: 2_000,
            make: |n| vec![crd_enum(n)],
        },
        Family {
            name: "CRD versions",
            base: 25,
            make: |n| vec![crd_versions(n)],
        },
        Family {
            name: "objects per file",
            base: 50,
            make: |n| {
                vec![
                    (0..n)
                        .map(|i| crd_named(i, "self.a.size() < 10"))
                        .collect::<Vec<_>>()
                        .join("---\n"),
                ]
            },
        },
        Family {
            name: "objects per run (files)",
            base: 50,
            make: |n| (0..n).map(|i| crd_named(i, "self.a.size() < 10")).collect(),
        },
    ]
}

/// `self.a == 'x0' || self.a == 'x1' || ...` (n terms).
pub fn long_expression(n: usize) -> String {
    (0..n)
        .map(|i| format!("self.a == 'x{i}'"))
        .collect::<Vec<_>>()
        .join(" || ")
}

fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string")
}

/// A CRD whose `spec` (properties `a`: string, `l`: list of strings) has `rule` (and
/// `message_expression` when not empty).
pub fn crd_with_rule(rule: &str, message_expression: &str) -> String {
    let me = if message_expression.is_empty() {
        String::new()
    } else {
        format!(", messageExpression: {}", yaml_str(message_expression))
    };
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: gens.test.example.com}}
spec:
  group: test.example.com
  scope: Namespaced
  names: {{plural: gens, kind: Gen}}
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
            x-kubernetes-validations: [{{rule: {}{me}}}]
            properties:
              a: {{type: string, maxLength: 64}}
              l: {{type: array, maxItems: 10, items: {{type: string, maxLength: 10}}}}
"#,
        yaml_str(rule)
    )
}

/// CRD number `i` (a distinct name and group) with one rule on `spec`.
pub fn crd_named(i: usize, rule: &str) -> String {
    crd_with_rule(rule, "")
        .replace("gens.test.example.com", &format!("gens.t{i}.example.com"))
        .replace(
            "group: test.example.com",
            &format!("group: t{i}.example.com"),
        )
}

fn crd(schema_spec: &str) -> String {
    format!(
        r#"{{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
"metadata": {{"name": "gens.test.example.com"}},
"spec": {{"group": "test.example.com", "scope": "Namespaced", "names": {{"plural": "gens", "kind": "Gen"}},
"versions": [{{"name": "v1", "served": true, "storage": true,
"schema": {{"openAPIV3Schema": {{"type": "object", "properties": {{"spec": {schema_spec}}}}}}}}}]}}}}"#
    )
}

/// `self.l.all(x0, self.l.all(x1, ... x(n-1) == 'a' ...))` over a list of 10.
pub fn nested_comprehensions(n: usize) -> String {
    let mut rule = String::new();
    for i in 0..n {
        write!(rule, "self.l.all(x{i}, ").unwrap();
    }
    write!(rule, "x{} == 'a'", n - 1).unwrap();
    rule.push_str(&")".repeat(n));
    crd_with_rule(&rule, "")
}

/// A schema `spec.c.c.c...` n levels deep and a rule reading its leaf.
pub fn select_chain(n: usize) -> String {
    let mut schema = r#"{"type": "string", "maxLength": 8}"#.to_string();
    for _ in 0..n {
        schema = format!(r#"{{"type": "object", "properties": {{"c": {schema}}}}}"#);
    }
    let path = "self".to_string() + &".c".repeat(n);
    let spec = format!(
        r#"{{"type": "object", "x-kubernetes-validations": [{{"rule": {}}}], "properties": {{"c": {schema}}}}}"#,
        yaml_str(&format!("{path} == 'x'"))
    );
    crd(&spec)
}

/// `n` properties, each with a rule.
pub fn crd_rules(n: usize) -> String {
    let props: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#""p{i}": {{"type": "string", "maxLength": 32, "x-kubernetes-validations": [{{"rule": "self.startsWith('a{i}') || self.size() < {i}"}}]}}"#
            )
        })
        .collect();
    crd(&format!(
        r#"{{"type": "object", "properties": {{{}}}}}"#,
        props.join(", ")
    ))
}

/// `n` properties and one rule on the object.
pub fn crd_width(n: usize) -> String {
    let props: Vec<String> = (0..n)
        .map(|i| format!(r#""p{i}": {{"type": "string", "maxLength": 32}}"#))
        .collect();
    crd(&format!(
        r#"{{"type": "object", "x-kubernetes-validations": [{{"rule": "self.p0 == self.p1"}}], "properties": {{{}}}}}"#,
        props.join(", ")
    ))
}

/// Objects nested `n` deep; a rule at each level, or only at the root.
pub fn crd_depth(n: usize, rule_per_level: bool) -> String {
    let mut schema = r#"{"type": "string", "maxLength": 8}"#.to_string();
    for i in 0..n {
        let rule = if rule_per_level || i + 1 == n {
            r#""x-kubernetes-validations": [{"rule": "has(self.c)"}], "#
        } else {
            ""
        };
        schema = format!(r#"{{"type": "object", {rule}"properties": {{"c": {schema}}}}}"#);
    }
    crd(&schema)
}

/// A string enum of `n` values, with a default and a rule.
pub fn crd_enum(n: usize) -> String {
    let values: Vec<String> = (0..n).map(|i| format!(r#""value-{i}""#)).collect();
    crd(&format!(
        r#"{{"type": "object", "properties": {{"e": {{"type": "string", "default": "value-{}", "enum": [{}],
"x-kubernetes-validations": [{{"rule": "self == 'value-1' || self.contains('x')"}}]}}}}}}"#,
        n - 1,
        values.join(", ")
    ))
}

/// `n` versions, each with its own schema (so none is hoisted) and a rule.
pub fn crd_versions(n: usize) -> String {
    let versions: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"name": "v{i}", "served": true, "storage": {}, "schema": {{"openAPIV3Schema": {{"type": "object", "properties": {{"spec": {{"type": "object", "x-kubernetes-validations": [{{"rule": "self.f{i}.size() < 10"}}], "properties": {{"f{i}": {{"type": "string", "maxLength": 20}}}}}}}}}}}}}}"#,
                i == 0
            )
        })
        .collect();
    format!(
        r#"{{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
"metadata": {{"name": "gens.test.example.com"}},
"spec": {{"group": "test.example.com", "scope": "Namespaced", "names": {{"plural": "gens", "kind": "Gen"}},
"versions": [{}]}}}}"#,
        versions.join(", ")
    )
}

fn policy(variables: &[(String, String)], validations: &[String]) -> String {
    let mut out = String::from(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: generated}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}
"#,
    );
    if !variables.is_empty() {
        out.push_str("  variables:\n");
        for (n, e) in variables {
            writeln!(out, "  - {{name: {n}, expression: {}}}", yaml_str(e)).unwrap();
        }
    }
    out.push_str("  validations:\n");
    for v in validations {
        writeln!(out, "  - {{expression: {}}}", yaml_str(v)).unwrap();
    }
    out
}

/// `n` variables: independent (`vi = object.metadata.name + 'i'`, all read by the
/// validation), or a chain where each reads the previous one twice (the expression of
/// issue 9's exponential case).
pub fn policy_variables(n: usize, chain: bool) -> String {
    let mut vars = vec![("v0".to_string(), "object.metadata.name".to_string())];
    for i in 1..n {
        let e = if chain {
            format!("variables.v{} + variables.v{}", i - 1, i - 1)
        } else {
            format!("object.metadata.name + '{i}'")
        };
        vars.push((format!("v{i}"), e));
    }
    let validation = if chain {
        format!("size(variables.v{}) > 0", n - 1)
    } else {
        (0..n)
            .map(|i| format!("variables.v{i} != ''"))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    policy(&vars, &[validation])
}

/// `n` validations over the typed object.
pub fn policy_validations(n: usize) -> String {
    let vals: Vec<String> = (0..n)
        .map(|i| format!("object.data.all(k, k.size() < {i} || object.data[k].contains('x'))"))
        .collect();
    policy(&[], &vals)
}

/// A CRD with `n` unbounded string fields and a policy over it whose one expression reads every
/// one of them (so each drives the typed estimate).
pub fn policy_typed_reads(n: usize) -> String {
    let props: Vec<String> = (0..n)
        .map(|i| format!(r#""f{i}": {{"type": "string"}}"#))
        .collect();
    let crd = crd(&format!(
        r#"{{"type": "object", "properties": {{{}}}}}"#,
        props.join(", ")
    ));
    let e = (0..n)
        .map(|i| format!("object.spec.f{i}.contains('x')"))
        .collect::<Vec<_>>()
        .join(" || ");
    let policy = policy(&[], &[e]).replace(
        r#"{apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"]}"#,
        r#"{apiGroups: ["test.example.com"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["gens"]}"#,
    );
    format!("{crd}\n---\n{policy}")
}

/// CRD number `i` (a distinct name and group) with a rule over the per-rule limit: suggested
/// bounds are searched for it (and cheaper rules offered) by default.
pub fn costly_crd_named(i: usize) -> String {
    crd_costly_terms(3)
        .replace("gens.test.example.com", &format!("gens.t{i}.example.com"))
        .replace(
            r#""group": "test.example.com""#,
            &format!(r#""group": "t{i}.example.com""#),
        )
}

/// What a nested schema nests.
#[derive(Clone, Copy, Debug)]
pub enum Nesting {
    /// `type: array`, `maxItems: 2` at every level.
    Lists,
    /// `type: object`, `maxProperties: 2`, `additionalProperties` at every level.
    Maps,
    /// `type: object` with one property at every level.
    Objects,
}

/// `spec` nesting `n` levels of `kind` down to a leaf with one rule: for lists and maps, a
/// bounded string whose rule's cardinality (2^n) puts it over the limit; for objects, an
/// unbounded list of unbounded strings read by a costly rule. Every one gets suggested bounds.
pub fn crd_nested(n: usize, kind: Nesting) -> String {
    let mut schema = match kind {
        Nesting::Lists | Nesting::Maps => {
            r#"{"type": "string", "maxLength": 8, "x-kubernetes-validations": [{"rule": "self.size() < 5"}]}"#
                .to_string()
        }
        Nesting::Objects => format!(
            r#"{{"type": "array", "items": {{"type": "string"}}, "x-kubernetes-validations": [{{"rule": {}}}]}}"#,
            yaml_str("self.all(x, self.all(y, x.matches(y)))")
        ),
    };
    for _ in 0..n {
        schema = match kind {
            Nesting::Lists => format!(r#"{{"type": "array", "maxItems": 2, "items": {schema}}}"#),
            Nesting::Maps => format!(
                r#"{{"type": "object", "maxProperties": 2, "additionalProperties": {schema}}}"#
            ),
            Nesting::Objects => format!(r#"{{"type": "object", "properties": {{"c": {schema}}}}}"#),
        };
    }
    crd(&schema)
}

/// `n` unbounded string properties and, on the object, a costly rule reading two of them.
pub fn crd_width_costly(n: usize) -> String {
    let props: Vec<String> = (0..n)
        .map(|i| format!(r#""p{i}": {{"type": "string"}}"#))
        .collect();
    crd(&format!(
        r#"{{"type": "object", "x-kubernetes-validations": [{{"rule": "self.p0.matches(self.p1)"}}], "properties": {{{}}}}}"#,
        props.join(", ")
    ))
}

/// An unbounded list of objects of `n` unbounded string properties, all read by one rule on the
/// items (a site each), over the limit.
pub fn crd_reads(n: usize) -> String {
    let props: Vec<String> = (0..n)
        .map(|i| format!(r#""p{i}": {{"type": "string"}}"#))
        .collect();
    let rule = (0..n)
        .map(|i| format!("self.p{i}.matches('^a+$')"))
        .collect::<Vec<_>>()
        .join(" && ");
    crd(&format!(
        r#"{{"type": "array", "items": {{"type": "object", "x-kubernetes-validations": [{{"rule": {}}}], "properties": {{{}}}}}}}"#,
        yaml_str(&rule),
        props.join(", ")
    ))
}

/// An unbounded list of objects with an unbounded string, whose items carry `n` rules, each
/// over the per-rule limit.
pub fn crd_rules_per_node(n: usize) -> String {
    let rules: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"rule": {}}}"#,
                yaml_str(&format!("self.s.contains('x{i}')"))
            )
        })
        .collect();
    crd(&format!(
        r#"{{"type": "array", "items": {{"type": "object", "x-kubernetes-validations": [{}], "properties": {{"s": {{"type": "string"}}}}}}}}"#,
        rules.join(", ")
    ))
}

/// `self.u == 'x0' || ...` over an unbounded string, under a list: over the limit.
pub fn crd_costly_terms(n: usize) -> String {
    let rule = (0..n)
        .map(|i| format!("self.u == 'x{i}'"))
        .collect::<Vec<_>>()
        .join(" || ");
    crd(&format!(
        r#"{{"type": "array", "items": {{"type": "object", "x-kubernetes-validations": [{{"rule": {}}}], "properties": {{"u": {{"type": "string"}}}}}}}}"#,
        yaml_str(&rule)
    ))
}
