//! Golden files: `celcost estimate examples/crds examples/policies` in every format that shows a
//! report (table, markdown, github, sarif, json, openreports), compared whole with `tests/golden/examples.*`
//! — what a user sees, not fragments of it. The binary runs from the repository root with
//! relative paths, so the files hold no absolute path (and no format prints a timing).
//!
//! After an intended change of an output, rewrite them with
//! `CELCOST_BLESS=1 cargo test --test it golden` and review the diff of `tests/golden/`.

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const FORMATS: [(&str, &str); 6] = [
    ("table", "table"),
    ("markdown", "md"),
    ("github", "github"),
    ("sarif", "sarif"),
    ("json", "json"),
    ("openreports", "openreports.yaml"),
];

#[test]
fn examples_in_every_format() {
    let bless = std::env::var_os("CELCOST_BLESS").is_some_and(|v| !v.is_empty());
    let dir = Path::new(ROOT).join("tests/golden");
    let mut differ = Vec::new();
    for (format, ext) in FORMATS {
        let out = Command::new(env!("CARGO_BIN_EXE_celcost"))
            .current_dir(ROOT)
            .args([
                "estimate",
                "--output",
                format,
                "examples/crds",
                "examples/policies",
            ])
            .output()
            .expect("run celcost");
        assert!(
            out.status.success(),
            "{format}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("UTF-8 output");
        assert!(
            !text.contains(ROOT),
            "{format}: an absolute path in the output"
        );
        let file = dir.join(format!("examples.{ext}"));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, &text).unwrap();
            continue;
        }
        let golden = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (CELCOST_BLESS=1 cargo test --test it golden writes it)",
                file.display()
            )
        });
        if golden != text {
            let first = golden
                .lines()
                .zip(text.lines())
                .position(|(g, t)| g != t)
                .unwrap_or(golden.lines().count().min(text.lines().count()));
            differ.push(format!(
                "{format}: differs from {} from line {} on (golden {:?}, now {:?})",
                file.display(),
                first + 1,
                golden.lines().nth(first).unwrap_or("<end>"),
                text.lines().nth(first).unwrap_or("<end>"),
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{}\nIf the change is intended: CELCOST_BLESS=1 cargo test --test it golden",
        differ.join("\n")
    );
}
