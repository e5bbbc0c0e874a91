//! Benchmark over the public CRD corpus (`../shared/corpus/crds`): wall time, rules per second
//! and peak memory of `celcost estimate` over every file (reading, YAML, estimation), through
//! the same code path as the CLI.
//!
//! `cargo bench --bench corpus`. `CELCOST_CORPUS` points elsewhere, `CELCOST_THREADS` sets the
//! workers (default: one per core), `CELCOST_BENCH_ITERATIONS` the runs (default 5). Prints
//! numbers; asserts nothing about them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use celcost::Estimator;
use celcost::budget::{CountingAllocator, Limits, run_measured};
use celcost::cel::minor::{Distribution, KUBERNETES, NEWEST_MINOR};
use celcost::cli::Run;
use celcost::estimate::range::RangeEstimator;
use celcost::input::{objects_of, parse_documents};
use celcost::schema::catalog::SchemaCatalog;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn cpu_seconds() -> Option<f64> {
    // utime + stime of this process, in clock ticks (100 Hz on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

fn main() {
    let corpus = std::env::var("CELCOST_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    let dir = corpus.join("crds");
    if !dir.is_dir() {
        println!("SKIPPED: no corpus at {}", corpus.display());
        return;
    }
    let iterations: usize = std::env::var("CELCOST_BENCH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    if let Ok(mode) = std::env::var("CELCOST_BENCH_MODE") {
        // The suggestions' lines alone (`suggestions`), the ranges' (`ranges`), or one
        // process's measure of a mode.
        if mode == "suggestions" {
            suggestions(&dir, iterations);
        } else if mode == "ranges" {
            range(iterations);
        } else {
            measure_mode(&corpus, &mode, iterations);
        }
        return;
    }
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let mut summary = (0, 0, 0usize);
    for _ in 0..iterations.max(1) {
        // A fresh estimator each run: no parse cache carried over.
        let estimator = Estimator::default();
        let cpu0 = cpu_seconds().unwrap_or(0.0);
        let t = Instant::now();
        let outcome = Run::new(&estimator).paths(std::slice::from_ref(&dir));
        walls.push(t.elapsed().as_secs_f64());
        cpus.push(cpu_seconds().unwrap_or(0.0) - cpu0);
        let rules: usize = outcome
            .reports
            .iter()
            .flat_map(|r| r.schemas.iter())
            .map(|s| s.rules.iter().filter(|r| r.compiled_by_apiserver).count())
            .sum();
        summary = (outcome.reports.len(), rules, outcome.input_errors.len());
    }
    let (wall, cpu) = (median(&walls), median(&cpus));
    let bytes: u64 = walk(&dir)
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "corpus: {} CRDs, {} compiled rules, {:.1} MiB, {} input errors",
        summary.0,
        summary.1,
        bytes as f64 / 1048576.0,
        summary.2
    );
    println!(
        "wall: median {:.3} s over {} runs (min {:.3} s, max {:.3} s); CPU median {:.2} s",
        wall,
        walls.len(),
        min(&walls),
        walls.iter().cloned().fold(0.0, f64::max),
        cpu
    );
    println!(
        "throughput: {:.0} rules/s, {:.1} MiB/s",
        summary.1 as f64 / wall,
        bytes as f64 / 1048576.0 / wall
    );
    let peak_one = peak_rss_kib();
    match peak_one {
        Some(k) => println!("peak memory (VmHWM): {:.1} MiB", k as f64 / 1024.0),
        None => println!("peak memory: unavailable (no /proc/self/status)"),
    }
    cli_default(&dir, iterations);
    cli_process(&dir, iterations);
    range(iterations);
    headroom();
    rewrites_share(&dir);
    suggestions(&dir, iterations);
    work_per_object(&corpus);
}

/// What `celcost estimate --output json` does by default over the CRD corpus: the estimate,
/// suggested bounds and cheaper rules at the default near-budget threshold, and the JSON; a
/// fresh estimator each run, the same threads as the CLI.
fn cli_default(dir: &Path, iterations: usize) {
    use celcost::cli::Advice;
    use celcost::output::json::render_json;
    let catalog = SchemaCatalog::new();
    let advice = Advice::suggesting(Some(&celcost::suggest::Settings::new(
        celcost::report::DEFAULT_NEAR_BUDGET_PERCENT,
    )));
    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    for _ in 0..iterations.max(1) {
        let (wall, cpu, outcome) = timed_advising(dir, &catalog, &advice);
        let cpu0 = cpu_seconds().unwrap_or(0.0);
        let t = Instant::now();
        std::hint::black_box(render_json(&outcome.reports));
        walls.push(wall + t.elapsed().as_secs_f64());
        cpus.push(cpu + cpu_seconds().unwrap_or(0.0) - cpu0);
    }
    println!(
        "cli default (estimate --output json: suggestions and rewrites near budget): wall median {:.3} s (min {:.3} s), CPU median {:.2} s (min {:.2} s; the target: at most 1 s)",
        median(&walls),
        min(&walls),
        median(&cpus),
        min(&cpus)
    );
}

/// CPU time (user, system) of the finished child processes, in seconds.
fn children_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(u.ru_utime), secs(u.ru_stime))
}

