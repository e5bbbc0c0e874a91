//! The command line's driver: `celcost estimate` reads files and directories (a first pass for
//! every CRD, then the policies typed by them; files in parallel) and hands the reports to an
//! output ([`celcost_advice::output`]). The arguments themselves are `src/main.rs`'s.

use std::path::{Path, PathBuf};

use celcost_core::estimate::TargetKind;
use celcost_core::estimate::range::RangeEstimator;
use celcost_core::estimate::{Estimator, Shared};
use celcost_core::input::{objects_of, parse_documents, parse_documents_located};
use celcost_core::locate::ObjectSource;
use celcost_core::report::ObjectReport;
use celcost_core::schema::catalog::{GroupVersionResource, SchemaCatalog};

pub mod cluster;
pub mod headroom;

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

/// An output format. A new one: a variant here (its doc is its `--help` line), its module in
/// [`celcost_advice::output`], and an arm in [`OutputFormat::render`] (and in [`run_diff`]'s choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Markdown,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub Actions workflow commands: annotations on a pull request's diff.
    Github,
    /// JUnit XML, for CI test reports: a testsuite per file, a testcase per object.
    Junit,
    /// OpenReports ClusterReport objects (openreports.io/v1alpha1), a YAML stream: one per
    /// object, as the operator writes them.
    Openreports,
}

/// What the outputs of a run render: its reports, the input it could not read, and the
/// thresholds it judges by.
#[derive(Clone, Copy, Debug)]
pub struct Rendering<'a> {
    pub reports: &'a [ObjectReport],
    pub input_errors: &'a [String],
    pub near_budget_percent: f64,
    pub fail_at: Option<f64>,
}

impl OutputFormat {
    /// The text of this format for a run.
    pub fn render(self, r: &Rendering<'_>) -> String {
        use celcost_advice::output::{github, json, junit, markdown, openreports, sarif, table};
        match self {
            OutputFormat::Table => table::render_table(r.reports),
            OutputFormat::Json => json::render_json(r.reports),
            OutputFormat::Markdown => markdown::render_markdown(r.reports),
            OutputFormat::Sarif => sarif::render_sarif(r.reports, r.near_budget_percent),
            OutputFormat::Github => github::render_github(r.reports, r.near_budget_percent),
            OutputFormat::Junit => {
                junit::render_junit(r.reports, r.input_errors, r.near_budget_percent, r.fail_at)
            }
            OutputFormat::Openreports => yaml_stream(&openreports::render_openreports(
                r.reports,
                r.near_budget_percent,
            )),
        }
    }

    /// Every format's name, as `--output` takes it.
    pub fn names() -> Vec<String> {
        use clap::ValueEnum;
        OutputFormat::value_variants()
            .iter()
            .filter_map(|f| f.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect()
    }
}

/// Objects as a YAML stream: each document after `---`.
fn yaml_stream(objects: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for o in objects {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(o).unwrap_or_default());
    }
    out
}

/// One `--output FORMAT[=FILE]`: a format, and the file it is written to (standard output
/// without one, or with `-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    pub format: OutputFormat,
    pub file: Option<PathBuf>,
}

/// `FORMAT` or `FORMAT=FILE` (`FORMAT=-`: standard output).
pub fn parse_output(s: &str) -> Result<OutputSpec, String> {
    use clap::ValueEnum;
    let (name, file) = match s.split_once('=') {
        Some((name, file)) => (name, Some(file)),
        None => (s, None),
    };
    let format = OutputFormat::from_str(name, true).map_err(|_| {
        format!(
            "`{name}` is not an output format (one of {}; FORMAT=FILE writes it to FILE)",
            OutputFormat::names().join(", ")
        )
    })?;
    let file = match file {
        None | Some("-") => None,
        Some("") => {
            return Err(format!(
                "`{s}`: no file after `=` (FORMAT=FILE, or FORMAT=- for standard output)"
            ));
        }
        Some(f) => Some(PathBuf::from(f)),
    };
    Ok(OutputSpec { format, file })
}

