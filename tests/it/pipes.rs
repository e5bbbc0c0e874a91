//! Where users already work, as the binary runs there: standard input (`-`) for `estimate`,
//! `diff` and `fix`, a Helm chart rendered into `estimate -`, several outputs of one run, each
//! byte for byte what a run of its own prints, `--output junit` read back by a JUnit parser
//! (junit-parser, not the writer's crate), write errors (a full disk) as exit status 2, the help
//! texts, and the binary as a kubectl plugin (`kubectl celcost …`).
//!
//! The kubectl plugin test and the Helm one need kubectl and helm-lite: without them they print
//! SKIPPED and pass, unless `CELCOST_REQUIRE_KUBECTL=1` / `CELCOST_REQUIRE_HELM=1` (CI).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn celcost_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_celcost"));
    c.current_dir(ROOT);
    c
}

fn celcost(args: &[&str]) -> Output {
    celcost_cmd().args(args).output().expect("run celcost")
}

/// celcost with `input` on its standard input.
fn celcost_fed(args: &[&str], input: &[u8]) -> Output {
    let mut child = celcost_cmd()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run celcost");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(Path::new(ROOT).join(path)).unwrap()
}

/// JSON lines without what names where an object was read (its source and locations).
fn placeless(stdout: &[u8]) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for k in [
                    "source",
                    "sourceBefore",
                    "sourceAfter",
                    "storedSource",
                    "location",
                    "messageExpressionLocation",
                    "errorLocations",
                ] {
                    o.remove(k);
                }
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    text(stdout)
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            strip(&mut v);
            v
        })
        .collect()
}

#[test]
fn standard_input_reads_as_the_file_does() {
    let file = "examples/crds/widgets.example.com.yaml";
    for format in ["table", "json", "sarif", "markdown"] {
        let piped = celcost_fed(&["estimate", "-o", format, "-"], &read(file));
        let direct = celcost(&["estimate", "-o", format, file]);
        assert_eq!(piped.status.code(), direct.status.code());
        // Positions aside: `<stdin>` where the file's name is (SARIF percent-encodes it).
        let named = text(&piped.stdout)
            .replace("%3Cstdin%3E", file)
            .replace("<stdin>", file);
        assert_eq!(named, text(&direct.stdout), "{format}");
        if format == "table" {
            assert!(text(&piped.stdout).contains("at: <stdin>:51:29"));
        }
    }
}

