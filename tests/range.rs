//! A range of minors shares estimates between minors that cannot differ on an object
//! (`celcost::versions::RangeEstimator`): on generated CRDs and policies (the fuzzer's
//! generators, which use every library function), every shared report must equal the minor's
//! own estimate, field for field.

#[path = "../benches/support/fuzzgen.rs"]
mod fuzzgen;

use celcost::Estimator;
use celcost::budget::{self, Limits};
use celcost::cel::minor::{Distribution, KUBERNETES, Minor};
use celcost::estimate::Shared;
use celcost::input::{objects_of, parse_documents};
use celcost::schema::catalog::SchemaCatalog;
use celcost::versions::RangeEstimator;

fn estimators(d: Distribution) -> Vec<Estimator> {
    KUBERNETES
        .iter()
        .map(|m| Estimator::for_minor(Minor::of_distribution(m.kubernetes, d).unwrap()))
        .collect()
}

#[test]
fn shared_estimates_equal_each_minors_own() {
    let fuzzer = fuzzgen::Fuzzer::new(Vec::new());
    let cases: u64 = std::env::var("CELCOST_RANGE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let mut compared = 0usize;
    let mut shared = 0usize;
    let catalog = SchemaCatalog::new();
    for d in [Distribution::Kubernetes, Distribution::OpenShift] {
        let singles = estimators(d);
        let range = RangeEstimator::new(estimators(d));
        for seed in 0..cases {
            let (_, text) = fuzzer.case(seed);
            for doc in parse_documents(&text) {
                let Ok(v) = doc.value else { continue };
                for o in objects_of("gen.yaml", v) {
                    let Some(ranged) = range
                        .estimate_each(&o.value, |e, s| e.estimate_shared(s, &o.source, &catalog))
                    else {
                        continue;
                    };
                    for (e, r) in singles.iter().zip(&ranged) {
                        let own = e.estimate(&o.value, &o.source).unwrap();
                        compared += 1;
                        assert_eq!(
                            serde_json::to_value(&own).unwrap(),
                            serde_json::to_value(r).unwrap(),
                            "seed {seed}, {d:?} 1.{}: the shared report differs from the minor's own\n{text}",
                            e.kubernetes_version().minor
                        );
                    }
                    shared += ranged
                        .windows(2)
                        .filter(|w| {
                            serde_json::to_value(&w[0].schemas).ok()
                                == serde_json::to_value(&w[1].schemas).ok()
                        })
                        .count();
                }
            }
        }
    }
    println!("{compared} minor reports compared; {shared} consecutive pairs alike");
    assert!(compared > 1000, "too few cases: {compared}");
}

/// What one minor makes for the others of a range ([`Shared`]) is charged to each as if made
/// again: every minor's estimate uses the same steps, and stops where it stops, as alone.
#[test]
fn shared_work_is_charged_to_every_minor() {
    let fuzzer = fuzzgen::Fuzzer::new(Vec::new());
    let all = estimators(Distribution::Kubernetes);
    let mut crds = 0;
    let mut stopped = 0;
    for seed in 0..200 {
        let (_, text) = fuzzer.case(seed);
        for doc in parse_documents(&text) {
            let Ok(v) = doc.value else { continue };
            for o in objects_of("gen.yaml", v) {
                if o.value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition")
                {
                    continue;
                }
                crds += 1;
                let newest = all.last().unwrap();
                // Once before, for the caches of the process: a first estimate of some objects
                // takes a step more than the next ones.
                for e in &all {
                    e.estimate_crd(&o.value, &o.source);
                }
                let (_, alone) = budget::run_measured(Limits::default(), || {
                    newest.estimate_crd(&o.value, &o.source)
                });
                // The oldest minor makes what is shared; the newest reuses it.
                let shared = Shared::new(&o.value);
                all[0].estimate_crd_shared(&shared, &o.source);
                let (_, reusing) = budget::run_measured(Limits::default(), || {
                    newest.estimate_crd_shared(&shared, &o.source)
                });
                assert_eq!(alone.steps, reusing.steps, "seed {seed}\n{text}");
                // Budgets that stop it at a quarter, half and three quarters of the way.
                for k in 1..4 {
                    let limits = Limits {
                        steps: alone.steps * k / 4,
                        ..Limits::default()
                    };
                    let tight = Estimator::for_minor(newest.minor()).with_limits(limits);
                    let own = tight.estimate_crd(&o.value, &o.source);
                    let with_shared = tight.estimate_crd_shared(&shared, &o.source);
                    stopped += usize::from(own.stopped.is_some());
                    assert_eq!(
                        serde_json::to_value(&own).unwrap(),
                        serde_json::to_value(&with_shared).unwrap(),
                        "seed {seed}, {limits:?}\n{text}"
                    );
                }
            }
        }
    }
    println!("{crds} CRDs, {stopped} stopped estimates compared");
    assert!(
        crds > 50 && stopped > 50,
        "too few cases: {crds} CRDs, {stopped} stopped"
    );
}
