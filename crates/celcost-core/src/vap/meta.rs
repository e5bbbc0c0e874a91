//! Object checks of a policy create that are not CEL: `ValidateObjectMeta` (name, owner
//! references) and the spec fields the API server requires (after defaulting).

use serde_json::Value;

use crate::cel::decls::Version;
use crate::crd::fielderr::{BadValue, FieldError};

/// The array at `key` of a JSON object (none when it is absent or no array).
fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && label.as_bytes()[0].is_ascii_alphanumeric()
                && label.as_bytes()[label.len() - 1].is_ascii_alphanumeric()
        })
}

/// `ValidateQualifiedName`: `[prefix/]name` with a 63-character name part.
pub(super) fn validate_qualified_name(value: &str, field: &str, k: Version) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (prefix, name) = match value.split_once('/') {
        Some((p, n)) if !n.contains('/') => (Some(p), n),
        Some(_) => {
            errs.push(FieldError::invalid(
                field,
                BadValue::Str(value.into()),
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ));
            return errs;
        }
        None => (None, value),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push(FieldError::invalid(
                field,
                BadValue::Str(value.into()),
                "prefix part must be non-empty",
            ));
        } else if !is_dns1123_subdomain(p) {
            errs.push(FieldError::invalid(
                field,
                BadValue::Str(value.into()),
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ));
        }
    }
    if name.is_empty() {
        errs.push(FieldError::invalid(
            field,
            BadValue::Str(value.into()),
            "name part must be non-empty",
        ));
    } else if name.len() > 63 {
        errs.push(FieldError::invalid(
            field,
            BadValue::Str(value.into()),
            &format!("name part {}", crate::crd::fielderr::max_len(k, 63)),
        ));
    } else {
        let b = name.as_bytes();
        let ok = b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_' || *c == b'.');
        if !ok {
            errs.push(FieldError::invalid(
                field,
                BadValue::Str(value.into()),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ));
        }
    }
    errs
}

/// `ValidateObjectMeta` for a cluster-scoped object named as a DNS subdomain.
pub(super) fn validate_object_meta(meta: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let meta = meta.cloned().unwrap_or(Value::Null);
    let name = meta.get("name").and_then(Value::as_str).unwrap_or_default();
    let generate = meta
        .get("generateName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name.is_empty() && generate.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else if !name.is_empty() && !is_dns1123_subdomain(name) {
        errs.push(FieldError::invalid(
            "metadata.name",
            BadValue::Str(name.into()),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ));
    }
    if let Some(ns) = meta.get("namespace").and_then(Value::as_str)
        && !ns.is_empty()
    {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    for r in array(&meta, "ownerReferences") {
        let s = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let api = s("apiVersion");
        if api.is_empty() {
            errs.push(FieldError::invalid(
                "metadata.ownerReferences.apiVersion",
                BadValue::Str(api.clone()),
                "version must not be empty",
            ));
        }
        for f in ["kind", "name", "uid"] {
            if s(f).is_empty() {
                errs.push(
                    FieldError::invalid(
                        &format!("metadata.ownerReferences.{f}"),
                        BadValue::Str(String::new()),
                        "must not be empty",
                    )
                    .repeating_before_1_34(&format!("{f} must not be empty")),
                );
            }
        }
    }
    errs
}

/// Required and enumerated spec fields (values after the API server's defaulting).
pub(super) fn validate_spec(spec: &Value, k: Version) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // The enumerated fields, where they are set.
    let enumerated: [(_, _, _, &[&str]); 2] = [
        (
            "/failurePolicy",
            "spec.failurePolicy",
            "admissionregistration.FailurePolicyType",
            &["Fail", "Ignore"],
        ),
        (
            "/matchConstraints/matchPolicy",
            "spec.matchConstraints.matchPolicy",
            "admissionregistration.MatchPolicyType",
            &["Equivalent", "Exact"],
        ),
    ];
    for (pointer, field, go_type, supported) in enumerated {
        if let Some(v) = spec.pointer(pointer).and_then(Value::as_str) {
            errs.extend(FieldError::unless_one_of(field, go_type, v, supported));
        }
    }
    match spec.get("matchConstraints") {
        None | Some(Value::Null) => errs.push(FieldError::required("spec.matchConstraints", "")),
        Some(mc) => {
            if array(mc, "resourceRules").is_empty() {
                errs.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
            for key in ["resourceRules", "excludeResourceRules"] {
                for (i, r) in array(mc, key).iter().enumerate() {
                    let base = format!("spec.matchConstraints.{key}[{i}]");
                    let arr = |k: &str| array(r, k);
                    if arr("operations").is_empty() {
                        errs.push(FieldError::required(&format!("{base}.operations"), ""));
                    }
                    for (j, op) in arr("operations").iter().enumerate() {
                        let op = op.as_str().unwrap_or_default();
                        errs.extend(FieldError::unless_one_of(
                            &format!("{base}.operations[{j}]"),
                            "admissionregistration.OperationType",
                            op,
                            &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
                        ));
                    }
                    for f in ["apiGroups", "apiVersions", "resources"] {
                        if arr(f).is_empty() {
                            errs.push(FieldError::required(&format!("{base}.{f}"), ""));
                        }
                    }
                }
            }
        }
    }
    let names: Vec<&str> = array(spec, "matchConditions")
        .iter()
        .map(|m| m.get("name").and_then(Value::as_str).unwrap_or_default())
        .collect();
    for (i, n) in names.iter().enumerate() {
        let f = format!("spec.matchConditions[{i}].name");
        if n.is_empty() {
            errs.push(FieldError::required(&f, ""));
        } else {
            errs.extend(validate_qualified_name(n, &f, k));
            if names[..i].contains(n) {
                errs.push(FieldError::duplicate(&f, BadValue::Str(n.to_string())));
            }
        }
    }
    errs
}

/// `supportedMutatingOperations`: a MutatingAdmissionPolicy cannot mutate DELETE requests.
const MUTATING_OPERATIONS: [&str; 4] = ["*", "CONNECT", "CREATE", "UPDATE"];

/// The spec checks a MutatingAdmissionPolicy adds to the ones it shares with a
/// ValidatingAdmissionPolicy ([`validate_spec`]): operations it can mutate (reported once per
/// rule and operation, at `spec.matchConstraints.resourceRules.operations`, without index, as
/// upstream does) and `reinvocationPolicy` (required, no default).
pub(super) fn validate_mutating_spec(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for rule in spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for op in rule
            .get("operations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let op = op.as_str().unwrap_or_default();
            if !MUTATING_OPERATIONS.contains(&op) {
                errs.push(FieldError::not_supported(
                    "spec.matchConstraints.resourceRules.operations",
                    BadValue::Str(op.into()),
                    &MUTATING_OPERATIONS,
                ));
            }
        }
    }
    errs
}

