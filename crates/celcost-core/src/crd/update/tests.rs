//! Update verdicts, from the facts of apiextensions `validation_test.go`
//! (`TestValidateCustomResourceDefinitionUpdate`: "suppress per-expression cost limit in
//! pre-existing versions", "... during top-level schema to Versions extraction";
//! `TestValidateCustomResourceDefinitionValidationRuleCompatibility`;
//! `TestValidateCustomResourceDefinitionStoredVersions`), on every minor of the table.

use serde_json::{Value, json};

use crate::Estimator;
use crate::cel::decls::Declarations;
use crate::cel::minor::{KUBERNETES, Minor, OPENSHIFT};
use crate::fixtures;
use crate::report::UpdateVerdict;

fn crd(versions: Value) -> Value {
    fixtures::crd("group.com", "plural", "Plural", "Cluster", versions)
}

/// A version whose schema has `f`, a list of unbounded strings, with a rule whose
/// messageExpression concatenates `n` of them (over the per-expression limit for n ≥ 8).
fn version(name: &str, storage: bool, n: usize) -> Value {
    let concat: Vec<String> = (0..n).map(|i| format!("self[{i}]")).collect();
    let rule = json!([{"rule": "true", "messageExpression": concat.join(" + ")}]);
    let f = json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": rule});
    fixtures::version(
        name,
        storage,
        json!({"type": "object", "properties": {"f": f}}),
    )
}

/// The errors on create, and their parts.
#[derive(Debug)]
struct Created(Vec<String>, Vec<crate::report::ErrorParts>);

impl std::ops::Deref for Created {
    type Target = Vec<String>;
    fn deref(&self) -> &Vec<String> {
        &self.0
    }
}

fn judge(minor: &'static Minor, old: &Value, new: &Value) -> (Created, UpdateVerdict) {
    let e = Estimator::for_minor(minor);
    let r = e.estimate_update(old, new, "new", "old");
    let u = r.update.clone().expect("an update verdict");
    (Created(r.errors, r.error_parts), u)
}

/// The field paths of the errors, sorted.
fn fields(errors: &[crate::report::ErrorParts]) -> Vec<String> {
    let mut f: Vec<String> = errors.iter().map(|e| e.field.clone()).collect();
    f.sort();
    f
}

fn every_minor() -> impl Iterator<Item = &'static Minor> {
    KUBERNETES.iter().chain(OPENSHIFT.iter())
}

#[test]
fn unchanged_versions_escape_the_per_expression_limit() {
    // Old: v1 and v2 (upstream's test has them alike, as an internal object with a schema per
    // version; from v1 JSON the conversion would hoist alike schemas into one, which answers
    // for v3 too: see the next test). New: v1 unchanged, v2 touched, v3 new.
    let old = crd(json!([version("v1", true, 8), version("v2", false, 7)]));
    let new = crd(json!([
        version("v1", true, 8),
        version("v2", false, 9),
        version("v3", false, 8)
    ]));
    let me = |i: usize| {
        format!(
            "spec.versions[{i}].schema.openAPIV3Schema.properties[f].x-kubernetes-validations[0].messageExpression"
        )
    };
    for minor in every_minor() {
        let (create, u) = judge(minor, &old, &new);
        assert_eq!(
            fields(&create.1),
            [me(0), me(1), me(2)],
            "{}: create",
            minor.label()
        );
        assert!(!u.valid, "{}", minor.label());
        // versions[0] is exempted because it existed in the stored object.
        assert_eq!(fields(&u.error_parts), [me(1), me(2)], "{}", minor.label());
        for e in &u.errors {
            assert!(
                e.contains(
                    "Forbidden: estimated messageExpression cost exceeds budget by factor of"
                ),
                "{e}"
            );
        }
        let unchanged: Vec<(&str, bool)> = u
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.schema_unchanged))
            .collect();
        assert_eq!(unchanged, [("v1", true), ("v2", false), ("v3", false)]);
        // What the unchanged schema lets through: the same error, held.
        assert_eq!(u.held.len(), 1, "{}", minor.label());
        let h = &u.held[0];
        assert_eq!(
            (h.what.as_str(), h.versions.as_slice()),
            ("messageExpression", &["v1".to_string()][..])
        );
        assert!(create.contains(&h.error), "{}", h.error);
    }
}

