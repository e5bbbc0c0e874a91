//! `celcost`: the Kubernetes API server's CEL cost estimates, offline (`estimate`) and in a
//! cluster (`controller`). One `cmd_*` function per subcommand: each renders into a writer and
//! returns its exit status, or the error that ends it (exit status 2), a failed write included.
//! Installed as `kubectl-celcost`, it is a kubectl plugin: `kubectl celcost estimate …`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use celcost::Estimator;
use celcost::budget::{CountingAllocator, Limits};
use celcost::cel::decls::Version;
use celcost::cel::minor::{Distribution, Minor};
use celcost::cli::cluster::Cluster;
use celcost::cli::{Advice, OutputFormat, OutputSpec, Rendering, Run};
use celcost::controller::ControllerArgs;
use celcost::estimate::range::RangeEstimator;
use celcost::rewrite::Rewrites;

/// Counts the bytes each estimate holds, so that one object cannot take the process's memory
/// (`celcost::budget`).
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[derive(Parser, Debug)]
#[command(
    name = "celcost",
    version,
    about = "The Kubernetes API server's CEL cost estimates for CRD rules and admission policies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Estimate the CEL cost of every CRD, ValidatingAdmissionPolicy and
    /// MutatingAdmissionPolicy in files or directories (`-`: standard input), or in a cluster
    /// (--cluster).
    ///
    /// Exit status: 0 when every object would be accepted, 1 when one would be rejected, 2 on
    /// unreadable input, an object whose estimate stopped (over its work budget), an output that
    /// could not be written, or bad usage.
    Estimate(Box<EstimateArgs>),
    /// Compare the estimates of two versions of the same manifests (files or directories; `-`
    /// for standard input on either side): per object and rule, the cost before and after,
    /// added and removed rules, and verdict changes; for a CRD in both, beside HEAD's verdict on
    /// create, the API server's verdict on an update of BASE's object (as the cluster stores
    /// it) to HEAD's.
    ///
    /// Exit status: what the API server answers when HEAD is applied to a cluster that stores
    /// BASE: 0 when it accepts every object (an update of what BASE has, a create of the rest),
    /// 1 when it refuses one, 2 on unreadable input, an estimate that stopped, or bad usage.
    /// (`celcost estimate HEAD` gives HEAD's verdict on create alone.)
    Diff(DiffArgs),
    /// Write the suggested bounds where the author keeps them: in the CRDs' YAML, or (with
    /// --go) as kubebuilder markers in the Go types they are generated from.
    ///
    /// For every CRD rule and schema total over its limit or at the near-budget threshold on
    /// any minor of --kubernetes-version, the bounds `estimate` suggests are added or lowered
    /// (never raised). Prints a unified diff on standard output and, on standard error, each
    /// object's bounds and its costs before and after (the edited text read back and estimated
    /// again); --write writes the files instead and prints the same on standard output. `-`
    /// reads standard input and prints it fixed on standard output (not with --write).
    ///
    /// Exit status, as estimate's, of the objects as fixed: 0 when every one would be accepted,
    /// 1 when one would still be rejected, 2 on unreadable input, an estimate that stopped, or
    /// an edit that could not be placed (each named with why).
    Fix(FixArgs),
    /// How far each bound of a CRD can be raised: for every list, map and string node whose
    /// size a rule's or a total's cost depends on, the largest maxItems / maxProperties /
    /// maxLength (every other bound as it is) at which every minor judged still accepts the CRD
    /// (or, with --near-budget-percent, keeps it under that share of the limits), and the rule
    /// or total that refuses one more; `any` where nothing does.
    ///
    /// Exit status: 0, or 2 on unreadable input, an estimate or search that stopped (over its
    /// work budget), an output that could not be written, or bad usage.
    Headroom(HeadroomArgs),
    /// Run the operator: watch CRDs, ValidatingAdmissionPolicies and MutatingAdmissionPolicies
    /// and write CostReports.
    Controller(Box<ControllerArgs>),
    /// Print the CostReport CustomResourceDefinition as YAML.
    Crd,
}

