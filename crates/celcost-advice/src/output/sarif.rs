//! `--output sarif`: the findings of a run ([`super::findings`]) as a SARIF 2.1.0 log, for
//! code scanning.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::findings::{KINDS, ci_path, findings};
use celcost_core::report::ObjectReport;

/// The `$schema` of the SARIF 2.1.0 log (OASIS, errata 01).
pub const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Where to read about celcost: the package's homepage or repository when Cargo.toml names
/// one, else its crates.io page.
pub fn information_uri() -> &'static str {
    match (env!("CARGO_PKG_HOMEPAGE"), env!("CARGO_PKG_REPOSITORY")) {
        (h, _) if !h.is_empty() => h,
        (_, r) if !r.is_empty() => r,
        _ => "https://crates.io/crates/celcost",
    }
}

/// A path as a URI reference: relative paths stay relative (`/` separated, percent-encoded),
/// absolute ones become `file://` URIs.
pub fn uri_of(path: &str) -> String {
    let p = ci_path(path);
    let mut out = String::new();
    let abs = p.starts_with('/');
    if abs {
        out.push_str("file://");
    }
    for b in p.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The run as a SARIF 2.1.0 log: one run, one rule per kind of finding, one result per finding.
pub fn render_sarif(reports: &[ObjectReport], near_percent: f64) -> String {
    let rules: Vec<Value> = KINDS
        .iter()
        .map(|k| {
            json!({
                "id": k.id,
                "name": k.name,
                "shortDescription": {"text": k.short},
                "fullDescription": {"text": k.full},
                "defaultConfiguration": {"level": k.level.sarif()},
                "help": {"text": k.full},
            })
        })
        .collect();
    let index: HashMap<&str, usize> = KINDS.iter().enumerate().map(|(i, k)| (k.id, i)).collect();
    let results: Vec<Value> = findings(reports, near_percent)
        .into_iter()
        .map(|f| {
            let mut res = json!({
                "ruleId": f.kind.id,
                "ruleIndex": index[f.kind.id],
                "level": f.level.sarif(),
                "message": {"text": f.message},
                "properties": {"source": f.source, "title": f.title},
            });
            if let Some(file) = &f.file {
                let (line, column) = f
                    .location
                    .as_ref()
                    .map(|l| (l.line.max(1), l.column.max(1)))
                    .unwrap_or((1, 1));
                res["locations"] = json!([{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri_of(file)},
                        "region": {"startLine": line, "startColumn": column},
                    }
                }]);
            }
            res
        })
        .collect();
    let log = json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "celcost",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": information_uri(),
                    "rules": rules,
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(uri_of("config/crd/a b.yaml"), "config/crd/a%20b.yaml");
        assert_eq!(uri_of("/tmp/x:y.yaml"), "file:///tmp/x%3Ay.yaml");
        assert_eq!(uri_of("c:\\x\\y.yaml"), "c%3A/x/y.yaml");
        assert_eq!(uri_of("./a/./b.yaml"), "a/./b.yaml");
    }
}