#[test]
fn a_stored_schema_every_version_shared_answers_for_new_versions_too() {
    // "suppress per-expression cost limit in new object during top-level schema to Versions
    // extraction": the stored object had one schema (top-level); v1 keeps it, v2 differs.
    let old = crd(json!([version("v1", true, 8)]));
    let new = crd(json!([version("v1", true, 8), version("v2", false, 9)]));
    for minor in every_minor() {
        let (_, u) = judge(minor, &old, &new);
        assert_eq!(
            fields(&u.error_parts),
            [
                "spec.versions[1].schema.openAPIV3Schema.properties[f].x-kubernetes-validations[0].messageExpression"
            ],
            "{}",
            minor.label()
        );
    }
    // A new version with the very schema the stored object shared is unchanged: the stored
    // top-level schema answers for any version name (`GetSchemaForVersion`).
    let new = crd(json!([version("v1", true, 8), version("v2", false, 8)]));
    let (create, u) = judge(&KUBERNETES[6], &old, &new);
    assert!(!create.is_empty());
    assert!(u.valid, "{:?}", u.errors);
    assert!(u.versions.iter().all(|v| v.schema_unchanged));
    // Per-version stored schemas answer only for their own names (v2 differs from v1 by a
    // description only, so that the new object keeps a schema per version).
    let old = crd(json!([version("v1", true, 8), version("v0", false, 7)]));
    let mut v2 = version("v2", false, 8);
    v2["schema"]["openAPIV3Schema"]["description"] = json!("v2");
    let new = crd(json!([version("v1", true, 8), v2]));
    let (_, u) = judge(&KUBERNETES[6], &old, &new);
    assert_eq!(
        fields(&u.error_parts),
        [
            "spec.versions[1].schema.openAPIV3Schema.properties[f].x-kubernetes-validations[0].messageExpression"
        ]
    );
}

#[test]
fn a_shared_schema_is_judged_by_the_first_version() {
    // The stored object had per-version schemas; the new one shares v1's: the hoisted schema
    // is judged by `spec.version` (v1), unchanged, though v2's changed.
    let old = crd(json!([version("v1", true, 8), version("v2", false, 9)]));
    let new = crd(json!([version("v1", true, 8), version("v2", false, 8)]));
    let (create, u) = judge(&KUBERNETES[6], &old, &new);
    assert_eq!(create.len(), 1, "{create:?}");
    assert!(u.valid, "{:?}", u.errors);
    assert_eq!(u.held.len(), 1);
    assert_eq!(u.held[0].versions, ["v1", "v2"]);
    // The other way round: v2 first, changed.
    let new = crd(json!([version("v2", false, 8), version("v1", true, 8)]));
    let (_, u) = judge(&KUBERNETES[6], &old, &new);
    assert!(!u.valid);
    assert!(u.held.is_empty());
}

#[test]
fn schema_equality_is_the_api_servers() {
    let base = version("v1", true, 8);
    let old = crd(json!([base.clone()]));
    let with = |path: &str, key: &str, v: Value| {
        let mut x = base.clone();
        x.pointer_mut(path)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .insert(key.into(), v);
        crd(json!([x]))
    };
    let f = "/schema/openAPIV3Schema/properties/f";
    let unchanged = |new: &Value| judge(&KUBERNETES[6], &old, new).1.valid;
    // Go's zero values: an empty description, `required: []`, `nullable: false` are absent.
    assert!(unchanged(&with(f, "description", json!(""))));
    assert!(unchanged(&with(f, "nullable", json!(false))));
    assert!(unchanged(&with(
        "/schema/openAPIV3Schema",
        "required",
        json!([])
    )));
    // A pointer: `x-kubernetes-preserve-unknown-fields: false` is not absent; nor is a bound.
    assert!(!unchanged(&with(
        f,
        "x-kubernetes-preserve-unknown-fields",
        json!(false)
    )));
    assert!(!unchanged(&with(f, "maxItems", json!(1000))));
    // Anything else in the version (printer columns, served) is not the schema.
    let mut cols = base.clone();
    cols["additionalPrinterColumns"] = json!([{"name": "F", "type": "string", "jsonPath": ".f"}]);
    cols["served"] = json!(false);
    assert!(unchanged(&crd(json!([cols]))));
    // An unrelated description is a change.
    assert!(!unchanged(&with(f, "description", json!("tags"))));
}