/// `spec.reinvocationPolicy`: required (no default), `IfNeeded` or `Never`.
pub(super) fn validate_reinvocation_policy(spec: &Value) -> Option<FieldError> {
    match spec.get("reinvocationPolicy").and_then(Value::as_str) {
        None | Some("") => Some(FieldError::required("spec.reinvocationPolicy", "")),
        Some("IfNeeded" | "Never") => None,
        Some(other) => Some(FieldError::not_supported(
            "spec.reinvocationPolicy",
            BadValue::Str(other.into()),
            &["IfNeeded", "Never"],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rendered(errs: &[FieldError], k: Version) -> Vec<String> {
        errs.iter().map(|e| e.render(k)).collect()
    }

    #[test]
    fn owner_reference_details_by_minor() {
        let meta = json!({"name": "p", "ownerReferences": [{"apiVersion": "v1"}]});
        for (minor, prefix) in [(30, true), (33, true), (34, false), (36, false)] {
            let k = Version::new(1, minor);
            let want: Vec<String> = ["kind", "name", "uid"]
                .iter()
                .map(|f| {
                    let named = if prefix { format!("{f} ") } else { String::new() };
                    format!("metadata.ownerReferences.{f}: Invalid value: \"\": {named}must not be empty")
                })
                .collect();
            assert_eq!(
                rendered(&validate_object_meta(Some(&meta)), k),
                want,
                "1.{minor}"
            );
        }
    }

    #[test]
    fn enumerated_values_are_named_string_types() {
        // `FailurePolicyType` is no `string`: from 1.34 it is rendered as JSON, not with `%q`.
        let spec = json!({"failurePolicy": "<x>", "matchConstraints": {"resourceRules": [
            {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}});
        let errs = validate_spec(&spec, Version::new(1, 36));
        let supported = "supported values: \"Fail\", \"Ignore\"";
        assert_eq!(
            rendered(&errs, Version::new(1, 33)),
            [format!(
                "spec.failurePolicy: Unsupported value: \"<x>\": {supported}"
            )]
        );
        assert_eq!(
            rendered(&errs, Version::new(1, 34)),
            [format!(
                "spec.failurePolicy: Unsupported value: \"\\u003cx\\u003e\": {supported}"
            )]
        );
    }
}
