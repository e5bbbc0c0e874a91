//! Editing: one object's fix recorded in the Go types, the marker lines inserted and the fields
//! around them realigned as gofmt does, and every marker read back where it was put.

use std::collections::BTreeMap;

use celcost_core::estimate::Estimator;
use celcost_core::report::ObjectReport;
use celcost_core::schema::path::{Step, walk_mut};
use serde_json::Value;

use crate::fix::yaml::{TextEdit, apply_edits};
use crate::fix::{FixOptions, FixOutcome, ObjectFix, compare, plan_bounds};
use crate::suggest::{Keyword, Settings};

use super::syntax::{Expr, Field, GoFile, Place};
use super::{DeclRef, GoTypes, Host, NodeType, Placement, Shape, Via, strip_wrappers, syntax};

impl GoTypes {
    /// Records one object's fix in the Go types: the bounds planned with placements checked,
    /// the edits (applied in [`GoTypes::finish`]), and the costs of the CRD the edited types
    /// would generate.
    pub fn fix_object(
        &mut self,
        estimators: &[Estimator],
        found: &celcost_core::input::FoundObject,
        roots: BTreeMap<String, DeclRef>,
        before: Vec<ObjectReport>,
        mut fix: ObjectFix,
        options: &FixOptions,
    ) {
        let (object, source) = (&found.value, found.source.as_str());
        let planned = {
            let me = &*self;
            plan_bounds(estimators, object, source, &options.settings, &mut |b| {
                me.types.place(&roots, b).map(|_| ())
            })
        };
        let bounds = match planned {
            Ok(planned) => fix.record_plan(planned),
            Err(stop) => {
                fix.refused.push(format!("the search stopped: {stop}"));
                compare(&mut fix, estimators, &before, &before, &options.settings);
                self.objects.push((fix, Vec::new()));
                return;
            }
        };
        let mut placed: Vec<Placement> = Vec::new();
        for b in bounds {
            match self.types.place(&roots, &b) {
                Err(why) => fix.refused.push(format!("{}: {why}", b.describe())),
                Ok(ps) => {
                    let mut at = Vec::new();
                    for p in ps {
                        let what = if p.existing.is_empty() {
                            let needs: String =
                                p.requires.iter().map(|r| format!("+{r} ")).collect();
                            format!(
                                "{needs}+{}={} on {}",
                                p.marker,
                                p.value,
                                self.types.host_name(&p.host)
                            )
                        } else {
                            format!(
                                "+{}={} (was {}) on {}",
                                p.marker,
                                p.value,
                                p.existing
                                    .iter()
                                    .map(|e| e.0.to_string())
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                self.types.host_name(&p.host)
                            )
                        };
                        at.push(what);
                        if let Host::Decl(d) = &p.host {
                            let uses = self.types.uses_of(*d);
                            if uses.len() > 1 {
                                let shown: Vec<&str> =
                                    uses.iter().take(6).map(String::as_str).collect();
                                fix.notes.push(format!(
                                    "+{} is on type {}, which bounds every use of it: {} ({}{})",
                                    p.marker,
                                    self.types.decl_name(*d),
                                    uses.len(),
                                    shown.join(", "),
                                    if uses.len() > 6 { ", ..." } else { "" }
                                ));
                            }
                        }
                        placed.push(p);
                    }
                    // A schema per version: the same bound and edit once.
                    let at = at.join("; ");
                    if !fix
                        .bounds
                        .iter()
                        .any(|(x, y)| x.describe() == b.describe() && *y == at)
                    {
                        fix.bounds.push((b, at));
                    }
                }
            }
        }
        // The CRD as the edited types would generate it, estimated by every minor.
        let generated = self.generated(object, &roots, &placed);
        let after: Vec<ObjectReport> = estimators
            .iter()
            .map(|e| e.estimate_crd(&generated, source))
            .collect();
        compare(&mut fix, estimators, &before, &after, &options.settings);
        for p in &placed {
            let (pkg, file) = self.types.host_file(&p.host);
            let key = (pkg, file);
            if let Some(pl) = self.types.host_place(&p.host) {
                self.edits.entry(key).or_default().push((p.clone(), pl));
            }
        }
        self.objects.push((fix, placed));
    }

