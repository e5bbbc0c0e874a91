//! The per-node checks of `ValidateCustomResourceDefinitionOpenAPISchema` and
//! `specStandardValidatorV3.validate` (k8s.io/apiextensions-apiserver
//! pkg/apis/apiextensions/validation/validation.go): their errors are "schema errors", which keep
//! the node's CEL rules (and its ancestors') from compiling.

use super::internal::go_items_list;
use super::{structural, type_error};
use crate::crd::fielderr::{BadValue, FieldError, GoValue};
use crate::schema::{AdditionalProperties, Dependency, Schema};

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const SUPPORTED_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The state of `specStandardValidatorV3` at a node.
#[derive(Clone, Copy)]
pub(crate) struct NodeContext<'a> {
    /// Why defaults are forbidden here (`withForbiddenDefaults`), when they are.
    pub defaults_forbidden: Option<&'a str>,
    /// Inside `apiVersion`, `kind` or `metadata` of the root or an embedded resource.
    pub inside_resource_meta: bool,
}

/// The checks of one node that count as schema errors (`specStandardValidatorV3.validate` and
/// the per-node checks of `ValidateCustomResourceDefinitionOpenAPISchema`): any of them at or
/// below a node keeps its CEL rules from compiling.
pub(crate) fn validate_node(s: &Schema, fld: &str, ctx: NodeContext<'_>) -> Vec<FieldError> {
    crate::budget::charge(1);
    let mut errs = Vec::new();
    spec_standard_validation(s, fld, ctx, &mut errs);
    if s.unique_items {
        errs.push(FieldError::forbidden(
            &format!("{fld}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if s.additional_properties.is_some()
        && !s.properties.is_empty()
        && !matches!(
            s.additional_properties,
            Some(AdditionalProperties::Bool(true))
        )
    {
        errs.push(FieldError::forbidden(
            &format!("{fld}.additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if s.x_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            &format!("{fld}.x-kubernetes-preserve-unknown-fields"),
            BadValue::Bool(false),
            "must be true or undefined",
        ));
    }
    list_and_map_types(s, fld, &mut errs);
    x_validations(s, fld, &mut errs);
    errs
}

/// `specStandardValidatorV3.validate`.
fn spec_standard_validation(
    s: &Schema,
    fld: &str,
    ctx: NodeContext<'_>,
    errs: &mut Vec<FieldError>,
) {
    if !s.type_.is_empty() && !OPENAPI_V3_TYPES.contains(&s.type_.as_str()) {
        errs.push(FieldError::not_supported(
            &format!("{fld}.type"),
            BadValue::Str(s.type_.clone()),
            &OPENAPI_V3_TYPES,
        ));
    }
    if s.default.is_some()
        && let Some(reason) = ctx.defaults_forbidden
    {
        let detail = if reason.is_empty() {
            "must not be set".to_string()
        } else {
            format!("must not be set {reason}")
        };
        errs.push(FieldError::forbidden(&format!("{fld}.default"), &detail));
    }
    if let Some(u) = &s.unsupported {
        let forbid = |errs: &mut Vec<FieldError>, field: &str, what: &str| {
            errs.push(FieldError::forbidden(
                &format!("{fld}.{field}"),
                &format!("{what} is not supported"),
            ));
        };
        if !u.id.is_empty() {
            forbid(errs, "id", "id");
        }
        if u.additional_items.is_some() {
            forbid(errs, "additionalItems", "additionalItems");
        }
        if !u.pattern_properties.is_empty() {
            forbid(errs, "patternProperties", "patternProperties");
        }
        if !u.definitions.is_empty() {
            forbid(errs, "definitions", "definitions");
        }
        if u.dependencies.is_some() {
            forbid(errs, "dependencies", "dependencies");
        }
        if u.ref_.is_some() {
            forbid(errs, "$ref", "$ref");
        }
    }
    if s.type_ == "null" {
        errs.push(FieldError::forbidden(
            &format!("{fld}.type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if !s.items_array.is_empty() {
        errs.push(FieldError::forbidden(
            &format!("{fld}.items"),
            "items must be a schema object and not an array",
        ));
    }
    if ctx.inside_resource_meta && s.x_embedded_resource {
        errs.push(FieldError::forbidden(
            &format!("{fld}.x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
}

/// A `*string` bad value.
fn ptr_str(v: Option<&str>) -> BadValue {
    BadValue::Go(GoValue::ptr_str(v))
}

/// The `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`
/// checks, and `validateMapListKeysMapSet`.
fn list_and_map_types(s: &Schema, fld: &str, errs: &mut Vec<FieldError>) {
    if let Some(mt) = &s.x_map_type {
        if s.type_ != "object" {
            let detail = "must be object if x-kubernetes-map-type is specified";
            errs.push(type_error(fld, &s.type_, detail));
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                &format!("{fld}.x-kubernetes-map-type"),
                BadValue::Str(mt.clone()),
                &["atomic", "granular"],
            ));
        }
    }
    let lt = s.x_list_type.as_deref();
    if lt.is_some() && s.type_ != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        errs.push(type_error(fld, &s.type_, detail));
    } else if lt == Some("set")
        && let Some(items) = &s.items
    {
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        match items.type_.as_str() {
            "array" if items.x_list_type.as_deref().is_some_and(|t| t != "atomic") => {
                errs.push(FieldError::invalid(
                    &format!("{fld}.items.x-kubernetes-list-type"),
                    ptr_str(items.x_list_type.as_deref()),
                    detail,
                ));
            }
            "object" if items.x_map_type.as_deref() != Some("atomic") => {
                // Upstream reports the items' list type as the value here.
                errs.push(FieldError::invalid(
                    &format!("{fld}.items.x-kubernetes-map-type"),
                    ptr_str(items.x_list_type.as_deref()),
                    detail,
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = lt
        && !matches!(lt, "atomic" | "set" | "map")
    {
        errs.push(FieldError::not_supported(
            &format!("{fld}.x-kubernetes-list-type"),
            BadValue::Str(lt.to_string()),
            &["atomic", "set", "map"],
        ));
    }
    if !s.x_list_map_keys.is_empty() {
        match lt {
            None => errs.push(FieldError::required(
                &format!("{fld}.x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                &format!("{fld}.x-kubernetes-list-type"),
                BadValue::Str(other.to_string()),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if lt == Some("map") {
        list_map(s, fld, errs);
    }
    if let (Some(items), Some(lt @ ("set" | "map"))) = (&s.items, lt) {
        list_map_keys_map_set(s, items, lt, fld, errs);
    }
}

/// The checks of an `x-kubernetes-list-type: map` list.
fn list_map(s: &Schema, fld: &str, errs: &mut Vec<FieldError>) {
    let keys = || BadValue::Go(GoValue::strings(Some(&s.x_list_map_keys)));
    if s.x_list_map_keys.is_empty() {
        errs.push(FieldError::required(
            &format!("{fld}.x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let Some(items) = &s.items else {
        match &s.items_array_raw {
            None => errs.push(FieldError::required(
                &format!("{fld}.items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(raw) => {
                let list = raw.as_array().map_or(&[][..], Vec::as_slice);
                errs.push(FieldError::invalid(
                    &format!("{fld}.items"),
                    BadValue::Go(go_items_list(list)),
                    "must only have a single schema if x-kubernetes-list-type is map",
                ));
            }
        }
        return;
    };
    if items.type_ != "object" {
        errs.push(FieldError::invalid(
            &format!("{fld}.items.type"),
            BadValue::Str(items.type_.clone()),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let mut seen: Vec<&String> = Vec::new();
    for k in &s.x_list_map_keys {
        match items.properties.get(k) {
            Some(p) if p.type_ == "array" || p.type_ == "object" => {
                // Upstream reports the items' type as the value here.
                errs.push(FieldError::invalid(
                    &format!("{fld}.items.properties[{k}].type"),
                    BadValue::Str(items.type_.clone()),
                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                ));
            }
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                &format!("{fld}.x-kubernetes-list-map-keys"),
                keys(),
                "entries must all be names of item properties",
            )),
        }
        if seen.contains(&k) {
            errs.push(FieldError::invalid(
                &format!("{fld}.x-kubernetes-list-map-keys"),
                keys(),
                "must not contain duplicate entries",
            ));
        }
        seen.push(k);
    }
}

/// `validateMapListKeysMapSet`: items of set and map lists, and map keys, may not be nullable;
/// map keys must be required or defaulted.
fn list_map_keys_map_set(
    s: &Schema,
    items: &Schema,
    lt: &str,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
    if items.nullable {
        errs.push(FieldError::forbidden(
            &format!("{fld}.items.nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return;
    }
    for k in &s.x_list_map_keys {
        let Some(p) = items.properties.get(k) else {
            continue;
        };
        if !items.required.contains(k) && p.default.is_none() {
            errs.push(FieldError::required(
                &format!("{fld}.items.properties[{k}].default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if p.nullable {
            errs.push(FieldError::forbidden(
                &format!("{fld}.items.properties[{k}].nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}

/// The checks of the `x-kubernetes-validations` entries that do not need CEL.
fn x_validations(s: &Schema, fld: &str, errs: &mut Vec<FieldError>) {
    let has_newlines = |x: &str| x.contains('\n') || x.contains('\r');
    for (i, rule) in s.x_validations.iter().enumerate() {
        let base = format!("{fld}.x-kubernetes-validations[{i}]");
        let trimmed_rule = rule.rule.trim();
        let trimmed_msg = rule.message.trim();
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                &format!("{base}.rule"),
                "rule is not specified",
            ));
        } else if !rule.message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid_string(
                &format!("{base}.message"),
                &rule.message,
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid_string(
                &format!("{base}.message"),
                &rule.message,
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                &format!("{base}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
            errs.push(FieldError::required(
                &format!("{base}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(r) = &rule.reason
            && !SUPPORTED_REASONS.contains(&r.as_str())
        {
            errs.push(FieldError::not_supported(
                &format!("{base}.reason"),
                BadValue::Go(GoValue::NamedStr(
                    "apiextensions.FieldValueErrorReason",
                    r.clone(),
                )),
                &SUPPORTED_REASONS,
            ));
        }
        let fp = &rule.field_path;
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid_string(
                &format!("{base}.fieldPath"),
                fp,
                "must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            errs.push(FieldError::invalid_string(
                &format!("{base}.fieldPath"),
                fp,
                "must not contain line breaks",
            ));
        }
        if !fp.is_empty() && structural::conversion_error(s).is_none() && !valid_field_path(fp, s) {
            errs.push(
                FieldError::invalid(
                    &format!("{base}.fieldPath"),
                    BadValue::Str(fp.clone()),
                    "must be a valid path",
                )
                .repeating_before_1_34("fieldPath must be a valid path"),
            );
        }
    }
}

/// `cel.ValidFieldPath(path, schema)` succeeds: `.name` and `['name']` steps through
/// properties (or any key of additionalProperties).
fn valid_field_path(path: &str, schema: &Schema) -> bool {
    normalized_field_path(path, schema).is_some()
}

/// `cel.ValidFieldPath(path, schema)`'s `field.Path`, as its `String()` prints it (a property a
/// child, `.a`; a key of additionalProperties an index, `[k]`; the first element with no dot):
/// the `NormalizedRuleFieldPath` of a rule's compile result. `None` when the path is not valid.
pub(crate) fn normalized_field_path(path: &str, schema: &Schema) -> Option<String> {
    let tokens = field_path_tokens(path);
    let mut s: Option<&Schema> = Some(schema);
    let mut out = String::new();
    let mut it = tokens.into_iter();
    while let Some(tok) = it.next() {
        let name = match tok {
            "[" => {
                let quoted = it.next()?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return None;
                }
                let name = unescape_single_quote(&quoted[1..quoted.len() - 1])?;
                if it.next() != Some("]") {
                    return None;
                }
                name
            }
            "." => it.next()?.to_string(),
            _ => return None,
        };
        // The Go code dereferences a nil schema here (additionalProperties: true).
        let cur = s?;
        s = if !cur.properties.is_empty() {
            let p = cur.properties.get(&name)?;
            // `Child(name)`: an element with a name, after a dot unless it is the first.
            if !out.is_empty() && !name.is_empty() {
                out.push('.');
            }
            if name.is_empty() {
                out.push_str("[]");
            } else {
                out.push_str(&name);
            }
            Some(p)
        } else if cur.additional_properties.is_some() {
            // `Key(name)`: an index.
            out.push('[');
            out.push_str(&name);
            out.push(']');
            cur.additional_properties_schema()
        } else {
            return None;
        };
    }
    Some(out)
}

/// The tokens of `ValidFieldPath`'s scanner: `.`, `[`, `]`, single-quoted strings (from a
/// leading quote to the next unescaped one) and the text between delimiters.
fn field_path_tokens(path: &str) -> Vec<&str> {
    let b = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i] == b'\'' {
            let mut j = i + 1;
            while j < b.len() && !(b[j] == b'\'' && b[j - 1] != b'\\') {
                j += 1;
            }
            i = (j + 1).min(b.len());
        } else if matches!(b[i], b'.' | b'[' | b']') {
            i += 1;
        } else {
            while i < b.len() && !matches!(b[i], b'.' | b'[' | b']') {
                i += 1;
            }
        }
        out.push(&path[start..i]);
    }
    out
}

/// `unescapeSingleQuote`: `\a \b \f \n \r \t \v \' \\`; any other escape is an error.
fn unescape_single_quote(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push('\\');
            break;
        };
        out.push(match d {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            _ => return None,
        });
    }
    Some(out)
}

/// The members of `not`/`allOf`/`oneOf`/`anyOf`/`definitions`/`dependencies` and array-form
/// `items`, with their field paths and display paths, in the order the API server visits them
/// (after `additionalProperties` and `properties`, except array items that come after
/// `definitions`). The API server never compiles CEL rules in these.
pub(crate) fn nested_schemas<'a>(
    s: &'a Schema,
    fld: &str,
    display: &str,
) -> Vec<(&'a Schema, String, String)> {
    let mut out = Vec::new();
    if let Some(n) = &s.not {
        out.push((&**n, format!("{fld}.not"), format!("{display}.<not>")));
    }
    for (kind, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, m) in list.iter().enumerate() {
            out.push((
                m,
                format!("{fld}.{kind}[{i}]"),
                format!("{display}.<{kind}[{i}]>"),
            ));
        }
    }
    if let Some(u) = &s.unsupported {
        for (k, d) in &u.definitions {
            out.push((
                d,
                format!("{fld}.definitions[{k}]"),
                format!("{display}.<definitions[{k}]>"),
            ));
        }
    }
    for (i, it) in s.items_array.iter().enumerate() {
        out.push((it, format!("{fld}.items[{i}]"), format!("{display}[{i}]")));
    }
    if let Some(deps) = s.unsupported.as_ref().and_then(|u| u.dependencies.as_ref()) {
        for (k, d) in deps {
            if let Dependency::Schema(d) = d {
                out.push((
                    &**d,
                    format!("{fld}.dependencies[{k}]"),
                    format!("{display}.<dependencies[{k}]>"),
                ));
            }
        }
    }
    out
}
