//! The layers inside each crate of the workspace. Cargo holds the layers *between* the crates
//! (`celcost-core` ← `celcost-advice` ← `celcost-operator` ← `celcost`: each depends only on
//! those before it, docs/architecture.md); this test holds those *inside* a crate: each
//! top-level module of a crate imports only from the layers below it, and from the few modules
//! of its own layer the table names. The test reads each crate's `src/` (every `crate::…` path:
//! `use` declarations and paths inline, and `super::` paths that climb out of a top-level
//! module) and fails on an import outside the table, on a circle, and on a module the table does
//! not place. In the operator it also reads which module (file) imports which, across the
//! folders, and fails on a circle among them. Test code (`#[cfg(test)]` items, `tests.rs` files)
//! may use any layer. It also checks that the estimator's crate links no cluster client.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate of the workspace and its layers, lowest first: a module may import any module of a
/// lower layer, and of its own layer where `same_layer` says so (importer, imported).
struct Crate {
    name: &'static str,
    /// Its `src/`, from the workspace's root.
    src: &'static str,
    layers: &'static [(&'static str, &'static [&'static str])],
    same_layer: &'static [(&'static str, &'static str)],
}

const CRATES: &[Crate] = &[
    Crate {
        name: "celcost-core",
        src: "crates/celcost-core/src",
        layers: &[
            // Work budgets, Go regexps, YAML input with positions; the objects tests wrap
            // their cases in.
            (
                "base",
                &["budget", "goregexp", "positions", "input", "fixtures"],
            ),
            ("cel", &["cel"]),
            ("schemas", &["schema"]),
            // The report model, its limits, the shared constants and number formatting (it
            // names the minor a report was made by: `cel::minor`).
            ("report", &["report"]),
            ("objects", &["crd", "vap"]),
            // Pure: no advice, no rendering.
            ("estimate", &["estimate", "diff", "locate"]),
        ],
        same_layer: &[
            ("input", "positions"),
            ("vap", "crd"),
            ("locate", "input"),
            ("locate", "positions"),
        ],
    },
    Crate {
        name: "celcost-advice",
        src: "crates/celcost-advice/src",
        layers: &[
            ("advice", &["suggest", "rewrite", "fix"]),
            ("output", &["output"]),
        ],
        // `celcost fix` writes the bounds the suggestions found.
        same_layer: &[("fix", "suggest")],
    },
    Crate {
        name: "celcost-operator",
        src: "crates/celcost-operator/src",
        layers: OPERATOR_LAYERS,
        same_layer: &[],
    },
    Crate {
        name: "celcost",
        src: "src",
        layers: &[("front ends", &["cli", "fuzzing"])],
        // The fuzz targets' bodies drive the command line's path.
        same_layer: &[("fuzzing", "cli")],
    },
];

/// The layers of the operator's crate, lowest first: each folder imports only from lower ones
/// (and from the crates below the operator).
const OPERATOR_LAYERS: &[(&str, &[&str])] = &[
    // Retry delays, errors, logs, the `CostReport` custom resource.
    ("shared", &["backoff", "error", "telemetry", "resource"]),
    // Leader election; watches, the admin server and metrics.
    ("running", &["leader", "serve"]),
    // One `CostReport` per target: the reconciles, what they share, the report's status.
    ("reports", &["reports"]),
    // The admission webhook, its warnings (from the reports' status) and certificates.
    ("webhook", &["webhook"]),
];

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn src_of(krate: &Crate) -> PathBuf {
    workspace().join(krate.src)
}

fn operator() -> &'static Crate {
    CRATES
        .iter()
        .find(|c| c.name == "celcost-operator")
        .unwrap()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file under `src/`: `cel/decls.rs` → `[cel, decls]`, `cel/mod.rs` →
