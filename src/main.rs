//! `celcost`: the Kubernetes API server's CEL cost estimates, offline (`estimate`) and in a
//! cluster (`controller`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use celcost::Estimator;
use celcost::budget::{CountingAllocator, Limits};
use celcost::cel::decls::Version;
use celcost::cel::minor::{Distribution, Minor};
use celcost::cli::{Advice, OutputFormat, Run};
use celcost::controller::ControllerArgs;
use celcost::estimate::range::RangeEstimator;
use celcost::output::{json::render_json, markdown::render_markdown, table::render_table};
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
    /// MutatingAdmissionPolicy in files or directories.
    ///
    /// Exit status: 0 when every object would be accepted, 1 when one would be rejected, 2 on
    /// unreadable input, an object whose estimate stopped (over its work budget), or bad usage.
    Estimate {
        /// Output format.
        #[arg(long, short, value_enum, default_value = "table")]
        output: OutputFormat,
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
        /// expressions at or above it are warnings in the sarif and github outputs, and CRD rules
        /// and totals at or above it (or over their limit) get suggested bounds that bring them
        /// below it.
        #[arg(long, value_name = "PERCENT", default_value_t = celcost::report::DEFAULT_NEAR_BUDGET_PERCENT,
              value_parser = celcost::cli::parse_percent)]
        near_budget_percent: f64,
        /// Which CRD rules get cheaper rewrites offered: `near` (rules at or above the
        /// near-budget threshold or over their limit, and every rule of a schema whose total is),
        /// `all` (every rule; the search costs more than the estimate) or `off`.
        #[arg(long, value_name = "WHICH", value_enum, default_value_t = Rewrites::Near)]
        rewrites: Rewrites,
        /// Files or directories (searched recursively for .yaml, .yml and .json).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Compare the estimates of two versions of the same manifests (files or directories):
    /// per object and rule, the cost before and after, added and removed rules, and verdict
    /// changes; for a CRD in both, beside HEAD's verdict on create, the API server's verdict on
    /// an update of BASE's object (as the cluster stores it) to HEAD's.
    ///
    /// Exit status: what the API server answers when HEAD is applied to a cluster that stores
    /// BASE: 0 when it accepts every object (an update of what BASE has, a create of the rest),
    /// 1 when it refuses one, 2 on unreadable input, an estimate that stopped, or bad usage.
    /// (`celcost estimate HEAD` gives HEAD's verdict on create alone.)
    Diff {
        /// Output format (markdown: a pull-request comment).
        #[arg(long, short, value_enum, default_value = "table")]
        output: OutputFormat,
        #[command(flatten)]
        minors: MinorArgs,
        /// The manifests before the change.
        base: PathBuf,
        /// The manifests after the change.
        head: PathBuf,
    },
    /// Write the suggested bounds where the author keeps them: in the CRDs' YAML, or (with
    /// --go) as kubebuilder markers in the Go types they are generated from.
    ///
    /// For every CRD rule and schema total over its limit or at the near-budget threshold on
    /// any minor of --kubernetes-version, the bounds `estimate` suggests are added or lowered
    /// (never raised). Prints a unified diff on standard output and, on standard error, each
    /// object's bounds and its costs before and after (the edited text read back and estimated
    /// again); --write writes the files instead and prints the same on standard output.
    ///
    /// Exit status, as estimate's, of the objects as fixed: 0 when every one would be accepted,
    /// 1 when one would still be rejected, 2 on unreadable input, an estimate that stopped, or
    /// an edit that could not be placed (each named with why).
    Fix {
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
        /// CRD files or directories (searched recursively for .yaml, .yml and .json).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Run the operator: watch CRDs, ValidatingAdmissionPolicies and MutatingAdmissionPolicies
    /// and write CostReports.
    Controller(Box<ControllerArgs>),
    /// Print the CostReport CustomResourceDefinition as YAML.
    Crd,
}

/// The Kubernetes builds a command judges by (`estimate`, `diff` and `fix`).
#[derive(clap::Args, Debug)]
struct MinorArgs {
    /// Kubernetes minor whose API server to follow: `1.N` (1.30 to 1.37), a range `1.30..1.37`
    /// or `all` (every minor of the range; the exit status follows the worst). Default: the
    /// minors upstream supports (the newest three celcost knows, 1.35..1.37): a CRD that one of
    /// the minors clusters run refuses fails.
    #[arg(long, value_parser = parse_versions)]
    kubernetes_version: Option<Versions>,
    /// Whose build of that minor: `kubernetes` (upstream) or `openshift` (OpenShift and
    /// MicroShift, which carry some CEL changes a minor early).
    #[arg(long, default_value = "kubernetes", value_parser = Distribution::parse)]
    distribution: Distribution,
}