/// The CLI as users pay for it: `celcost estimate --output json` over the CRD corpus as a fresh
/// process each run (every one-time cost — lazy tables, the schema catalog, the allocator's first
/// pages — paid each time), with its default window of minors and with one minor; CPU (user +
/// system) and wall, medians.
fn cli_process(dir: &Path, iterations: usize) {
    let measure = |args: &[&str]| -> Option<(f64, f64, f64)> {
        let (mut cpus, mut walls, mut syss) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..iterations.max(1) {
            let (cpu, sys, wall) = one_process(args, dir)?;
            cpus.push(cpu);
            syss.push(sys);
            walls.push(wall);
        }
        Some((median(&cpus), median(&syss), median(&walls)))
    };
    for (label, args) in [
        (
            "default (the window of supported minors)",
            vec!["estimate", "--output", "json"],
        ),
        (
            "--kubernetes-version 1.37",
            vec![
                "estimate",
                "--output",
                "json",
                "--kubernetes-version",
                "1.37",
            ],
        ),
    ] {
        match measure(&args) {
            Some((cpu, sys, wall)) => println!(
                "cli as a process, {label}: CPU median {cpu:.2} s ({sys:.2} s of it system), wall median {wall:.3} s (the target: at most 1 s CPU)"
            ),
            None => println!("cli as a process, {label}: the binary did not run"),
        }
    }
}

/// `celcost ARGS DIR` as a fresh process, its output dropped: its CPU (user + system), system
/// CPU and wall time; `None` where it did not run or was killed.
fn one_process(args: &[&str], dir: &Path) -> Option<(f64, f64, f64)> {
    let (u0, s0) = children_cpu();
    let t = Instant::now();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args(args)
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    let wall = t.elapsed().as_secs_f64();
    status.code()?;
    let (u1, s1) = children_cpu();
    Some((u1 - u0 + s1 - s0, s1 - s0, wall))
}

/// One run of the CLI's code path over `dir` with `advice` and a fresh estimator (no parse
/// cache carried over): its wall time, CPU time (the process's) and outcome.
fn timed_advising(
    dir: &Path,
    catalog: &SchemaCatalog,
    advice: &celcost::cli::Advice,
) -> (f64, f64, celcost::cli::Outcome) {
    timed_advising_on(dir, catalog, advice, false)
}

/// As [`timed_advising`], on the default window of minors (`window`, as the CLI's default run)
/// or on one minor.
fn timed_advising_on(
    dir: &Path,
    catalog: &SchemaCatalog,
    advice: &celcost::cli::Advice,
    window: bool,
) -> (f64, f64, celcost::cli::Outcome) {
    use celcost::cli::{Minors, Run};
    let estimator = Estimator::default();
    let range = window.then(|| RangeEstimator::new(window_estimators()));
    let cpu0 = cpu_seconds().unwrap_or(0.0);
    let t = Instant::now();
    let outcome = Run {
        minors: match &range {
            Some(r) => Minors::Range(r),
            None => Minors::One(&estimator),
        },
        catalog: (catalog).clone(),
        advice: (advice).clone(),
        stdin: None,
    }
    .paths(std::slice::from_ref(&dir.to_path_buf()));
    let wall = t.elapsed().as_secs_f64();
    (wall, cpu_seconds().unwrap_or(0.0) - cpu0, outcome)
}

/// An estimator for each minor of the default window (upstream's supported minors).
fn window_estimators() -> Vec<Estimator> {
    celcost::cel::minor::supported_window(Distribution::Kubernetes)
        .into_iter()
        .filter_map(celcost::cel::minor::Minor::of)
        .map(Estimator::for_minor)
        .collect()
}

/// The median of `v` (the upper one of an even count).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::MAX, f64::min)
}

