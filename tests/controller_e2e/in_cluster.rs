//! The operator installed the way users install it: `kubectl apply -k` of an overlay of
//! `config/default` that changes only the image (and its pull policy: there is no registry),
//! into a cluster whose node runs pods (`../shared/k8s/cluster.sh up --node`). Two replicas in
//! `celcost-system` under the `restricted` Pod Security level, the shipped RBAC, probes, the
//! webhook behind its Service.
//!
//! `CELCOST_E2E_IMAGE` names the image, already on the node (`cluster.sh build-image` /
//! `load-image`; `just image`); without it each test prints SKIPPED (fails under
//! `CELCOST_E2E_REQUIRE_CLUSTER=1`). The outage case also needs `CELCOST_E2E_APISERVER_CTL`.
//! The tests are named `s1_` … `s9_` for the order a user meets them in (libtest runs them by
//! name with `--test-threads=1`); each installs what it needs, so any one runs alone. `s8h_`
//! installs the same image with the Helm chart (`helm-lite install`, after removing the
//! kustomize install if there is one) and uninstalls it. The last,
//! the memory test with 2,000 CRDs, leaves the operator installed (and, with
//! `CELCOST_SCALE_KEEP=1`, the CRDs: deleting them, or a namespace next to them, takes minutes).
//! The local-process e2e tests must not run at the same time (two writers).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::*;

const NS: &str = "celcost-system";
const SELECTOR: &str = "app.kubernetes.io/name=celcost,app.kubernetes.io/component=controller";
/// The Deployment's memory limit (config/manager/deployment.yaml).
const MEMORY_LIMIT_MIB: f64 = 256.0;

/// The image to deploy, or None (skipped).
fn image(test: &str) -> Option<String> {
    match std::env::var("CELCOST_E2E_IMAGE") {
        Ok(i) if !i.is_empty() => Some(i),
        _ => {
            skip(
                test,
                "set CELCOST_E2E_IMAGE to the operator's image on the node (`just image`, cluster.sh load-image)",
            );
            None
        }
    }
}

/// `kubectl ARGS` (KUBECONFIG inherited): success, stdout, stderr.
fn kubectl(args: &[&str]) -> (bool, String, String) {
    let out = Command::new("kubectl")
        .args(args)
        .output()
        .expect("run kubectl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// `config/` and `crds/` copied beside an overlay of `config/default` that sets only the image
/// and `imagePullPolicy: Never`; the overlay's directory.
fn overlay(image: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("in-cluster");
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&root.join("config"), &dir.join("config"));
    copy_dir(&root.join("crds"), &dir.join("crds"));
    // `registry/name:tag` (a port's colon is followed by a path, a tag's is not).
    let (name, tag) = match image.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, t),
        _ => (image, "latest"),
    };
    std::fs::create_dir_all(dir.join("overlay")).unwrap();
    std::fs::write(
        dir.join("overlay/kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../config/default]
images: [{{name: celcost, newName: {name}, newTag: {tag}}}]
patches:
  - target: {{kind: Deployment, name: celcost}}
    patch: |
      - {{op: replace, path: /spec/template/spec/containers/0/imagePullPolicy, value: Never}}
"
        ),
    )
    .unwrap();
    dir.join("overlay")
}

/// The operator's pods that are Ready and not terminating.
async fn ready_pods(client: &Client) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let Ok(list) = pods.list(&ListParams::default().labels(SELECTOR)).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .collect()
}

fn pod_ip(p: &Pod) -> IpAddr {
    p.status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .and_then(|ip| ip.parse().ok())
        .expect("a running pod has an IP")
}

/// GET `path` from a pod's admin port, as the kubelet's probes do (no Service, no API server).
fn pod_get(ip: IpAddr, path: &str) -> Option<(u16, String)> {
    let mut s =
        TcpStream::connect_timeout(&SocketAddr::new(ip, 8080), Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {ip}\r\n\r\n").ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let code = buf.split_whitespace().nth(1)?.parse().ok()?;
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

fn pod_metric(ip: IpAddr, name: &str) -> f64 {
    let (_, body) = scrape(
        &format!("https://{}/metrics", SocketAddr::new(ip, 8443)),
        &[],
    )
    .unwrap_or_default();
    sum_samples(&body, name, "")
}

/// The bearer token of `celcost-e2e-scraper`, a service account bound to config/rbac's
/// `celcost-metrics-reader` (created when missing; made again after a reinstall).
static SCRAPER_TOKEN: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

fn scraper_token() -> Option<String> {
    let mut held = SCRAPER_TOKEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(t) = held.as_ref() {
        return Some(t.clone());
    }
    let manifest = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: celcost-e2e-scraper, namespace: {NS}}}\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n\
         metadata: {{name: celcost-e2e-scraper}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: celcost-metrics-reader}}\n\
         subjects: [{{kind: ServiceAccount, name: celcost-e2e-scraper, namespace: {NS}}}]\n"
    );
    let dir = tempfile::tempdir().ok()?;
    let file = dir.path().join("scraper.yaml");
    std::fs::write(&file, manifest).ok()?;
    let (ok, _, err) = kubectl(&["apply", "-f", file.to_str()?]);
    if !ok {
        println!("the scraper's service account: {err}");
        return None;
    }
    let (ok, out, err) = kubectl(&[
        "create",
        "token",
        "celcost-e2e-scraper",
        "-n",
        NS,
        "--duration",
        "2h",
    ]);
    if !ok {
        println!("kubectl create token: {err}");
        return None;
    }
    *held = Some(out.trim().to_string());
    held.clone()
}

