//! The admission webhook on a real API server, the operator run as a local process: the API
//! server calls it at `https://127.0.0.1:PORT/validate` (`--webhook-url`), trusting the CA the
//! operator wrote into the configuration's `caBundle`. The test's ValidatingWebhookConfiguration
//! selects only the objects labelled with its own id (`objectSelector`), so the other tests and
//! users of a shared cluster never meet it.
//!
//! - `kubectl apply` of a near-budget CRD prints the celcost warning on stderr, and the API
//!   server's response carries it as a `Warning` header;
//! - with the operator down, an apply succeeds promptly (`failurePolicy: Ignore`);
//! - a serving certificate renewed while running (a 60 s lifetime: renewed at 2/3) keeps every
//!   apply warned; a new CA (the Secret deleted) reaches the `caBundle` and the webhook answers
//!   again.

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Secret};

use super::*;

const LABEL: &str = "celcost.io/e2e-webhook";

/// What a webhook test sets up: a namespace for the Secret, the configuration, a port.
struct Setup {
    client: Client,
    id: String,
    namespace: String,
    configuration: String,
    port: u16,
}

impl Setup {
    async fn new(client: &Client, test: &str) -> Setup {
        let id = suffix();
        let namespace = format!("celcost-e2e-wh-{id}");
        let configuration = format!("celcost-e2e-{id}");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Leftovers of earlier runs (they select only their own objects; tidy anyway).
        let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        let _ = vwcs
            .delete_collection(
                &DeleteParams::default(),
                &ListParams::default().labels("celcost.io/e2e=true"),
            )
            .await;
        let nss: Api<Namespace> = Api::all(client.clone());
        nss.create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": namespace, "labels": {"celcost.io/e2e": "true"}}}),
            )
            .unwrap(),
        )
        .await
        .expect("create the namespace");
        let vwc: ValidatingWebhookConfiguration = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": configuration, "labels": {"celcost.io/e2e": "true"}},
            "webhooks": [{
                "name": "cost.celcost.io",
                // No caBundle: the operator writes it. The URL is the operator's, set here so
                // that the API server calls a closed port before the operator starts.
                "clientConfig": {"url": format!("https://127.0.0.1:{port}/validate")},
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Ignore",
                "matchPolicy": "Equivalent",
                "timeoutSeconds": 5,
                "objectSelector": {"matchLabels": {LABEL: id}},
                "rules": [
                    {"apiGroups": ["apiextensions.k8s.io"], "apiVersions": ["v1"],
                     "operations": ["CREATE", "UPDATE"], "resources": ["customresourcedefinitions"], "scope": "Cluster"},
                    {"apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"],
                     "operations": ["CREATE", "UPDATE"],
                     "resources": ["validatingadmissionpolicies", "mutatingadmissionpolicies"], "scope": "Cluster"}
                ]
            }]
        }))
        .unwrap();
        vwcs.create(&PostParams::default(), &vwc)
            .await
            .expect("create the ValidatingWebhookConfiguration");
        println!(
            "{test}: webhook configuration {configuration}, port {port}, namespace {namespace}"
        );
        Setup {
            client: client.clone(),
            id,
            namespace,
            configuration,
            port,
        }
    }

    fn operator(&self, name: &str, extra: &[&str]) -> Operator {
        let address = format!("127.0.0.1:{}", self.port);
        let url = format!("https://127.0.0.1:{}/validate", self.port);
        let mut args: Vec<&str> = vec![
            "--webhook-address",
            &address,
            "--webhook-url",
            &url,
            "--webhook-namespace",
            &self.namespace,
            "--webhook-configuration",
            &self.configuration,
            "--webhook-cert-refresh-seconds",
            "1",
        ];
        args.extend_from_slice(extra);
        Operator::start(name, &args)
    }

    /// Waits until the configuration trusts the CA of the operator's Secret.
    async fn wait_ca_bundle(&self) -> String {
        let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        eventually(
            "the operator's CA in the configuration's caBundle",
            Duration::from_secs(60),
            || async {
                let ca = secret_key(
                    &secrets.get_opt("celcost-webhook-tls").await.ok()??,
                    "ca.crt",
                )?;
                let vwc = vwcs.get_opt(&self.configuration).await.ok()??;
                let bundle = vwc.webhooks?[0].client_config.ca_bundle.clone()?;
                (String::from_utf8_lossy(&bundle.0) == ca).then_some(ca)
            },
        )
        .await
    }

    /// A CRD (labelled for this test's webhook) whose one rule costs about `items` × 824.
    fn crd(&self, tag: &str, items: u64) -> Value {
        let group = format!("{tag}-{}.e2e.celcost.io", self.id);
        let mut crd = test_crd(&group, items);
        crd["metadata"]["labels"][LABEL] = json!(self.id);
        crd
    }

    async fn teardown(self, crds: &[&Value]) {
        for crd in crds {
            delete_crd(&self.client, crd["metadata"]["name"].as_str().unwrap()).await;
        }
        let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        let _ = vwcs
            .delete(&self.configuration, &DeleteParams::default())
            .await;
        let nss: Api<Namespace> = Api::all(self.client.clone());
        let _ = nss.delete(&self.namespace, &DeleteParams::default()).await;
    }
}