    /// The CRD with every placement's bound on every node it describes: what controller-gen
    /// would generate from the edited types (the input CRD being generated from these types).
    pub(super) fn generated(
        &self,
        object: &Value,
        roots: &BTreeMap<String, DeclRef>,
        placed: &[Placement],
    ) -> Value {
        let mut out = object.clone();
        let Some(vs) = object.pointer("/spec/versions").and_then(Value::as_array) else {
            return out;
        };
        for (i, v) in vs.iter().enumerate() {
            let Some(root) = v
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| roots.get(n))
            else {
                continue;
            };
            let pointer = format!("/spec/versions/{i}/schema/openAPIV3Schema");
            let Some(schema) = object.pointer(&pointer) else {
                continue;
            };
            let mut hits: Vec<(Vec<Step>, Keyword, i64)> = Vec::new();
            let start = self.types.resolve(
                (root.pkg, root.file),
                &Expr::Named {
                    pkg: None,
                    name: self.types.decl(*root).name.clone(),
                },
            );
            let mut stack: Vec<(Vec<Step>, NodeType, Via, &Value)> =
                vec![(Vec::new(), start, Via::Root, schema)];
            let mut visited = 0usize;
            while let Some((steps, t, via, node)) = stack.pop() {
                visited += 1;
                if visited > 1_000_000 {
                    break;
                }
                for p in placed {
                    let keyword = p.keyword;
                    let is_items = p.marker.contains(":items:");
                    let applies = match (&p.host, is_items, &via) {
                        (Host::Field(f), false, Via::Field(g)) => f == g,
                        (Host::Field(f), true, Via::FieldItems(g, _)) => f == g,
                        (Host::Decl(d), false, _) => t.chain.contains(d),
                        (Host::Decl(d), true, Via::FieldItems(_, list) | Via::Items(list)) => {
                            list.contains(d)
                        }
                        _ => false,
                    };
                    if applies {
                        hits.push((steps.clone(), keyword, p.value));
                    }
                }
                // Children.
                match &t.shape {
                    Shape::Struct { decl, path } => {
                        if let Some(props) = node.get("properties").and_then(Value::as_object) {
                            for (name, child) in props {
                                let Some(f) = self.types.find_field(*decl, path, name) else {
                                    continue;
                                };
                                let Some(ft) = self.types.field_type(&f) else {
                                    continue;
                                };
                                let mut s = steps.clone();
                                s.push(Step::Prop(name.clone()));
                                stack.push((s, ft, Via::Field(f), child));
                            }
                        }
                    }
                    Shape::Slice { elt, ctx, .. } => {
                        if let Some(child) = node.get("items") {
                            let owner = match &via {
                                Via::Field(f) => Some(f.clone()),
                                _ => None,
                            };
                            let ct = self.types.inner_type(elt, *ctx, owner.as_ref());
                            let cv = match owner {
                                Some(f) => Via::FieldItems(f, t.chain.clone()),
                                None => Via::Items(t.chain.clone()),
                            };
                            let mut s = steps.clone();
                            s.push(Step::Items);
                            stack.push((s, ct, cv, child));
                        }
                    }
                    Shape::Map { value, ctx } => {
                        if let Some(child) =
                            node.get("additionalProperties").filter(|c| c.is_object())
                        {
                            let owner = match &via {
                                Via::Field(f) => Some(f.clone()),
                                _ => None,
                            };
                            let ct = self.types.inner_type(value, *ctx, owner.as_ref());
                            let mut s = steps.clone();
                            s.push(Step::Values);
                            stack.push((s, ct, Via::Values, child));
                        }
                    }
                    _ => {}
                }
            }
            for (steps, keyword, value) in hits {
                let Some(root) = out.pointer_mut(&pointer) else {
                    continue;
                };
                if let Some(n) = walk_mut(root, &steps).and_then(Value::as_object_mut) {
                    let now = n.get(keyword.name()).and_then(Value::as_i64);
                    if now.is_none_or(|c| c > value) {
                        n.insert(keyword.name().to_string(), Value::from(value));
                    }
                }
            }
        }
        out
    }

    /// Applies the edits of every object to the files, reads each changed file back and finds
    /// every marker where it was put (a file that does not read back so is not changed, and its
    /// objects say why); hands the files and the objects to the outcome.
    pub fn finish(
        mut self,
        _estimators: &[Estimator],
        _settings: &Settings,
        outcome: &mut FixOutcome,
    ) {
        let mut failed: BTreeMap<(usize, usize), String> = BTreeMap::new();
        for (&(pkg, file), placements) in &self.edits {
            let (path, src, parsed) = &self.types.packages[pkg].files[file];
            match self.file_edits(src, parsed, placements) {
                Err(e) => {
                    failed.insert((pkg, file), format!("{}: {e}", path.display()));
                }
                Ok(edits) => {
                    let after = match apply_edits(src, &edits) {
                        Ok(t) => t,
                        Err(e) => {
                            failed.insert((pkg, file), format!("{}: {e}", path.display()));
                            continue;
                        }
                    };
                    if let Err(e) = self.read_back(&after, parsed, placements) {
                        failed.insert(
                            (pkg, file),
                            format!(
                                "{}: the edited file does not read back: {e}",
                                path.display()
                            ),
                        );
                        continue;
                    }
                    if after != *src {
                        outcome.files.push(crate::fix::FileChange {
                            path: path.clone(),
                            before: src.clone(),
                            after,
                        });
                    }
                }
            }
        }
        let objects = std::mem::take(&mut self.objects);
        for (mut fix, placed) in objects {
            for p in &placed {
                if let Some(why) = failed.get(&self.types.host_file(&p.host))
                    && !fix.refused.contains(why)
                {
                    fix.refused.push(why.clone());
                }
                // A field or type another CRD bounds lower: the marker carries the lowest.
                let lowest = self
                    .edits
                    .get(&self.types.host_file(&p.host))
                    .into_iter()
                    .flatten()
                    .filter(|(q, _)| q.host == p.host && q.marker == p.marker)
                    .map(|(q, _)| q.value)
                    .min();
                if let Some(v) = lowest
                    && v < p.value
                {
                    let n = format!(
                        "+{}={} on {} is shared with another CRD fixed in this run, which needs {v}: the marker carries {v}, and this CRD gets that lower bound when generated",
                        p.marker,
                        p.value,
                        self.types.host_name(&p.host)
                    );
                    if !fix.notes.contains(&n) {
                        fix.notes.push(n);
                    }
                }
            }
            outcome.objects.push(fix);
        }
    }

    /// The text edits of one file: each marker added above its host (the lowest value where
    /// several bounds add the same marker) or lowered where it is, and the fields around an
    /// added line aligned again as gofmt would.
    pub(super) fn file_edits(
        &self,
        src: &str,
        parsed: &GoFile,
        placements: &[(Placement, Place)],
    ) -> Result<Vec<TextEdit>, String> {
        // Lowered values: (start, end) → value.
        let mut lower: BTreeMap<(usize, usize), i64> = BTreeMap::new();
        // Added markers: (line start, marker) → (indent, value, line, markers it needs).
        let mut add: BTreeMap<(usize, String), AddedMarker> = BTreeMap::new();
        for (p, pl) in placements {
            if p.existing.is_empty() {
                let e = add.entry((pl.line_start, p.marker.clone())).or_insert((
                    pl.indent.clone(),
                    p.value,
                    pl.line,
                    Vec::new(),
                ));
                e.1 = e.1.min(p.value);
                for r in &p.requires {
                    if !e.3.contains(r) {
                        e.3.push(r.clone());
                    }
                }
            } else {
                for &(v, s, e) in &p.existing {
                    if v > p.value {
                        let x = lower.entry((s, e)).or_insert(p.value);
                        *x = (*x).min(p.value);
                    }
                }
            }
        }
        let mut edits: Vec<TextEdit> = lower
            .into_iter()
            .map(|((s, e), v)| TextEdit {
                start: s,
                end: e,
                text: v.to_string(),
            })
            .collect();
        // Lines above which a comment line is inserted.
        let mut split_lines: Vec<u32> = Vec::new();
        // Markers a line needs, written once above the first marker there that needs them.
        let mut required_at: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for ((at, marker), (indent, value, line, requires)) in add {
            let written = required_at.entry(at).or_default();
            let mut text = String::new();
            for r in requires {
                if !written.contains(&r) {
                    text.push_str(&format!("{indent}// +{r}\n"));
                    written.push(r);
                }
            }
            text.push_str(&format!("{indent}// +{marker}={value}\n"));
            edits.push(TextEdit {
                start: at,
                end: at,
                text,
            });
            split_lines.push(line);
        }
        split_lines.sort();
        split_lines.dedup();
        edits.extend(realign(src, parsed, &split_lines)?);
        Ok(edits)
    }

    /// Reads an edited file again and finds every placement's marker with its value.
    pub(super) fn read_back(
        &self,
        after: &str,
        before: &GoFile,
        placements: &[(Placement, Place)],
    ) -> Result<(), String> {
        let parsed = syntax::parse(after)?;
        if parsed.decls.len() != before.decls.len() {
            return Err("its type declarations changed".into());
        }
        for (p, _) in placements {
            let (decl_idx, line) = match &p.host {
                Host::Decl(d) => (d.decl, parsed.decls[d.decl].place.line),
                Host::Field(f) => {
                    let mut e = &parsed.decls[f.decl.decl].expr;
                    let mut field = None;
                    for &i in &f.path {
                        let Expr::Struct(fs) = strip_wrappers(e) else {
                            return Err("a struct changed".into());
                        };
                        let x = fs.get(i).ok_or("a field is gone")?;
                        field = Some(x);
                        e = &x.expr;
                    }
                    (f.decl.decl, field.ok_or("a field is gone")?.place.line)
                }
            };
            if parsed.decls[decl_idx].name != before.decls[decl_idx].name {
                return Err("its type declarations changed".into());
            }
            let found = parsed
                .markers(after, line)
                .into_iter()
                .filter(|m| m.name == p.marker)
                .filter_map(|m| m.value.parse::<i64>().ok())
                .collect::<Vec<_>>();
            if found.is_empty() || found.iter().any(|&v| v > p.value) {
                return Err(format!(
                    "+{} is not found with {} or less",
                    p.marker, p.value
                ));
            }
            let markers = parsed.markers(after, line);
            for r in &p.requires {
                let (name, value) = r.split_once('=').unwrap_or((r.as_str(), ""));
                if !markers.iter().any(|m| m.name == name && m.value == value) {
                    return Err(format!("+{r} is not found"));
                }
            }
        }
        Ok(())
    }
}

