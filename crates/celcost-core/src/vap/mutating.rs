//! MutatingAdmissionPolicy (admissionregistration.k8s.io v1alpha1, v1beta1, v1): every
//! expression compiled as the API server compiles it when the policy is created
//! (k8s.io/kubernetes pkg/apis/admissionregistration/validation
//! `validateMutatingAdmissionPolicySpec`; k8s.io/apiserver pkg/admission/plugin/cel), costed as
//! for ValidatingAdmissionPolicies, and summed against the budgets of the mutating admission
//! plugin (k8s.io/apiserver pkg/admission/plugin/policy/mutating).
//!
//! What differs from a ValidatingAdmissionPolicy:
//! * variables and mutations are compiled with the composited compiler whether or not the
//!   policy has variables (`variables` is always declared there); matchConditions, as for
//!   ValidatingAdmissionPolicies, without it;
//! * `spec.mutations[*].applyConfiguration.expression` and `.jsonPatch.expression` (only the one
//!   `patchType` selects, trimmed) are compiled with the patch types (`HasPatchTypes`): the
//!   object types `Object`, `Object.<field>...` and `JSONPatch`, and `jsonpatch.escapeKey`. An
//!   applyConfiguration must evaluate to `Object`, a jsonPatch to `list(JSONPatch)`;
//! * at runtime each mutation is evaluated with a fresh budget of 10,000,000, charged with the
//!   cost of the variables it reads (evaluated lazily, once per mutation evaluation); the
//!   matchConditions share 2,500,000; each expression may spend 1,000,000.
//!
//! The API server checks no static cost on create; the numbers are upstream's estimates in those
//! environments (`object`, `oldObject`, `params` typed `dyn`), with the typed estimate beside
//! them as for ValidatingAdmissionPolicies.

use serde_json::Value;

use super::types::PolicyTypes;
use super::{Compiled, Declared, Site, Variables, compile, meta, push_error, sites_cost, typed};

use crate::cel::decls::Version;
use crate::cel::env::Env;
use crate::crd::fielderr::{BadValue, FieldError};
use crate::report::{ObjectReport, PolicyBudget};
use crate::schema::catalog::SchemaCatalog;

/// The kind, as manifests name it.
pub(super) const KIND: &str = "MutatingAdmissionPolicy";

/// `admissionregistration.k8s.io` versions of MutatingAdmissionPolicy: (version, the first
/// Kubernetes minor with it, its maturity there). From the API types of each release
/// (k8s.io/api admissionregistration v1alpha1 in 1.32, v1beta1 in 1.34, v1 in 1.36).
const VERSIONS: [(&str, Version, &str); 3] = [
    ("v1alpha1", Version::new(1, 32), "alpha"),
    ("v1beta1", Version::new(1, 34), "beta"),
    ("v1", Version::new(1, 36), "GA"),
];

/// The `MutatingAdmissionPolicy` feature gate turns on by default (GA) in 1.36; alpha (1.32) and
/// beta (1.34) it is off by default.
const GATE_ON_BY_DEFAULT: Version = Version::new(1, 36);

/// Whether a Kubernetes minor serves an `apiVersion` of MutatingAdmissionPolicy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapApiVersion {
    /// Served by default.
    Served,
    /// Served only when the cluster enables it: how.
    OffByDefault(String),
    /// Not served at all (no such API in that minor): why, for people.
    NotServed(String),
}