impl MinorArgs {
    /// The minors asked for (or the default window), oldest first.
    fn minors(self) -> Vec<&'static Minor> {
        versions_or_window(self.kubernetes_version, self.distribution)
            .iter()
            .filter_map(|v| Minor::of_distribution(*v, self.distribution))
            .collect()
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

/// The minors of `--kubernetes-version`, oldest first.
#[derive(Clone, Debug)]
struct Versions(Vec<Version>);

/// The minors asked for, or the default window: those upstream supports.
fn versions_or_window(v: Option<Versions>, distribution: Distribution) -> Vec<Version> {
    match v {
        Some(v) => v.0,
        None => celcost::cel::minor::supported_window(distribution),
    }
}

fn parse_versions(s: &str) -> Result<Versions, String> {
    celcost::cel::minor::parse_range(s).map(Versions)
}

fn main() -> ExitCode {
    // Before any thread starts (the operator's settings replace these).
    celcost::budget::keep_resident_memory_near_the_heap();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match cli.command {
        Command::Estimate {
            output,
            minors,
            budget,
            fail_at,
            near_budget_percent,
            rewrites,
            paths,
        } => {
            let limits = budget.limits();
            let minors = minors.minors();
            let estimators: Vec<Estimator> = minors
                .iter()
                .map(|m| Estimator::for_minor(m).with_limits(limits))
                .collect();
            let advice = Advice {
                suggest: Some(celcost::suggest::Settings::new(near_budget_percent)),
                rewrites: celcost::rewrite::Scope::of(rewrites, near_budget_percent),
            };
            let mut outcome = if estimators.len() == 1 {
                Run::new(&estimators[0]).advising(advice).paths(&paths)
            } else {
                let range = RangeEstimator::new(estimators);
                Run::new(&range).advising(advice).paths(&paths)
            };
            for note in celcost::cli::note_stand_ins(&mut outcome.reports, &minors) {
                eprintln!("warning: {note}");
            }
            for s in &outcome.skipped {
                eprintln!("{s}");
            }
            for e in &outcome.input_errors {
                eprintln!("error: {e}");
            }
            for r in outcome.reports.iter().filter(|r| r.stopped.is_some()) {
                if let Some(st) = &r.stopped {
                    eprintln!("error: {}: {} {}: {}", r.source, r.kind, r.name, st.message);
                }
            }
            let text = match output {
                OutputFormat::Json => render_json(&outcome.reports),
                OutputFormat::Table => render_table(&outcome.reports),
                OutputFormat::Markdown => render_markdown(&outcome.reports),
                OutputFormat::Sarif => {
                    celcost::output::sarif::render_sarif(&outcome.reports, near_budget_percent)
                }
                OutputFormat::Github => {
                    celcost::output::github::render_github(&outcome.reports, near_budget_percent)
                }
            };
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
            let code = outcome.exit_code_failing_at(fail_at);
            if code == 1
                && outcome.exit_code() == 0
                && let Some(p) = fail_at
            {
                eprintln!(
                    "celcost: a rule, total or policy expression reaches {p}% of its limit (--fail-at)"
                );
            }
            ExitCode::from(code as u8)
        }
        Command::Diff {
            output,
            minors,
            base,
            head,
        } => {
            let minors = minors.minors();
            if minors.is_empty() {
                return ExitCode::from(2);
            }
            for note in minors.iter().filter_map(|m| m.stand_in_note()) {
                eprintln!("warning: {note}");
            }
            let estimators: Vec<Estimator> =
                minors.iter().map(|m| Estimator::for_minor(m)).collect();
            let run = celcost::cli::run_diff(&estimators, &base, &head, output);
            for e in &run.input_errors {
                eprintln!("error: {e}");
            }
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(run.text.as_bytes());
            let _ = stdout.flush();
            ExitCode::from(run.code as u8)
        }
        Command::Fix {
            go,
            write,
            minors,
            budget,
            near_budget_percent,
            paths,
        } => {
            let limits = budget.limits();
            let estimators: Vec<Estimator> = minors
                .minors()
                .into_iter()
                .map(|m| Estimator::for_minor(m).with_limits(limits))
                .collect();
            let options = celcost::fix::FixOptions {
                settings: celcost::suggest::Settings::new(near_budget_percent),
                go,
            };
            let run = celcost::cli::run_fix(&estimators, &paths, &options, write);
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(run.stdout.as_bytes());
            let _ = stdout.flush();
            eprint!("{}", run.stderr);
            ExitCode::from(run.code as u8)
        }
        Command::Controller(args) => {
            celcost::budget::return_freed_memory_promptly();
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start the runtime: {e}");
                    return ExitCode::from(2);
                }
            };
            match rt.block_on(celcost::controller::run(*args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Crd => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(celcost::controller::crd_yaml().as_bytes());
            let _ = stdout.flush();
            ExitCode::SUCCESS
        }
    }
}
