//! Hostile input the API server accepts: the estimator stays linear (checked on its step counts,
//! which are deterministic), an object over its work budget is reported as not estimated while
//! the others are estimated, and a short fuzz run finds nothing.

use crate::families;
use crate::fuzzgen;

use celcost::Estimator;
use celcost::budget::{Limits, run_measured};
use celcost::cli::{Advice, Outcome, Run};
use celcost::report::{ObjectReport, StopReason};
use celcost::rewrite::Scope;

fn estimate(text: &str) -> (Vec<ObjectReport>, u64) {
    let unlimited = Limits {
        steps: u64::MAX,
        bytes: usize::MAX,
    };
    let (o, usage) = run_measured(unlimited, || {
        let mut o = Outcome::default();
        // Cheaper rules searched for every rule (not only near the budget), so that the work
        // of every size includes the search.
        let advice = Advice {
            suggest: None,
            rewrites: Scope::All,
        };
        Run::new(&Estimator::default())
            .advising(advice.clone())
            .text("in.yaml", text, &mut o);
        o
    });
    let o = o.expect("no stop");
    assert!(o.input_errors.is_empty(), "{:?}", o.input_errors);
    (o.reports, usage.steps)
}

#[test]
fn two_hundred_chained_variables_are_estimated_each_once() {
    let (reports, steps) = estimate(&families::policy_variables(200, true));
    let r = &reports[0];
    assert!(r.stopped.is_none(), "{:?}", r.stopped);
    assert!(r.valid, "{:?}", r.errors);
    assert_eq!(r.expressions.len(), 201);
    // Typed against ConfigMaps: v0 is `object.metadata.name` (no maxLength), each next one
    // twice the previous: its typed cost grows until it saturates, and never shrinks.
    let typed: Vec<u64> = r
        .expressions
        .iter()
        .take(200)
        .map(|e| e.typed.as_ref().expect("typed").max_cost)
        .collect();
    assert!(typed.windows(2).all(|w| w[0] <= w[1]), "{typed:?}");
    assert!(typed[1] < typed[30], "{typed:?}");
    // Saturated: the concatenation of two strings of the largest size costs a tenth of it.
    assert!(*typed.last().unwrap() >= u64::MAX / 10, "{typed:?}");
    assert_eq!(typed[198], typed[199]);
    // Twice the variables, about twice the work (2^n before).
    let (_, steps_400) = estimate(&families::policy_variables(400, true));
    assert!(
        steps_400 < steps * 5 / 2,
        "200 variables: {steps} steps, 400: {steps_400}"
    );
}

/// Doubling any dimension at most doubles the work, within 30% (n·log n at these sizes).
#[test]
fn work_grows_linearly_in_every_dimension() {
    for fam in families::all() {
        eprintln!("{} from n = {}", fam.name, fam.base);
        let steps = |n: usize| -> u64 {
            let docs = (fam.make)(n);
            // Several files of the same run: one text each here.
            docs.iter().map(|d| estimate(d).1).sum()
        };
        let (a, b) = (steps(fam.base), steps(fam.base * 2));
        assert!(
            b <= a * 26 / 10,
            "{}: {a} steps at n = {}, {b} at 2n",
            fam.name,
            fam.base
        );
    }
}

/// The verdict on an update (the object against itself, as the operator judges a stored CRD
/// its minor refuses on create) grows as the estimate does: versions are looked up once each.
#[test]
fn update_verdicts_grow_linearly() {
    let estimator = Estimator::default();
    let unlimited = Limits {
        steps: u64::MAX,
        bytes: usize::MAX,
    };
    let steps = |text: String| -> u64 {
        let v = celcost::input::parse_documents(&text)
            .remove(0)
            .value
            .expect("a document");
        let create = estimator.estimate_crd(&v, "in");
        let (u, usage) = run_measured(unlimited, || {
            estimator.update_verdict(&v, &v, &create, "in")
        });
        let u = u.expect("no stop").expect("a verdict");
        assert!(u.stopped.is_none());
        usage.steps
    };
    for (name, make, n) in [
        (
            "versions",
            families::crd_versions as fn(usize) -> String,
            200,
        ),
        ("rules", families::crd_rules, 200),
        ("width", families::crd_width, 400),
    ] {
        let (a, b) = (steps(make(n)), steps(make(2 * n)));
        assert!(b <= a * 26 / 10, "{name}: {a} steps at n = {n}, {b} at 2n");
    }
}

#[test]
fn an_object_over_its_budget_is_reported_and_the_others_estimated() {
    let good = families::crd_named(1, "self.a.size() < 10");
    let hostile = families::policy_variables(3000, true);
    let text = format!(
        "{good}---\n{hostile}---\n{}",
        families::crd_named(2, "self.a == 'x'")
    );
    // A budget that the CRDs fit in and the 3,000 variables do not.
    let estimator = Estimator::default().with_limits(Limits {
        steps: 20_000,
        bytes: usize::MAX,
    });
    let mut o = Outcome::default();
    Run::new(&estimator).text("in.yaml", &text, &mut o);
    assert_eq!(o.reports.len(), 3);
    assert!(o.reports[0].valid && o.reports[2].valid);
    let stopped = o.reports[1].stopped.as_ref().expect("stopped");
    assert_eq!(stopped.reason, StopReason::WorkBudgetExceeded);
    assert!(
        stopped.message.starts_with(
            "estimate stopped: work budget of 20000 steps exceeded at spec.variables["
        ),
        "{}",
        stopped.message
    );
    assert_eq!(o.reports[1].name, "generated");
    assert!(o.reports[1].expressions.is_empty());
    assert_eq!(o.exit_code(), 2);
    // With the default budget, the same policy is estimated.
    let (reports, _) = estimate(&hostile);
    assert!(reports[0].stopped.is_none());
}

#[test]
fn a_short_fuzz_run_finds_nothing() {
    let corpus = fuzzgen::corpus_texts(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
        16 << 10,
    );
    let fuzzer = fuzzgen::Fuzzer::new(corpus);
    let cases: u64 = std::env::var("CELCOST_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_500);
    let findings: Vec<String> = (0..cases)
        .filter_map(|seed| fuzzer.run(seed))
        .map(|f| format!("seed {} ({:?}): {}", f.seed, f.kind, f.what))
        .collect();
    assert!(findings.is_empty(), "{findings:#?}");
}
