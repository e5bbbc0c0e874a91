//! Control-plane faults: the operator must be back within seconds of its API server.
//!
//! - `outage_*`: the operator is cut off from a running API server by a TCP proxy of the test
//!   (connections dropped, new ones refused) for 5 s and 60 s; meanwhile a CRD is updated and
//!   one deleted, and right after the proxy is back one is created. Each must be reflected.
//! - `restart_*`, `frozen_*`, `expired_*`: the API server itself is stopped (5 s, 60 s), frozen
//!   with SIGSTOP (30 s), or restarted at once (its watch cache is new, so every watch's
//!   resource version is too old: 410 Expired). They need `$CELCOST_E2E_APISERVER_CTL`, a
//!   command called with `stop`, `start`, `freeze` or `thaw` (e.g. a script around the
//!   kube-apiserver process); they are skipped, saying so, without it.
//! - `throttle_*`: the operator runs as a service account that a FlowSchema puts in a priority
//!   level of the smallest concurrency, rejecting what does not fit (429); it must still
//!   converge.
//!
//! Every case prints what it measured, from the moment the API server answers `/readyz` again
//! (or the proxy is back), and checks it is within [`CONVERGE`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use tokio::net::TcpListener;
use tokio::task::AbortHandle;

use super::*;

/// How soon after its API server is back every change must be reflected.
const CONVERGE: Duration = Duration::from_secs(5);

/// A TCP proxy from the operator to the API server that the test can cut.
struct Proxy {
    addr: SocketAddr,
    up: Arc<std::sync::atomic::AtomicBool>,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind((upstream.ip(), 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (u, c) = (up.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            loop {
                let Ok((mut down, _)) = listener.accept().await else {
                    continue;
                };
                if !u.load(Ordering::SeqCst) {
                    // Cut: refuse by closing at once.
                    drop(down);
                    continue;
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut upc) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut upc).await;
                    }
                });
                let mut conns = c.lock().unwrap();
                conns.retain(|h| !h.is_finished());
                conns.push(task.abort_handle());
            }
        })
        .abort_handle();
        Proxy {
            addr,
            up,
            conns,
            accept,
        }
    }

    /// Drops every connection and refuses new ones.
    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

/// The kubeconfig file in use (`$KUBECONFIG`'s first entry, or `~/.kube/config`).
fn kubeconfig_path() -> PathBuf {
    match std::env::var("KUBECONFIG") {
        Ok(v) if !v.is_empty() => PathBuf::from(v.split(':').next().unwrap()),
        _ => PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".kube/config"),
    }
}

/// The API server's address, from the client configuration.
async fn apiserver_addr() -> SocketAddr {
    let config = kube::Config::infer().await.unwrap();
    let host = config.cluster_url.host().unwrap().to_string();
    let port = config.cluster_url.port_u16().unwrap_or(443);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    tokio::net::lookup_host((host, port))
        .await
        .unwrap()
        .next()
        .unwrap()
}