/// `[cel]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    // A crate's root (`lib.rs`, `main.rs`) is the empty path.
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return parts;
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The text without comments and string literals (so that prose naming `crate::x` is not an
/// import).
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            // A raw string (`r"…"`, `r#"…"#`) ends at its quote and hashes; a string at an
            // unescaped quote.
            let hashes = text[..i].chars().rev().take_while(|&c| c == '#').count();
            let raw = text[..i - hashes].ends_with('r');
            i += 1;
            while i < b.len() {
                if !raw && b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == b'"' && b[i + 1..].iter().take(hashes).all(|&c| c == b'#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            // A char literal (`'"'`, `'\''`, `'…'`) is blanked; a lifetime passes through.
            let c = text[i + 1..].chars().next().unwrap_or(' ');
            let after = i + 1 + c.len_utf8();
            if c == '\\' {
                let end = b[after + 1..].iter().position(|&c| c == b'\'').unwrap() + after + 2;
                out.push_str("' '");
                i = end;
            } else if b.get(after) == Some(&b'\'') {
                out.push_str("' '");
                i = after + 1;
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The code without its `#[cfg(test)]` items.
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        // The item ends at `;` before any brace, or at the brace that closes its first one.
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segment of each path of a `use` tree after `crate::`: `a::b` → `a`,
/// `{a::b, c}` → `a`, `c`.
fn first_segments(after: &str) -> Vec<String> {
    let after = after.trim_start();
    if let Some(inner) = after.strip_prefix('{') {
        let mut depth = 0usize;
        let mut parts = Vec::new();
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    parts.push(&inner[start..i]);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&inner[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts
            .into_iter()
            .map(|p| ident_at(p.trim()).to_string())
            .filter(|s| !s.is_empty() && s != "self")
            .collect()
    } else {
        vec![ident_at(after).to_string()]
    }
}

/// The paths a file's code names, each resolved from the crate's root: `crate::a::b` and
/// `super::super::a` (from a file two modules deep) both give `a::…`; a path that stays within
/// the file's own top-level module is left out. Returns `(first segment, second segment)`.
fn crate_paths(code: &str, module: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let boundary = |i: usize| {
        i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':')
    };
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        if (rest.starts_with("crate::") || rest.starts_with("$crate::")) && boundary(i) {
            let after = &rest[rest.find("::").unwrap() + 2..];
            for first in first_segments(after) {
                let second = after
                    .strip_prefix(first.as_str())
                    .and_then(|s| s.strip_prefix("::"))
                    .map(|s| ident_at(s).to_string())
                    .unwrap_or_default();
                out.push((first, second));
            }
            i += 7;
        } else if rest.starts_with("super::") && boundary(i) {
            let mut ups = 0;
            let mut s = rest;
            while let Some(t) = s.strip_prefix("super::") {
                ups += 1;
                s = t;
            }
            if ups >= module.len() {
                // Out of the top-level module: what follows is a path from the crate's root.
                for first in first_segments(s) {
                    out.push((first, String::new()));
                }
            } else if module.len() >= 2 && ups == module.len() - 1 {
                // To the top-level module itself: `super::x` from `controller/a.rs`.
                for first in first_segments(s) {
                    out.push((module[0].clone(), first));
                }
            }
            i += 7 * ups;
        } else {
            i += rest.chars().next().unwrap().len_utf8();
        }
    }
    out
}

/// The crate root's re-exports (`pub use estimate::Estimator;` → `Estimator` → `estimate`).
fn root_aliases(krate: &Crate) -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(src_of(krate).join("lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    // Only the root's own `pub use` lines (not those of the modules inlined in it).
    for line in lib.lines() {
        if let Some(path) = line.strip_prefix("pub use ") {
            let path = path.trim_end_matches(';');
            let module = ident_at(path).to_string();
            let name = path.rsplit("::").next().unwrap().to_string();
            out.insert(name, module);
        }
    }
    out
}

/// The top-level modules a crate's `lib.rs` declares.
fn declared_modules(krate: &Crate) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src_of(krate).join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

/// Every import between top-level modules: (importer, imported) → the files that import.
fn imports(krate: &Crate) -> BTreeMap<(String, String), BTreeSet<String>> {
    let root = src_of(krate);
    let aliases = root_aliases(krate);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut out: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_path_buf();
        let module = module_path(&rel);
        if module.is_empty() {
            continue;
        }
        if module.last().is_some_and(|m| m == "tests") {
            continue;
        }
        let code = without_tests(&code_of(&std::fs::read_to_string(&f).unwrap()));
        for (first, _) in crate_paths(&code, &module) {
            let target = aliases.get(&first).cloned().unwrap_or(first);
            if target != module[0] {
                out.entry((module[0].clone(), target))
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    out
}

/// Every path of a `use` tree, or of a path inline, as its segments: `a::{b::C, d}` →
/// `[a, b, C]`, `[a, d]`; `a::b::f(` → `[a, b, f]`.
fn tree_paths(text: &str) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    let mut rest = text.trim_start();
    loop {
        if let Some(inner) = rest.strip_prefix('{') {
            // A group: split at its top-level commas, each a tree under what came before.
            let mut depth = 0usize;
            let mut start = 0;
            let mut out = Vec::new();
            for (i, c) in inner.char_indices() {
                let end = match c {
                    '{' => {
                        depth += 1;
                        false
                    }
                    '}' if depth == 0 => true,
                    '}' => {
                        depth -= 1;
                        false
                    }
                    ',' if depth == 0 => true,
                    _ => false,
                };
                if end {
                    for mut tail in tree_paths(&inner[start..i]) {
                        if tail.first().is_some_and(|t| t == "self") {
                            tail.remove(0);
                        }
                        let mut full = segs.clone();
                        full.extend(tail);
                        out.push(full);
                    }
                    start = i + 1;
                    if c == '}' {
                        break;
                    }
                }
            }
            return out;
        }
        let id = ident_at(rest);
        if id.is_empty() {
            break;
        }
        segs.push(id.to_string());
        match rest[id.len()..].trim_start().strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    if segs.is_empty() {
        Vec::new()
    } else {
        vec![segs]
    }
}

/// The modules of the files `files` (module path from the crate's root, the file's code)
/// import, each as the module (a file) a path lands in: `crate::`, `super::` and `self::`
/// paths, and in a module with submodules the paths that start with one of them (`reports::x`
/// in `controller/mod.rs`). Paths into the file's own module are left out; so is test code.
fn module_imports(files: &[(Vec<String>, String)]) -> BTreeSet<(String, String)> {
    let known: BTreeSet<&[String]> = files.iter().map(|(m, _)| m.as_slice()).collect();
    let mut edges = BTreeSet::new();
    for (module, code) in files {
        let children: Vec<&str> = known
            .iter()
            .filter(|k| k.len() == module.len() + 1 && k.starts_with(module))
            .map(|k| k[module.len()].as_str())
            .collect();
        let bytes = code.as_bytes();
        let boundary = |i: usize| {
            i == 0
                || !(bytes[i - 1].is_ascii_alphanumeric()
                    || bytes[i - 1] == b'_'
                    || bytes[i - 1] == b':'
                    || bytes[i - 1] == b'$')
        };
        let mut i = 0;
        while i < code.len() {
            let rest = &code[i..];
            if !boundary(i) || !rest.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                i += rest.chars().next().unwrap().len_utf8();
                continue;
            }
            let id = ident_at(rest);
            let base: Option<(Vec<String>, &str)> = match id {
                "crate" => rest.strip_prefix("crate::").map(|r| (Vec::new(), r)),
                "self" => rest.strip_prefix("self::").map(|r| (module.clone(), r)),
                "super" => {
                    let mut ups = 0;
                    let mut r = rest;
                    while let Some(t) = r.strip_prefix("super::") {
                        ups += 1;
                        r = t;
                    }
                    (ups > 0 && ups <= module.len())
                        .then(|| (module[..module.len() - ups].to_vec(), r))
                }
                c if children.contains(&c) && rest[c.len()..].starts_with("::") => {
                    Some((module.clone(), rest))
                }
                _ => None,
            };
            let Some((base, after)) = base else {
                i += id.len().max(1);
                continue;
            };
            for tail in tree_paths(after) {
                let mut full = base.clone();
                full.extend(tail);
                // The module (a file) the path lands in: its longest known prefix.
                let to = (1..=full.len())
                    .rev()
                    .map(|n| &full[..n])
                    .find(|p| known.contains(p));
                if let Some(to) = to
                    && to != module.as_slice()
                {
                    edges.insert((module.join("::"), to.join("::")));
                }
            }
            i += (rest.len() - after.len()).max(id.len());
        }
    }
    edges
}

/// The operator's files as [`module_imports`] reads them (test files left out).
fn operator_files() -> Vec<(Vec<String>, String)> {
    let root = src_of(operator());
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files
        .into_iter()
        .filter_map(|f| {
            let module = module_path(f.strip_prefix(&root).unwrap());
            if module.last().is_some_and(|m| m == "tests") {
                return None;
            }
            let code = without_tests(&code_of(&std::fs::read_to_string(&f).unwrap()));
            Some((module, code))
        })
        .collect()
}

fn layer_of(layers: &[(&str, &[&str])], m: &str) -> Option<usize> {
    layers.iter().position(|(_, ms)| ms.contains(&m))
}

/// A circle in the graph, if there is one.
fn circle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeSet<(String, String)>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|s| s == n) {
            let mut c = stack[at..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for (_, to) in edges.iter().filter(|(from, _)| from == n) {
            if let Some(c) = visit(to, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for (from, _) in edges {
        if let Some(c) = visit(from, edges, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

#[test]
fn every_module_has_a_layer() {
    for krate in CRATES {
        let placed: BTreeSet<String> = krate
            .layers
            .iter()
            .flat_map(|(_, ms)| ms.iter().map(|m| m.to_string()))
            .collect();
        assert_eq!(
            declared_modules(krate),
            placed,
            "{}'s modules (its lib.rs) and its layers in tests/it/layers.rs differ: place every \
             module in one layer",
            krate.name
        );
    }
}

#[test]
fn imports_follow_the_layers() {
    for krate in CRATES {
        let mut wrong = Vec::new();
        let mut edges = BTreeSet::new();
        for ((from, to), files) in imports(krate) {
            let (Some(lf), Some(lt)) = (layer_of(krate.layers, &from), layer_of(krate.layers, &to))
            else {
                wrong.push(format!(
                    "{from} → {to}: a module without a layer ({files:?})"
                ));
                continue;
            };
            let allowed = lt < lf || krate.same_layer.contains(&(from.as_str(), to.as_str()));
            if !allowed {
                wrong.push(format!(
                    "{from} ({}) → {to} ({}) in {}",
                    krate.layers[lf].0,
                    krate.layers[lt].0,
                    files.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
            edges.insert((from, to));
        }
        assert!(
            wrong.is_empty(),
            "{}: imports outside the layers (tests/it/layers.rs):\n  {}",
            krate.name,
            wrong.join("\n  ")
        );
        assert_eq!(
            circle(&edges),
            None,
            "{}: a circle between top-level modules",
            krate.name
        );
    }
}

#[test]
fn the_layers_see_imports() {
    // The reader finds the imports the tables are about: a table that matched nothing would pass
    // whatever the code does.
    let core = imports(&CRATES[0]);
    for edge in [("crd", "cel"), ("estimate", "crd"), ("vap", "crd")] {
        assert!(
            core.contains_key(&(edge.0.to_string(), edge.1.to_string())),
            "{edge:?} not seen in celcost-core"
        );
    }
    let ops = imports(operator());
    for edge in [
        ("reports", "resource"),
        ("webhook", "reports"),
        ("serve", "backoff"),
    ] {
        assert!(
            ops.contains_key(&(edge.0.to_string(), edge.1.to_string())),
            "{edge:?} not seen in celcost-operator: {:?}",
            ops.keys().collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_estimator_links_no_cluster_client() {
    // `celcost-core` is the pure library: no cluster client, no runtime, no server.
    let manifest =
        std::fs::read_to_string(workspace().join("crates/celcost-core/Cargo.toml")).unwrap();
    let deps: BTreeSet<&str> = manifest
        .lines()
        .filter_map(|l| l.split(['.', ' ', '=']).next())
        .filter(|n| !n.is_empty() && !n.starts_with(['#', '[']))
        .collect();
    assert!(deps.contains("serde_json"), "the reader found {deps:?}");
    for client in [
        "kube",
        "kube-runtime",
        "tokio",
        "hyper",
        "axum",
        "tower",
        "rustls",
    ] {
        assert!(
            !deps.contains(client),
            "celcost-core depends on {client}: the estimator is a pure library"
        );
    }
}

#[test]
fn no_circle_between_the_operators_modules() {
    let files = operator_files();
    assert!(files.len() > 20, "{} files", files.len());
    let edges = module_imports(&files);
    // The reader sees across the folders.
    for edge in [
        ("reports::status", "reports::stored"),
        ("webhook::warnings", "resource"),
        ("reports::reconcile", "reports::status"),
    ] {
        assert!(
            edges.contains(&(edge.0.to_string(), edge.1.to_string())),
            "{edge:?} not seen among {edges:?}"
        );
    }
    if let Some(c) = circle(&edges) {
        panic!(
            "a circle of imports between the operator's modules: {}",
            c.join(" → ")
        );
    }
}

#[test]
fn the_circle_finder_finds_circles() {
    let edges = |e: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        e.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    assert_eq!(circle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    assert_eq!(
        circle(&edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    // The shape of the old status.rs ↔ stored.rs: helpers imported one way, a function the
    // other, inline.
    let m = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    let old = [
        (
            m("controller::reports::status"),
            code_of(
                "use crate::controller::resource::{A, cap};\nfn f() { super::stored::update_status(x) }",
            ),
        ),
        (
            m("controller::reports::stored"),
            code_of("use super::status::{cap, percent, thousands, truncate};"),
        ),
        (
            m("controller::reports"),
            code_of("pub mod status;\npub mod stored;"),
        ),
        (m("controller::resource"), String::new()),
        (
            m("controller"),
            code_of("use reports::stored::X;\nfn g() { self::resource::cap(1) }"),
        ),
    ];
    let got = module_imports(&old);
    assert_eq!(
        got,
        edges(&[
            ("controller", "controller::reports::stored"),
            ("controller", "controller::resource"),
            ("controller::reports::status", "controller::reports::stored"),
            ("controller::reports::status", "controller::resource"),
            ("controller::reports::stored", "controller::reports::status"),
        ])
    );
    assert_eq!(
        circle(&got).map(|c| c.join(" → ")).as_deref(),
        Some(
            "controller::reports::stored → controller::reports::status → controller::reports::stored"
        )
    );
}

#[test]
fn the_reader_sees_imports() {
    // The reader itself: a grouped `use`, an inline path, a path out of a module, and prose.
    let code = code_of(
        "use crate::{a::X, b};\n// crate::c\nfn f() { crate::d::y(); super::super::e::Z; \"crate::f\"; }\n",
    );
    let got: Vec<String> = crate_paths(&code, &["m".into(), "n".into()])
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    assert_eq!(got, ["a", "b", "d", "e"]);
    let code =
        without_tests("use crate::a;\n#[cfg(test)]\nmod tests { use crate::b; }\nuse crate::c;");
    let got: Vec<String> = crate_paths(&code, &["m".into()])
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    assert_eq!(got, ["a", "c"]);
}
