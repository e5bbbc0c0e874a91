//! The command line's driver: `celcost estimate` reads files and directories (a first pass for
//! every CRD, then the policies typed by them; files in parallel) and hands the reports to an
//! output ([`crate::output`]). The arguments themselves are `src/main.rs`'s.

use std::path::{Path, PathBuf};

use crate::estimate::TargetKind;
use crate::estimate::range::RangeEstimator;
use crate::estimate::{Estimator, Shared};
use crate::input::{objects_of, parse_documents, parse_documents_located};
use crate::locate::ObjectSource;
use crate::report::ObjectReport;
use crate::schema::catalog::{GroupVersionResource, SchemaCatalog};

/// A percentage on the command line: `80`, `12.5`, `80%`; above 0.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(p) if p.is_finite() && p > 0.0 => Ok(p),
        _ => Err(format!(
            "`{s}` is not a percentage above 0 (e.g. 80, 12.5 or 80%)"
        )),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Markdown,
    /// SARIF 2.1.0, for code scanning (`crate::ci`).
    Sarif,
    /// GitHub Actions workflow commands: annotations on a pull request's diff (`crate::ci`).
    Github,
}

/// The outcome of estimating a set of paths.
#[derive(Debug, Default)]
pub struct Outcome {
    pub reports: Vec<ObjectReport>,
    /// Problems reading input (unreadable files, broken documents), each naming its source.
    pub input_errors: Vec<String>,
    /// Objects of other kinds, skipped, with why.
    pub skipped: Vec<String>,
}

impl Outcome {
    /// 0 when every object would be accepted, 1 when one would be rejected, 2 on unreadable
    /// input or an object whose estimate stopped (which take precedence: the verdict is
    /// incomplete).
    pub fn exit_code(&self) -> i32 {
        let stopped = |r: &ObjectReport| {
            r.stopped.is_some()
                || r.by_version
                    .as_ref()
                    .is_some_and(|m| m.verdicts.iter().any(|v| v.stopped))
        };
        if !self.input_errors.is_empty() || self.reports.iter().any(stopped) {
            2
        } else if self.reports.iter().any(|r| {
            !r.valid
                || r.by_version
                    .as_ref()
                    .is_some_and(|m| m.verdicts.iter().any(|v| !v.valid))
        }) {
            1
        } else {
            0
        }
    }
}

impl Outcome {
    /// [`Outcome::exit_code`], and 1 when `fail_at` is given and a rule, total, policy
    /// expression or policy evaluation reaches that percentage of its limit
    /// ([`crate::output::findings::reaches`]).
    pub fn exit_code_failing_at(&self, fail_at: Option<f64>) -> i32 {
        match self.exit_code() {
            0 if fail_at.is_some_and(|p| crate::output::findings::reaches(&self.reports, p)) => 1,
            c => c,
        }
    }
}

/// What `celcost diff` prints, the input errors, and its exit status.
#[derive(Debug, Default)]
pub struct DiffRun {
    pub text: String,
    pub input_errors: Vec<String>,
    pub code: i32,
}

