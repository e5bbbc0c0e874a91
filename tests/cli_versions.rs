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
        "1.29",
        "1.38",
        "one.two",
        "1.31.2",
        "1.35..1.31",
        "1.30..1.40",
    ] {
        let out = celcost(&["estimate", "--kubernetes-version", bad, f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("1.30 to 1.37") || err.contains("invalid") || err.contains("empty"),
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
