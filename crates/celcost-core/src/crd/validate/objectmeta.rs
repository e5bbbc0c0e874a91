//! Object metadata inside default values (k8s.io/apiextensions-apiserver
//! pkg/apiserver/schema/objectmeta): `Coerce` (TypeMeta must be strings, `metadata` must decode
//! as an `ObjectMeta`, which it is normalized to) and `Validate` (an embedded resource needs
//! `apiVersion` and `kind`, and its metadata must be valid).

use crate::crd::fielderr::max_len;
use serde_json::{Map, Value};

use crate::cel::decls::Version;
use crate::crd::fielderr::{BadValue, FieldError};
use crate::schema::{AdditionalProperties, Schema};

fn child(pth: &str, k: &str) -> String {
    if pth.is_empty() {
        k.to_string()
    } else {
        format!("{pth}.{k}")
    }
}

fn additional_schema(s: &Schema) -> Option<Option<&Schema>> {
    match &s.additional_properties {
        None => None,
        Some(AdditionalProperties::Schema(a)) => Some(Some(a)),
        Some(AdditionalProperties::Bool(_)) => Some(None),
    }
}

/// `objectmeta.Coerce(pth, x, s, isResourceRoot, dropInvalidFields=false)`: the first problem.
pub(super) fn coerce(
    pth: &str,
    x: &mut Value,
    s: Option<&Schema>,
    is_resource_root: bool,
) -> Result<(), Box<FieldError>> {
    let Some(s) = s else { return Ok(()) };
    coerce_node(pth, x, s, s.x_embedded_resource || is_resource_root)
}

