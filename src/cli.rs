//! `celcost estimate`: reading files and directories, and rendering reports for people (table,
//! markdown) and machines (JSON lines).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::Estimator;
use crate::input::{objects_of, parse_documents};
use crate::report::{
    ObjectReport, PER_CALL_LIMIT, PER_RULE_COST_LIMIT, PER_SCHEMA_COST_LIMIT, RUNTIME_COST_BUDGET,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Markdown,
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
    /// input (which takes precedence: the verdict is incomplete).
    pub fn exit_code(&self) -> i32 {
        if !self.input_errors.is_empty() {
            2
        } else if self.reports.iter().any(|r| !r.valid) {
            1
        } else {
            0
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

/// Estimates every object in the given files and directories, files in parallel (one worker
/// per core, `CELCOST_THREADS` to override); reports keep the order of the files.
pub fn estimate_paths(estimator: &Estimator, paths: &[PathBuf]) -> Outcome {
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
        })
        .clamp(1, files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut per_file: Vec<(usize, Outcome)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(f) = files.get(i) else { break };
                        done.push((i, estimate_file(estimator, f)));
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
    per_file.sort_by_key(|(i, _)| *i);
    for (_, o) in per_file {
        outcome.reports.extend(o.reports);
        outcome.input_errors.extend(o.input_errors);
        outcome.skipped.extend(o.skipped);
    }
    outcome
}

fn estimate_file(estimator: &Estimator, f: &Path) -> Outcome {
    let mut outcome = Outcome::default();
    let bytes = match std::fs::read(f) {
        Ok(b) => b,
        Err(e) => {
            outcome.input_errors.push(format!("{}: {e}", f.display()));
            return outcome;
        }
    };
    match String::from_utf8(bytes) {
        Ok(text) => estimate_text(estimator, &f.display().to_string(), &text, &mut outcome),
        Err(_) => outcome
            .input_errors
            .push(format!("{}: not UTF-8 text (binary file?)", f.display())),
    }
    outcome
}

/// Estimates the objects of one file's text; `name` is how the file is named in sources.
pub fn estimate_text(estimator: &Estimator, name: &str, text: &str, outcome: &mut Outcome) {
    for doc in parse_documents(text) {
        let source = format!("{name}#{}", doc.index);
        match doc.value {
            Err(e) => outcome.input_errors.push(format!("{source}: {e}")),
            Ok(serde_json::Value::Null) => {}
            Ok(v) if !v.is_object() => outcome.skipped.push(format!(
                "{source}: not a Kubernetes object (a {})",
                json_kind(&v)
            )),
            Ok(v) => {
                for o in objects_of(&source, v) {
                    match estimator.estimate(&o.value, &o.source) {
                        Some(r) => outcome.reports.push(r),
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
                            outcome.skipped.push(format!(
                                "{}: skipped {api} {kind}: not a CRD or ValidatingAdmissionPolicy",
                                o.source
                            ));
                        }
                    }
                }
            }
        }
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
    why: String,
}

fn rows(r: &ObjectReport) -> Vec<Row> {
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
                why: why.join("; "),
            });
        }
    }
    for e in &r.expressions {
        let mut why = Vec::new();
        if let Some(t) = &e.typed {
            why.push(format!(
                "typed against {}: {}{}",
                t.against.join(", "),
                num(t.max_cost),
                if t.unbounded_fields.is_empty() {
                    String::new()
                } else {
                    format!(" (unbounded: {})", t.unbounded_fields.join(", "))
                }
            ));
        }
        if let Some(c) = &e.compile_error {
            why.push(format!("does not compile: {}", truncate(c, 120)));
        }
        rows.push(Row {
            cost: e.max_cost.unwrap_or(0),
            limit: PER_CALL_LIMIT,
            cells: vec![
                e.max_cost.map(num).unwrap_or_else(|| "-".into()),
                e.max_cost
                    .map(|c| percent(c, PER_CALL_LIMIT))
                    .unwrap_or_else(|| "-".into()),
                e.min_cost.map(num).unwrap_or_else(|| "-".into()),
                e.kind.clone(),
                e.field_path.clone(),
                truncate(&e.expression, 60),
            ],
            why: why.join("; "),
        });
    }
    rows.sort_by(|a, b| {
        (b.cost as f64 / b.limit as f64)
            .partial_cmp(&(a.cost as f64 / a.limit as f64))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows
}

fn header(r: &ObjectReport) -> String {
    let verdict = if r.valid { "accepted" } else { "REJECTED" };
    format!(
        "{} {} ({}) — {} by Kubernetes {}",
        r.kind, r.name, r.source, verdict, r.kubernetes_version
    )
}

/// Renders reports as plain-text tables, worst rules first.
pub fn render_table(reports: &[ObjectReport]) -> String {
    let mut out = String::new();
    for r in reports {
        writeln!(out, "{}", header(r)).unwrap();
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
        }
        if let Some(b) = &r.policy_budget {
            writeln!(
                out,
                "  runtime budget per evaluation: validations {} = {} of {} (estimated, upstream typing)",
                num(b.validation_cost),
                percent(b.validation_cost, RUNTIME_COST_BUDGET),
                num(RUNTIME_COST_BUDGET)
            )
            .unwrap();
            if let Some(t) = b.typed_validation_cost {
                writeln!(
                    out,
                    "  runtime budget per evaluation, typed from matched schemas: {} = {}",
                    num(t),
                    percent(t, RUNTIME_COST_BUDGET)
                )
                .unwrap();
            }
        }
        let rows = rows(r);
        if !rows.is_empty() {
            let heads: Vec<&str> = if r.expressions.is_empty() {
                vec![
                    "COST",
                    "% OF 10M",
                    "PER CALL",
                    "CARDINALITY",
                    "PATH",
                    "RULE",
                ]
            } else {
                vec![
                    "MAX COST",
                    "% OF 1M",
                    "MIN COST",
                    "KIND",
                    "FIELD",
                    "EXPRESSION",
                ]
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
                    if i < 4 {
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
                if !row.why.is_empty() {
                    writeln!(out, "      why: {}", row.why).unwrap();
                }
            }
        }
        for e in &r.errors {
            writeln!(out, "  error: {}", truncate(e, 400)).unwrap();
        }
        out.push('\n');
    }
    out
}

/// Renders reports as Markdown, worst rules first.
pub fn render_markdown(reports: &[ObjectReport]) -> String {
    let mut out = String::new();
    for r in reports {
        writeln!(out, "### {}\n", header(r)).unwrap();
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
        }
        let rows = rows(r);
        if !rows.is_empty() {
            if r.expressions.is_empty() {
                writeln!(out, "\n| cost | % of 10M | per call | cardinality | path | rule | why |\n|---:|---:|---:|---:|---|---|---|").unwrap();
            } else {
                writeln!(out, "\n| max cost | % of 1M | min cost | kind | field | expression | why |\n|---:|---:|---:|---|---|---|---|").unwrap();
            }
            for row in &rows {
                let c = &row.cells;
                let esc = |s: &str| s.replace('|', "\\|");
                writeln!(
                    out,
                    "| {} | {} | {} | {} | `{}` | `{}` | {} |",
                    c[0],
                    c[1],
                    c[2],
                    c[3],
                    esc(&c[4]),
                    esc(&c[5]),
                    esc(&row.why)
                )
                .unwrap();
            }
        }
        if !r.errors.is_empty() {
            writeln!(out, "\nErrors the API server would return:\n").unwrap();
            for e in &r.errors {
                writeln!(out, "- `{}`", truncate(e, 400).replace('`', "'")).unwrap();
            }
        }
        out.push('\n');
    }
    out
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