#[test]
fn a_stream_of_documents_and_lists_on_standard_input() {
    // Two CRDs and a `kind: List` of both policies, as `helm template` or `kustomize build`
    // print them.
    let mut stream = Vec::new();
    for f in [
        "examples/crds/gadgets.example.com.yaml",
        "examples/crds/widgets.example.com.yaml",
    ] {
        stream.extend(b"---\n");
        stream.extend(read(f));
    }
    let policies: Vec<Value> = ["require-team-label", "widget-hosts"]
        .iter()
        .map(|p| {
            let t = String::from_utf8(read(&format!("examples/policies/{p}.yaml"))).unwrap();
            serde_yaml_ng::from_str(&t).unwrap()
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": policies});
    stream.extend(b"---\n");
    stream.extend(serde_yaml_ng::to_string(&list).unwrap().as_bytes());
    let piped = celcost_fed(&["estimate", "-o", "json", "-"], &stream);
    let files = celcost(&[
        "estimate",
        "-o",
        "json",
        "examples/crds",
        "examples/policies",
    ]);
    assert_eq!(piped.status.code(), Some(0), "{}", text(&piped.stderr));
    assert_eq!(placeless(&piped.stdout), placeless(&files.stdout));
    let sources: Vec<String> = text(&piped.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["source"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        sources,
        ["<stdin>#1", "<stdin>#2", "<stdin>#3[0]", "<stdin>#3[1]"]
    );
    // The policy over Widgets is typed by the CRD of the same stream.
    assert!(text(&piped.stdout).contains("CRD widgets.example.com"));
}

#[test]
fn standard_input_is_read_once_and_must_be_text() {
    let twice = celcost(&["estimate", "-", "-"]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(text(&twice.stderr).contains("can be given only once"));
    let both = celcost(&["diff", "-", "-"]);
    assert_eq!(both.status.code(), Some(2));
    assert!(text(&both.stderr).contains("BASE and HEAD cannot both be `-`"));
    // Binary input is an input error of `<stdin>`; the other paths are still estimated.
    let binary = celcost_fed(
        &["estimate", "-o", "json", "-", "examples/crds"],
        b"\xff\xfe\x00",
    );
    assert_eq!(binary.status.code(), Some(2));
    assert!(text(&binary.stderr).contains("error: <stdin>: not UTF-8 text"));
    assert_eq!(text(&binary.stdout).lines().count(), 2);
}

#[test]
fn helm_template_into_estimate() {
    let have = Command::new("helm-lite").arg("--help").output().is_ok();
    if !have {
        assert!(
            std::env::var_os("CELCOST_REQUIRE_HELM").is_none_or(|v| v != "1"),
            "helm-lite cannot run (CELCOST_REQUIRE_HELM=1: nothing may be skipped)"
        );
        println!("SKIPPED helm_template_into_estimate: no helm-lite");
        return;
    }
    // `helm template` leaves a chart's crds/ out unless asked.
    let rendered = Command::new("helm-lite")
        .current_dir(ROOT)
        .args(["template", "charts/celcost", "--include-crds"])
        .output()
        .unwrap();
    assert!(rendered.status.success(), "{}", text(&rendered.stderr));
    let out = celcost_fed(&["estimate", "-"], &rendered.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.starts_with("CustomResourceDefinition costreports.celcost.io (<stdin>#"),
        "{table}"
    );
    // The rest of the chart is skipped, each object named.
    assert!(text(&out.stderr).contains("skipped apps/v1 Deployment"));
}

#[test]
fn diff_reads_either_side_from_standard_input() {
    let base = "tests/data/upgrade-1.37/backendtimeoutpolicies.yaml";
    let direct = celcost(&[
        "diff",
        "-o",
        "json",
        "--kubernetes-version",
        "1.37",
        base,
        base,
    ]);
    for args in [["-", base], [base, "-"]] {
        let piped = celcost_fed(
            &[
                "diff",
                "-o",
                "json",
                "--kubernetes-version",
                "1.37",
                args[0],
                args[1],
            ],
            &read(base),
        );
        assert_eq!(piped.status.code(), direct.status.code());
        assert_eq!(
            placeless(&piped.stdout),
            placeless(&direct.stdout),
            "{args:?}"
        );
        // The update of the stored object (read from standard input or from the file).
        assert!(text(&piped.stdout).contains(r#""update":{"storedSource""#));
    }
}

#[test]
fn fix_prints_standard_input_fixed_and_refuses_to_write_it() {
    let file = "tests/data/upgrade-1.37/backendtimeoutpolicies.yaml";
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("crd.yaml");
    std::fs::copy(Path::new(ROOT).join(file), &copy).unwrap();
    let written = celcost(&[
        "fix",
        "--kubernetes-version",
        "1.37",
        "--write",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(written.status.code(), Some(0), "{}", text(&written.stderr));
    let piped = celcost_fed(&["fix", "--kubernetes-version", "1.37", "-"], &read(file));
    assert_eq!(piped.status.code(), Some(0), "{}", text(&piped.stderr));
    assert_eq!(text(&piped.stdout), std::fs::read_to_string(&copy).unwrap());
    assert!(text(&piped.stderr).contains("maxLength: 32"));
    // Nothing to fix: the input as it is.
    let clean = read("examples/crds/gadgets.example.com.yaml");
    let same = celcost_fed(&["fix", "-"], &clean);
    assert_eq!((same.status.code(), same.stdout), (Some(0), clean));
    for args in [
        &["fix", "--write", "-"][..],
        &["fix", "-", "examples/crds"][..],
        &["fix", "--go", "src", "-"][..],
    ] {
        let refused = celcost_fed(args, &read(file));
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        assert!(text(&refused.stderr).starts_with("error: fix"), "{args:?}");
        assert!(refused.stdout.is_empty());
    }
}

#[test]
fn every_output_of_one_run_is_what_a_run_of_its_own_prints() {
    let dir = tempfile::tempdir().unwrap();
    let at = |f: &str| dir.path().join(f).to_str().unwrap().to_string();
    let inputs = ["examples/crds", "examples/policies", "examples/rejected"];
    let shared = ["--kubernetes-version", "1.36..1.37", "--fail-at", "50"];
    let json = format!("json={}", at("a.json"));
    let sarif = format!("sarif={}", at("b.sarif"));
    let junit = format!("junit={}", at("c.xml"));
    let github = format!("github={}", at("d.txt"));
    let mut args = vec![
        "estimate", "--output", "table", "--output", &json, "-o", &sarif,
    ];
    args.extend(["-o", &junit, "-o", &github]);
    args.extend(shared);
    args.extend(inputs);
    let together = celcost(&args);
    for (format, file) in [
        ("table", None),
        ("json", Some("a.json")),
        ("sarif", Some("b.sarif")),
        ("junit", Some("c.xml")),
        ("github", Some("d.txt")),
    ] {
        let mut one = vec!["estimate", "-o", format];
        one.extend(shared);
        one.extend(inputs);
        let alone = celcost(&one);
        assert_eq!(alone.status.code(), together.status.code());
        assert_eq!(alone.stderr, together.stderr, "{format}");
        let got = match file {
            None => together.stdout.clone(),
            Some(f) => std::fs::read(dir.path().join(f)).unwrap(),
        };
        assert!(!got.is_empty());
        assert_eq!(text(&got), text(&alone.stdout), "{format}");
    }
    // One output at most on standard output, and a file once.
    for bad in [
        &["estimate", "-o", "json", "-o", "table", "examples/crds"][..],
        &["estimate", "-o", "json=x", "-o", "sarif=x", "examples/crds"][..],
        &["estimate", "-o", "yaml", "examples/crds"][..],
        &["estimate", "-o", "json=", "examples/crds"][..],
    ] {
        let out = celcost(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(out.stdout.is_empty(), "{bad:?}");
    }
}

#[test]
fn junit_reads_back_as_a_suite_per_file_and_a_case_per_object() {
    let out = celcost(&[
        "estimate",
        "-o",
        "junit",
        "--fail-at",
        "50",
        "examples/crds",
        "examples/policies",
        "examples/rejected",
    ]);
    assert_eq!(out.status.code(), Some(1));
    // Without --fail-at, near budget passes (with its output) and policies pass.
    let near = celcost(&[
        "estimate",
        "-o",
        "junit",
        "examples/crds",
        "examples/policies",
    ]);
    let near = junit_parser::from_reader(std::io::Cursor::new(near.stdout)).unwrap();
    assert_eq!((near.tests, near.failures, near.errors), (4, 0, 0));
    let widgets = &near.suites[1].cases[0];
    assert!(widgets.status.is_success());
    assert!(
        widgets
            .system_out
            .as_deref()
            .unwrap_or_default()
            .contains("rule near budget")
    );
    let suites = junit_parser::from_reader(std::io::Cursor::new(out.stdout)).expect("JUnit XML");
    let names: Vec<&str> = suites.suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "examples/crds/gadgets.example.com.yaml",
            "examples/crds/widgets.example.com.yaml",
            "examples/policies/require-team-label.yaml",
            "examples/policies/widget-hosts.yaml",
            "examples/rejected/unbounded-tags.example.com.yaml",
        ]
    );
    let case = |suite: usize| {
        let s = &suites.suites[suite];
        assert_eq!((s.tests, s.cases.len()), (1, 1));
        &s.cases[0]
    };
    assert_eq!(
        case(0).original_name,
        "CustomResourceDefinition gadgets.example.com"
    );
    assert_eq!(case(0).file.as_deref(), Some(names[0]));
    assert_eq!(case(0).classname.as_deref(), Some(names[0]));
    assert!(case(0).status.is_success());
    // Near budget (88%), over --fail-at: a failure, and its warning as the case's output.
    assert_eq!(case(1).status.failure_as_ref().failure_type, "fail-at");
    let out1 = case(1).system_out.as_deref().unwrap_or_default();
    assert!(
        out1.contains("celcost: rule near budget: 88.1% of 10M"),
        "{out1}"
    );
    // Over --fail-at 50: a failure saying so, with what reaches it.
    let f = case(2).status.failure_as_ref();
    assert_eq!(f.failure_type, "fail-at");
    assert!(f.message.contains("50% of its limit (--fail-at)"));
    assert!(f.text.contains("62.9%"), "{}", f.text);
    // Refused by the API server: a failure naming the minors, the errors as its text.
    let r = case(4).status.failure_as_ref();
    assert_eq!(r.failure_type, "rejected");
    assert_eq!(r.message, "rejected by Kubernetes v1.35, v1.36, v1.37");
    assert!(
        r.text
            .contains("Forbidden: estimated rule cost exceeds budget")
    );
    assert_eq!(suites.failures, 4);
    assert_eq!(suites.errors, 0);
    // Unreadable input: an error case of its own suite; a stopped estimate: an error.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.yaml"), "kind: [\n").unwrap();
    let bad = celcost(&[
        "estimate",
        "-o",
        "junit",
        "--max-steps",
        "10",
        dir.path().to_str().unwrap(),
        "examples/crds/widgets.example.com.yaml",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let suites = junit_parser::from_reader(std::io::Cursor::new(bad.stdout)).unwrap();
    assert_eq!(suites.errors, 2);
    let stopped = &suites.suites[0].cases[0];
    assert_eq!(stopped.status.error_as_ref().error_type, "estimate-stopped");
    let unreadable = &suites.suites[1];
    assert_eq!(unreadable.name, "celcost: unreadable input");
    assert!(
        unreadable.cases[0]
            .name
            .contains("broken.yaml#1: YAML syntax error")
    );
}

#[test]
fn a_full_disk_is_exit_status_2() {
    if !Path::new("/dev/full").exists() {
        crate::common::skip(
            "CELCOST_REQUIRE_DEV_FULL",
            "a_full_disk_is_exit_status_2",
            "no /dev/full",
        );
        return;
    }
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    for args in [
        &["estimate", "examples/crds"][..],
        &["diff", "examples/crds", "examples/crds"][..],
        &["fix", "examples/crds"][..],
        &["crd"][..],
    ] {
        let out = celcost_cmd().args(args).stdout(full()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("error: standard output: cannot write: No space left on device"),
            "{args:?}: {err}"
        );
    }
    // An output file: the error names it, and the other outputs are still written.
    let out = celcost(&[
        "estimate",
        "-o",
        "json=/dev/full",
        "-o",
        "table",
        "examples/crds",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("error: /dev/full: cannot write"));
    assert!(text(&out.stdout).contains("CustomResourceDefinition gadgets.example.com"));
    // A reader that stops early is not an error.
    let mut child = celcost_cmd()
        .args(["estimate", "examples/crds"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let closed = child.wait_with_output().unwrap();
    assert_eq!(closed.status.code(), Some(0), "{}", text(&closed.stderr));
}

#[test]
fn help_texts_name_no_internal_module() {
    for sub in ["estimate", "diff", "fix", "controller", "crd"] {
        let out = celcost(&[sub, "--help"]);
        assert_eq!(out.status.code(), Some(0));
        let help = text(&out.stdout);
        assert!(!help.contains("crate::"), "{sub} --help: {help}");
        assert!(!help.contains("celcost::"), "{sub} --help: {help}");
    }
    let help = text(&celcost(&["estimate", "--help"]).stdout);
    for word in [
        "junit",
        "FORMAT[=FILE]",
        "--cluster",
        "--context",
        "standard input",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
}

/// kubectl on PATH, or SKIPPED (a failure under `CELCOST_REQUIRE_KUBECTL=1`).
fn kubectl(test: &str) -> bool {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok()
    {
        return true;
    }
    assert!(
        std::env::var_os("CELCOST_REQUIRE_KUBECTL").is_none_or(|v| v != "1"),
        "{test}: kubectl cannot run (CELCOST_REQUIRE_KUBECTL=1: nothing may be skipped)"
    );
    println!("SKIPPED {test}: kubectl cannot run");
    false
}

#[test]
fn installed_as_kubectl_celcost_it_is_a_kubectl_plugin() {
    let test = "installed_as_kubectl_celcost_it_is_a_kubectl_plugin";
    if !kubectl(test) {
        return;
    }
    // As `just install` and krew install it: a link named kubectl-celcost on PATH.
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("kubectl-celcost");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_celcost"), &plugin).unwrap();
    let path = std::env::join_paths(std::iter::once(dir.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let run = |args: &[&str]| {
        Command::new("kubectl")
            .current_dir(ROOT)
            .env("PATH", &path)
            .args(args)
            .output()
            .unwrap()
    };
    let list = run(&["plugin", "list"]);
    assert!(
        text(&list.stdout).contains(plugin.to_str().unwrap()),
        "{}{}",
        text(&list.stdout),
        text(&list.stderr)
    );
    let via_kubectl = run(&["celcost", "estimate", "examples/crds"]);
    let direct = celcost(&["estimate", "examples/crds"]);
    assert_eq!(
        via_kubectl.status.code(),
        Some(0),
        "{}",
        text(&via_kubectl.stderr)
    );
    assert_eq!(via_kubectl.stdout, direct.stdout);
    // Its usage names it as kubectl runs it; an exit status passes through.
    let help = run(&["celcost", "estimate", "--help"]);
    assert!(text(&help.stdout).contains("Usage: kubectl celcost estimate"));
    let rejected = run(&["celcost", "estimate", "examples/rejected"]);
    assert_eq!(rejected.status.code(), Some(1));
}

/// The krew manifest of a release: one platform per archive (linux and darwin, amd64 and arm64),
/// each selected by os and arch, with the archive's URL and sha256.
#[test]
fn the_krew_manifest_covers_each_platform() {
    let dir = tempfile::tempdir().unwrap();
    let version = env!("CARGO_PKG_VERSION");
    let targets = [
        ("x86_64-unknown-linux-gnu", "linux", "amd64"),
        ("aarch64-unknown-linux-gnu", "linux", "arm64"),
        ("x86_64-apple-darwin", "darwin", "amd64"),
        ("aarch64-apple-darwin", "darwin", "arm64"),
    ];
    for (t, _, _) in targets {
        let archive = dir.path().join(format!("celcost-v{version}-{t}.tar.gz"));
        std::fs::write(&archive, format!("an archive for {t}")).unwrap();
    }
    let out = Command::new("bash")
        .current_dir(ROOT)
        .args(["hack/krew-manifest.sh", "--repo", "example/celcost"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m: Value = serde_yaml_ng::from_slice(&out.stdout).expect("YAML");
    assert_eq!(
        m["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(m["kind"], "Plugin");
    assert_eq!(m["metadata"]["name"], "celcost");
    assert_eq!(m["spec"]["version"], format!("v{version}"));
    assert!(
        m["spec"]["shortDescription"]
            .as_str()
            .is_some_and(|s| s.len() < 60)
    );
    let platforms = m["spec"]["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), 4);
    for (t, os, arch) in targets {
        let p = platforms
            .iter()
            .find(|p| p["selector"]["matchLabels"] == serde_json::json!({"os": os, "arch": arch}))
            .unwrap_or_else(|| panic!("no platform for {os}/{arch}"));
        let name = format!("celcost-v{version}-{t}.tar.gz");
        assert_eq!(
            p["uri"],
            format!("https://github.com/example/celcost/releases/download/v{version}/{name}")
        );
        let sum = Command::new("sha256sum")
            .arg(dir.path().join(&name))
            .output()
            .unwrap();
        let sum = text(&sum.stdout);
        assert_eq!(p["sha256"].as_str(), sum.split_whitespace().next());
        assert_eq!(p["bin"], "celcost");
        assert_eq!(p["files"][0]["from"], "celcost");
    }
    // A missing archive is an error, not a manifest without its platform.
    std::fs::remove_file(
        dir.path()
            .join(format!("celcost-v{version}-x86_64-apple-darwin.tar.gz")),
    )
    .unwrap();
    let out = Command::new("bash")
        .current_dir(ROOT)
        .args(["hack/krew-manifest.sh", "--repo", "example/celcost"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("x86_64-apple-darwin"));
}

/// `[package.metadata.binstall]` names the archives the release and the krew manifest use.
#[test]
fn binstall_finds_the_release_archives() {
    let toml = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let at = toml
        .find("[package.metadata.binstall]")
        .expect("binstall metadata");
    let section = &toml[at..];
    let section = &section[..section[1..].find("\n[").map_or(section.len(), |i| i + 1)];
    assert!(
        section.contains(
            r#"pkg-url = "{ repo }/releases/download/v{ version }/{ name }-v{ version }-{ target }{ archive-suffix }""#
        ),
        "{section}"
    );
    assert!(section.contains(r#"pkg-fmt = "tgz""#), "{section}");
    let archive = Command::new("bash")
        .current_dir(ROOT)
        .args([
            "hack/release-archive.sh",
            "--name-only",
            "x86_64-unknown-linux-gnu",
        ])
        .output()
        .unwrap();
    assert_eq!(
        text(&archive.stdout).trim(),
        format!(
            "celcost-v{}-x86_64-unknown-linux-gnu.tar.gz",
            env!("CARGO_PKG_VERSION")
        )
    );
}