/// An expression per library section that compiles in no environment without it, for the
/// libraries a minor may have in its stored-expressions environment only.
const NEEDS: &[(&str, &str)] = &[
    ("kubernetes.net.ip", "isIP('1.2.3.4')"),
    ("kubernetes.net.cidr", "isCIDR('10.0.0.0/8')"),
    (
        "kubernetes.format",
        "!format.dns1123Label().validate('a').hasValue()",
    ),
    ("cel.lib.ext.comprev2", "[1].all(i, v, v > 0)"),
    ("kubernetes.Semver", "isSemver('1.0.0')"),
    ("cel.lib.ext.lists", "lists.range(2).size() == 2"),
    ("kubernetes.lists.v1", "[1, 2].includes(2)"),
];

/// A library (and an expression needing it) that `minor`'s stored-expressions environment has
/// and its new-expressions one does not.
fn stored_only_library(minor: &'static Minor) -> Option<(&'static str, &'static str)> {
    let new = Declarations::for_minor(minor, false);
    let stored = Declarations::for_minor_stored(minor);
    NEEDS.iter().copied().find(|(lib, _)| {
        stored.libraries.iter().any(|l| l == lib) && !new.libraries.iter().any(|l| l == lib)
    })
}

/// `TestValidateCustomResourceDefinitionValidationRuleCompatibility`'s CRD: the same rule on
/// a string, an object and its field, a list and its items, a map and its values.
fn compat_crd(rule: &str, message_expression: &str) -> Value {
    let rules = json!([{"rule": rule, "messageExpression": message_expression}]);
    crd(json!([{
        "name": "version", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "x": {"type": "string", "x-kubernetes-validations": rules},
                "obj": {
                    "type": "object",
                    "properties": {"a": {"type": "string", "x-kubernetes-validations": rules}},
                    "x-kubernetes-validations": rules,
                },
                "array": {
                    "type": "array", "maxItems": 1,
                    "items": {"type": "string", "x-kubernetes-validations": rules},
                    "x-kubernetes-validations": rules,
                },
                "map": {
                    "type": "object", "maxProperties": 1,
                    "additionalProperties": {"type": "string", "x-kubernetes-validations": rules},
                    "x-kubernetes-validations": rules,
                },
            },
        }},
    }]))
}

fn all_at(what: &str) -> Vec<String> {
    let root = "spec.validation.openAPIV3Schema";
    let mut v: Vec<String> = [
        "properties[x]",
        "properties[obj]",
        "properties[obj].properties[a]",
        "properties[array]",
        "properties[array].items",
        "properties[map]",
        "properties[map].additionalProperties",
    ]
    .iter()
    .map(|n| format!("{root}.{n}.x-kubernetes-validations[0].{what}"))
    .collect();
    v.sort();
    v
}

