//! The bodies of the coverage-guided fuzz targets (`fuzz/fuzz_targets/`, run with `cargo fuzz`;
//! `docs/hostile-input.md`): each takes the fuzzer's bytes, drives them through the same path as
//! `celcost estimate` and checks what must hold of the result, panicking when it does not. The
//! fuzz targets are one line each, and `tests/it/fuzz_regressions.rs` replays the inputs the fuzzer
//! found through the same functions on stable, without libFuzzer.
//!
//! What is checked, beyond "no panic" (an estimator's panic is caught at the object's boundary
//! and reported as an `InternalError`, which is checked for here):
//! - every report is an estimate or a stop over the work budget, never an internal error;
//! - an input of at most [`SMALL_INPUT`] bytes does not go over the work budget (the budget is
//!   for hostile inputs of megabytes; a small input over it is a blow-up);
//! - every input error and report names its source;
//! - every output renders, and the JSON output parses back into the reports;
//! - `crd_document` and `policy_document`: the fast YAML reader reads every document it takes
//!   as the general parser does ([`celcost_core::input::check_fast_reader`]).

use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::cli::{Outcome, Run};
use celcost_advice::suggest::Settings;
use celcost_core::estimate::Estimator;
use celcost_core::fixtures;
use celcost_core::report::{ObjectReport, StopReason};

/// Inputs up to this size must be estimated within the default work budget.
pub const SMALL_INPUT: usize = 16 << 10;

/// The name the fuzzed text is estimated under (as a file's path would be).
pub const SOURCE: &str = "fuzz.yaml";

fn estimator() -> &'static Estimator {
    static E: OnceLock<Estimator> = OnceLock::new();
    E.get_or_init(Estimator::default)
}

fn settings() -> Settings {
    Settings::new(celcost_core::report::DEFAULT_NEAR_BUDGET_PERCENT)
}

/// `cel_expression`: the bytes (as UTF-8) as a CEL expression in every place one is estimated —
/// a CRD rule on objects, lists, maps, strings and numbers of fixed schemas (and its message
/// expression), a ValidatingAdmissionPolicy's validation, variable, match condition and audit
/// annotation, a MutatingAdmissionPolicy's mutation — through `celcost estimate`'s path.
pub fn cel_expression(data: &[u8]) {
    let Ok(expr) = std::str::from_utf8(data) else {
        return;
    };
    let mut text = String::new();
    for doc in expression_documents(expr) {
        // JSON is YAML (flow style): the same reader as a file's. Characters YAML does not take
        // raw (U+0085 is a line break, U+FEFF a mark) are escaped, as is all of non-ASCII (in
        // YAML's escapes: a surrogate pair is not one).
        text.push_str("---\n");
        for c in doc.to_string().chars() {
            match u32::from(c) {
                0..0x7f => text.push(c),
                u @ 0x7f..0x10000 => text.push_str(&format!("\\u{u:04x}")),
                u => text.push_str(&format!("\\U{u:08x}")),
            }
        }
        text.push('\n');
    }
    let outcome = estimate_text(&text);
    check(&outcome, data.len());
    // Each of the documents is one the estimator handles: each gets a report.
    assert!(
        outcome.input_errors.is_empty(),
        "the generated documents are well-formed: {:?}",
        outcome.input_errors
    );
    assert_eq!(
        outcome.reports.len(),
        4,
        "one report per generated document"
    );
}

/// `crd_document`: the bytes as a file given to `celcost estimate FILE` (CRDs in the corpus
/// seeds, but any manifest goes).
pub fn crd_document(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    celcost_core::input::check_fast_reader(text);
    let outcome = estimate_text(text);
    check(&outcome, data.len());
}

/// `policy_document`: the bytes as a file of policies, given to `celcost estimate` with a CRD
/// the policies may match or take as params (`widgets.example.com`, of `examples/crds`), so
/// that their expressions are typed from its schema as well as from the built-in ones.
pub fn policy_document(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    celcost_core::input::check_fast_reader(text);
    let mut all = String::with_capacity(WIDGETS_CRD.len() + text.len() + 8);
    all.push_str(WIDGETS_CRD);
    all.push_str("\n---\n");
    all.push_str(text);
    let outcome = estimate_text(&all);
    check(&outcome, data.len());
}

