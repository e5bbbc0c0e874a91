//! End-to-end tests of `celcost controller` against the API server in KUBECONFIG, with the
//! operator run as a local process. Not part of `cargo test`: every test is `#[ignore]`d and run
//! by `just e2e` (`cargo test --test controller_e2e -- --ignored --test-threads=1`). Each test
//! prints SKIPPED and passes when no cluster is reachable.
//!
//! - Deleting reports with their targets needs the garbage collector (kube-controller-manager).
//! - The API server restart test runs `$CELCOST_E2E_RESTART_CMD` (e.g. a script that stops the
//!   API server for a few seconds and starts it again); it is skipped when that is unset.
//! - `faults` (API server outages, freezes, expired watches, throttling) and `hostile` (objects
//!   that would take an estimator down) are in their own modules; see e2e/README.md.
//! - `scale_cold_start` is the scale benchmark (`just bench-scale`): 2,000 CRDs renamed from the
//!   corpus in `../shared/corpus/crds` (or `$CELCOST_CORPUS`), reconciled from a cold start.

use std::collections::{BTreeSet, HashSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use celcost::Estimator;
use celcost::controller::{CostReport, model_version};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use corpus::corpus_crds;

mod cluster_input;
#[path = "../../benches/support/corpus.rs"]
mod corpus;
mod faults;
mod ha;
mod hostile;
mod in_cluster;
mod metrics;
mod reports;
mod update;
mod webhook;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A client for the cluster in KUBECONFIG, or None (with a SKIPPED line) when there is none.
/// With `CELCOST_E2E_REQUIRE_CLUSTER=1` (CI) a missing cluster fails the test instead.
async fn cluster(test: &str) -> Option<Client> {
    let why = match Client::try_default().await {
        Ok(client) => {
            match tokio::time::timeout(Duration::from_secs(5), client.apiserver_version()).await {
                Ok(Ok(_)) => return Some(client),
                Ok(Err(e)) => format!("the API server is not reachable: {e}"),
                Err(_) => "the API server did not answer within 5 s".to_string(),
            }
        }
        Err(e) => format!("no Kubernetes client configuration (KUBECONFIG): {e}"),
    };
    skip(test, &why);
    None
}

/// Prints SKIPPED, or fails where CI requires every test to run (`CELCOST_E2E_REQUIRE_CLUSTER=1`).
fn skip(test: &str, why: &str) {
    assert!(
        std::env::var_os("CELCOST_E2E_REQUIRE_CLUSTER").is_none_or(|v| v != "1"),
        "{test}: {why} (CELCOST_E2E_REQUIRE_CLUSTER=1: nothing may be skipped)"
    );
    println!("SKIPPED {test}: {why}");
}

fn suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{:x}", nanos % 0xff_ffff_ffff)
}

/// Polls `f` until it returns Some, or panics with `what` after `timeout`.
async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Applies crds/costreport.yaml and waits until it is served.
async fn install_crd(client: &Client) {
    let yaml = celcost::controller::crd_yaml();
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(&yaml).unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        "costreports.celcost.io",
        &PatchParams::apply("celcost-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("install the CostReport CRD");
    wait_established(client, "costreports.celcost.io").await;
}

async fn wait_established(client: &Client, name: &str) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    eventually(
        &format!("CRD {name} established"),
        Duration::from_secs(60),
        || async {
            let crd = api.get_opt(name).await.ok()??;
            let established = crd
                .status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            established.then_some(())
        },
    )
    .await;
}

/// The samples of metric `name` in a Prometheus text exposition, summed over the label sets
/// that contain `label` (all when empty); 0 when there is none.
fn sum_samples(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter(|l| l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>()
        + 0.0 // not -0.0 when there is none
}

/// The operator, run as a local process; killed on drop.
struct Operator {
    child: Child,
    port: u16,
    /// `/metrics` (plain HTTP unless a test asks for `--metrics-secure`).
    metrics_port: u16,
    log: PathBuf,
}

/// A free local port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` in plain HTTP from a local port: (status, body).
fn get_from(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let code = buf.split_whitespace().nth(1)?.parse().ok()?;
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

impl Operator {
    fn start(name: &str, extra: &[&str]) -> Operator {
        Self::start_with(name, extra, &[])
    }

    /// With extra environment variables (e.g. another `KUBECONFIG`).
    fn start_with(name: &str, extra: &[&str], env: &[(&str, &str)]) -> Operator {
        let port = free_port();
        let metrics_port = free_port();
        let metrics_address = format!("127.0.0.1:{metrics_port}");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-logs");
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        // `CELCOST_E2E_OPERATOR`: another build of the binary (e.g. the release one, for the
        // scale benchmark from a debug test build).
        let binary = std::env::var_os("CELCOST_E2E_OPERATOR").map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_celcost")),
            PathBuf::from,
        );
        let child = Command::new(binary)
            .args([
                "controller",
                "--listen-address",
                &format!("127.0.0.1:{port}"),
                "--metrics-bind-address",
                &metrics_address,
            ])
            // `/metrics` in plain HTTP unless a test asks for the secure server.
            .args(
                (!extra.iter().any(|a| a.starts_with("--metrics-secure")))
                    .then_some("--metrics-secure=false"),
            )
            // One process per test unless a test elects a leader among several: no Lease.
            .args(
                (!extra
                    .iter()
                    .any(|a| a.starts_with("--leader-elect") || a.starts_with("--lease")))
                .then_some("--leader-elect=false"),
            )
            // The admission webhook only where a test asks for it (`--webhook...`): it would
            // listen on :9443 and write a Secret otherwise.
            .args((!extra.iter().any(|a| a.starts_with("--webhook"))).then_some("--webhook=false"))
            .args(extra)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(out)
            .spawn()
            .expect("start celcost controller");
        Operator {
            child,
            port,
            metrics_port,
            log,
        }
    }

    fn get(&self, path: &str) -> Option<(u16, String)> {
        get_from(self.port, path)
    }

    /// `/metrics` from the plain metrics server.
    fn scrape(&self) -> Option<(u16, String)> {
        get_from(self.metrics_port, "/metrics")
    }

    async fn wait_ready(&mut self, timeout: Duration) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "the operator exited ({status}); log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            // Ready (the webhook, when on, can answer) and every watch listed.
            if matches!(self.get("/readyz"), Some((200, _)))
                && matches!(self.get("/watches"), Some((200, _)))
            {
                return;
            }
            assert!(
                start.elapsed() < timeout,
                "operator not ready after {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A counter or gauge summed over its label sets (0 when absent).
    fn metric(&self, name: &str) -> f64 {
        self.metric_with(name, "")
    }

    /// As [`Operator::metric`], over the label sets that contain `label` (`reason="gone"`).
    fn metric_with(&self, name: &str, label: &str) -> f64 {
        let (_, body) = self.scrape().unwrap_or_default();
        sum_samples(&body, name, label)
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// CPU time (user + system) used so far, in seconds.
    fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // After the command name (in parentheses) come the state (field 3), then numbers:
        // utime and stime are fields 14 and 15, in clock ticks (100 per second).
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
        (tick(11) + tick(12)) / 100.0
    }

    /// Peak resident memory (VmHWM) in KiB.
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CRD whose one rule costs about `items` × 824: 1,000 → 8.2 %, 10,000 → 82 % (near).
fn test_crd(group: &str, items: u64) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}"), "labels": {"celcost.io/e2e": "true"}},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"names": {
                        "type": "array", "maxItems": items,
                        "items": {"type": "string", "maxLength": 1024},
                        "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]
                    }}}}
                }}
            }]
        }
    })
}

