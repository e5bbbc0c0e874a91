//! `--output markdown`: reports as Markdown (a pull-request comment, a job summary).

use std::fmt::Write as _;

use super::rows::{
    error_at, header, minor_name, policy_lines, rows, schema_total, step_text, total_suggestions,
    truncate, version_lines,
};
use celcost_core::report::ObjectReport;

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
            // The changes are the matrix's rows: their lines and the causes under them are
            // said below, each cause once; a warning's causes are its sub-items.
            let mut under_change = false;
            for l in version_lines(r).into_iter().skip(1) {
                if l.starts_with("changes:") {
                    under_change = true;
                } else if let Some(because) = l.strip_prefix("    ") {
                    if !under_change {
                        writeln!(out, "  - {}", esc(because)).unwrap();
                    }
                } else {
                    under_change = false;
                    writeln!(out, "- {}", esc(&l)).unwrap();
                }
            }
            let mut said: Vec<&celcost_core::report::versions::VersionCause> = Vec::new();
            for c in &m.changes {
                let new: Vec<String> = c
                    .causes
                    .iter()
                    .filter(|x| !said.contains(x))
                    .map(|x| x.text())
                    .collect();
                said.extend(c.causes.iter());
                if !new.is_empty() {
                    writeln!(
                        out,
                        "- `{}` changes because {}",
                        esc(&c.unit),
                        esc(&new.join("; "))
                    )
                    .unwrap();
                }
            }
        }
        for s in &r.schemas {
            writeln!(out, "- {}", schema_total(s, "`", "**")).unwrap();
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