/// The outputs of a run, checked: none given is the table on standard output; at most one goes
/// to standard output, and no file is named twice.
pub fn check_outputs(mut outputs: Vec<OutputSpec>) -> Result<Vec<OutputSpec>, String> {
    if outputs.is_empty() {
        outputs.push(OutputSpec {
            format: OutputFormat::Table,
            file: None,
        });
    }
    if outputs.iter().filter(|o| o.file.is_none()).count() > 1 {
        return Err("--output: only one output can go to standard output (give the others a file: --output FORMAT=FILE)".into());
    }
    let mut seen = std::collections::HashSet::new();
    for f in outputs.iter().filter_map(|o| o.file.as_ref()) {
        if !seen.insert(f) {
            return Err(format!("--output: {} is named twice", f.display()));
        }
    }
    Ok(outputs)
}

/// How standard input is named in sources and locations (`<stdin>#1`, `<stdin>:12:7`).
pub const STDIN: &str = "<stdin>";

/// Whether a path of the command line means standard input (`-`).
pub fn is_stdin(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// Standard input's text, read once, or why it could not be read (an input error of `<stdin>`).
pub type StdinText = Result<std::sync::Arc<str>, String>;

/// Reads standard input whole when a path is `-`; a second `-` is refused (it can be read once).
pub fn read_stdin_for<P: AsRef<Path>>(paths: &[P]) -> Result<Option<StdinText>, String> {
    match paths.iter().filter(|p| is_stdin(p.as_ref())).count() {
        0 => Ok(None),
        1 => Ok(Some(read_stdin())),
        _ => Err("`-` (standard input) can be given only once".into()),
    }
}

fn read_stdin() -> StdinText {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{STDIN}: {e}"))?;
    String::from_utf8(bytes)
        .map(Into::into)
        .map_err(|_| format!("{STDIN}: not UTF-8 text (binary input?)"))
}

/// The outcome of estimating a set of paths.
#[derive(Debug, Default)]
pub struct Outcome {
    pub reports: Vec<ObjectReport>,
    /// Problems reading input (unreadable files, broken documents), each naming its source.
    pub input_errors: Vec<String>,
    /// Objects of other kinds, skipped, with why.
    pub skipped: Vec<String>,
    /// Standard input's text when the run read it (a path `-`), for what reads its objects
    /// again ([`attach_update_verdicts`]).
    pub stdin: Option<std::sync::Arc<str>>,
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
    /// ([`celcost_advice::output::findings::reaches`]).
    pub fn exit_code_failing_at(&self, fail_at: Option<f64>) -> i32 {
        match self.exit_code() {
            0 if fail_at
                .is_some_and(|p| celcost_advice::output::findings::reaches(&self.reports, p)) =>
            {
                1
            }
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
    stdin: Option<StdinText>,
) -> DiffRun {
    use celcost_advice::output::diff::{render_diff_json, render_diff_markdown, render_diff_table};
    use celcost_core::diff::ObjectDiff;
    let mut run = DiffRun::default();
    let per_minor = minor_diffs(estimators, (base, head), stdin, &mut run);
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
    let causes_of = |m: &str, o: &ObjectDiff| causes_between(&per_minor, (m, newest), o);
    let tagged = |m: &str, d: &[&ObjectDiff]| -> Vec<ObjectDiff> {
        d.iter()
            .map(|o| ObjectDiff {
                kubernetes_version: Some(m.to_string()),
                causes: causes_of(m, o),
                ..(*o).clone()
            })
            .collect()
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
                text.push_str(&diff_header(&per_minor));
                text.push_str("\n\n");
            }
            text.push_str(&render(newest_diff));
            for (m, d) in &others {
                let owned: Vec<ObjectDiff> = d
                    .iter()
                    .map(|o| ObjectDiff {
                        causes: causes_of(m, o),
                        ..(*o).clone()
                    })
                    .collect();
                text.push_str(&format!("\non Kubernetes {m}:\n\n"));
                text.push_str(&render(&owned));
            }
            text
        }
        // Annotations and test reports belong on the head: what the change leaves in the files.
        OutputFormat::Sarif
        | OutputFormat::Github
        | OutputFormat::Junit
        | OutputFormat::Openreports => output.render(&Rendering {
            reports: &newest_after.reports,
            input_errors: &newest_after.input_errors,
            near_budget_percent: celcost_core::report::DEFAULT_NEAR_BUDGET_PERCENT,
            fail_at: None,
        }),
    };
    run
}

/// BASE and HEAD estimated by each minor, HEAD as an update of BASE: per minor, its label, the
/// diff, its exit status and HEAD's outcome; the run's input errors (of the first minor).
fn minor_diffs(
    estimators: &[Estimator],
    (base, head): (&Path, &Path),
    stdin: Option<StdinText>,
    run: &mut DiffRun,
) -> Vec<(String, Vec<celcost_core::diff::ObjectDiff>, i32, Outcome)> {
    let mut per_minor = Vec::new();
    for e in estimators {
        let before = Run::new(e)
            .reading(stdin.clone())
            .paths(&[base.to_path_buf()]);
        let mut after = Run::new(e)
            .reading(stdin.clone())
            .paths(&[head.to_path_buf()]);
        attach_update_verdicts(e, &before, &mut after);
        if run.input_errors.is_empty() {
            run.input_errors = before
                .input_errors
                .iter()
                .chain(&after.input_errors)
                .cloned()
                .collect();
        }
        let d = celcost_core::diff::diff(&before.reports, &after.reports);
        let code = match after.exit_code() {
            _ if !before.input_errors.is_empty() => 2,
            2 => 2,
            _ => celcost_core::diff::exit_code(&d),
        };
        per_minor.push((e.minor().label(), d, code, after));
    }
    per_minor
}

/// Why the older minor `m` answers `o` otherwise than `newest`: the causes between the two of
/// HEAD's numbers (none for the newest itself).
fn causes_between(
    per_minor: &[(String, Vec<celcost_core::diff::ObjectDiff>, i32, Outcome)],
    (m, newest): (&str, &str),
    o: &celcost_core::diff::ObjectDiff,
) -> Vec<celcost_core::report::versions::VersionCause> {
    if m == newest {
        return Vec::new();
    }
    let head_report = |m: &str| {
        per_minor
            .iter()
            .find(|x| x.0 == m)
            .and_then(|x| {
                x.3.reports
                    .iter()
                    .find(|r| r.kind == o.kind && r.name == o.name && r.source == o.source_after)
            })
            .cloned()
    };
    let (Some(a), Some(b)) = (head_report(m), head_report(newest)) else {
        return Vec::new();
    };
    let matrix = celcost_core::report::versions::VersionMatrix::of(&[a, b]);
    let mut causes: Vec<_> = matrix
        .verdicts
        .get(1)
        .map(|v| v.causes.clone())
        .unwrap_or_default();
    for c in &matrix.changes {
        for x in &c.causes {
            if !causes.contains(x) {
                causes.push(x.clone());
            }
        }
    }
    causes
}

/// The head line of a diff over several minors: the minors and which reject HEAD over BASE.
fn diff_header(
    per_minor: &[(String, Vec<celcost_core::diff::ObjectDiff>, i32, Outcome)],
) -> String {
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
}

/// What `celcost fix` prints and its exit status.
#[derive(Debug, Default)]
pub struct FixRun {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// `celcost fix` ([`celcost_advice::fix`]): without `write`, the unified diff on standard output and
/// the objects' bounds and costs on standard error; with `write`, the files written, then read
/// again by a second run, which must find nothing more to change.
///
/// A path `-` is standard input (`stdin`), given alone: the fixed text is printed on standard
/// output (the input as it is when nothing needs a bound) and the bounds and costs on standard
/// error. It cannot be written back (`write`) nor fixed in Go types.
pub fn run_fix(
    estimators: &[Estimator],
    paths: &[PathBuf],
    options: &celcost_advice::fix::FixOptions,
    write: bool,
    stdin: Option<StdinText>,
) -> FixRun {
    if paths.iter().any(|p| is_stdin(p)) {
        return run_fix_stdin(estimators, paths, options, write, stdin);
    }
    let mut run = FixRun::default();
    let minors = minors_label(estimators);
    let outcome = celcost_advice::fix::fix_paths(estimators, paths, options);
    let mut errors = vec![fix_errors(&outcome)];
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
                let again = celcost_advice::fix::fix_paths(estimators, paths, options);
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

/// `1.36` or `1.35..1.37`: the minors of a fix, as its summary names them.
fn minors_label(estimators: &[Estimator]) -> String {
    match (estimators.first(), estimators.last()) {
        (Some(a), Some(b)) if estimators.len() > 1 => {
            format!("{}..{}", a.minor().label(), b.minor().label())
        }
        (Some(a), _) => a.minor().label(),
        _ => String::new(),
    }
}

/// The errors of a fix (unreadable input, stopped estimates, edits that could not be placed),
/// one line each.
fn fix_errors(outcome: &celcost_advice::fix::FixOutcome) -> String {
    let mut errors: String = outcome
        .input_errors
        .iter()
        .chain(&outcome.stopped)
        .map(|e| format!("error: {e}\n"))
        .collect();
    for o in &outcome.objects {
        for r in &o.refused {
            errors.push_str(&format!(
                "error: {} {}: cannot fix: {r}\n",
                o.source, o.name
            ));
        }
    }
    errors
}

/// [`run_fix`] of standard input: the fixed text on standard output.
fn run_fix_stdin(
    estimators: &[Estimator],
    paths: &[PathBuf],
    options: &celcost_advice::fix::FixOptions,
    write: bool,
    stdin: Option<StdinText>,
) -> FixRun {
    let refuse = |why: &str| FixRun {
        stderr: format!("error: {why}\n"),
        code: 2,
        ..FixRun::default()
    };
    if write {
        return refuse(
            "fix --write cannot write standard input back (`-`): without --write, `celcost fix -` prints the fixed documents on standard output",
        );
    }
    if paths.len() > 1 {
        return refuse(
            "fix: `-` (standard input, printed fixed on standard output) cannot be given with other paths",
        );
    }
    if !options.go.is_empty() {
        return refuse("fix: --go edits Go files, not standard input (`-`)");
    }
    let text = match stdin {
        Some(Ok(t)) => t,
        Some(Err(e)) => return refuse(&e),
        None => return refuse(&format!("-: standard input was not read ({STDIN})")),
    };
    let outcome = celcost_advice::fix::fix_text(estimators, STDIN, &text, options);
    let stdout = match outcome.files.first() {
        Some(f) => f.after.clone(),
        None => text.to_string(),
    };
    FixRun {
        stdout,
        stderr: outcome.summary(&minors_label(estimators)) + &fix_errors(&outcome),
        code: outcome.exit_code(),
    }
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
    /// Standard input's text, which a path `-` names ([`read_stdin_for`]); without it, `-` is
    /// an input error.
    pub stdin: Option<StdinText>,
}

impl<'a> Run<'a> {
    /// A run with the built-in schemas, no suggested bounds, and rewrites for the rules at the
    /// default near-budget threshold.
    pub fn new(minors: impl Into<Minors<'a>>) -> Self {
        Run {
            minors: minors.into(),
            catalog: SchemaCatalog::new(),
            advice: Advice::suggesting(None),
            stdin: None,
        }
    }

    /// This run with standard input's text, for a path `-`.
    pub fn reading(mut self, stdin: Option<StdinText>) -> Self {
        self.stdin = stdin;
        self
    }

    /// This run with the advice asked for.
    pub fn advising(mut self, advice: Advice) -> Self {
        self.advice = advice;
        self
    }

    /// This run with suggested bounds as `celcost estimate` makes them ([`Advice::suggesting`]).
    pub fn suggesting(self, suggest: Option<&celcost_advice::suggest::Settings>) -> Self {
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
                    celcost_core::estimate::versions::combine_keeping(reports)
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
/// upstream's, [`celcost_core::cel::minor::Minor::stand_in_note`]), that they do; returns the notes
/// (once each), for the caller to warn with. Range reports are the newest minor's.
pub fn note_stand_ins(
    reports: &mut [ObjectReport],
    minors: &[&celcost_core::cel::minor::Minor],
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
    /// ([`celcost_advice::suggest`]); none without settings.
    pub suggest: Option<celcost_advice::suggest::Settings>,
    /// Which rules get cheaper rewrites offered ([`celcost_advice::rewrite`]).
    pub rewrites: celcost_advice::rewrite::Scope,
}

impl Advice {
    /// Suggestions with `suggest` (none without), and rewrites for the rules at or above the
    /// same near-budget threshold (the default one without settings): `celcost estimate`'s
    /// defaults.
    pub fn suggesting(suggest: Option<&celcost_advice::suggest::Settings>) -> Advice {
        let percent = suggest.map_or(celcost_core::report::DEFAULT_NEAR_BUDGET_PERCENT, |s| {
            s.near_budget_percent
        });
        Advice {
            suggest: suggest.cloned(),
            rewrites: celcost_advice::rewrite::Scope::NearBudget(percent),
        }
    }
}

impl Run<'_> {
    /// Estimates every object in the given files and directories, files in parallel (one worker
    /// per core, `CELCOST_THREADS` to override); reports keep the order of the files. Policies
    /// get typed estimates from the CRDs found in the input (and the run's catalog). With a
    /// range, each object is estimated with every minor, each file read once: the reports are
    /// the newest minor's, with the verdicts and changes of all of them
    /// ([`celcost_core::report::versions`]).
    pub fn paths(&self, paths: &[PathBuf]) -> Outcome {
        let mut outcome = Outcome::default();
        let files = self.inputs(paths, &mut outcome);
        let threads = threads();
        // First pass: CRDs are estimated (they do not depend on other objects), policies kept.
        // The biggest files first, so that no worker is left with a big one at the end; the
        // results in the input's order.
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_by_cached_key(|i| std::cmp::Reverse(self.size(&files[*i])));
        let mut first: Vec<(usize, FirstPass)> =
            parallel(&order, threads, |&i| (i, self.first_pass_input(&files[i])));
        first.sort_by_key(|(i, _)| *i);
        let first: Vec<FirstPass> = first.into_iter().map(|(_, f)| f).collect();
        // The CRDs the policies match or take as params, read again from their files (so that the
        // first pass need not keep every CRD of a large input in memory).
        let mut catalog = self.catalog.clone();
        let needed = needed_crds(&first);
        for (file, sources) in &needed {
            if let Ok(text) = self.text_of(&files[*file]) {
                add_crds(&mut catalog, &files[*file].name(), &text, sources);
            }
        }
        self.second_pass(first, &catalog, outcome)
    }

    /// The inputs `paths` name: files (directories searched), and standard input for `-`.
    fn inputs(&self, paths: &[PathBuf], outcome: &mut Outcome) -> Vec<Input> {
        let mut inputs = Vec::new();
        for p in paths {
            if !is_stdin(p) {
                let mut files = Vec::new();
                celcost_core::input::collect_files(p, &mut files, &mut outcome.input_errors);
                inputs.extend(files.into_iter().map(Input::File));
                continue;
            }
            match &self.stdin {
                Some(Ok(text)) => {
                    outcome.stdin = Some(text.clone());
                    inputs.push(Input::Stdin);
                }
                Some(Err(e)) => outcome.input_errors.push(e.clone()),
                None => outcome
                    .input_errors
                    .push(format!("-: standard input was not read ({STDIN})")),
            }
        }
        inputs
    }

    /// An input's bytes, to order the work (the biggest first).
    fn size(&self, input: &Input) -> u64 {
        match (input, &self.stdin) {
            (Input::File(f), _) => std::fs::metadata(f).map_or(0, |m| m.len()),
            (Input::Stdin, Some(Ok(t))) => t.len() as u64,
            (Input::Stdin, _) => 0,
        }
    }

    /// An input's text, or why it cannot be read (naming it).
    fn text_of(&self, input: &Input) -> Result<std::borrow::Cow<'_, str>, String> {
        match input {
            Input::Stdin => match &self.stdin {
                Some(Ok(t)) => Ok(std::borrow::Cow::Borrowed(&**t)),
                Some(Err(e)) => Err(e.clone()),
                None => Err(format!("{STDIN}: standard input was not read")),
            },
            Input::File(f) => {
                let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
                String::from_utf8(bytes)
                    .map(std::borrow::Cow::Owned)
                    .map_err(|_| format!("{}: not UTF-8 text (binary file?)", f.display()))
            }
        }
    }

    fn first_pass_input(&self, input: &Input) -> FirstPass {
        let mut out = FirstPass::default();
        match self.text_of(input) {
            Ok(text) => first_pass_text(self.minors, &input.name(), &text, &mut out, &self.advice),
            Err(e) => out.input_errors.push(e),
        }
        out
    }

    /// The second pass of a run: the policies of `first`, typed over `catalog`, in parallel;
    /// then every report in the order of the input.
    fn second_pass(
        &self,
        first: Vec<FirstPass>,
        catalog: &SchemaCatalog,
        mut outcome: Outcome,
    ) -> Outcome {
        let estimators = self.minors;
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
        let mut estimated = parallel(&policies, threads(), |(source, value, located)| {
            estimators.estimate_policy(value, source, *located, catalog)
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
    // Matched as `celcost_core::diff::diff` matches them.
    let base: std::collections::HashMap<(String, String, usize), &str> =
        celcost_core::diff::match_keys(&before.reports)
            .into_iter()
            .zip(&before.reports)
            .filter(|(_, r)| r.kind == crd)
            .map(|(k, r)| (k, r.source.as_str()))
            .collect();
    // (base file, head file) → (report index, base source).
    let mut pairs: BTreeMap<(String, String), Vec<(usize, String)>> = BTreeMap::new();
    let keys = celcost_core::diff::match_keys(&after.reports);
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
    let (reports, after_stdin) = (&after.reports, &after.stdin);
    let verdicts = parallel(&groups, threads(), |((bf, hf), members)| {
        let wanted_base: std::collections::HashSet<&str> =
            members.iter().map(|(_, s)| s.as_str()).collect();
        let wanted_head: std::collections::HashSet<&str> = members
            .iter()
            .map(|(i, _)| reports[*i].source.as_str())
            .collect();
        let old = objects_by_source(bf, before.stdin.as_deref(), &wanted_base);
        let new = objects_by_source(hf, after_stdin.as_deref(), &wanted_head);
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

/// The objects of `file` (standard input's `stdin` for [`STDIN`]) whose sources
/// (`<file>#<document>`, `…[<item>]` in a list) are wanted.
fn objects_by_source(
    file: &str,
    stdin: Option<&str>,
    wanted: &std::collections::HashSet<&str>,
) -> std::collections::HashMap<String, serde_json::Value> {
    let mut out = std::collections::HashMap::new();
    let text = match (file, stdin) {
        (STDIN, Some(t)) => std::borrow::Cow::Borrowed(t),
        _ => match std::fs::read_to_string(file) {
            Ok(t) => std::borrow::Cow::Owned(t),
            Err(_) => return out,
        },
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

/// The resources and param kinds the policies of a run name: the CRDs that define one type
/// a policy, the others need not be kept.
#[derive(Default)]
struct Wanted {
    resources: std::collections::BTreeSet<GroupVersionResource>,
    kinds: std::collections::BTreeSet<(String, String)>,
}

impl Wanted {
    fn of<'v>(policies: impl IntoIterator<Item = &'v serde_json::Value>) -> Wanted {
        let mut w = Wanted::default();
        for value in policies {
            let spec = value.get("spec").unwrap_or(&serde_json::Value::Null);
            w.resources
                .extend(celcost_core::vap::matched_resources(spec).0);
            w.kinds.extend(celcost_core::vap::param_kind(spec));
        }
        w
    }

    /// Whether a CRD that defines these resources and kinds types a policy.
    fn wants(&self, defines: &[(GroupVersionResource, String)]) -> bool {
        defines.iter().any(|(gvr, kind)| {
            self.resources.contains(gvr) || self.kinds.contains(&(gvr.api_version(), kind.clone()))
        })
    }
}

/// The CRDs (file index → sources) that define a resource or kind a policy of the input names.
fn needed_crds(first: &[FirstPass]) -> std::collections::BTreeMap<usize, Vec<String>> {
    let wanted = Wanted::of(first.iter().flat_map(|f| &f.slots).filter_map(|s| match s {
        Slot::Policy { value, .. } => Some(value),
        Slot::Done(_) => None,
    }));
    let mut needed: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
    for (i, f) in first.iter().enumerate() {
        for (source, defines) in &f.crds {
            if wanted.wants(defines) {
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

/// One input of a run: a file, or standard input ([`Run::stdin`]).
enum Input {
    File(PathBuf),
    Stdin,
}

impl Input {
    /// How sources and locations name it.
    fn name(&self) -> String {
        match self {
            Input::File(f) => f.display().to_string(),
            Input::Stdin => STDIN.to_string(),
        }
    }
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
        let v = match doc.value {
            Err(e) => {
                out.input_errors.push(format!("{source}: {e}"));
                continue;
            }
            Ok(serde_json::Value::Null) => continue,
            Ok(v) if !v.is_object() => {
                let what = json_kind(&v);
                out.skipped
                    .push(format!("{source}: not a Kubernetes object (a {what})"));
                continue;
            }
            Ok(v) => v,
        };
        for o in objects_of(&source, v) {
            let located = positions
                .clone()
                .and_then(|p| ObjectSource::of(name, p, &source, &o.source));
            first_pass_object(estimators, o.source, o.value, located, advice, out);
        }
    }
}

/// One object in the first pass: a CRD estimated (with the run's advice, located where it
/// is), a policy kept for the second pass, another kind skipped.
fn first_pass_object(
    estimators: Minors<'_>,
    source: String,
    value: serde_json::Value,
    located: Option<ObjectSource>,
    advice: &Advice,
    out: &mut FirstPass,
) {
    match TargetKind::of(&value) {
        Some(TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy) => {
            out.slots.push(Slot::Policy {
                source,
                value,
                located,
            })
        }
        Some(TargetKind::CustomResourceDefinition) => {
            let defines = SchemaCatalog::crd_resources(&value);
            if !defines.is_empty() {
                out.crds.push((source.clone(), defines));
            }
            let mut report = crd_report(estimators, &value, &source, advice);
            if let Some(l) = &located {
                l.attach(&mut report);
            }
            out.slots.push(Slot::Done(Box::new(report)));
        }
        None => {
            let field = |k: &str, none: &'static str| {
                value
                    .get(k)
                    .and_then(|k| k.as_str())
                    .unwrap_or(none)
                    .to_string()
            };
            let (kind, api) = (
                field("kind", "(no kind)"),
                field("apiVersion", "(no apiVersion)"),
            );
            out.skipped.push(format!(
                "{source}: skipped {api} {kind}: not a CRD, ValidatingAdmissionPolicy or MutatingAdmissionPolicy"
            ));
        }
    }
}

/// The suggestion search's test of whether a minor of `range` estimates a copy of one object
/// with bounds set as known minors do ([`celcost_advice::suggest::Alike`]), the object's
/// profile made once for all its copies, in `profile`.
fn alike_copies<'a>(
    range: &'a RangeEstimator,
    profile: &'a std::sync::OnceLock<celcost_core::estimate::range::ObjectProfile>,
) -> Box<celcost_advice::suggest::AlikeTest<'a>> {
    Box::new(move |known, b, object, bounded| {
        let catalog = SchemaCatalog::builtin();
        let profile = profile.get_or_init(|| range.profile(object, catalog));
        range.estimate_alike_bounded(known, b, object, profile, bounded, catalog)
    })
}

/// A CRD's report: estimated with every minor of the run, with the run's advice found by the
/// newest minor's estimator (over a range, bounds that fit every minor of it).
fn crd_report(
    estimators: Minors<'_>,
    value: &serde_json::Value,
    source: &str,
    advice: &Advice,
) -> ObjectReport {
    let (mut report, older) = estimators
        .estimate_keeping_older(value, SchemaCatalog::builtin(), |e, shared| {
            Some(e.estimate_crd_shared(shared, source))
        })
        .unwrap_or_default();
    let Some(e) = estimators.newest() else {
        return report;
    };
    if let Some(settings) = &advice.suggest {
        let others: Vec<(&Estimator, &ObjectReport)> = match estimators {
            Minors::Range(r) => r.estimators().iter().zip(older.iter()).collect(),
            Minors::One(_) => Vec::new(),
        };
        let profile = std::sync::OnceLock::new();
        let alike = match estimators {
            Minors::Range(r) => Some(alike_copies(r, &profile)),
            Minors::One(_) => None,
        };
        report = celcost_advice::suggest::suggest_across_with(
            e,
            &others,
            alike
                .as_ref()
                .map(|a| a as celcost_advice::suggest::Alike<'_>),
            value,
            report,
            settings,
        );
    }
    celcost_advice::rewrite::offer_rewrites_in(e, value, &mut report, advice.rewrites);
    report
}

/// Objects as an API server stores them (`celcost estimate --cluster`, [`cluster`]), fed
/// to a run in pages: the policies first (few), then the CRDs page by page, each estimated as
/// it comes (in parallel) and dropped but for those that type a policy; the policies last,
/// typed by them. Every CRD also gets, in `update`, the newest minor's verdict on an update
/// that keeps it as stored (what the next `kubectl apply` or `helm upgrade` of the same
/// manifest meets there: `celcost diff`'s rules for a stored object).
pub struct Stored<'r, 'a> {
    run: &'r Run<'a>,
    first: FirstPass,
    policies: Vec<(String, serde_json::Value)>,
    wanted: Wanted,
    catalog: SchemaCatalog,
}

impl<'a> Run<'a> {
    /// A run over stored objects, starting with its policies (`source`, object).
    pub fn stored<'r>(&'r self, policies: Vec<(String, serde_json::Value)>) -> Stored<'r, 'a> {
        Stored {
            run: self,
            first: FirstPass::default(),
            wanted: Wanted::of(policies.iter().map(|(_, v)| v)),
            policies,
            catalog: self.catalog.clone(),
        }
    }
}

impl Stored<'_, '_> {
    /// A page of stored CRDs (`source`, object), estimated.
    pub fn crds(&mut self, page: Vec<(String, serde_json::Value)>) {
        let (run, wanted) = (self.run, &self.wanted);
        let reports = parallel(&page, threads(), |(source, value)| {
            let mut report = crd_report(run.minors, value, source, &run.advice);
            if let (None, Some(e)) = (&report.stopped, run.minors.newest()) {
                report.update = e.update_verdict(value, value, &report, source);
            }
            let typing = wanted.wants(&SchemaCatalog::crd_resources(value));
            (report, typing)
        });
        for ((_, value), (report, typing)) in page.into_iter().zip(reports) {
            if typing {
                self.catalog.add_crd(value);
            }
            self.first.slots.push(Slot::Done(Box::new(report)));
        }
    }

    /// The run's outcome: the CRDs' reports in the order they came, then the policies'.
    pub fn finish(mut self) -> Outcome {
        for (source, value) in self.policies {
            self.first.slots.push(Slot::Policy {
                source,
                value,
                located: None,
            });
        }
        self.run
            .second_pass(vec![self.first], &self.catalog, Outcome::default())
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
        celcost_core::estimate::versions::combine(reports)
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
    fn outputs_name_a_format_and_maybe_a_file() {
        let spec = |s: &str| parse_output(s).unwrap();
        assert_eq!(spec("json").format, OutputFormat::Json);
        assert_eq!(spec("JUnit=a=b.xml").file, Some(PathBuf::from("a=b.xml")));
        assert_eq!(spec("sarif=-").file, None);
        assert!(
            parse_output("yaml")
                .unwrap_err()
                .contains("table, json, markdown, sarif, github, junit")
        );
        assert!(parse_output("json=").is_err());
        assert_eq!(check_outputs(vec![]).unwrap(), vec![spec("table")]);
        assert!(check_outputs(vec![spec("json"), spec("table")]).is_err());
        assert!(check_outputs(vec![spec("json=a"), spec("sarif=a")]).is_err());
        assert!(check_outputs(vec![spec("json=a"), spec("sarif=b"), spec("table")]).is_ok());
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
