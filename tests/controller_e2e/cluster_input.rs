//! `celcost estimate --cluster` against the API server in KUBECONFIG: objects applied from
//! files are reported as `celcost estimate` reports the files (sources and positions aside),
//! judged by the cluster's minor and the next, each CRD with the next minor's verdict on an
//! update that keeps it as stored (what `celcost diff FILES FILES` says on that minor); and a
//! user who may not list CRDs gets an error naming what `--cluster` needs, while the policies it
//! may list are still reported. No operator runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use super::{SERIAL, cluster, skip, suffix};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn celcost(args: &[&str], env: &[(&str, &Path)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .expect("run celcost")
}

fn kubectl(args: &[&str]) -> Output {
    let out = Command::new("kubectl")
        .args(args)
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// JSON lines by `(kind, name)`.
fn by_object(stdout: &[u8]) -> BTreeMap<(String, String), Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .map(|v| {
            let key = (
                v["kind"].as_str().unwrap_or_default().to_string(),
                v["name"].as_str().unwrap_or_default().to_string(),
            );
            (key, v)
        })
        .collect()
}

/// A report without what says where it was read: its source, every location, and the order of
/// a schema's rules (the order of its properties, which the API server serves sorted by name).
fn without_places(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for k in ["location", "messageExpressionLocation", "errorLocations"] {
                    o.remove(k);
                }
                o.values_mut().for_each(strip);
                if let Some(Value::Array(rules)) = o.get_mut("rules") {
                    rules.sort_by_key(|r| (r["path"].to_string(), r["index"].as_u64()));
                }
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.remove("source");
    }
    if let Some(u) = v.get_mut("update").and_then(Value::as_object_mut) {
        u.remove("storedSource");
    }
    strip(&mut v);
    v
}

