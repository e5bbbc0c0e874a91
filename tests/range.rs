//! A range of minors shares estimates between minors that cannot differ on an object
//! (`celcost::versions::RangeEstimator`): on generated CRDs and policies (the fuzzer's
//! generators, which use every library function), every shared report must equal the minor's
//! own estimate, field for field.

#[path = "../benches/support/fuzzgen.rs"]
mod fuzzgen;

use celcost::Estimator;
use celcost::cel::minor::{Distribution, KUBERNETES, Minor};
use celcost::input::{objects_of, parse_documents};
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
    for d in [Distribution::Kubernetes, Distribution::OpenShift] {
        let singles = estimators(d);
        let range = RangeEstimator::new(estimators(d));
        for seed in 0..cases {
            let (_, text) = fuzzer.case(seed);
            for doc in parse_documents(&text) {
                let Ok(v) = doc.value else { continue };
                for o in objects_of("gen.yaml", v) {
                    let Some(ranged) =
                        range.estimate_each(&o.value, |e| e.estimate(&o.value, &o.source))
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
