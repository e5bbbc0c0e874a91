//! Linear scaling, checked by counted work: every schema and expression dimension of
//! `benches/support/families.rs` (nesting of lists, maps and objects; width; reads and rules per
//! node; expression length and nesting; literals; variables; objects per file and per run), at n
//! and 4n, through `celcost estimate`'s default path — the estimate, suggested bounds and cheaper
//! rules near the budget, the locations of rules, every output format — with one worker.
//!
//! What is counted, in this process (so the test cannot flake on a loaded machine, as wall time
//! would):
//! - the estimator's steps ([`celcost::budget`]): every loop whose length depends on the input
//!   charges them, the suggested bounds' walks down the schema included (the search that took
//!   d³ for a rule d lists deep did not charge its walks, so this count did not see it);
//! - allocations and bytes allocated, and the peak of bytes held, by this binary's allocator;
//! - the `celcost` binary's instructions under valgrind, for the dimensions the suggested bounds'
//!   search and the schema walks work on: any loop, charged or not
//!   ([`instructions_of_the_cli_grow_at_most_n_log_n_in_every_dimension`]).
//!
//! A dimension fails when a counter at 4n is more than [`SLACK`] times its value at n times the
//! growth of the work's size: the input's and the JSON output's bytes, at least 4 (n·log n is
//! about 1.2–1.4 × 4 at these sizes; quadratic work is 16×, cubic 64×). The output counts as
//! size because some of it grows faster than n by what it is: each of the d bounds suggested
//! for a rule d lists deep names its node by a path of d steps.

#[path = "../benches/support/families.rs"]
mod families;

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

use celcost::Estimator;
use celcost::budget::{CountingAllocator, Limits, run_measured};
use celcost::cli::{Advice, Outcome, Run};
use celcost::suggest::Settings;

/// How much more than the size's growth a counter may grow from n to 4n.
const SLACK: f64 = 1.6;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
}

/// celcost's counting allocator, counting this thread's allocations and bytes allocated too.
struct Counted;

fn note(bytes: usize) {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    let _ = ALLOCATED.try_with(|c| c.set(c.get() + bytes as u64));
}