/// A v1 MutatingAdmissionPolicy that labels ConfigMaps.
fn test_map(name: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]
            }]},
            "mutations": [{
                "patchType": "ApplyConfiguration",
                "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{labels: {'celcost': 'e2e'}}}"}
            }]
        }
    })
}

/// v1 MutatingAdmissionPolicies (k8s-openapi has no type for them).
fn map_api(client: &Client) -> Api<kube::api::DynamicObject> {
    Api::all_with(
        client.clone(),
        &kube::discovery::ApiResource::erase::<celcost::controller::map::MutatingAdmissionPolicyV1>(
            &(),
        ),
    )
}

/// Creates a CRD, retrying while the API server is still coming up (after a restart it can
/// answer /readyz before every handler is back).
async fn create_crd(client: &Client, crd: &Value) -> CustomResourceDefinition {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(crd.clone()).unwrap();
    let name = crd.name_any();
    eventually(
        &format!("create CRD {name}"),
        Duration::from_secs(60),
        || async {
            match api.create(&PostParams::default(), &crd).await {
                Ok(c) => Some(c),
                Err(kube::Error::Api(s)) if s.code == 409 => api.get(&name).await.ok(),
                Err(e) => {
                    println!("create CRD {name}: {e}; retrying");
                    None
                }
            }
        },
    )
    .await
}

async fn delete_crd(client: &Client, name: &str) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let _ = api.delete(name, &DeleteParams::default()).await;
}

/// Waits for the report of `name` to reflect `generation`.
async fn report_for(client: &Client, report: &str, generation: i64) -> CostReport {
    let api: Api<CostReport> = Api::all(client.clone());
    eventually(
        &format!("report {report} at generation {generation}"),
        Duration::from_secs(60),
        || async {
            let r = api.get_opt(report).await.ok()??;
            (r.status.as_ref()?.observed_generation == Some(generation)).then_some(r)
        },
    )
    .await
}

fn condition<'a>(r: &'a CostReport, type_: &str) -> (&'a str, &'a str) {
    let c = r
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition"));
    (c.status.as_str(), c.reason.as_str())
}

/// Waits until the operator has estimated every CRD of the cluster, every test CRD not being
/// deleted has its report at its generation, and the operator's writes have stopped for 2 s;
/// returns the number of CRDs.
async fn all_estimated(client: &Client, op: &Operator) -> usize {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let reports: Api<CostReport> = Api::all(client.clone());
    let targets = crds
        .list_metadata(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();
    eventually(
        "every target estimated",
        Duration::from_secs(180),
        || async { (op.metric("celcost_estimates_total") >= targets as f64).then_some(()) },
    )
    .await;
    // A count of estimates can be reached while a write is still waiting out a backoff: the
    // reports themselves must show every test CRD (those `test_crd` makes, which the tests
    // change) at its generation.
    let ours = ListParams::default().labels("celcost.io/e2e=true");
    eventually(
        "every test CRD's report at its generation",
        Duration::from_secs(180),
        || async {
            let generations: std::collections::HashMap<String, i64> = reports
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .filter_map(|r| {
                    let g = r.status.as_ref()?.observed_generation?;
                    Some((r.name_any(), g))
                })
                .collect();
            let live = crds.list_metadata(&ours).await.ok()?.items;
            live.iter()
                .filter(|c| c.metadata.deletion_timestamp.is_none())
                .all(|c| {
                    generations.get(&format!("crd.{}", c.name_any()))
                        == c.metadata.generation.as_ref()
                })
                .then_some(())
        },
    )
    .await;
    let mut writes = op.metric("celcost_report_writes_total");
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = op.metric("celcost_report_writes_total");
        if now == writes {
            return targets;
        }
        writes = now;
    }
}