/// What Kubernetes `kubernetes` makes of a MutatingAdmissionPolicy of `api_version`.
/// Minors after the newest known one are taken to serve what it serves.
pub fn map_api_version(api_version: &str, kubernetes: Version) -> MapApiVersion {
    let version = api_version
        .strip_prefix("admissionregistration.k8s.io/")
        .unwrap_or(api_version);
    let served: Vec<String> = VERSIONS
        .iter()
        .filter(|(_, since, _)| *since <= kubernetes)
        .map(|(v, since, m)| format!("{v} ({m} since {since})"))
        .collect();
    let no_match = format!(
        "no matches for kind \"{KIND}\" in version \"{api_version}\": Kubernetes {kubernetes}"
    );
    let Some((_, since, maturity)) = VERSIONS.iter().find(|(v, ..)| *v == version) else {
        return MapApiVersion::NotServed(format!(
            "{no_match} has no such version of {KIND} (known: v1alpha1, v1beta1, v1)"
        ));
    };
    if kubernetes < *since {
        return MapApiVersion::NotServed(if served.is_empty() {
            format!("{no_match} has no {KIND} (alpha since {})", VERSIONS[0].1)
        } else {
            format!(
                "{no_match} serves {KIND} only as admissionregistration.k8s.io/{}; {version} is \
                 {maturity} since {since}",
                served.join(", ")
            )
        });
    }
    if *maturity == "GA" {
        return MapApiVersion::Served;
    }
    let gate = if kubernetes >= GATE_ON_BY_DEFAULT {
        String::new()
    } else {
        " and --feature-gates=MutatingAdmissionPolicy=true".to_string()
    };
    let article = if maturity.starts_with('a') { "an" } else { "a" };
    MapApiVersion::OffByDefault(format!(
        "admissionregistration.k8s.io/{version} is {article} {maturity} API in Kubernetes {kubernetes}, \
         off by default: the API server serves it only with \
         --runtime-config=admissionregistration.k8s.io/{version}=true{gate}"
    ))
}

/// Estimates one MutatingAdmissionPolicy, with typed estimates from the built-in schemas.
pub fn estimate_map(env: &Env, map: &Value, source: &str) -> ObjectReport {
    estimate_map_with(env, map, source, &SchemaCatalog::new())
}

/// Estimates one MutatingAdmissionPolicy: upstream's estimate, and the typed one from the
/// schemas of `catalog` (then the built-in ones) beside it.
pub fn estimate_map_with(
    env: &Env,
    map: &Value,
    source: &str,
    catalog: &SchemaCatalog,
) -> ObjectReport {
    estimate_map_keeping_errors(env, map, source, catalog).0
}

