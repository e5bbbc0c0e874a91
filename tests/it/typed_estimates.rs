//! Typed policy estimates (beyond upstream): `object`/`oldObject` typed from the schemas of the
//! matched resources, `params` from `paramKind`. The numbers below are derived by hand from the
//! cost model (`shared/docs/cel-cost-model.md` §4.4–§4.8, §7) in the comments.

use std::path::{Path, PathBuf};

use celcost::Estimator;
use celcost::input::{objects_of, parse_documents};
use celcost::report::{ExpressionReport, ObjectReport};
use celcost::schema::catalog::SchemaCatalog;
use serde_json::{Value, json};

const UNBOUNDED: u64 = u64::MAX;

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "name": {"type": "string", "maxLength": 10},
                    "tags": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 8}},
                    "items": {"type": "array", "items": {"type": "object", "required": ["id"],
                        "properties": {"id": {"type": "string"}}}}
                }}}
            }}}]
        }
    })
}

fn policy() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "widgets"},
        "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
                 "resources": ["widgets", "widgets/status"]}
            ]},
            "matchConditions": [{"name": "named", "expression": "has(object.spec.name)"}],
            "variables": [{"name": "items", "expression": "object.spec.items"}],
            "validations": [
                {"expression": "object.spec.tags.all(t, t.size() < 9)"},
                {"expression": "object.spec.items.exists(i, i.id == object.spec.name)"},
                {"expression": "object.spec.missing.all(x, x == 'a')"},
                {"expression": "params.data.exists(k, k == 'x')"},
                {"expression": "variables.items.all(i, i.id.size() > 0)"}
            ]
        }
    })
}

fn catalog() -> SchemaCatalog {
    let mut c = SchemaCatalog::new();
    c.add_crd(crd());
    c
}

fn expr<'a>(r: &'a ObjectReport, field: &str) -> &'a ExpressionReport {
    r.expressions
        .iter()
        .find(|e| e.field_path == field)
        .unwrap_or_else(|| panic!("no {field}"))
}

#[test]
fn typed_estimate_of_a_small_policy() {
    let r = Estimator::default().estimate_vap_with(&policy(), "test", &catalog());
    assert!(r.valid, "{:?}", r.errors);
    let typing = r.typing.as_ref().unwrap();
    assert_eq!(typing.schemas.len(), 1);
    assert_eq!(typing.schemas[0].resource, "example.com/v1/widgets");
    assert_eq!(typing.schemas[0].origin, "CRD widgets.example.com");
    assert_eq!(typing.params.as_ref().unwrap().kind, "ConfigMap");
    assert_eq!(
        typing.not_typed,
        ["example.com/v1/widgets/status: subresource (not typed, as upstream's type checking)"]
    );

    // `object.spec.tags.all(t, t.size() < 9)`, tags maxItems 5: range `object.spec.tags` 3
    // (ident + two selects on objects), predicate `t.size() < 9` 3, `all` = 3 + 5·(3+3) + 1.
    let e = expr(&r, "spec.validations[0].expression");
    assert_eq!(e.max_cost, Some(UNBOUNDED), "upstream: object is dyn");
    let t = e.typed.as_ref().unwrap();
    assert_eq!(t.against, ["example.com/v1/widgets"]);
    assert_eq!((t.min_cost, t.max_cost), (4, 34));
    assert!(!t.max_cost_unbounded);
    assert!(t.unbounded_fields.is_empty());

    // `object.spec.items.exists(i, i.id == object.spec.name)`: items have no maxItems and a
    // minimum serialized size of 2 + len("id") + 2 + 4 = 10, so 3,145,726 / 11 = 285,975 items;
    // `i.id == object.spec.name` = 2 + 3 + ceil(min(3,145,726, 10·4)·0.1) = 9;
    // `exists` = 3 + 285,975·(9+4) + 1.
    let e = expr(&r, "spec.validations[1].expression");
    let t = e.typed.as_ref().unwrap();
    assert_eq!(t.max_cost, 3_717_679);
    assert_eq!(
        t.unbounded_fields,
        ["object.spec.items", "object.spec.items[*].id"],
        "the list drives it most"
    );

    // A field the schema does not have: at runtime reading it is an error, so the loop never
    // runs: 3 (ident, two selects) + 0 iterations + 1.
    let e = expr(&r, "spec.validations[2].expression");
    let t = e.typed.as_ref().unwrap();
    assert_eq!(t.max_cost, 4);
    assert_eq!(
        t.absent_fields,
        ["object.spec.missing (not in example.com/v1/widgets)"]
    );

    // params is a ConfigMap: `data` is a map of strings without maxProperties,
    // 3,145,726 / (2 + 6) = 393,215 entries; keys are sized 0 (as for CRDs), so `k == 'x'` = 1;
    // `exists` = 2 + 393,215·(1+4) + 1.
    let e = expr(&r, "spec.validations[3].expression");
    let t = e.typed.as_ref().unwrap();
    assert_eq!(t.max_cost, 1_966_078);
    assert_eq!(t.unbounded_fields, ["params.data"]);

    // Through a variable: `variables.items` (2) holds `object.spec.items` (285,975 items);
    // `i.id.size() > 0` = 1 + 0 (select on dyn) + 1 + 1 = 3; `all` = 2 + 285,975·(3+3) + 1.
    let e = expr(&r, "spec.validations[4].expression");
    let t = e.typed.as_ref().unwrap();
    assert_eq!(t.max_cost, 1_715_853);
    assert_eq!(t.unbounded_fields, ["object.spec.items"]);
    assert_eq!(
        expr(&r, "spec.variables[0].expression")
            .typed
            .as_ref()
            .unwrap()
            .max_cost,
        3
    );

    // `has(object.spec.name)`: presence tests cost 0 + the operand (2); upstream 1 (select on
    // dyn costs 0).
    let e = expr(&r, "spec.matchConditions[0].expression");
    assert_eq!(e.max_cost, Some(1));
    assert_eq!(e.typed.as_ref().unwrap().max_cost, 2);

    let b = r.policy_budget.as_ref().unwrap();
    assert_eq!(b.validation_cost, UNBOUNDED);
    assert_eq!(
        b.typed_validation_cost,
        Some(34 + 3_717_679 + 4 + 1_966_078 + 1_715_853 + 3)
    );
    assert_eq!(b.match_conditions_cost, 1);
    assert_eq!(b.typed_match_conditions_cost, Some(2));
}