/// The estimator's numbers for the object as the API server stores it.
async fn estimate_of(client: &Client, name: &str) -> celcost::report::ObjectReport {
    let info = client.apiserver_version().await.unwrap();
    let version = model_version(&info.major, &info.minor);
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = api.get(name).await.unwrap();
    Estimator::new(version)
        .estimate(&serde_json::to_value(&crd).unwrap(), "cluster")
        .unwrap()
}

async fn events_about(client: &Client, name: &str) -> Vec<K8sEvent> {
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), "default");
    api.list(&ListParams::default())
        .await
        .map(|l| {
            l.items
                .into_iter()
                .filter(|e| {
                    e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                        && e.reporting_controller.as_deref() == Some("celcost")
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn reports_follow_their_targets() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("reports_follow_their_targets").await else {
        return;
    };
    install_crd(&client).await;
    let mut op = Operator::start("follow", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    // The cluster's other targets first, so that the write counts below are ours.
    all_estimated(&client, &op).await;
    let reports: Api<CostReport> = Api::all(client.clone());

    // A CRD within budget: the report has the estimator's numbers.
    let group = format!("follow-{}.e2e.celcost.io", suffix());
    let name = format!("widgets.{group}");
    let report_name = format!("crd.{name}");
    create_crd(&client, &test_crd(&group, 1000)).await;
    let r = report_for(&client, &report_name, 1).await;
    let expected = estimate_of(&client, &name).await;
    let status = r.status.as_ref().unwrap();
    let summary = status.summary.as_ref().unwrap();
    assert_eq!(
        summary.highest_rule_cost as u64,
        expected.highest_rule_cost()
    );
    assert_eq!(
        summary.highest_total_cost as u64,
        expected.highest_total_cost()
    );
    assert_eq!(
        status.schemas[0].rules[0].cost as u64,
        expected.schemas[0].rules[0].cost
    );
    assert_eq!(
        status.schemas[0].rules[0].path,
        expected.schemas[0].rules[0].path
    );
    assert_eq!(condition(&r, "Ready"), ("True", "Estimated"));
    assert_eq!(condition(&r, "WithinBudget"), ("True", "WithinBudget"));
    assert_eq!(r.spec.target_ref.name, name);
    let owner = &r.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CustomResourceDefinition", name.as_str())
    );
    println!(
        "within budget: {report_name}: rule {} total {}",
        summary.highest_rule_percent, summary.highest_total_percent
    );

    // An update to near budget is followed: generation 2, new numbers, a Warning event.
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"versions": test_crd(&group, 10_000)["spec"]["versions"]}})),
    )
    .await
    .unwrap();
    let r = report_for(&client, &report_name, 2).await;
    let expected = estimate_of(&client, &name).await;
    let summary = r.status.as_ref().unwrap().summary.as_ref().unwrap();
    assert_eq!(
        summary.highest_rule_cost as u64,
        expected.highest_rule_cost()
    );
    assert_eq!(condition(&r, "WithinBudget"), ("False", "RuleNearBudget"));
    let ev = eventually(
        "a RuleNearBudget event",
        Duration::from_secs(30),
        || async {
            events_about(&client, &name)
                .await
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("RuleNearBudget"))
        },
    )
    .await;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert_eq!(
        ev.related.as_ref().and_then(|r| r.name.as_deref()),
        Some(report_name.as_str())
    );
    println!("near budget: {report_name}: {:?}", ev.note);

    // Nothing changes: no more writes (no storm on watch noise).
    let writes = op.metric("celcost_report_writes_total");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(op.metric("celcost_report_writes_total"), writes);

    // Back within budget: a Normal event.
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"versions": test_crd(&group, 1000)["spec"]["versions"]}})),
    )
    .await
    .unwrap();
    let r = report_for(&client, &report_name, 3).await;
    assert_eq!(condition(&r, "WithinBudget"), ("True", "WithinBudget"));
    eventually(
        "a RuleWithinBudget event",
        Duration::from_secs(30),
        || async {
            events_about(&client, &name)
                .await
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("RuleWithinBudget"))
        },
    )
    .await;
    let near_events = events_about(&client, &name)
        .await
        .iter()
        .filter(|e| e.reason.as_deref() == Some("RuleNearBudget"))
        .count();
    assert_eq!(near_events, 1, "one event per transition");

    // The report goes with its target (garbage collector).
    delete_crd(&client, &name).await;
    eventually(
        "report deleted by the garbage collector",
        Duration::from_secs(90),
        || async { matches!(reports.get_opt(&report_name).await, Ok(None)).then_some(()) },
    )
    .await;
    assert!(op.alive());
    println!("deleted with its target: {report_name}");
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn policies_get_reports() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("policies_get_reports").await else {
        return;
    };
    install_crd(&client).await;
    let mut op = Operator::start("vap", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let name = format!("e2e-{}.celcost.io", suffix());
    let vap: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]
            }]},
            "validations": [
                {"expression": "object.spec.replicas <= 5"},
                {"expression": "object.metadata.name.size() < 64", "message": "short names"}
            ]
        }
    }))
    .unwrap();
    let api: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let vap = api.create(&PostParams::default(), &vap).await.unwrap();
    let report_name = format!("vap.{name}");
    let r = report_for(&client, &report_name, 1).await;
    let info = client.apiserver_version().await.unwrap();
    let estimator = Estimator::new(model_version(&info.major, &info.minor));
    match estimator.estimate(&serde_json::to_value(&vap).unwrap(), "cluster") {
        Some(expected) => {
            assert_eq!(condition(&r, "Ready"), ("True", "Estimated"));
            let status = r.status.as_ref().unwrap();
            assert_eq!(status.expressions.len(), expected.expressions.len());
            for got in &status.expressions {
                let want = expected
                    .expressions
                    .iter()
                    .find(|e| e.field_path == got.field_path)
                    .unwrap_or_else(|| panic!("{} not estimated", got.field_path));
                assert_eq!(
                    got.max_cost.map(|c| c as u64),
                    want.max_cost.map(|c| c.min(i64::MAX as u64)),
                    "{}",
                    got.field_path
                );
            }
            println!(
                "policy report {report_name}: {} expressions, highest {}",
                status.expressions.len(),
                status.summary.as_ref().unwrap().highest_rule_percent
            );
        }
        None => assert_eq!(condition(&r, "Ready"), ("False", "EstimationFailed")),
    }
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    let reports: Api<CostReport> = Api::all(client.clone());
    eventually(
        "policy report deleted by the garbage collector",
        Duration::from_secs(90),
        || async { matches!(reports.get_opt(&report_name).await, Ok(None)).then_some(()) },
    )
    .await;
}

