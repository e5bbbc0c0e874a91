//! `celcost estimate --kubernetes-version`: single minors, ranges, bad values, as the binary
//! runs them.

use std::process::{Command, Output};

fn celcost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args(args)
        .output()
        .expect("run celcost")
}

/// A CRD whose one rule uses the Format library: upstream 1.31 gives new expressions no Format
/// library (refused), 1.32 does.
fn format_crd() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("crd.yaml");
    std::fs::write(
        &path,
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
            - rule: "!format.dns1123Label().validate(self).hasValue()"
"#,
    )
    .unwrap();
    (dir, path)
}

#[test]
fn versions_outside_the_supported_range_exit_2_naming_it() {
    let (_dir, f) = format_crd();
    for bad in [
        "1.27",
        "1.38",
        "one.two",
        ">= 1.40",
        ">=1.30<1.37",
        "1.35..1.31",
        "1.30..1.40",
    ] {
        let out = celcost(&["estimate", "--kubernetes-version", bad, f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("1.28 to 1.37") || err.contains("invalid") || err.contains("empty"),
            "{bad}: {err}"
        );
        assert!(out.stdout.is_empty(), "{bad}: nothing estimated");
    }
    let out = celcost(&["estimate", "--distribution", "rancher", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_range_reports_every_minor_and_exits_with_the_worst() {
    let (_dir, f) = format_crd();
    let f = f.to_str().unwrap();
    let one = celcost(&["estimate", "--kubernetes-version", "1.32", f]);
    assert_eq!(one.status.code(), Some(0));
    let old = celcost(&["estimate", "--kubernetes-version", "1.31", f]);
    assert_eq!(old.status.code(), Some(1), "upstream 1.31 refuses the rule");
    let range = celcost(&[
        "estimate",
        "--kubernetes-version",
        "1.30..1.36",
        "-o",
        "json",
        f,
    ]);
    assert_eq!(range.status.code(), Some(1), "the worst minor decides");
    let line = String::from_utf8_lossy(&range.stdout);
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(v["kubernetesVersion"], "v1.36");
    let m = &v["byVersion"];
    let verdicts: Vec<(String, bool)> = m["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["kubernetesVersion"].as_str().unwrap().to_string(),
                x["valid"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(verdicts.len(), 7);
    assert_eq!(verdicts[0], ("v1.30".to_string(), false));
    assert_eq!(verdicts[2], ("v1.32".to_string(), true));
    assert_eq!(m["oldestAccepting"], "v1.32");
    let rule = m["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["unit"] == "^.spec [0]")
        .expect("the rule changes");
    assert_eq!(rule["steps"][0]["kubernetesVersion"], "v1.30");
    assert!(rule["steps"][0]["compileError"].is_string());
    assert_eq!(rule["steps"][1]["kubernetesVersion"], "v1.32");
    // OpenShift's 1.31 has the Format library: accepted from 1.31 there.
    let os = celcost(&[
        "estimate",
        "--kubernetes-version",
        "all",
        "--distribution",
        "openshift",
        "-o",
        "json",
        f,
    ]);
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&os.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(v["byVersion"]["oldestAccepting"], "v1.31");
    // The table says it in words.
    let table = celcost(&["estimate", "--kubernetes-version", "all", f]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("accepted from Kubernetes 1.32"), "{text}");
    assert!(
        text.contains("1.30 REJECTED | 1.31 REJECTED | 1.32 accepted"),
        "{text}"
    );
}

#[test]
fn diff_shows_what_a_change_does() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (base, head) = (dir.path().join("base"), dir.path().join("head"));
    std::fs::create_dir_all(&base).unwrap();
    std::fs::create_dir_all(&head).unwrap();
    let crd = |max_items: u64, extra_rule: bool| {
        let extra = if extra_rule {
            "\n            - rule: \"self.all(t, t.size() > 0)\""
        } else {
            ""
        };
        format!(
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: things.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: things, kind: Thing}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: array
            maxItems: {max_items}
            items: {{type: string, maxLength: 1000}}
            x-kubernetes-validations:
            - rule: "self.all(t, t.matches('^[a-z]+$'))"{extra}
"#
        )
    };
    std::fs::write(base.join("crd.yaml"), crd(100, false)).unwrap();
    std::fs::write(head.join("crd.yaml"), crd(100_000, true)).unwrap();
    let out = celcost(&[
        "diff",
        "-o",
        "markdown",
        base.to_str().unwrap(),
        head.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "the head is rejected: {text}");
    assert!(
        text.contains("| **verdict** | accepted | **REJECTED** |"),
        "{text}"
    );
    assert!(text.contains("`^.spec [0]` (changed)"), "{text}");
    assert!(text.contains("`^.spec [1]` (added)"), "{text}");
    assert!(text.contains("of 10M |"), "{text}");
    let json = celcost(&[
        "diff",
        "-o",
        "json",
        base.to_str().unwrap(),
        head.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&json.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(v["change"], "changed");
    let same = celcost(&["diff", base.to_str().unwrap(), base.to_str().unwrap()]);
    assert_eq!(same.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&same.stdout).contains("1 objects unchanged"));
}

/// A CRD stored with a rule its minor costs over the per-rule limit (18,874,356 on 1.36): a
/// manifest standing for the object as the cluster stores it.
fn stored_crd(extra: &str, rule: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: gadgets.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: gadgets, kind: Gadget{extra}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          tags:
            type: array
            items: {{type: string}}
            x-kubernetes-validations:
            - rule: "{rule}"
          note: {{type: string}}
"#
    )
}

const COSTLY: &str =
    "self.all(x, x.size() < 10) && self.all(x, x.size() >= 0) && self.exists(x, x == 'a')";

#[test]
fn diff_judges_the_update_of_base_in_every_output() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let base = write("base.yaml", stored_crd("", COSTLY));
    // Keeps the schema (a short name more): the API server accepts the update.
    let keep = write("keep.yaml", stored_crd(", shortNames: [gd]", COSTLY));
    // Changes the schema (an unrelated field's description): refused until the rule fits.
    let change = write(
        "change.yaml",
        stored_crd("", COSTLY).replace(
            "note: {type: string}",
            "note: {type: string, description: a note}",
        ),
    );
    let run = |out: &str, head: &str| {
        // One minor: the update verdicts' words, as 1.36 says them.
        let o = celcost(&[
            "diff",
            "--kubernetes-version",
            "1.36",
            "-o",
            out,
            &base,
            head,
        ]);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).to_string(),
        )
    };
    let rule_error = "spec.validation.openAPIV3Schema.properties[tags].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.9x";

    let (code, t) = run("table", &keep);
    assert_eq!(code, Some(0), "{t}");
    assert!(
        t.contains("REJECTED → REJECTED; update of BASE: accepted"),
        "{t}"
    );
    assert!(
        t.contains("held by the unchanged schema of v1: ^.tags [0] rule costs 18,874,356"),
        "{t}"
    );
    let (code, t) = run("table", &change);
    assert_eq!(code, Some(1), "{t}");
    assert!(t.contains("update of BASE: REFUSED"), "{t}");
    assert!(t.contains(&format!("  update: {rule_error}")), "{t}");

    let (code, t) = run("markdown", &keep);
    assert_eq!(code, Some(0));
    assert!(
        t.contains("| CustomResourceDefinition `gadgets.example.com` | REJECTED | accepted |"),
        "{t}"
    );
    let (code, t) = run("markdown", &change);
    assert_eq!(code, Some(1));
    assert!(t.contains("| REJECTED | **REFUSED** |"), "{t}");
    assert!(t.contains(&format!("- {rule_error}")), "{t}");

    for (head, valid) in [(&keep, true), (&change, false)] {
        let (_, t) = run("json", head);
        let v: serde_json::Value = serde_json::from_str(t.lines().next().unwrap()).unwrap();
        assert_eq!(v["validAfter"], false);
        assert_eq!(v["update"]["valid"], valid, "{t}");
        assert_eq!(v["update"]["storedSource"], format!("{base}#1"));
        assert_eq!(v["update"]["versions"][0]["schemaUnchanged"], valid);
    }

    let (code, t) = run("sarif", &keep);
    assert_eq!(code, Some(0));
    let s: serde_json::Value = serde_json::from_str(&t).unwrap();
    let results = s["runs"][0]["results"].as_array().unwrap();
    let levels = |id: &str| -> Vec<String> {
        results
            .iter()
            .filter(|r| r["ruleId"] == id)
            .map(|r| r["level"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    // Refused on create, accepted as an update: warnings, no error.
    assert!(results.iter().all(|r| r["level"] != "error"), "{t}");
    assert_eq!(levels("celcost/held-by-unchanged-schema"), ["warning"]);
    let (code, t) = run("sarif", &change);
    assert_eq!(code, Some(1));
    let s: serde_json::Value = serde_json::from_str(&t).unwrap();
    let refused: Vec<&serde_json::Value> = s["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["ruleId"] == "celcost/update-refused")
        .collect();
    assert_eq!(refused.len(), 1, "{t}");
    assert_eq!(refused[0]["level"], "error");
    assert!(
        refused[0]["message"]["text"]
            .as_str()
            .unwrap()
            .contains(rule_error)
    );

    let (code, t) = run("github", &keep);
    assert_eq!(code, Some(0));
    assert!(!t.contains("::error"), "{t}");
    assert!(t.contains("held by the unchanged schema"), "{t}");
    let (code, t) = run("github", &change);
    assert_eq!(code, Some(1));
    assert!(
        t.contains("title=celcost%3A update refused by Kubernetes v1.36"),
        "{t}"
    );

    // A new object is a create: HEAD with a second over-limit CRD fails.
    let two = write(
        "two.yaml",
        format!(
            "{}---\n{}",
            stored_crd("", COSTLY),
            stored_crd("", COSTLY).replace("gadgets", "gizmos")
        ),
    );
    assert_eq!(run("table", &two).0, Some(1));
}

#[test]
fn diff_compiles_what_base_stores_in_the_stored_environment() {
    // On 1.30, isIP is in the stored-expressions environment only: kept, it compiles; edited,
    // it is a new expression, and does not.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |name: &str, text: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let ip = |rule: &str| {
        stored_crd("", "true").replace(
            "items: {type: string}\n            x-kubernetes-validations:\n            - rule: \"true\"",
            &format!("maxItems: 4\n            items:\n              type: string\n              maxLength: 64\n              x-kubernetes-validations:\n              - rule: \"{rule}\"\n            x-kubernetes-validations:\n            - rule: \"true\""),
        )
    };
    let base = write("base.yaml", ip("isIP(self)"));
    let keep = write(
        "keep.yaml",
        ip("isIP(self)").replace(
            "note: {type: string}",
            "note: {type: string, description: the note}",
        ),
    );
    let edit = write("edit.yaml", ip("isIP(self) || self == ''"));
    let run = |head: &str| {
        let o = celcost(&[
            "diff",
            "--kubernetes-version",
            "1.30",
            "-o",
            "json",
            &base,
            head,
        ]);
        let t = String::from_utf8_lossy(&o.stdout).to_string();
        (
            o.status.code(),
            serde_json::from_str::<serde_json::Value>(t.lines().next().unwrap()).unwrap(),
        )
    };
    let (code, v) = run(&keep);
    assert_eq!(v["validAfter"], false, "{v}");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        v["update"]["storedOnly"][0]["fieldPath"],
        "spec.validation.openAPIV3Schema.properties[tags].items.x-kubernetes-validations[0].rule"
    );
    let (code, v) = run(&edit);
    assert_eq!(code, Some(1), "{v}");
    assert!(
        v["update"]["errors"][0]
            .as_str()
            .unwrap()
            .contains("compilation failed: ERROR: <input>:1:5: undeclared reference to 'isIP'"),
        "{v}"
    );
    // 1.31 gives new expressions isIP: the edit passes there.
    let o = celcost(&["diff", "--kubernetes-version", "1.31", &base, &edit]);
    assert_eq!(o.status.code(), Some(0));
}

/// Without `--kubernetes-version`, `estimate`, `diff` and `fix` judge against the minors upstream
/// supports (the newest three celcost knows): a CRD 1.37 refuses fails and the header says so; one
/// every minor accepts passes and the header names the window; an explicit `1.36` is one minor,
/// as before.
#[test]
fn the_default_is_the_window_of_supported_minors() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let refused = root.join("tests/data/upgrade-1.37/backendtimeoutpolicies.yaml");
    let accepted = root.join("examples/crds/widgets.example.com.yaml");
    let window =
        celcost::cel::minor::supported_window(celcost::cel::minor::Distribution::Kubernetes);
    assert_eq!(window.len(), 3);
    let labels: Vec<String> = window.iter().map(|v| v.to_string()).collect();
    let out = celcost(&["estimate", refused.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.to_lowercase().contains("rejected by kubernetes v1.37"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "by version: {} accepted | {} accepted | {} REJECTED",
            labels[0], labels[1], labels[2]
        )),
        "{text}"
    );
    let out = celcost(&["estimate", accepted.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "accepted by Kubernetes v{} (and {} to {} below)",
            labels[2], labels[0], labels[1]
        )),
        "{text}"
    );
    // One minor asked for: one minor judged, the rejection unseen.
    let out = celcost(&[
        "estimate",
        "--kubernetes-version",
        "1.36",
        refused.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("accepted by Kubernetes v1.36\n"), "{text}");
    assert!(!text.contains("by version"), "{text}");
    // diff: the exit status follows the worst minor, and the header says which refuses.
    let base = root.join("examples/crds");
    let out = celcost(&["diff", base.to_str().unwrap(), refused.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!(
            "Kubernetes {}: HEAD applied over BASE is rejected by Kubernetes v1.37\n",
            labels.join(", ")
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("on Kubernetes {}:", labels[0])),
        "{text}"
    );
    let out = celcost(&[
        "diff",
        "--output",
        "json",
        base.to_str().unwrap(),
        refused.to_str().unwrap(),
    ]);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().any(|l| l["kubernetesVersion"] == "1.37"));
    assert!(
        lines
            .iter()
            .any(|l| l["kubernetesVersion"] == labels[0].as_str())
    );
    let out = celcost(&[
        "diff",
        "--kubernetes-version",
        "1.36",
        base.to_str().unwrap(),
        refused.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("kubernetesVersion"));
    // fix: the bounds fit the window, and its summary names it.
    let out = celcost(&["fix", refused.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "accepted by Kubernetes {}..{}: no → yes",
            labels[0], labels[2]
        )),
        "{err}"
    );
}

/// A Helm chart is read as its `crds/`, judged by its `kubeVersion` (Masterminds' syntax),
/// clipped to the minors celcost knows, and says its templates are not rendered.
#[test]
fn a_helm_chart_is_judged_by_its_kube_version() {
    let (dir, crd) = format_crd();
    let chart = dir.path().join("chart");
    std::fs::create_dir_all(chart.join("crds")).unwrap();
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    let text = std::fs::read_to_string(&crd)
        .unwrap()
        .replace("dns1123Label", "dns1123Subdomain")
        .replace("maxLength: 63", "maxLength: 253");
    std::fs::write(chart.join("crds/crd.yaml"), text).unwrap();
    std::fs::write(
        chart.join("templates/broken.yaml"),
        "{{ .Values.not rendered }}\n",
    )
    .unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: things\nversion: 0.1.0\nkubeVersion: \">= 1.29.0-0\"\n",
    )
    .unwrap();
    let c = chart.to_str().unwrap();
    let out = celcost(&["estimate", c]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("templates are not rendered"), "{stderr}");
    assert!(stderr.contains("helm template"), "{stderr}");
    assert!(stderr.contains("judged against 1.29..1.37"), "{stderr}");
    assert!(stdout.contains("1.29 REJECTED"), "{stdout}");
    assert!(!stdout.contains("1.28"), "{stdout}");
    // The refusal is 1.29's: no Format library.
    let json = celcost(&["estimate", "-o", "json", c]);
    let v: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&json.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let verdicts = v["byVersion"]["verdicts"].as_array().unwrap();
    assert_eq!(verdicts[0]["kubernetesVersion"], "v1.29");
    assert_eq!(verdicts[0]["valid"], false);
    assert_eq!(v["byVersion"]["oldestAccepting"], "v1.32");
    // --kubernetes-version wins over the chart's, in Helm's syntax too.
    let out = celcost(&["estimate", "--kubernetes-version", ">=1.32, <1.37", c]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("judged against"));
    let out = celcost(&["estimate", "--kubernetes-version", "~1.29", c]);
    assert_eq!(out.status.code(), Some(1));
}
