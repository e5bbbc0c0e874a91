//! `celcost diff`: the comparison of two versions of the same manifests ([`crate::diff`]) as JSON
//! lines, a table and Markdown.

use std::fmt::Write as _;

use crate::diff::ObjectDiff;
use crate::report::format::{num, percent};

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
pub fn render_diff_json(d: &[ObjectDiff]) -> String {
    let mut out = String::new();
    for o in d {
        out.push_str(&serde_json::to_string(o).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// The diff for people: changed objects, their verdicts, and each unit's before → after.
pub fn render_diff_table(d: &[ObjectDiff]) -> String {
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
pub fn render_diff_markdown(d: &[ObjectDiff]) -> String {
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