/// The minor in each report and the next minor's verdict: the API server's own minor (the newest
/// celcost has rules for: `UpgradeSafe` Unknown), then an older one set by flag (a CRD whose
/// Format rule that minor's API server refuses and the next accepts); and a
/// MutatingAdmissionPolicy gets a report where the server serves the kind.
#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn versions_and_mutating_policies() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("versions_and_mutating_policies").await else {
        return;
    };
    install_crd(&client).await;
    let info = client.apiserver_version().await.unwrap();
    let group = format!("minors-{}.e2e.celcost.io", suffix());
    let mut crd = test_crd(&group, 10);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["owner"] = json!({"type": "string", "maxLength": 63,
            "x-kubernetes-validations": [{"rule": "!format.dns1123Label().validate(self).hasValue()"}]});
    let name = format!("widgets.{group}");
    let report_name = format!("crd.{name}");
    create_crd(&client, &crd).await;
    {
        let mut op = Operator::start("minor-default", &[]);
        op.wait_ready(Duration::from_secs(60)).await;
        let r = report_for(&client, &report_name, 1).await;
        let status = r.status.as_ref().unwrap();
        let model = model_version(&info.major, &info.minor);
        assert_eq!(status.kubernetes_version, format!("v{model}"));
        if model == celcost::cel::minor::NEWEST {
            assert_eq!(
                condition(&r, "UpgradeSafe"),
                ("Unknown", "NextVersionUnknown")
            );
            assert!(status.next_version.is_none());
        }
        println!(
            "server {}: report at {} with UpgradeSafe {:?}",
            info.git_version,
            status.kubernetes_version,
            condition(&r, "UpgradeSafe")
        );
    }
    {
        // Upstream 1.31 has no Format library for new expressions; 1.32 has.
        let mut op = Operator::start(
            "minor-1.31",
            &[
                "--kubernetes-version",
                "1.31",
                "--distribution",
                "kubernetes",
            ],
        );
        op.wait_ready(Duration::from_secs(60)).await;
        let r = eventually("the report at 1.31", Duration::from_secs(60), || async {
            let api: Api<CostReport> = Api::all(client.clone());
            let r = api.get_opt(&report_name).await.ok()??;
            (r.status.as_ref()?.kubernetes_version == "v1.31").then_some(r)
        })
        .await;
        let status = r.status.as_ref().unwrap();
        assert_eq!(status.valid, Some(false), "1.31 refuses the Format rule");
        let next = status
            .next_version
            .as_ref()
            .expect("the next minor's verdict");
        assert_eq!(
            (next.kubernetes_version.as_str(), next.valid),
            ("v1.32", true)
        );
        assert!(next.change_count >= 1);
        assert_eq!(
            condition(&r, "UpgradeSafe"),
            ("True", "AcceptedByNextVersion")
        );
        println!(
            "at 1.31: next {:?}: {:?}",
            next.kubernetes_version, next.changes
        );
    }
    delete_crd(&client, &name).await;

    // MutatingAdmissionPolicies, where served.
    let resources = client
        .list_api_group_resources("admissionregistration.k8s.io/v1")
        .await
        .unwrap();
    if !resources
        .resources
        .iter()
        .any(|r| r.name == "mutatingadmissionpolicies")
    {
        println!("SKIPPED the MutatingAdmissionPolicy part: not served at v1 by this API server");
        return;
    }
    let mut op = Operator::start("map", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let map_name = format!("e2e-{}.celcost.io", suffix());
    let map = test_map(&map_name);
    let maps = map_api(&client);
    let created = maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(map.clone()).unwrap(),
        )
        .await
        .unwrap();
    let report_name = format!("map.{map_name}");
    let r = report_for(&client, &report_name, 1).await;
    assert_eq!(condition(&r, "Ready"), ("True", "Estimated"));
    let status = r.status.as_ref().unwrap();
    let expected = Estimator::new(model_version(&info.major, &info.minor))
        .estimate(&serde_json::to_value(&created).unwrap(), "cluster")
        .unwrap();
    assert_eq!(status.expressions.len(), expected.expressions.len());
    assert_eq!(r.spec.target_ref.kind.as_str(), "MutatingAdmissionPolicy");
    println!(
        "MutatingAdmissionPolicy report {report_name}: {} expression(s), highest {}",
        status.expressions.len(),
        status.summary.as_ref().unwrap().highest_rule_percent
    );
    maps.delete(&map_name, &DeleteParams::default())
        .await
        .unwrap();
    let reports: Api<CostReport> = Api::all(client.clone());
    eventually(
        "the MutatingAdmissionPolicy's report deleted",
        Duration::from_secs(90),
        || async { matches!(reports.get_opt(&report_name).await, Ok(None)).then_some(()) },
    )
    .await;
}

