//! `celcost diff`: the comparison of two versions of the same manifests ([`celcost_core::diff`]) as JSON
//! lines, a table and Markdown, with the update verdicts of the CRDs in both (BASE as the
//! cluster stores it).

use std::fmt::Write as _;

use celcost_core::diff::ObjectDiff;
use celcost_core::report::UpdateVerdict;
use celcost_core::report::format::{num, percent};

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
    super::json::render_json(d)
}

fn update_word(u: &UpdateVerdict) -> &'static str {
    match (u.valid, &u.stopped) {
        (_, Some(_)) => "NOT JUDGED",
        (true, None) => "accepted",
        (false, None) => "REFUSED",
    }
}

/// Whether an object's update verdict is worth showing when nothing else about it changed: the
/// update is refused, or it is accepted while a create is not (the stored object escapes the
/// per-expression limit).
fn update_worth_showing(o: &ObjectDiff) -> bool {
    o.update
        .as_ref()
        .is_some_and(|u| !u.valid || Some(u.valid) != o.valid_after)
}

/// What an update verdict says beyond its word, one line each: why an accepted update passes
/// where a create would not, or the API server's errors.
pub fn update_lines(u: &UpdateVerdict) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(st) = &u.stopped {
        out.push(format!("not judged: {}", st.message));
        return out;
    }
    if u.valid {
        for h in &u.held {
            out.push(format!(
                "held by the unchanged schema of {}: {} [{}] {} costs {} = {} of the per-expression limit; an update that changes that schema is refused until it fits",
                h.versions.join(", "),
                h.path,
                h.index,
                h.what,
                num(h.cost),
                percent(h.cost, celcost_core::report::PER_RULE_COST_LIMIT)
            ));
        }
    } else {
        out.extend(u.errors.iter().cloned());
    }
    for s in &u.stored_only {
        out.push(format!(
            "compiles only because the stored object has it: {} ({})",
            s.field_path, s.compile_error
        ));
    }
    out
}

/// The diff for people: changed objects, their verdicts, and each unit's before → after; and
/// the objects whose update of BASE the API server refuses, or accepts where it refuses HEAD on
/// create.
pub fn render_diff_table(d: &[ObjectDiff]) -> String {
    let mut out = String::new();
    for o in d
        .iter()
        .filter(|o| o.change != "unchanged" || update_worth_showing(o) || !o.causes.is_empty())
    {
        let update = o
            .update
            .as_ref()
            .map(|u| format!("; update of BASE: {}", update_word(u)))
            .unwrap_or_default();
        writeln!(
            out,
            "{} {} — {}: {} → {}{update}",
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
        if let Some(u) = &o.update {
            for l in update_lines(u) {
                writeln!(out, "  update: {l}").unwrap();
            }
        }
        for c in &o.causes {
            writeln!(out, "  because {}", c.text()).unwrap();
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
    let updates: Vec<_> = d
        .iter()
        .filter(|o| o.update.is_some() && (o.change != "unchanged" || update_worth_showing(o)))
        .collect();
    if changed.is_empty() {
        out.push_str("No estimated cost changes.\n");
        update_section(&mut out, &updates);
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
    for o in &changed {
        let texts: Vec<String> = o.causes.iter().map(|c| c.text()).collect();
        if !texts.is_empty() {
            writeln!(
                out,
                "\n{} `{}` differs from the newest minor because {}",
                o.kind,
                esc(&o.name),
                esc(&texts.join("; "))
            )
            .unwrap();
        }
    }
    let unchanged = d.len() - changed.len();
    writeln!(out, "\n{unchanged} objects unchanged.").unwrap();
    update_section(&mut out, &updates);
    out
}

/// The update verdicts of the Markdown: per object, create and update side by side, and why.
fn update_section(out: &mut String, updates: &[&ObjectDiff]) {
    if updates.is_empty() {
        return;
    }
    out.push_str(
        "\n#### Applied over BASE (as the cluster stores it)\n\n| object | create | update of BASE |\n|---|---|---|\n",
    );
    for o in updates {
        let Some(u) = &o.update else { continue };
        let word = update_word(u);
        let word = if u.valid {
            word.to_string()
        } else {
            format!("**{word}**")
        };
        writeln!(
            out,
            "| {} `{}` | {} | {} |",
            o.kind,
            o.name.replace('|', "\\|"),
            verdict_word(o.valid_after),
            word
        )
        .unwrap();
    }
    out.push('\n');
    for o in updates {
        let Some(u) = &o.update else { continue };
        let lines = update_lines(u);
        if lines.is_empty() {
            continue;
        }
        writeln!(out, "`{}`:", o.name).unwrap();
        for l in lines {
            writeln!(out, "- {}", l.replace('|', "\\|")).unwrap();
        }
        out.push('\n');
    }
}

/// `10M`, `100M`, `1M`.
fn short_limit(limit: u64) -> String {
    if limit.is_multiple_of(1_000_000) {
        format!("{}M", limit / 1_000_000)
    } else {
        num(limit)
    }
}
