//! Small schemas with the API server's exact errors (taken from the Kubernetes v1.36.2 oracle).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::Estimator;
use crate::fixtures;

/// A one-version CRD with `schema` as its `openAPIV3Schema`.
/// [`crd`] with no status subresource.
pub(super) fn crd_of(schema: Value) -> Value {
    crd(schema, false)
}

fn crd(schema: Value, status: bool) -> Value {
    let mut version = fixtures::version("v1", true, schema);
    if status {
        version["subresources"] = json!({"status": {}});
    }
    fixtures::crd(
        "x.example.com",
        "foos",
        "Foo",
        "Namespaced",
        json!([version]),
    )
}

/// Checks the error set, and which rules the API server compiles (`(path, index, compiled)`).
fn check(schema: &str, status: bool, errors: &[&str], compiled: &[(&str, u64, bool)]) {
    let schema: Value = serde_json::from_str(schema).unwrap();
    let report = Estimator::default()
        .estimate(&crd(schema, status), "test")
        .unwrap();
    let got: BTreeSet<&str> = report.errors.iter().map(String::as_str).collect();
    let want: BTreeSet<&str> = errors.iter().copied().collect();
    assert_eq!(got, want);
    assert_eq!(report.valid, errors.is_empty());
    let rules: Vec<(&str, u64, bool)> = report
        .schemas
        .iter()
        .flat_map(|s| &s.rules)
        .map(|r| (r.path.as_str(), r.index, r.compiled_by_apiserver))
        .collect();
    for c in compiled {
        assert!(rules.contains(c), "{c:?} not in {rules:?}");
    }
}

#[test]
fn root_metadata_may_only_restrict_names() {
    check(
        r#"{"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "object"}}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"#,
        ],
        &[],
    );
}

#[test]
fn root_metadata_must_be_an_object() {
    check(
        r#"{"type": "object", "properties": {"metadata": {"type": "string"}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[metadata].type: Invalid value: "string": must be object"#,
        ],
        &[],
    );
}

#[test]
fn types_are_required_below_the_root() {
    check(
        r#"{"type": "object", "properties": {"a": {}, "l": {"type": "array", "items": {}}, "m": {"type": "object", "additionalProperties": {}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields"#,
            r#"spec.validation.openAPIV3Schema.properties[l].items.type: Required value: must not be empty for specified array items"#,
            r#"spec.validation.openAPIV3Schema.properties[m].additionalProperties.type: Required value: must not be empty for specified object fields"#,
        ],
        &[],
    );
}

#[test]
fn no_additional_properties_at_the_root() {
    check(
        r#"{"type": "object", "additionalProperties": {"type": "string"}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root"#,
        ],
        &[],
    );
}

#[test]
fn embedded_resources() {
    check(
        r#"{"type": "object", "properties": {"e": {"x-kubernetes-embedded-resource": true}, "f": {"type": "object", "x-kubernetes-embedded-resource": true, "additionalProperties": true, "x-kubernetes-preserve-unknown-fields": true}, "g": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"kind": {"type": "integer"}}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"#,
            r#"spec.validation.openAPIV3Schema.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true"#,
            r#"spec.validation.openAPIV3Schema.properties[f].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set"#,
            r#"spec.validation.openAPIV3Schema.properties[g].properties[kind].type: Invalid value: "integer": must be string"#,
        ],
        &[],
    );
}

#[test]
fn junctors_only_carry_value_validations() {
    check(
        r#"{"type": "object", "x-kubernetes-validations": [{"rule": "self == self"}], "properties": {"a": {"type": "string"}}, "allOf": [{"type": "string", "description": "d", "default": "x", "x-kubernetes-validations": [{"rule": "true"}]}], "not": {"nullable": true, "x-kubernetes-preserve-unknown-fields": true, "properties": {"metadata": {"minProperties": 1}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.allOf[0].default: Forbidden: must be undefined to be structural"#,
            r#"spec.validation.openAPIV3Schema.allOf[0].description: Forbidden: must be empty to be structural"#,
            r#"spec.validation.openAPIV3Schema.allOf[0].type: Forbidden: must be empty to be structural"#,
            r#"spec.validation.openAPIV3Schema.allOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural"#,
            r#"spec.validation.openAPIV3Schema.not.nullable: Forbidden: must be false to be structural"#,
            r#"spec.validation.openAPIV3Schema.not.properties[metadata]: Forbidden: must not be specified in a nested context"#,
            r#"spec.validation.openAPIV3Schema.not.x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural"#,
            r#"spec.validation.openAPIV3Schema.properties[metadata]: Required value: because it is defined in spec.validation.openAPIV3Schema.not.properties[metadata]"#,
        ],
        &[("^.<allOf[0]>", 0, false), ("^", 0, false)],
    );
}

#[test]
fn junctor_properties_must_be_specified() {
    check(
        r#"{"type": "object", "properties": {"a": {"type": "object"}}, "anyOf": [{"properties": {"a": {"properties": {"b": {"minLength": 1}}}}}, {"properties": {"c": {"minimum": 1}}}]}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[a].properties[b]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[a].properties[b]"#,
            r#"spec.validation.openAPIV3Schema.properties[c]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[1].properties[c]"#,
        ],
        &[],
    );
}

#[test]
fn int_or_string_any_of_is_allowed() {
    check(
        r#"{"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-validations": [{"rule": "type(self) == int"}]}, "b": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[b].anyOf[0].type: Forbidden: must be empty to be structural"#,
            r#"spec.validation.openAPIV3Schema.properties[b].anyOf[1].type: Forbidden: must be empty to be structural"#,
        ],
        &[("^.a", 0, false)],
    );
}