/// Upgrade day, before it happens (issue 30): on a 1.36 API server, which accepts it, a CRD that
/// 1.37 refuses (`tests/data/upgrade-1.37/backendtimeoutpolicies.yaml`: a global `matches` on
/// an unbounded duration under a list of 16, 40,265,360 on 1.37) gets `UpgradeSafe=False`
/// (`RejectedByNextVersion`) naming the rule, its 1.37 cost and factor and a bound that fits
/// both minors, a Warning event, and `celcost_next_version_rejects` 1.
#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn a_crd_that_the_next_minor_rejects_is_flagged_before_the_upgrade() {
    let _serial = SERIAL.lock().await;
    let test = "a_crd_that_the_next_minor_rejects_is_flagged_before_the_upgrade";
    let Some(client) = cluster(test).await else {
        return;
    };
    let info = client.apiserver_version().await.unwrap();
    if model_version(&info.major, &info.minor) != celcost::cel::decls::Version::new(1, 36) {
        skip(
            test,
            &format!("needs a 1.36 API server, not {}", info.git_version),
        );
        return;
    }
    install_crd(&client).await;
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/upgrade-1.37/backendtimeoutpolicies.yaml"),
    )
    .unwrap();
    let mut crd: Value = serde_yaml_ng::from_str(&text).unwrap();
    let group = format!("upgrade-{}.e2e.celcost.io", suffix());
    let name = format!("backendtimeoutpolicies.{group}");
    crd["metadata"]["name"] = json!(name);
    crd["spec"]["group"] = json!(group);
    // The real 1.36 API server accepts it.
    create_crd(&client, &crd).await;
    let mut op = Operator::start("upgrade-day", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let report_name = format!("crd.{name}");
    let r = report_for(&client, &report_name, 1).await;
    let status = r.status.as_ref().unwrap();
    assert_eq!(status.kubernetes_version, "v1.36");
    assert_eq!(status.valid, Some(true));
    assert_eq!(
        condition(&r, "UpgradeSafe"),
        ("False", "RejectedByNextVersion")
    );
    let message = r
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "UpgradeSafe")
        .unwrap()
        .message
        .clone();
    for part in [
        "Kubernetes v1.37 would refuse the object on create",
        "^.spec.rules[*].request [0]",
        "40,265,360",
        "exceeds budget by factor of 4.0x",
        "a bound that fits v1.36 and v1.37: ",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    let next = status.next_version.as_ref().unwrap();
    assert_eq!(
        (next.kubernetes_version.as_str(), next.valid),
        ("v1.37", false)
    );
    let event = eventually(
        "the RejectedByNextVersion event",
        Duration::from_secs(60),
        || async {
            events_about(&client, &name)
                .await
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("RejectedByNextVersion"))
        },
    )
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(
        event
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("factor of 4.0x"),
        "{event:?}"
    );
    assert_eq!(
        op.metric_with("celcost_next_version_rejects", &format!("name=\"{name}\"")),
        1.0
    );
    println!("{report_name}: UpgradeSafe=False: {message}");
    drop(op);
    delete_crd(&client, &name).await;
}