/// What offering cheaper rules adds to estimating the corpus's CRDs, for the CLI's default
/// scope (`--rewrites near`: rules at or above the near-budget threshold) and for every rule
/// (`--rewrites all`): timed per object, on one thread, with a cold cache of checks (a thread of
/// its own).
fn rewrites_share(dir: &Path) {
    use celcost::rewrite::Scope;
    for (label, scope) in [("near (default)", Scope::default()), ("all", Scope::All)] {
        let dir = dir.to_path_buf();
        let measured = std::thread::spawn(move || {
            let estimator = Estimator::default();
            let (mut estimate, mut offer, mut offered) = (0.0f64, 0.0f64, 0usize);
            for file in walk(&dir) {
                let Ok(text) = std::fs::read_to_string(&file) else {
                    continue;
                };
                for doc in parse_documents(&text) {
                    let Ok(v) = doc.value else { continue };
                    if !v.is_object() {
                        continue;
                    }
                    for o in objects_of(&file.display().to_string(), v) {
                        let t = Instant::now();
                        let mut report = estimator.estimate_crd(&o.value, &o.source);
                        estimate += t.elapsed().as_secs_f64();
                        let t = Instant::now();
                        celcost::rewrite::offer_rewrites_in(
                            &estimator,
                            &o.value,
                            &mut report,
                            scope,
                        );
                        offer += t.elapsed().as_secs_f64();
                        offered += report
                            .schemas
                            .iter()
                            .flat_map(|s| &s.rules)
                            .map(|r| r.rewrites.len())
                            .sum::<usize>();
                    }
                }
            }
            (estimate, offer, offered)
        })
        .join();
        match measured {
            Ok((estimate, offer, offered)) => println!(
                "rewrites --rewrites {label}: estimating the CRDs {estimate:.3} s, offering rewrites {offer:.3} s more (+{:.0}%), {offered} offered",
                100.0 * offer / estimate.max(1e-9)
            ),
            Err(_) => println!("rewrites: the measuring thread failed"),
        }
    }
}

/// Estimate-only against estimate + suggested bounds (`celcost::suggest`) over the CRD corpus, at
/// the near-budget thresholds 30% and 80% (the default), the same estimator and threads, runs
/// interleaved, no rewrites; prints both medians and their ratio (the budget: at most 2x). Then
/// the CLI's default run (suggestions and rewrites at the default threshold) against the same
/// at 30%, both on the default window of minors, as `celcost estimate` and `celcost estimate
/// --near-budget-percent 30` run (the budget: at most 2x).
fn suggestions(dir: &Path, iterations: usize) {
    use celcost::cli::Advice;
    use celcost::rewrite::Scope;
    let catalog = SchemaCatalog::new();
    let (mut default, mut at30) = (Vec::new(), Vec::new());
    for _ in 0..iterations.max(1) {
        for (percent, into) in [
            (celcost::report::DEFAULT_NEAR_BUDGET_PERCENT, &mut default),
            (30.0, &mut at30),
        ] {
            let advice = Advice::suggesting(Some(&celcost::suggest::Settings::new(percent)));
            let (_, cpu, _) = timed_advising_on(dir, &catalog, &advice, true);
            into.push(cpu);
        }
    }
    let (d, t) = (median(&default), median(&at30));
    println!(
        "estimate on the default window, suggestions and rewrites: default threshold CPU median {d:.2} s, --near-budget-percent 30 CPU median {t:.2} s = {:.2}x (the target: at most 2x)",
        t / d
    );
    // The same as users run it: fresh processes (no cache warm from the run before), alternating.
    let (mut default, mut at30) = (Vec::new(), Vec::new());
    for _ in 0..iterations.max(1) {
        let runs = [
            one_process(&["estimate", "--output", "json"], dir),
            one_process(
                &[
                    "estimate",
                    "--near-budget-percent",
                    "30",
                    "--output",
                    "json",
                ],
                dir,
            ),
        ];
        if let [Some((d, _, _)), Some((t, _, _))] = runs {
            default.push(d);
            at30.push(t);
        }
    }
    if default.is_empty() {
        println!("estimate on the default window as processes: the binary did not run");
    } else {
        let (d, t) = (median(&default), median(&at30));
        println!(
            "estimate on the default window as processes: default threshold CPU median {d:.2} s, --near-budget-percent 30 CPU median {t:.2} s = {:.2}x (the target: at most 2x)",
            t / d
        );
    }
    for percent in [30.0, 80.0] {
        let settings = celcost::suggest::Settings::new(percent);
        let (mut plain, mut with) = (Vec::new(), Vec::new());
        let mut found = (0usize, 0usize, 0usize);
        for _ in 0..iterations.max(1) {
            for suggest in [false, true] {
                let advice = Advice {
                    suggest: suggest.then_some(settings),
                    rewrites: Scope::Off,
                };
                let (secs, _, outcome) = timed_advising(dir, &catalog, &advice);
                if suggest {
                    with.push(secs);
                    let schemas = outcome.reports.iter().flat_map(|r| r.schemas.iter());
                    found = schemas.fold((0, 0, 0), |(g, n, b), s| {
                        let mut g = g + usize::from(!s.suggestions.is_empty());
                        let mut n = n + usize::from(s.no_suggestion.is_some());
                        let mut b = b + s.suggestions.len();
                        for r in &s.rules {
                            g += usize::from(!r.suggestions.is_empty());
                            n += usize::from(r.no_suggestion.is_some());
                            b += r.suggestions.len();
                        }
                        (g, n, b)
                    });
                } else {
                    plain.push(secs);
                }
            }
        }
        let (p, w) = (median(&plain), median(&with));
        println!(
            "suggestions (near budget at {percent}%): estimate only median {p:.3} s, estimate + suggestions median {w:.3} s = {:.2}x ({} findings with suggestions, {} bounds, {} with none)",
            w / p,
            found.0,
            found.2,
            found.1
        );
    }
}