#[test]
fn patterns_are_go_regular_expressions() {
    check(
        r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "("}, "b": {"type": "string", "pattern": "a**"}, "c": {"type": "string", "pattern": "x{1001}"}, "d": {"type": "string", "pattern": "\\p{Foo}"}, "e": {"type": "string", "pattern": "(?=x)"}, "f": {"type": "string", "pattern": "\\pL+[[:alpha:]](?i:x)\\d{2,4}$"}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[a].pattern: Invalid value: "(": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(`"#,
            r#"spec.validation.openAPIV3Schema.properties[b].pattern: Invalid value: "a**": must be a valid regular expression, but isn't: error parsing regexp: invalid nested repetition operator: `**`"#,
            r#"spec.validation.openAPIV3Schema.properties[c].pattern: Invalid value: "x{1001}": must be a valid regular expression, but isn't: error parsing regexp: invalid repeat count: `{1001}`"#,
            r#"spec.validation.openAPIV3Schema.properties[d].pattern: Invalid value: "\\p{Foo}": must be a valid regular expression, but isn't: error parsing regexp: invalid character class range: `\p{Foo}`"#,
            r#"spec.validation.openAPIV3Schema.properties[e].pattern: Invalid value: "(?=x)": must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"#,
        ],
        &[],
    );
}

#[test]
fn conversion_errors_show_only_alone() {
    check(
        r#"{"type": "object", "$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"type": "string"}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema: Invalid value: "": OpenAPIV3Schema 'schema' is not supported"#,
        ],
        &[],
    );
}

#[test]
fn defaults_must_validate() {
    check(
        r#"{"type": "object", "properties": {"s": {"type": "string", "maxLength": 2, "default": "abc"}, "p": {"type": "string", "pattern": "^a", "default": "b"}, "e": {"type": "string", "enum": ["x", "y"], "default": "z"}, "i": {"type": "integer", "maximum": 3, "default": 1.5}, "f": {"type": "string", "format": "date-time", "default": "yesterday"}, "l": {"type": "array", "maxItems": 1, "items": {"type": "integer"}, "default": [1, 2]}, "o": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}, "default": {"b": 1}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[e].default: Unsupported value: "z": supported values: "x", "y""#,
            r#"spec.validation.openAPIV3Schema.properties[f].default: Invalid value: "yesterday":  in body must be of type date-time: "yesterday""#,
            r#"spec.validation.openAPIV3Schema.properties[i].default: Invalid value: "": Checked value must be of type integer (default format) in "#,
            r#"spec.validation.openAPIV3Schema.properties[i].default: Invalid value: "number":  in body must be of type integer: "number""#,
            r#"spec.validation.openAPIV3Schema.properties[l].default: Too many: 2: must have at most 1 item"#,
            r#"spec.validation.openAPIV3Schema.properties[o].default.a: Required value"#,
            r#"spec.validation.openAPIV3Schema.properties[o].default: Invalid value: {"b":1}: must not have unknown fields"#,
            r#"spec.validation.openAPIV3Schema.properties[p].default: Invalid value: "b":  in body should match '^a'"#,
            r#"spec.validation.openAPIV3Schema.properties[s].default: Too long: may not be more than 2 bytes"#,
        ],
        &[],
    );
}

#[test]
fn defaults_in_junctors_and_int_or_string() {
    check(
        r#"{"type": "object", "properties": {"a": {"type": "integer", "anyOf": [{"minimum": 5}, {"maximum": 0}], "default": 3}, "b": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}], "default": true}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[a].default: Invalid value: "": "" must validate at least one schema (anyOf)"#,
            r#"spec.validation.openAPIV3Schema.properties[a].default: Invalid value: 3:  in body should be greater than or equal to 5"#,
            r#"spec.validation.openAPIV3Schema.properties[b].default: Invalid value: "": "" must validate at least one schema (anyOf)"#,
            r#"spec.validation.openAPIV3Schema.properties[b].default: Invalid value: "boolean":  in body must be of type integer: "boolean""#,
        ],
        &[],
    );
}

#[test]
fn defaults_of_embedded_resources() {
    check(
        r#"{"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "default": {"metadata": {"name": "a/b"}}}, "k": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"kind": {"type": "string", "default": "a_b"}}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[e].default.apiVersion: Required value"#,
            r#"spec.validation.openAPIV3Schema.properties[e].default.kind: Required value"#,
            r#"spec.validation.openAPIV3Schema.properties[e].default.metadata.name: Invalid value: "a/b": may not contain '/'"#,
            r#"spec.validation.openAPIV3Schema.properties[k].properties[kind].default: Invalid value: "a_b": must result in valid metadata: kind: Invalid value: "a_b": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
        ],
        &[],
    );
}

#[test]
fn defaults_are_forbidden_in_top_level_metadata() {
    check(
        r#"{"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata"#,
        ],
        &[],
    );
}

#[test]
fn list_map_keys_must_be_required_or_defaulted() {
    check(
        r#"{"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "o"], "items": {"type": "object", "nullable": true, "properties": {"k": {"type": "string"}, "o": {"type": "object"}}}}, "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[l].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is map"#,
            r#"spec.validation.openAPIV3Schema.properties[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"#,
            r#"spec.validation.openAPIV3Schema.properties[l].items.properties[o].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"#,
            r#"spec.validation.openAPIV3Schema.properties[l].items.properties[o].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map"#,
            r#"spec.validation.openAPIV3Schema.properties[s].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"#,
        ],
        &[],
    );
}

#[test]
fn status_subresource_restricts_the_root() {
    check(
        r#"{"type": "object", "properties": {"spec": {"type": "object"}}, "maxProperties": 3}"#,
        true,
        &[
            r#"spec.validation.openAPIV3Schema: Invalid value: {"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":3,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":{"spec":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":null,"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}},"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"#,
        ],
        &[],
    );
}

#[test]
fn field_paths_must_exist() {
    check(
        r#"{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}, "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".a.b"}, {"rule": "true", "fieldPath": ".a.c"}, {"rule": "true", "fieldPath": "['a']"}]}"#,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.x-kubernetes-validations[1].fieldPath: Invalid value: ".a.c": must be a valid path"#,
        ],
        &[("^", 0, false), ("^", 1, false), ("^", 2, false)],
    );
}

#[test]
fn unsupported_keywords() {
    check(
        r##"{"type": "object", "properties": {"a": {"type": "string", "id": "x", "$ref": "#/r", "definitions": {"d": {"type": "string"}}}, "b": {"type": "null"}, "c": {"type": "array", "items": [{"type": "string"}]}}}"##,
        false,
        &[
            r#"spec.validation.openAPIV3Schema.properties[a].$ref: Forbidden: $ref is not supported"#,
            r#"spec.validation.openAPIV3Schema.properties[a].definitions: Forbidden: definitions is not supported"#,
            r#"spec.validation.openAPIV3Schema.properties[a].id: Forbidden: id is not supported"#,
            r#"spec.validation.openAPIV3Schema.properties[b].type: Forbidden: type cannot be set to null, use nullable as an alternative"#,
            r#"spec.validation.openAPIV3Schema.properties[b].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string""#,
            r#"spec.validation.openAPIV3Schema.properties[c].items: Forbidden: items must be a schema object and not an array"#,
        ],
        &[],
    );
}

fn estimate(schema: &str) -> crate::report::ObjectReport {
    let schema: Value = serde_json::from_str(schema).unwrap();
    Estimator::default()
        .estimate(&crd(schema, false), "test")
        .unwrap()
}

fn rule<'r>(
    report: &'r crate::report::ObjectReport,
    path: &str,
    index: u64,
) -> &'r crate::report::RuleReport {
    report
        .schemas
        .iter()
        .flat_map(|s| &s.rules)
        .find(|r| r.path == path && r.index == index)
        .unwrap()
}

/// Rule types come from the topmost node with rules (`CELSchemaContext.TypeInfo`): the root has
/// none here, so `metadata.name` keeps its own maxLength instead of the root's ObjectMeta.
#[test]
fn cel_types_start_at_the_first_node_with_rules() {
    let report = estimate(
        r#"{"type":"object","properties":{"metadata":{"type":"object","properties":{"name":{"type":"string","maxLength":10,"x-kubernetes-validations":[{"rule":"self.matches(self)"}]}}}}}"#,
    );
    let r = rule(&report, "^.metadata.name", 0);
    assert!(r.compiled_by_apiserver);
    assert_eq!(r.max_cost, 52);
    assert!(report.valid);
}

/// The API server names object types relative to the node whose rules it compiles
/// (`selfType<random>.a`, the number is not reproduced).
#[test]
fn type_names_are_relative_to_the_compiled_node() {
    let report = estimate(
        r#"{"type":"object","x-kubernetes-validations":[{"rule":"self == self"}],"properties":{"spec":{"type":"object","properties":{"p":{"type":"object","properties":{"a":{"type":"object","additionalProperties":true}},"x-kubernetes-validations":[{"rule":"self.a.size() < 5"}]}}}}}"#,
    );
    let r = rule(&report, "^.spec.p", 0);
    assert_eq!(
        r.compile_error.as_deref(),
        Some(
            "compilation failed: ERROR: <input>:1:12: found no matching overload for 'size' applied to 'selfType.a.()'\n | self.a.size() < 5\n | ...........^"
        )
    );
}

/// When a node's type information cannot be built, its descendants within the rules' scope
/// fail too (their rules are attempted, but not compiled).
#[test]
fn type_information_errors_reach_the_children() {
    check(
        r#"{"x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-validations":[{"rule":"has(self.spec)"}],"properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule":"self == self"}]}}}"#,
        false,
        &[
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations: Internal error: internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations",
            "spec.validation.openAPIV3Schema.x-kubernetes-validations: Internal error: internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations",
        ],
        &[("^.spec", 0, true), ("^", 0, true)],
    );
}

/// The error set of a CRD in Kubernetes `minor`. The expectations below for minors other than
/// 1.36 restate that minor's upstream code (its wording, its rendering of values: Go's `%#v` as
/// Go 1.26 prints the same values), not an oracle run.
fn errors_at(minor: u32, crd: &Value) -> BTreeSet<String> {
    let report = Estimator::new(crate::cel::decls::Version::new(1, minor))
        .estimate(crd, "test")
        .unwrap();
    report.errors.into_iter().collect()
}

fn set(errors: &[&str]) -> BTreeSet<String> {
    errors.iter().map(|e| e.to_string()).collect()
}

/// Before 1.34 bad values that are not strings, numbers or booleans are Go syntax (`%#v`).
#[test]
fn bad_values_are_go_syntax_before_1_34() {
    let mut c = crd(
        json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x,", "reason": "FieldValueInvalid"}]}}}),
        false,
    );
    c["spec"]["versions"][0]["storage"] = json!(false);
    let rule = "spec.validation.openAPIV3Schema.properties[l].x-kubernetes-validations[0].rule";
    let syntax = "compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.all(x,\n | ...........^";
    let address = crate::crd::fielderr::govalue::POINTER_ADDRESS;
    for minor in [30, 33] {
        assert_eq!(
            errors_at(minor, &c),
            set(&[
                "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:false, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}}: must have exactly one version marked as storage version",
                "status.storedVersions: Invalid value: []string(nil): must have at least one stored version",
                &format!(
                    "{rule}: Invalid value: apiextensions.ValidationRule{{Rule:\"self.all(x,\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)({address}), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: {syntax}"
                ),
            ]),
            "1.{minor}"
        );
    }
    assert_eq!(
        errors_at(34, &c),
        set(&[
            "spec.versions: Invalid value: [{\"Name\":\"v1\",\"Served\":true,\"Storage\":false,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":null,\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]: must have exactly one version marked as storage version",
            "status.storedVersions: Invalid value: null: must have at least one stored version",
            &format!(
                "{rule}: Invalid value: {{\"Rule\":\"self.all(x,\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":\"FieldValueInvalid\",\"FieldPath\":\"\",\"OptionalOldSelf\":null}}: {syntax}"
            ),
        ])
    );
}

/// Versions that differ keep their own schemas, printer columns and subresources (the v1
/// conversion moves them to the spec only when all versions have the same).
#[test]
fn versions_keep_what_differs() {
    let mut c = crd(json!({"type": "object"}), false);
    let v1 = c["spec"]["versions"][0].clone();
    let mut v2 = v1.clone();
    v2["name"] = json!("v2");
    v2["schema"] = json!({"openAPIV3Schema": {"type": "object", "description": "d"}});
    v2["additionalPrinterColumns"] =
        json!([{"name": "A", "type": "string", "jsonPath": ".a", "priority": 1}]);
    v2["deprecationWarning"] = json!("old<");
    c["spec"]["versions"] = json!([v1, v2]);
    let versions = errors_at(36, &c)
        .into_iter()
        .find(|e| e.starts_with("spec.versions:"))
        .unwrap();
    let schema = |extra: &str| {
        format!(
            "{{\"OpenAPIV3Schema\":{{\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"{extra}\",\"Type\":\"object\",\"Nullable\":false,\"Format\":\"\",\"Title\":\"\",\"Default\":null,\"Maximum\":null,\"ExclusiveMaximum\":false,\"Minimum\":null,\"ExclusiveMinimum\":false,\"MaxLength\":null,\"MinLength\":null,\"Pattern\":\"\",\"MaxItems\":null,\"MinItems\":null,\"UniqueItems\":false,\"MultipleOf\":null,\"Enum\":null,\"MaxProperties\":null,\"MinProperties\":null,\"Required\":null,\"Items\":null,\"AllOf\":null,\"OneOf\":null,\"AnyOf\":null,\"Not\":null,\"Properties\":null,\"AdditionalProperties\":null,\"PatternProperties\":null,\"Dependencies\":null,\"AdditionalItems\":null,\"Definitions\":null,\"ExternalDocs\":null,\"Example\":null,\"XPreserveUnknownFields\":null,\"XEmbeddedResource\":false,\"XIntOrString\":false,\"XListMapKeys\":null,\"XListType\":null,\"XMapType\":null,\"XValidations\":null}}}}"
        )
    };
    assert_eq!(
        versions,
        format!(
            "spec.versions: Invalid value: [{{\"Name\":\"v1\",\"Served\":true,\"Storage\":true,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":{},\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}},{{\"Name\":\"v2\",\"Served\":true,\"Storage\":true,\"Deprecated\":false,\"DeprecationWarning\":\"old\\u003c\",\"Schema\":{},\"Subresources\":null,\"AdditionalPrinterColumns\":[{{\"Name\":\"A\",\"Type\":\"string\",\"Format\":\"\",\"Description\":\"\",\"Priority\":1,\"JSONPath\":\".a\"}}],\"SelectableFields\":null}}]: must have exactly one version marked as storage version",
            schema(""),
            schema("d")
        )
    );
    let address = crate::crd::fielderr::govalue::POINTER_ADDRESS;
    let old = errors_at(33, &c)
        .into_iter()
        .find(|e| e.starts_with("spec.versions:"))
        .unwrap();
    assert!(
        old.contains(&format!("DeprecationWarning:(*string)({address}), Schema:(*apiextensions.CustomResourceValidation)({address}), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition{{apiextensions.CustomResourceColumnDefinition{{Name:\"A\", Type:\"string\", Format:\"\", Description:\"\", Priority:1, JSONPath:\".a\"}}}}")),
        "{old}"
    );
}

/// Kubernetes 1.34 dropped the field names that details repeated.
#[test]
fn details_name_their_field_before_1_34() {
    let c = crd(
        json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "true", "message": " ", "fieldPath": " "}]}),
        false,
    );
    let base = "spec.validation.openAPIV3Schema.x-kubernetes-validations[0]";
    assert_eq!(
        errors_at(33, &c),
        set(&[
            &format!(
                "{base}.message: Invalid value: \" \": message must be non-empty if specified"
            ),
            &format!(
                "{base}.fieldPath: Invalid value: \" \": fieldPath must be non-empty if specified"
            ),
            &format!("{base}.fieldPath: Invalid value: \" \": fieldPath must be a valid path"),
        ])
    );
    assert_eq!(
        errors_at(34, &c),
        set(&[
            &format!("{base}.message: Invalid value: \" \": must be non-empty if specified"),
            &format!("{base}.fieldPath: Invalid value: \" \": must be non-empty if specified"),
            &format!("{base}.fieldPath: Invalid value: \" \": must be a valid path"),
        ])
    );
}