/// The typed estimate of the one expression of `policy`, given the cluster's CRDs `crds`.
fn typed_max_cost(
    client_version: celcost::cel::decls::Version,
    policy: &Value,
    crds: &[Value],
) -> u64 {
    let mut catalog = celcost::schema::catalog::SchemaCatalog::new();
    for c in crds {
        catalog.add_crd(c.clone());
    }
    let report = Estimator::new(client_version)
        .estimate_with(policy, "cluster", &catalog)
        .unwrap();
    report.expressions[0].typed.as_ref().unwrap().max_cost
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn policies_over_custom_resources_follow_their_crds() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("policies_over_custom_resources_follow_their_crds").await else {
        return;
    };
    install_crd(&client).await;
    let mut op = Operator::start("typed", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let info = client.apiserver_version().await.unwrap();
    let version = model_version(&info.major, &info.minor);
    let group = format!("typed-{}.e2e.celcost.io", suffix());
    let crd_name = format!("widgets.{group}");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    create_crd(&client, &test_crd(&group, 10)).await;
    wait_established(&client, &crd_name).await;

    let name = format!("typed-{}.celcost.io", suffix());
    let vap: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [group], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]
            }]},
            "validations": [{"expression": "object.spec.names.all(x, x.size() < 32)"}]
        }
    }))
    .unwrap();
    let api: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let vap =
        serde_json::to_value(api.create(&PostParams::default(), &vap).await.unwrap()).unwrap();
    let report_name = format!("vap.{name}");
    let reports: Api<CostReport> = Api::all(client.clone());
    let typed_cost = |r: &CostReport| -> Option<i64> {
        r.status
            .as_ref()?
            .expressions
            .first()?
            .typed
            .as_ref()
            .map(|t| t.max_cost)
    };

    // Typed against the CRD, with the estimator's numbers for it.
    let crd_v1 = serde_json::to_value(crds.get(&crd_name).await.unwrap()).unwrap();
    let want = typed_max_cost(version, &vap, &[crd_v1]);
    let r = eventually(
        "policy report typed against the CRD",
        Duration::from_secs(60),
        || async {
            let r = reports.get_opt(&report_name).await.ok()??;
            (typed_cost(&r) == Some(want as i64)).then_some(r)
        },
    )
    .await;
    let typing = r.status.as_ref().unwrap().typing.as_ref().unwrap();
    assert_eq!(typing.schemas[0].resource, format!("{group}/v1/widgets"));
    assert_eq!(typing.schemas[0].origin, format!("CRD {crd_name}"));

    // The CRD allows 100 times more items: the report follows, with no change of the policy.
    crds.patch(
        &crd_name,
        &PatchParams::default(),
        &Patch::Json::<()>(serde_json::from_value(json!([
            {"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/names/maxItems", "value": 1000}
        ])).unwrap()),
    )
    .await
    .unwrap();
    let crd_v2 = serde_json::to_value(crds.get(&crd_name).await.unwrap()).unwrap();
    let want2 = typed_max_cost(version, &vap, &[crd_v2]);
    assert!(want2 > 10 * want, "{want} → {want2}");
    eventually(
        "policy report follows the CRD",
        Duration::from_secs(60),
        || async {
            let r = reports.get_opt(&report_name).await.ok()??;
            (typed_cost(&r) == Some(want2 as i64)).then_some(())
        },
    )
    .await;
    println!(
        "policy {name} typed against {crd_name}: max cost {want} → {want2} after the CRD change"
    );

    api.delete(&name, &DeleteParams::default()).await.unwrap();
    delete_crd(&client, &crd_name).await;
    drop(op);
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn restarted_operator_writes_nothing() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("restarted_operator_writes_nothing").await else {
        return;
    };
    install_crd(&client).await;
    let group = format!("restart-{}.e2e.celcost.io", suffix());
    let name = format!("widgets.{group}");
    create_crd(&client, &test_crd(&group, 10_000)).await;
    {
        let mut op = Operator::start("first", &[]);
        op.wait_ready(Duration::from_secs(60)).await;
        report_for(&client, &format!("crd.{name}"), 1).await;
        // Every report of the cluster written before the restart.
        all_estimated(&client, &op).await;
    }
    // A fresh process re-lists and re-estimates every target, and writes nothing.
    let before = events_about(&client, &name).await.len();
    let mut op = Operator::start("second", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let targets = all_estimated(&client, &op).await;
    assert_eq!(
        op.metric("celcost_report_writes_total"),
        0.0,
        "no writes on restart"
    );
    assert_eq!(
        events_about(&client, &name).await.len(),
        before,
        "no events on restart"
    );
    println!("restart: {targets} targets re-estimated, 0 writes, 0 events");
    delete_crd(&client, &name).await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn survives_an_api_server_restart() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("survives_an_api_server_restart").await else {
        return;
    };
    let Ok(restart) = std::env::var("CELCOST_E2E_RESTART_CMD") else {
        skip(
            "survives_an_api_server_restart",
            "set CELCOST_E2E_RESTART_CMD to a command that restarts the API server",
        );
        return;
    };
    install_crd(&client).await;
    let mut op = Operator::start("apiserver-restart", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let group_a = format!("before-{}.e2e.celcost.io", suffix());
    create_crd(&client, &test_crd(&group_a, 1000)).await;
    report_for(&client, &format!("crd.widgets.{group_a}"), 1).await;

    let status =
        tokio::task::spawn_blocking(move || Command::new("sh").arg("-c").arg(&restart).status())
            .await
            .unwrap()
            .expect("run CELCOST_E2E_RESTART_CMD");
    assert!(status.success(), "restart command failed");
    // A new client: the old one's connections are gone.
    let client = eventually("API server back", Duration::from_secs(120), || async {
        cluster("survives_an_api_server_restart").await
    })
    .await;
    assert!(op.alive(), "the operator survived the restart");

    // Changes after the restart are followed: a new CRD and an update.
    let group_b = format!("after-{}.e2e.celcost.io", suffix());
    create_crd(&client, &test_crd(&group_b, 10_000)).await;
    let r = report_for(&client, &format!("crd.widgets.{group_b}"), 1).await;
    assert_eq!(condition(&r, "WithinBudget"), ("False", "RuleNearBudget"));
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        &format!("widgets.{group_a}"),
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"versions": test_crd(&group_a, 10_000)["spec"]["versions"]}}),
        ),
    )
    .await
    .unwrap();
    let r = report_for(&client, &format!("crd.widgets.{group_a}"), 2).await;
    assert_eq!(condition(&r, "WithinBudget"), ("False", "RuleNearBudget"));
    assert!(op.alive());
    assert!(matches!(op.get("/readyz"), Some((200, _))));
    println!(
        "API server restart survived; watch errors logged: {}",
        std::fs::read_to_string(&op.log)
            .unwrap_or_default()
            .matches("watch error")
            .count()
    );
    delete_crd(&client, &format!("widgets.{group_a}")).await;
    delete_crd(&client, &format!("widgets.{group_b}")).await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn local_run_needs_only_the_crd() {
    // `just run`: `celcost controller` with KUBECONFIG and no other flag. Leader election and
    // the webhook are off outside a pod (no Lease namespace, no webhook configuration needed),
    // and reports come within seconds.
    let test = "local_run_needs_only_the_crd";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    let group = format!("local-{}.e2e.celcost.io", suffix());
    create_crd(&client, &test_crd(&group, 1000)).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join(format!("{test}.log"));
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args([
            "controller",
            "--listen-address",
            &format!("127.0.0.1:{port}"),
            "--metrics-bind-address",
            "127.0.0.1:0",
        ])
        .env("RUST_LOG", "info")
        .env_remove("POD_NAMESPACE")
        .env_remove("CELCOST_LEADER_ELECT")
        .env_remove("CELCOST_WEBHOOK")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let report = format!("crd.widgets.{group}");
    let api: Api<CostReport> = Api::all(client.clone());
    let waited = eventually("the report", Duration::from_secs(10), || async {
        let r = api.get_opt(&report).await.ok()??;
        r.status?.observed_generation.map(|_| started.elapsed())
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("celcost controller starting"))
        .unwrap_or_else(|| panic!("no start-up line:\n{text}"));
    assert!(line.contains("leader_election=off (not in a pod"), "{line}");
    assert!(line.contains("webhook=off (not in a pod"), "{line}");
    println!(
        "{test}: report written {:.2} s after `celcost controller` started",
        waited.as_secs_f64()
    );
    delete_crd(&client, &format!("widgets.{group}")).await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn exits_with_a_hint_without_the_crd() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("exits_with_a_hint_without_the_crd").await else {
        return;
    };
    // Uninstalled first (with every report: the suite's clusters are test clusters; the
    // other tests install it again).
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let _ = crds
        .delete("costreports.celcost.io", &DeleteParams::default())
        .await;
    eventually(
        "the CostReport CRD gone",
        Duration::from_secs(120),
        || async { matches!(crds.get_opt("costreports.celcost.io").await, Ok(None)).then_some(()) },
    )
    .await;
    let out = Command::new(env!("CARGO_BIN_EXE_celcost"))
        .args([
            "controller",
            "--listen-address",
            "127.0.0.1:0",
            "--metrics-bind-address",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kubectl apply"), "{err}");
}

fn renamed(crd: &Value, i: usize) -> Option<Value> {
    let group = crd["spec"]["group"].as_str()?;
    let plural = crd["spec"]["names"]["plural"].as_str()?;
    let new_group = format!("s{i}.{group}");
    let name = format!("{plural}.{new_group}");
    if name.len() > 253 {
        return None;
    }
    let mut spec = crd["spec"].clone();
    spec["group"] = json!(new_group);
    if let Some(o) = spec.as_object_mut() {
        o.remove("conversion");
    }
    // Without descriptions (most of a CRD's bytes, no cost): thousands of copies weigh on the
    // API server's memory (OpenAPI, watch cache) far less, and the rules and their costs stay
    // (at 2,000 full copies kube-apiserver grew to 14.6 GiB).
    strip_descriptions(&mut spec);
    // Only the storage version: each served version is a handler, validators and compiled
    // rules in the API server.
    if let Some(versions) = spec["versions"].as_array_mut() {
        let storage: Vec<Value> = versions
            .iter()
            .filter(|v| v["storage"] == true)
            .cloned()
            .collect();
        if !storage.is_empty() {
            *versions = storage;
        } else {
            versions.truncate(1);
        }
    }
    Some(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "labels": {"celcost.io/bench": "true"}},
        "spec": spec,
    }))
}

