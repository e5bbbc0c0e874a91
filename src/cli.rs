//! `celcost estimate`: reading files and directories, and rendering reports for people (table,
//! markdown) and machines (JSON lines).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Estimator;
use crate::estimate::TargetKind;
use crate::input::{objects_of, parse_documents, parse_documents_located};
use crate::locate::ObjectSource;
use crate::report::{
    ExpressionReport, MATCH_CONDITIONS_COST_BUDGET, ObjectReport, PER_CALL_LIMIT,
    PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, RUNTIME_COST_BUDGET,
};
use crate::schema::catalog::{GroupVersionResource, SchemaCatalog};
use crate::versions::RangeEstimator;

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
    /// ([`crate::ci::reaches`]).
    pub fn exit_code_failing_at(&self, fail_at: Option<f64>) -> i32 {
        match self.exit_code() {
            0 if fail_at.is_some_and(|p| crate::ci::reaches(&self.reports, p)) => 1,
            c => c,
        }
    }
}

/// Files under `path` (recursively for directories) that look like manifests, sorted.
fn collect_files(path: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<String>) {
    match std::fs::metadata(path) {
        Err(e) => errors.push(format!("{}: {e}", path.display())),
        Ok(m) if m.is_dir() => match std::fs::read_dir(path) {
            Err(e) => errors.push(format!("{}: {e}", path.display())),
            Ok(rd) => {
                let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
                entries.sort();
                for p in entries {
                    if p.is_dir() {
                        collect_files(&p, out, errors);
                    } else if matches!(
                        p.extension().and_then(|e| e.to_str()),
                        Some("yaml" | "yml" | "json")
                    ) {
                        out.push(p);
                    }
                }
            }
        },
        Ok(_) => out.push(path.to_path_buf()),
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

/// Estimates every object in the given files and directories, files in parallel (one worker
/// per core, `CELCOST_THREADS` to override); reports keep the order of the files. Policies get
/// typed estimates from the CRDs found in the input (and the built-in schemas).
pub fn estimate_paths(estimator: &Estimator, paths: &[PathBuf]) -> Outcome {
    estimate_paths_with(Minors::One(estimator), paths, &SchemaCatalog::new())
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

    /// An object's report: one minor's, or the newest's carrying the range's matrix.
    fn estimate(
        self,
        v: &serde_json::Value,
        f: impl Fn(&Estimator) -> Option<ObjectReport>,
    ) -> Option<ObjectReport> {
        match self {
            Minors::One(e) => f(e),
            Minors::Range(r) => r.estimate_each(v, f).map(ranged),
        }
    }
}

/// As [`estimate_paths`], each object with every estimator (one per Kubernetes minor, oldest
/// first), reading each file once: the reports are the newest minor's, with the verdicts and
/// changes of all of them ([`crate::versions`]).
pub fn estimate_paths_range(estimators: &RangeEstimator, paths: &[PathBuf]) -> Outcome {
    estimate_paths_with(Minors::Range(estimators), paths, &SchemaCatalog::new())
}

/// As [`estimate_paths`], with schemas the caller knows besides the CRDs of the input.
pub fn estimate_paths_with(
    estimators: Minors<'_>,
    paths: &[PathBuf],
    catalog: &SchemaCatalog,
) -> Outcome {
    estimate_paths_suggesting(estimators, paths, catalog, None)
}

/// As [`estimate_paths_with`]; with `suggest`, every CRD rule and schema total over its limit
/// or at the near-budget threshold gets suggested bounds (or why none helps), found with the
/// estimator of the report (the newest of a range): see [`crate::suggest`].
pub fn estimate_paths_suggesting(
    estimators: Minors<'_>,
    paths: &[PathBuf],
    catalog: &SchemaCatalog,
    suggest: Option<&crate::suggest::Settings>,
) -> Outcome {
    let mut outcome = Outcome::default();
    let mut files = Vec::new();
    for p in paths {
        collect_files(p, &mut files, &mut outcome.input_errors);
    }
    let threads = std::env::var("CELCOST_THREADS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
    // First pass: CRDs are estimated (they do not depend on other objects), policies kept.
    let first: Vec<FirstPass> =
        parallel(&files, threads, |f| first_pass_file(estimators, f, suggest));
    // The CRDs the policies match or take as params, read again from their files (so that the
    // first pass need not keep every CRD of a large input in memory).
    let mut catalog = catalog.clone();
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
        let mut r = estimators.estimate(value, |e| e.estimate_with(value, source, &catalog));
        if let (Some(r), Some(l)) = (&mut r, located) {
            l.attach(r);
        }
        r
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

fn first_pass_file(
    estimators: Minors<'_>,
    f: &Path,
    suggest: Option<&crate::suggest::Settings>,
) -> FirstPass {
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
            suggest,
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
    suggest: Option<&crate::suggest::Settings>,
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
                            let mut report = estimators
                                .estimate(&o.value, |e| Some(e.estimate_crd(&o.value, &o.source)))
                                .unwrap_or_default();
                            if let Some(e) = estimators.newest() {
                                if let Some(settings) = suggest {
                                    report = crate::suggest::suggest(e, &o.value, report, settings);
                                }
                                e.offer_rewrites(&o.value, &mut report);
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

/// Estimates the objects of one file's text; `name` is how the file is named in sources.
/// Policies get typed estimates from the CRDs of the same text (and the built-in schemas).
pub fn estimate_text(estimator: &Estimator, name: &str, text: &str, outcome: &mut Outcome) {
    estimate_text_range(Minors::One(estimator), name, text, outcome)
}

/// As [`estimate_text`], with every estimator of a range ([`estimate_paths_range`]).
pub fn estimate_text_range(estimators: Minors<'_>, name: &str, text: &str, outcome: &mut Outcome) {
    let mut first = FirstPass::default();
    first_pass_text(estimators, name, text, &mut first, None);
    let mut catalog = SchemaCatalog::new();
    if first.slots.iter().any(|s| matches!(s, Slot::Policy { .. })) && !first.crds.is_empty() {
        let sources: Vec<String> = first.crds.iter().map(|(s, _)| s.clone()).collect();
        add_crds(&mut catalog, name, text, &sources);
    }
    for slot in first.slots {
        match slot {
            Slot::Done(r) => outcome.reports.push(*r),
            Slot::Policy {
                source,
                value,
                located,
            } => {
                let mut r =
                    estimators.estimate(&value, |e| e.estimate_with(&value, &source, &catalog));
                if let (Some(r), Some(l)) = (&mut r, &located) {
                    l.attach(r);
                }
                outcome.reports.extend(r);
            }
        }
    }
    outcome.input_errors.extend(first.input_errors);
    outcome.skipped.extend(first.skipped);
}

/// One report per estimator: a single minor's report as is, several combined.
fn ranged(mut reports: Vec<ObjectReport>) -> ObjectReport {
    if reports.len() == 1 {
        reports.pop().unwrap_or_default()
    } else {
        crate::versions::combine(reports)
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

/// Percent of a limit, for people: one decimal, `>999%` past that, `∞` when unbounded.
pub fn percent(cost: u64, limit: u64) -> String {
    if cost == u64::MAX {
        return "unbounded".into();
    }
    let p = cost as f64 * 100.0 / limit as f64;
    if p > 999.0 {
        ">999%".into()
    } else {
        format!("{p:.1}%")
    }
}

/// Thousands separators.
pub fn num(n: u64) -> String {
    if n == u64::MAX {
        return "2^64-1".into();
    }
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn truncate(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let t: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{t}…")
    }
}

/// Renders reports as JSON lines.
pub fn render_json(reports: &[ObjectReport]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&serde_json::to_string(r).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// One row of a rendered rule table.
struct Row {
    cost: u64,
    limit: u64,
    cells: Vec<String>,
    /// Explanations, one per line: (label, text).
    why: Vec<(&'static str, String)>,
}

/// At most `n` items, then how many more.
fn some_of(items: &[String], n: usize) -> String {
    if items.len() <= n {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..n].join(", "), items.len() - n)
    }
}

fn crd_rows(r: &ObjectReport) -> Vec<Row> {
    let mut rows = Vec::new();
    for s in &r.schemas {
        for rule in &s.rules {
            let mut why = Vec::new();
            if !rule.drivers.unbounded_ancestors.is_empty() {
                why.push(format!(
                    "cardinality {} from the request size: no maxItems/maxProperties on {}",
                    num(rule.cardinality_used),
                    rule.drivers.unbounded_ancestors.join(", ")
                ));
            }
            if !rule.drivers.unbounded_fields.is_empty() {
                why.push(format!(
                    "unbounded: {} (add maxLength/maxItems/maxProperties)",
                    rule.drivers.unbounded_fields.join(", ")
                ));
            }
            if let Some(e) = &rule.compile_error {
                why.push(format!("does not compile: {}", truncate(e, 120)));
            }
            if !rule.compiled_by_apiserver {
                why.push("not compiled: the schema has errors at or below this node".into());
            }
            let cost = rule.cost.max(rule.message_expression_cost.unwrap_or(0));
            rows.push(Row {
                cost,
                limit: PER_RULE_COST_LIMIT,
                cells: vec![
                    num(rule.cost),
                    percent(rule.cost, PER_RULE_COST_LIMIT),
                    num(rule.max_cost),
                    num(rule.cardinality_used),
                    format!("{}[{}]", rule.path, rule.index),
                    truncate(&rule.rule, 60),
                ],
                why: if why.is_empty() {
                    vec![]
                } else {
                    vec![("why", why.join("; "))]
                }
                .into_iter()
                .chain(rule_suggestions(rule))
                .chain(
                    rule.rewrites
                        .iter()
                        .map(|rw| ("cheaper", crate::rewrite::rewrite_line(rw))),
                )
                .collect(),
            });
        }
    }
    rows
}

/// A rule's suggested bounds, one line each (`suggest: add maxItems: 64 to ^.spec.tags ...`).
fn rule_suggestions(rule: &crate::report::RuleReport) -> Vec<(&'static str, String)> {
    crate::suggest::suggestion_lines(
        &rule.suggestions,
        rule.no_suggestion.as_deref(),
        rule.cost.max(rule.message_expression_cost.unwrap_or(0)),
    )
    .into_iter()
    .map(|l| ("suggest", l))
    .collect()
}

/// A schema total's suggested bounds, one line each.
fn total_suggestions(s: &crate::report::SchemaReport) -> Vec<String> {
    crate::suggest::suggestion_lines(&s.suggestions, s.no_suggestion.as_deref(), s.total_cost)
}

/// The cost a policy expression is judged by: the typed estimate where there is one.
pub(crate) fn judged_cost(e: &ExpressionReport) -> Option<u64> {
    e.typed.as_ref().map(|t| t.max_cost).or(e.max_cost)
}

fn policy_rows(r: &ObjectReport) -> Vec<Row> {
    let mut rows = Vec::new();
    for e in &r.expressions {
        let mut why = Vec::new();
        if let Some(t) = &e.typed {
            if let Some(err) = &t.error {
                why.push(("typed", truncate(err, 200)));
            } else {
                let worst = t.worst_against.clone().unwrap_or_default();
                why.push((
                    "typed",
                    if t.against.len() > 1 {
                        format!(
                            "worst against {worst} (of {} matched resources)",
                            t.against.len()
                        )
                    } else {
                        format!("against {worst}")
                    },
                ));
            }
            if !t.unbounded_fields.is_empty() {
                why.push((
                    "drivers",
                    format!(
                        "{} (no maxLength/maxItems/maxProperties: sized from the 3 MiB request)",
                        some_of(&t.unbounded_fields, 4)
                    ),
                ));
            }
            if !t.unknown_size_fields.is_empty() {
                why.push((
                    "size unknown",
                    format!(
                        "{} (no schema gives a size)",
                        some_of(&t.unknown_size_fields, 4)
                    ),
                ));
            } else if t.max_cost_unbounded && t.error.is_none() {
                why.push((
                    "saturated",
                    "the estimate exceeds 2^64-1 (nested loops over request-sized lists)".into(),
                ));
            }
            if !t.absent_fields.is_empty() {
                why.push((
                    "not in schema",
                    format!(
                        "{} (the runtime stops with an error there)",
                        some_of(&t.absent_fields, 2)
                    ),
                ));
            }
            if !t.failed_against.is_empty() {
                let first = t.failed_against[0].lines().next().unwrap_or_default();
                let more = if t.failed_against.len() > 1 {
                    format!(" (and {} more)", t.failed_against.len() - 1)
                } else {
                    String::new()
                };
                why.push(("type check", format!("{}{more}", truncate(first, 200))));
            }
        }
        if let Some(c) = &e.compile_error {
            why.push(("does not compile", truncate(c, 120)));
        }
        let judged = judged_cost(e);
        rows.push(Row {
            cost: judged.unwrap_or(0),
            limit: PER_CALL_LIMIT,
            cells: vec![
                e.max_cost.map(num).unwrap_or_else(|| "-".into()),
                e.typed
                    .as_ref()
                    .filter(|t| t.error.is_none())
                    .map(|t| num(t.max_cost))
                    .unwrap_or_else(|| "-".into()),
                judged
                    .map(|c| percent(c, PER_CALL_LIMIT))
                    .unwrap_or_else(|| "-".into()),
                e.kind.clone(),
                e.field_path.clone(),
                truncate(&e.expression, 60),
            ],
            why,
        });
    }
    rows
}

fn rows(r: &ObjectReport) -> Vec<Row> {
    let mut rows = crd_rows(r);
    rows.extend(policy_rows(r));
    locate_rows(r, &mut rows);
    rows.sort_by(|a, b| {
        (b.cost as f64 / b.limit as f64)
            .partial_cmp(&(a.cost as f64 / a.limit as f64))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows
}

/// The rows' `at: file:line:column`, where it helps: on rows near their limit or that say what
/// to change (drivers, compile errors). Rows come one per rule (schema by schema), then one per expression.
fn locate_rows(r: &ObjectReport, rows: &mut [Row]) {
    let locations = r
        .schemas
        .iter()
        .flat_map(|s| s.rules.iter().map(|x| x.location.as_ref()))
        .chain(r.expressions.iter().map(|e| e.location.as_ref()));
    for (row, loc) in rows.iter_mut().zip(locations) {
        let near = row.cost as f64 >= row.limit as f64 * NEAR_BUDGET_SHARE;
        if let Some(l) = loc
            && (near || row.why.iter().any(|(label, _)| *label != "typed"))
        {
            row.why.insert(0, ("at", l.to_string()));
        }
    }
}

/// The share of a limit from which the table shows where a row's rule is.
const NEAR_BUDGET_SHARE: f64 = crate::ci::DEFAULT_NEAR_BUDGET_PERCENT / 100.0;

/// ` (at file:line:column)` for error `i` of a report, when it was located.
fn error_at(r: &ObjectReport, i: usize) -> String {
    r.error_locations
        .iter()
        .find(|l| l.error as usize == i)
        .map(|l| format!(" (at {})", l.location))
        .unwrap_or_default()
}

fn header(r: &ObjectReport) -> String {
    if r.stopped.is_some() {
        return format!(
            "{} {} ({}) — NOT ESTIMATED for Kubernetes {}",
            r.kind, r.name, r.source, r.kubernetes_version
        );
    }
    let verdict = if r.valid { "accepted" } else { "REJECTED" };
    let range = match &r.by_version {
        Some(m) if m.verdicts.len() > 1 => format!(
            " (and {} to {} below)",
            minor_name(&m.verdicts[0].kubernetes_version),
            minor_name(&m.verdicts[m.verdicts.len() - 2].kubernetes_version)
        ),
        _ => String::new(),
    };
    format!(
        "{} {} ({}) — {} by Kubernetes {}{range}",
        r.kind, r.name, r.source, verdict, r.kubernetes_version
    )
}

/// Lines of changes between minors shown per object in the table.
const MAX_CHANGE_LINES: usize = 12;

/// `v1.31` → `1.31`.
fn minor_name(v: &str) -> &str {
    v.trim_start_matches('v')
}

/// One value of a unit on a minor: `12,310,000 (rejected)`, `does not compile`.
fn step_text(s: &crate::versions::VersionStep) -> String {
    match (s.cost, &s.compile_error) {
        (_, Some(_)) => "does not compile".into(),
        (Some(c), None) => {
            let over = if s.exceeds_limit {
                " (over the limit)"
            } else {
                ""
            };
            format!("{} = {}{over}", num(c), percent(c, s.limit))
        }
        (None, None) => "absent".into(),
    }
}

/// The lines of a range of minors: the verdict on each, the oldest accepting, and every unit
/// that changes (`^.spec.cidrs[*] [0]: does not compile on 1.30 → 4,100,000 = 41.0% on 1.31`).
fn version_lines(r: &ObjectReport) -> Vec<String> {
    let Some(m) = &r.by_version else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let verdicts: Vec<String> = m
        .verdicts
        .iter()
        .map(|v| {
            let mark = if v.stopped {
                "not estimated"
            } else if v.valid {
                "accepted"
            } else {
                "REJECTED"
            };
            format!("{} {mark}", minor_name(&v.kubernetes_version))
        })
        .collect();
    out.push(format!("by version: {}", verdicts.join(" | ")));
    let (first, last) = (
        m.verdicts
            .first()
            .map(|v| minor_name(&v.kubernetes_version)),
        m.verdicts.last().map(|v| minor_name(&v.kubernetes_version)),
    );
    match &m.oldest_accepting {
        Some(o) if Some(minor_name(o)) == first => {
            out.push(format!(
                "accepted from Kubernetes {} (the oldest in the range)",
                minor_name(o)
            ));
        }
        Some(o) => out.push(format!("accepted from Kubernetes {}", minor_name(o))),
        None => out.push(format!(
            "rejected by every Kubernetes version from {} to {}",
            first.unwrap_or("?"),
            last.unwrap_or("?")
        )),
    }
    if m.rejected_after_accepted {
        out.push("warning: a newer version rejects what an older one accepts".into());
    }
    // Changes of verdict (a limit crossed, a compile error) first; at most MAX_CHANGE_LINES.
    let mut changes: Vec<&crate::versions::VersionChange> = m.changes.iter().collect();
    changes.sort_by_key(|c| {
        let first = &c.steps[0];
        !c.steps.iter().any(|s| {
            s.exceeds_limit != first.exceeds_limit
                || s.compile_error.is_some() != first.compile_error.is_some()
        })
    });
    if changes.len() > MAX_CHANGE_LINES {
        let more = changes.len() - MAX_CHANGE_LINES;
        changes.truncate(MAX_CHANGE_LINES);
        out.push(format!(
            "changes: {more} more rules change between versions (all of them: --output json)"
        ));
    }
    for c in changes {
        let steps: Vec<String> = c
            .steps
            .iter()
            .map(|s| format!("{} on {}", step_text(s), minor_name(&s.kubernetes_version)))
            .collect();
        out.push(format!("changes: {}: {}", c.unit, steps.join(" → ")));
    }
    out
}

/// The lines under a policy's header: notes, what typed the estimates, and the budgets,
/// upstream's (object: dyn) beside the typed ones.
fn policy_lines(r: &ObjectReport) -> Vec<String> {
    let mut out: Vec<String> = r.notes.iter().map(|n| format!("note: {n}")).collect();
    if let Some(t) = &r.typing {
        if t.schemas.is_empty() {
            out.push(
                "typed estimate: none (no matched resource has a known schema; see below)".into(),
            );
        } else {
            let mut by_origin: Vec<(String, Vec<String>)> = Vec::new();
            for s in &t.schemas {
                match by_origin.iter_mut().find(|(o, _)| *o == s.origin) {
                    Some((_, v)) => v.push(s.resource.clone()),
                    None => by_origin.push((s.origin.clone(), vec![s.resource.clone()])),
                }
            }
            let parts: Vec<String> = by_origin
                .iter()
                .map(|(o, rs)| format!("{} — {o}", rs.join(", ")))
                .collect();
            out.push(format!(
                "typed estimate: object/oldObject typed against {}",
                parts.join("; ")
            ));
        }
        if let Some(p) = &t.params {
            out.push(format!(
                "typed estimate: params typed as {} {} — {}",
                p.resource, p.kind, p.origin
            ));
        }
        for n in &t.not_typed {
            out.push(format!("not typed: {n}"));
        }
    }
    if let Some(b) = &r.policy_budget {
        let line = |what: &str, upstream: u64, typed: Option<u64>, limit: u64| {
            let mut l = format!(
                "{what} (budget {}): upstream (object: dyn) {} = {}",
                num(limit),
                num(upstream),
                percent(upstream, limit)
            );
            if let Some(t) = typed {
                let _ = write!(l, "; typed {} = {}", num(t), percent(t, limit));
            }
            l
        };
        if let Some(m) = b.mutation_cost {
            out.push(line(
                "runtime cost per mutation: the worst one + the variables it reads",
                m,
                b.typed_mutation_cost,
                RUNTIME_COST_BUDGET,
            ));
        } else {
            out.push(line(
                "runtime cost per evaluation: validations + messageExpressions + their variables",
                b.validation_cost,
                b.typed_validation_cost,
                RUNTIME_COST_BUDGET,
            ));
        }
        if r.expressions.iter().any(|e| e.kind == "matchCondition") {
            out.push(line(
                "matchConditions",
                b.match_conditions_cost,
                b.typed_match_conditions_cost,
                MATCH_CONDITIONS_COST_BUDGET,
            ));
        }
        if r.expressions.iter().any(|e| e.kind == "auditAnnotation") {
            out.push(line(
                "auditAnnotations",
                b.audit_annotations_cost,
                b.typed_audit_annotations_cost,
                RUNTIME_COST_BUDGET,
            ));
        }
    }
    out
}

const CRD_HEADS: [&str; 6] = [
    "COST",
    "% OF 10M",
    "PER CALL",
    "CARDINALITY",
    "PATH",
    "RULE",
];
const POLICY_HEADS: [&str; 6] = [
    "UPSTREAM (OBJECT: DYN)",
    "TYPED",
    "% OF 1M",
    "KIND",
    "FIELD",
    "EXPRESSION",
];

/// Renders reports as plain-text tables, worst rules first. For policies, upstream's estimate
/// (`object`, `oldObject`, `params` typed `dyn`) and the typed one (from the schemas of the
/// matched resources) side by side; `% OF 1M` is of the typed estimate where there is one.
pub fn render_table(reports: &[ObjectReport]) -> String {
    let mut out = String::new();
    for r in reports {
        writeln!(out, "{}", header(r)).unwrap();
        if let Some(st) = &r.stopped {
            writeln!(out, "  error: {}", st.message).unwrap();
        }
        for l in version_lines(r) {
            writeln!(out, "  {l}").unwrap();
        }
        for s in &r.schemas {
            writeln!(
                out,
                "  {} (versions {}): total {} = {} of {}",
                s.schema_field_path,
                s.versions.join(", "),
                num(s.total_cost),
                percent(s.total_cost, PER_SCHEMA_COST_LIMIT),
                num(PER_SCHEMA_COST_LIMIT)
            )
            .unwrap();
            for l in total_suggestions(s) {
                writeln!(out, "      suggest: {l}").unwrap();
            }
        }
        for l in policy_lines(r) {
            writeln!(out, "  {l}").unwrap();
        }
        let rows = rows(r);
        if !rows.is_empty() {
            let (heads, right) = if r.expressions.is_empty() {
                (CRD_HEADS, 4)
            } else {
                (POLICY_HEADS, 3)
            };
            let mut widths: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
            for row in &rows {
                for (i, c) in row.cells.iter().enumerate() {
                    widths[i] = widths[i].max(c.chars().count());
                }
            }
            let line = |cells: &[String]| {
                let mut l = String::from("  ");
                for (i, c) in cells.iter().enumerate() {
                    let pad = widths[i] - c.chars().count();
                    if i < right {
                        l.push_str(&" ".repeat(pad));
                        l.push_str(c);
                    } else {
                        l.push_str(c);
                        if i + 1 < cells.len() {
                            l.push_str(&" ".repeat(pad));
                        }
                    }
                    l.push_str("  ");
                }
                l.trim_end().to_string()
            };
            writeln!(
                out,
                "{}",
                line(&heads.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            )
            .unwrap();
            for row in &rows {
                writeln!(out, "{}", line(&row.cells)).unwrap();
                for (label, text) in &row.why {
                    writeln!(out, "      {label}: {text}").unwrap();
                }
            }
        }
        for (i, e) in r.errors.iter().enumerate() {
            writeln!(out, "  error: {}{}", truncate(e, 400), error_at(r, i)).unwrap();
        }
        out.push('\n');
    }
    out
}

/// Renders reports as Markdown, worst rules first (policies: upstream's and the typed estimate
/// side by side, as in the table).
pub fn render_markdown(reports: &[ObjectReport]) -> String {
    let mut out = String::new();
    let esc = |s: &str| s.replace('|', "\\|");
    for r in reports {
        writeln!(out, "### {}\n", header(r)).unwrap();
        if let Some(st) = &r.stopped {
            writeln!(out, "- **{}**", esc(&st.message)).unwrap();
        }
        if let Some(m) = &r.by_version {
            let heads: Vec<&str> = m
                .verdicts
                .iter()
                .map(|v| minor_name(&v.kubernetes_version))
                .collect();
            writeln!(
                out,
                "| | {} |\n|---|{}",
                heads.join(" | "),
                "---|".repeat(heads.len())
            )
            .unwrap();
            let cells: Vec<&str> = m
                .verdicts
                .iter()
                .map(|v| {
                    if v.stopped {
                        "not estimated"
                    } else if v.valid {
                        "✅ accepted"
                    } else {
                        "❌ rejected"
                    }
                })
                .collect();
            writeln!(out, "| verdict | {} |", cells.join(" | ")).unwrap();
            for c in &m.changes {
                let mut row: Vec<String> = vec![String::new(); heads.len()];
                let mut cur = String::new();
                for (i, v) in m.verdicts.iter().enumerate() {
                    if let Some(s) = c
                        .steps
                        .iter()
                        .find(|s| s.kubernetes_version == v.kubernetes_version)
                    {
                        cur = step_text(s);
                    }
                    row[i] = cur.clone();
                }
                writeln!(out, "| `{}` | {} |", esc(&c.unit), row.join(" | ")).unwrap();
            }
            out.push('\n');
            for l in version_lines(r)
                .into_iter()
                .skip(1)
                .filter(|l| !l.starts_with("changes:"))
            {
                writeln!(out, "- {}", esc(&l)).unwrap();
            }
        }
        for s in &r.schemas {
            writeln!(
                out,
                "- `{}` (versions {}): total **{}** = {} of {}",
                s.schema_field_path,
                s.versions.join(", "),
                num(s.total_cost),
                percent(s.total_cost, PER_SCHEMA_COST_LIMIT),
                num(PER_SCHEMA_COST_LIMIT)
            )
            .unwrap();
            for l in total_suggestions(s) {
                writeln!(out, "  - suggest: {}", esc(&l)).unwrap();
            }
        }
        for l in policy_lines(r) {
            writeln!(out, "- {l}").unwrap();
        }
        let rows = rows(r);
        if !rows.is_empty() {
            if r.expressions.is_empty() {
                writeln!(out, "\n| cost | % of 10M | per call | cardinality | path | rule | why |\n|---:|---:|---:|---:|---|---|---|").unwrap();
            } else {
                writeln!(out, "\n| upstream (object: dyn) | typed | % of 1M | kind | field | expression | why |\n|---:|---:|---:|---|---|---|---|").unwrap();
            }
            for row in &rows {
                let c = &row.cells;
                let why: Vec<String> = row
                    .why
                    .iter()
                    .map(|(l, t)| esc(&format!("{l}: {t}")))
                    .collect();
                writeln!(
                    out,
                    "| {} | {} | {} | {} | `{}` | `{}` | {} |",
                    c[0],
                    c[1],
                    c[2],
                    c[3],
                    esc(&c[4]),
                    esc(&c[5]),
                    why.join("<br>")
                )
                .unwrap();
            }
        }
        if !r.errors.is_empty() {
            writeln!(out, "\nErrors the API server would return:\n").unwrap();
            for (i, e) in r.errors.iter().enumerate() {
                writeln!(
                    out,
                    "- `{}`{}",
                    truncate(e, 400).replace('`', "'"),
                    esc(&error_at(r, i))
                )
                .unwrap();
            }
        }
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------------------
// `celcost diff`.

/// `4,100,000 = 41.0%`, or `does not compile`, or `—`.
fn diff_value(cost: Option<u64>, err: &Option<String>, limit: u64) -> String {
    match (cost, err) {
        (_, Some(_)) => "does not compile".into(),
        (Some(c), None) => format!("{} = {}", num(c), percent(c, limit)),
        (None, None) => "—".into(),
    }
}

fn verdict_word(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "accepted",
        Some(false) => "REJECTED",
        None => "absent",
    }
}

/// The diff as JSON lines, one per object.
pub fn render_diff_json(d: &[crate::diff::ObjectDiff]) -> String {
    let mut out = String::new();
    for o in d {
        out.push_str(&serde_json::to_string(o).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// The diff for people: changed objects, their verdicts, and each unit's before → after.
pub fn render_diff_table(d: &[crate::diff::ObjectDiff]) -> String {
    let mut out = String::new();
    for o in d.iter().filter(|o| o.change != "unchanged") {
        writeln!(
            out,
            "{} {} — {}: {} → {}",
            o.kind,
            o.name,
            o.change,
            verdict_word(o.valid_before),
            verdict_word(o.valid_after)
        )
        .unwrap();
        for u in &o.units {
            writeln!(
                out,
                "  {} ({}): {} → {} of {}",
                u.unit,
                u.change,
                diff_value(u.cost_before, &u.compile_error_before, u.limit),
                diff_value(u.cost_after, &u.compile_error_after, u.limit),
                num(u.limit)
            )
            .unwrap();
        }
        out.push('\n');
    }
    let unchanged = d.iter().filter(|o| o.change == "unchanged").count();
    writeln!(out, "{unchanged} objects unchanged").unwrap();
    out
}

/// The diff as Markdown for a pull-request comment.
pub fn render_diff_markdown(d: &[crate::diff::ObjectDiff]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::from("### celcost: CEL cost changes\n\n");
    let changed: Vec<_> = d.iter().filter(|o| o.change != "unchanged").collect();
    if changed.is_empty() {
        out.push_str("No estimated cost changes.\n");
        return out;
    }
    out.push_str("| object | rule | before | after |\n|---|---|---:|---:|\n");
    for o in &changed {
        if o.valid_before != o.valid_after {
            writeln!(
                out,
                "| {} `{}` | **verdict** | {} | **{}** |",
                o.kind,
                esc(&o.name),
                verdict_word(o.valid_before),
                verdict_word(o.valid_after)
            )
            .unwrap();
        }
        for u in &o.units {
            let pct = |c: Option<u64>, e: &Option<String>| match (c, e) {
                (_, Some(_)) => "does not compile".to_string(),
                (Some(c), None) => percent(c, u.limit),
                (None, None) => "—".to_string(),
            };
            writeln!(
                out,
                "| {} `{}` | `{}` ({}) | {} | {} of {} |",
                o.kind,
                esc(&o.name),
                esc(&u.unit),
                u.change,
                pct(u.cost_before, &u.compile_error_before),
                pct(u.cost_after, &u.compile_error_after),
                short_limit(u.limit)
            )
            .unwrap();
        }
    }
    let unchanged = d.len() - changed.len();
    writeln!(out, "\n{unchanged} objects unchanged.").unwrap();
    out
}

/// `10M`, `100M`, `1M`.
fn short_limit(limit: u64) -> String {
    if limit.is_multiple_of(1_000_000) {
        format!("{}M", limit / 1_000_000)
    } else {
        num(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_for_people() {
        assert_eq!(num(10_000_000), "10,000,000");
        assert_eq!(num(999), "999");
        assert_eq!(num(u64::MAX), "2^64-1");
        assert_eq!(percent(8_000_000, 10_000_000), "80.0%");
        assert_eq!(percent(u64::MAX, 10), "unbounded");
    }

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
        estimate_text(&e, "f.yaml", text, &mut o);
        assert_eq!(o.input_errors.len(), 1, "{:?}", o.input_errors);
        assert!(o.input_errors[0].starts_with("f.yaml#1"));
    }
}