/// The files applied: the examples, a CRD 1.37 refuses on create that 1.36 accepts, and (where
/// served) a MutatingAdmissionPolicy.
fn write_objects(dir: &Path, with_map: bool) {
    let mut files: Vec<PathBuf> = Vec::new();
    for d in ["examples/crds", "examples/policies"] {
        for e in std::fs::read_dir(Path::new(ROOT).join(d)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    files.push(Path::new(ROOT).join("tests/data/upgrade-1.37/backendtimeoutpolicies.yaml"));
    for f in files {
        std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
    if with_map {
        let map = super::test_map("celcost-cli-e2e-labels");
        std::fs::write(dir.join("map.json"), map.to_string()).unwrap();
    }
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn estimate_cluster_reports_what_the_files_report() {
    let test = "estimate_cluster_reports_what_the_files_report";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    let info = client.apiserver_version().await.unwrap();
    let minor: u32 = info.minor.trim_end_matches('+').parse().unwrap();
    if minor != 36 {
        skip(
            test,
            &format!(
                "needs a 1.36 API server (1.37 known to celcost), not {}",
                info.git_version
            ),
        );
        return;
    }
    let with_map = super::map_api(&client)
        .list(&kube::api::ListParams::default().limit(1))
        .await
        .is_ok();
    let dir = tempfile::tempdir().unwrap();
    write_objects(dir.path(), with_map);
    let files = dir.path().to_str().unwrap();
    kubectl(&["apply", "--server-side", "--force-conflicts", "-f", files]);

    // Pages of 2 objects: every list is read in several (continue tokens).
    let page = Path::new("2");
    let live = celcost(
        &["estimate", "--cluster", "--output", "json"],
        &[("CELCOST_LIST_PAGE", page)],
    );
    let live_err = String::from_utf8_lossy(&live.stderr);
    // Every list read (the exit status is the whole cluster's, other tests' objects included).
    assert!(
        live.status.code().is_some() && !live_err.contains("error: cluster:"),
        "--cluster: {live_err}"
    );
    let live = by_object(&live.stdout);
    let range = format!("1.{minor}..1.{}", minor + 1);
    let offline = celcost(
        &[
            "estimate",
            "--output",
            "json",
            "--kubernetes-version",
            &range,
            files,
        ],
        &[],
    );
    assert!(offline.status.code().is_some_and(|c| c < 2));
    let offline = by_object(&offline.stdout);
    let next = format!("1.{}", minor + 1);
    let diff = celcost(
        &[
            "diff",
            "--output",
            "json",
            "--kubernetes-version",
            &next,
            files,
            files,
        ],
        &[],
    );
    let updates: BTreeMap<String, Value> = String::from_utf8_lossy(&diff.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|d| (d["name"].as_str().unwrap().to_string(), d["update"].clone()))
        .collect();
    assert_eq!(offline.len(), 5 + usize::from(with_map), "{offline:?}");
    let mut refused_by_next = 0;
    for (key, file_report) in &offline {
        let Some(cluster_report) = live.get(key) else {
            panic!("{key:?} is not in the --cluster report: {live_err}");
        };
        let (kind, name) = key;
        let short = match kind.as_str() {
            "CustomResourceDefinition" => "crd",
            "ValidatingAdmissionPolicy" => "vap",
            _ => "map",
        };
        assert_eq!(cluster_report["source"], format!("cluster:{short}/{name}"));
        let versions: Vec<&str> = cluster_report["byVersion"]["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["kubernetesVersion"].as_str().unwrap())
            .collect();
        assert_eq!(
            versions,
            [format!("v1.{minor}"), format!("v1.{}", minor + 1)]
        );
        let mut expected = file_report.clone();
        if kind == "CustomResourceDefinition" {
            let update = &updates[name];
            assert!(update.is_object(), "{name}: no update verdict from diff");
            assert_eq!(
                cluster_report["update"]["storedSource"],
                cluster_report["source"]
            );
            expected["update"] = update.clone();
            if cluster_report["byVersion"]["verdicts"][1]["valid"] == false {
                refused_by_next += 1;
                // What the next minor refuses on create, it lets an update that keeps it pass.
                assert_eq!(cluster_report["update"]["valid"], true, "{name}");
            }
        }
        assert_eq!(
            without_places(cluster_report.clone()),
            without_places(expected),
            "{key:?}: --cluster and the file differ"
        );
    }
    assert_eq!(
        refused_by_next,
        1,
        "backendtimeoutpolicies: refused by 1.{}",
        minor + 1
    );
    // The table names the cluster's objects by source too, and says the same verdicts.
    let table = celcost(&["estimate", "--cluster"], &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(
            "CustomResourceDefinition widgets.example.com (cluster:crd/widgets.example.com)"
        ),
        "{text}"
    );
    println!(
        "{test}: {} objects of the files reported alike from the cluster",
        offline.len()
    );
}

/// A kubeconfig of the cluster in KUBECONFIG with two contexts: `no-list` (current), a service
/// account's token, and `admin`, the kubeconfig's own user.
fn kubeconfig_with(token: &str, path: &Path) {
    let out = kubectl(&["config", "view", "--raw", "--minify", "-o", "json"]);
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cluster = v["clusters"][0]["name"].clone();
    let admin = v["users"][0]["name"].clone();
    v["users"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "no-list", "user": {"token": token}}));
    v["contexts"] = json!([
        {"name": "no-list", "context": {"cluster": cluster, "user": "no-list"}},
        {"name": "admin", "context": {"cluster": cluster, "user": admin}},
    ]);
    v["current-context"] = json!("no-list");
    std::fs::write(path, v.to_string()).unwrap();
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn estimate_cluster_without_list_on_crds_says_what_it_needs() {
    let test = "estimate_cluster_without_list_on_crds_says_what_it_needs";
    let _serial = SERIAL.lock().await;
    if cluster(test).await.is_none() {
        return;
    }
    let name = format!("celcost-cli-no-crds-{}", suffix());
    let policies_only = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["admissionregistration.k8s.io"],
                   "resources": ["validatingadmissionpolicies", "mutatingadmissionpolicies"],
                   "verbs": ["list"]}]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]
    });
    let dir = tempfile::tempdir().unwrap();
    let rbac = dir.path().join("rbac.json");
    std::fs::write(
        &rbac,
        json!({"apiVersion": "v1", "kind": "List", "items": [policies_only, binding]}).to_string(),
    )
    .unwrap();
    let crds = Path::new(ROOT).join("examples/crds");
    kubectl(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        crds.to_str().unwrap(),
    ]);
    kubectl(&["create", "serviceaccount", &name, "-n", "default"]);
    kubectl(&["apply", "-f", rbac.to_str().unwrap()]);
    let token = kubectl(&[
        "create",
        "token",
        &name,
        "-n",
        "default",
        "--duration",
        "10m",
    ]);
    let token = String::from_utf8(token.stdout).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    kubeconfig_with(token.trim(), &kubeconfig);
    let env = [("KUBECONFIG", kubeconfig.as_path())];

    let out = celcost(&["estimate", "--cluster", "--output", "json"], &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: cluster: cannot list customresourcedefinitions.apiextensions.k8s.io")
            && stderr.contains("forbidden")
            && stderr.contains(&format!("system:serviceaccount:default:{name}"))
            && stderr.contains("`celcost estimate --cluster` needs list on customresourcedefinitions.apiextensions.k8s.io"),
        "{stderr}"
    );
    // What it may list is still reported.
    let reports = by_object(&out.stdout);
    assert!(
        reports.keys().all(|(k, _)| k != "CustomResourceDefinition"),
        "{reports:?}"
    );
    println!("{test}: {}", stderr.trim());
    // The same kubeconfig's other context may.
    let admin = celcost(
        &[
            "estimate",
            "--cluster",
            "--context",
            "admin",
            "--output",
            "json",
        ],
        &env,
    );
    let admin_err = String::from_utf8_lossy(&admin.stderr);
    assert!(!admin_err.contains("error: cluster:"), "{admin_err}");
    assert!(
        by_object(&admin.stdout)
            .keys()
            .any(|(k, _)| k == "CustomResourceDefinition"),
        "--context admin: {admin_err}"
    );
    for (kind, n) in [("clusterrolebinding", &name), ("clusterrole", &name)] {
        kubectl(&["delete", kind, n]);
    }
    kubectl(&["delete", "serviceaccount", &name, "-n", "default"]);
}
