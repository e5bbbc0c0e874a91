//! `celcost estimate --output sarif|github` and `--fail-at`, as the binary runs them: SARIF
//! 2.1.0 checked on its structure (the properties the OASIS schema requires and the types and
//! values it allows, rule ids that exist, 1-based regions that point at the rule's text), GitHub
//! workflow commands that parse and escape as GitHub requires, and exit statuses.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs celcost in the checkout (so that `examples/...` paths stay relative).
fn celcost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_celcost"))
        .current_dir(ROOT)
        .args(args)
        .output()
        .expect("run celcost")
}

/// A directory of inputs: a CRD whose rule does not compile (an API server error) in a file
/// whose name needs escaping, and an alpha MutatingAdmissionPolicy (a note).
fn inputs() -> TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        dir.path().join("bad,rule:x.yaml"),
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: things, kind: Thing}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: string
            maxLength: 63
            x-kubernetes-validations:
            - rule: |
                self.nope() == 100%
"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("map.yaml"),
        r#"apiVersion: admissionregistration.k8s.io/v1alpha1
kind: MutatingAdmissionPolicy
metadata: {name: m}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"
"#,
    )
    .unwrap();
    dir
}

/// A CRD whose one rule uses the Format library: upstream 1.31 refuses it, 1.32 accepts it. The
/// file lives as long as the returned directory.
fn format_crd() -> (TempDir, PathBuf) {
    let dir = inputs();
    let path = dir.path().join("format").join("crd.yaml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &path,
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: formats.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: formats, kind: Format}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: string
            maxLength: 63
            x-kubernetes-validations:
            - rule: "!format.dns1123Label().validate(self).hasValue()"
"#,
    )
    .unwrap();
    (dir, path)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

/// The file a SARIF artifact URI names, relative to the checkout.
fn path_of_uri(uri: &str) -> PathBuf {
    match uri.strip_prefix("file://") {
        Some(abs) => PathBuf::from(percent_decode(abs)),
        None => {
            assert!(
                !uri.contains(':') && !uri.contains(' ') && !uri.starts_with('/'),
                "not a relative URI reference: {uri}"
            );
            Path::new(ROOT).join(percent_decode(uri))
        }
    }
}

fn string<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v}"))
}

fn object<'a>(v: &'a Value, what: &str) -> &'a serde_json::Map<String, Value> {
    v.as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {v}"))
}

