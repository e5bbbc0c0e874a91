//! `/metrics` served as kubebuilder serves it, against the real API server: HTTPS (here the
//! self-signed certificate of an operator without the webhook), a bearer token reviewed by a
//! TokenReview and a SubjectAccessReview of `get /metrics`. Without a token 401; with the token
//! of a service account that lacks the role 403; with config/rbac's `celcost-metrics-reader`
//! bound 200; a second scrape within the cache time sends no review (the operator's own counter
//! `celcost_metrics_auth_reviews_total` says so).

use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

use super::{Operator, SERIAL, cluster, eventually, install_crd, suffix, sum_samples};

/// `GET https://127.0.0.1:<port>/metrics` with curl (the certificate is self-signed: not
/// verified), with `token` as the bearer token: (status, body).
fn scrape_https(port: u16, token: Option<&str>) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-sk", "--max-time", "10", "-w", "\n%{http_code}"]);
    if let Some(t) = token {
        cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd
        .arg(format!("https://127.0.0.1:{port}/metrics"))
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// `kubectl create token <sa> -n <namespace>` (the KUBECONFIG's cluster).
fn create_token(namespace: &str, sa: &str) -> String {
    let out = Command::new("kubectl")
        .args(["create", "token", sa, "-n", namespace, "--duration", "10m"])
        .output()
        .expect("kubectl");
    assert!(
        out.status.success(),
        "kubectl create token: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// config/rbac's reader role, under another name.
fn reader_role(name: &str) -> ClusterRole {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("config/rbac/metrics_reader_role.yaml"),
    )
    .unwrap();
    let mut role: Value = serde_yaml_ng::from_str(&text).unwrap();
    role["metadata"] = json!({"name": name, "labels": {"celcost.io/e2e": "true"}});
    serde_json::from_value(role).unwrap()
}

fn reviews(body: &str, label: &str) -> f64 {
    sum_samples(body, "celcost_metrics_auth_reviews_total", label)
}

struct Setup {
    client: Client,
    namespace: String,
    role: String,
}

impl Setup {
    async fn new(client: &Client) -> Setup {
        let id = suffix();
        let namespace = format!("celcost-e2e-metrics-{id}");
        let role = format!("celcost-e2e-metrics-reader-{id}");
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
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
        for sa in ["reader", "other"] {
            sas.create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": sa}})).unwrap(),
            )
            .await
            .expect("create a service account");
        }
        let roles: Api<ClusterRole> = Api::all(client.clone());
        roles
            .create(&PostParams::default(), &reader_role(&role))
            .await
            .expect("create the reader role");
        let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
        bindings
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "metadata": {"name": role, "labels": {"celcost.io/e2e": "true"}},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}]
                }))
                .unwrap(),
            )
            .await
            .expect("bind the reader role");
        Setup {
            client: client.clone(),
            namespace,
            role,
        }
    }

    async fn cleanup(&self) {
        let dp = DeleteParams::default();
        let _ = Api::<ClusterRoleBinding>::all(self.client.clone())
            .delete(&self.role, &dp)
            .await;
        let _ = Api::<ClusterRole>::all(self.client.clone())
            .delete(&self.role, &dp)
            .await;
        let _ = Api::<Namespace>::all(self.client.clone())
            .delete(&self.namespace, &dp)
            .await;
    }
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn metrics_need_a_token_with_the_reader_role_and_cached_reviews() {
    let test = "metrics_need_a_token_with_the_reader_role_and_cached_reviews";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    let setup = Setup::new(&client).await;
    // On the harness' metrics port, secure.
    let mut op = Operator::start("metrics-secure", &["--metrics-secure"]);
    let port = op.metrics_port;
    op.wait_ready(Duration::from_secs(60)).await;
    // The probes stay plain HTTP on their own port, and /metrics is not there.
    assert!(matches!(op.get("/healthz"), Some((200, _))));
    assert!(matches!(op.get("/metrics"), Some((404, _))));

    let (code, body) = eventually(
        "the HTTPS metrics server",
        Duration::from_secs(10),
        || async {
            let (code, body) = scrape_https(port, None);
            (code != 0).then_some((code, body))
        },
    )
    .await;
    assert_eq!((code, body.trim()), (401, "Unauthorized"), "no token");
    let (code, _) = scrape_https(port, Some("not-a-token"));
    assert_eq!(code, 401, "a token the API server does not authenticate");

    // The service accounts' tokens: the reader may get /metrics, the other may not (RBAC takes
    // a moment to see the new binding).
    let reader = create_token(&setup.namespace, "reader");
    let other = create_token(&setup.namespace, "other");
    let (code, body) = scrape_https(port, Some(&other));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body.trim(),
        format!(
            "Authorization denied for user system:serviceaccount:{}:other",
            setup.namespace
        )
    );
    let first = eventually("the reader's scrape", Duration::from_secs(45), || async {
        let (code, body) = scrape_https(port, Some(&reader));
        (code == 200).then_some(body)
    })
    .await;
    assert!(
        first.contains("celcost_watch_last_sync_age_seconds"),
        "{first}"
    );
    let tokens = reviews(&first, "review=\"tokenreview\"");
    let decisions = reviews(&first, "review=\"subjectaccessreview\"");
    // One TokenReview per token (made-up, other, reader), one decision per user (other; the
    // reader's, retried while RBAC caught up: a denial is cached 30 s, so at most once more
    // for each 30 s waited).
    assert_eq!(tokens, 3.0, "{first}");
    assert_eq!(
        reviews(&first, "result=\"unauthenticated\""),
        1.0,
        "{first}"
    );
    assert!(
        reviews(&first, "result=\"allowed\"") == 1.0 && decisions >= 2.0,
        "{first}"
    );

    // Within the cache time, scrapes cost the API server nothing.
    for _ in 0..3 {
        let (code, body) = scrape_https(port, Some(&reader));
        assert_eq!(code, 200);
        assert_eq!(
            (
                reviews(&body, "review=\"tokenreview\""),
                reviews(&body, "review=\"subjectaccessreview\"")
            ),
            (tokens, decisions),
            "a cached scrape sent a review:\n{body}"
        );
    }
    let (code, _) = scrape_https(port, Some(&other));
    assert_eq!(code, 403, "the denial, cached");
    let (_, body) = scrape_https(port, Some(&reader));
    assert_eq!(
        reviews(&body, "review=\"subjectaccessreview\""),
        decisions,
        "{body}"
    );
    println!(
        "{test}: {tokens} TokenReviews and {decisions} SubjectAccessReviews for 4 tokens and 9 scrapes"
    );
    assert!(op.alive());
    drop(op);
    setup.cleanup().await;
}

