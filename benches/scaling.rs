//! Scaling: for every input dimension of the estimator (expression length, nesting, variables,
//! rules, schema depth and width, enum size, versions, objects per file and per run), the time,
//! steps and peak memory of the estimate at n, 2n, 4n and 8n, and how they grow.
//!
//! `cargo bench --bench scaling` (`CELCOST_SCALING_RUNS` runs per size, default 3, the fastest
//! kept; `CELCOST_SCALING_ONLY=<substring>` for some families). The exponent is
//! log(x(8n) / x(n)) / log 8: 1 for linear growth, about 1.1–1.2 for n·log n at these sizes, 2
//! for quadratic. A family whose time or memory exponent is above 1.25 is marked SUPERLINEAR.
//! One thread: the estimate of one input, as `celcost estimate`'s default path runs it (YAML,
//! estimate, suggested bounds and cheaper rules near the budget, locations, the JSON report).
//! Prints numbers; asserts nothing (`tests/scaling.rs` checks the same families' counted work).

#[path = "support/families.rs"]
mod families;

use std::path::PathBuf;
use std::time::Instant;

use celcost::Estimator;
use celcost::budget::{CountingAllocator, Limits, run_measured};
use celcost::cli::{Advice, Outcome, Run};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Above this exponent, growth is worse than n·log n (with room for noise).
const SUPERLINEAR: f64 = 1.25;

struct Point {
    n: usize,
    seconds: f64,
    steps: u64,
    peak_bytes: usize,
}

fn measure(
    estimator: &Estimator,
    docs: &[String],
    dir: &std::path::Path,
) -> (f64, u64, usize, Outcome) {
    let unlimited = Limits {
        steps: u64::MAX,
        bytes: usize::MAX,
    };
    let advice = Advice::suggesting(Some(&celcost::suggest::Settings::default()));
    // Nothing parsed by an earlier run is found again.
    celcost::cel::env::clear_parse_cache();
    if docs.len() == 1 {
        let t = Instant::now();
        let (outcome, usage) = run_measured(unlimited, || {
            let mut o = Outcome::default();
            Run::new(estimator)
                .advising(advice.clone())
                .text("generated.yaml", &docs[0], &mut o);
            let _ = celcost::output::json::render_json(&o.reports);
            o
        });
        let secs = t.elapsed().as_secs_f64();
        (
            secs,
            usage.steps,
            usage.peak_bytes,
            outcome.expect("no stop"),
        )
    } else {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).expect("a temporary directory");
        for (i, d) in docs.iter().enumerate() {
            std::fs::write(dir.join(format!("{i:05}.yaml")), d).expect("a file");
        }
        let t = Instant::now();
        let (outcome, usage) = run_measured(unlimited, || {
            let o = Run::new(estimator)
                .advising(advice.clone())
                .paths(&[PathBuf::from(dir)]);
            let _ = celcost::output::json::render_json(&o.reports);
            o
        });
        let secs = t.elapsed().as_secs_f64();
        (
            secs,
            usage.steps,
            usage.peak_bytes,
            outcome.expect("no stop"),
        )
    }
}

fn exponent(a: f64, b: f64, ratio: f64) -> f64 {
    if a <= 0.0 || b <= 0.0 {
        return 0.0;
    }
    (b / a).ln() / ratio.ln()
}

fn main() {
    // One worker: the growth of one estimate, not of the machine's parallelism.
    // SAFETY: set before any other thread exists.
    unsafe { std::env::set_var("CELCOST_THREADS", "1") };
    let runs: usize = std::env::var("CELCOST_SCALING_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let only = std::env::var("CELCOST_SCALING_ONLY").unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("celcost-scaling-{}", std::process::id()));
    println!(
        "{:<44} {:>6} {:>10} {:>10} {:>10} {:>10} {:>6} {:>12} {:>6} {:>9} {:>9} {:>6}  verdict",
        "dimension",
        "n",
        "ms n",
        "ms 2n",
        "ms 4n",
        "ms 8n",
        "exp",
        "steps 8n",
        "exp",
        "MiB n",
        "MiB 8n",
        "exp"
    );
    let mut worst: Vec<String> = Vec::new();
    for fam in families::all() {
        if !only.is_empty() && !fam.name.contains(&only) {
            continue;
        }
        let mut points = Vec::new();
        for k in 0..4 {
            let n = fam.base << k;
            let docs = (fam.make)(n);
            let mut best: Option<Point> = None;
            for _ in 0..runs {
                // A fresh estimator: no parse cache carried over between runs.
                let estimator = Estimator::default();
                let (secs, steps, peak, outcome) = measure(&estimator, &docs, &dir);
                assert!(
                    outcome.input_errors.is_empty()
                        && outcome.reports.iter().all(|r| r.stopped.is_none()),
                    "{} n={n}: {:?}",
                    fam.name,
                    outcome.input_errors
                );
                if best.as_ref().is_none_or(|b| secs < b.seconds) {
                    best = Some(Point {
                        n,
                        seconds: secs,
                        steps,
                        peak_bytes: peak,
                    });
                }
            }
            points.push(best.expect("a run"));
        }
        let (first, last) = (&points[0], &points[3]);
        let ratio = (last.n / first.n) as f64;
        let t_exp = exponent(first.seconds, last.seconds, ratio);
        let s_exp = exponent(first.steps as f64, last.steps as f64, ratio);
        let m_exp = exponent(first.peak_bytes as f64, last.peak_bytes as f64, ratio);
        // Sub-millisecond times are noise: judge those by steps.
        let t_judged = if last.seconds < 0.002 { s_exp } else { t_exp };
        let verdict = if t_judged > SUPERLINEAR || m_exp > SUPERLINEAR {
            worst.push(fam.name.to_string());
            "SUPERLINEAR"
        } else {
            "ok"
        };
        println!(
            "{:<44} {:>6} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>6.2} {:>12} {:>6.2} {:>9.2} {:>9.2} {:>6.2}  {verdict}",
            fam.name,
            first.n,
            points[0].seconds * 1e3,
            points[1].seconds * 1e3,
            points[2].seconds * 1e3,
            points[3].seconds * 1e3,
            t_exp,
            last.steps,
            s_exp,
            first.peak_bytes as f64 / 1048576.0,
            last.peak_bytes as f64 / 1048576.0,
            m_exp,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if worst.is_empty() {
        println!("every dimension grows at most n·log n (exponent ≤ {SUPERLINEAR})");
    } else {
        println!("worse than n·log n: {}", worst.join("; "));
    }
}