/// A marker line to add: its indentation, value, the host's line, and the markers it needs.
pub(super) type AddedMarker = (String, i64, u32, Vec<String>);

/// One line of a struct's fields as gofmt lays it out: its cells (name, type, tag, comment).
pub(super) struct Row {
    pub(super) line: u32,
    pub(super) indent: String,
    pub(super) cells: Vec<String>,
}

/// The rows of fields on consecutive lines around each split line (a field above which a
/// comment line is inserted), re-laid out as gofmt lays them out once the comment line splits
/// them: each part aligned on its own. Returns edits replacing the lines that change.
pub(super) fn realign(
    src: &str,
    parsed: &GoFile,
    split_lines: &[u32],
) -> Result<Vec<TextEdit>, String> {
    if split_lines.is_empty() {
        return Ok(Vec::new());
    }
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    // Every struct's fields, in order.
    let mut structs: Vec<&[Field]> = Vec::new();
    fn collect<'a>(e: &'a Expr, out: &mut Vec<&'a [Field]>) {
        match e {
            Expr::Struct(fs) => {
                out.push(fs);
                for f in fs {
                    collect(&f.expr, out);
                }
            }
            Expr::Pointer(x) | Expr::Slice(x) => collect(x, out),
            Expr::Map(k, v) => {
                collect(k, out);
                collect(v, out);
            }
            _ => {}
        }
    }
    for d in &parsed.decls {
        collect(&d.expr, &mut structs);
    }
    let mut edits = Vec::new();
    for fields in structs {
        // Runs of one-line fields on consecutive lines (no comment or blank line between).
        let mut runs: Vec<Vec<&Field>> = Vec::new();
        for f in fields {
            let one_line = f.place.line == f.end_line && f.place.own_line;
            match runs.last_mut() {
                Some(r)
                    if one_line
                        && r.last().is_some_and(|p| {
                            p.end_line + 1 == f.place.line && p.place.line == p.end_line
                        }) =>
                {
                    r.push(f)
                }
                _ => runs.push(vec![f]),
            }
        }
        for run in runs {
            if !run
                .iter()
                .skip(1)
                .any(|f| split_lines.contains(&f.place.line))
            {
                continue;
            }
            let rows: Vec<Row> = run
                .iter()
                .map(|f| row(src, parsed, f))
                .collect::<Result<_, _>>()?;
            // Every split inside the run.
            let mut cuts: Vec<usize> = (1..run.len())
                .filter(|&i| split_lines.contains(&run[i].place.line))
                .collect();
            cuts.push(run.len());
            let mut from = 0;
            for cut in cuts {
                for (r, text) in layout(&rows[from..cut]) {
                    let s = line_starts[(r.line - 1) as usize];
                    let e = line_starts
                        .get(r.line as usize)
                        .map_or(src.len(), |&e| e - 1)
                        .max(s);
                    let old = &src[s..e];
                    let old = old.strip_suffix('\r').unwrap_or(old);
                    if old != text {
                        edits.push(TextEdit {
                            start: s,
                            end: s + old.len(),
                            text,
                        });
                    }
                }
                from = cut;
            }
        }
    }
    Ok(edits)
}

