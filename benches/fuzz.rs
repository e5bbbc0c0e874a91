//! The fuzzer, on stable Rust: `cargo bench --bench fuzz -- [CASES] [FIRST_SEED]` (default
//! 100,000 cases from seed 0, on every core). Each case is generated from its seed
//! (`benches/support/fuzzgen.rs`: CRDs with random schemas and rules, policies with variables,
//! byte-level mutations of `../shared/corpus` files) and driven through parse → check →
//! estimate → report. Prints the count, the time and every finding (a panic, a budget overrun
//! on a small input, a case over 2 s) with its seed; a finding's input is written to
//! `target/fuzz-findings/<seed>.yaml`. Exits 1 when there are findings.

#[path = "support/fuzzgen.rs"]
mod fuzzgen;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use celcost::budget::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let cases: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let first: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let corpus_root = std::env::var("CELCOST_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    let corpus = fuzzgen::corpus_texts(&corpus_root, 48 << 10);
    println!(
        "fuzz: {cases} cases from seed {first}; {} corpus files to mutate",
        corpus.len()
    );
    // The estimator's own panics are caught and reported; keep their messages short.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("panic: {info}");
    }));
    let fuzzer = fuzzgen::Fuzzer::new(corpus);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicU64::new(first);
    let done = AtomicU64::new(0);
    let findings = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + cases {
                        break;
                    }
                    if let Some(f) = fuzzer.run(seed) {
                        println!("FINDING seed {seed} ({:?}): {}", f.kind, f.what);
                        findings.lock().expect("findings").push(f);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_multiple_of(1_000_000) {
                        println!("  {n} cases, {:.0} s", started.elapsed().as_secs_f64());
                    }
                }
            });
        }
    });
    let secs = started.elapsed().as_secs_f64();
    let findings = findings.into_inner().expect("findings");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-findings");
    for f in &findings {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join(format!("{}.yaml", f.seed)), &f.input);
    }
    println!(
        "fuzz: {} cases in {secs:.1} s ({:.0} cases/s, {threads} threads), {} findings",
        done.load(Ordering::Relaxed),
        done.load(Ordering::Relaxed) as f64 / secs.max(1e-9),
        findings.len()
    );
    if !findings.is_empty() {
        std::process::exit(1);
    }
}