/// Removes every `description` member of a schema (recursively).
fn strip_descriptions(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if o.get("description").is_some_and(Value::is_string) {
                o.remove("description");
            }
            o.values_mut().for_each(strip_descriptions);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// How many of the bench CRDs (label `celcost.io/bench=true`) in `names` are Established.
async fn established_count(client: &Client, names: &BTreeSet<String>) -> usize {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut n = 0;
    let mut params = ListParams::default()
        .labels("celcost.io/bench=true")
        .limit(500);
    loop {
        let Ok(page) = crds.list(&params).await else {
            return n;
        };
        n += page
            .items
            .iter()
            .filter(|c| names.contains(&c.name_any()))
            .filter(|c| {
                c.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            })
            .count();
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => params = params.continue_token(&c),
            _ => return n,
        }
    }
}

/// `count` CRDs renamed from the corpus (label `celcost.io/bench=true`), created where missing;
/// their names.
async fn create_bench_crds(client: &Client, count: usize) -> BTreeSet<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let bench = ListParams::default().labels("celcost.io/bench=true");
    let existing: HashSet<String> = crds
        .list_metadata(&bench)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|m| m.name_any())
        .collect();
    let corpus = corpus_crds();
    assert!(!corpus.is_empty(), "no corpus CRDs");
    let setup = Instant::now();
    let mut names = BTreeSet::new();
    let mut rejected = 0usize;
    let mut i = 0usize;
    while names.len() < count && i < count * 3 {
        let n = (count - names.len()).min(64);
        let batch: Vec<Value> = (i..i + n)
            .filter_map(|j| renamed(&corpus[j % corpus.len()], j))
            .collect();
        i += n;
        let results: Vec<(String, bool)> = futures::stream::iter(batch)
            .map(|crd| {
                let crds = crds.clone();
                let existing = &existing;
                async move {
                    let name = crd["metadata"]["name"].as_str().unwrap().to_string();
                    if existing.contains(&name) {
                        return (name, true);
                    }
                    let obj: CustomResourceDefinition = match serde_json::from_value(crd) {
                        Ok(o) => o,
                        Err(_) => return (name, false),
                    };
                    let ok = match crds.create(&PostParams::default(), &obj).await {
                        Ok(_) => true,
                        Err(kube::Error::Api(s)) if s.code == 409 => true,
                        Err(_) => false,
                    };
                    (name, ok)
                }
            })
            .buffer_unordered(8)
            .collect()
            .await;
        for (name, ok) in results {
            if ok && names.len() < count {
                names.insert(name);
            } else if !ok {
                rejected += 1;
            }
        }
    }
    assert_eq!(names.len(), count, "could not create {count} CRDs");
    let created = setup.elapsed();
    // The API server's part: establishing them (names accepted, handlers and OpenAPI).
    let waited = Instant::now();
    let established = eventually(
        "the bench CRDs established",
        Duration::from_secs(1800),
        || async {
            let n = established_count(client, &names).await;
            (n == names.len()).then_some(n)
        },
    )
    .await;
    println!(
        "API server: {count} CRDs created in {:.1} s, all {established} established {:.1} s after the last create",
        created.as_secs_f64(),
        waited.elapsed().as_secs_f64()
    );
    println!(
        "setup: {count} CRDs from {} corpus CRDs in {:.1?} ({rejected} copies rejected by the API server)",
        corpus.len(),
        setup.elapsed()
    );
    names
}