/// A copy of the kubeconfig whose servers at `from` point at `to` (same host, so the serving
/// certificate still matches), and optionally with `token` as the user's credential.
fn kubeconfig_via(name: &str, from: SocketAddr, to: SocketAddr, token: Option<&str>) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig_path()).expect("read the kubeconfig");
    let mut v: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    for c in v["clusters"].as_array_mut().into_iter().flatten() {
        if let Some(server) = c["cluster"]["server"].as_str() {
            let moved = server.replace(&format!(":{}", from.port()), &format!(":{}", to.port()));
            c["cluster"]["server"] = json!(moved);
        }
    }
    if let Some(token) = token {
        for u in v["users"].as_array_mut().into_iter().flatten() {
            u["user"] = json!({ "token": token });
        }
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("e2e-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&path, serde_yaml_ng::to_string(&v).unwrap()).unwrap();
    path
}

/// A new client once the API server answers `/readyz` with ok; the time it did.
pub(super) async fn wait_apiserver_ready(timeout: Duration) -> (Client, Instant) {
    let start = Instant::now();
    loop {
        if let Ok(c) = Client::try_default().await {
            let req = http::Request::get("/readyz").body(Vec::new()).unwrap();
            if let Ok(Ok(t)) =
                tokio::time::timeout(Duration::from_secs(1), c.request_text(req)).await
                && t.trim() == "ok"
            {
                return (c, Instant::now());
            }
        }
        assert!(
            start.elapsed() < timeout,
            "the API server was not ready within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `$CELCOST_E2E_APISERVER_CTL <action>`.
pub(super) async fn apiserver_ctl(ctl: &str, action: &str) {
    let cmd = format!("{ctl} {action}");
    let status =
        tokio::task::spawn_blocking(move || Command::new("sh").arg("-c").arg(&cmd).status())
            .await
            .unwrap()
            .expect("run CELCOST_E2E_APISERVER_CTL");
    assert!(
        status.success(),
        "CELCOST_E2E_APISERVER_CTL {action} failed"
    );
}

pub(super) fn apiserver_ctl_or_skip(test: &str) -> Option<String> {
    match std::env::var("CELCOST_E2E_APISERVER_CTL") {
        Ok(c) if !c.is_empty() => Some(c),
        _ => {
            skip(
                test,
                "set CELCOST_E2E_APISERVER_CTL to a command taking stop|start|freeze|thaw for the API server",
            );
            None
        }
    }
}

/// Three CRDs of a fault scenario: one to update, one to delete, one to create after.
struct Scenario {
    update: String,
    delete: String,
    create: String,
}

impl Scenario {
    async fn before(client: &Client, tag: &str) -> Scenario {
        let s = suffix();
        let sc = Scenario {
            update: format!("{tag}-u-{s}.e2e.celcost.io"),
            delete: format!("{tag}-d-{s}.e2e.celcost.io"),
            create: format!("{tag}-c-{s}.e2e.celcost.io"),
        };
        create_crd(client, &test_crd(&sc.update, 1000)).await;
        create_crd(client, &test_crd(&sc.delete, 1000)).await;
        report_for(client, &format!("crd.widgets.{}", sc.update), 1).await;
        report_for(client, &format!("crd.widgets.{}", sc.delete), 1).await;
        sc
    }

    /// The changes made while the operator is away (or right after, when the API server
    /// itself was away).
    async fn change(&self, client: &Client) {
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        eventually("update a CRD", Duration::from_secs(30), || async {
            api.patch(
                &format!("widgets.{}", self.update),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"versions": test_crd(&self.update, 10_000)["spec"]["versions"]}})),
            )
            .await
            .ok()
        })
        .await;
        eventually("delete a CRD", Duration::from_secs(30), || async {
            api.delete(
                &format!("widgets.{}", self.delete),
                &DeleteParams::default(),
            )
            .await
            .ok()
        })
        .await;
    }

    /// Creates the third CRD now and measures, from `since`, when each change is reflected:
    /// (created, updated, deleted).
    async fn converge(&self, client: &Client, since: Instant) -> [Duration; 3] {
        create_crd(client, &test_crd(&self.create, 1000)).await;
        let api: Api<CostReport> = Api::all(client.clone());
        let deadline = Duration::from_secs(120);
        let (mut created, mut updated, mut deleted) = (None, None, None);
        let start = Instant::now();
        while created.is_none() || updated.is_none() || deleted.is_none() {
            assert!(
                start.elapsed() < deadline,
                "not converged after {deadline:?}: created {created:?}, updated {updated:?}, deleted {deleted:?}"
            );
            let generation = |r: Option<CostReport>| {
                r.and_then(|r| r.status.and_then(|s| s.observed_generation))
            };
            if created.is_none()
                && generation(
                    api.get_opt(&format!("crd.widgets.{}", self.create))
                        .await
                        .ok()
                        .flatten(),
                ) == Some(1)
            {
                created = Some(since.elapsed());
            }
            if updated.is_none()
                && generation(
                    api.get_opt(&format!("crd.widgets.{}", self.update))
                        .await
                        .ok()
                        .flatten(),
                ) == Some(2)
            {
                updated = Some(since.elapsed());
            }
            if deleted.is_none()
                && matches!(
                    api.get_opt(&format!("crd.widgets.{}", self.delete)).await,
                    Ok(None)
                )
            {
                deleted = Some(since.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        [created.unwrap(), updated.unwrap(), deleted.unwrap()]
    }

    async fn cleanup(&self, client: &Client) {
        for g in [&self.update, &self.delete, &self.create] {
            delete_crd(client, &format!("widgets.{g}")).await;
        }
    }
}

fn print_times(case: &str, t: [Duration; 3]) {
    println!(
        "{case}: created reported after {:.2} s, update after {:.2} s, deletion after {:.2} s",
        t[0].as_secs_f64(),
        t[1].as_secs_f64(),
        t[2].as_secs_f64()
    );
    let worst = t.iter().max().unwrap();
    assert!(
        *worst <= CONVERGE,
        "{case}: converged after {worst:?}, more than {CONVERGE:?}"
    );
}

/// The operator behind a proxy that is cut for `outage`; changes made meanwhile.
async fn partition(test: &str, outage: Duration) {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    let upstream = apiserver_addr().await;
    let proxy = Proxy::start(upstream).await;
    let kubeconfig = kubeconfig_via(test, upstream, proxy.addr, None);
    let mut op = Operator::start_with(
        test,
        &["--watch-unhealthy-after-seconds", "20"],
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    );
    op.wait_ready(Duration::from_secs(60)).await;
    let sc = Scenario::before(&client, "outage").await;

    proxy.cut();
    let cut = Instant::now();
    sc.change(&client).await;
    let mut unhealthy_seen = false;
    let mut unready_seen = false;
    while cut.elapsed() < outage {
        if !matches!(op.get("/watches"), Some((200, _))) {
            unhealthy_seen = true;
        }
        if !matches!(op.get("/readyz"), Some((200, _))) {
            unready_seen = true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    proxy.restore();
    let back = Instant::now();
    let t = sc.converge(&client, back).await;
    assert!(op.alive(), "the operator survived");
    print_times(&format!("{test} ({}s cut)", outage.as_secs()), t);
    // The watches' health tells the truth: failing after 20 s without a watch, back
    // afterwards; readiness (what a Service routes by) never depends on the watches.
    assert_eq!(
        unhealthy_seen,
        outage > Duration::from_secs(20),
        "/watches during a {outage:?} outage"
    );
    assert!(
        !unready_seen,
        "/readyz stays 200 during a {outage:?} outage"
    );
    eventually("watches healthy again", CONVERGE, || async {
        matches!(op.get("/watches"), Some((200, _))).then_some(())
    })
    .await;
    let log = std::fs::read_to_string(&op.log).unwrap_or_default();
    let lost = log.matches("watch lost").count();
    let restored = log.matches("watch restored").count();
    println!("{test}: log lines: {lost} 'watch lost', {restored} 'watch restored'");
    // One line per watch at each end of the outage, not one per retry (two watches per kind:
    // targets and reports; three kinds where the server serves MutatingAdmissionPolicies).
    let watches = op
        .scrape()
        .map(|(_, text)| {
            text.lines()
                .filter(|l| l.starts_with("celcost_watch_last_sync_age_seconds{"))
                .count()
        })
        .unwrap_or(0);
    assert!(watches >= 4, "{watches} watches in /metrics");
    assert!(
        lost <= watches && restored <= watches,
        "{lost} / {restored} for {watches} watches"
    );
    sc.cleanup(&client).await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn outage_5s_partition_then_converge() {
    partition("outage_5s_partition_then_converge", Duration::from_secs(5)).await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn outage_60s_partition_then_converge() {
    partition(
        "outage_60s_partition_then_converge",
        Duration::from_secs(60),
    )
    .await;
}

/// The API server stopped (`stop` … `start`) or frozen (`freeze` … `thaw`) for `outage`.
async fn apiserver_fault(test: &str, down: &str, up: &str, outage: Duration) {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    let Some(ctl) = apiserver_ctl_or_skip(test) else {
        return;
    };
    install_crd(&client).await;
    let mut op = Operator::start(test, &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let sc = Scenario::before(&client, "restart").await;
    let relists = op.metric("celcost_watch_relists_total");

    apiserver_ctl(&ctl, down).await;
    tokio::time::sleep(outage).await;
    let started = Instant::now();
    apiserver_ctl(&ctl, up).await;
    let (client, ready) = wait_apiserver_ready(Duration::from_secs(180)).await;
    println!(
        "{test}: the API server answered /readyz {:.1} s after `{up}`",
        (ready - started).as_secs_f64()
    );
    sc.change(&client).await;
    let t = sc.converge(&client, ready).await;
    assert!(op.alive(), "the operator survived");
    print_times(&format!("{test} ({down} {}s)", outage.as_secs()), t);
    println!(
        "{test}: watch relists {} → {}",
        relists,
        op.metric("celcost_watch_relists_total")
    );
    eventually("watches healthy again", CONVERGE, || async {
        matches!(op.get("/watches"), Some((200, _))).then_some(())
    })
    .await;
    sc.cleanup(&client).await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG and CELCOST_E2E_APISERVER_CTL"]
async fn restart_after_5s_stop_converges() {
    apiserver_fault(
        "restart_after_5s_stop_converges",
        "stop",
        "start",
        Duration::from_secs(5),
    )
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG and CELCOST_E2E_APISERVER_CTL"]
async fn restart_after_60s_stop_converges() {
    apiserver_fault(
        "restart_after_60s_stop_converges",
        "stop",
        "start",
        Duration::from_secs(60),
    )
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG and CELCOST_E2E_APISERVER_CTL"]
async fn frozen_30s_apiserver_converges() {
    apiserver_fault(
        "frozen_30s_apiserver_converges",
        "freeze",
        "thaw",
        Duration::from_secs(30),
    )
    .await;
}

/// A restart with no pause: the new API server's watch cache starts at the current revision,
/// the operator's watches resume from older ones and are told 410 Expired. They relist at once.
#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG and CELCOST_E2E_APISERVER_CTL"]
async fn expired_watches_relist_at_once() {
    let test = "expired_watches_relist_at_once";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    let Some(ctl) = apiserver_ctl_or_skip(test) else {
        return;
    };
    install_crd(&client).await;
    let mut op = Operator::start(test, &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    let sc = Scenario::before(&client, "expired").await;
    let gone_before = restarts_for(&op, "gone");
    let relists_before = op.metric("celcost_watch_relists_total");
    apiserver_ctl(&ctl, "stop").await;
    apiserver_ctl(&ctl, "start").await;
    let (client, ready) = wait_apiserver_ready(Duration::from_secs(180)).await;
    sc.change(&client).await;
    let t = sc.converge(&client, ready).await;
    print_times(test, t);
    let (gone, relists) = (
        restarts_for(&op, "gone") - gone_before,
        op.metric("celcost_watch_relists_total") - relists_before,
    );
    println!("{test}: {gone} watches told 410 Gone/Expired, {relists} relists");
    assert!(relists >= 1.0, "the watches relisted");
    assert!(op.alive());
    sc.cleanup(&client).await;
}

/// The sum of `celcost_watch_restarts_total{reason="<reason>"}`.
fn restarts_for(op: &Operator, reason: &str) -> f64 {
    op.metric_with(
        "celcost_watch_restarts_total",
        &format!("reason=\"{reason}\""),
    )
}

/// Requests of priority level `level` the API server rejected (APF), from its metrics.
async fn apf_rejected(client: &Client, level: &str) -> f64 {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(req).await.unwrap_or_default();
    sum_samples(
        &text,
        "apiserver_flowcontrol_rejected_requests_total",
        &format!("priority_level=\"{level}\""),
    )
}

/// The operator as a service account whose requests go to a priority level of the smallest
/// concurrency that rejects what does not fit: it gets 429s and must still converge.
#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn throttle_by_priority_and_fairness_still_converges() {
    let test = "throttle_by_priority_and_fairness_still_converges";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    let ns = "default";
    let sa_name = "celcost-e2e-throttled";
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let _ = sas
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": sa_name}})).unwrap(),
        )
        .await;
    let crbs: Api<ClusterRoleBinding> = Api::all(client.clone());
    let _ = crbs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": sa_name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": ns}]
            }))
            .unwrap(),
        )
        .await;
    let plcs: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let _ = plcs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": sa_name},
                "spec": {"type": "Limited", "limited": {
                    "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
                    "limitResponse": {"type": "Reject"}
                }}
            }))
            .unwrap(),
        )
        .await;
    let fss: Api<FlowSchema> = Api::all(client.clone());
    let _ = fss
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": sa_name},
                "spec": {
                    "priorityLevelConfiguration": {"name": sa_name},
                    "matchingPrecedence": 100,
                    "distinguisherMethod": {"type": "ByUser"},
                    "rules": [{
                        "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": sa_name, "namespace": ns}}],
                        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
                        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
                    }]
                }
            }))
            .unwrap(),
        )
        .await;
    let token = sas
        .create_token_request(
            sa_name,
            &PostParams::default(),
            &serde_json::from_value::<TokenRequest>(
                json!({"spec": {"audiences": [], "expirationSeconds": 3600}}),
            )
            .unwrap(),
        )
        .await
        .expect("a token for the service account")
        .status
        .expect("token status")
        .token;
    // A burst before the operator starts (its cold start reconciles them all at once) and
    // one while it runs.
    let n = 30;
    let s = suffix();
    let groups: Vec<String> = (0..2 * n)
        .map(|i| format!("t{i}-{s}.e2e.celcost.io"))
        .collect();
    let crds: Vec<Value> = groups.iter().map(|g| test_crd(g, 1000)).collect();
    futures::future::join_all(crds[..n].iter().map(|c| create_crd(&client, c))).await;
    let rejected_before = apf_rejected(&client, sa_name).await;
    let addr = apiserver_addr().await;
    let kubeconfig = kubeconfig_via(test, addr, addr, Some(&token));
    let start = Instant::now();
    let mut op = Operator::start_with(test, &[], &[("KUBECONFIG", kubeconfig.to_str().unwrap())]);
    op.wait_ready(Duration::from_secs(120)).await;
    futures::future::join_all(crds[n..].iter().map(|c| create_crd(&client, c))).await;
    let api: Api<CostReport> = Api::all(client.clone());
    eventually(
        "every throttled report",
        Duration::from_secs(180),
        || async {
            let mut done = 0;
            for g in &groups {
                if api
                    .get_opt(&format!("crd.widgets.{g}"))
                    .await
                    .ok()
                    .flatten()
                    .and_then(|r| r.status)
                    .is_some()
                {
                    done += 1;
                }
            }
            (done == groups.len()).then_some(())
        },
    )
    .await;
    let rejected = apf_rejected(&client, sa_name).await - rejected_before;
    let seen = op.metric_with("celcost_reconcile_failures_total", "error=\"throttled\"")
        + restarts_for(&op, "throttled");
    println!(
        "{test}: {} CRDs reported {:.1} s after the operator started; the API server rejected {rejected} of its requests (429), the operator counted {seen} throttled",
        groups.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(rejected > 0.0, "the priority level throttled the operator");
    assert!(op.alive());
    for g in &groups {
        delete_crd(&client, &format!("widgets.{g}")).await;
    }
    let _ = fss.delete(sa_name, &DeleteParams::default()).await;
    let _ = plcs.delete(sa_name, &DeleteParams::default()).await;
    let _ = crbs.delete(sa_name, &DeleteParams::default()).await;
    let _ = sas.delete(sa_name, &DeleteParams::default()).await;
}
