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
    // But for the errors' parts, which it has as their text, and the suggestions' typed roots
    // and steps, which it has as their paths.
    let without_parts: Vec<ObjectReport> = reports
        .iter()
        .cloned()
        .map(|mut r| {
            r.error_parts.clear();
            for s in &mut r.schemas {
                let rules = s
                    .rules
                    .iter_mut()
                    .flat_map(|rule| rule.suggestions.iter_mut());
                for g in s.suggestions.iter_mut().chain(rules) {
                    g.roots.clear();
                    g.steps.clear();
                }
            }
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

/// `go_declarations`: the bytes (as UTF-8) as a Go file through `celcost fix --go`'s reader of
/// declarations ([`celcost_advice::fix::go::syntax`]): it reads the file or says why not, and
/// the markers of every line of a file it read are found without a panic.
pub fn go_declarations(data: &[u8]) {
    use celcost_advice::fix::go::syntax;
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = syntax::parse(src) else {
        return;
    };
    let lines = src.matches('\n').count() as u32 + 1;
    for line in 1..=lines.min(4096) {
        let _ = file.markers(src, line);
    }
    let _ = file.all_markers(src);
}

/// `yaml_bound_edit`: the bytes (as UTF-8) as a CRD's YAML; on each of its first mappings
/// (breadth first) a bound — the keyword and number from the input's first bytes — is written
/// as `celcost fix` writes it ([`celcost_advice::fix::yaml::bound_edit`]) and read back. Checks:
/// the edit applies (it lies within the text, on character boundaries); when the edited text
/// reads back as the document with that bound set (what `fix` requires before it writes), a
/// second edit of the same node changes nothing.
pub fn yaml_bound_edit(data: &[u8]) {
    use celcost_advice::fix::yaml::{Lines, apply_edits, bound_edit};
    use celcost_core::input::parse_documents_located;
    use celcost_core::positions::{NodeId, Positions};
    const KEYWORDS: [&str; 3] = ["maxLength", "maxItems", "maxProperties"];
    const NODES: usize = 64;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let seed = data.first().copied().unwrap_or(0);
    let keyword = KEYWORDS[seed as usize % KEYWORDS.len()];
    let value = i64::from(data.get(1).copied().unwrap_or(1));
    let mut docs = parse_documents_located(text);
    if docs.is_empty() {
        return;
    }
    let (doc, positions) = docs.swap_remove(0);
    let (Ok(original), Some(p)) = (doc.value, positions) else {
        return;
    };
    let Some(root) = p.root() else {
        return;
    };
    // The node a path of keys and indices leads to.
    fn at(p: &Positions, mut n: NodeId, path: &[Result<String, usize>]) -> Option<NodeId> {
        for step in path {
            n = match step {
                Ok(k) => p.get(n, k)?,
                Err(i) => p.index(n, *i)?,
            };
        }
        Some(n)
    }
    let lines = Lines::new(text);
    let mut queue = std::collections::VecDeque::from([(root, Vec::new())]);
    let mut seen = 0;
    while let Some((node, path)) = queue.pop_front() {
        if seen == NODES {
            break;
        }
        seen += 1;
        if p.is_seq(node) {
            for i in 0..NODES {
                let Some(kid) = p.index(node, i) else { break };
                let mut next: Vec<Result<String, usize>> = path.clone();
                next.push(Err(i));
                queue.push_back((kid, next));
            }
            continue;
        }
        if p.is_scalar(node) || p.is_alias(node) {
            continue;
        }
        for (k, kid) in p.entries(node) {
            let mut next = path.clone();
            next.push(Ok(k.to_string()));
            queue.push_back((kid, next));
        }
        let Ok(Some(edit)) = bound_edit(&lines, &p, node, keyword, value) else {
            continue;
        };
        assert!(
            edit.start <= edit.end
                && edit.end <= text.len()
                && text.is_char_boundary(edit.start)
                && text.is_char_boundary(edit.end),
            "an edit outside the text or inside a character: {edit:?}"
        );
        let after = apply_edits(text, std::slice::from_ref(&edit)).expect("one edit applies");
        // What `fix` requires of the read-back: the document, with the bound set on the node.
        let mut want = original.clone();
        let mut w = Some(&mut want);
        for step in &path {
            w = w.and_then(|v| match step {
                Ok(k) => v.get_mut(k.as_str()),
                Err(i) => v.get_mut(*i),
            });
        }
        let Some(Value::Object(m)) = w else {
            continue;
        };
        m.insert(keyword.to_string(), json!(value));
        let mut back = parse_documents_located(&after);
        if back.is_empty() {
            continue;
        }
        let (d, bp) = back.swap_remove(0);
        let (Ok(v), Some(bp)) = (d.value, bp) else {
            continue;
        };
        if v != want {
            continue;
        }
        let again = bp
            .root()
            .and_then(|r| at(&bp, r, &path))
            .map(|n| bound_edit(&Lines::new(&after), &bp, n, keyword, value));
        assert!(
            matches!(again, Some(Ok(None))),
            "{keyword}: {value} written and read back, then edited again: {again:?}"
        );
    }
}

/// `unified_diff`: the bytes (as UTF-8, split at the first NUL into a text before and after)
/// through `celcost fix`'s unified diff ([`celcost_advice::fix::unified`]). Checks: it is empty
/// exactly when the texts are the same, every hunk's header counts its lines, and applying the
/// hunks to the text before gives the text after.
pub fn unified_diff(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (before, after) = text.split_once('\0').unwrap_or((text, ""));
    let diff = celcost_advice::fix::unified("f", before, after);
    assert_eq!(diff.is_empty(), before == after, "{diff:?}");
    if diff.is_empty() {
        return;
    }
    let rebuilt = apply_unified(before, &diff).unwrap_or_else(|e| panic!("{e}: {diff:?}"));
    assert_eq!(
        rebuilt, after,
        "the diff does not give the text after: {diff:?}"
    );
}

/// `before` with the hunks of a unified diff applied (as `patch` reads them), or what is wrong.
fn apply_unified(before: &str, diff: &str) -> Result<String, String> {
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let mut rows = diff.split_inclusive('\n').peekable();
    if rows.next() != Some("--- a/f\n") || rows.next() != Some("+++ b/f\n") {
        return Err("no file header".into());
    }
    let mut out = String::new();
    let mut next_old = 0;
    while let Some(header) = rows.next() {
        let nums: Vec<usize> = header
            .strip_prefix("@@ -")
            .and_then(|h| h.strip_suffix(" @@\n"))
            .ok_or_else(|| format!("not a hunk header: {header:?}"))?
            .split([',', ' ', '+'])
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map_err(|_| format!("bad number in {header:?}")))
            .collect::<Result<_, _>>()?;
        let [a_start, a_len, _, b_len] = nums[..] else {
            return Err(format!("hunk header without four numbers: {header:?}"));
        };
        let first = if a_len == 0 {
            a_start
        } else {
            a_start.checked_sub(1).ok_or("a hunk at line 0")?
        };
        if first < next_old || first > old.len() {
            return Err(format!("hunk out of order: {header:?}"));
        }
        old[next_old..first].iter().for_each(|l| out.push_str(l));
        next_old = first;
        let (mut seen_a, mut seen_b) = (0, 0);
        while seen_a < a_len || seen_b < b_len {
            let row = rows.next().ok_or("hunk cut short")?;
            let (sign, mut line) = row.split_at(1);
            let whole = if rows.peek() == Some(&"\\ No newline at end of file\n") {
                rows.next();
                line = line
                    .strip_suffix('\n')
                    .ok_or("marker after a line without a break")?;
                line
            } else {
                line
            };
            match sign {
                " " | "-" => {
                    if old.get(next_old) != Some(&whole) {
                        return Err(format!("line {} is not {whole:?}", next_old + 1));
                    }
                    next_old += 1;
                    seen_a += 1;
                    if sign == " " {
                        out.push_str(whole);
                        seen_b += 1;
                    }
                }
                "+" => {
                    out.push_str(whole);
                    seen_b += 1;
                }
                _ => return Err(format!("not a hunk line: {row:?}")),
            }
        }
        if seen_a != a_len || seen_b != b_len {
            return Err(format!("counts of {header:?} not its lines"));
        }
    }
    old[next_old..].iter().for_each(|l| out.push_str(l));
    Ok(out)
}