#[derive(clap::Args, Debug)]
struct EstimateArgs {
    /// Output format, and where it goes: FORMAT (standard output) or FORMAT=FILE. Repeat for
    /// several outputs of one run (`-o table -o sarif=celcost.sarif -o junit=celcost.xml`), each
    /// what a run with that one output prints; one at most on standard output. FORMAT: table
    /// (the default), json, markdown, sarif, github, junit, openreports.
    #[arg(long, short, value_name = "FORMAT[=FILE]", value_parser = celcost::cli::parse_output)]
    output: Vec<OutputSpec>,
    #[command(flatten)]
    minors: MinorArgs,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Exit with status 1 when any rule or total reaches this percentage of its limit
    /// (policies: an expression of the per-call limit, an evaluation of its runtime budget,
    /// as the table judges them), not only when the API server would reject an object.
    #[arg(long, value_name = "PERCENT", value_parser = celcost::cli::parse_percent)]
    fail_at: Option<f64>,
    /// The near-budget threshold, in percent of the limit: rules, totals and policy
    /// expressions at or above it are warnings in the sarif, github and junit outputs, and CRD
    /// rules and totals at or above it (or over their limit) get suggested bounds that bring
    /// them below it.
    #[arg(long, value_name = "PERCENT", default_value_t = celcost::report::DEFAULT_NEAR_BUDGET_PERCENT,
          value_parser = celcost::cli::parse_percent)]
    near_budget_percent: f64,
    /// Which CRD rules get cheaper rewrites offered: `near` (rules at or above the
    /// near-budget threshold or over their limit, and every rule of a schema whose total is),
    /// `all` (every rule; the search costs more than the estimate) or `off`.
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = Rewrites::Near)]
    rewrites: Rewrites,
    /// Read the objects of the cluster of the kubeconfig (or, in a pod, its service account)
    /// instead of files: every CRD, ValidatingAdmissionPolicy and MutatingAdmissionPolicy it
    /// stores, judged by its own minor and the next (unless --kubernetes-version says other
    /// minors), each CRD with the verdict on an update that keeps it as stored. Read-only: it
    /// needs list on the three resources.
    #[arg(long, conflicts_with = "paths")]
    cluster: bool,
    /// With --cluster: the kubeconfig context to use instead of the current one.
    #[arg(long, value_name = "NAME", requires = "cluster")]
    context: Option<String>,
    /// Files or directories (searched recursively for .yaml, .yml and .json); `-` reads
    /// standard input.
    #[arg(required_unless_present = "cluster")]
    paths: Vec<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct DiffArgs {
    /// Output format (markdown: a pull-request comment; sarif, github, junit and openreports:
    /// HEAD's findings).
    #[arg(long, short, value_enum, default_value = "table")]
    output: OutputFormat,
    #[command(flatten)]
    minors: MinorArgs,
    /// The manifests before the change (`-`: standard input).
    base: PathBuf,
    /// The manifests after the change (`-`: standard input).
    head: PathBuf,
}

#[derive(clap::Args, Debug)]
struct FixArgs {
    /// A directory of Go API packages (searched recursively; repeat for more): CRDs whose
    /// group and kind are a root type there are fixed in the Go types.
    #[arg(long = "go", value_name = "DIR")]
    go: Vec<PathBuf>,
    /// Write the edits to the files instead of printing a diff.
    #[arg(long)]
    write: bool,
    #[command(flatten)]
    minors: MinorArgs,
    #[command(flatten)]
    budget: BudgetArgs,
    /// The near-budget threshold, in percent of the limit: rules and totals at or above it
    /// (or over the limit) are fixed, and the bounds bring them below it.
    #[arg(long, value_name = "PERCENT", default_value_t = celcost::report::DEFAULT_NEAR_BUDGET_PERCENT,
          value_parser = celcost::cli::parse_percent)]
    near_budget_percent: f64,
    /// CRD files or directories (searched recursively for .yaml, .yml and .json); `-` reads
    /// standard input and prints it fixed.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct HeadroomArgs {
    /// Output format: table, json (one object per line) or markdown.
    #[arg(long, short, value_enum, default_value = "table")]
    output: celcost::cli::headroom::HeadroomFormat,
    #[command(flatten)]
    minors: MinorArgs,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Stay below this percentage of the limits, not only within them.
    #[arg(long, value_name = "PERCENT", value_parser = celcost::cli::parse_percent)]
    near_budget_percent: Option<f64>,
    /// Only the node of this field path (as the estimate's nodeFieldPath names it:
    /// `spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.tags`).
    #[arg(long, value_name = "PATH")]
    field: Option<String>,
    /// Files or directories (searched recursively for .yaml, .yml and .json); `-` reads
    /// standard input.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// The Kubernetes builds a command judges by (`estimate`, `diff` and `fix`).