/// `celcost diff BASE HEAD` for each minor of `estimators` (oldest first): what the API server
/// of each answers when HEAD is applied over BASE. One minor: its diff, as ever. Several: the
/// newest minor's diff, under a line naming the minors and those that refuse; the objects another
/// minor answers otherwise follow, each under its minor (in JSON, every line carries its
/// `kubernetesVersion`). The exit status follows the worst. SARIF and GitHub annotate HEAD as the
/// newest minor estimates it.
pub fn run_diff(
    estimators: &[Estimator],
    base: &Path,
    head: &Path,
    output: OutputFormat,
) -> DiffRun {
    use crate::diff::ObjectDiff;
    use crate::output::diff::{render_diff_json, render_diff_markdown, render_diff_table};
    let mut run = DiffRun::default();
    let mut per_minor: Vec<(String, Vec<ObjectDiff>, i32, Outcome)> = Vec::new();
    for e in estimators {
        let before = Run::new(e).paths(&[base.to_path_buf()]);
        let mut after = Run::new(e).paths(&[head.to_path_buf()]);
        attach_update_verdicts(e, &before, &mut after);
        if run.input_errors.is_empty() {
            run.input_errors = before
                .input_errors
                .iter()
                .chain(&after.input_errors)
                .cloned()
                .collect();
        }
        let d = crate::diff::diff(&before.reports, &after.reports);
        let code = match after.exit_code() {
            _ if !before.input_errors.is_empty() => 2,
            2 => 2,
            _ => crate::diff::exit_code(&d),
        };
        per_minor.push((e.minor().label(), d, code, after));
    }
    let Some((newest, newest_diff, _, newest_after)) = per_minor.last() else {
        run.code = 2;
        return run;
    };
    run.code = if per_minor.iter().any(|m| m.2 == 2) {
        2
    } else {
        per_minor.iter().map(|m| m.2).max().unwrap_or(0)
    };
    let several = per_minor.len() > 1;
    // Objects another minor answers otherwise than the newest.
    let key = |o: &ObjectDiff| (o.kind.clone(), o.name.clone());
    let newest_verdicts: std::collections::HashMap<(String, String), Option<bool>> = newest_diff
        .iter()
        .map(|o| (key(o), o.applied_valid()))
        .collect();
    let others: Vec<(&String, Vec<&ObjectDiff>)> = per_minor[..per_minor.len() - 1]
        .iter()
        .map(|(m, d, _, _)| {
            let differing = d
                .iter()
                .filter(|o| newest_verdicts.get(&key(o)) != Some(&o.applied_valid()))
                .collect();
            (m, differing)
        })
        .filter(|(_, d): &(&String, Vec<&ObjectDiff>)| !d.is_empty())
        .collect();
    let tagged = |m: &str, d: &[&ObjectDiff]| -> Vec<ObjectDiff> {
        d.iter()
            .map(|o| ObjectDiff {
                kubernetes_version: Some(m.to_string()),
                ..(*o).clone()
            })
            .collect()
    };
    let header = || {
        let minors: Vec<&str> = per_minor.iter().map(|m| m.0.as_str()).collect();
        let refusing: Vec<&str> = per_minor
            .iter()
            .filter(|m| m.2 != 0)
            .map(|m| m.0.as_str())
            .collect();
        let verdict = if refusing.is_empty() {
            "every one accepts HEAD applied over BASE".to_string()
        } else {
            format!(
                "HEAD applied over BASE is rejected by Kubernetes v{}",
                refusing.join(", v")
            )
        };
        format!("Kubernetes {}: {verdict}", minors.join(", "))
    };
    run.text = match output {
        OutputFormat::Json if several => {
            let refs: Vec<&ObjectDiff> = newest_diff.iter().collect();
            let mut text = render_diff_json(&tagged(newest, &refs));
            for (m, d) in &others {
                text.push_str(&render_diff_json(&tagged(m, d)));
            }
            text
        }
        OutputFormat::Json => render_diff_json(newest_diff),
        OutputFormat::Table | OutputFormat::Markdown => {
            let render = |d: &[ObjectDiff]| match output {
                OutputFormat::Markdown => render_diff_markdown(d),
                _ => render_diff_table(d),
            };
            let mut text = String::new();
            if several {
                text.push_str(&header());
                text.push_str("\n\n");
            }
            text.push_str(&render(newest_diff));
            for (m, d) in &others {
                let owned: Vec<ObjectDiff> = d.iter().map(|o| (*o).clone()).collect();
                text.push_str(&format!("\non Kubernetes {m}:\n\n"));
                text.push_str(&render(&owned));
            }
            text
        }
        // Annotations belong on the head: what the change leaves in the files.
        OutputFormat::Sarif => crate::output::sarif::render_sarif(
            &newest_after.reports,
            crate::report::DEFAULT_NEAR_BUDGET_PERCENT,
        ),
        OutputFormat::Github => crate::output::github::render_github(
            &newest_after.reports,
            crate::report::DEFAULT_NEAR_BUDGET_PERCENT,
        ),
    };
    run
}