/// The CRD `policy_document` estimates the policies with.
const WIDGETS_CRD: &str = include_str!("../examples/crds/widgets.example.com.yaml");

fn estimate_text(text: &str) -> Outcome {
    let mut outcome = Outcome::default();
    Run::new(estimator())
        .suggesting(Some(&settings()))
        .text(SOURCE, text, &mut outcome);
    outcome
}

/// Every error has its parts, and they make its text.
fn check_error_parts(errors: &[String], parts: &[celcost_core::report::ErrorParts]) {
    assert_eq!(errors.len(), parts.len(), "{errors:?}");
    for (e, p) in errors.iter().zip(parts) {
        let text = if p.field.is_empty() {
            p.message.clone()
        } else {
            format!("{}: {}", p.field, p.message)
        };
        assert_eq!(e, &text, "an error's parts make its text");
    }
}

/// What must hold of any input's outcome (`len`: the fuzzed input's size).
pub fn check(outcome: &Outcome, len: usize) {
    for e in &outcome.input_errors {
        assert!(
            e.starts_with(SOURCE),
            "an input error names its source: {e}"
        );
    }
    for r in &outcome.reports {
        check_report(r, len);
    }
    // Every output renders; the JSON output (one line a report) is the reports.
    let reports = &outcome.reports;
    let json = celcost_advice::output::json::render_json(reports);
    let back: Vec<ObjectReport> = json
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("the JSON output does not parse: {e}\n{l}"))
        })
        .collect();
    // But for the errors' parts, which it has as their text.
    let without_parts: Vec<ObjectReport> = reports
        .iter()
        .cloned()
        .map(|mut r| {
            r.error_parts.clear();
            if let Some(u) = &mut r.update {
                u.error_parts.clear();
            }
            r
        })
        .collect();
    assert_eq!(back, without_parts, "the JSON output is the reports");
    let near = celcost_core::report::DEFAULT_NEAR_BUDGET_PERCENT;
    let _ = celcost_advice::output::table::render_table(reports);
    let _ = celcost_advice::output::markdown::render_markdown(reports);
    let sarif = celcost_advice::output::sarif::render_sarif(reports, near);
    serde_json::from_str::<Value>(&sarif)
        .unwrap_or_else(|e| panic!("the SARIF output does not parse: {e}\n{sarif}"));
    let _ = celcost_advice::output::github::render_github(reports, near);
    let _ = outcome.exit_code_failing_at(Some(near));
}

fn check_report(r: &ObjectReport, len: usize) {
    check_error_parts(&r.errors, &r.error_parts);
    if let Some(u) = &r.update {
        check_error_parts(&u.errors, &u.error_parts);
    }
    assert!(
        r.source.starts_with(SOURCE),
        "a report names its source: {}",
        r.source
    );
    if let Some(s) = &r.stopped {
        assert_ne!(
            s.reason,
            StopReason::InternalError,
            "the estimate of {} stopped on an internal error: {}",
            r.source,
            s.message
        );
        assert_eq!(s.reason, StopReason::WorkBudgetExceeded, "{}", s.message);
        assert!(
            len > SMALL_INPUT,
            "an input of {len} bytes went over the work budget ({}): {}",
            r.source,
            s.message
        );
        assert!(!r.valid, "a stopped estimate is not a verdict");
    }
}