// SAFETY: every call is forwarded to `CountingAllocator` unchanged; the bookkeeping touches
// const-initialized thread-local cells only.
unsafe impl GlobalAlloc for Counted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract.
        unsafe { CountingAllocator.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract.
        unsafe { CountingAllocator.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract.
        unsafe { CountingAllocator.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract.
        unsafe { CountingAllocator.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counted = Counted;

/// What one run of a family's member took.
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    /// Input and JSON output, in bytes.
    size: u64,
    steps: u64,
    allocations: u64,
    allocated: u64,
    peak_bytes: u64,
}

const COUNTERS: [&str; 4] = ["steps", "allocations", "bytes allocated", "peak bytes held"];

impl Work {
    fn counters(&self) -> [u64; 4] {
        [
            self.steps,
            self.allocations,
            self.allocated,
            self.peak_bytes,
        ]
    }
}

/// The documents of a family's member through the CLI's default path (as `celcost estimate`
/// with no flags: suggestions and cheaper rules near the budget) and every output format. Several
/// documents are several files of one run, estimated here one after the other on this thread
/// (the CLI's workers would count elsewhere).
fn run(docs: &[String]) -> Work {
    let unlimited = Limits {
        steps: u64::MAX,
        bytes: usize::MAX,
    };
    let advice = Advice::suggesting(Some(&Settings::default()));
    let estimator = Estimator::default();
    // Nothing parsed before (by another size or the warm-up) is found again.
    celcost::cel::env::clear_parse_cache();
    let input: u64 = docs.iter().map(|d| d.len() as u64).sum();
    let (a0, b0) = (ALLOCATIONS.with(Cell::get), ALLOCATED.with(Cell::get));
    let (outcome, usage) = run_measured(unlimited, || {
        let mut o = Outcome::default();
        for (i, d) in docs.iter().enumerate() {
            Run::new(&estimator)
                .advising(advice.clone())
                .text(&format!("{i:05}.yaml"), d, &mut o);
        }
        let json = celcost::output::json::render_json(&o.reports);
        let others = [
            celcost::output::table::render_table(&o.reports),
            celcost::output::markdown::render_markdown(&o.reports),
            celcost::output::sarif::render_sarif(&o.reports, 80.0),
            celcost::output::github::render_github(&o.reports, 80.0),
        ];
        let others: usize = others.iter().map(String::len).sum();
        (o, json.len() as u64, others)
    });
    let (outcome, json_bytes, _) = outcome.expect("no stop");
    assert!(
        outcome.input_errors.is_empty() && outcome.reports.iter().all(|r| r.stopped.is_none()),
        "{:?}",
        outcome.input_errors
    );
    Work {
        size: input + json_bytes,
        steps: usage.steps,
        allocations: ALLOCATIONS.with(Cell::get) - a0,
        allocated: ALLOCATED.with(Cell::get) - b0,
        peak_bytes: usage.peak_bytes as u64,
    }
}

/// Every dimension at n and 4n; see the module's documentation.
#[test]
fn work_grows_at_most_n_log_n_in_every_dimension_of_the_default_path() {
    let mut failures = Vec::new();
    for fam in families::all() {
        let at = |n: usize| {
            let docs = (fam.make)(n);
            run(&docs)
        };
        // Once before counting: what is made once per process (tables, caches) is not counted.
        let _ = at(fam.base);
        let (a, b) = (at(fam.base), at(fam.base * 4));
        let size_growth = (b.size as f64 / a.size as f64).max(4.0);
        let allowed = SLACK * size_growth;
        let mut line = format!(
            "{:<62} n={:<5} size x{:<5.1}",
            fam.name, fam.base, size_growth
        );
        for ((name, x), y) in COUNTERS.iter().zip(a.counters()).zip(b.counters()) {
            let growth = y as f64 / x.max(1) as f64;
            line.push_str(&format!(" {name} x{growth:.1}"));
            if growth > allowed {
                failures.push(format!(
                    "{}: {name} grew {growth:.1}x from n = {} to 4n ({x} -> {y}), more than {allowed:.1}x (the size grew {size_growth:.1}x)",
                    fam.name, fam.base
                ));
            }
        }
        eprintln!("{line}");
    }
    assert!(
        failures.is_empty(),
        "super-linear growth:\n{}",
        failures.join("\n")
    );
}

/// The CRD: lists 480 deep (`maxItems: 2` each), one rule at the bottom. The operator's
/// estimator (the cluster minor's report with suggested bounds, the next minor's beside it)
/// reports it whole, within a small share of the default work budget (the search took d³ steps
/// and spent the whole budget before).
#[test]
fn the_operator_reports_lists_480_deep_with_suggestions() {
    use celcost::controller::context::{CostEstimator, WithNextMinor};
    let doc = families::crd_nested(480, families::Nesting::Lists);
    let object = celcost::input::parse_documents(&doc)
        .pop()
        .and_then(|d| d.value.ok())
        .expect("a document");
    let estimator = WithNextMinor {
        current: Estimator::default(),
        next: None,
        suggest: Some(Settings::default()),
    };
    let catalog = celcost::schema::catalog::SchemaCatalog::new();
    let unlimited = Limits {
        steps: u64::MAX,
        bytes: usize::MAX,
    };
    let (report, usage) = run_measured(unlimited, || estimator.estimate(&object, &catalog));
    let report = report.expect("no stop").expect("a report");
    assert!(report.stopped.is_none(), "{:?}", report.stopped);
    let rule = &report.schemas[0].rules[0];
    println!(
        "lists 480 deep: {} steps, {} bounds suggested",
        usage.steps,
        rule.suggestions.len()
    );
    assert!(
        !rule.suggestions.is_empty(),
        "{:?}",
        rule.no_suggestion.as_deref()
    );
    assert!(
        usage.steps < celcost::budget::DEFAULT_STEPS / 4,
        "{} steps",
        usage.steps
    );
}

/// The families counted by instructions: the schema's nesting and depth, and costly rules (the
/// suggested bounds' search).
const SEARCHED: [&str; 10] = [
    "schema depth (a rule per level)",
    "schema depth (one rule at the root)",
    "list nesting (maxItems 2 a level, a rule at the bottom)",
    "map nesting (maxProperties 2 a level, a rule at the bottom)",
    "object nesting (a costly rule at the bottom)",
    "schema width (a costly rule reading two of n fields)",
    "rule reads (a costly rule reading n unbounded fields)",
    "rules per node (each costly, under a list)",
    "expression length (costly || terms)",
    "objects per file (each with a costly rule)",
];

/// The instructions `celcost estimate --output json` executes (valgrind's cachegrind), from
/// the process's start to its end, on every family's member at n and 4n, less those of a run on
/// an empty file (the process's fixed part). Unlike the steps above this sees every loop,
/// charged or not: the d³ search for lists d deep was a walk that charged no steps and
/// allocated nothing, which only an instruction count finds. It counts instructions of a
/// deterministic program, so it does not flake either.
///
/// The dimensions are those of the schema's shape and of costly rules, where the suggested
/// bounds' search and the walks down the schema work ([`SEARCHED`]); the others are as cheap to
/// count by steps, and all of them under valgrind would take minutes.
///
/// Needs valgrind (Debian's package; `.ci/run` installs it and sets
/// `CELCOST_REQUIRE_VALGRIND=1`, which turns a skip into a failure).
#[test]
fn instructions_of_the_cli_grow_at_most_n_log_n_in_every_dimension() {
    use std::process::Command;
    let have = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var_os("CELCOST_REQUIRE_VALGRIND").is_none_or(|v| v != "1"),
            "valgrind is not installed and CELCOST_REQUIRE_VALGRIND=1"
        );
        eprintln!("SKIPPED: valgrind is not installed (apt-get install valgrind)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("celcost-scaling-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Instructions and JSON bytes of one run over `docs`, each a file of one directory.
    let count = |label: &str, docs: &[String]| -> (u64, u64) {
        let d = dir.join(label);
        std::fs::create_dir_all(&d).unwrap();
        let mut input = 0u64;
        for (i, doc) in docs.iter().enumerate() {
            std::fs::write(d.join(format!("{i:05}.yaml")), doc).unwrap();
            input += doc.len() as u64;
        }
        let out = Command::new("valgrind")
            .args([
                "--tool=cachegrind",
                "--cache-sim=no",
                "--cachegrind-out-file=/dev/null",
                env!("CARGO_BIN_EXE_celcost"),
                "estimate",
                "--output",
                "json",
            ])
            .arg(&d)
            .output()
            .expect("valgrind runs");
        let err = String::from_utf8_lossy(&out.stderr);
        let refs = err
            .lines()
            .find_map(|l| {
                l.split_once("I   refs:")
                    .or_else(|| l.split_once("I refs:"))
            })
            .map(|(_, n)| n.trim().replace(',', ""))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no instruction count from valgrind for {label}:\n{err}"));
        let _ = std::fs::remove_dir_all(&d);
        (refs, input + out.stdout.len() as u64)
    };
    let all = families::all();
    for name in SEARCHED {
        assert!(all.iter().any(|f| f.name == name), "no family {name:?}");
    }
    // Every run at once, as many at a time as there are cores: instruction counts do not
    // depend on what else runs.
    let mut jobs: Vec<(String, Vec<String>)> = vec![("empty".into(), vec![String::new()])];
    let mut measured = Vec::new();
    for (i, fam) in all.iter().enumerate() {
        if SEARCHED.contains(&fam.name) {
            jobs.push((format!("{i}-n"), (fam.make)(fam.base)));
            jobs.push((format!("{i}-4n"), (fam.make)(fam.base * 4)));
            measured.push(fam);
        }
    }
    let next = std::sync::Mutex::new(0usize);
    let results = std::sync::Mutex::new(vec![(0u64, 0u64); jobs.len()]);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let j = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some((label, docs)) = jobs.get(j) else {
                        break;
                    };
                    let r = count(label, docs);
                    results.lock().unwrap()[j] = r;
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    let (fixed, _) = results[0];
    let mut failures = Vec::new();
    for (k, fam) in measured.into_iter().enumerate() {
        let ((a, sa), (b, sb)) = (results[1 + 2 * k], results[2 + 2 * k]);
        let (a, b) = (a.saturating_sub(fixed).max(1), b.saturating_sub(fixed));
        let size_growth = (sb as f64 / sa as f64).max(4.0);
        let allowed = SLACK * size_growth;
        let growth = b as f64 / a as f64;
        eprintln!(
            "{:<62} n={:<5} size x{size_growth:<5.1} instructions x{growth:.1} ({a} -> {b}, less {fixed} fixed)",
            fam.name, fam.base
        );
        if growth > allowed {
            failures.push(format!(
                "{}: instructions grew {growth:.1}x from n = {} to 4n ({a} -> {b}), more than {allowed:.1}x (the size grew {size_growth:.1}x)",
                fam.name, fam.base
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "super-linear growth:\n{}",
        failures.join("\n")
    );
}
