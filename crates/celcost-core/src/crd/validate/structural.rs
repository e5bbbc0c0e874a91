//! Structural schemas (k8s.io/apiextensions-apiserver pkg/apiserver/schema): what `NewStructural`
//! refuses to convert (convert.go), the invariants `ValidateStructural` checks (validation.go:
//! structural invariants, the metadata rules, the value-validation nesting rules) and
//! `validateStructuralCompleteness` (complete.go).
//!
//! The structural view of a node is our [`Schema`] itself: `Structural` keeps `items`,
//! `properties`, `additionalProperties`, the generic fields, the extensions and a value validation
//! whose `allOf`/`anyOf`/`oneOf`/`not` are `NestedValueValidation`s — the same [`Schema`] type,
//! where the generic fields and extensions are the "forbidden" ones.

use super::{goregexp, type_error};
use crate::crd::fielderr::{BadValue, FieldError, Path};
use crate::schema::{AdditionalProperties, Schema};

/// `NewStructural`: the first reason the schema cannot be converted to a structural schema, as
/// the error text the API server reports (`spec...openAPIV3Schema: Invalid value: "": <text>`).
pub(super) fn conversion_error(s: &Schema) -> Option<&'static str> {
    unsupported_field(s)
        .or_else(|| value_validation_conversion_error(s))
        .or_else(|| extensions_conversion_error(s))
        .or_else(|| items_conversion_error(s, conversion_error))
        .or_else(|| s.properties.values().find_map(conversion_error))
        .or_else(|| s.additional_properties_schema().and_then(conversion_error))
}

/// `newNestedValueValidation`: the conversion of an `allOf`/`anyOf`/`oneOf`/`not` member.
fn nested_conversion_error(s: &Schema) -> Option<&'static str> {
    unsupported_field(s)
        .or_else(|| value_validation_conversion_error(s))
        .or_else(|| extensions_conversion_error(s))
        .or_else(|| items_conversion_error(s, nested_conversion_error))
        .or_else(|| s.properties.values().find_map(nested_conversion_error))
        .or_else(|| {
            s.additional_properties_schema()
                .and_then(nested_conversion_error)
        })
}

/// `newValueValidation`: `not` first, then `allOf`, `anyOf`, `oneOf`.
fn value_validation_conversion_error(s: &Schema) -> Option<&'static str> {
    s.not
        .as_deref()
        .and_then(nested_conversion_error)
        .or_else(|| s.all_of.iter().find_map(nested_conversion_error))
        .or_else(|| s.any_of.iter().find_map(nested_conversion_error))
        .or_else(|| s.one_of.iter().find_map(nested_conversion_error))
}

/// `newExtensions`.
fn extensions_conversion_error(s: &Schema) -> Option<&'static str> {
    (s.x_preserve_unknown_fields == Some(false)).then_some(
        "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined",
    )
}

fn items_conversion_error(
    s: &Schema,
    convert: fn(&Schema) -> Option<&'static str>,
) -> Option<&'static str> {
    if !s.items_array.is_empty() {
        return Some("OpenAPIV3Schema 'items' must be a schema, but is an array");
    }
    s.items.as_deref().and_then(convert)
}

/// `validateUnsupportedFields`.
fn unsupported_field(s: &Schema) -> Option<&'static str> {
    let u = s.unsupported.as_deref()?;
    if !u.id.is_empty() {
        Some("OpenAPIV3Schema 'id' is not supported")
    } else if !u.schema.is_empty() {
        Some("OpenAPIV3Schema 'schema' is not supported")
    } else if u.ref_.as_deref().is_some_and(|r| !r.is_empty()) {
        Some("OpenAPIV3Schema '$ref' is not supported")
    } else if !u.pattern_properties.is_empty() {
        Some("OpenAPIV3Schema 'patternProperties' is not supported")
    } else if u.dependencies.as_ref().is_some_and(|d| !d.is_empty()) {
        Some("OpenAPIV3Schema 'dependencies' is not supported")
    } else if u.additional_items.is_some() {
        Some("OpenAPIV3Schema 'additionalItems' is not supported")
    } else if !u.definitions.is_empty() {
        Some("OpenAPIV3Schema 'definitions' is not supported")
    } else {
        None
    }
}