/// With the webhook on, /metrics serves the webhook's certificate from its Secret, which names
/// the metrics Service too: a scraper that trusts the Secret's CA verifies it for
/// `celcost-metrics.<namespace>.svc`, as the ServiceMonitor's `tlsConfig` does.
#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn metrics_serve_the_webhook_certificate_for_the_metrics_service() {
    let test = "metrics_serve_the_webhook_certificate_for_the_metrics_service";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    let setup = Setup::new(&client).await;
    let webhook_port = super::free_port();
    let webhook_address = format!("127.0.0.1:{webhook_port}");
    let webhook_url = format!("https://127.0.0.1:{webhook_port}/validate");
    let configuration = format!("{}-webhook", setup.role);
    let mut op = Operator::start(
        "metrics-webhook-certificate",
        &[
            "--webhook",
            "--webhook-address",
            &webhook_address,
            "--webhook-url",
            &webhook_url,
            "--webhook-namespace",
            &setup.namespace,
            "--webhook-configuration",
            &configuration,
            "--metrics-secure",
        ],
    );
    // Ready: the webhook's certificate is loaded (and so the metrics server's).
    op.wait_ready(Duration::from_secs(60)).await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), &setup.namespace);
    let secret = secrets
        .get("celcost-webhook-tls")
        .await
        .expect("the Secret");
    let ca = secret.data.unwrap()["ca.crt"].0.clone();
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, ca).unwrap();
    let host = format!("celcost-metrics.{}.svc", setup.namespace);
    let port = op.metrics_port;
    let token = create_token(&setup.namespace, "reader");
    let verified = |host: &str| {
        let out = Command::new("curl")
            .args([
                "-s",
                "--max-time",
                "10",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
            ])
            .args(["--cacert", ca_file.to_str().unwrap()])
            .args(["--resolve", &format!("{host}:{port}:127.0.0.1")])
            .args(["-H", &format!("Authorization: Bearer {token}")])
            .arg(format!("https://{host}:{port}/metrics"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let code = eventually("a verified scrape", Duration::from_secs(45), || async {
        let code = verified(&host);
        (code == "200").then_some(code)
    })
    .await;
    assert_eq!(code, "200");
    // Another name is not in the certificate: the handshake fails (curl's 000).
    assert_eq!(
        verified(&format!("elsewhere.{}.svc", setup.namespace)),
        "000"
    );
    assert!(op.alive());
    drop(op);
    setup.cleanup().await;
}
