//! The GitHub Action (`action.yml`) as a runner runs it, offline: its `run` steps executed in
//! order with bash as GitHub calls it (`bash --noprofile --norc -eo pipefail`), the environment
//! their `env:` expressions give (inputs, `github.*`, earlier steps' outputs), and the runner's
//! files (`GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `GITHUB_PATH`, `RUNNER_TEMP`) pointed at
//! temporary files. The install step downloads a release archive of hack/release-archive.sh
//! from a `file://` URL (`CELCOST_RELEASE_URL`), or, when there is none, runs `cargo install
//! --locked` (a stand-in `CARGO` that records its arguments). The estimate step's annotations,
//! SARIF log and job summary are what three runs of `celcost estimate` print, and the last step
//! fails as celcost did. (The metadata itself is checked against GitHub's schema by
//! check-jsonschema in .ci/run.)

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const REPOSITORY: &str = "example/celcost";

fn action() -> Value {
    let text = std::fs::read_to_string(Path::new(ROOT).join("action.yml")).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

/// A runner's state between steps.
struct Runner {
    temp: tempfile::TempDir,
    inputs: HashMap<String, String>,
    /// Each step's outputs (`GITHUB_OUTPUT`), by id.
    outputs: HashMap<String, HashMap<String, String>>,
    /// `GITHUB_PATH` so far, newest first.
    path: Vec<PathBuf>,
    extra_env: Vec<(String, String)>,
}

impl Runner {
    fn new(given: &[(&str, &str)]) -> Runner {
        let mut inputs: HashMap<String, String> = HashMap::new();
        for (name, spec) in action()["inputs"].as_object().unwrap() {
            inputs.insert(name.clone(), spec["default"].as_str().unwrap_or("").into());
        }
        for (k, v) in given {
            assert!(inputs.contains_key(*k), "action.yml has no input {k}");
            inputs.insert(k.to_string(), v.to_string());
        }
        Runner {
            temp: tempfile::tempdir().unwrap(),
            inputs,
            outputs: HashMap::new(),
            path: Vec::new(),
            extra_env: Vec::new(),
        }
    }

    /// A `${{ … }}` expression of action.yml: the few it uses.
    fn eval(&self, expr: &str) -> String {
        let e = expr.trim();
        if let Some(name) = e.strip_prefix("inputs.") {
            return self.inputs[name].clone();
        }
        if let Some(rest) = e.strip_prefix("steps.") {
            let (id, name) = rest.split_once(".outputs.").unwrap();
            return self
                .outputs
                .get(id)
                .and_then(|o| o.get(name))
                .cloned()
                .unwrap_or_default();
        }
        match e {
            "github.action_path" => ROOT.to_string(),
            "github.action_repository || github.repository" => REPOSITORY.to_string(),
            _ => panic!("action.yml: an expression the test does not know: {e}"),
        }
    }

    /// A value with its `${{ … }}` expressions evaluated.
    fn expand(&self, v: &str) -> String {
        let mut out = String::new();
        let mut rest = v;
        while let Some(at) = rest.find("${{") {
            out.push_str(&rest[..at]);
            let end = rest[at..].find("}}").unwrap() + at;
            out.push_str(&self.eval(&rest[at + 3..end]));
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }

    /// PATH as the runner gives a step: `GITHUB_PATH`'s entries first, then the test's own
    /// without any that holds a celcost (the action must install its own).
    fn path_var(&self) -> std::ffi::OsString {
        let own = std::env::var_os("PATH").unwrap_or_default();
        let kept = std::env::split_paths(&own).filter(|d| !d.join("celcost").exists());
        std::env::join_paths(self.path.iter().cloned().chain(kept)).unwrap()
    }

    /// Runs one `run` step; returns its output and job summary.
    fn run(&mut self, step: &Value) -> (Output, String) {
        assert_eq!(step["shell"], "bash", "{step:?}");
        let dir = self.temp.path();
        let n = self.outputs.len();
        let files = |what: &str| dir.join(format!("{what}-{n}"));
        let (output, summary, path) = (files("output"), files("summary"), files("path"));
        for f in [&output, &summary, &path] {
            std::fs::write(f, "").unwrap();
        }
        let script = files("script.sh");
        std::fs::write(&script, step["run"].as_str().unwrap()).unwrap();
        let runner_temp = dir.join("runner-temp");
        std::fs::create_dir_all(&runner_temp).unwrap();
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script)
            .current_dir(ROOT)
            .env("PATH", self.path_var())
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_PATH", &path)
            .env("GITHUB_ENV", files("env"))
            .env("RUNNER_TEMP", &runner_temp)
            .envs(self.extra_env.iter().map(|(k, v)| (k, v)));
        for (k, v) in step["env"].as_object().into_iter().flatten() {
            cmd.env(k, self.expand(v.as_str().unwrap()));
        }
        let out = cmd.output().unwrap();
        let id = step["id"].as_str().unwrap_or("").to_string();
        let outputs = std::fs::read_to_string(&output).unwrap();
        let parsed = outputs
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.outputs
            .insert(if id.is_empty() { format!("#{n}") } else { id }, parsed);
        for l in std::fs::read_to_string(&path).unwrap().lines().rev() {
            self.path.insert(0, PathBuf::from(l));
        }
        (out, std::fs::read_to_string(&summary).unwrap())
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn steps() -> Vec<Value> {
    action()["runs"]["steps"].as_array().unwrap().clone()
}

fn target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-gnu",
        ("linux", "aarch64") => "aarch64-unknown-linux-gnu",
        ("macos", "x86_64") => "x86_64-apple-darwin",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        other => panic!("no release target for {other:?}"),
    }
}

/// A release of this build, as hack/release-archive.sh makes it, under `dir/vVERSION/`.
fn release_in(dir: &Path) {
    let version = env!("CARGO_PKG_VERSION");
    let out = Command::new("bash")
        .current_dir(ROOT)
        .arg("hack/release-archive.sh")
        .arg(target())
        .arg(env!("CARGO_BIN_EXE_celcost"))
        .arg(dir.join(format!("v{version}")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn celcost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_celcost"))
        .current_dir(ROOT)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_action_installs_a_release_and_writes_every_output_in_one_run() {
    let steps = steps();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["Install celcost", "CEL costs", "Code scanning", "Verdict"]
    );
    let mut r = Runner::new(&[
        (
            "paths",
            "examples/crds\nexamples/policies examples/rejected",
        ),
        ("kubernetes-version", "1.36..1.37"),
        ("fail-at", "90"),
    ]);
    let release = r.temp.path().join("release");
    release_in(&release);
    r.extra_env.push((
        "CELCOST_RELEASE_URL".into(),
        format!("file://{}", release.display()),
    ));

    let (install, _) = r.run(&steps[0]);
    assert!(
        install.status.success(),
        "install: {}",
        text(&install.stderr)
    );
    assert!(
        text(&install.stdout).contains("celcost 0.1.0 from file://"),
        "{}",
        text(&install.stdout)
    );
    let bin = r.temp.path().join("runner-temp/celcost/bin");
    assert_eq!(r.path, std::slice::from_ref(&bin));
    assert!(bin.join("celcost").exists());

    let (estimate, summary) = r.run(&steps[1]);
    assert!(estimate.status.success(), "{}", text(&estimate.stderr));
    let shared = [
        "--near-budget-percent",
        "80",
        "--kubernetes-version",
        "1.36..1.37",
        "--fail-at",
        "90",
        "examples/crds",
        "examples/policies",
        "examples/rejected",
    ];
    let alone = |format: &str| {
        let mut args = vec!["estimate", "-o", format];
        args.extend(shared);
        celcost(&args)
    };
    let github = alone("github");
    assert_eq!(github.status.code(), Some(1));
    assert_eq!(text(&estimate.stdout), text(&github.stdout));
    assert!(text(&estimate.stdout).starts_with("::"));
    assert_eq!(summary, text(&alone("markdown").stdout));
    let outputs = &r.outputs["estimate"];
    assert_eq!(outputs["exit-code"], "1");
    let sarif = std::fs::read_to_string(&outputs["sarif-file"]).unwrap();
    assert_eq!(sarif, text(&alone("sarif").stdout));
    let log: Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(log["version"], "2.1.0");

    // Code scanning: the upload of that log, under its category.
    let upload = &steps[2];
    assert!(
        upload["uses"]
            .as_str()
            .unwrap()
            .starts_with("github/codeql-action/upload-sarif@")
    );
    assert_eq!(
        r.expand(upload["with"]["sarif_file"].as_str().unwrap()),
        outputs["sarif-file"]
    );
    assert_eq!(upload["with"]["category"], "celcost");
    assert!(upload["if"].as_str().unwrap().starts_with("always()"));

    // The job fails as celcost did, after the upload.
    assert_eq!(steps[3]["if"], "always()");
    let (verdict, _) = r.run(&steps[3]);
    assert_eq!(verdict.status.code(), Some(1));
}

#[test]
fn without_a_release_archive_the_action_builds_with_cargo_install_locked() {
    let steps = steps();
    let mut r = Runner::new(&[("paths", "examples/crds")]);
    let empty = r.temp.path().join("no-release");
    std::fs::create_dir_all(&empty).unwrap();
    // A stand-in cargo: records its arguments and installs this build where --root says.
    let record = r.temp.path().join("cargo-args");
    let cargo = r.temp.path().join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > '{}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=$2; shift; done\nmkdir -p \"$root/bin\" && ln -s '{}' \"$root/bin/celcost\"\n",
            record.display(),
            env!("CARGO_BIN_EXE_celcost")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    r.extra_env.push((
        "CELCOST_RELEASE_URL".into(),
        format!("file://{}", empty.display()),
    ));
    r.extra_env
        .push(("CARGO".into(), cargo.display().to_string()));
    let (install, _) = r.run(&steps[0]);
    assert!(install.status.success(), "{}", text(&install.stderr));
    assert!(
        text(&install.stdout)
            .contains("::notice title=celcost::no release archive of celcost 0.1.0"),
        "{}",
        text(&install.stdout)
    );
    let root = r.temp.path().join("runner-temp/celcost");
    let args = std::fs::read_to_string(&record).unwrap();
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "install",
            "--locked",
            "--root",
            root.to_str().unwrap(),
            "--path",
            ROOT
        ]
    );
    // The build stands in for the release: the estimate runs on it.
    assert_eq!(r.path, [root.join("bin")]);
    let (estimate, summary) = r.run(&steps[1]);
    assert!(estimate.status.success(), "{}", text(&estimate.stderr));
    assert_eq!(
        summary,
        text(&celcost(&["estimate", "-o", "markdown", "examples/crds"]).stdout)
    );
    assert_eq!(r.outputs["estimate"]["exit-code"], "0");
    let (verdict, _) = r.run(&steps[3]);
    assert_eq!(verdict.status.code(), Some(0));
}
