//! What the corpus tests share: where `../shared/corpus` is, and its manifests in a stable order.

// Shared by the test and bench binaries that include this file: `pub` for them, not an API.
#![allow(unreachable_pub)]
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The public corpus: `CELCOST_CORPUS`, else `../shared/corpus` beside the checkout when it
/// exists.
pub fn corpus_dir() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CELCOST_CORPUS") {
        return Some(PathBuf::from(p));
    }
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    p.is_dir().then_some(p)
}

/// The YAML and JSON files under `dir`, recursively, sorted by path within each directory.
pub fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(p);
        }
    }
}

/// A test that cannot run here (`why`: a tool or file missing): prints `SKIPPED` and lets it pass,
/// unless the environment variable `gate` (a `CELCOST_REQUIRE_*`, set by `.ci/run`) is set, which
/// fails it instead — in CI nothing may be skipped.
pub fn skip(gate: &str, test: &str, why: &str) {
    assert!(
        std::env::var_os(gate).is_none_or(|v| v.is_empty() || v == "0"),
        "{test}: {why} ({gate} is set: nothing may be skipped)"
    );
    println!("SKIPPED {test}: {why}");
}
