//! `celcost headroom`'s table and markdown (its JSON is [`super::json::render_json`] of the
//! same [`ObjectHeadroom`]s): per node, its bound now, the largest value every minor accepts,
//! and what refuses one more.

use std::fmt::Write as _;

use celcost_core::report::format::num;

use crate::suggest::{Headroom, ObjectHeadroom};

const HEADS: [&str; 5] = ["PATH", "KEYWORD", "CURRENT", "MAX", "LIMITED BY (AT MAX+1)"];

/// The cells of one node's line.
fn cells(b: &Headroom) -> [String; 5] {
    let current = b.current.map_or_else(|| "none".to_string(), num_i64);
    let max = match b.max {
        None => "any".to_string(),
        Some(m) if m < 0 => "none (refused at 0)".to_string(),
        Some(m) if b.current.is_some_and(|c| m < c) => {
            format!("{} (below current: refused now)", num_i64(m))
        }
        Some(m) => num_i64(m),
    };
    let limited = match &b.limited_by {
        None => "-".to_string(),
        Some(l) => {
            let what = match l.index {
                Some(i) => format!("rule {}[{i}]", l.path),
                None => format!("total of {}", l.path),
            };
            format!(
                "{what} on {}: cost {}",
                l.kubernetes_version,
                num(l.cost_at_max_plus_one)
            )
        }
    };
    [
        b.path.clone(),
        b.keyword.name().to_string(),
        current,
        max,
        limited,
    ]
}

fn num_i64(v: i64) -> String {
    if v < 0 {
        format!("-{}", num(v.unsigned_abs()))
    } else {
        num(v as u64)
    }
}

fn title(o: &ObjectHeadroom) -> String {
    format!(
        "{}: {} {} (Kubernetes {})",
        o.source,
        o.kind,
        o.name,
        o.kubernetes_versions.join(", ")
    )
}

/// Plain-text tables, one per schema.
pub fn render_headroom_table(objects: &[ObjectHeadroom]) -> String {
    let mut out = String::new();
    for o in objects {
        writeln!(out, "{}", title(o)).unwrap();
        if let Some(n) = &o.note {
            writeln!(out, "  note: {n}").unwrap();
        }
        for s in &o.schemas {
            writeln!(out, "  versions {}:", s.versions.join(", ")).unwrap();
            if s.bounds.is_empty() {
                writeln!(out, "    no bound that a rule or total depends on").unwrap();
                continue;
            }
            let rows: Vec<[String; 5]> = s.bounds.iter().map(cells).collect();
            let mut widths = HEADS.map(|h| h.chars().count());
            for r in &rows {
                for (w, c) in widths.iter_mut().zip(r) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let line = |cells: &[String]| {
                let mut l = String::from("   ");
                for (i, c) in cells.iter().enumerate() {
                    if i + 1 == cells.len() {
                        write!(l, " {c}").unwrap();
                    } else {
                        write!(l, " {c:<w$}", w = widths[i]).unwrap();
                    }
                }
                l
            };
            writeln!(out, "{}", line(&HEADS.map(String::from))).unwrap();
            for r in &rows {
                writeln!(out, "{}", line(r)).unwrap();
            }
        }
    }
    out
}

fn md(c: &str) -> String {
    c.replace('|', "\\|")
}

/// Markdown: a heading per object, a table per schema.
pub fn render_headroom_markdown(objects: &[ObjectHeadroom]) -> String {
    let mut out = String::new();
    for o in objects {
        writeln!(out, "### {}\n", md(&title(o))).unwrap();
        if let Some(n) = &o.note {
            writeln!(out, "_{}_\n", md(n)).unwrap();
        }
        for s in &o.schemas {
            writeln!(out, "Versions {}:\n", md(&s.versions.join(", "))).unwrap();
            if s.bounds.is_empty() {
                writeln!(out, "No bound that a rule or total depends on.\n").unwrap();
                continue;
            }
            writeln!(out, "| {} |", HEADS.join(" | ")).unwrap();
            writeln!(out, "|{}", "---|".repeat(HEADS.len())).unwrap();
            for b in &s.bounds {
                let [p, k, cur, max, lim] = cells(b).map(|c| md(&c));
                writeln!(out, "| `{p}` | {k} | {cur} | {max} | {lim} |").unwrap();
            }
            out.push('\n');
        }
    }
    out
}