/// Checks a SARIF log against what the SARIF 2.1.0 schema requires of the objects celcost
/// writes; returns the results.
fn check_sarif(log: &Value) -> Vec<Value> {
    let top = object(log, "the log");
    assert_eq!(top["version"], "2.1.0");
    assert!(string(&top["$schema"], "$schema").contains("sarif-schema-2.1.0"));
    for k in top.keys() {
        assert!(["$schema", "version", "runs"].contains(&k.as_str()), "{k}");
    }
    let runs = top["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let run = object(&runs[0], "run");
    for k in run.keys() {
        assert!(
            ["tool", "results", "columnKind"].contains(&k.as_str()),
            "run.{k}"
        );
    }
    assert!(
        ["utf16CodeUnits", "unicodeCodePoints"].contains(&string(&run["columnKind"], "columnKind"))
    );
    let driver = object(&run["tool"]["driver"], "tool.driver");
    assert_eq!(driver["name"], "celcost");
    assert!(!string(&driver["version"], "version").is_empty());
    let uri = string(&driver["informationUri"], "informationUri");
    assert!(uri.starts_with("https://"), "{uri}");
    let rules = driver["rules"].as_array().expect("rules");
    let mut ids = HashSet::new();
    for (i, r) in rules.iter().enumerate() {
        let r = object(r, "rule");
        let id = string(&r["id"], "rule id");
        assert!(ids.insert(id.to_string()), "duplicate rule id {id}");
        assert!(id.starts_with("celcost/"));
        assert!(!string(&r["shortDescription"]["text"], "shortDescription").is_empty());
        assert!(!string(&r["fullDescription"]["text"], "fullDescription").is_empty());
        assert!(
            ["none", "note", "warning", "error"]
                .contains(&string(&r["defaultConfiguration"]["level"], "level")),
            "rule {i}"
        );
    }
    let results = run["results"].as_array().expect("results").clone();
    for res in &results {
        let o = object(res, "result");
        for k in o.keys() {
            assert!(
                [
                    "ruleId",
                    "ruleIndex",
                    "level",
                    "message",
                    "locations",
                    "properties"
                ]
                .contains(&k.as_str()),
                "result.{k}"
            );
        }
        let id = string(&o["ruleId"], "ruleId");
        let index = o["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(rules[index]["id"], id, "ruleIndex of {id}");
        assert!(["none", "note", "warning", "error"].contains(&string(&o["level"], "level")));
        assert!(!string(&o["message"]["text"], "message.text").is_empty());
        let locs = o["locations"].as_array().expect("locations");
        assert!(!locs.is_empty(), "{res}");
        for l in locs {
            let p = &l["physicalLocation"];
            let uri = string(&p["artifactLocation"]["uri"], "uri");
            assert!(path_of_uri(uri).is_file(), "{uri}");
            let line = p["region"]["startLine"].as_u64().expect("startLine");
            let col = p["region"]["startColumn"].as_u64().expect("startColumn");
            assert!(line >= 1 && col >= 1, "{res}");
        }
    }
    results
}

/// The text of a result's file from its region on.
fn text_at(res: &Value) -> String {
    let p = &res["locations"][0]["physicalLocation"];
    let file = path_of_uri(p["artifactLocation"]["uri"].as_str().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    let line = p["region"]["startLine"].as_u64().unwrap() as usize;
    let col = p["region"]["startColumn"].as_u64().unwrap() as usize;
    let l = text.lines().nth(line - 1).unwrap_or_default();
    l.chars().skip(col - 1).collect()
}

/// The expression a rule finding quotes (between the first pair of backticks).
fn quoted(message: &str) -> &str {
    message.split('`').nth(1).unwrap_or_default()
}

#[test]
fn sarif_is_sarif_2_1_0_and_points_at_the_rules() {
    let dir = inputs();
    let out = celcost(&[
        "estimate",
        "-o",
        "sarif",
        "examples",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let log: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let results = check_sarif(&log);
    let by_id: HashMap<&str, Vec<&Value>> = results.iter().fold(HashMap::new(), |mut m, r| {
        m.entry(r["ruleId"].as_str().unwrap()).or_default().push(r);
        m
    });
    for id in [
        "celcost/rule-over-budget",
        "celcost/rule-near-budget",
        "celcost/total-over-budget",
        "celcost/expression-over-budget",
        "celcost/apiserver-error",
        "celcost/note",
    ] {
        assert!(by_id.contains_key(id), "no {id} in {results:#?}");
    }
    assert_eq!(by_id["celcost/rule-over-budget"][0]["level"], "error");
    assert_eq!(by_id["celcost/rule-near-budget"][0]["level"], "warning");
    assert_eq!(by_id["celcost/note"][0]["level"], "note");
    // Rule and expression findings point at their expression's text.
    for id in [
        "celcost/rule-over-budget",
        "celcost/rule-near-budget",
        "celcost/expression-over-budget",
    ] {
        for r in &by_id[id] {
            let msg = r["message"]["text"].as_str().unwrap();
            let expr = quoted(msg);
            let at = text_at(r);
            let at = at.trim_start_matches(['"', '\'']);
            assert!(
                at.starts_with(&expr[..expr.len().min(20)]),
                "{id}: `{at}` does not start `{expr}`"
            );
            assert!(msg.contains("% of the per-"), "{msg}");
        }
    }
    // The near-budget rule says why, with the share of the limit.
    let near = by_id["celcost/rule-near-budget"][0]["message"]["text"]
        .as_str()
        .unwrap();
    assert!(
        near.contains("88.1%") && near.contains("unbounded: ^.spec.hosts[*]"),
        "{near}"
    );
    // Relative paths stay relative; the escaped file name decodes to the file.
    let uris: Vec<&str> = results
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(
        uris.contains(&"examples/rejected/unbounded-tags.example.com.yaml"),
        "{uris:?}"
    );
    assert!(
        uris.iter().any(|u| u.ends_with("bad%2Crule%3Ax.yaml")),
        "{uris:?}"
    );
    // The compile error is located at the block scalar's indicator.
    let err = by_id["celcost/apiserver-error"]
        .iter()
        .find(|r| {
            r["message"]["text"]
                .as_str()
                .unwrap()
                .contains("compilation failed")
        })
        .unwrap();
    assert!(text_at(err).starts_with('|'), "{}", text_at(err));
    // The total's cost error is one finding with the total, not a second one.
    let total = by_id["celcost/total-over-budget"][0]["message"]["text"]
        .as_str()
        .unwrap();
    assert!(
        total.contains("The API server: spec.validation.openAPIV3Schema: Forbidden"),
        "{total}"
    );
    assert!(!by_id["celcost/apiserver-error"].iter().any(|r| {
        r["message"]["text"]
            .as_str()
            .unwrap()
            .contains("exceeds budget")
    }));
}

#[test]
fn sarif_of_a_range_names_the_older_minors_that_reject() {
    let (_dir, f) = format_crd();
    let out = celcost(&[
        "estimate",
        "-o",
        "sarif",
        "--kubernetes-version",
        "1.30..1.36",
        f.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = check_sarif(&log);
    let older: Vec<&Value> = results
        .iter()
        .filter(|r| r["ruleId"] == "celcost/older-version-rejects")
        .collect();
    assert_eq!(older.len(), 1, "{results:#?}");
    let msg = older[0]["message"]["text"].as_str().unwrap();
    assert!(
        msg.contains("on Kubernetes 1.30 and 1.31: does not compile"),
        "{msg}"
    );
    assert!(text_at(older[0]).starts_with("\"!format.dns1123Label()"));
    // Absolute paths are file URIs.
    let uri = older[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap();
    assert!(uri.starts_with("file:///"), "{uri}");
}

/// A workflow command: (command, properties, message), unescaped.
fn parse_command(line: &str) -> (String, HashMap<String, String>, String) {
    assert!(!line.contains('\r'), "{line}");
    let rest = line.strip_prefix("::").unwrap_or_else(|| panic!("{line}"));
    let (head, message) = rest.split_once("::").unwrap_or_else(|| panic!("{line}"));
    let (cmd, props) = head.split_once(' ').unwrap_or((head, ""));
    let mut map = HashMap::new();
    for p in props.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = p.split_once('=').unwrap_or_else(|| panic!("{p} in {line}"));
        // A property value has `:` and `,` escaped, so the split above was exact.
        assert!(!v.contains(':') && !v.contains(','), "{v}");
        map.insert(k.to_string(), percent_decode(v));
    }
    // In a message `%`, CR and LF are escaped: every `%` starts an escape.
    for (i, _) in message.match_indices('%') {
        assert!(
            ["%25", "%0D", "%0A"]
                .iter()
                .any(|e| message[i..].starts_with(e)),
            "bare % in {message}"
        );
    }
    (cmd.to_string(), map, percent_decode(message))
}

#[test]
fn github_commands_parse_and_escape() {
    let dir = inputs();
    let out = celcost(&[
        "estimate",
        "-o",
        "github",
        "examples",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let commands: Vec<_> = text.lines().map(parse_command).collect();
    let cmds: HashSet<&str> = commands.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(
        cmds,
        HashSet::from(["error", "warning", "notice"]),
        "{text}"
    );
    for (cmd, props, message) in &commands {
        assert!(props.contains_key("title"), "{cmd} {props:?}");
        let file = &props["file"];
        let path = if Path::new(file).is_absolute() {
            PathBuf::from(file)
        } else {
            Path::new(ROOT).join(file)
        };
        assert!(path.is_file(), "{file}");
        let line: usize = props["line"].parse().unwrap();
        let col: usize = props["col"].parse().unwrap();
        assert!(line >= 1 && col >= 1);
        assert!(!message.is_empty());
    }
    let near = commands.iter().find(|(c, _, _)| c == "warning").unwrap();
    assert_eq!(near.1["file"], "examples/crds/widgets.example.com.yaml");
    assert!(near.2.contains("88.1% of the per-rule limit"), "{}", near.2);
    assert!(
        near.1["title"].contains("rule near budget: 88.1% of 10M"),
        "{:?}",
        near.1
    );
    let bad = commands
        .iter()
        .find(|(_, p, _)| p["file"].ends_with("bad,rule:x.yaml"))
        .unwrap();
    assert_eq!(
        (bad.1["line"].as_str(), bad.1["col"].as_str()),
        ("20", "21")
    );
    // The rule's newline and `%` come through the escapes.
    assert!(bad.2.contains("100%\\n"), "{}", bad.2);
}

#[test]
fn fail_at_and_near_budget_thresholds() {
    let widgets = "examples/crds/widgets.example.com.yaml"; // a rule at 88.1%
    let code = |args: &[&str]| {
        let mut a = vec!["estimate"];
        a.extend_from_slice(args);
        a.push(widgets);
        celcost(&a).status.code()
    };
    assert_eq!(code(&[]), Some(0));
    assert_eq!(code(&["--fail-at", "80"]), Some(1));
    assert_eq!(code(&["--fail-at", "88%"]), Some(1));
    assert_eq!(code(&["--fail-at", "88.1%"]), Some(0)); // 88.08%
    assert_eq!(code(&["--fail-at", "90"]), Some(0));
    for bad in ["0", "-5", "abc", "NaN"] {
        assert_eq!(code(&["--fail-at", bad]), Some(2), "{bad}");
    }
    // A rejected object exits 1 whatever the threshold.
    let out = celcost(&["estimate", "--fail-at", "1000", "examples/rejected"]);
    assert_eq!(out.status.code(), Some(1));
    // Policies: an expression at 660% of the per-call limit (typed against the CRD).
    let out = celcost(&[
        "estimate",
        "examples/crds",
        "examples/policies/widget-hosts.yaml",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = celcost(&[
        "estimate",
        "--fail-at",
        "100",
        "examples/crds",
        "examples/policies/widget-hosts.yaml",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fail-at"));
    // The near-budget threshold of the findings.
    let warnings = |near: &str| {
        let out = celcost(&[
            "estimate",
            "-o",
            "github",
            "--near-budget-percent",
            near,
            widgets,
        ]);
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("::warning"))
            .count()
    };
    assert_eq!(warnings("80"), 1);
    assert_eq!(warnings("90"), 0);
}