/// What `celcost fix` prints and its exit status.
#[derive(Debug, Default)]
pub struct FixRun {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// `celcost fix` ([`crate::fix`]): without `write`, the unified diff on standard output and
/// the objects' bounds and costs on standard error; with `write`, the files written, then read
/// again by a second run, which must find nothing more to change.
pub fn run_fix(
    estimators: &[Estimator],
    paths: &[PathBuf],
    options: &crate::fix::FixOptions,
    write: bool,
) -> FixRun {
    let mut run = FixRun::default();
    let minors = match (estimators.first(), estimators.last()) {
        (Some(a), Some(b)) if estimators.len() > 1 => {
            format!("{}..{}", a.minor().label(), b.minor().label())
        }
        (Some(a), _) => a.minor().label(),
        _ => String::new(),
    };
    let outcome = crate::fix::fix_paths(estimators, paths, options);
    let mut errors: Vec<String> = outcome
        .input_errors
        .iter()
        .chain(&outcome.stopped)
        .map(|e| format!("error: {e}\n"))
        .collect();
    for o in &outcome.objects {
        for r in &o.refused {
            errors.push(format!("error: {} {}: cannot fix: {r}\n", o.source, o.name));
        }
    }
    let summary = outcome.summary(&minors);
    let mut code = outcome.exit_code();
    if write {
        match outcome.write() {
            Err(e) => {
                errors.push(format!("error: {e}\n"));
                code = 2;
            }
            Ok(()) => {
                run.stdout.push_str(&summary);
                for f in &outcome.files {
                    run.stdout
                        .push_str(&format!("wrote {}\n", f.path.display()));
                }
                // What was written, read again: a second run changes nothing.
                let again = crate::fix::fix_paths(estimators, paths, options);
                for f in &again.files {
                    errors.push(format!(
                        "error: {}: a second run would still change it (please report this)\n",
                        f.path.display()
                    ));
                    code = 2;
                }
            }
        }
    } else {
        run.stdout.push_str(&outcome.diff());
        run.stderr.push_str(&summary);
    }
    for e in errors {
        run.stderr.push_str(&e);
    }
    run.code = code;
    run
}

/// Runs `f` over `items` on `threads` workers; results keep the order of `items`.
fn parallel<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.clamp(1, items.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(item)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// What became of an object in the first pass: a CRD (or anything else) is estimated at once; a
/// policy waits for the CRDs of the whole input, which type its `object` and `params`.
enum Slot {
    Done(Box<ObjectReport>),
    Policy {
        source: String,
        value: serde_json::Value,
        /// Where it is in its file, to locate its expressions once estimated.
        located: Option<ObjectSource>,
    },
}

/// One file after the first pass.
#[derive(Default)]
struct FirstPass {
    slots: Vec<Slot>,
    input_errors: Vec<String>,
    skipped: Vec<String>,
    /// The CRDs of the file (by source), with the resources and kinds they define.
    crds: Vec<(String, Vec<(GroupVersionResource, String)>)>,
}

/// A run of `celcost estimate`: the minors it judges by, the schemas it knows besides the CRDs
/// of its input, and the advice it adds to the estimates of CRDs. The command line's one entry
/// point: over files and directories ([`Run::paths`]) or one file's text ([`Run::text`]).
pub struct Run<'a> {
    pub minors: Minors<'a>,
    /// The schemas policies are typed over besides the input's CRDs (the built-in ones).
    pub catalog: SchemaCatalog,
    pub advice: Advice,
}

impl<'a> Run<'a> {
    /// A run with the built-in schemas, no suggested bounds, and rewrites for the rules at the
    /// default near-budget threshold.
    pub fn new(minors: impl Into<Minors<'a>>) -> Self {
        Run {
            minors: minors.into(),
            catalog: SchemaCatalog::new(),
            advice: Advice::suggesting(None),
        }
    }