/// `field.TooLong` and `field.TooMany` by minor: `TooLongMaxLength`'s words before 1.32,
/// singular units from 1.34.
#[test]
fn too_long_and_too_many_by_minor() {
    let c = crd(
        json!({"type": "object", "properties": {
            "s": {"type": "string", "maxLength": 1, "default": "ab"},
            "l": {"type": "array", "maxItems": 1, "items": {"type": "string"}, "default": ["a", "b"]}}}),
        false,
    );
    let s = "spec.validation.openAPIV3Schema.properties[s].default: Too long";
    let l = "spec.validation.openAPIV3Schema.properties[l].default: Too many: 2";
    for (minor, s_detail, l_detail) in [
        (31, "may not be longer than 1", "must have at most 1 items"),
        (
            32,
            "may not be more than 1 bytes",
            "must have at most 1 items",
        ),
        (
            33,
            "may not be more than 1 bytes",
            "must have at most 1 items",
        ),
        (
            34,
            "may not be more than 1 byte",
            "must have at most 1 item",
        ),
    ] {
        assert_eq!(
            errors_at(minor, &c),
            set(&[&format!("{s}: {s_detail}"), &format!("{l}: {l_detail}")]),
            "1.{minor}"
        );
    }
}

/// A decoded object is a Go map before 1.34.
#[test]
fn decoded_defaults_by_minor() {
    let c = crd(
        json!({"type": "object", "properties": {
            "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": [1, null]}}}}),
        false,
    );
    let o = "spec.validation.openAPIV3Schema.properties[o].default: Invalid value";
    assert_eq!(
        errors_at(33, &c),
        set(&[&format!(
            "{o}: map[string]interface {{}}{{\"a\":\"x\", \"b\":[]interface {{}}{{1, interface {{}}(nil)}}}}: must not have unknown fields"
        )])
    );
    assert_eq!(
        errors_at(34, &c),
        set(&[&format!(
            "{o}: {{\"a\":\"x\",\"b\":[1,null]}}: must not have unknown fields"
        )])
    );
}