/// A field's cells as gofmt separates them.
pub(super) fn row(src: &str, parsed: &GoFile, f: &Field) -> Result<Row, String> {
    let mut cells = Vec::new();
    if !f.names.is_empty() {
        cells.push(f.names.join(", "));
    }
    cells.push(src[f.type_span.0..f.type_span.1].to_string());
    if let Some((s, e)) = f.tag_span {
        cells.push(src[s..e].to_string());
    }
    if let Some(c) = parsed
        .comments
        .iter()
        .find(|c| c.line == f.end_line && c.start >= f.end)
    {
        cells.push(src[c.start..c.end].to_string());
    }
    if cells.iter().any(|c| c.contains('\n')) {
        return Err(format!("line {}: a field spans lines", f.place.line));
    }
    Ok(Row {
        line: f.place.line,
        indent: f.place.indent.clone(),
        cells,
    })
}

/// The lines of rows aligned as a tabwriter with padding 1 aligns tab-terminated cells: a
/// column is every cell but each line's last, its width the widest in each block of
/// consecutive lines that have it.
pub(super) fn layout(rows: &[Row]) -> Vec<(&Row, String)> {
    let n = rows.len();
    let ncols = rows.iter().map(|r| r.cells.len()).max().unwrap_or(0);
    let mut width = vec![vec![0usize; ncols]; n];
    for c in 0..ncols {
        let mut i = 0;
        while i < n {
            if rows[i].cells.len() <= c + 1 {
                i += 1;
                continue;
            }
            let start = i;
            let mut w = 0;
            while i < n && rows[i].cells.len() > c + 1 {
                w = w.max(rows[i].cells[c].chars().count());
                i += 1;
            }
            for row_w in width.iter_mut().take(i).skip(start) {
                row_w[c] = w + 1;
            }
        }
    }
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let mut s = r.indent.clone();
            for (c, cell) in r.cells.iter().enumerate() {
                s.push_str(cell);
                if c + 1 < r.cells.len() {
                    let pad = width[i][c].saturating_sub(cell.chars().count());
                    s.push_str(&" ".repeat(pad));
                }
            }
            (r, s)
        })
        .collect()
}
