//! The whole objects the unit tests and the fuzz targets wrap what they exercise in: a
//! CustomResourceDefinition around its versions, a version around a schema, an admission policy
//! around its spec. One shape each, so a test says only what it varies.

use serde_json::{Value, json};

/// A CustomResourceDefinition `{plural}.{group}` of kind `kind` (singular: the kind in lower
/// case; list kind: the kind and `List`) in `scope` (`Namespaced` or `Cluster`).
pub fn crd(group: &str, plural: &str, kind: &str, scope: &str, versions: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {
                "plural": plural,
                "singular": kind.to_lowercase(),
                "kind": kind,
                "listKind": format!("{kind}List"),
            },
            "scope": scope,
            "versions": versions,
        }
    })
}

/// [`crd`] `widgets.example.com` (kind `Widget`, namespaced) of one version `v1` whose
/// `openAPIV3Schema` is `schema`.
pub fn widgets(schema: Value) -> Value {
    crd(
        "example.com",
        "widgets",
        "Widget",
        "Namespaced",
        json!([version("v1", true, schema)]),
    )
}

/// A served version `name` whose `openAPIV3Schema` is `schema`, the storage version if
/// `storage`.
pub fn version(name: &str, storage: bool, schema: Value) -> Value {
    json!({
        "name": name, "served": true, "storage": storage,
        "schema": {"openAPIV3Schema": schema},
    })
}

/// An admission policy of `kind` (`ValidatingAdmissionPolicy`, `MutatingAdmissionPolicy`),
/// `admissionregistration.k8s.io/v1`, named `name`.
pub fn policy(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// A policy's `matchConstraints`: `operations` on `resource` of the API group `group`, `v1`.
pub fn match_resource(group: &str, resource: &str, operations: &[&str]) -> Value {
    json!({"resourceRules": [{
        "apiGroups": [group], "apiVersions": ["v1"],
        "operations": operations, "resources": [resource],
    }]})
}