/// Removes the scraper's ClusterRoleBinding (its service account goes with the namespace) and
/// forgets its token: the test's own object, not the install's, so that what an uninstall leaves
/// is checked without it.
fn remove_scraper() {
    let (ok, _, err) = kubectl(&[
        "delete",
        "clusterrolebinding",
        "celcost-e2e-scraper",
        "--ignore-not-found",
    ]);
    assert!(
        ok,
        "kubectl delete clusterrolebinding celcost-e2e-scraper: {err}"
    );
    *SCRAPER_TOKEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// `GET url` over HTTPS with the scraper's token, as Prometheus scrapes (curl; `curl_args` adds
/// e.g. `--cacert` and `--resolve`, else the certificate is not verified): (status, body). A
/// 401 (the token's service account was deleted with a reinstall) makes a new token once.
fn scrape(url: &str, curl_args: &[&str]) -> Option<(u16, String)> {
    for _ in 0..2 {
        let token = scraper_token()?;
        let mut cmd = Command::new("curl");
        cmd.args(["-s", "--max-time", "10", "-w", "\n%{http_code}"]);
        if curl_args.is_empty() {
            cmd.arg("-k");
        }
        let out = cmd
            .args(curl_args)
            .args(["-H", &format!("Authorization: Bearer {token}")])
            .arg(url)
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n')?;
        let code: u16 = code.trim().parse().ok()?;
        if code == 401 {
            *SCRAPER_TOKEN
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            continue;
        }
        return Some((code, body.to_string()));
    }
    None
}

/// The Lease's holder.
async fn leader(client: &Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), NS);
    leases.get_opt("celcost").await.ok()??.spec?.holder_identity
}