/// The whole corpus (CRDs and policies) for the newest minor and for every minor (`all`), through the
/// CLI's code path, each in a process of its own (so that each peak memory is its own): the
/// range estimates each object once per group of minors that cannot differ on it
/// (`celcost::estimate::range::RangeEstimator`).
fn range(iterations: usize) {
    let run = |mode: &str| -> Option<(f64, f64, usize, usize, usize)> {
        let out = std::process::Command::new(std::env::current_exe().ok()?)
            .env("CELCOST_BENCH_MODE", mode)
            .env("CELCOST_BENCH_ITERATIONS", iterations.to_string())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let line = text.lines().find(|l| l.starts_with("mode "))?;
        let mut it = line.split_whitespace().skip(2);
        Some((
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
            it.next()?.parse().ok()?,
        ))
    };
    match (run("one"), run("range"), run("window")) {
        (Some((o, om, on, ..)), Some((a, am, an, ac, at)), Some((w, wm, wn, ..))) => {
            println!(
                "crds+policies, one minor ({}): median {o:.3} s, peak memory {om:.1} MiB, {on} objects",
                NEWEST_MINOR.label()
            );
            let window = celcost::cel::minor::supported_window(Distribution::Kubernetes);
            println!(
                "estimates made: the window {wn} of {} ({} minors), the range {an} of {} ({} minors); the rest shared",
                on * window.len(),
                window.len(),
                on * KUBERNETES.len(),
                KUBERNETES.len()
            );
            println!(
                "the range's estimates made again took {ac} rule compilations and {at} type checks from another minor's estimate of the CRD"
            );
            println!(
                "crds+policies, the default window {}..{} ({} minors): median {w:.3} s = {:.2}x one minor (the target: at most 1.3x), peak memory {wm:.1} MiB",
                window[0],
                window[window.len() - 1],
                window.len(),
                w / o
            );
            println!(
                "crds+policies, range {}..{} ({} minors): median {a:.3} s = {:.2}x one minor (the target: at most 1.6x), peak memory {am:.1} MiB",
                KUBERNETES[0].label(),
                NEWEST_MINOR.label(),
                KUBERNETES.len(),
                a / o
            );
        }
        _ => println!("range: the measuring processes failed"),
    }
}

/// `celcost headroom` over the CRD corpus (the default window of minors, every node's search
/// and its verifications) against one estimate of the same CRDs with the same minors, each in a
/// process of its own (its peak memory its own); `CELCOST_BENCH_HEADROOM_ITERATIONS` runs of
/// headroom (default 1: it is the slow one).
fn headroom() {
    let iterations: usize = std::env::var("CELCOST_BENCH_HEADROOM_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let run = |mode: &str, n: usize| -> Option<(f64, f64)> {
        let out = std::process::Command::new(std::env::current_exe().ok()?)
            .env("CELCOST_BENCH_MODE", mode)
            .env("CELCOST_BENCH_ITERATIONS", n.to_string())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let line = text.lines().find(|l| l.starts_with("mode "))?;
        let mut it = line.split_whitespace().skip(2);
        Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
    };
    match (run("window-crds", 3), run("headroom", iterations)) {
        (Some((e, em)), Some((h, hm))) => println!(
            "headroom over the CRD corpus (the default window): median {h:.3} s = {:.1}x one estimate of it ({e:.3} s; the target: at most 20x), peak memory {hm:.1} MiB (the estimate's {em:.1} MiB)",
            h / e
        ),
        _ => println!("headroom: the measuring processes failed"),
    }
}