/// An embedded resource's missing `apiVersion` and `kind`: "must not be empty" before 1.34.
#[test]
fn embedded_resources_required_fields_by_minor() {
    let c = crd(
        json!({"type": "object", "properties": {"r": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "default": {"metadata": {"name": "x"}}}}}),
        false,
    );
    let r = "spec.validation.openAPIV3Schema.properties[r].default";
    assert_eq!(
        errors_at(33, &c),
        set(&[
            &format!("{r}.apiVersion: Required value: must not be empty"),
            &format!("{r}.kind: Required value: must not be empty"),
        ])
    );
    assert_eq!(
        errors_at(34, &c),
        set(&[
            &format!("{r}.apiVersion: Required value"),
            &format!("{r}.kind: Required value"),
        ])
    );
}

/// A rule the API server's CEL compiler panics on (an optional map entry of type `dyn`, from
/// an int-or-string field): the request is aborted, none of the CRD's field errors (here, the
/// other rule's compile error) are returned, and the CRD is refused, on every minor.
#[test]
fn checker_panic_aborts_the_crd_request() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.nope == 1"},
            {"rule": "true", "messageExpression": "{?'a': self.x}.size() == 1 ? 'a' : 'b'"},
            {"rule": "{?'a': self.x}.size() <= 1"}
        ],
        "properties": {"x": {"x-kubernetes-int-or-string": true}}}}});
    for minor in 30..=36 {
        let r = Estimator::new(crate::cel::decls::Version::new(1, minor))
            .estimate(&crd(schema.clone(), false), "test")
            .unwrap();
        assert!(!r.valid);
        let p = r.apiserver_panic.as_ref().expect("panics");
        assert_eq!(
            p.field_path,
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].messageExpression"
        );
        assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
        assert!(r.errors[0].starts_with(&format!("{}: the API server panics", p.field_path)));
    }
}

/// The CRD of the issue's cases: `spec.priority` with `default: 1` and `rules`, and an
/// over-budget rule elsewhere in the schema.
fn defaulted(rules: Value, over_budget: bool) -> Value {
    let mut props = json!({"priority": {"type": "integer", "default": 1,
        "x-kubernetes-validations": rules}});
    if over_budget {
        props["tags"] = json!({"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}});
    }
    crd(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}),
        false,
    )
}

const PRIORITY: &str = "spec.validation.openAPIV3Schema.properties[spec].properties[priority]";

