//! `--output table`: reports as plain-text tables, for people.

use std::fmt::Write as _;

use super::rows::{
    error_at, header, policy_lines, rows, schema_total, total_suggestions, truncate, version_lines,
};
use celcost_core::report::ObjectReport;

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
            writeln!(out, "  {}", schema_total(s, "", "")).unwrap();
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