/// The objects `cel_expression` puts an expression in: a CRD, a ValidatingAdmissionPolicy over
/// the CRD's resource and a MutatingAdmissionPolicy (v1beta1 and v1alpha1: one the default
/// version serves and one it reports as not served).
pub fn expression_documents(expr: &str) -> Vec<Value> {
    let rule = |extra: Value| {
        let mut r = json!({ "rule": expr, "messageExpression": expr });
        if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
            r.extend(extra.clone());
        }
        json!([r])
    };
    let scalars = json!({
        "name": { "type": "string", "maxLength": 63, "x-kubernetes-validations": rule(json!({})) },
        "text": { "type": "string" },
        "count": { "type": "integer", "minimum": 0, "maximum": 100,
                   "x-kubernetes-validations": rule(json!({})) },
        "ratio": { "type": "number" },
        "on": { "type": "boolean" },
        "port": { "x-kubernetes-int-or-string": true },
        "when": { "type": "string", "format": "date-time" },
        "every": { "type": "string", "format": "duration" },
        "blob": { "type": "string", "format": "byte", "maxLength": 1024 },
        "kind": { "type": "string", "enum": ["a", "bb", "ccc"] },
        "frozen": { "type": "string", "maxLength": 10,
                    "x-kubernetes-validations": [{ "rule": expr, "optionalOldSelf": true }] }
    });
    let mut spec_properties = json!({
        "size": { "x-kubernetes-int-or-string": true,
                  "anyOf": [{ "type": "integer" }, { "type": "string" }],
                  "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$" },
        "hosts": {
            "type": "array", "maxItems": 16,
            "items": { "type": "string", "maxLength": 253, "x-kubernetes-validations": rule(json!({})) },
            "x-kubernetes-validations": rule(json!({}))
        },
        "tags": { "type": "array", "items": { "type": "string" }, "x-kubernetes-list-type": "set" },
        "ports": {
            "type": "array", "maxItems": 8,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object", "required": ["name"],
                "properties": {
                    "name": { "type": "string", "maxLength": 15 },
                    "port": { "type": "integer" }
                },
                "x-kubernetes-validations": rule(json!({}))
            },
            "x-kubernetes-validations": rule(json!({}))
        },
        "labels": {
            "type": "object", "maxProperties": 32,
            "additionalProperties": { "type": "string", "maxLength": 63 },
            "x-kubernetes-validations": rule(json!({ "reason": "FieldValueInvalid" }))
        },
        "matrix": {
            "type": "array", "maxItems": 4,
            "items": { "type": "array", "maxItems": 4, "items": { "type": "integer" } }
        },
        "template": { "type": "object",
                      "x-kubernetes-embedded-resource": true,
                      "x-kubernetes-preserve-unknown-fields": true,
                      "x-kubernetes-validations": rule(json!({})) },
        "extra": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }
    });
    if let (Some(p), Some(s)) = (spec_properties.as_object_mut(), scalars.as_object()) {
        p.extend(s.clone());
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": rule(json!({ "fieldPath": ".name" })),
                "properties": spec_properties
            }
        },
        "x-kubernetes-validations": rule(json!({}))
    });
    let crd = fixtures::crd(
        "example.com",
        "fuzzes",
        "Fuzz",
        "Namespaced",
        json!([fixtures::version("v1", true, schema)]),
    );
    let constraints = fixtures::match_resource("example.com", "fuzzes", &["CREATE", "UPDATE"]);
    let vap = fixtures::policy(
        "ValidatingAdmissionPolicy",
        "fuzz",
        json!({
            "failurePolicy": "Fail",
            "paramKind": { "apiVersion": "example.com/v1", "kind": "Fuzz" },
            "matchConstraints": constraints,
            "matchConditions": [{ "name": "m", "expression": expr }],
            "variables": [
                { "name": "v", "expression": expr },
                { "name": "w", "expression": "variables.v" }
            ],
            "validations": [
                { "expression": expr, "messageExpression": expr },
                { "expression": "variables.w == variables.v" }
            ],
            "auditAnnotations": [{ "key": "k", "valueExpression": expr }]
        }),
    );
    let map = |api: &str| {
        let mut map = fixtures::policy(
            "MutatingAdmissionPolicy",
            "fuzz",
            json!({
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "matchConstraints": constraints,
                "matchConditions": [{ "name": "m", "expression": expr }],
                "variables": [{ "name": "v", "expression": expr }],
                "mutations": [
                    { "patchType": "ApplyConfiguration",
                      "applyConfiguration": { "expression": expr } },
                    { "patchType": "JSONPatch", "jsonPatch": { "expression": expr } }
                ]
            }),
        );
        map["apiVersion"] = json!(api);
        map
    };
    vec![
        crd,
        vap,
        map("admissionregistration.k8s.io/v1beta1"),
        map("admissionregistration.k8s.io/v1alpha1"),
    ]
}