#[derive(clap::Args, Debug)]
struct MinorArgs {
    /// Kubernetes minor whose API server to follow: `1.N` (1.28 to 1.37), a range `1.30..1.37`,
    /// `all`, or a version constraint as Helm's kubeVersion writes it (`">= 1.29.0-0"`,
    /// `">=1.30 <1.37"`, `"~1.33"`, `^`, `||`; clipped to the minors celcost knows, said on
    /// standard error) (every minor of the range; the exit status follows the worst). Default:
    /// the minors upstream supports (the newest three celcost knows, 1.35..1.37), or a Helm
    /// chart's kubeVersion: a CRD that one of the minors clusters run refuses fails. With
    /// --cluster: the cluster's minor and the next.
    #[arg(long, value_parser = parse_versions)]
    kubernetes_version: Option<Versions>,
    /// Whose build of that minor: `kubernetes` (upstream) or `openshift` (OpenShift and
    /// MicroShift, which carry some CEL changes a minor early).
    #[arg(long, default_value = "kubernetes", value_parser = Distribution::parse)]
    distribution: Distribution,
}

impl MinorArgs {
    /// The minors asked for (or `default`), oldest first.
    fn minors_or(&self, default: impl FnOnce() -> Vec<Version>) -> Vec<&'static Minor> {
        let versions = match &self.kubernetes_version {
            Some(v) => {
                if let Some(note) = &v.1 {
                    eprintln!("celcost: {note}");
                }
                v.0.clone()
            }
            None => default(),
        };
        versions
            .iter()
            .filter_map(|v| Minor::of_distribution(*v, self.distribution))
            .collect()
    }

    /// The minors asked for (or the default window: those upstream supports), oldest first.
    fn minors(&self) -> Vec<&'static Minor> {
        self.minors_or(|| celcost::cel::minor::supported_window(self.distribution))
    }
}

/// The work budgets of each object's estimate (`estimate` and `fix`).
#[derive(clap::Args, Debug)]
struct BudgetArgs {
    /// Work budget per object, in steps: an object that needs more is reported as not
    /// estimated (exit status 2) and the others are estimated as usual.
    #[arg(long, default_value_t = celcost::budget::DEFAULT_STEPS)]
    max_steps: u64,
    /// Memory budget per object's estimate, in MiB.
    #[arg(long, default_value_t = (celcost::budget::DEFAULT_BYTES >> 20) as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    max_memory_mib: u64,
}

impl BudgetArgs {
    fn limits(&self) -> Limits {
        Limits {
            steps: self.max_steps,
            bytes: usize::try_from(self.max_memory_mib << 20).unwrap_or(usize::MAX),
        }
    }
}

/// The minors of `--kubernetes-version`, oldest first, and what to tell where a constraint was
/// clipped to the minors celcost knows.
#[derive(Clone, Debug)]
struct Versions(Vec<Version>, Option<String>);

fn parse_versions(s: &str) -> Result<Versions, String> {
    celcost::cel::minor::parse_range_or_constraint(s).map(|(v, note)| Versions(v, note))
}