/// Rules run on `default` values: a failing one rejects the CRD at `<node>.default` (naming the
/// schema type before 1.35, the value from 1.35), and the schema's rules are then not compiled,
/// so an over-budget rule elsewhere gives no error.
#[test]
fn rules_run_on_defaults() {
    for minor in 30..=36 {
        let k = crate::cel::decls::Version::new(1, minor);
        let over = Estimator::new(k)
            .estimate(&defaulted(json!([{"rule": "self % 2 == 1"}]), true), "test")
            .unwrap();
        assert!(!over.valid, "1.{minor}: the budget errors stand");
        assert!(
            over.errors.iter().all(|e| e.contains("Forbidden")),
            "{:?}",
            over.errors
        );
        let r = Estimator::new(k)
            .estimate(&defaulted(json!([{"rule": "self % 2 == 0"}]), true), "test")
            .unwrap();
        let value = if minor >= 35 { "1" } else { "\"integer\"" };
        assert_eq!(
            r.errors,
            [format!(
                "{PRIORITY}.default: Invalid value: {value}: failed rule: self % 2 == 0"
            )],
            "1.{minor}"
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
    }
}

/// A rule that does not compile is reported on the default (with the schema type), not as the
/// rule's compile error.
#[test]
fn rule_compile_errors_on_defaults() {
    for minor in [30, 33, 36] {
        let r = Estimator::new(crate::cel::decls::Version::new(1, minor))
            .estimate(
                &defaulted(json!([{"rule": "self.nope == 1"}]), true),
                "test",
            )
            .unwrap();
        assert_eq!(
            r.errors,
            [format!(
                "{PRIORITY}.default: Invalid value: \"integer\": rule compile error: compilation failed: ERROR: <input>:1:5: type 'int' does not support field selection\n | self.nope == 1\n | ....^"
            )],
            "1.{minor}"
        );
    }
}

/// The rules below a defaulted node run on the parts of its default (`default.a`,
/// `default.b[0]`), with messages, messageExpressions and reasons; `oldSelf` is the default.
#[test]
fn rules_below_a_default_run_on_its_parts() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "o": {"type": "object", "default": {"a": "x", "b": [1, 2]},
        "x-kubernetes-validations": [
            {"rule": "self.a == 'z'", "messageExpression": "'got ' + self.a"},
            {"rule": "self == oldSelf"}
        ],
        "properties": {
            "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'y'", "message": "must be y"}]},
            "b": {"type": "array", "items": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self > 1", "reason": "FieldValueForbidden"}]}}
        }}}}}});
    let o = "spec.validation.openAPIV3Schema.properties[spec].properties[o].default";
    for (minor, object, string) in [(34, "\"object\": ", "\"string\""), (36, "", "\"x\"")] {
        let r = Estimator::new(crate::cel::decls::Version::new(1, minor))
            .estimate(&crd(schema.clone(), false), "test")
            .unwrap();
        let got: BTreeSet<&str> = r.errors.iter().map(String::as_str).collect();
        let want = [
            format!("{o}: Invalid value: {object}got x"),
            format!("{o}.a: Invalid value: {string}: must be y"),
            format!("{o}.b[0]: Forbidden: failed rule: self > 1"),
        ];
        let want: BTreeSet<&str> = want.iter().map(String::as_str).collect();
        assert_eq!(got, want, "1.{minor}");
    }
}

/// What celcost cannot evaluate (here, a time zone by name, which Go reads from its zone
/// database) is not guessed: the report says which rule was not evaluated and that the verdict
/// is unknown.
#[test]
fn unevaluated_rules_on_defaults_are_noted() {
    let rule = "timestamp(self).getHours('Europe/Paris') == 1";
    let r = Estimator::default()
        .estimate(
            &crd(
                json!({"type": "object", "properties": {"d": {"type": "string",
                    "default": "2020-01-01T00:00:00Z",
                    "x-kubernetes-validations": [{"rule": rule}]}}}),
                false,
            ),
            "test",
        )
        .unwrap();
    assert!(r.valid, "{:?}", r.errors);
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(r.notes[0].starts_with("verdict unknown: "), "{:?}", r.notes);
    assert!(
        r.notes[0].contains(&format!("properties[d].default: {rule}")),
        "{:?}",
        r.notes
    );
}

/// Evaluation errors on a default are worded as cel-go words them, with the schema type; a rule
/// with `optionalOldSelf` also runs with no `oldSelf` (ratcheting's update from nothing), where
/// `oldSelf.hasValue()` fails, once the first run found nothing.
#[test]
fn evaluation_errors_and_ratcheting_on_defaults() {
    let o = "spec.validation.openAPIV3Schema.properties[spec].properties[o].default";
    let with = |rules: Value| {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"o": {"type": "object", "default": {"n": 1},
                "properties": {"a": {"type": "string"}, "n": {"type": "integer"}},
                "x-kubernetes-validations": rules}}}}});
        let mut e = Estimator::default()
            .estimate(&crd(schema, false), "test")
            .unwrap()
            .errors;
        e.sort();
        e
    };
    assert_eq!(
        with(json!([
            {"rule": "self.a == 'z'"},
            {"rule": "1 / (self.n - 1) == 0"},
            {"rule": "1 % (self.n - 1) == 0", "message": "m"},
            {"rule": "[1][self.n] == 1"}
        ])),
        [
            format!(
                "{o}: Invalid value: \"object\": division by zero evaluating rule: 1 / (self.n - 1) == 0"
            ),
            format!(
                "{o}: Invalid value: \"object\": index out of bounds: 1 evaluating rule: [1][self.n] == 1"
            ),
            format!("{o}: Invalid value: \"object\": modulus by zero evaluating rule: m"),
            format!(
                "{o}: Invalid value: \"object\": no such key: a evaluating rule: self.a == 'z'"
            ),
        ]
    );
    let ratchet = json!([{"rule": "oldSelf.hasValue()", "optionalOldSelf": true}]);
    assert_eq!(
        with(ratchet),
        [format!(
            "{o}: Invalid value: failed rule: oldSelf.hasValue()"
        )]
    );
    // The first run's failure stops the second.
    let both =
        json!([{"rule": "oldSelf.hasValue()", "optionalOldSelf": true}, {"rule": "self.n == 2"}]);
    assert_eq!(
        with(both),
        [format!("{o}: Invalid value: failed rule: self.n == 2")]
    );
}

/// Two-variable comprehensions (cel-go `ext/comprehensions.go`) on defaults: over a map the
/// variables are key and value; over a list index and element. `transformList` over a map is
/// not evaluated (its order is Go's map order) and says so; a repeated key of
/// `transformMapEntry` is `types.InsertMapKeyValue`'s `insert failed: key <k> already exists`.
#[test]
fn two_variable_comprehensions_on_defaults() {
    let with = |prop: Value| {
        let schema = json!({"type": "object", "properties": {"p": prop}});
        Estimator::default()
            .estimate(&crd(schema, false), "test")
            .unwrap()
    };
    let map = |rule: &str| {
        with(
            json!({"type": "object", "additionalProperties": {"type": "integer"},
            "default": {"a": 1, "b": 2}, "x-kubernetes-validations": [{"rule": rule}]}),
        )
    };
    let p = "spec.validation.openAPIV3Schema.properties[p].default";
    assert_eq!(
        map("self.all(k, v, v < 2)").errors,
        [format!(
            "{p}: Invalid value: failed rule: self.all(k, v, v < 2)"
        )]
    );
    assert!(map("self.exists(k, v, k == 'b' && v == 2)").valid);
    assert_eq!(
        map("self.exists_one(k, v, v > 0)").errors,
        [format!(
            "{p}: Invalid value: failed rule: self.exists_one(k, v, v > 0)"
        )]
    );
    let list = |rule: &str| {
        with(
            json!({"type": "array", "maxItems": 4, "items": {"type": "integer"}, "default": [5, 0],
            "x-kubernetes-validations": [{"rule": rule}]}),
        )
    };
    let r = list("self.all(i, x, i < x)");
    assert_eq!(
        r.errors,
        [format!(
            "{p}: Invalid value: failed rule: self.all(i, x, i < x)"
        )]
    );
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    for passing in [
        "self.exists(i, x, i == 1 && x == 0)",
        "self.existsOne(i, x, x > i)",
        "self.transformList(i, x, i + x) == [5, 1]",
        "self.transformList(i, x, x > 0, i) == [0]",
        "self.transformMap(i, x, x * 2) == {0: 10, 1: 0}",
    ] {
        let r = list(passing);
        assert!(r.valid && r.notes.is_empty(), "{passing}: {r:?}");
    }
    let r = list("self.all(i, x, 10 / x > i)");
    assert_eq!(
        r.errors,
        [format!(
            "{p}: Invalid value: \"array\": division by zero evaluating rule: self.all(i, x, 10 / x > i)"
        )]
    );
    let r = list("self.transformMapEntry(i, x, {'k': x}).size() == 1");
    assert_eq!(
        r.errors,
        [format!(
            "{p}: Invalid value: \"array\": insert failed: key k already exists evaluating rule: self.transformMapEntry(i, x, {{'k': x}}).size() == 1"
        )]
    );
    let r = map("self.transformList(k, v, v)[0] == 1");
    assert!(r.valid);
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
}