#[test]
fn stored_expressions_compile_in_the_stored_environment() {
    let mut covered = Vec::new();
    for minor in every_minor() {
        let Some((lib, needs)) = stored_only_library(minor) else {
            continue;
        };
        covered.push(minor.label());
        let rule = format!("{needs} == true");
        let other_rule = format!("{needs} == false");
        let message = format!("'test: %s'.format([string({needs})])");
        let other_message = format!("'test - updated: %s'.format([string({needs})])");
        let stored = compat_crd(&rule, &message);
        // On create, the library is not there.
        let (create, _) = judge(minor, &stored, &stored);
        assert_eq!(
            fields(&create.1),
            all_at("rule"),
            "{} ({lib})",
            minor.label()
        );
        // Unchanged: allowed (1.30 looked messageExpressions up among the stored rules).
        let (_, u) = judge(minor, &stored, &stored);
        if minor.stored_message_expressions_by_rule {
            assert_eq!(fields(&u.error_parts), all_at("messageExpression"));
        } else {
            assert!(u.valid, "{} ({lib}): {:?}", minor.label(), u.errors);
        }
        assert!(
            u.stored_only.len() >= 7,
            "{}: {:?}",
            minor.label(),
            u.stored_only
        );
        // The rule changed: not allowed.
        let (_, u) = judge(minor, &compat_crd(&other_rule, &message), &stored);
        // (A rule that does not compile leaves its messageExpression uncompiled.)
        assert_eq!(
            fields(&u.error_parts),
            all_at("rule"),
            "{} ({lib})",
            minor.label()
        );
        for e in &u.errors {
            assert!(e.contains("Invalid value"), "{e}");
        }
        // The messageExpression changed: not allowed.
        let (_, u) = judge(minor, &stored, &compat_crd(&rule, &other_message));
        assert_eq!(
            fields(&u.error_parts),
            all_at("messageExpression"),
            "{} ({lib})",
            minor.label()
        );
    }
    // 1.30 to 1.34 each have a library only stored expressions may use (upstream and
    // OpenShift), and 1.37 (the lists library's `includes`).
    assert!(covered.len() >= 8, "{covered:?}");
    assert!(covered.contains(&"1.37".to_string()), "{covered:?}");
    assert!(
        covered.contains(&"1.37 (openshift)".to_string()),
        "{covered:?}"
    );
}

#[test]
fn in_1_30_a_message_expression_is_looked_up_among_the_stored_rules() {
    let one = |rules: Value| {
        crd(json!([{
            "name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"x": {"type": "string", "x-kubernetes-validations": rules}},
            }},
        }]))
    };
    for minor in every_minor() {
        let Some((_, needs)) = stored_only_library(minor) else {
            continue;
        };
        let message = format!("'test: %s'.format([string({needs})])");
        // Stored: an entry whose *rule* is the messageExpression's text (it does not compile
        // as a rule, but it is stored text); new: the text as a messageExpression.
        let old = one(json!([{"rule": message, "messageExpression": "'x'"}]));
        let new = one(json!([{"rule": "true", "messageExpression": message}]));
        let (_, u) = judge(minor, &old, &new);
        assert_eq!(
            u.valid,
            minor.stored_message_expressions_by_rule,
            "{}: {:?}",
            minor.label(),
            u.errors
        );
        // And the stored messageExpression itself is not found in 1.30.
        let old = one(json!([{"rule": "true", "messageExpression": message}]));
        let (_, u) = judge(minor, &old, &old);
        assert_eq!(
            u.valid,
            !minor.stored_message_expressions_by_rule,
            "{}",
            minor.label()
        );
    }
}

/// A version whose list `f` of unbounded strings has `n` rules of about 19,000,000 each.
fn costly(n: usize) -> Value {
    let rules: Vec<Value> = (0..n)
        .map(|i| {
            json!({"rule": format!(
                "self.all(x, x.size() < {i}) && self.all(x, x.size() >= 0) && self.exists(x, x == 'a')"
            )})
        })
        .collect();
    crd(json!([{
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {"f": {
                "type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": rules,
            }},
        }},
    }]))
}