fn secret_key(s: &Secret, key: &str) -> Option<String> {
    let b = s.data.as_ref()?.get(key)?;
    Some(String::from_utf8_lossy(&b.0).into_owned())
}

/// `kubectl apply -f -` of `object`: (success, stderr, how long it took).
pub(super) async fn kubectl_apply(object: &Value) -> (bool, String, Duration) {
    let text = serde_json::to_vec(object).unwrap();
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut child = Command::new("kubectl")
            .args(["apply", "--request-timeout=30s", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        child.stdin.take().unwrap().write_all(&text).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            started.elapsed(),
        )
    })
    .await
    .unwrap()
}

/// A server-side dry-run create of `crd` through the client: the API server's `Warning`
/// headers (the warnings of the webhooks' AdmissionReview responses) and the status code.
pub(super) async fn dry_run_warnings(client: &Client, crd: &Value) -> (u16, Vec<String>) {
    let req = http::Request::builder()
        .method("POST")
        .uri("/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(crd).unwrap()))
        .unwrap();
    let res = client.send(req).await.expect("dry-run create");
    let warnings = res
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    (res.status().as_u16(), warnings)
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn webhook_warns_at_apply_and_stays_out_of_the_way_when_down() {
    let test = "webhook_warns_at_apply_and_stays_out_of_the_way_when_down";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    let setup = Setup::new(&client, test).await;
    let mut op = setup.operator("webhook", &[]);
    op.wait_ready(Duration::from_secs(60)).await;
    setup.wait_ca_bundle().await;

    // Near the per-rule limit (~90 %): kubectl prints the warning.
    let near = setup.crd("near", 11_000);
    let info = client.apiserver_version().await.unwrap();
    let expected = Estimator::new(model_version(&info.major, &info.minor))
        .estimate(&near, "x")
        .unwrap()
        .schemas[0]
        .rules[0]
        .cost;
    let line = format!(
        "celcost: ^.spec.names costs {} = {}% of the 10,000,000 per-rule limit",
        celcost::report::format::thousands(expected),
        expected / 100_000
    );
    let (ok, stderr, took) = kubectl_apply(&near).await;
    assert!(ok, "kubectl apply failed: {stderr}");
    assert!(
        stderr.contains(&format!("Warning: {line}")),
        "kubectl's stderr has no celcost warning:\n{stderr}\n(expected {line})"
    );
    println!(
        "kubectl apply (webhook up) took {took:?}; stderr: {}",
        stderr.trim()
    );

    // The raw response: the API server's Warning header carries the webhook's warning.
    let mut other = setup.crd("dry", 11_000);
    other["metadata"]["name"] = json!(format!("widgets.dry2-{}.e2e.celcost.io", setup.id));
    other["spec"]["group"] = json!(format!("dry2-{}.e2e.celcost.io", setup.id));
    let (status, headers) = dry_run_warnings(&client, &other).await;
    assert_eq!(status, 201, "{headers:?}");
    assert!(
        headers
            .iter()
            .any(|h| h.starts_with("299 - ") && h.contains(&line)),
        "Warning headers: {headers:?}"
    );

    // Within budget: no warning.
    let small = setup.crd("small", 1_000);
    let (ok, stderr, _) = kubectl_apply(&small).await;
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("celcost"), "{stderr}");
    assert!(
        op.metric_with("celcost_webhook_requests_total", "outcome=\"warned\"") >= 2.0,
        "the operator counted its warnings"
    );

    // Over the limit: the API server rejects the CRD itself, before validating webhooks run,
    // so the webhook never sees it.
    let reviews = op.metric("celcost_webhook_requests_total");
    let over = setup.crd("over", 13_000);
    let (ok, stderr, _) = kubectl_apply(&over).await;
    assert!(!ok, "an over-budget CRD was accepted");
    assert!(
        stderr.contains("cost") && !stderr.contains("celcost:"),
        "{stderr}"
    );
    assert_eq!(
        op.metric("celcost_webhook_requests_total"),
        reviews,
        "the webhook was not called for the rejected CRD"
    );
    println!("over budget: rejected by the API server: {}", stderr.trim());

    // The operator down: applies still succeed, promptly, without the warning.
    drop(op);
    let mut updated = near.clone();
    updated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["names"]["maxItems"] = json!(11_500);
    let (ok, stderr, took_update) = kubectl_apply(&updated).await;
    assert!(ok, "apply with the operator down failed: {stderr}");
    assert!(!stderr.contains("celcost"), "{stderr}");
    let down = setup.crd("down", 11_000);
    let (ok, stderr, took_create) = kubectl_apply(&down).await;
    assert!(ok, "{stderr}");
    println!(
        "operator down: kubectl apply of an update took {took_update:?}, of a create {took_create:?} (webhook up: {took:?})"
    );
    assert!(
        took_update < Duration::from_secs(3) && took_create < Duration::from_secs(3),
        "the API server waited for the webhook that is down"
    );
    setup.teardown(&[&near, &small, &down]).await;
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn webhook_keeps_answering_across_certificate_rotation() {
    let test = "webhook_keeps_answering_across_certificate_rotation";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    let setup = Setup::new(&client, test).await;
    // Serving certificates of 60 s (backdated 6 s): renewed 38 s after they are issued.
    let mut op = setup.operator(
        "webhook-rotation",
        &["--webhook-cert-validity-seconds", "60"],
    );
    op.wait_ready(Duration::from_secs(60)).await;
    let ca = setup.wait_ca_bundle().await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &setup.namespace);
    let first = secret_key(
        &secrets.get("celcost-webhook-tls").await.unwrap(),
        "tls.crt",
    )
    .unwrap();

    // Dry-run creates every second until two renewals have happened: each must be warned.
    let crd = setup.crd("rot", 11_000);
    let started = Instant::now();
    let mut seen = vec![first.clone()];
    let (mut asked, mut warned) = (0, 0);
    while seen.len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(150),
            "no two renewals within 150 s; log:\n{}",
            std::fs::read_to_string(&op.log).unwrap_or_default()
        );
        let (status, headers) = dry_run_warnings(&client, &crd).await;
        assert_eq!(status, 201, "{headers:?}");
        asked += 1;
        if headers
            .iter()
            .any(|h| h.contains("celcost: ^.spec.names costs"))
        {
            warned += 1;
        } else {
            println!(
                "no warning at {:?} (headers {headers:?})",
                started.elapsed()
            );
        }
        let now = secret_key(
            &secrets.get("celcost-webhook-tls").await.unwrap(),
            "tls.crt",
        )
        .unwrap();
        if seen.last() != Some(&now) {
            println!("serving certificate renewed at {:?}", started.elapsed());
            seen.push(now);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // One more after the last renewal.
    let (_, headers) = dry_run_warnings(&client, &crd).await;
    assert!(
        headers.iter().any(|h| h.contains("celcost:")),
        "{headers:?}"
    );
    assert!(op.alive());
    // Same CA: the caBundle did not change, and the new certificates are served (the API
    // server only reaches the webhook over a verified TLS handshake).
    assert_eq!(setup.wait_ca_bundle().await, ca);
    println!(
        "certificate rotation: 2 renewals in {:?}; {warned}/{asked} dry-run creates warned",
        started.elapsed()
    );
    assert_eq!(
        warned, asked,
        "every request during the rotations was answered"
    );

    // A new CA (the Secret deleted): the operator writes a new one and patches the caBundle.
    secrets
        .delete("celcost-webhook-tls", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = Instant::now();
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let new_ca = eventually(
        "a new CA in the caBundle",
        Duration::from_secs(30),
        || async {
            let bundle = vwcs.get(&setup.configuration).await.ok()?.webhooks?[0]
                .client_config
                .ca_bundle
                .clone()?;
            let bundle = String::from_utf8_lossy(&bundle.0).into_owned();
            (bundle != ca).then_some(bundle)
        },
    )
    .await;
    let patched = deleted.elapsed();
    assert_eq!(setup.wait_ca_bundle().await, new_ca);
    eventually(
        "warnings under the new CA",
        Duration::from_secs(30),
        || async {
            let (_, headers) = dry_run_warnings(&client, &crd).await;
            headers.iter().any(|h| h.contains("celcost:")).then_some(())
        },
    )
    .await;
    println!(
        "new CA: caBundle patched {patched:?} after the Secret was deleted, warnings again after {:?}",
        deleted.elapsed()
    );
    assert!(op.alive());
    drop(op);
    setup.teardown(&[]).await;
}