/// Deletes CRDs by name, 8 at a time (a single delete-collection of 2,000 CRDs times out).
async fn delete_crds(client: &Client, names: impl IntoIterator<Item = String>) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    futures::stream::iter(names)
        .for_each_concurrent(8, |n| {
            let crds = crds.clone();
            async move {
                let _ = crds.delete(&n, &DeleteParams::default()).await;
            }
        })
        .await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG (the scale benchmark; run with --release)"]
async fn scale_cold_start() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("scale_cold_start").await else {
        return;
    };
    let count: usize = std::env::var("CELCOST_SCALE_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    install_crd(&client).await;

    // Setup (not timed): the bench CRDs, created if missing; no reports (a cold start).
    let names = create_bench_crds(&client, count).await;
    let reports: Api<CostReport> = Api::all(client.clone());
    for n in &names {
        let _ = reports
            .delete(&format!("crd.{n}"), &DeleteParams::default())
            .await;
    }
    eventually(
        "no bench reports left",
        Duration::from_secs(300),
        || async {
            let left = reports
                .list_metadata(&ListParams::default())
                .await
                .ok()?
                .items
                .iter()
                .filter(|r| {
                    r.name_any()
                        .strip_prefix("crd.")
                        .is_some_and(|n| names.contains(n))
                })
                .count();
            (left == 0).then_some(())
        },
    )
    .await;

    // Let the API server finish installing the new CRDs (OpenAPI, handlers) before timing.
    let settle: u64 = std::env::var("CELCOST_SCALE_SETTLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    tokio::time::sleep(Duration::from_secs(settle)).await;

    // Timed: operator start → every bench report has a status.
    let pending: std::sync::Arc<std::sync::Mutex<HashSet<String>>> = std::sync::Arc::new(
        std::sync::Mutex::new(names.iter().map(|n| format!("crd.{n}")).collect()),
    );
    let watch_pending = pending.clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<Instant>();
    let watch_client = client.clone();
    let watch = tokio::spawn(async move {
        let mut done_tx = Some(done_tx);
        let stream = watcher(
            Api::<CostReport>::all(watch_client),
            watcher::Config::default().labels("celcost.io/target-kind=crd"),
        );
        let mut stream = std::pin::pin!(stream);
        while let Ok(Some(ev)) = stream.try_next().await {
            if let watcher::Event::Apply(r) | watcher::Event::InitApply(r) = ev
                && r.status
                    .as_ref()
                    .is_some_and(|s| s.observed_generation.is_some())
            {
                let mut p = watch_pending.lock().unwrap();
                p.remove(&r.name_any());
                if p.is_empty()
                    && let Some(tx) = done_tx.take()
                {
                    let _ = tx.send(Instant::now());
                    return;
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    let mut op = Operator::start("scale", &[]);
    let mut peak = 0u64;
    let mut done_rx = done_rx;
    let finished = loop {
        tokio::select! {
            t = &mut done_rx => break t.ok(),
            _ = tokio::time::sleep(Duration::from_millis(200)) => {
                peak = peak.max(op.peak_rss_kib());
                assert!(op.alive(), "operator died; see {}", op.log.display());
                if started.elapsed() > Duration::from_secs(600) {
                    break None;
                }
            }
        }
    };
    peak = peak.max(op.peak_rss_kib());
    let cpu = op.cpu_seconds();
    watch.abort();
    let left = pending.lock().unwrap().len();
    let elapsed = finished.map(|t| t.duration_since(started));
    let ready_at = op.metric("celcost_estimates_total");
    let retries = op.metric("celcost_reconcile_retries_total");
    let reads = op.metric("celcost_target_reads_total");
    let bodies = op.metric("celcost_watched_bodies_total");
    // Failures per object, from the error policy's log lines.
    let log = std::fs::read_to_string(&op.log).unwrap_or_default();
    let mut failed: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for line in log.lines().filter(|l| l.contains("reconcile failed")) {
        if let Some(name) = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("name="))
        {
            *failed.entry(name.to_string()).or_default() += 1;
        }
    }
    let most_failures = failed.values().copied().max().unwrap_or(0);
    println!(
        "operator: {} estimated from the watch's bodies, {} target reads, {} retries; {} targets failed at least once, at most {most_failures} times",
        bodies,
        reads,
        retries,
        failed.len()
    );
    println!(
        "scale: {count} CRDs, cold start → all reports written in {}; operator peak RSS (VmHWM) {:.1} MiB, CPU {cpu:.1} s; estimates {ready_at}, report writes {}; {left} reports missing",
        elapsed.map_or("(timeout)".to_string(), |d| format!(
            "{:.2} s",
            d.as_secs_f64()
        )),
        peak as f64 / 1024.0,
        op.metric("celcost_report_writes_total"),
    );
    drop(op);
    assert_eq!(left, 0, "reports missing");
    assert!(
        most_failures <= 5,
        "a target failed {most_failures} times (retried more than a few times)"
    );
    if std::env::var_os("CELCOST_SCALE_KEEP").is_none() {
        delete_crds(&client, names).await;
    }
}