/// A failed rule with a `fieldPath` is reported at that path below the default
/// (`validateExpressions`: `currentFldPath.Child(compiled.NormalizedRuleFieldPath)`, the path
/// `ValidFieldPath` gives: a property a child, a key of additionalProperties an index);
/// evaluation errors stay at the node.
#[test]
fn field_path_rules_on_defaults() {
    let schema = json!({"type": "object", "properties": {"o": {"type": "object",
    "default": {"a": "x", "m": {"k": 1}},
    "properties": {"a": {"type": "string"},
        "m": {"type": "object", "additionalProperties": {"type": "integer"}}},
    "x-kubernetes-validations": [
        {"rule": "self.a != 'x'", "fieldPath": ".a"},
        {"rule": "self.m.k != 1", "fieldPath": ".m['k']", "message": "k is 1"},
        {"rule": "self.m.nope == 1", "fieldPath": ".m"}
    ]}}});
    let o = "spec.validation.openAPIV3Schema.properties[o].default";
    for (minor, object) in [(34, "\"object\": "), (36, "")] {
        let mut errors = Estimator::new(crate::cel::decls::Version::new(1, minor))
            .estimate(&crd(schema.clone(), false), "test")
            .unwrap()
            .errors;
        errors.sort();
        assert_eq!(
            errors,
            [
                format!("{o}.a: Invalid value: {object}failed rule: self.a != 'x'"),
                format!("{o}.m[k]: Invalid value: {object}k is 1"),
                format!(
                    "{o}: Invalid value: \"object\": no such key: nope evaluating rule: self.m.nope == 1"
                ),
            ],
            "1.{minor}"
        );
    }
}

/// Rules on defaults are compiled as `cel.NewValidator` compiles them, in the stored
/// expressions environment (`StoredExpressionsEnvLoader`: every library of the minor), not the
/// new expressions one: on 1.30 (compatibility version 1.29), `isIP` (introduced at 1.30) runs
/// on a default, while the same rule is a compile error for the CRD itself.
#[test]
fn rules_on_defaults_compile_in_the_stored_environment() {
    let with = |default: &str, minor: u32| {
        let schema = json!({"type": "object", "properties": {"ip": {"type": "string",
            "maxLength": 64, "default": default,
            "x-kubernetes-validations": [{"rule": "self == '' || isIP(self)"}]}}});
        Estimator::new(crate::cel::decls::Version::new(1, minor))
            .estimate(&crd(schema, false), "test")
            .unwrap()
    };
    let ip = "spec.validation.openAPIV3Schema.properties[ip]";
    assert_eq!(
        with("010.0.0.1", 30).errors,
        [format!(
            "{ip}.default: Invalid value: \"string\": failed rule: self == '' || isIP(self)"
        )]
    );
    let passing = with("10.0.0.1", 30);
    assert_eq!(passing.errors.len(), 1, "{:?}", passing.errors);
    assert!(
        passing.errors[0].starts_with(&format!(
            "{ip}.x-kubernetes-validations[0].rule: Invalid value:"
        )) && passing.errors[0].contains("undeclared reference to 'isIP'"),
        "{:?}",
        passing.errors
    );
    assert!(with("10.0.0.1", 36).valid);
    assert_eq!(
        with("010.0.0.1", 36).errors,
        [format!(
            "{ip}.default: Invalid value: \"010.0.0.1\": failed rule: self == '' || isIP(self)"
        )]
    );
}

/// A comprehension over `self.?m.orValue({})` has no static bound (cel-go's estimate of
/// `orValue` is unbounded), but its runtime cost on a small default is small: it is counted
/// (`crate::cel::runtime_cost`) and the rule evaluated, failing or passing as upstream; the rules
/// after it run too. A count over the per-call limit leaves it unevaluated, and the rules after
/// it with it (the budget is no longer certain).
#[test]
fn rules_with_unbounded_estimates_are_counted_at_runtime() {
    let o = "spec.validation.openAPIV3Schema.properties[p].default";
    let with = |default: Value, rule: &str| {
        let schema = json!({"type": "object", "properties": {"p": {"type": "object",
            "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}},
                "s": {"type": "string"}},
            "default": default,
            "x-kubernetes-validations": [{"rule": rule}, {"rule": "has(self.s)"}]}}});
        Estimator::default()
            .estimate(&crd(schema, false), "test")
            .unwrap()
    };
    let rule = "self.?m.orValue({}).all(k, self.m[k] > 0)";
    let failing = with(json!({"m": {"a": 1, "b": 0}}), rule);
    assert_eq!(
        failing.errors,
        [
            format!("{o}: Invalid value: failed rule: {rule}"),
            format!("{o}: Invalid value: failed rule: has(self.s)"),
        ],
        "{:?}",
        failing.notes
    );
    assert!(failing.notes.is_empty(), "{:?}", failing.notes);
    let passing = with(json!({"m": {"a": 1}}), rule);
    assert_eq!(
        passing.errors,
        [format!("{o}: Invalid value: failed rule: has(self.s)")]
    );
    // A messageExpression with no static bound is counted the same way.
    let schema = json!({"type": "object", "properties": {"p": {"type": "object",
        "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}},
        "default": {"m": {"a": 1, "b": 0}},
        "x-kubernetes-validations": [{"rule": rule,
            "messageExpression": "'bad: ' + self.?m.orValue({}).filter(k, self.m[k] == 0)[0]"}]}}});
    let r = Estimator::default()
        .estimate(&crd(schema, false), "test")
        .unwrap();
    assert_eq!(r.errors, [format!("{o}: Invalid value: bad: b")]);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    let two = with(
        json!({"m": {"a": 1, "b": 0}}),
        "self.?m.orValue({}).all(k, v, v > 0)",
    );
    assert_eq!(two.errors.len(), 2, "{:?}", two.errors);
    // 12 keys × `contains` of a 3000-character string in itself (300 · 300) go over 1,000,000.
    let keys: serde_json::Map<String, Value> =
        (0..12).map(|i| (format!("k{i}"), json!(1))).collect();
    let over = with(
        json!({"m": keys, "s": "a".repeat(3000)}),
        "self.?m.orValue({}).all(k, self.s.contains(self.s))",
    );
    // The default counts as passing: the schema's own cost errors stand.
    assert!(
        over.errors.iter().all(|e| e.contains("Forbidden")),
        "{:?}",
        over.errors
    );
    assert_eq!(over.notes.len(), 2, "{:?}", over.notes);
    assert!(
        over.notes[0].contains("its estimated cost does not rule out the runtime cost limits"),
        "{:?}",
        over.notes
    );
    assert!(
        over.notes[1].contains("the rules before it may have spent the runtime cost budget"),
        "{:?}",
        over.notes
    );
}