fn coerce_node(
    pth: &str,
    x: &mut Value,
    s: &Schema,
    embedded: bool,
) -> Result<(), Box<FieldError>> {
    crate::budget::charge(1);
    match x {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let v = map[&k].clone();
                if embedded {
                    match k.as_str() {
                        "apiVersion" | "kind" if !v.is_string() => {
                            return Err(Box::new(FieldError::invalid(
                                &child(pth, &k),
                                BadValue::any(v),
                                "must be a string",
                            )));
                        }
                        "metadata" => match decode_object_meta(&v) {
                            Err(e) => {
                                return Err(Box::new(FieldError::invalid(
                                    &child(pth, "metadata"),
                                    BadValue::any(v),
                                    &e,
                                )));
                            }
                            Ok(meta) => {
                                map.insert(k.clone(), meta);
                            }
                        },
                        _ => {}
                    }
                }
                let mut v = v;
                if let Some(p) = s.properties.get(&k) {
                    coerce_node(&child(pth, &k), &mut v, p, p.x_embedded_resource)?;
                } else if let Some(Some(a)) = additional_schema(s) {
                    coerce_node(&format!("{pth}[{k}]"), &mut v, a, a.x_embedded_resource)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            if let Some(i) = &s.items {
                for (n, v) in items.iter_mut().enumerate() {
                    coerce_node(&format!("{pth}[{n}]"), v, i, i.x_embedded_resource)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `objectmeta.Validate(pth, x, s, isResourceRoot)`.
pub(super) fn validate(
    pth: &str,
    x: &Value,
    s: Option<&Schema>,
    is_resource_root: bool,
    k: Version,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(s) = s {
        validate_node(
            pth,
            x,
            s,
            s.x_embedded_resource || is_resource_root,
            k,
            &mut errs,
        );
    }
    errs
}

fn validate_node(
    pth: &str,
    x: &Value,
    s: &Schema,
    embedded: bool,
    k: Version,
    errs: &mut Vec<FieldError>,
) {
    crate::budget::charge(1);
    match x {
        Value::Object(map) => {
            if embedded {
                validate_embedded_resource(pth, map, k, errs);
            }
            for (key, v) in map {
                if let Some(p) = s.properties.get(key) {
                    validate_node(&child(pth, key), v, p, p.x_embedded_resource, k, errs);
                } else if let Some(Some(a)) = additional_schema(s) {
                    validate_node(
                        &format!("{pth}[{key}]"),
                        v,
                        a,
                        a.x_embedded_resource,
                        k,
                        errs,
                    );
                }
            }
        }
        Value::Array(items) => {
            if let Some(i) = &s.items {
                for (n, v) in items.iter().enumerate() {
                    validate_node(&format!("{pth}[{n}]"), v, i, i.x_embedded_resource, k, errs);
                }
            }
        }
        _ => {}
    }
}

/// `validateEmbeddedResource`.
fn validate_embedded_resource(
    pth: &str,
    x: &Map<String, Value>,
    k: Version,
    errs: &mut Vec<FieldError>,
) {
    let required = |f: &str| {
        FieldError::required(&child(pth, f), "").repeating_before_1_34("must not be empty")
    };
    if !x.contains_key("apiVersion") {
        errs.push(required("apiVersion"));
    }
    if !x.contains_key("kind") {
        errs.push(required("kind"));
    }
    for (key, v) in x {
        match key.as_str() {
            "apiVersion" => {
                let f = child(pth, "apiVersion");
                match non_empty_string(&f, v, errs) {
                    Some(gv) if gv != "/" && gv.matches('/').count() > 1 => {
                        errs.push(FieldError::invalid(
                            &f,
                            BadValue::Str(gv.to_string()),
                            &format!("unexpected GroupVersion string: {gv}"),
                        ))
                    }
                    _ => {}
                }
            }
            "kind" => {
                let f = child(pth, "kind");
                if let Some(kind) = non_empty_string(&f, v, errs) {
                    let problems = dns1035_label(&kind.to_lowercase());
                    if !problems.is_empty() {
                        errs.push(FieldError::invalid(
                            &f,
                            BadValue::Str(kind.to_string()),
                            &format!(
                                "may have mixed case, but should otherwise match: {}",
                                problems.join(",")
                            ),
                        ));
                    }
                }
            }
            "metadata" => {
                let f = child(pth, "metadata");
                match decode_object_meta(v) {
                    Err(e) => errs.push(FieldError::invalid(&f, BadValue::any(v.clone()), &e)),
                    Ok(meta) => validate_object_meta(&f, &meta, k, errs),
                }
            }
            _ => {}
        }
    }
}

/// `RegexError(msg, fmt, examples...)`.
/// `v` if it is a string that is not empty; else the error the embedded resource's
/// `apiVersion` and `kind` get for it.
fn non_empty_string<'v>(f: &str, v: &'v Value, errs: &mut Vec<FieldError>) -> Option<&'v str> {
    match v.as_str() {
        None => errs.push(FieldError::invalid(
            f,
            BadValue::any(v.clone()),
            "must be a string",
        )),
        Some("") => errs.push(FieldError::invalid(
            f,
            BadValue::Str(String::new()),
            "must not be empty",
        )),
        Some(s) => return Some(s),
    }
    None
}

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn is_label_name(v: &str) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_label(v: &str) -> bool {
    let b = v.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && alnum(&b[0])
        && alnum(&b[b.len() - 1])
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

fn is_dns1123_subdomain(v: &str) -> bool {
    v.split('.').all(is_dns1123_label)
}

/// `IsDNS1035Label`.
fn dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = v.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsDNS1123Label`.
fn dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !is_dns1123_label(v) {
        if is_dns1123_subdomain(v) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `content.IsLabelKey` (`IsQualifiedName`).
fn label_key(v: &str, k: Version) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = v.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push(format!("prefix part {}", max_len(k, 253)));
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"],
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(k, 63)));
    }
    if !is_label_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `content.IsLabelValue`.
fn label_value(v: &str, k: Version) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push(max_len(k, 63));
    }
    if !v.is_empty() && !is_label_name(v) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `content.IsPathSegmentName` / `IsPathSegmentPrefix`.
fn path_segment(name: &str, prefix: bool) -> Vec<String> {
    if !prefix && (name == "." || name == "..") {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// `ValidateObjectMeta(meta, namespaced=len(namespace)>0, pathSegment, fld)` with the name
/// defaulted to `fakename`.
fn validate_object_meta(fld: &str, meta: &Value, k: Version, errs: &mut Vec<FieldError>) {
    let get = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or_default();
    let generate_name = get("generateName");
    if !generate_name.is_empty() {
        for msg in path_segment(generate_name, true) {
            errs.push(FieldError::invalid(
                &format!("{fld}.generateName"),
                BadValue::Str(generate_name.to_string()),
                &msg,
            ));
        }
    }
    let name = match get("name") {
        "" => "fakename",
        n => n,
    };
    for msg in path_segment(name, false) {
        errs.push(FieldError::invalid(
            &format!("{fld}.name"),
            BadValue::Str(name.to_string()),
            &msg,
        ));
    }
    let namespace = get("namespace");
    if !namespace.is_empty() {
        for msg in dns1123_label(namespace) {
            errs.push(FieldError::invalid(
                &format!("{fld}.namespace"),
                BadValue::Str(namespace.to_string()),
                &msg,
            ));
        }
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        let f = format!("{fld}.labels");
        for (key, v) in labels {
            for msg in label_key(key, k) {
                errs.push(FieldError::invalid(&f, BadValue::Str(key.clone()), &msg));
            }
            let v = v.as_str().unwrap_or_default();
            for msg in label_value(v, k) {
                errs.push(FieldError::invalid(&f, BadValue::Str(v.to_string()), &msg));
            }
        }
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64)
        && g < 0
    {
        errs.push(FieldError::invalid(
            &format!("{fld}.generation"),
            BadValue::Int(g),
            "must be greater than or equal to 0",
        ));
    }
}

/// The JSON type name `encoding/json` reports in an `UnmarshalTypeError` for a value that
/// does not fit a `go` type (numbers that do not fit an integer type are quoted).
fn json_type(v: &Value, go: &str) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => {
            if go == "int64" && crate::crd::fielderr::go_int(n).is_none() {
                format!("number {}", crate::crd::fielderr::go_json(v))
            } else {
                "number".into()
            }
        }
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// Decodes `metadata` as a `metav1.ObjectMeta` (JSON round trip, unknown fields dropped) and
/// returns it as `SetObjectMeta` writes it back, or the decoding error.
pub(super) fn decode_object_meta(v: &Value) -> Result<Value, String> {
    let Value::Object(m) = v else {
        if v.is_null() {
            return Ok(Value::Object(Map::new()));
        }
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            json_type(v, "v1.ObjectMeta")
        ));
    };
    let type_err = |field: &str, v: &Value, go: &str| {
        format!(
            "json: cannot unmarshal {} into Go struct field ObjectMeta.{field} of type {go}",
            json_type(v, go)
        )
    };
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let mut out = Map::new();
    let mut first_err: Option<String> = None;
    let mut fail = |e: String| {
        if first_err.is_none() {
            first_err = Some(e);
        }
    };
    for k in keys {
        let val = &m[k.as_str()];
        if val.is_null() {
            continue;
        }
        match k.as_str() {
            "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" => {
                match val.as_str() {
                    Some("") => {}
                    Some(_) => {
                        out.insert(k.clone(), val.clone());
                    }
                    None => fail(type_err(k, val, "string")),
                }
            }
            "generation" | "deletionGracePeriodSeconds" => match val {
                Value::Number(n) if crate::crd::fielderr::go_int(n).is_some() => {
                    let i = crate::crd::fielderr::go_int(n).unwrap_or_default();
                    if k == "deletionGracePeriodSeconds" || i != 0 {
                        out.insert(k.clone(), Value::from(i));
                    }
                }
                _ => fail(type_err(k, val, "int64")),
            },
            "labels" | "annotations" => match val {
                Value::Object(lm) => {
                    let mut kept = Map::new();
                    for (lk, lv) in lm {
                        match lv {
                            Value::String(_) => {
                                kept.insert(lk.clone(), lv.clone());
                            }
                            Value::Null => {
                                kept.insert(lk.clone(), Value::String(String::new()));
                            }
                            _ => fail(type_err(k, lv, "string")),
                        }
                    }
                    if !kept.is_empty() {
                        out.insert(k.clone(), Value::Object(kept));
                    }
                }
                _ => fail(type_err(k, val, "map[string]string")),
            },
            "finalizers" => match val {
                Value::Array(items) => {
                    for it in items {
                        if !it.is_string() {
                            fail(type_err(k, it, "string"));
                        }
                    }
                    if !items.is_empty() {
                        out.insert(k.clone(), val.clone());
                    }
                }
                _ => fail(type_err(k, val, "[]string")),
            },
            "creationTimestamp" | "deletionTimestamp" => match val {
                Value::String(_) => {
                    out.insert(k.clone(), val.clone());
                }
                _ => fail(type_err(k, val, "string")),
            },
            "ownerReferences" | "managedFields" => match val {
                Value::Array(items) => {
                    if !items.is_empty() {
                        out.insert(k.clone(), val.clone());
                    }
                }
                _ => fail(type_err(
                    k,
                    val,
                    if k == "ownerReferences" {
                        "[]v1.OwnerReference"
                    } else {
                        "[]v1.ManagedFieldsEntry"
                    },
                )),
            },
            _ => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(Value::Object(out)),
    }
}