#[test]
fn the_total_is_still_checked() {
    for minor in every_minor() {
        for n in [2, 6] {
            let stored = costly(n);
            let (create, u) = judge(minor, &stored, &stored);
            let e = Estimator::for_minor(minor).estimate_crd(&stored, "x");
            let total = e.schemas[0].total_cost;
            let over: Vec<u64> = e.schemas[0]
                .rules
                .iter()
                .filter(|r| r.exceeds_cost_limit)
                .map(|r| r.cost)
                .collect();
            assert_eq!(over.len(), n, "{}: {:?}", minor.label(), e.schemas[0].rules);
            assert_eq!(
                u.held.iter().map(|h| h.cost).collect::<Vec<_>>(),
                over,
                "{}",
                minor.label()
            );
            let total_error = u
                .errors
                .iter()
                .any(|x| x.contains("estimated rule cost total for entire OpenAPIv3 schema"));
            assert_eq!(total_error, total > 100_000_000, "{}", minor.label());
            assert_eq!(u.valid, total <= 100_000_000, "{:?}", u.errors);
            assert!(
                !u.errors
                    .iter()
                    .any(|x| x.contains("Forbidden: estimated rule cost exceeds")),
                "{:?}",
                u.errors
            );
            assert!(create.len() > u.errors.len());
            // 2 fit the total, 6 do not.
            assert_eq!(u.valid, n == 2, "{}: total {total}", minor.label());
        }
    }
}

#[test]
fn a_non_structural_stored_schema_turns_the_checks_off() {
    // `requireStructuralSchema(old)`: a stored non-structural schema (only a v1beta1 create
    // could store one) lets the update skip structure, defaults and rules.
    let bad = |rule: &str| {
        crd(json!([{
            "name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "f": {"type": "array", "items": {"type": "string"},
                          "x-kubernetes-validations": [{"rule": rule}]},
                    "g": {"properties": {"h": {"type": "string"}}},
                },
            }},
        }]))
    };
    let old = bad("self.all(x, x.matches('^a$'))");
    let new = bad("self.all(x, x.matches('^b$'))");
    let (create, u) = judge(&KUBERNETES[6], &old, &new);
    assert!(create.iter().any(|e| e.contains("type: Required value")));
    assert!(u.valid, "{:?}", u.errors);
}

#[test]
fn stored_versions_and_immutable_fields() {
    let v = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object"}}})
    };
    let mut old = crd(json!([v("v1", false), v("v2", true)]));
    old["status"] = json!({
        "storedVersions": ["v1", "v2"],
        "conditions": [{"type": "Established", "status": "True"}],
    });
    // v1 was stored and is gone.
    let mut new = crd(json!([v("v2", true)]));
    for minor in &KUBERNETES {
        let (_, u) = judge(minor, &old, &new);
        let want = if minor.kubernetes.minor >= 33 {
            r#"status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"#
        } else {
            r#"status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions"#
        };
        assert_eq!(u.errors, [want], "{}", minor.label());
    }
    // Scope and kind are immutable once established; group and plural always.
    new = crd(json!([v("v1", false), v("v2", true)]));
    new["spec"]["scope"] = json!("Namespaced");
    new["spec"]["names"]["kind"] = json!("Other");
    let (_, u) = judge(&KUBERNETES[6], &old, &new);
    assert_eq!(
        u.errors,
        [
            r#"spec.scope: Invalid value: "Namespaced": field is immutable"#,
            r#"spec.names.kind: Invalid value: "Other": field is immutable"#,
        ]
    );
    old["status"]["conditions"] = json!([]);
    let (_, u) = judge(&KUBERNETES[6], &old, &new);
    assert!(u.valid, "{:?}", u.errors);
    // Without a status (a manifest standing for the stored object): established, stored
    // versions = the storage version it was created with.
    old.as_object_mut().unwrap().remove("status");
    let (_, u) = judge(&KUBERNETES[6], &old, &crd(json!([v("v1", true)])));
    assert_eq!(u.errors.len(), 1, "{:?}", u.errors);
    assert!(u.errors[0].starts_with("status.storedVersions[0]: Invalid value: \"v2\""));
    // Two storage versions: the second is not a stored version (create and update alike).
    let two = crd(json!([v("v1", true), v("v2", true)]));
    let create = Estimator::for_minor(&KUBERNETES[6]).estimate_crd(&two, "x");
    assert!(
        create.errors.contains(
            &r#"status.storedVersions: Invalid value: ["v1"]: must have the storage version v2"#
                .to_string()
        ),
        "{:?}",
        create.errors
    );
}