/// Installs (or re-applies) the overlay and waits until both replicas are Ready and one holds
/// the Lease; the output of `kubectl apply -k`.
async fn ensure_installed(client: &Client, image: &str) -> String {
    let dir = overlay(image);
    let (ok, out, err) = kubectl(&["apply", "-k", dir.to_str().unwrap()]);
    assert!(ok, "kubectl apply -k failed:\n{out}\n{err}");
    wait_established(client, "costreports.celcost.io").await;
    let (ok, o, e) = kubectl(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deploy/celcost",
        "--timeout=300s",
    ]);
    assert!(ok, "rollout status:\n{o}\n{e}");
    let timeout = Duration::from_secs(180);
    let start = Instant::now();
    loop {
        let pods = ready_pods(client).await;
        let holder = leader(client).await;
        if pods.len() == 2 && pods.iter().any(|p| Some(p.name_any()) == holder) {
            break;
        }
        if start.elapsed() > timeout {
            let ready: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
            panic!(
                "timed out after {timeout:?}: two Ready replicas and a leader (Ready: {ready:?}, \
                 Lease holder: {holder:?})\n{}",
                install_state()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    format!("{out}{err}")
}

/// What a failed install looks like: the pods, the Lease, the namespace's events and the pods'
/// logs.
fn install_state() -> String {
    let mut state = String::new();
    for args in [
        &["-n", NS, "get", "pods", "-o", "wide"][..],
        &["-n", NS, "get", "lease", "celcost", "-o", "yaml"],
        &["-n", NS, "get", "events", "--sort-by=.lastTimestamp"],
    ] {
        let (_, out, err) = kubectl(args);
        state.push_str(&format!("$ kubectl {}\n{out}{err}\n", args.join(" ")));
    }
    state.push_str("the pods' logs:\n");
    state.push_str(&pod_logs());
    state
}

/// Each test's start: the suite's lock, a client, the image, and the operator installed.
async fn installed(test: &str) -> Option<(tokio::sync::MutexGuard<'static, ()>, Client, String)> {
    let serial = SERIAL.lock().await;
    let client = cluster(test).await?;
    let image = image(test)?;
    ensure_installed(&client, &image).await;
    Some((serial, client, image))
}

/// Waits until a replica not in `old_pods` holds the Lease and has estimated `targets`
/// targets (a new leader re-estimates each one once); its name.
async fn new_leader_has_estimated(
    client: &Client,
    old_pods: &[String],
    targets: f64,
    timeout: Duration,
) -> String {
    eventually(
        "a new leader that has estimated every target",
        timeout,
        || async {
            let holder = leader(client).await?;
            if old_pods.contains(&holder) {
                return None;
            }
            let pod = ready_pods(client)
                .await
                .into_iter()
                .find(|p| p.name_any() == holder)?;
            (pod_metric(pod_ip(&pod), "celcost_estimates_total") >= targets).then_some(holder)
        },
    )
    .await
}

/// Every CostReport's resourceVersion, once they have stopped changing for 5 s.
async fn settled_reports(client: &Client) -> BTreeMap<String, String> {
    let api: Api<CostReport> = Api::all(client.clone());
    let snapshot = || async {
        api.list_metadata(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|m| (m.name_any(), m.resource_version().unwrap_or_default()))
            .collect::<BTreeMap<_, _>>()
    };
    let mut last = snapshot().await;
    let mut stable_since = Instant::now();
    let start = Instant::now();
    while stable_since.elapsed() < Duration::from_secs(5) {
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "reports still changing"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = snapshot().await;
        if now != last {
            last = now;
            stable_since = Instant::now();
        }
    }
    last
}

/// celcost's events in every namespace: uid → (reason, note, how often it happened).
async fn celcost_events(client: &Client) -> BTreeMap<String, (String, String, i32)> {
    let api: Api<K8sEvent> = Api::all(client.clone());
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("celcost"))
        .map(|e| {
            let count = e.series.as_ref().map_or(1, |s| s.count);
            (
                e.metadata.uid.clone().unwrap_or_default(),
                (
                    e.reason.clone().unwrap_or_default(),
                    e.note.clone().unwrap_or_default(),
                    count,
                ),
            )
        })
        .collect()
}

/// The operator pods' logs (the last lines of each, prefixed with the pod), for a failure.
fn pod_logs() -> String {
    let (_, out, err) = kubectl(&[
        "-n",
        NS,
        "logs",
        "-l",
        SELECTOR,
        "--prefix",
        "--tail=300",
        "--request-timeout=20s",
    ]);
    format!("{out}{err}")
}

/// As [`report_for`], with the pods' logs in the failure.
async fn report_or_logs(client: &Client, report: &str, generation: i64, timeout: Duration) {
    let api: Api<CostReport> = Api::all(client.clone());
    let start = Instant::now();
    loop {
        if let Ok(Some(r)) = api.get_opt(report).await
            && r.status.as_ref().and_then(|s| s.observed_generation) == Some(generation)
        {
            return;
        }
        if start.elapsed() > timeout {
            panic!(
                "report {report} not at generation {generation} after {timeout:?}; the pods' logs:\n{}",
                pod_logs()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Replaces a test CRD's versions with those of `test_crd(group, items)` (a new generation).
async fn resize(client: &Client, group: &str, items: u64) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        &format!("widgets.{group}"),
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"versions": test_crd(group, items)["spec"]["versions"]}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s1_installs_two_ready_replicas_under_restricted() {
    let test = "in_cluster::s1_installs_two_ready_replicas_under_restricted";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    let Some(image) = image(test) else { return };
    let started = Instant::now();
    let out = ensure_installed(&client, &image).await;
    println!(
        "{test}: kubectl apply -k → two Ready replicas and a leader in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        !out.contains("PodSecurity"),
        "no Pod Security warning: {out}"
    );
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let labels = ns
        .get(NS)
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(
        labels
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("restricted"),
        "the namespace enforces restricted: the pods above were admitted under it"
    );
    for p in ready_pods(&client).await {
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("celcost"));
        let c = &spec.containers[0];
        assert_eq!(c.image.as_deref(), Some(image.as_str()));
        let status = p.status.as_ref().unwrap();
        let cs = &status.container_statuses.as_ref().unwrap()[0];
        assert_eq!(cs.restart_count, 0, "{} restarted", p.name_any());
        // Asked directly, as the kubelet asks.
        let ip = pod_ip(&p);
        assert_eq!(pod_get(ip, "/readyz").map(|r| r.0), Some(200));
        assert_eq!(pod_get(ip, "/healthz").map(|r| r.0), Some(200));
        let watches = eventually("every watch listed", Duration::from_secs(60), || async {
            pod_get(ip, "/watches").filter(|r| r.0 == 200)
        })
        .await;
        println!(
            "{}: /readyz 200, /watches {}",
            p.name_any(),
            watches.1.trim()
        );
    }
    // The webhook's certificate was issued and its CA handed to the API server.
    let vwc: Api<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration> =
        Api::all(client.clone());
    eventually("the caBundle set", Duration::from_secs(60), || async {
        let c = vwc.get_opt("celcost").await.ok()??;
        c.webhooks?
            .first()?
            .client_config
            .ca_bundle
            .as_ref()
            .filter(|b| !b.0.is_empty())
            .map(|_| ())
    })
    .await;
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s2_crd_and_policies_get_reports_events_and_metrics() {
    let test = "in_cluster::s2_crd_and_policies_get_reports_events_and_metrics";
    let Some((_serial, client, _image)) = installed(test).await else {
        return;
    };
    let pod_names: Vec<String> = ready_pods(&client)
        .await
        .iter()
        .map(ResourceExt::name_any)
        .collect();

    // A CRD at ~82 % of the per-rule limit: a report near budget and a Warning event.
    let group = format!("ic{}.celcost.io", suffix());
    let crd_name = format!("widgets.{group}");
    create_crd(&client, &test_crd(&group, 10_000)).await;
    let r = report_for(&client, &format!("crd.{crd_name}"), 1).await;
    assert_eq!(condition(&r, "WithinBudget"), ("False", "RuleNearBudget"));
    let expected = estimate_of(&client, &crd_name).await;
    assert_eq!(
        u64::try_from(r.status.as_ref().unwrap().schemas[0].rules[0].cost).ok(),
        Some(expected.schemas[0].rules[0].cost),
        "the estimator's number"
    );
    let event = eventually("a Warning event", Duration::from_secs(60), || async {
        events_about(&client, &crd_name)
            .await
            .into_iter()
            .find(|e| e.type_.as_deref() == Some("Warning"))
    })
    .await;
    let instance = event.reporting_instance.clone().unwrap_or_default();
    assert!(
        pod_names.contains(&instance),
        "reported by a replica: {instance} not in {pod_names:?}"
    );
    println!(
        "{test}: event {:?} from {instance}: {}",
        event.reason,
        event.note.as_deref().unwrap_or_default()
    );

    // A ValidatingAdmissionPolicy.
    let vap_name = format!("ic-{}.celcost.io", suffix());
    let vaps: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    vaps.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": vap_name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]
                }]},
                "validations": [{"expression": "object.spec.replicas <= 5"}]
            }
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let r = report_for(&client, &format!("vap.{vap_name}"), 1).await;
    assert_eq!(condition(&r, "Ready"), ("True", "Estimated"));
    assert_eq!(r.status.as_ref().unwrap().expressions.len(), 1);

    // A MutatingAdmissionPolicy (v1 on 1.36).
    let resources = client
        .list_api_group_resources("admissionregistration.k8s.io/v1")
        .await
        .unwrap();
    assert!(
        resources
            .resources
            .iter()
            .any(|r| r.name == "mutatingadmissionpolicies"),
        "the API server serves MutatingAdmissionPolicies at v1"
    );
    let map_name = format!("ic-{}.celcost.io", suffix());
    let maps = map_api(&client);
    maps.create(
        &PostParams::default(),
        &serde_json::from_value(test_map(&map_name)).unwrap(),
    )
    .await
    .unwrap();
    let r = report_for(&client, &format!("map.{map_name}"), 1).await;
    assert_eq!(condition(&r, "Ready"), ("True", "Estimated"));

    // /metrics through the Service as the ServiceMonitor scrapes it (its ClusterIP, port
    // https-metrics; kube-proxy picks an endpoint): HTTPS verified against the CA of the
    // webhook's Secret for the name celcost-metrics.celcost-system.svc, and the token of a
    // service account bound to celcost-metrics-reader. Every replica answers; only the leader
    // has the targets' gauges.
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client.clone(), NS);
    let cluster_ip = services
        .get("celcost-metrics")
        .await
        .unwrap()
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("the metrics Service's ClusterIP");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), NS);
    let ca = eventually(
        "the webhook Secret's CA",
        Duration::from_secs(60),
        || async {
            let s = secrets.get_opt("celcost-webhook-tls").await.ok()??;
            let ca = s.data?.get("ca.crt")?.0.clone();
            (!ca.is_empty()).then_some(ca)
        },
    )
    .await;
    let ca_dir = tempfile::tempdir().unwrap();
    let ca_file = ca_dir.path().join("ca.crt");
    std::fs::write(&ca_file, ca).unwrap();
    let host = format!("celcost-metrics.{NS}.svc");
    let resolve = format!("{host}:8443:{cluster_ip}");
    let url = format!("https://{host}:8443/metrics");
    let series = format!("celcost_highest_rule_cost_ratio{{kind=\"crd\",name=\"{crd_name}\"}}");
    let line = eventually(
        "the CRD's gauge through the Service",
        Duration::from_secs(60),
        || async {
            let (code, text) = scrape(
                &url,
                &["--cacert", ca_file.to_str().unwrap(), "--resolve", &resolve],
            )?;
            assert_eq!(code, 200, "{text}");
            assert!(
                text.contains("celcost_process_resident_memory_bytes"),
                "{text}"
            );
            text.lines()
                .find(|l| l.starts_with(&series))
                .map(str::to_string)
        },
    )
    .await;
    println!("{test}: through the Service: {line}");
    let ratio: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((0.8..1.0).contains(&ratio), "{line}");

    delete_crd(&client, &crd_name).await;
    let _ = vaps.delete(&vap_name, &DeleteParams::default()).await;
    let _ = maps.delete(&map_name, &DeleteParams::default()).await;
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s3_kubectl_apply_prints_the_warning_through_the_service() {
    let test = "in_cluster::s3_kubectl_apply_prints_the_warning_through_the_service";
    let Some((_serial, client, _image)) = installed(test).await else {
        return;
    };
    let group = format!("warn{}.celcost.io", suffix());
    let near = test_crd(&group, 11_000);
    // Right after a rollout kube-proxy may not route the Service yet, and the webhook fails
    // open (failurePolicy Ignore): dry runs until it answers.
    let started = Instant::now();
    eventually(
        "the webhook answering through its Service",
        Duration::from_secs(60),
        || async {
            let (_, warnings) = super::webhook::dry_run_warnings(&client, &near).await;
            warnings
                .iter()
                .any(|w| w.contains("celcost:"))
                .then_some(())
        },
    )
    .await;
    println!(
        "{test}: first warned dry run after {:.2} s",
        started.elapsed().as_secs_f64()
    );
    let (ok, stderr, took) = super::webhook::kubectl_apply(&near).await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("Warning: celcost: ^.spec.names costs"),
        "kubectl apply prints celcost's warning: {stderr}"
    );
    println!(
        "{test}: kubectl apply ({:.2} s): {}",
        took.as_secs_f64(),
        stderr.trim()
    );
    delete_crd(&client, &format!("widgets.{group}")).await;
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s4_leader_deleted_the_other_replica_reports() {
    let test = "in_cluster::s4_leader_deleted_the_other_replica_reports";
    let Some((_serial, client, image)) = installed(test).await else {
        return;
    };
    let group = format!("fo{}.celcost.io", suffix());
    create_crd(&client, &test_crd(&group, 1000)).await;
    report_for(&client, &format!("crd.widgets.{group}"), 1).await;
    let old = eventually("a Lease holder", Duration::from_secs(60), || {
        leader(&client)
    })
    .await;
    let (ok, o, e) = kubectl(&["-n", NS, "delete", "pod", &old, "--wait=false"]);
    assert!(ok, "{o}{e}");
    let deleted = Instant::now();
    // The change is made only once the old leader's pod is gone: a terminating leader may
    // still reconcile (and write) until it exits, and then the test would measure no failover.
    // From here on, whoever writes the report is another pod.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    eventually(
        "the deleted leader's pod gone",
        Duration::from_secs(90),
        || async { matches!(pods.get_opt(&old).await, Ok(None)).then_some(()) },
    )
    .await;
    let gone = Instant::now();
    resize(&client, &group, 2000).await;
    report_for(&client, &format!("crd.widgets.{group}"), 2).await;
    let took = gone.elapsed();
    // Only a leader writes reports, so the Lease has a holder other than the old pod; it is
    // read until it shows one (never a single read that may fall between two holders).
    let new = eventually("a new Lease holder", Duration::from_secs(60), || async {
        leader(&client).await.filter(|h| *h != old)
    })
    .await;
    assert!(
        matches!(pods.get_opt(&new).await, Ok(Some(_))),
        "the new leader {new} is a live pod"
    );
    println!(
        "{test}: leader {old} deleted, gone after {:.2} s → {new} reported the update {:.2} s later",
        (gone - deleted).as_secs_f64(),
        took.as_secs_f64()
    );
    // The Deployment's lease duration (15 s) plus a margin, from the moment the old leader
    // could no longer write.
    assert!(took < Duration::from_secs(25), "{took:?}");
    delete_crd(&client, &format!("widgets.{group}")).await;
    ensure_installed(&client, &image).await;
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s5_rollout_restart_misses_nothing_and_rewrites_nothing() {
    let test = "in_cluster::s5_rollout_restart_misses_nothing_and_rewrites_nothing";
    let Some((_serial, client, _image)) = installed(test).await else {
        return;
    };
    // Something on each side of the budget: a near-budget CRD (it has its Warning event) and a
    // small one that changes during the restart.
    let near = format!("rrn{}.celcost.io", suffix());
    let small = format!("rrs{}.celcost.io", suffix());
    create_crd(&client, &test_crd(&near, 10_000)).await;
    create_crd(&client, &test_crd(&small, 1000)).await;
    report_for(&client, &format!("crd.widgets.{near}"), 1).await;
    report_for(&client, &format!("crd.widgets.{small}"), 1).await;
    eventually("the near-budget event", Duration::from_secs(60), || async {
        (!events_about(&client, &format!("widgets.{near}"))
            .await
            .is_empty())
        .then_some(())
    })
    .await;
    let before = settled_reports(&client).await;
    let events_before = celcost_events(&client).await;
    let old_pods: Vec<String> = ready_pods(&client)
        .await
        .iter()
        .map(ResourceExt::name_any)
        .collect();

    let (ok, o, e) = kubectl(&["-n", NS, "rollout", "restart", "deploy/celcost"]);
    assert!(ok, "{o}{e}");
    // A change while the replicas are replaced: within budget (no event), a new generation.
    resize(&client, &small, 1500).await;
    let (ok, o, e) = kubectl(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deploy/celcost",
        "--timeout=300s",
    ]);
    assert!(ok, "{o}{e}");
    report_for(&client, &format!("crd.widgets.{small}"), 2).await;
    // The new leader has looked at every target (it re-estimates each one once).
    let targets = before.len() as f64;
    let holder =
        new_leader_has_estimated(&client, &old_pods, targets, Duration::from_secs(180)).await;
    let after = settled_reports(&client).await;
    let events_after = celcost_events(&client).await;
    let rewritten: Vec<&String> = before
        .iter()
        .filter(|(name, rv)| after.get(*name) != Some(rv))
        .map(|(name, _)| name)
        .collect();
    println!(
        "{test}: new leader {holder}; {} reports, rewritten: {rewritten:?}; events {} → {}",
        before.len(),
        events_before.len(),
        events_after.len()
    );
    assert_eq!(
        rewritten,
        [&format!("crd.widgets.{small}")],
        "only the report of the CRD that changed is written"
    );
    assert_eq!(events_before, events_after, "no new or repeated event");
    delete_crd(&client, &format!("widgets.{near}")).await;
    delete_crd(&client, &format!("widgets.{small}")).await;
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s6_an_eviction_respects_the_pod_disruption_budget() {
    let test = "in_cluster::s6_an_eviction_respects_the_pod_disruption_budget";
    let Some((_serial, client, image)) = installed(test).await else {
        return;
    };
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    eventually(
        "one disruption allowed",
        Duration::from_secs(60),
        || async {
            let s = pdbs.get("celcost").await.ok()?.status?;
            (s.disruptions_allowed == 1 && s.current_healthy == 2).then_some(())
        },
    )
    .await;
    let pods = ready_pods(&client).await;
    // kube's client retries a 429 by default (here until a replacement is Ready and the budget
    // allows the second eviction too): the budget's answer must reach the test.
    let mut config = kube::Config::infer().await.unwrap();
    config.default_retry = false;
    let api: Api<Pod> = Api::namespaced(Client::try_from(config).unwrap(), NS);
    api.evict(&pods[0].name_any(), &Default::default())
        .await
        .expect("the first eviction is allowed");
    match api.evict(&pods[1].name_any(), &Default::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 429, "{s:?}");
            println!("{test}: second eviction refused: {}", s.message);
        }
        other => panic!("the second eviction must be refused by the budget: {other:?}"),
    }
    ensure_installed(&client, &image).await;
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s7_api_server_down_60s_webhook_stays_ready_reports_catch_up() {
    let test = "in_cluster::s7_api_server_down_60s_webhook_stays_ready_reports_catch_up";
    let Some(ctl) = super::faults::apiserver_ctl_or_skip(test) else {
        return;
    };
    let Some((_serial, client, _image)) = installed(test).await else {
        return;
    };
    let group = format!("out{}.celcost.io", suffix());
    create_crd(&client, &test_crd(&group, 1000)).await;
    report_for(&client, &format!("crd.widgets.{group}"), 1).await;
    let near = test_crd(&format!("outnear{}.celcost.io", suffix()), 11_000);
    eventually("the webhook warning", Duration::from_secs(60), || async {
        let (_, w) = super::webhook::dry_run_warnings(&client, &near).await;
        w.iter().any(|w| w.contains("celcost:")).then_some(())
    })
    .await;
    let ips: Vec<IpAddr> = ready_pods(&client).await.iter().map(pod_ip).collect();
    assert_eq!(ips.len(), 2);
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(client.clone(), "default");
    let kubernetes_service_ip: IpAddr = services
        .get("kubernetes")
        .await
        .unwrap()
        .spec
        .and_then(|s| s.cluster_ip)
        .and_then(|ip| ip.parse().ok())
        .expect("the kubernetes Service's ClusterIP");

    super::faults::apiserver_ctl(&ctl, "stop").await;
    let stopped = Instant::now();
    // Asked directly, as the kubelet asks: readiness never drops (the webhook needs no watch);
    // the watches' health says they are failing once past --watch-unhealthy-after-seconds (30).
    let mut unready = Vec::new();
    let mut first_unhealthy: Option<Duration> = None;
    while stopped.elapsed() < Duration::from_secs(60) {
        for ip in &ips {
            match pod_get(*ip, "/readyz") {
                Some((200, _)) => {}
                other => unready.push(format!("{ip} at {:?}: {other:?}", stopped.elapsed())),
            }
            if let Some((503, body)) = pod_get(*ip, "/watches")
                && first_unhealthy.is_none()
            {
                first_unhealthy = Some(stopped.elapsed());
                println!(
                    "{test}: {ip} /watches 503 after {:.1} s: {}",
                    stopped.elapsed().as_secs_f64(),
                    body.trim()
                );
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let watches_at_end: Vec<Option<u16>> = ips
        .iter()
        .map(|ip| pod_get(*ip, "/watches").map(|r| r.0))
        .collect();
    super::faults::apiserver_ctl(&ctl, "start").await;
    let (client, ready) = super::faults::wait_apiserver_ready(Duration::from_secs(180)).await;
    let warned = eventually(
        "the webhook warning again",
        Duration::from_secs(60),
        || async {
            let (_, w) = super::webhook::dry_run_warnings(&client, &near).await;
            w.iter()
                .any(|w| w.contains("celcost:"))
                .then_some(Instant::now())
        },
    )
    .await;
    let webhook_back = warned.duration_since(ready);
    println!(
        "{test}: the webhook warned {:.2} s after the API server's /readyz",
        webhook_back.as_secs_f64()
    );
    assert!(
        unready.is_empty(),
        "/readyz dropped during the outage: {unready:?}"
    );
    // The watches fail from the API server's SIGTERM, up to 5 s before `ctl stop` returns
    // (then SIGKILL): /watches turns 503 30 s after that, so from 25 s here; 20 s is the margin.
    assert!(
        first_unhealthy.is_some_and(|t| t >= Duration::from_secs(20)),
        "/watches failed, and not long before 30 s: {first_unhealthy:?}"
    );
    assert_eq!(
        watches_at_end,
        [Some(503), Some(503)],
        "every replica told the truth at 60 s"
    );
    assert!(webhook_back <= Duration::from_secs(2), "{webhook_back:?}");

    // The reports catch up: an update made now is reported once the pods can reach the API
    // server again. They reach it through the `kubernetes` Service, which kube-proxy routes
    // again only when its own watch of the EndpointSlices is back (the API server withdrew its
    // endpoint when it stopped; kube-proxy's reflector backs off up to 30 s, measured here at
    // ~50 s after a 20–60 s outage): that time is the cluster's, printed, and the operator's is
    // measured from it.
    resize(&client, &group, 2000).await;
    let updated = Instant::now();
    let routed = eventually(
        "the kubernetes Service routed again",
        Duration::from_secs(180),
        || async {
            let addr = SocketAddr::new(kubernetes_service_ip, 443);
            tokio::task::spawn_blocking(move || {
                TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
            })
            .await
            .unwrap()
            .then(Instant::now)
        },
    )
    .await;
    report_or_logs(
        &client,
        &format!("crd.widgets.{group}"),
        2,
        Duration::from_secs(180),
    )
    .await;
    let reported = Instant::now();
    let after_routing = reported.saturating_duration_since(routed);
    println!(
        "{test}: the kubernetes Service (kube-proxy) routed again {:.1} s after the API server's /readyz; an update made at /readyz + {:.1} s reported {:.2} s after that ({:.2} s after the Service routed)",
        routed.duration_since(ready).as_secs_f64(),
        updated.duration_since(ready).as_secs_f64(),
        reported.duration_since(updated).as_secs_f64(),
        after_routing.as_secs_f64()
    );
    // Leader election (retry period 2 s) and the watches (backoff ≤ 2 s) come back at once.
    assert!(
        after_routing <= Duration::from_secs(15),
        "reported {after_routing:?} after the Service routed again"
    );
    for ip in &ips {
        eventually(
            "the watches healthy again",
            Duration::from_secs(30),
            || async { pod_get(*ip, "/watches").filter(|r| r.0 == 200) },
        )
        .await;
    }
    delete_crd(&client, &format!("widgets.{group}")).await;
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s8_kubectl_delete_removes_everything_it_installed() {
    let test = "in_cluster::s8_kubectl_delete_removes_everything_it_installed";
    let Some((_serial, client, image)) = installed(test).await else {
        return;
    };
    let dir = overlay(&image);
    let (_, rendered, e) = kubectl(&["kustomize", dir.to_str().unwrap()]);
    assert!(!rendered.is_empty(), "{e}");
    let (ok, o, e) = kubectl(&[
        "delete",
        "-k",
        dir.to_str().unwrap(),
        "--wait=true",
        "--timeout=300s",
    ]);
    assert!(ok, "kubectl delete -k:\n{o}\n{e}");
    remove_scraper();
    // Every object it rendered is gone (the namespace with everything in it: Lease, Secret).
    let mut left = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&rendered) {
        let v = <Value as serde::Deserialize>::deserialize(doc).unwrap();
        let (kind, name) = (
            v["kind"].as_str().unwrap(),
            v["metadata"]["name"].as_str().unwrap(),
        );
        let ns = v["metadata"]["namespace"].as_str();
        let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "name"];
        if let Some(ns) = ns {
            args.extend(["-n", ns]);
        }
        let (_, out, _) = kubectl(&args);
        if !out.trim().is_empty() {
            left.push(out.trim().to_string());
        }
    }
    // And nothing of celcost's is left cluster-wide.
    for kind in [
        "validatingwebhookconfigurations",
        "clusterroles",
        "clusterrolebindings",
        "customresourcedefinitions",
        "namespaces",
    ] {
        let (_, out, _) = kubectl(&["get", kind, "-o", "name"]);
        // celcost's own names: `celcost…`, and the CostReport CRD.
        left.extend(
            out.lines()
                .filter(|l| {
                    let name = l.rsplit('/').next().unwrap_or_default();
                    name.starts_with("celcost") || name == "costreports.celcost.io"
                })
                .map(str::to_string),
        );
    }
    let events = celcost_events(&client).await.len();
    println!(
        "{test}: left behind: {left:?}; {events} events of celcost's about targets in other namespaces (they expire with the API server's --event-ttl, 1 h)"
    );
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The Helm install's release and namespace (s8h_): a release name other than `celcost`, so
/// that every name is the release's and the operator is told the ones that are not its defaults
/// (its Lease, its webhook's Service, Secret and configuration).
const HELM_RELEASE: &str = "celcost-e2e";
const HELM_NS: &str = "celcost-helm";

/// `helm-lite ARGS` (KUBECONFIG inherited): success, stdout, stderr; None without helm-lite.
fn helm_lite(args: &[&str]) -> Option<(bool, String, String)> {
    let out = Command::new("helm-lite").args(args).output().ok()?;
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The values that point the chart at the suite's image, already on the node.
fn helm_image_values(image: &str) -> Vec<String> {
    let (repository, tag) = match image.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, t),
        _ => (image, "latest"),
    };
    vec![
        "--set".into(),
        format!("image.repository={repository}"),
        "--set-string".into(),
        format!("image.tag={tag}"),
        "--set".into(),
        "image.pullPolicy=Never".into(),
    ]
}

#[tokio::test]
#[ignore = "needs a cluster with a node, CELCOST_E2E_IMAGE and helm-lite"]
async fn s8h_helm_install_reports_warns_and_uninstall_leaves_only_the_crd() {
    let test = "in_cluster::s8h_helm_install_reports_warns_and_uninstall_leaves_only_the_crd";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    let Some(image) = image(test) else { return };
    if helm_lite(&[]).is_none() {
        skip(
            test,
            "helm-lite is not on PATH (e2e/in-cluster.sh installs it from ../shared/helm)",
        );
        return;
    }
    let started = Instant::now();
    // One operator at a time: the kustomize install (s1_ to s8_) goes first; s8_ has removed
    // it already, so this is quick then. Its ClusterRoles, webhook configuration and CRD are
    // cluster-wide, and two operators would both write the reports.
    let dir = overlay(&image);
    let (ok, o, e) = kubectl(&[
        "delete",
        "-k",
        dir.to_str().unwrap(),
        "--ignore-not-found",
        "--wait=true",
        "--timeout=300s",
    ]);
    assert!(ok, "kubectl delete -k:\n{o}\n{e}");
    // A release left by an earlier, failed run.
    let _ = helm_lite(&["uninstall", HELM_RELEASE, "-n", HELM_NS]);

    // `helm install celcost-e2e charts/celcost -n celcost-helm --create-namespace`, with the
    // suite's image.
    let chart = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("charts/celcost");
    let chart = chart.to_str().unwrap();
    let values = helm_image_values(&image);
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let mut install = vec![
        "install",
        HELM_RELEASE,
        chart,
        "-n",
        HELM_NS,
        "--create-namespace",
        "--wait",
        "--timeout",
        "5m",
    ];
    install.extend(&values);
    let t = Instant::now();
    let (ok, o, e) = helm_lite(&install).unwrap();
    assert!(ok, "helm-lite install:\n{o}\n{e}");
    println!(
        "{test}: helm-lite install --wait: {:.1} s\n{}",
        t.elapsed().as_secs_f64(),
        o.trim()
    );
    // What the release holds (to check the uninstall), as Helm renders it.
    let mut template = vec!["template", HELM_RELEASE, chart, "-n", HELM_NS];
    template.extend(&values);
    let (ok, rendered, e) = helm_lite(&template).unwrap();
    assert!(ok, "helm-lite template: {e}");
    let pods: Api<Pod> = Api::namespaced(client.clone(), HELM_NS);
    let pods_selector = format!("{SELECTOR},app.kubernetes.io/instance={HELM_RELEASE}");
    let ready = eventually("two Ready replicas", Duration::from_secs(180), || async {
        let list = pods
            .list(&ListParams::default().labels(&pods_selector))
            .await
            .ok()?;
        let ready: Vec<String> = list
            .items
            .iter()
            .filter(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .map(ResourceExt::name_any)
            .collect();
        (ready.len() == 2).then_some(ready)
    })
    .await;
    // The pods meet the `restricted` Pod Security level: labelling the namespace so (as the docs
    // advise: Helm's --create-namespace sets no label) warns about none of them.
    let (ok, o, e) = kubectl(&[
        "label",
        "namespace",
        HELM_NS,
        "pod-security.kubernetes.io/enforce=restricted",
        "--overwrite",
    ]);
    assert!(ok && !e.contains("violate"), "{o}{e}");

    // A CRD near budget gets its report, from the leader of the release's Lease.
    let group = format!("helm{}.celcost.io", suffix());
    create_crd(&client, &test_crd(&group, 10_000)).await;
    let r = report_for(&client, &format!("crd.widgets.{group}"), 1).await;
    assert_eq!(condition(&r, "WithinBudget"), ("False", "RuleNearBudget"));
    let leases: Api<Lease> = Api::namespaced(client.clone(), HELM_NS);
    let holder = leases
        .get(HELM_RELEASE)
        .await
        .expect("the Lease named after the release")
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(ready.contains(&holder), "{holder} not in {ready:?}");

    // `kubectl apply` of a CRD at ~90 % prints the warning, through the release's Service (the
    // serving certificate's SAN and the caBundle of the release's configuration both right).
    let near_group = format!("helmwarn{}.celcost.io", suffix());
    let near = test_crd(&near_group, 11_000);
    let t = Instant::now();
    eventually(
        "the webhook answering through its Service",
        Duration::from_secs(60),
        || async {
            let (_, warnings) = super::webhook::dry_run_warnings(&client, &near).await;
            warnings
                .iter()
                .any(|w| w.contains("celcost:"))
                .then_some(())
        },
    )
    .await;
    let (ok, stderr, _) = super::webhook::kubectl_apply(&near).await;
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("Warning: celcost: ^.spec.names costs"),
        "kubectl apply prints celcost's warning: {stderr}"
    );
    println!(
        "{test}: report of a new CRD, then the warning after {:.2} s: {}",
        t.elapsed().as_secs_f64(),
        stderr.trim()
    );
    delete_crd(&client, &format!("widgets.{group}")).await;
    delete_crd(&client, &format!("widgets.{near_group}")).await;

    // `helm uninstall`: every object of the release goes.
    let t = Instant::now();
    let (ok, o, e) = helm_lite(&["uninstall", HELM_RELEASE, "-n", HELM_NS]).unwrap();
    assert!(ok, "helm-lite uninstall:\n{o}\n{e}");
    let objects: Vec<(String, String, Option<String>)> =
        serde_yaml_ng::Deserializer::from_str(&rendered)
            .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
            .filter(|v| !v.is_null())
            .map(|v| {
                (
                    v["kind"].as_str().unwrap().to_string(),
                    v["metadata"]["name"].as_str().unwrap().to_string(),
                    v["metadata"]["namespace"].as_str().map(str::to_string),
                )
            })
            .collect();
    assert!(objects.len() >= 14, "{rendered}");
    let still_there = || {
        objects
            .iter()
            .filter_map(|(kind, name, ns)| {
                let mut args = vec!["get", kind, name, "--ignore-not-found", "-o", "name"];
                if let Some(ns) = ns {
                    args.extend(["-n", ns]);
                }
                let (_, out, _) = kubectl(&args);
                (!out.trim().is_empty()).then(|| out.trim().to_string())
            })
            .collect::<Vec<_>>()
    };
    eventually(
        "the release's objects gone",
        Duration::from_secs(60),
        || async { still_there().is_empty().then_some(()) },
    )
    .await;
    eventually(
        "the release's pods gone",
        Duration::from_secs(90),
        || async {
            pods.list(&ListParams::default().labels(&pods_selector))
                .await
                .ok()?
                .items
                .is_empty()
                .then_some(())
        },
    )
    .await;
    println!(
        "{test}: helm-lite uninstall: the release's {} objects and pods gone in {:.1} s",
        objects.len(),
        t.elapsed().as_secs_f64()
    );

    // What is left is what Helm keeps by design: the CRD of crds/ (never deleted by Helm, with
    // the reports in it) and the namespace of --create-namespace; in it, what the operator made
    // at run time: its Lease and its webhook's Secret. Nothing of celcost's elsewhere.
    remove_scraper();
    let mut left = Vec::new();
    for kind in [
        "validatingwebhookconfigurations",
        "clusterroles",
        "clusterrolebindings",
        "customresourcedefinitions",
        "namespaces",
    ] {
        let (_, out, _) = kubectl(&["get", kind, "-o", "name"]);
        left.extend(
            out.lines()
                .filter(|l| {
                    let name = l.rsplit('/').next().unwrap_or_default();
                    name.starts_with("celcost") || name == "costreports.celcost.io"
                })
                .map(str::to_string),
        );
    }
    let (_, out, _) = kubectl(&["get", "roles,rolebindings", "-n", "default", "-o", "name"]);
    left.extend(
        out.lines()
            .filter(|l| l.contains("celcost"))
            .map(str::to_string),
    );
    let (_, out, _) = kubectl(&[
        "get",
        "all,secrets,configmaps,serviceaccounts,leases,roles,rolebindings,poddisruptionbudgets",
        "-n",
        HELM_NS,
        "-o",
        "name",
    ]);
    // What the API server puts in every namespace.
    let every_namespace = [
        "serviceaccount/default",
        "configmap/kube-root-ca.crt",
        "configmap/openshift-service-ca.crt",
    ];
    left.extend(
        out.lines()
            .filter(|l| !every_namespace.contains(l))
            .map(|l| format!("{l} -n {HELM_NS}")),
    );
    left.sort();
    println!("{test}: left after helm uninstall: {left:?}");
    assert_eq!(
        left,
        [
            "customresourcedefinition.apiextensions.k8s.io/costreports.celcost.io".to_string(),
            format!("lease.coordination.k8s.io/{HELM_RELEASE} -n {HELM_NS}"),
            format!("namespace/{HELM_NS}"),
            format!("secret/{HELM_RELEASE}-webhook-tls -n {HELM_NS}"),
        ],
        "helm uninstall leaves the CRD (crds/), the namespace (--create-namespace) and, in it, the \
         operator's Lease and webhook Secret; nothing else"
    );

    // The rest as the docs say: the namespace and the CRD (with the reports).
    let (ok, o, e) = kubectl(&[
        "delete",
        "namespace",
        HELM_NS,
        "--wait=true",
        "--timeout=120s",
    ]);
    assert!(ok, "{o}{e}");
    let (ok, o, e) = kubectl(&[
        "delete",
        "crd",
        "costreports.celcost.io",
        "--wait=true",
        "--timeout=120s",
    ]);
    assert!(ok, "{o}{e}");
    println!(
        "{test}: install, report, warning, uninstall and clean-up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test]
#[ignore = "needs a cluster with a node and CELCOST_E2E_IMAGE"]
async fn s9_memory_stays_under_the_limit_with_2000_crds() {
    let test = "in_cluster::s9_memory_stays_under_the_limit_with_2000_crds";
    let Some((_serial, client, _image)) = installed(test).await else {
        return;
    };
    let count: usize = std::env::var("CELCOST_SCALE_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let started = Instant::now();
    let names = create_bench_crds(&client, count).await;
    let reports: Api<CostReport> = Api::all(client.clone());
    let all_reported = || async {
        let have: HashSet<String> = reports
            .list(&ListParams::default().labels("celcost.io/target-kind=crd"))
            .await
            .ok()?
            .items
            .into_iter()
            .filter(|r| {
                r.status
                    .as_ref()
                    .is_some_and(|s| s.observed_generation.is_some())
            })
            .map(|r| r.name_any())
            .collect();
        names
            .iter()
            .all(|n| have.contains(&format!("crd.{n}")))
            .then_some(())
    };
    let peaks = |pods: &[Pod]| -> Vec<(String, f64)> {
        pods.iter()
            .map(|p| {
                (
                    p.name_any(),
                    pod_metric(pod_ip(p), "celcost_process_peak_resident_memory_bytes") / 1048576.0,
                )
            })
            .collect()
    };
    eventually(
        "every bench CRD reported",
        Duration::from_secs(900),
        all_reported,
    )
    .await;
    let warm = peaks(&ready_pods(&client).await);
    println!(
        "{test}: {count} CRDs created and reported in {:.1} s; peak RSS per replica: {warm:?} MiB",
        started.elapsed().as_secs_f64()
    );
    // A cold start with every CRD there: both replicas list and the new leader estimates all.
    let old: Vec<String> = ready_pods(&client)
        .await
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let (ok, o, e) = kubectl(&["-n", NS, "rollout", "restart", "deploy/celcost"]);
    assert!(ok, "{o}{e}");
    let (ok, o, e) = kubectl(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deploy/celcost",
        "--timeout=300s",
    ]);
    assert!(ok, "{o}{e}");
    let restarted = Instant::now();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let targets = crds
        .list_metadata(&ListParams::default())
        .await
        .unwrap()
        .items
        .len() as f64;
    new_leader_has_estimated(&client, &old, targets, Duration::from_secs(900)).await;
    let pods = ready_pods(&client).await;
    let cold = peaks(&pods);
    println!(
        "{test}: cold start with {targets} CRDs re-estimated in {:.1} s; peak RSS per replica: {cold:?} MiB (limit {MEMORY_LIMIT_MIB} MiB)",
        restarted.elapsed().as_secs_f64()
    );
    for p in &pods {
        let cs = &p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0];
        assert_eq!(
            cs.restart_count,
            0,
            "{} restarted: {:?}",
            p.name_any(),
            cs.last_state
        );
    }
    for (pod, mib) in warm.iter().chain(&cold) {
        assert!(*mib > 0.0 && *mib < MEMORY_LIMIT_MIB, "{pod}: {mib} MiB");
    }
    // CI throws the cluster away afterwards (CELCOST_SCALE_KEEP=1): deleting 2,000 CRDs one
    // by one would be most of this test's time.
    if std::env::var_os("CELCOST_SCALE_KEEP").is_none() {
        let t = Instant::now();
        delete_crds(&client, names).await;
        println!(
            "{test}: {count} CRDs deleted in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
}