#[test]
fn without_schemas_there_is_no_typed_estimate() {
    let r = Estimator::default().estimate_vap_with(
        &policy(),
        "test",
        &SchemaCatalog::without_builtins(),
    );
    assert!(r.expressions.iter().all(|e| e.typed.is_none()));
    let b = r.policy_budget.as_ref().unwrap();
    assert_eq!(b.typed_validation_cost, None);
    let typing = r.typing.as_ref().unwrap();
    assert!(typing.schemas.is_empty());
    assert!(
        typing
            .not_typed
            .iter()
            .any(|n| n.starts_with("example.com/v1/widgets: no schema known"))
    );
    assert!(
        typing
            .not_typed
            .iter()
            .any(|n| n.starts_with("params: v1 ConfigMap"))
    );
}

#[test]
fn concatenated_lists_of_different_types_fall_back_to_dyn_with_schema_sizes() {
    // Containers + InitContainers only type-check as dyn (their element types differ), yet the
    // schema still bounds both lists.
    let p = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "pods"},
        "spec": {
            "matchConstraints": {"resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]},
            "variables": [{"name": "all", "expression": "object.spec.containers + object.spec.initContainers"}],
            "validations": [
                {"expression": "variables.all.all(c, c.name != '')"},
                {"expression": "(object.spec.containers + object.spec.initContainers).all(c, c.name != '')"}
            ]
        }
    });
    let r = Estimator::default().estimate_vap(&p, "test");
    for e in &r.expressions {
        assert_eq!(
            e.max_cost.map(|c| c > 1_000_000_000),
            Some(true),
            "{}",
            e.expression
        );
        let t = e.typed.as_ref().unwrap();
        assert!(!t.max_cost_unbounded, "{}: {t:?}", e.expression);
        assert!(t.error.is_none());
    }
    let v = &r.expressions[0].typed.as_ref().unwrap();
    assert_eq!(v.failed_against.len(), 1);
    assert!(v.failed_against[0].starts_with("v1/pods: compiled as upstream does (object as dyn)"));
}

fn corpus() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/vaps");
    p.is_dir().then_some(p)
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
}

/// The typed estimate is beside upstream's and never changes it; prints the share of
/// expressions it bounds.
#[test]
fn corpus_typed_estimates_leave_upstream_untouched() {
    let Some(dir) = corpus() else { return };
    let mut files = Vec::new();
    files_under(&dir, &mut files);
    let e = Estimator::default();
    let (mut total, mut unbounded, mut bounded_by_typed) = (0, 0, 0);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in parse_documents(&text) {
            let Ok(v) = doc.value else { continue };
            if !v.is_object() {
                continue;
            }
            for o in objects_of("x", v) {
                if o.value.get("kind") != Some(&json!("ValidatingAdmissionPolicy")) {
                    continue;
                }
                let typed = e.estimate_vap(&o.value, "x");
                let mut plain =
                    e.estimate_vap_with(&o.value, "x", &SchemaCatalog::without_builtins());
                let mut stripped = typed.clone();
                for x in &mut stripped.expressions {
                    x.typed = None;
                }
                if let Some(b) = stripped.policy_budget.as_mut() {
                    b.typed_validation_cost = None;
                    b.typed_match_conditions_cost = None;
                    b.typed_audit_annotations_cost = None;
                }
                stripped.typing = None;
                plain.typing = None;
                assert_eq!(stripped, plain, "{}", f.display());
                for x in &typed.expressions {
                    total += 1;
                    if x.max_cost_unbounded == Some(true) {
                        unbounded += 1;
                        if x.typed.as_ref().is_some_and(|t| !t.max_cost_unbounded) {
                            bounded_by_typed += 1;
                        }
                    }
                }
            }
        }
    }
    println!(
        "policy expressions: {total}; upstream unbounded: {unbounded}; bounded by the typed estimate: {bounded_by_typed}"
    );
    assert!(total > 250);
    assert!(
        bounded_by_typed * 2 > unbounded,
        "{bounded_by_typed}/{unbounded}"
    );
}