/// In a child process: the corpus for one minor or the range, `iterations` times; prints
/// `mode <name> <median seconds> <peak MiB>`.
fn measure_mode(corpus: &Path, mode: &str, iterations: usize) {
    let dirs: Vec<PathBuf> = ["crds", "vaps", "maps"]
        .iter()
        .map(|d| corpus.join(d))
        .filter(|d| d.is_dir())
        .collect();
    let window = window_estimators;
    let crds = [corpus.join("crds")];
    let mut walls = Vec::new();
    // Estimates made per run: the range's (each object once per group of minors that can
    // differ on it), one per object on one minor.
    let mut estimates = 0;
    // What the range's estimates took of each other's rules (compilations, type checks).
    let mut taken = celcost::crd::Taken::default();
    for _ in 0..iterations.max(1) {
        let t = Instant::now();
        if mode == "headroom" {
            let run = celcost::cli::headroom::run_headroom(
                window(),
                &crds,
                None,
                &celcost::suggest::HeadroomSettings::default(),
            );
            std::hint::black_box(run.render(celcost::cli::headroom::HeadroomFormat::Json));
        } else if mode == "window-crds" {
            Run::new(&RangeEstimator::new(window())).paths(&crds);
        } else if mode == "range" {
            let r = RangeEstimator::new(KUBERNETES.iter().map(Estimator::for_minor).collect());
            Run::new(&r).paths(&dirs);
            estimates = r.estimates_made();
            taken = r.taken();
        } else if mode == "window" {
            let r = RangeEstimator::new(window());
            Run::new(&r).paths(&dirs);
            estimates = r.estimates_made();
        } else {
            estimates = Run::new(&Estimator::for_minor(NEWEST_MINOR))
                .paths(&dirs)
                .reports
                .len();
        }
        walls.push(t.elapsed().as_secs_f64());
    }
    walls.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let peak = peak_rss_kib().unwrap_or(0) as f64 / 1024.0;
    println!(
        "mode {mode} {:.4} {peak:.1} {estimates} {} {}",
        walls[walls.len() / 2],
        taken.compilations,
        taken.checks
    );
}

/// The work budget's view of the corpus: the steps and bytes of the costliest objects (every
/// CRD and policy, one at a time), against the default limits.
fn work_per_object(corpus: &Path) {
    let estimator = Estimator::default();
    let unlimited = Limits {
        steps: u64::MAX,
        bytes: usize::MAX,
    };
    let mut objects: Vec<(u64, usize, String)> = Vec::new();
    for sub in ["crds", "vaps"] {
        for file in walk(&corpus.join(sub)) {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            for doc in parse_documents(&text) {
                let Ok(v) = doc.value else { continue };
                if !v.is_object() {
                    continue;
                }
                for o in objects_of(&file.display().to_string(), v) {
                    let (r, usage) = run_measured(unlimited, || {
                        estimator.estimate_with(&o.value, &o.source, &SchemaCatalog::new())
                    });
                    if matches!(r, Ok(Some(_))) {
                        objects.push((usage.steps, usage.peak_bytes, o.source));
                    }
                }
            }
        }
    }
    objects.sort_by_key(|o| std::cmp::Reverse(o.0));
    let limits = Limits::default();
    println!(
        "work budget: {} objects; the default allows {} steps and {} MiB per object",
        objects.len(),
        limits.steps,
        limits.bytes >> 20
    );
    for (steps, _, src) in objects.iter().take(3) {
        println!(
            "  most steps: {steps} ({:.1}% of the budget) {src}",
            *steps as f64 * 100.0 / limits.steps as f64
        );
    }
    objects.sort_by_key(|o| std::cmp::Reverse(o.1));
    for (_, bytes, src) in objects.iter().take(3) {
        println!(
            "  most memory: {:.1} MiB ({:.1}% of the budget) {src}",
            *bytes as f64 / 1048576.0,
            *bytes as f64 * 100.0 / limits.bytes as f64
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