    /// This run with the advice asked for.
    pub fn advising(mut self, advice: Advice) -> Self {
        self.advice = advice;
        self
    }

    /// This run with suggested bounds as `celcost estimate` makes them ([`Advice::suggesting`]).
    pub fn suggesting(self, suggest: Option<&crate::suggest::Settings>) -> Self {
        self.advising(Advice::suggesting(suggest))
    }
}

impl<'a> From<&'a Estimator> for Minors<'a> {
    fn from(e: &'a Estimator) -> Self {
        Minors::One(e)
    }
}

impl<'a> From<&'a RangeEstimator> for Minors<'a> {
    fn from(r: &'a RangeEstimator) -> Self {
        Minors::Range(r)
    }
}

/// The estimators of a run: one minor, or a range.
#[derive(Clone, Copy)]
pub enum Minors<'a> {
    One(&'a Estimator),
    Range(&'a RangeEstimator),
}

impl<'a> Minors<'a> {
    /// The estimator whose report a range shows (the newest minor's).
    pub fn newest(self) -> Option<&'a Estimator> {
        match self {
            Minors::One(e) => Some(e),
            Minors::Range(r) => r.estimators().last(),
        }
    }

    /// [`Minors::estimate`], and the reports of the range's other minors (oldest first; none
    /// for one minor).
    fn estimate_keeping_older(
        self,
        v: &serde_json::Value,
        catalog: &SchemaCatalog,
        f: impl Fn(&Estimator, &Shared<'_>) -> Option<ObjectReport>,
    ) -> Option<(ObjectReport, Vec<ObjectReport>)> {
        match self {
            Minors::One(e) => f(e, &Shared::new(v)).map(|r| (r, Vec::new())),
            Minors::Range(r) => r.estimate_each(v, catalog, f).map(|mut reports| {
                if reports.len() == 1 {
                    (reports.pop().unwrap_or_default(), Vec::new())
                } else {
                    crate::report::versions::combine_keeping(reports)
                }
            }),
        }
    }

    /// A policy's report, typed over the schemas of `catalog`, its expressions located in the
    /// input where `located` says.
    fn estimate_policy(
        self,
        value: &serde_json::Value,
        source: &str,
        located: Option<&ObjectSource>,
        catalog: &SchemaCatalog,
    ) -> Option<ObjectReport> {
        let mut r = self.estimate(value, catalog, |e, shared| {
            e.estimate_shared(shared, source, catalog)
        });
        if let (Some(r), Some(l)) = (&mut r, located) {
            l.attach(r);
        }
        r
    }

    /// An object's report: one minor's, or the newest's carrying the range's matrix.
    /// `catalog` holds the schemas `f` types a policy over.
    fn estimate(
        self,
        v: &serde_json::Value,
        catalog: &SchemaCatalog,
        f: impl Fn(&Estimator, &Shared<'_>) -> Option<ObjectReport>,
    ) -> Option<ObjectReport> {
        match self {
            Minors::One(e) => f(e, &Shared::new(v)),
            Minors::Range(r) => r.estimate_each(v, catalog, f).map(ranged),
        }
    }
}

/// Says, in the reports of a minor whose rules stand in for another build's (OpenShift's 1.37:
/// upstream's, [`crate::cel::minor::Minor::stand_in_note`]), that they do; returns the notes
/// (once each), for the caller to warn with. Range reports are the newest minor's.
pub fn note_stand_ins(
    reports: &mut [ObjectReport],
    minors: &[&crate::cel::minor::Minor],
) -> Vec<String> {
    let notes: Vec<(String, String)> = minors
        .iter()
        .filter_map(|m| m.stand_in_note().map(|n| (format!("v{}", m.kubernetes), n)))
        .collect();
    for r in reports.iter_mut() {
        for (version, note) in &notes {
            if &r.kubernetes_version == version && !r.notes.contains(note) {
                r.notes.push(note.clone());
            }
        }
    }
    notes.into_iter().map(|(_, n)| n).collect()
}

/// The advice a run adds to the estimates of its CRDs, found with the estimator of the report
/// (the newest of a range).
#[derive(Clone, Debug, Default)]
pub struct Advice {
    /// Suggested bounds for rules and totals over their limit or at the near-budget threshold
    /// ([`crate::suggest`]); none without settings.
    pub suggest: Option<crate::suggest::Settings>,
    /// Which rules get cheaper rewrites offered ([`crate::rewrite`]).
    pub rewrites: crate::rewrite::Scope,
}

impl Advice {
    /// Suggestions with `suggest` (none without), and rewrites for the rules at or above the
    /// same near-budget threshold (the default one without settings): `celcost estimate`'s
    /// defaults.
    pub fn suggesting(suggest: Option<&crate::suggest::Settings>) -> Advice {
        let percent = suggest.map_or(crate::report::DEFAULT_NEAR_BUDGET_PERCENT, |s| {
            s.near_budget_percent
        });
        Advice {
            suggest: suggest.cloned(),
            rewrites: crate::rewrite::Scope::NearBudget(percent),
        }
    }
}

impl Run<'_> {
    /// Estimates every object in the given files and directories, files in parallel (one worker
    /// per core, `CELCOST_THREADS` to override); reports keep the order of the files. Policies
    /// get typed estimates from the CRDs found in the input (and the run's catalog). With a
    /// range, each object is estimated with every minor, each file read once: the reports are
    /// the newest minor's, with the verdicts and changes of all of them
    /// ([`crate::report::versions`]).
    pub fn paths(&self, paths: &[PathBuf]) -> Outcome {
        let (estimators, advice) = (self.minors, &self.advice);
        let mut outcome = Outcome::default();
        let mut files = Vec::new();
        for p in paths {
            crate::input::collect_files(p, &mut files, &mut outcome.input_errors);
        }
        let threads = threads();
        // First pass: CRDs are estimated (they do not depend on other objects), policies kept.
        // The biggest files first, so that no worker is left with a big one at the end; the
        // results in the input's order.
        let mut order: Vec<usize> = (0..files.len()).collect();
        let size = |i: &usize| std::fs::metadata(&files[*i]).map_or(0, |m| m.len());
        order.sort_by_cached_key(|i| std::cmp::Reverse(size(i)));
        let mut first: Vec<(usize, FirstPass)> = parallel(&order, threads, |&i| {
            (i, first_pass_file(estimators, &files[i], advice))
        });
        first.sort_by_key(|(i, _)| *i);
        let first: Vec<FirstPass> = first.into_iter().map(|(_, f)| f).collect();
        // The CRDs the policies match or take as params, read again from their files (so that the
        // first pass need not keep every CRD of a large input in memory).
        let mut catalog = self.catalog.clone();
        let needed = needed_crds(&first);
        for (file, sources) in &needed {
            if let Ok(text) = std::fs::read_to_string(&files[*file]) {
                add_crds(
                    &mut catalog,
                    &files[*file].display().to_string(),
                    &text,
                    sources,
                );
            }
        }
        // Second pass: the policies, in parallel.
        let policies: Vec<(&str, &serde_json::Value, Option<&ObjectSource>)> = first
            .iter()
            .flat_map(|f| f.slots.iter())
            .filter_map(|s| match s {
                Slot::Policy {
                    source,
                    value,
                    located,
                } => Some((source.as_str(), value, located.as_ref())),
                Slot::Done(_) => None,
            })
            .collect();
        let mut estimated = parallel(&policies, threads, |(source, value, located)| {
            estimators.estimate_policy(value, source, *located, &catalog)
        })
        .into_iter();
        for f in first {
            for slot in f.slots {
                match slot {
                    Slot::Done(r) => outcome.reports.push(*r),
                    Slot::Policy { .. } => {
                        if let Some(Some(r)) = estimated.next() {
                            outcome.reports.push(r);
                        }
                    }
                }
            }
            outcome.input_errors.extend(f.input_errors);
            outcome.skipped.extend(f.skipped);
        }
        outcome
    }
}

/// `celcost diff`: every CRD of `after` that `before` has too (matched by name) gets, in
/// `update`, the API server's verdict on an update of BASE's object (as the cluster stores it)
/// to HEAD's ([`Estimator::update_verdict`]). Both files of a pair are read again (each once
/// per pair of files, pairs in parallel), so that only the objects of one pair are held at a
/// time.
pub fn attach_update_verdicts(estimator: &Estimator, before: &Outcome, after: &mut Outcome) {
    use std::collections::BTreeMap;
    let crd = "CustomResourceDefinition";
    // Matched as `crate::diff::diff` matches them.
    let base: std::collections::HashMap<(String, String, usize), &str> =
        crate::diff::match_keys(&before.reports)
            .into_iter()
            .zip(&before.reports)
            .filter(|(_, r)| r.kind == crd)
            .map(|(k, r)| (k, r.source.as_str()))
            .collect();
    // (base file, head file) → (report index, base source).
    let mut pairs: BTreeMap<(String, String), Vec<(usize, String)>> = BTreeMap::new();
    let keys = crate::diff::match_keys(&after.reports);
    for (i, (r, key)) in after.reports.iter().zip(keys).enumerate() {
        if r.kind != crd || r.stopped.is_some() {
            continue;
        }
        let Some(b) = base.get(&key) else {
            continue;
        };
        let (Some((bf, _)), Some((hf, _))) = (b.rsplit_once('#'), r.source.rsplit_once('#')) else {
            continue;
        };
        pairs
            .entry((bf.to_string(), hf.to_string()))
            .or_default()
            .push((i, b.to_string()));
    }
    type Group<'a> = (&'a (String, String), &'a Vec<(usize, String)>);
    let groups: Vec<Group<'_>> = pairs.iter().collect();
    let reports = &after.reports;
    let verdicts = parallel(&groups, threads(), |((bf, hf), members)| {
        let wanted_base: std::collections::HashSet<&str> =
            members.iter().map(|(_, s)| s.as_str()).collect();
        let wanted_head: std::collections::HashSet<&str> = members
            .iter()
            .map(|(i, _)| reports[*i].source.as_str())
            .collect();
        let old = objects_by_source(bf, &wanted_base);
        let new = objects_by_source(hf, &wanted_head);
        members
            .iter()
            .filter_map(|(i, b)| {
                let r = &reports[*i];
                let v = estimator.update_verdict(old.get(b)?, new.get(&r.source)?, r, b)?;
                Some((*i, v))
            })
            .collect::<Vec<_>>()
    });
    for (i, v) in verdicts.into_iter().flatten() {
        after.reports[i].update = Some(v);
    }
}

/// The objects of `file` whose sources (`<file>#<document>`, `…[<item>]` in a list) are
/// wanted.
fn objects_by_source(
    file: &str,
    wanted: &std::collections::HashSet<&str>,
) -> std::collections::HashMap<String, serde_json::Value> {
    let mut out = std::collections::HashMap::new();
    let Ok(text) = std::fs::read_to_string(file) else {
        return out;
    };
    for doc in parse_documents(&text) {
        let source = format!("{file}#{}", doc.index);
        let Ok(v) = doc.value else { continue };
        if !v.is_object() {
            continue;
        }
        for o in objects_of(&source, v) {
            if wanted.contains(o.source.as_str()) {
                out.insert(o.source, o.value);
            }
        }
    }
    out
}

/// Workers for parallel work: one per core, `CELCOST_THREADS` to override.
fn threads() -> usize {
    std::env::var("CELCOST_THREADS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
}

/// The CRDs (file index → sources) that define a resource or kind a policy of the input names.
fn needed_crds(first: &[FirstPass]) -> std::collections::BTreeMap<usize, Vec<String>> {
    let mut wanted_resources = std::collections::BTreeSet::new();
    let mut wanted_kinds = std::collections::BTreeSet::new();
    for f in first {
        for slot in &f.slots {
            if let Slot::Policy { value, .. } = slot {
                let spec = value.get("spec").unwrap_or(&serde_json::Value::Null);
                wanted_resources.extend(crate::vap::matched_resources(spec).0);
                wanted_kinds.extend(crate::vap::param_kind(spec));
            }
        }
    }
    let mut needed: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    for (i, f) in first.iter().enumerate() {
        for (source, defines) in &f.crds {
            let wanted = defines.iter().any(|(gvr, kind)| {
                wanted_resources.contains(gvr)
                    || wanted_kinds.contains(&(gvr.api_version(), kind.clone()))
            });
            if wanted {
                needed.entry(i).or_default().push(source.clone());
            }
        }
    }
    needed
}

/// Adds the CRDs of a file's text whose sources are listed.
fn add_crds(catalog: &mut SchemaCatalog, name: &str, text: &str, sources: &[String]) {
    for doc in parse_documents(text) {
        let source = format!("{name}#{}", doc.index);
        let Ok(v) = doc.value else { continue };
        if !v.is_object() {
            continue;
        }
        for o in objects_of(&source, v) {
            if sources.contains(&o.source)
                && TargetKind::of(&o.value) == Some(TargetKind::CustomResourceDefinition)
            {
                catalog.add_crd(o.value);
            }
        }
    }
}

fn first_pass_file(estimators: Minors<'_>, f: &Path, advice: &Advice) -> FirstPass {
    let mut out = FirstPass::default();
    let bytes = match std::fs::read(f) {
        Ok(b) => b,
        Err(e) => {
            out.input_errors.push(format!("{}: {e}", f.display()));
            return out;
        }
    };
    match String::from_utf8(bytes) {
        Ok(text) => first_pass_text(
            estimators,
            &f.display().to_string(),
            &text,
            &mut out,
            advice,
        ),
        Err(_) => out
            .input_errors
            .push(format!("{}: not UTF-8 text (binary file?)", f.display())),
    }
    out
}

fn first_pass_text(
    estimators: Minors<'_>,
    name: &str,
    text: &str,
    out: &mut FirstPass,
    advice: &Advice,
) {
    for (doc, positions) in parse_documents_located(text) {
        let source = format!("{name}#{}", doc.index);
        let positions = positions.map(std::sync::Arc::new);
        match doc.value {
            Err(e) => out.input_errors.push(format!("{source}: {e}")),
            Ok(serde_json::Value::Null) => {}
            Ok(v) if !v.is_object() => out.skipped.push(format!(
                "{source}: not a Kubernetes object (a {})",
                json_kind(&v)
            )),
            Ok(v) => {
                for o in objects_of(&source, v) {
                    let located = positions
                        .clone()
                        .and_then(|p| ObjectSource::of(name, p, &source, &o.source));
                    match TargetKind::of(&o.value) {
                        Some(
                            TargetKind::ValidatingAdmissionPolicy
                            | TargetKind::MutatingAdmissionPolicy,
                        ) => out.slots.push(Slot::Policy {
                            source: o.source,
                            value: o.value,
                            located,
                        }),
                        Some(TargetKind::CustomResourceDefinition) => {
                            let defines = SchemaCatalog::crd_resources(&o.value);
                            if !defines.is_empty() {
                                out.crds.push((o.source.clone(), defines));
                            }
                            let (mut report, older) = estimators
                                .estimate_keeping_older(
                                    &o.value,
                                    SchemaCatalog::builtin(),
                                    |e, shared| Some(e.estimate_crd_shared(shared, &o.source)),
                                )
                                .unwrap_or_default();
                            if let Some(e) = estimators.newest() {
                                if let Some(settings) = &advice.suggest {
                                    // Over a range, bounds that fit every minor of it.
                                    let others: Vec<(&Estimator, &ObjectReport)> = match estimators
                                    {
                                        Minors::Range(r) => {
                                            r.estimators().iter().zip(older.iter()).collect()
                                        }
                                        Minors::One(_) => Vec::new(),
                                    };
                                    let alike =
                                        |a: &Estimator, b: &Estimator, v: &serde_json::Value| {
                                            matches!(estimators, Minors::Range(r)
                                            if r.estimate_alike(a, b, v, SchemaCatalog::builtin()))
                                        };
                                    report = crate::suggest::suggest_across_with(
                                        e,
                                        &others,
                                        Some(&alike),
                                        &o.value,
                                        report,
                                        settings,
                                    );
                                }
                                e.offer_rewrites_in(&o.value, &mut report, advice.rewrites);
                            }
                            if let Some(l) = &located {
                                l.attach(&mut report);
                            }
                            out.slots.push(Slot::Done(Box::new(report)));
                        }
                        None => {
                            let kind = o
                                .value
                                .get("kind")
                                .and_then(|k| k.as_str())
                                .unwrap_or("(no kind)");
                            let api = o
                                .value
                                .get("apiVersion")
                                .and_then(|k| k.as_str())
                                .unwrap_or("(no apiVersion)");
                            out.skipped.push(format!(
                                "{}: skipped {api} {kind}: not a CRD, ValidatingAdmissionPolicy or MutatingAdmissionPolicy",
                                o.source
                            ));
                        }
                    }
                }
            }
        }
    }
}

impl Run<'_> {
    /// Estimates the objects of one file's text as [`Run::paths`] estimates a file's; `name` is
    /// how the file is named in sources. Policies get typed estimates from the CRDs of the same
    /// text (and the run's catalog).
    pub fn text(&self, name: &str, text: &str, outcome: &mut Outcome) {
        let estimators = self.minors;
        let mut first = FirstPass::default();
        first_pass_text(estimators, name, text, &mut first, &self.advice);
        let mut catalog = std::borrow::Cow::Borrowed(&self.catalog);
        if first.slots.iter().any(|s| matches!(s, Slot::Policy { .. })) && !first.crds.is_empty() {
            let sources: Vec<String> = first.crds.iter().map(|(s, _)| s.clone()).collect();
            add_crds(catalog.to_mut(), name, text, &sources);
        }
        for slot in first.slots {
            match slot {
                Slot::Done(r) => outcome.reports.push(*r),
                Slot::Policy {
                    source,
                    value,
                    located,
                } => {
                    outcome.reports.extend(estimators.estimate_policy(
                        &value,
                        &source,
                        located.as_ref(),
                        &catalog,
                    ));
                }
            }
        }
        outcome.input_errors.extend(first.input_errors);
        outcome.skipped.extend(first.skipped);
    }
}

/// One report per estimator: a single minor's report as is, several combined.
fn ranged(mut reports: Vec<ObjectReport>) -> ObjectReport {
    if reports.len() == 1 {
        reports.pop().unwrap_or_default()
    } else {
        crate::report::versions::combine(reports)
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Array(_) => "list",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::Bool(_) => "boolean",
        _ => "value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        let mut o = Outcome::default();
        assert_eq!(o.exit_code(), 0);
        o.reports.push(ObjectReport {
            valid: false,
            ..Default::default()
        });
        assert_eq!(o.exit_code(), 1);
        o.input_errors.push("x".into());
        assert_eq!(o.exit_code(), 2);
    }

    #[test]
    fn bad_documents_do_not_hide_good_ones() {
        let e = Estimator::default();
        let mut o = Outcome::default();
        let text = "kind: [\n---\napiVersion: v1\nkind: ConfigMap\n---\n- 1\n";
        Run::new(&e).text("f.yaml", text, &mut o);
        assert_eq!(o.input_errors.len(), 1, "{:?}", o.input_errors);
        assert!(o.input_errors[0].starts_with("f.yaml#1"));
    }
}