/// The paths to read, a Helm chart (a folder with `Chart.yaml`) read as its `crds/`, and the
/// minors its `kubeVersion` admits (of every chart's, the minors all admit), told on standard
/// error; not read with `kube_version` false (`--kubernetes-version` given).
fn chart_paths(
    paths: &[PathBuf],
    kube_version: bool,
) -> Result<(Vec<PathBuf>, Option<Vec<Version>>), Failure> {
    let mut out = Vec::new();
    let mut admitted: Option<Vec<Version>> = None;
    for p in paths {
        let chart = p.join("Chart.yaml");
        if !(p.is_dir() && chart.is_file()) {
            out.push(p.clone());
            continue;
        }
        let crds = p.join("crds");
        eprintln!(
            "celcost: {} is a Helm chart: reading its crds/ only; its templates are not rendered \
             (pipe `helm template` output to `celcost estimate -` for those)",
            p.display()
        );
        if crds.is_dir() {
            out.push(crds);
        } else {
            eprintln!("celcost: {} has no crds/ folder", p.display());
        }
        if !kube_version {
            continue;
        }
        let text = std::fs::read_to_string(&chart)
            .map_err(|e| Failure::Usage(format!("{}: {e}", chart.display())))?;
        let kube_version = celcost::input::parse_documents(&text)
            .into_iter()
            .find_map(|d| d.value.ok())
            .and_then(|v| v.get("kubeVersion")?.as_str().map(str::to_string));
        let Some(kv) = kube_version.filter(|k| !k.trim().is_empty()) else {
            continue;
        };
        let (minors, note) = celcost::cel::minor::parse_range_or_constraint(&kv)
            .map_err(|e| Failure::Usage(format!("{}: kubeVersion: {e}", chart.display())))?;
        if let Some(note) = note {
            eprintln!("celcost: {}: {note}", chart.display());
        }
        admitted = Some(match admitted {
            None => minors,
            Some(a) => a.into_iter().filter(|v| minors.contains(v)).collect(),
        });
    }
    if let Some(a) = &admitted {
        if a.is_empty() {
            return Err(Failure::Usage(
                "the charts' kubeVersions admit no Kubernetes minor in common".into(),
            ));
        }
        let shown: Vec<String> = a.iter().map(Version::to_string).collect();
        eprintln!(
            "celcost: judged by the chart's kubeVersion: Kubernetes {}",
            shown.join(", ")
        );
    }
    if out.is_empty() {
        return Err(Failure::Usage(
            "nothing to read: no crds/ in the charts".into(),
        ));
    }
    Ok((out, admitted))
}

/// What ends a command before its verdict: told on standard error, exit status 2.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// Bad usage, or an input that cannot be read at all.
    #[error("{0}")]
    Usage(String),
    /// A write to standard output or an output file that failed.
    #[error("{to}: cannot write: {source}")]
    Write { to: String, source: io::Error },
}

type Outcome = Result<ExitCode, Failure>;

const STDOUT: &str = "standard output";

