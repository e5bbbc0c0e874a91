//! The coverage-guided fuzz targets' checks (`celcost::fuzzing`, run by `cargo fuzz`:
//! `docs/hostile-input.md`) on stable, without libFuzzer: over the repository's own examples,
//! and over every input the fuzzer found a bug with (minimized, inline), each with the outcome
//! it must have now.

use celcost::cli::{Outcome, Run};
use celcost::fuzzing::{self, SOURCE};

/// `text` through `celcost estimate`'s path (as the document targets run it), checked as the
/// targets check it.
fn estimate(text: &str) -> Outcome {
    let mut o = Outcome::default();
    let settings = celcost::suggest::Settings::new(celcost::report::DEFAULT_NEAR_BUDGET_PERCENT);
    Run::new(&celcost::Estimator::default())
        .suggesting(Some(&settings))
        .text(SOURCE, text, &mut o);
    fuzzing::check(&o, text.len());
    o
}

#[test]
fn the_targets_take_the_examples() {
    for f in [
        "examples/crds/widgets.example.com.yaml",
        "examples/crds/gadgets.example.com.yaml",
        "examples/policies/widget-hosts.yaml",
        "examples/policies/require-team-label.yaml",
    ] {
        let text = std::fs::read(f).unwrap();
        fuzzing::crd_document(&text);
        fuzzing::policy_document(&text);
    }
    for e in [
        "self.minReplicas <= self.maxReplicas",
        "self.all(h, h.matches('^[a-z0-9.-]+$'))",
        "object.spec.hosts.all(h, !h.matches('[.]internal$'))",
        "",
        "(",
        "\u{85}\u{feff}'\u{10ffff}'",
    ] {
        fuzzing::cel_expression(e.as_bytes());
    }
    // Not UTF-8: an input error, as `celcost estimate` says of a binary file.
    fuzzing::crd_document(b"\xff\xfe");
}

#[test]
fn an_expression_is_estimated_in_every_place() {
    let docs = fuzzing::expression_documents("self.size() > 0");
    let text: String = docs.iter().map(|d| format!("---\n{d}\n")).collect();
    let o = estimate(&text);
    assert!(o.input_errors.is_empty(), "{:?}", o.input_errors);
    assert_eq!(o.reports.len(), 4);
    let crd = &o.reports[0];
    assert!(crd.stopped.is_none());
    let rules: usize = crd.schemas.iter().map(|s| s.rules.len()).sum();
    assert!(rules >= 10, "{rules} rules estimated");
}

#[test]
fn a_broken_document_is_an_input_error_naming_it() {
    let o = estimate("kind: [\n");
    assert!(o.reports.is_empty());
    assert_eq!(o.input_errors.len(), 1);
    assert!(
        o.input_errors[0].starts_with("fuzz.yaml#1: "),
        "{:?}",
        o.input_errors
    );
}

/// The targets of `fix`'s parts take the repository's own inputs: the Go types of the `fix --go`
/// tests, the examples' CRDs with a bound written into each of their mappings, and diffs between
/// them (each checked as the targets check it).
#[test]
fn the_fix_targets_take_the_examples() {
    let go = [
        "tests/data/fix-go/api/common/shared.go",
        "tests/data/fix-go-gateway/api/shared/timeouts.go",
        "tests/data/fix-go-gateway/api/v1alpha1/retry_policy_types.go",
        "tests/data/fix-go-gateway/api/v1alpha1/backend_timeout_policy_types.go",
    ];
    for f in go {
        fuzzing::go_declarations(&std::fs::read(f).unwrap());
    }
    let crds: Vec<Vec<u8>> = [
        "examples/crds/widgets.example.com.yaml",
        "examples/crds/gadgets.example.com.yaml",
    ]
    .iter()
    .map(|f| std::fs::read(f).unwrap())
    .collect();
    for text in &crds {
        // Prefixes YAML reads as nothing whose first byte picks each keyword (as fuzz/seed.py's).
        for prefix in [&b"---\n"[..], b"\n\n", b"# x\n"] {
            let mut data = prefix.to_vec();
            data.extend_from_slice(text);
            fuzzing::yaml_bound_edit(&data);
        }
        fuzzing::yaml_bound_edit(text);
    }
    // Found by `cargo fuzz run yaml_bound_edit`: lone CRs (YAML line breaks) made a bound
    // written and read back "not where the reader put it"; such files are refused now.
    for found in [
        &b"::\r\r"[..],
        b"\r\r\n---\n\r:",
        b"\x01\x05a:\r  maxItems: 9\r",
    ] {
        fuzzing::yaml_bound_edit(found);
    }
    let (a, b) = (&crds[0], &crds[1]);
    for (x, y) in [(a, b), (b, a), (a, a)] {
        let mut data = x.clone();
        data.push(0);
        data.extend_from_slice(y);
        fuzzing::unified_diff(&data);
    }
    for case in ["a\nb\0a\nc", "\0x\n", "x\0", "a\nb\n\0a\nb", "a\0a\n", "\0"] {
        fuzzing::unified_diff(case.as_bytes());
    }
}