/// Where a node sits in the structural schema (`level`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`: the invariants of a structural schema and its completeness.
pub(super) fn validate_structural(s: &Schema, fld: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let fld = Path::root(fld);
    invariants(s, Level::Root, &fld, &mut errs);
    completeness(s, &fld, &mut errs);
    errs
}

/// `validateStructuralInvariants`.
fn invariants(s: &Schema, lvl: Level, fld: &Path<'_>, errs: &mut Vec<FieldError>) {
    crate::budget::charge(1);
    if s.type_ == "array" && s.items.is_none() {
        errs.push(FieldError::required(
            &format!("{fld}.items"),
            "must be specified",
        ));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &fld.child("items"), errs);
    }
    for (k, p) in &s.properties {
        invariants(p, Level::Field, &fld.child("properties").key(k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &format!("{fld}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let AdditionalProperties::Schema(ap) = ap {
            invariants(ap, Level::Field, &fld.child("additionalProperties"), errs);
        }
    }
    extensions(s, fld, errs);

    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .first()
        .is_some_and(|a| is_int_or_string_any_of(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, fld, errs);

    let preserve = s.x_preserve_unknown_fields == Some(true);
    let check_metadata = lvl == Level::Root || s.x_embedded_resource;
    if s.x_embedded_resource && s.type_ != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(type_error(fld, &s.type_, detail));
    } else if s.type_.is_empty() && !s.x_int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&format!("{fld}.type"), detail));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            &format!("{fld}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(FieldError::invalid(
            &format!("{fld}.type"),
            BadValue::Str(s.type_.clone()),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for name in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.get(name)
                && p.type_ != "string"
            {
                errs.push(FieldError::invalid(
                    &format!("{fld}.properties[{name}].type"),
                    BadValue::Str(p.type_.clone()),
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = s.properties.get("metadata") {
        metadata_invariants(
            meta,
            check_metadata,
            lvl,
            &fld.child("properties").key("metadata"),
            errs,
        );
    }
    if s.x_embedded_resource && !preserve && s.properties.is_empty() {
        errs.push(FieldError::required(
            &format!("{fld}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// `validateExtensions`.
fn extensions(s: &Schema, fld: &Path<'_>, errs: &mut Vec<FieldError>) {
    if s.x_int_or_string && s.x_preserve_unknown_fields == Some(true) {
        errs.push(FieldError::invalid(
            &format!("{fld}.x-kubernetes-preserve-unknown-fields"),
            BadValue::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        errs.push(FieldError::invalid(
            &format!("{fld}.x-kubernetes-embedded-resource"),
            BadValue::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
}

/// `validateStructuralMetadataInvariants`: `lvl` is the level of the node that has the
/// `metadata` property.
fn metadata_invariants(
    meta: &Schema,
    check_metadata: bool,
    lvl: Level,
    fld: &Path<'_>,
    errs: &mut Vec<FieldError>,
) {
    if check_metadata && meta.type_ != "object" {
        errs.push(FieldError::invalid(
            &format!("{fld}.type"),
            BadValue::Str(meta.type_.clone()),
            "must be object",
        ));
    }
    if lvl == Level::Root && !restricts_only_names(meta) {
        errs.push(FieldError::forbidden(
            &fld.to_string(),
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// Whether the root's metadata schema, once `type`, `default` and properties that are exactly
/// `name` and/or `generateName` are dropped, is the zero structural schema.
fn restricts_only_names(m: &Schema) -> bool {
    let name = m.properties.contains_key("name");
    let generate_name = m.properties.contains_key("generateName");
    let properties_dropped = m.properties.is_empty()
        || (name && generate_name && m.properties.len() == 2)
        || ((name || generate_name) && m.properties.len() == 1);
    properties_dropped
        && m.items.is_none()
        && m.items_array.is_empty()
        && m.additional_properties.is_none()
        && docs_and_extensions_are_zero(m)
        && !m.x_validations_set
        && value_validation_is_zero(m)
}

/// The `Extensions` of a node are all unset.
fn extensions_are_zero(s: &Schema) -> bool {
    s.x_preserve_unknown_fields != Some(true)
        && !s.x_embedded_resource
        && !s.x_int_or_string
        && !s.x_list_map_keys_set
        && s.x_list_type.is_none()
        && s.x_map_type.is_none()
}

/// The `ValueValidation` of a node is the zero value.
fn value_validation_is_zero(s: &Schema) -> bool {
    s.format.is_empty()
        && s.maximum.is_none()
        && !s.exclusive_maximum
        && s.minimum.is_none()
        && !s.exclusive_minimum
        && s.max_length.is_none()
        && s.min_length.is_none()
        && s.pattern.is_empty()
        && s.max_items.is_none()
        && s.min_items.is_none()
        && !s.unique_items
        && s.multiple_of.is_none()
        && s.enum_values.is_empty()
        && s.max_properties.is_none()
        && s.min_properties.is_none()
        && !s.required_set
        && s.all_of.is_empty()
        && s.one_of.is_empty()
        && s.any_of.is_empty()
        && s.not.is_none()
}

/// `isIntOrStringAnyOfPattern`: `anyOf: [{type: integer}, {type: string}]` with nothing else
/// in either member.
fn is_int_or_string_any_of(any_of: &[Schema]) -> bool {
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// The nested value validation sets `type: t` and nothing else.
fn only_type(v: &Schema, t: &str) -> bool {
    v.type_ == t
        && value_validation_is_zero(v)
        && !v.x_validations_set
        && v.items.is_none()
        && !v.properties_set
        && !matches!(
            v.additional_properties,
            Some(AdditionalProperties::Schema(_)) | Some(AdditionalProperties::Bool(true))
        )
        && v.default.is_none()
        && docs_and_extensions_are_zero(v)
}

/// A node has no description, title, externalDocs or example, is not nullable, and its
/// `Extensions` are all unset.
fn docs_and_extensions_are_zero(s: &Schema) -> bool {
    !s.has_description
        && !s.has_title
        && !s.nullable
        && !s.external_docs
        && !s.example
        && extensions_are_zero(s)
}

/// `validateValueValidation`: the junctors of a node (structural or nested) and its pattern.
fn value_validation(
    v: &Schema,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    fld: &Path<'_>,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, a) in v.any_of.iter().enumerate() {
            nested_value_validation(a, false, &fld.child("anyOf").index(i), errs);
        }
    }
    for (i, a) in v.all_of.iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested_value_validation(a, skip, &fld.child("allOf").index(i), errs);
    }
    for (i, a) in v.one_of.iter().enumerate() {
        nested_value_validation(a, false, &fld.child("oneOf").index(i), errs);
    }
    if let Some(n) = &v.not {
        nested_value_validation(n, false, &fld.child("not"), errs);
    }
    if !v.pattern.is_empty()
        && let Err(e) = goregexp::check(&v.pattern)
    {
        errs.push(FieldError::invalid(
            &format!("{fld}.pattern"),
            BadValue::Str(v.pattern.clone()),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// `validateNestedValueValidation`: a member of `allOf`/`anyOf`/`oneOf`/`not` may only carry
/// value validations.
fn nested_value_validation(
    v: &Schema,
    skip_any_of: bool,
    fld: &Path<'_>,
    errs: &mut Vec<FieldError>,
) {
    crate::budget::charge(1);
    value_validation(v, skip_any_of, false, fld, errs);
    if let Some(items) = &v.items {
        nested_value_validation(items, false, &fld.child("items"), errs);
    }
    for (k, p) in &v.properties {
        nested_value_validation(p, false, &fld.child("properties").key(k), errs);
    }
    // `additionalProperties: false` converts to no nested additionalProperties at all.
    let additional_properties = matches!(
        v.additional_properties,
        Some(AdditionalProperties::Schema(_)) | Some(AdditionalProperties::Bool(true))
    );
    let (empty, undefined, not_true) = (
        "must be empty to be structural",
        "must be undefined to be structural",
        "must be false to be structural",
    );
    let forbidden = [
        (!v.type_.is_empty(), "type", empty),
        (additional_properties, "additionalProperties", undefined),
        (v.default.is_some(), "default", undefined),
        (v.has_title, "title", empty),
        (v.has_description, "description", empty),
        (v.nullable, "nullable", not_true),
        (
            v.x_preserve_unknown_fields == Some(true),
            "x-kubernetes-preserve-unknown-fields",
            not_true,
        ),
        (
            v.x_embedded_resource,
            "x-kubernetes-embedded-resource",
            not_true,
        ),
        (v.x_int_or_string, "x-kubernetes-int-or-string", not_true),
        (
            !v.x_list_map_keys.is_empty(),
            "x-kubernetes-list-map-keys",
            empty,
        ),
        (v.x_list_type.is_some(), "x-kubernetes-list-type", undefined),
        (v.x_map_type.is_some(), "x-kubernetes-map-type", undefined),
        (
            !v.x_validations.is_empty(),
            "x-kubernetes-validations",
            empty,
        ),
        (
            v.properties.contains_key("metadata"),
            "properties[metadata]",
            "must not be specified in a nested context",
        ),
    ];
    for (_, field, detail) in forbidden.into_iter().filter(|(set, ..)| *set) {
        errs.push(FieldError::forbidden(&format!("{fld}.{field}"), detail));
    }
}

/// `validateStructuralCompleteness`: every property and items schema that a value validation
/// of the root speaks about must also be specified structurally. Only the root's junctors are
/// checked (upstream does not descend into the structural properties).
fn completeness(s: &Schema, fld: &Path<'_>, errs: &mut Vec<FieldError>) {
    value_validation_completeness(s, s, fld, fld, errs);
}

/// `validateValueValidationCompleteness`.
fn value_validation_completeness(
    v: &Schema,
    s: &Schema,
    s_path: &Path<'_>,
    v_path: &Path<'_>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(n) = &v.not {
        nested_completeness(n, Some(s), s_path, &v_path.child("not"), errs);
    }
    for (i, a) in v.all_of.iter().enumerate() {
        nested_completeness(a, Some(s), s_path, &v_path.child("allOf").index(i), errs);
    }
    for (i, a) in v.any_of.iter().enumerate() {
        nested_completeness(a, Some(s), s_path, &v_path.child("anyOf").index(i), errs);
    }
    for (i, a) in v.one_of.iter().enumerate() {
        nested_completeness(a, Some(s), s_path, &v_path.child("oneOf").index(i), errs);
    }
}

/// `validateNestedValueValidationCompleteness`.
fn nested_completeness(
    v: &Schema,
    s: Option<&Schema>,
    s_path: &Path<'_>,
    v_path: &Path<'_>,
    errs: &mut Vec<FieldError>,
) {
    crate::budget::charge(1);
    let Some(s) = s else {
        errs.push(FieldError::required(
            &s_path.to_string(),
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    value_validation_completeness(v, s, s_path, v_path, errs);
    if let Some(items) = &v.items {
        nested_completeness(
            items,
            s.items.as_deref(),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    for (k, vp) in &v.properties {
        let s_props = s_path.child("properties");
        let v_props = v_path.child("properties");
        let (sp, vpp) = (s_props.key(k), v_props.key(k));
        match s.properties.get(k) {
            Some(sf) => nested_completeness(vp, Some(sf), &sp, &vpp, errs),
            None => errs.push(FieldError::required(
                &sp.to_string(),
                &format!("because it is defined in {vpp}"),
            )),
        }
    }
}