/// A CRD whose `spec.p` has `schema` (its default and rules), and an over-budget rule
/// elsewhere (`spec.tags`), whose cost errors stand only while every default passes.
fn defaulted_with(schema: Value) -> Value {
    crd(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "p": schema,
            "tags": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}}}}),
        false,
    )
}

const P: &str = "spec.validation.openAPIV3Schema.properties[spec].properties[p]";

fn estimate_at(minor: u32, crd: &Value) -> crate::report::ObjectReport {
    Estimator::new(crate::cel::decls::Version::new(1, minor))
        .estimate(crd, "test")
        .unwrap()
}

/// Asserts that the CRD is refused for its default alone (`<p>.default: Invalid value:
/// <shown>`), with no notes; `case` names the case in a failure's message.
fn assert_default_refused(r: &crate::report::ObjectReport, shown: &str, case: &str) {
    assert_eq!(
        r.errors,
        [format!("{P}.default: Invalid value: {shown}")],
        "{case}"
    );
    assert!(r.notes.is_empty(), "{case}: {:?}", r.notes);
}

/// Issue 30's first class: a messageExpression calling the strings extension's `format` is
/// evaluated on a default as cel-go evaluates it (the API server 1.36.2 answered `0 is not
/// allowed` for this CRD), on 1.30 (cel-go v0.17.8) as on 1.36 (v0.26.0); the failing default
/// turns the schema's cost checks off.
#[test]
fn format_message_expressions_on_defaults() {
    let crd = defaulted_with(json!({"type": "integer", "default": 0,
        "x-kubernetes-validations": [{"rule": "self * 2 < 0",
            "messageExpression": "'%s is not allowed'.format([string(self)])"}]}));
    for (minor, value) in [(30, "\"integer\""), (33, "\"integer\""), (36, "0")] {
        let r = estimate_at(minor, &crd);
        let shown = format!("{value}: 0 is not allowed");
        assert_default_refused(&r, &shown, &format!("1.{minor}"));
    }
    // Verbs, lists and maps, x/text's `%f`; a messageExpression that fails, or gives only
    // spaces or a line break, leaves the rule's message. From 1.31 (cel-go v0.20), the format
    // check of literal calls refuses `%s` of an object (a type, no map) and the others here: a
    // messageExpression that does not compile leaves the rule's message too (the API server
    // 1.36.2 gave each 1.36 text).
    let fallback = "failed rule: self.n < 0";
    for (message, at_1_30, from_1_31) in [
        (
            "'%s; %d; %.2f; %x; %b; %o'.format([self, self.n, 1234.5, 'hi', true, 8])",
            "{\"n\":3, \"s\":[\"a\", \"b\"]}; 3; 1,234.50; 6869; 1; 10",
            fallback,
        ),
        (
            "'%d; %.2f; %x; %b; %o'.format([self.n, 1234.5, 'hi', true, 8])",
            "3; 1,234.50; 6869; 1; 10",
            "3; 1,234.50; 6869; 1; 10",
        ),
        (
            "'%s and %d more'.format([self.s[0], self.s.size() - 1])",
            "a and 1 more",
            "a and 1 more",
        ),
        ("'%s'.format([self.s])", "[\"a\", \"b\"]", "[\"a\", \"b\"]"),
        ("'%d'.format([self.s])", fallback, fallback),
        ("'%s'.format(['  '])", fallback, fallback),
        ("'%s'.format(['a\\nb'])", fallback, fallback),
        ("'%d %d'.format([1])", fallback, fallback),
    ] {
        let crd = defaulted_with(
            json!({"type": "object", "default": {"n": 3, "s": ["a", "b"]},
            "properties": {"n": {"type": "integer"},
                "s": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": "self.n < 0", "messageExpression": message}]}),
        );
        for minor in [30, 31, 36] {
            let r = estimate_at(minor, &crd);
            let value = if minor >= 35 { "" } else { "\"object\": " };
            let shown = if minor >= 31 { from_1_31 } else { at_1_30 };
            let case = format!("1.{minor}: {message}");
            assert_default_refused(&r, &format!("{value}{shown}"), &case);
        }
    }
}

/// What `format` does that celcost does not follow (`%e`: x/text's scientific notation) is not
/// guessed: the rule's message is shown for a failing rule's messageExpression, and a rule that
/// calls it counts as passing, with a note; the schema's cost errors then stand.
#[test]
fn unfollowed_format_verbs_are_noted() {
    let crd = defaulted_with(json!({"type": "number", "default": 1.5,
        "x-kubernetes-validations": [
            {"rule": "self < 0.0", "messageExpression": "'%e'.format([self])"},
            {"rule": "'%e'.format([self]) == ''"}]}));
    for minor in [30, 36] {
        let r = estimate_at(minor, &crd);
        let value = if minor >= 35 { "1.5" } else { "\"number\"" };
        assert_eq!(
            r.errors,
            [format!(
                "{P}.default: Invalid value: {value}: failed rule: self < 0.0"
            )],
            "1.{minor}"
        );
        assert_eq!(r.notes.len(), 2, "1.{minor}: {:?}", r.notes);
        assert!(r.notes[0].contains("'%e'.format([self]): messageExpression not evaluated"));
        assert!(r.notes[1].contains("`format` where celcost does not follow cel-go"));
    }
}

/// Issue 30's second class: a rule whose evaluation fails on the default is reported as the
/// API server words it (`<error> evaluating rule: <rule>`, the schema type as the value), and
/// turns the cost checks off. The URL library as `library/urls.go` over Go's `net/url`; the
/// API server 1.36.2 gave each of these texts.
#[test]
fn evaluation_errors_on_defaults_as_the_api_server_words_them() {
    let crd = defaulted_with(json!({"type": "string", "default": "a",
        "x-kubernetes-validations": [{"rule": "url(self).getQuery().size() <= 3"}]}));
    for minor in [30, 32, 34, 36] {
        let r = estimate_at(minor, &crd);
        assert_default_refused(
            &r,
            "\"string\": URL parse error during conversion from string: parse \"a\": invalid URI for request evaluating rule: url(self).getQuery().size() <= 3",
            &format!("1.{minor}"),
        );
    }
    for (schema, rule, error) in [
        (
            json!({"type": "string", "default": "http://h/p#%zz"}),
            "url(self).getHost() == 'x'",
            "\"string\": URL parse error during conversion from string: parse \"http://h/p#%zz\": invalid URL escape \"%zz\"",
        ),
        (
            json!({"type": "string", "default": "http://h/?a=1"}),
            "url(self).getQuery()['a'][1] == 'x'",
            "\"string\": index out of bounds: 1",
        ),
        (
            json!({"x-kubernetes-int-or-string": true, "default": "abc"}),
            "'%d'.format([self]) == 'x'",
            "\"\": error during formatting: decimal clause can only be used on integers, was given string",
        ),
        (
            json!({"x-kubernetes-int-or-string": true, "default": "1x"}),
            "int(self) > 0",
            "\"\": type conversion error from 'string' to 'int'",
        ),
        (
            json!({"type": "integer", "default": 1}),
            "9223372036854775807 + self > 0",
            "\"integer\": integer overflow",
        ),
        (
            json!({"type": "integer", "default": -1}),
            "uint(self) > 0u",
            "\"integer\": unsigned integer overflow",
        ),
        (
            json!({"type": "object", "default": {}, "properties": {"m": {"type": "integer"}}}),
            "self.?m.value() == 1",
            "\"object\": optional.none() dereference",
        ),
    ] {
        let mut schema = schema;
        schema["x-kubernetes-validations"] = json!([{ "rule": rule }]);
        let crd = defaulted_with(schema);
        for minor in [30, 36] {
            let r = estimate_at(minor, &crd);
            let shown = format!("{error} evaluating rule: {rule}");
            assert_default_refused(&r, &shown, &format!("1.{minor}: {rule}"));
        }
    }
}

/// The URL library's accessors on defaults, in failing rules' messages (the API server's
/// answers); what Go's `net/url` versions parse differently, and comparisons of URLs, are not
/// evaluated (noted, counted as passing), nor is an error whose words differ between them.
#[test]
fn url_accessors_on_defaults() {
    for (default, message, shown) in [
        (
            "https://x:8/",
            "'%s: %s %s'.format([self, url(self).getHostname(), url(self).getPort()])",
            "https://x:8/: x 8",
        ),
        ("http://h/a b", "url(self).getEscapedPath()", "/a%20b"),
        (
            "mailto:a@b",
            "'scheme ' + url(self).getScheme() + ' path ' + url(self).getEscapedPath() + '.'",
            "scheme mailto path .",
        ),
        (
            "http://h/?b=2&a=1&a=3",
            "'%s'.format([url(self).getQuery()])",
            "{\"a\":[\"1\", \"3\"], \"b\":[\"2\"]}",
        ),
    ] {
        let crd = defaulted_with(json!({"type": "string", "default": default,
            "x-kubernetes-validations": [{"rule": "!isURL(self)", "messageExpression": message}]}));
        let r = estimate_at(36, &crd);
        assert_default_refused(&r, &format!("\"{default}\": {shown}"), default);
    }
    for (default, rule) in [
        ("https://a:b:c/", "url(self).getHost() == ''"),
        ("http://h/", "url(self) != url(self)"),
        ("http://a:1:2/", "isURL(self)"),
    ] {
        let crd = defaulted_with(json!({"type": "string", "default": default,
            "x-kubernetes-validations": [{"rule": rule}]}));
        let r = estimate_at(36, &crd);
        assert!(
            !r.errors.is_empty() && r.errors.iter().all(|e| e.contains("Forbidden")),
            "{rule}: {:?}",
            r.errors
        );
        assert_eq!(r.notes.len(), 1, "{rule}: {:?}", r.notes);
        assert!(r.notes[0].contains(rule), "{:?}", r.notes);
    }
}

/// A messageExpression that does not compile is no program for the API server's validator
/// (`compileRule` returns before it normalizes the rule's fieldPath): a failed rule shows its
/// message at the node, not at its fieldPath (the API server 1.36.2's answer for this CRD).
#[test]
fn message_expressions_that_do_not_compile_on_defaults() {
    let crd = defaulted_with(json!({"type": "object", "default": {"n": 3},
        "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.n < 0", "fieldPath": ".n", "messageExpression": "'%d'.format(['x'])"},
            {"rule": "self.n < 1", "fieldPath": ".n", "messageExpression": "'n is %d'.format([self.n])"}]}));
    let r = estimate_at(36, &crd);
    assert_eq!(
        r.errors,
        [
            format!("{P}.default: Invalid value: failed rule: self.n < 0"),
            format!("{P}.default.n: Invalid value: n is 3"),
        ]
    );
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}

/// A URL rule that cel-go's estimate cannot bound (a comprehension over `self.?m.orValue({})`)
/// is evaluated on a small default with its runtime cost counted (`url` its string ·0.1): its
/// error is reported as the API server words it.
#[test]
fn url_rules_counted_at_runtime_on_defaults() {
    let rule = "self.?m.orValue({}).all(k, url(self.m[k]).getHost() != '')";
    let crd = defaulted_with(json!({"type": "object",
        "default": {"m": {"a": "http://h/", "b": "z"}},
        "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}},
        "x-kubernetes-validations": [{"rule": rule}]}));
    for minor in [30, 36] {
        let r = estimate_at(minor, &crd);
        let shown = format!(
            "\"object\": URL parse error during conversion from string: parse \"z\": invalid URI for request evaluating rule: {rule}"
        );
        assert_default_refused(&r, &shown, &format!("1.{minor}"));
    }
}

/// Conversions on defaults as cel-go converts (the API server 1.36.2's answers): `string` of a
/// double is Go's `%g`, strings parse as Go's `strconv` parses them.
#[test]
fn conversions_on_defaults() {
    for (schema, rule, message, shown) in [
        (
            json!({"type": "number", "default": 1000000.0}),
            "false",
            "string(self)",
            "1000000: 1e+06",
        ),
        (
            json!({"type": "string", "default": "Infinity"}),
            "double(self) < 0.0",
            "string(double(self))",
            "\"Infinity\": +Inf",
        ),
        (
            json!({"type": "string", "default": "+5"}),
            "uint(self) > 0u",
            "",
            "\"string\": type conversion error from 'string' to 'uint' evaluating rule: uint(self) > 0u",
        ),
        (
            json!({"type": "string", "default": "1e400"}),
            "double(self) > 0.0",
            "",
            "\"string\": type conversion error from 'string' to 'double' evaluating rule: double(self) > 0.0",
        ),
        (
            json!({"type": "string", "default": "yes"}),
            "bool(self)",
            "",
            "\"string\": type conversion error from 'string' to 'bool' evaluating rule: bool(self)",
        ),
    ] {
        let mut schema = schema;
        schema["x-kubernetes-validations"] = json!([{"rule": rule, "messageExpression": message}]);
        let r = estimate_at(36, &defaulted_with(schema));
        assert_default_refused(&r, shown, rule);
    }
    // `bool('T')` is true.
    let r = estimate_at(
        36,
        &defaulted_with(json!({"type": "string", "default": "T",
        "x-kubernetes-validations": [{"rule": "bool(self)"}]})),
    );
    assert!(
        r.errors.iter().all(|e| e.contains("Forbidden")),
        "{:?}",
        r.errors
    );
    assert!(r.notes.is_empty(), "{:?}", r.notes);
}