/// As [`estimate_map_with`], with the field errors the report's `errors` are rendered from
/// (after the one saying the policy's version is not served, where it is not), or none where an
/// expression makes the API server panic (where the version is served).
pub fn estimate_map_keeping_errors(
    env: &Env,
    map: &Value,
    source: &str,
    catalog: &SchemaCatalog,
) -> (ObjectReport, Option<Vec<FieldError>>) {
    let s = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let api_version = s(map, "apiVersion");
    let mut report = ObjectReport::on(map, KIND, source, format!("v{}", env.kubernetes));
    let not_served = match map_api_version(&api_version, env.kubernetes) {
        MapApiVersion::Served => None,
        MapApiVersion::OffByDefault(note) => {
            report.notes.push(note);
            None
        }
        MapApiVersion::NotServed(why) => Some(why),
    };
    let mut errors: Vec<FieldError> = meta::validate_object_meta(map.get("metadata"));
    let spec = map.get("spec").unwrap_or(&Value::Null);
    errors.extend(meta::validate_spec(spec, env.kubernetes));
    errors.extend(meta::validate_mutating_spec(spec));
    let has_params = spec.get("paramKind").is_some_and(|p| !p.is_null());
    let list = |k: &str| -> &[Value] {
        spec.get(k)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    };
    let mut types = PolicyTypes::new();
    let mut expressions = super::compile_conditions_and_variables(
        env,
        &mut types,
        list("matchConditions"),
        list("variables"),
        has_params,
        &mut errors,
    );
    let mutations = list("mutations");
    if mutations.is_empty() {
        errors.push(FieldError::required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    compile_mutations(
        env,
        &mut types,
        has_params,
        mutations,
        &mut errors,
        &mut expressions,
    );
    errors.extend(meta::validate_reinvocation_policy(spec));

    report.policy_budget = Some(PolicyBudget {
        match_conditions_cost: match_conditions_cost(&expressions, Compiled::max_cost),
        mutation_cost: Some(mutation_cost(&expressions, Compiled::max_cost)),
        ..Default::default()
    });
    let typing = typed::resolve(spec, catalog, env);
    if !typing.targets.is_empty() {
        super::add_typed_estimates(env, &typing, &mut expressions);
        if let Some(b) = report.policy_budget.as_mut() {
            let typed_max = Compiled::typed_max_cost;
            b.typed_match_conditions_cost = Some(match_conditions_cost(&expressions, typed_max));
            b.typed_mutation_cost = Some(mutation_cost(&expressions, typed_max));
        }
    }
    report.typing = Some(typing.report);
    // Not served: the request never reaches the validation that would panic.
    let panics = super::first_panic(&expressions);
    let keep = panics.is_none();
    let panic = panics.filter(|_| not_served.is_none());
    report.expressions = expressions.into_iter().map(|c| c.report).collect();
    let (texts, parts) = crate::crd::fielderr::render_all(&errors, env.kubernetes);
    report.error_parts = not_served
        .iter()
        .map(|why| crate::report::ErrorParts::other("", why))
        .chain(parts)
        .collect();
    report.errors = not_served.into_iter().chain(texts).collect();
    report.valid = report.errors.is_empty();
    if let Some((field_path, p)) = panic {
        report.set_apiserver_panic(&field_path, &p);
        return (report, None);
    }
    (report, keep.then_some(errors))
}

/// A policy's mutations: each patch type checked and its expression compiled (with `variables`
/// and `authorizer` declared, `params` when the policy has a paramKind).
fn compile_mutations(
    env: &Env,
    types: &mut PolicyTypes,
    has_params: bool,
    mutations: &[Value],
    errors: &mut Vec<FieldError>,
    expressions: &mut Vec<Compiled>,
) {
    let s = super::str_at;
    for (i, m) in mutations.iter().enumerate() {
        let base = format!("spec.mutations[{i}]");
        let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
        let (site, field, kind, other) = match s(m, "patchType").as_str() {
            "" => {
                errors.push(FieldError::required(&format!("{base}.patchType"), ""));
                continue;
            }
            "JSONPatch" => (
                Site::JsonPatch,
                "jsonPatch",
                "JSONPatch",
                "applyConfiguration",
            ),
            "ApplyConfiguration" => (
                Site::ApplyConfiguration,
                "applyConfiguration",
                "ApplyConfiguration",
                "jsonPatch",
            ),
            pt => {
                errors.push(FieldError::not_supported(
                    &format!("{base}.patchType"),
                    BadValue::Str(pt.to_string()),
                    &["ApplyConfiguration", "JSONPatch"],
                ));
                continue;
            }
        };
        if !present(field) {
            errors.push(FieldError::required(
                &format!("{base}.{field}"),
                &format!("must be specified when patchType is {kind}"),
            ));
        } else {
            let fp = format!("{base}.{field}.expression");
            let trimmed = m[field]
                .get("expression")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string();
            if trimmed.is_empty() {
                errors.push(FieldError::required(&fp, ""));
            } else {
                let c = compile(
                    env,
                    types,
                    site,
                    field,
                    &fp,
                    &trimmed,
                    Declared {
                        params: has_params,
                        authorizer: true,
                        variables: true,
                    },
                );
                push_error(errors, &c, &fp, &trimmed);
                expressions.push(c);
            }
        }
        if present(other) {
            errors.push(FieldError::invalid(
                &format!("{base}.{other}"),
                BadValue::Str(format!("{{{other}}}")),
                &format!("must not be specified when patchType is {kind}"),
            ));
        }
    }
}

/// The matchConditions' worst case: all of them, in one budget.
fn match_conditions_cost(expressions: &[Compiled], max: fn(&Compiled) -> u64) -> u64 {
    sites_cost(expressions, &[Site::MatchCondition], max).0
}

/// The worst single mutation evaluation: the mutation's expression and every variable it reads,
/// transitively, each once (a mutation's evaluation gets its own lazily evaluated variables and
/// its own budget).
fn mutation_cost(expressions: &[Compiled], max: fn(&Compiled) -> u64) -> u64 {
    let vars = Variables::of(expressions, max);
    expressions
        .iter()
        .filter(|c| c.site.patch_types())
        .map(|c| max(c).saturating_add(vars.cost(c.variables_used())))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::fixtures::{self, match_resource};
    use serde_json::json;

    fn policy(api: &str, spec: Value) -> Value {
        json!({
            "apiVersion": format!("admissionregistration.k8s.io/{api}"),
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "p"},
            "spec": spec,
        })
    }

    fn spec_with(mutations: Value, extra: Value) -> Value {
        let mut spec = json!({
            "matchConstraints": match_resource("apps", "deployments", &["CREATE"]),
            "reinvocationPolicy": "Never",
            "mutations": mutations,
        });
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        spec
    }

    fn jp(e: &str) -> Value {
        json!({"patchType": "JSONPatch", "jsonPatch": {"expression": e}})
    }

    fn ac(e: &str) -> Value {
        json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": e}})
    }

    fn estimate(mutations: Value, extra: Value) -> ObjectReport {
        let env = Env::for_kubernetes(Version::new(1, 36));
        estimate_map(&env, &policy("v1", spec_with(mutations, extra)), "t")
    }

    /// (field path, output type, min, max, compile error) of every expression.
    fn costs(r: &ObjectReport) -> Vec<(String, String, Option<u64>, Option<u64>)> {
        r.expressions
            .iter()
            .map(|e| {
                (
                    e.field_path.clone(),
                    e.output_type.clone(),
                    e.min_cost,
                    e.max_cost,
                )
            })
            .collect()
    }

    // The expected numbers and words below are what the Kubernetes v1.36.2 code computes for
    // the same policies (the harness of tests/data/maps-expected-1.36).

    #[test]
    fn output_types_of_mutations() {
        let r = estimate(
            json!([
                jp(r#"JSONPatch{op: "add", path: "/a", value: 1}"#),
                ac(r#"{"a": 1}"#),
                jp("[]"),
                ac("object.spec"),
            ]),
            json!({}),
        );
        assert_eq!(
            r.errors,
            vec![
                r#"spec.mutations[0].jsonPatch.expression: Invalid value: "JSONPatch{op: \"add\", path: \"/a\", value: 1}": must evaluate to list(JSONPatch) but got JSONPatch"#,
                r#"spec.mutations[1].applyConfiguration.expression: Invalid value: "{\"a\": 1}": must evaluate to Object but got map(string, int)"#,
                r#"spec.mutations[2].jsonPatch.expression: Invalid value: "[]": must evaluate to list(JSONPatch) but got list(dyn)"#,
                r#"spec.mutations[3].applyConfiguration.expression: Invalid value: "object.spec": must evaluate to Object but got dyn"#,
            ]
        );
        assert!(!r.valid);
        // Refused after compiling: the compile result holds only the error, so each expression
        // has it as its compile error, and no output type or cost.
        for (e, err) in r.expressions.iter().zip(&r.errors) {
            assert_eq!(
                (e.min_cost, e.max_cost, e.output_type.as_str()),
                (None, None, "")
            );
            let detail = e.compile_error.as_deref().unwrap();
            assert!(detail.starts_with("must evaluate to "), "{detail}");
            assert!(err.ends_with(detail), "{err} / {detail}");
        }
    }

    #[test]
    fn patch_types_and_escape_key() {
        let r = estimate(
            json!([
                ac(
                    "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: \"a\", image: \"b\"}]}}}}"
                ),
                jp(
                    r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("a/b"), value: "x"}]"#
                ),
                jp(
                    r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey(object.metadata.name), value: "x"}]"#
                ),
                jp(
                    r#"object.spec.template.spec.containers.map(c, JSONPatch{op: "add", path: "/x", value: c.name})"#
                ),
                jp(r#"[JSONPatch{op: "add", foo: object.x}]"#),
                jp(
                    r#"authorizer.group("").resource("x").check("get").allowed() ? [JSONPatch{op: "add", path: "/x", value: 1}] : []"#
                ),
            ]),
            json!({}),
        );
        assert!(r.valid, "{:?}", r.errors);
        let c = costs(&r);
        let o = |i: usize| (c[i].1.as_str(), c[i].2, c[i].3);
        assert_eq!(o(0), ("Object", Some(210), Some(210)));
        assert_eq!(o(1), ("list(JSONPatch)", Some(53), Some(53)));
        assert_eq!(
            o(2),
            ("list(JSONPatch)", Some(53), Some(3_689_348_814_741_910_579))
        );
        assert_eq!(o(3), ("list(JSONPatch)", Some(12), Some(u64::MAX)));
        // An undeclared JSONPatch field has no type: only a `dyn` value is accepted.
        assert_eq!(o(4), ("list(JSONPatch)", Some(51), Some(51)));
        assert_eq!(o(5), ("list(JSONPatch)", Some(350_014), Some(350_054)));
        assert!(r.expressions[1].env.ends_with(",hasPatchTypes=true"));
        let b = r.policy_budget.as_ref().unwrap();
        assert_eq!(b.mutation_cost, Some(u64::MAX));
    }

    #[test]
    fn compile_errors_in_upstream_words() {
        let r = estimate(
            json!([
                ac("Object{spec: foo}"),
                jp(r#"[JSONPatch{op: 1, path: "/a"}]"#),
                jp(r#"[JSONPatch{op: "add", foo: "x"}]"#),
                jp(
                    r#"[JSONPatch{op: "add", path: "/a"}].map(p, JSONPatch{op: p.op, path: p.foo})"#
                ),
                ac("Object{spec: Object.spec{replicas: params.r}}"),
                jp(r#"[JSONPatch{op: "add", path: "/x", value: variables.foo}]"#),
                jp(r#"[JSONPatch{op: "add", path: "/a/" + "a/b".escapeKey(), value: 1}]"#),
                ac("type(Object{}) == Object ? Object{} : Object{spec: Object.spec{replicas: 1}}"),
            ]),
            json!({}),
        );
        let want = [
            "spec.mutations[0].applyConfiguration.expression: Invalid value: \"Object{spec: foo}\": compilation failed: ERROR: <input>:1:14: undeclared reference to 'foo' (in container '')\n | Object{spec: foo}\n | .............^",
            "spec.mutations[1].jsonPatch.expression: Invalid value: \"[JSONPatch{op: 1, path: \\\"/a\\\"}]\": compilation failed: ERROR: <input>:1:14: expected type of field 'op' is 'string' but provided type is 'int'\n | [JSONPatch{op: 1, path: \"/a\"}]\n | .............^",
            "spec.mutations[2].jsonPatch.expression: Invalid value: \"[JSONPatch{op: \\\"add\\\", foo: \\\"x\\\"}]\": compilation failed: ERROR: <input>:1:26: expected type of field 'foo' is '' but provided type is 'string'\n | [JSONPatch{op: \"add\", foo: \"x\"}]\n | .........................^",
            "spec.mutations[3].jsonPatch.expression: Invalid value: \"[JSONPatch{op: \\\"add\\\", path: \\\"/a\\\"}].map(p, JSONPatch{op: p.op, path: p.foo})\": compilation failed: ERROR: <input>:1:67: expected type of field 'path' is 'string' but provided type is ''\n | [JSONPatch{op: \"add\", path: \"/a\"}].map(p, JSONPatch{op: p.op, path: p.foo})\n | ..................................................................^",
            "spec.mutations[4].applyConfiguration.expression: Invalid value: \"Object{spec: Object.spec{replicas: params.r}}\": compilation failed: ERROR: <input>:1:36: undeclared reference to 'params' (in container '')\n | Object{spec: Object.spec{replicas: params.r}}\n | ...................................^",
            "spec.mutations[5].jsonPatch.expression: Invalid value: \"[JSONPatch{op: \\\"add\\\", path: \\\"/x\\\", value: variables.foo}]\": compilation failed: ERROR: <input>:1:51: undefined field 'foo'\n | [JSONPatch{op: \"add\", path: \"/x\", value: variables.foo}]\n | ..................................................^",
            "spec.mutations[6].jsonPatch.expression: Invalid value: \"[JSONPatch{op: \\\"add\\\", path: \\\"/a/\\\" + \\\"a/b\\\".escapeKey(), value: 1}]\": compilation failed: ERROR: <input>:1:52: undeclared reference to 'escapeKey' (in container '')\n | [JSONPatch{op: \"add\", path: \"/a/\" + \"a/b\".escapeKey(), value: 1}]\n | ...................................................^",
            "spec.mutations[7].applyConfiguration.expression: Internal error: program instantiation failed: reference to undefined type: Object",
        ];
        assert_eq!(r.errors, want);
        // Compiled but refused by the program: the compile result holds the error, no cost.
        let last = r.expressions.last().unwrap();
        assert_eq!((last.min_cost, last.max_cost), (None, None));
        assert_eq!(
            last.compile_error.as_deref(),
            Some("program instantiation failed: reference to undefined type: Object")
        );
        assert_eq!(
            r.expressions[0].compile_error.as_deref(),
            Some(
                "compilation failed: ERROR: <input>:1:14: undeclared reference to 'foo' (in container '')\n | Object{spec: foo}\n | .............^"
            )
        );
    }

    #[test]
    fn variables_and_match_conditions() {
        let r = estimate(
            json!([
                jp(
                    r#"[JSONPatch{op: "add", path: "/metadata/labels/" + variables.nm, value: variables.nm}]"#
                ),
                ac(r#"Object{metadata: Object.metadata{labels: {"k": variables.nm + "x"}}}"#),
                jp(r#"[JSONPatch{op: "add", path: "/x", value: variables.missing}]"#),
            ]),
            json!({
                "variables": [
                    {"name": "nm", "expression": "object.metadata.name"},
                    {"name": "m", "expression": "variables.nm.size()"},
                    {"name": "o", "expression": "Object{}"},
                ],
                "matchConditions": [
                    {"name": "a", "expression": "variables.x == 1"},
                    {"name": "b", "expression": "authorizer.group('').resource('x').check('get').allowed()"},
                ],
            }),
        );
        assert_eq!(
            r.errors,
            vec![
                "spec.matchConditions[0].expression: Invalid value: \"variables.x == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'variables' (in container '')\n | variables.x == 1\n | ^",
                "spec.variables[2].expression: Invalid value: \"Object{}\": compilation failed: ERROR: <input>:1:7: undeclared reference to 'Object' (in container '')\n | Object{}\n | ......^",
                "spec.mutations[2].jsonPatch.expression: Invalid value: \"[JSONPatch{op: \\\"add\\\", path: \\\"/x\\\", value: variables.missing}]\": compilation failed: ERROR: <input>:1:51: undefined field 'missing'\n | [JSONPatch{op: \"add\", path: \"/x\", value: variables.missing}]\n | ..................................................^",
            ]
        );
        let c = costs(&r);
        let by = |fp: &str| {
            c.iter()
                .find(|x| x.0 == fp)
                .map(|x| (x.1.clone(), x.2, x.3))
                .unwrap()
        };
        assert_eq!(
            by("spec.matchConditions[1].expression"),
            ("bool".into(), Some(350_004), Some(350_004))
        );
        assert_eq!(
            by("spec.variables[0].expression"),
            ("dyn".into(), Some(1), Some(1))
        );
        assert_eq!(
            by("spec.variables[1].expression"),
            ("int".into(), Some(3), Some(3))
        );
        assert_eq!(
            by("spec.mutations[0].jsonPatch.expression"),
            (
                "list(JSONPatch)".into(),
                Some(56),
                Some(1_844_674_407_370_955_318)
            )
        );
        assert_eq!(
            by("spec.mutations[1].applyConfiguration.expression"),
            ("Object".into(), Some(113), Some(1_844_674_407_370_955_376))
        );
        let b = r.policy_budget.as_ref().unwrap();
        // mutations[1] with variables.nm (1).
        assert_eq!(b.mutation_cost, Some(1_844_674_407_370_955_377));
        assert_eq!(b.match_conditions_cost, 350_004);
    }

    #[test]
    fn spec_shape_errors() {
        let env = Env::for_kubernetes(Version::new(1, 36));
        let p = fixtures::policy(
            "MutatingAdmissionPolicy",
            "shape",
            json!({
                "failurePolicy": "Maybe",
                "matchConstraints": match_resource("apps", "deployments", &["CREATE", "DELETE"]),
                "mutations": [
                    {"patchType": "JSONPatch", "applyConfiguration": {"expression": "Object{}"}},
                    {"patchType": "ApplyConfiguration", "jsonPatch": {"expression": "[]"}},
                    {"applyConfiguration": {"expression": "Object{}"}},
                    {"patchType": "Strategic"},
                    {"patchType": "JSONPatch"},
                    {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "  "}},
                ],
            }),
        );
        let r = estimate_map(&env, &p, "t");
        let got: BTreeSet<&str> = r.errors.iter().map(String::as_str).collect();
        let want: BTreeSet<&str> = [
            r#"spec.failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore""#,
            r#"spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE""#,
            "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
            r#"spec.mutations[0].applyConfiguration: Invalid value: "{applyConfiguration}": must not be specified when patchType is JSONPatch"#,
            "spec.mutations[1].applyConfiguration: Required value: must be specified when patchType is ApplyConfiguration",
            r#"spec.mutations[1].jsonPatch: Invalid value: "{jsonPatch}": must not be specified when patchType is ApplyConfiguration"#,
            "spec.mutations[2].patchType: Required value",
            r#"spec.mutations[3].patchType: Unsupported value: "Strategic": supported values: "ApplyConfiguration", "JSONPatch""#,
            "spec.mutations[4].jsonPatch: Required value: must be specified when patchType is JSONPatch",
            "spec.mutations[5].applyConfiguration.expression: Required value",
            "spec.reinvocationPolicy: Required value",
        ]
        .into_iter()
        .collect();
        assert_eq!(got, want);
        assert!(r.expressions.is_empty());
        let none = estimate_map(
            &env,
            &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
                    "metadata": {"name": "nomut"},
                    "spec": {"reinvocationPolicy": "Sometimes", "matchConstraints": {"resourceRules": []}}}),
            "t",
        );
        assert_eq!(
            none.errors,
            vec![
                "spec.matchConstraints.resourceRules: Required value",
                "spec.mutations: Required value: mutations must contain at least one item",
                r#"spec.reinvocationPolicy: Unsupported value: "Sometimes": supported values: "IfNeeded", "Never""#,
            ]
        );
    }

    #[test]
    fn api_versions_per_minor() {
        let v = |m| Version::new(1, m);
        let api = |s: &str| format!("admissionregistration.k8s.io/{s}");
        assert_eq!(map_api_version(&api("v1"), v(36)), MapApiVersion::Served);
        assert!(matches!(
            map_api_version(&api("v1beta1"), v(36)),
            MapApiVersion::OffByDefault(n) if n.contains("--runtime-config=admissionregistration.k8s.io/v1beta1=true") && !n.contains("feature-gates")
        ));
        assert!(matches!(
            map_api_version(&api("v1beta1"), v(34)),
            MapApiVersion::OffByDefault(n) if n.contains("--feature-gates=MutatingAdmissionPolicy=true")
        ));
        assert!(matches!(
            map_api_version(&api("v1alpha1"), v(32)),
            MapApiVersion::OffByDefault(_)
        ));
        let MapApiVersion::NotServed(why) = map_api_version(&api("v1"), v(35)) else {
            panic!("v1 is not served by 1.35")
        };
        assert_eq!(
            why,
            "no matches for kind \"MutatingAdmissionPolicy\" in version \
             \"admissionregistration.k8s.io/v1\": Kubernetes 1.35 serves MutatingAdmissionPolicy \
             only as admissionregistration.k8s.io/v1alpha1 (alpha since 1.32), v1beta1 (beta \
             since 1.34); v1 is GA since 1.36"
        );
        assert!(matches!(
            map_api_version(&api("v1beta1"), v(33)),
            MapApiVersion::NotServed(_)
        ));
        let MapApiVersion::NotServed(why) = map_api_version(&api("v1alpha1"), v(31)) else {
            panic!("1.31 has no MutatingAdmissionPolicy")
        };
        assert!(why.ends_with("Kubernetes 1.31 has no MutatingAdmissionPolicy (alpha since 1.32)"));
        // The estimate still runs, and says so.
        let env = Env::for_kubernetes(v(35));
        let r = estimate_map(
            &env,
            &policy("v1", spec_with(json!([ac("Object{}")]), json!({}))),
            "t",
        );
        assert!(!r.valid);
        assert!(r.errors[0].starts_with("no matches for kind"));
        assert_eq!(r.expressions.len(), 1);
        let env = Env::for_kubernetes(v(36));
        let r = estimate_map(
            &env,
            &policy("v1alpha1", spec_with(json!([ac("Object{}")]), json!({}))),
            "t",
        );
        assert!(r.valid);
        assert_eq!(r.notes.len(), 1);
    }

    #[test]
    fn variable_name_errors_as_each_minor_words_them() {
        let spec = spec_with(
            json!([ac("Object{}")]),
            json!({"variables": [{"name": "1x", "expression": "1"}]}),
        );
        let words = |minor| {
            let env = Env::for_kubernetes(Version::new(1, minor));
            estimate_map(&env, &policy("v1alpha1", spec.clone()), "t").errors
        };
        assert_eq!(
            words(36),
            [r#"spec.variables[0].name: Invalid value: "1x": must be a valid CEL identifier"#]
        );
        assert_eq!(
            words(33),
            [r#"spec.variables[0].name: Invalid value: "1x": name is not a valid CEL identifier"#]
        );
    }
}