/// Writes `text` and flushes. A closed pipe (`celcost … | head`) is the reader's choice, not an
/// error: the rest is dropped quietly, as before.
fn emit(out: &mut impl Write, to: &str, text: &str) -> Result<(), Failure> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Failure::Write {
            to: to.to_string(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// An exit status of the verdicts (0, 1 or 2).
fn status(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}

fn main() -> ExitCode {
    // Before any thread starts (the operator's settings replace these).
    celcost::budget::keep_resident_memory_near_the_heap();
    let cli = match Cli::try_parse_from(plugin_args(std::env::args_os())) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let mut stdout = io::stdout().lock();
    let outcome = match cli.command {
        Command::Estimate(args) => cmd_estimate(*args, &mut stdout),
        Command::Diff(args) => cmd_diff(args, &mut stdout),
        Command::Fix(args) => cmd_fix(args, &mut stdout),
        Command::Headroom(args) => cmd_headroom(args, &mut stdout),
        Command::Controller(args) => cmd_controller(*args),
        Command::Crd => cmd_crd(&mut stdout),
    };
    outcome.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

/// The arguments as clap reads them: run as `kubectl-celcost` (krew's name of a kubectl
/// plugin, which kubectl runs for `kubectl celcost …`), the program is named `kubectl celcost`
/// in help and errors.
fn plugin_args(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = args.collect();
    let invoked = args.first().map(Path::new).and_then(Path::file_stem);
    if invoked.is_some_and(|n| n == "kubectl-celcost")
        && let Some(first) = args.first_mut()
    {
        *first = "kubectl celcost".into();
    }
    args
}

/// `celcost estimate`: one estimate of files, standard input or a cluster, rendered in every
/// format asked for.
fn cmd_estimate(args: EstimateArgs, out: &mut impl Write) -> Outcome {
    let outputs = celcost::cli::check_outputs(args.output).map_err(Failure::Usage)?;
    let limits = args.budget.limits();
    let advice = Advice {
        suggest: Some(celcost::suggest::Settings::new(args.near_budget_percent)),
        rewrites: celcost::rewrite::Scope::of(args.rewrites, args.near_budget_percent),
    };
    let (minors, mut outcome) = if args.cluster {
        estimate_cluster(&args.minors, args.context.as_deref(), limits, advice)?
    } else {
        let stdin = celcost::cli::read_stdin_for(&args.paths).map_err(Failure::Usage)?;
        let (paths, chart_minors) =
            chart_paths(&args.paths, args.minors.kubernetes_version.is_none())?;
        let minors = match chart_minors {
            Some(v) => args.minors.minors_or(|| v),
            None => args.minors.minors(),
        };
        let outcome = with_estimators(&minors, limits, |m| {
            Run::new(m)
                .advising(advice.clone())
                .reading(stdin.clone())
                .paths(&paths)
        });
        (minors, outcome)
    };
    warn_about(&mut outcome, &minors);
    let rendering = Rendering {
        reports: &outcome.reports,
        input_errors: &outcome.input_errors,
        near_budget_percent: args.near_budget_percent,
        fail_at: args.fail_at,
    };
    let written = write_outputs(&outputs, &rendering, out);
    let code = outcome.exit_code_failing_at(args.fail_at);
    if code == 1
        && outcome.exit_code() == 0
        && let Some(p) = args.fail_at
    {
        eprintln!(
            "celcost: a rule, total or policy expression reaches {p}% of its limit (--fail-at)"
        );
    }
    written.map(|()| status(code))
}

/// A run over the estimators of `minors` (one, or a range).
fn with_estimators(
    minors: &[&'static Minor],
    limits: Limits,
    run: impl FnOnce(celcost::cli::Minors<'_>) -> celcost::cli::Outcome,
) -> celcost::cli::Outcome {
    let estimators: Vec<Estimator> = minors
        .iter()
        .map(|m| Estimator::for_minor(m).with_limits(limits))
        .collect();
    if estimators.len() == 1 {
        run(celcost::cli::Minors::One(&estimators[0]))
    } else {
        let range = RangeEstimator::new(estimators);
        run(celcost::cli::Minors::Range(&range))
    }
}

/// `estimate --cluster`: the cluster's objects, judged by its minor and the next (or the
/// minors asked for).
fn estimate_cluster(
    minor_args: &MinorArgs,
    context: Option<&str>,
    limits: Limits,
    advice: Advice,
) -> Result<(Vec<&'static Minor>, celcost::cli::Outcome), Failure> {
    let cluster = Cluster::connect(context).map_err(Failure::Usage)?;
    let mut notes = Vec::new();
    let minors = minor_args.minors_or(|| match cluster.minor {
        Some(v) => {
            let (minors, n) = celcost::cli::cluster::minors_for(v, minor_args.distribution);
            notes = n;
            minors
        }
        None => {
            notes.push(format!(
                "the API server's version {} names no minor: judged by the default window",
                cluster.git_version
            ));
            celcost::cel::minor::supported_window(minor_args.distribution)
        }
    });
    for n in notes {
        eprintln!("warning: {n}");
    }
    let outcome = with_estimators(&minors, limits, |m| {
        cluster.estimate(&Run::new(m).advising(advice))
    });
    Ok((minors, outcome))
}

/// What a run tells on standard error besides its outputs: stand-in rules, skipped objects,
/// unreadable input, stopped estimates.
fn warn_about(outcome: &mut celcost::cli::Outcome, minors: &[&Minor]) {
    for note in celcost::cli::note_stand_ins(&mut outcome.reports, minors) {
        eprintln!("warning: {note}");
    }
    for s in &outcome.skipped {
        eprintln!("{s}");
    }
    for e in &outcome.input_errors {
        eprintln!("error: {e}");
    }
    for r in &outcome.reports {
        if let Some(st) = &r.stopped {
            eprintln!("error: {}: {} {}: {}", r.source, r.kind, r.name, st.message);
        }
    }
}

/// Every output of a run: the files first, then standard output. A write that fails is told
/// at once and the others are still written; the first failure is the command's.
fn write_outputs(
    outputs: &[OutputSpec],
    rendering: &Rendering<'_>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let mut first: Option<Failure> = None;
    for o in outputs {
        let text = o.format.render(rendering);
        let written = match &o.file {
            Some(path) => write_file(path, &text),
            None => emit(out, STDOUT, &text),
        };
        if let Err(e) = written {
            if first.is_some() {
                eprintln!("error: {e}");
            } else {
                first = Some(e);
            }
        }
    }
    first.map_or(Ok(()), Err)
}

fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    let to = path.display().to_string();
    let mut file = std::fs::File::create(path).map_err(|source| Failure::Write {
        to: to.clone(),
        source,
    })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|source| Failure::Write { to, source })
}

/// `celcost diff BASE HEAD`.
fn cmd_diff(args: DiffArgs, out: &mut impl Write) -> Outcome {
    let minors = args.minors.minors();
    if minors.is_empty() {
        return Ok(ExitCode::from(2));
    }
    if celcost::cli::is_stdin(&args.base) && celcost::cli::is_stdin(&args.head) {
        return Err(Failure::Usage(
            "diff: BASE and HEAD cannot both be `-` (standard input is read once)".into(),
        ));
    }
    let stdin = celcost::cli::read_stdin_for(&[&args.base, &args.head]).map_err(Failure::Usage)?;
    for note in minors.iter().filter_map(|m| m.stand_in_note()) {
        eprintln!("warning: {note}");
    }
    let estimators: Vec<Estimator> = minors.iter().map(|m| Estimator::for_minor(m)).collect();
    let run = celcost::cli::run_diff(&estimators, &args.base, &args.head, args.output, stdin);
    for e in &run.input_errors {
        eprintln!("error: {e}");
    }
    emit(out, STDOUT, &run.text)?;
    Ok(status(run.code))
}

/// `celcost fix`.
fn cmd_fix(args: FixArgs, out: &mut impl Write) -> Outcome {
    let limits = args.budget.limits();
    let estimators: Vec<Estimator> = args
        .minors
        .minors()
        .into_iter()
        .map(|m| Estimator::for_minor(m).with_limits(limits))
        .collect();
    let stdin = match args.write {
        // Refused by `run_fix` before anything is read.
        true => None,
        false => celcost::cli::read_stdin_for(&args.paths).map_err(Failure::Usage)?,
    };
    let options = celcost::fix::FixOptions {
        settings: celcost::suggest::Settings::new(args.near_budget_percent),
        go: args.go,
    };
    let run = celcost::cli::run_fix(&estimators, &args.paths, &options, args.write, stdin);
    let written = emit(out, STDOUT, &run.stdout);
    eprint!("{}", run.stderr);
    written.map(|()| status(run.code))
}

/// `celcost headroom`.
fn cmd_headroom(args: HeadroomArgs, out: &mut impl Write) -> Outcome {
    let limits = args.budget.limits();
    let minors = args.minors.minors();
    if minors.is_empty() {
        return Ok(ExitCode::from(2));
    }
    for note in minors.iter().filter_map(|m| m.stand_in_note()) {
        eprintln!("warning: {note}");
    }
    let estimators: Vec<Estimator> = minors
        .iter()
        .map(|m| Estimator::for_minor(m).with_limits(limits))
        .collect();
    let stdin = celcost::cli::read_stdin_for(&args.paths).map_err(Failure::Usage)?;
    let settings = celcost::suggest::HeadroomSettings {
        near_budget_percent: args.near_budget_percent,
        field: args.field,
    };
    let run = celcost::cli::headroom::run_headroom(estimators, &args.paths, stdin, &settings);
    for s in &run.skipped {
        eprintln!("{s}");
    }
    for e in &run.input_errors {
        eprintln!("error: {e}");
    }
    for o in &run.objects {
        if o.stopped
            && let Some(n) = &o.note
        {
            eprintln!("error: {}: {} {}: {n}", o.source, o.kind, o.name);
        }
    }
    if let Some(f) = &settings.field
        && run
            .objects
            .iter()
            .all(|o| o.schemas.iter().all(|s| s.bounds.is_empty()))
    {
        eprintln!(
            "warning: --field {f}: no node of that path whose bound a rule or total depends on"
        );
    }
    emit(out, STDOUT, &run.render(args.output))?;
    Ok(status(run.code))
}

/// `celcost controller`: the operator, until SIGINT/SIGTERM.
fn cmd_controller(args: ControllerArgs) -> Outcome {
    celcost::budget::return_freed_memory_promptly();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("cannot start the runtime: {e}")))?;
    match rt.block_on(celcost::controller::run(args)) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// `celcost crd`.
fn cmd_crd(out: &mut impl Write) -> Outcome {
    emit(out, STDOUT, &celcost::controller::crd_yaml())?;
    Ok(ExitCode::SUCCESS)
}