// Catalogs can be shared across threads: checked when this file compiles.
const _: () = {
    fn shared<T: Send + Sync + Clone>() {}
    let _ = shared::<SchemaCatalog>;
};

#[test]
fn the_cli_types_policies_from_the_crds_of_its_input() {
    let dir = std::env::temp_dir().join(format!("celcost-typed-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("crds")).unwrap();
    let yaml = |v: &Value| serde_json::to_string_pretty(v).unwrap();
    std::fs::write(dir.join("crds/widgets.json"), yaml(&crd())).unwrap();
    std::fs::write(dir.join("policy.json"), yaml(&policy())).unwrap();
    let e = Estimator::default();
    let out = celcost::cli::Run::new(&e).paths(std::slice::from_ref(&dir));
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.input_errors.is_empty(), "{:?}", out.input_errors);
    let kinds: Vec<&str> = out.reports.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["CustomResourceDefinition", "ValidatingAdmissionPolicy"]
    );
    let p = &out.reports[1];
    assert_eq!(
        p.typing.as_ref().unwrap().schemas[0].origin,
        "CRD widgets.example.com"
    );
    assert_eq!(
        expr(p, "spec.validations[0].expression")
            .typed
            .as_ref()
            .unwrap()
            .max_cost,
        34
    );
    let table = celcost::output::table::render_table(&out.reports);
    assert!(table.contains("UPSTREAM (OBJECT: DYN)"), "{table}");
    assert!(table.contains("typed against example.com/v1/widgets — CRD widgets.example.com"));
    assert!(table.contains("drivers: object.spec.items, object.spec.items[*].id"));

    // One text with both, as `Run::text` reads it.
    let text = format!("{}\n---\n{}\n", yaml(&policy()), yaml(&crd()));
    let mut o = celcost::cli::Outcome::default();
    celcost::cli::Run::new(&e).text("in.yaml", &text, &mut o);
    assert_eq!(o.reports.len(), 2);
    assert_eq!(o.reports[0].kind, "ValidatingAdmissionPolicy");
    assert_eq!(
        o.reports[0].typing.as_ref().unwrap().schemas[0].resource,
        "example.com/v1/widgets"
    );
}

#[test]
fn mutating_policies_get_typed_estimates_too() {
    // A MutatingAdmissionPolicy on widgets: the mutation is compiled with the patch types, and
    // typed from the CRD like a ValidatingAdmissionPolicy's expressions.
    let p = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "label-tags"},
        "spec": {
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
                 "resources": ["widgets"]}
            ]},
            "reinvocationPolicy": "Never",
            "variables": [{"name": "tags", "expression": "object.spec.tags"}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                "variables.tags.map(t, JSONPatch{op: \"add\", path: \"/metadata/labels/\" + jsonpatch.escapeKey(t), value: \"x\"})"}}]
        }
    });
    let r = Estimator::default()
        .estimate_with(&p, "test", &catalog())
        .unwrap();
    assert!(r.valid, "{:?}", r.errors);
    let e = expr(&r, "spec.mutations[0].jsonPatch.expression");
    assert_eq!(e.output_type, "list(JSONPatch)");
    assert_eq!(e.max_cost, Some(UNBOUNDED), "upstream: object is dyn");
    let t = e.typed.as_ref().unwrap();
    assert_eq!(t.against, ["example.com/v1/widgets"]);
    // tags has maxItems 5 and maxLength 8: the loop is bounded, and nothing is unbounded.
    assert!(!t.max_cost_unbounded && t.max_cost < 1_000, "{t:?}");
    assert!(t.unbounded_fields.is_empty() && t.unknown_size_fields.is_empty());
    // `variables.tags` = `object.spec.tags`: ident + two selects on objects.
    let v = expr(&r, "spec.variables[0].expression")
        .typed
        .as_ref()
        .unwrap();
    assert_eq!(v.max_cost, 3);
    // The mutation's budget: its expression and the variable it reads.
    let b = r.policy_budget.as_ref().unwrap();
    assert_eq!(b.mutation_cost, Some(UNBOUNDED));
    assert_eq!(b.typed_mutation_cost, Some(t.max_cost + 3));
    assert_eq!(b.validation_cost, 0);
}
