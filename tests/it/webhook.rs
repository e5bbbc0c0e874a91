//! The admission webhook without a cluster: the handler called directly (warnings, caps,
//! never-deny, bad input), the certificate handling against a mock API server (tower-test:
//! creation, renewal, the caBundle patch, races between replicas), and the TLS server reloading
//! its certificate (a rustls client trusting the CA from the Secret).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use celcost::Estimator;
use celcost::cel::decls::Version;
use celcost::controller::CostEstimator;
use celcost::controller::certs::{self, CertResolver, CertSettings, Material, Renewal};
use celcost::controller::warnings::MAX_WARNINGS;
use celcost::controller::webhook::{self, WebhookState};
use celcost::report::ObjectReport;
use celcost::schema::catalog::SchemaCatalog;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::ByteString;
use kube::Client;
use serde_json::{Value, json};
use tower::ServiceExt;
use tower_test::mock::{Handle, SendResponse};

const TIMEOUT: Duration = Duration::from_secs(10);
const SECRET_PATH: &str = "/api/v1/namespaces/celcost-system/secrets";
const VWC_PATH: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/celcost";
const HOST: &str = "celcost-webhook.celcost-system.svc";

fn estimator() -> Arc<dyn CostEstimator> {
    static E: OnceLock<Arc<Estimator>> = OnceLock::new();
    E.get_or_init(|| Arc::new(Estimator::new(Version::new(1, 36))))
        .clone()
}

/// Panics on every object: a bug in the estimator.
struct Panicking;

impl CostEstimator for Panicking {
    fn estimate(&self, _: &Value, _: &SchemaCatalog) -> Option<ObjectReport> {
        panic!("estimator bug")
    }
    fn kubernetes_version(&self) -> Version {
        Version::new(1, 36)
    }
}

/// Takes `delay`, then estimates.
struct Slow(Duration);

impl CostEstimator for Slow {
    fn estimate(&self, v: &Value, c: &SchemaCatalog) -> Option<ObjectReport> {
        std::thread::sleep(self.0);
        estimator().estimate(v, c)
    }
    fn kubernetes_version(&self) -> Version {
        Version::new(1, 36)
    }
}

/// A CRD with one rule per entry of `items`: the rule on field `f<i>` costs about
/// `items[i]` × 824 (1,000 → 8.2 % of the per-rule limit, 10,000 → 82 %, 12,200 → 100.5 %).
fn crd_with(name: &str, items: &[u64]) -> Value {
    let (plural, group) = name.split_once('.').unwrap();
    let mut props = serde_json::Map::new();
    for (i, n) in items.iter().enumerate() {
        props.insert(
            format!("f{i:02}"),
            json!({
                "type": "array", "maxItems": n,
                "items": {"type": "string", "maxLength": 1024},
                "x-kubernetes-validations": [{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]
            }),
        );
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": plural},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": props}}
                }}
            }]
        }
    })
}

fn review(uid: &str, operation: &str, object: Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"},
            "resource": {"group": "apiextensions.k8s.io", "version": "v1", "resource": "customresourcedefinitions"},
            "name": object.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "operation": operation,
            "userInfo": {"username": "admin"},
            "object": object,
            "oldObject": null,
            "dryRun": false
        }
    })
}

fn state(estimator: Arc<dyn CostEstimator>) -> WebhookState {
    WebhookState::new(estimator, 80)
}

/// POSTs `body` to `/validate` through the router: (status, body text).
async fn post(st: &WebhookState, query: &str, body: Vec<u8>) -> (StatusCode, String) {
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("/validate{query}"))
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let res = tokio::time::timeout(TIMEOUT, webhook::router(st.clone()).oneshot(req))
        .await
        .expect("answered in time")
        .unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// Reviews `object` (CREATE): the response, checked to be an allowed answer to uid `u1`.
async fn admit(st: &WebhookState, object: Value) -> Value {
    let (status, body) = post(
        st,
        "?timeout=5s",
        serde_json::to_vec(&review("u1", "CREATE", object)).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(v["kind"], "AdmissionReview");
    assert_eq!(v["response"]["uid"], "u1");
    assert_eq!(v["response"]["allowed"], true, "never denies: {body}");
    assert!(v["response"].get("status").is_none(), "{body}");
    v["response"].clone()
}

fn warnings_of(response: &Value) -> Vec<String> {
    response
        .get("warnings")
        .map(|w| serde_json::from_value(w.clone()).unwrap())
        .unwrap_or_default()
}

#[tokio::test]
async fn near_budget_crd_gets_a_warning_per_rule() {
    let st = state(estimator());
    let crd = crd_with("widgets.example.com", &[10_000, 1_000]);
    let e = Estimator::new(Version::new(1, 36));
    let report = e.estimate(&crd, "x").unwrap();
    let expected = report.schemas[0].rules[0].cost;
    // The line ends with the bound to add, the estimator's own verified suggestion.
    let suggested =
        celcost::suggest::suggest(&e, &crd, report, &celcost::suggest::Settings::new(80.0));
    let hint = celcost::suggest::suggestion_text(&suggested.schemas[0].rules[0])
        .expect("a bound for a rule at 82%");
    assert!(hint.contains("maxItems"), "{hint}");
    let w = warnings_of(&admit(&st, crd).await);
    let full = format!(
        "celcost: ^.spec.f00 costs {} = {}% of the 10,000,000 per-rule limit; {hint}",
        celcost::report::format::thousands(expected),
        expected / 100_000
    );
    // The whole line, or (over the API server's 256 runes a warning) its start, cut after the
    // numbers: the note on what the bound refuses comes last.
    assert_eq!(w.len(), 1, "{w:?}");
    let kept = w[0].strip_suffix('…').unwrap_or(&w[0]);
    assert!(
        w[0] == full || (w[0].chars().count() == 256 && full.starts_with(kept)),
        "{w:?} is not {full:?}"
    );
    assert!(kept.contains(" → "), "the numbers are kept: {kept}");
    // Within budget: allowed, and no `warnings` at all.
    let r = admit(&st, crd_with("gadgets.example.com", &[1_000])).await;
    assert!(r.get("warnings").is_none(), "{r}");
    // UPDATE is reviewed the same way.
    let (status, body) = post(
        &st,
        "",
        serde_json::to_vec(&review(
            "u2",
            "UPDATE",
            crd_with("a.example.com", &[11_000]),
        ))
        .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("per-rule limit"), "{body}");
}

/// Estimates at once; the search for bounds takes `delay`.
struct SlowSuggestions(Duration);

impl CostEstimator for SlowSuggestions {
    fn estimate(&self, v: &Value, c: &SchemaCatalog) -> Option<ObjectReport> {
        estimator().estimate(v, c)
    }
    fn kubernetes_version(&self) -> Version {
        Version::new(1, 36)
    }
    fn suggest(&self, v: &Value, report: ObjectReport, near: u8) -> ObjectReport {
        std::thread::sleep(self.0);
        estimator().suggest(v, report, near)
    }
}

#[tokio::test]
async fn a_late_search_for_bounds_still_answers_with_the_warnings() {
    let st = state(Arc::new(SlowSuggestions(Duration::from_secs(3))));
    let started = std::time::Instant::now();
    // timeout=1s: the webhook answers by 0.5 s, before the search ends.
    let (status, body) = post(
        &st,
        "?timeout=1s",
        serde_json::to_vec(&review(
            "u1",
            "CREATE",
            crd_with("w.example.com", &[10_000]),
        ))
        .unwrap(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status, StatusCode::OK, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["response"]["allowed"], true, "{body}");
    let w = warnings_of(&v["response"]);
    assert_eq!(w.len(), 1, "{body}");
    assert!(
        w[0].ends_with("of the 10,000,000 per-rule limit"),
        "no bound yet: {w:?}"
    );
}

#[tokio::test]
async fn warnings_are_capped_worst_first() {
    let st = state(estimator());
    // 15 rules from 80.3 % to 94.7 %, in rising order; their total is 130 % of the per-schema
    // limit (the API server would reject that CRD; the webhook still answers).
    let items: Vec<u64> = (0..15).map(|i| 9_750 + i * 120).collect();
    let w = warnings_of(&admit(&st, crd_with("many.example.com", &items)).await);
    assert_eq!(w.len(), MAX_WARNINGS, "{w:#?}");
    assert!(
        w[0].starts_with("celcost: all rules of the schema costs 130,"),
        "worst first: {w:#?}"
    );
    for (i, line) in w[1..MAX_WARNINGS - 1].iter().enumerate() {
        assert!(
            line.starts_with(&format!("celcost: ^.spec.f{:02} costs", 14 - i)),
            "worst first: {w:#?}"
        );
        assert!(line.chars().count() <= 256, "{line}");
    }
    assert_eq!(
        w[MAX_WARNINGS - 1],
        "celcost: 7 more findings — see kubectl get costreport crd.many.example.com"
    );
}

#[tokio::test]
async fn never_denies() {
    let st = state(estimator());
    // Over the limit (the API server would have rejected it before the webhook; allowed here).
    let r = admit(&st, crd_with("over.example.com", &[12_200])).await;
    assert!(
        warnings_of(&r)[0].contains("% of the 10,000,000 per-rule limit"),
        "{r}"
    );
    // A rule that does not compile: no warning about it, allowed.
    let mut broken = crd_with("broken.example.com", &[10]);
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["f00"]["x-kubernetes-validations"][0]["rule"] = json!("self.nope(");
    admit(&st, broken).await;
    // Not a CRD or policy; no object; a DELETE.
    admit(
        &st,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    )
    .await;
    let r = admit(
        &st,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}),
    )
    .await;
    assert!(r.get("warnings").is_none());
    let (status, body) = post(
        &st,
        "",
        serde_json::to_vec(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "d", "operation": "DELETE", "name": "x", "object": null}}),
        )
        .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(r#""allowed":true"#), "{body}");
    // A CRD whose schema is nonsense.
    admit(
        &st,
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "x.y"}, "spec": {"versions": "not a list"}}),
    )
    .await;
}

#[tokio::test]
async fn unestimable_objects_are_allowed_without_warnings() {
    // The estimator panics.
    let r = admit(
        &state(Arc::new(Panicking)),
        crd_with("p.example.com", &[11_000]),
    )
    .await;
    assert!(r.get("warnings").is_none(), "{r}");
    // Over the work budget.
    let tiny = Estimator::new(Version::new(1, 36)).with_limits(celcost::budget::Limits {
        steps: 10,
        bytes: usize::MAX,
    });
    let r = admit(&state(Arc::new(tiny)), crd_with("b.example.com", &[11_000])).await;
    assert!(r.get("warnings").is_none(), "{r}");
    // Late: answered by the deadline (the API server's timeout less a margin), allowed.
    let st = state(Arc::new(Slow(Duration::from_secs(3))));
    let started = Instant::now();
    let (status, body) = post(
        &st,
        "?timeout=1s",
        serde_json::to_vec(&review(
            "late",
            "CREATE",
            crd_with("s.example.com", &[11_000]),
        ))
        .unwrap(),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains(r#""allowed":true"#), "{body}");
    assert!(!body.contains("warnings"), "{body}");
    assert!(took < Duration::from_millis(1000), "answered in {took:?}");
}

#[tokio::test]
async fn malformed_reviews_get_400_and_the_server_goes_on() {
    let st = state(estimator());
    for (body, needle) in [
        (b"not json".to_vec(), "not JSON"),
        (b"{}".to_vec(), "expected apiVersion admission.k8s.io/v1"),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            "no request",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#
                .to_vec(),
            "no uid",
        ),
    ] {
        let (status, text) = post(&st, "", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
        assert!(text.starts_with("malformed AdmissionReview"), "{text}");
        assert!(text.contains(needle), "{text}");
    }
    // Too large.
    let small = WebhookState {
        max_body_bytes: 1024,
        ..state(estimator())
    };
    let (status, text) = post(
        &small,
        "",
        serde_json::to_vec(&review(
            "big",
            "CREATE",
            crd_with("big.example.com", &[1; 40]),
        ))
        .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
    // Still serving.
    admit(&st, crd_with("after.example.com", &[10])).await;
    let m = metrics(&st);
    assert!(
        m.contains("celcost_webhook_requests_total{outcome=\"bad_request\"} 4"),
        "{m}"
    );
}

fn metrics(st: &WebhookState) -> String {
    let mut registry = prometheus_client::registry::Registry::with_prefix("celcost");
    st.metrics.clone().register(&mut registry);
    let mut s = String::new();
    prometheus_client::encoding::text::encode(&mut s, &registry).unwrap();
    s
}

#[tokio::test]
async fn policy_expressions_warn_on_their_typed_worst_case() {
    let st = state(estimator());
    let vap = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "env-names"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]
            }]},
            "validations": [
                {"expression": "object.spec.template.spec.containers.all(c, c.env.all(e, e.name.matches('^[A-Z_]+$')))"},
                {"expression": "object.spec.replicas < 100"}
            ]
        }
    });
    let report = Estimator::new(Version::new(1, 36))
        .estimate(&vap, "x")
        .unwrap();
    let typed = report.expressions[0]
        .typed
        .as_ref()
        .expect("typed")
        .max_cost;
    assert!(typed > 1_000_000, "{typed}");
    let mut req = review("p1", "CREATE", vap);
    req["request"]["kind"] = json!({"group": "admissionregistration.k8s.io", "version": "v1", "kind": "ValidatingAdmissionPolicy"});
    let (status, body) = post(&st, "", serde_json::to_vec(&req).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let v: Value = serde_json::from_str(&body).unwrap();
    let w = warnings_of(&v["response"]);
    assert!(
        w[0].starts_with("celcost: spec.validations[0].expression ")
            && w[0].contains("of the 1,000,000 per-call limit"),
        "{w:#?}"
    );
    assert!(w.iter().all(|l| !l.contains("validations[1]")), "{w:#?}");
}

// ---------------------------------------------------------------------------------------------
// Certificates against a mock API server.

struct ApiServer(Handle<Request<kube::client::Body>, Response<kube::client::Body>>);

struct Call {
    content_type: String,
    body: Value,
    send: SendResponse<Response<kube::client::Body>>,
}

impl Call {
    fn respond(self, code: u16, body: &Value) {
        self.send.send_response(
            Response::builder()
                .status(StatusCode::from_u16(code).unwrap())
                .header("content-type", "application/json")
                .body(kube::client::Body::from(serde_json::to_vec(body).unwrap()))
                .unwrap(),
        );
    }
}

impl ApiServer {
    async fn expect(&mut self, method: Method, path: &str) -> Call {
        let (req, send) = tokio::time::timeout(TIMEOUT, self.0.next_request())
            .await
            .expect("a request in time")
            .expect("a request");
        let call_method = req.method().clone();
        let call_path = req.uri().path().to_string();
        let content_type = req
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let bytes = req.into_body().collect_bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        assert_eq!(
            (&call_method, call_path.as_str()),
            (&method, path),
            "unexpected call"
        );
        Call {
            content_type,
            body,
            send,
        }
    }

    async fn expect_silence(&mut self) {
        if let Ok(Some((req, _))) =
            tokio::time::timeout(Duration::from_millis(100), self.0.next_request()).await
        {
            panic!("unexpected call {} {}", req.method(), req.uri());
        }
    }
}

fn mock() -> (Client, ApiServer) {
    let (service, handle) =
        tower_test::mock::pair::<Request<kube::client::Body>, Response<kube::client::Body>>();
    (Client::new(service, "default"), ApiServer(handle))
}

fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})
}

fn conflict(reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": 409, "message": reason})
}

fn settings() -> CertSettings {
    let mut s = CertSettings::new("celcost-system", "celcost-webhook");
    s.refresh = Duration::from_millis(200);
    s
}

fn secret_of(m: &Material, rv: &str) -> Value {
    let b = |s: &str| serde_json::to_value(ByteString(s.as_bytes().to_vec())).unwrap();
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "celcost-webhook-tls", "namespace": "celcost-system", "resourceVersion": rv},
        "type": "kubernetes.io/tls",
        "data": {"ca.crt": b(&m.ca_bundle), "ca.key": b(&m.ca_key), "tls.crt": b(&m.cert), "tls.key": b(&m.key)}
    })
}

fn material_of(secret: &Value) -> Material {
    let s: k8s_openapi::api::core::v1::Secret = serde_json::from_value(secret.clone()).unwrap();
    Material::from_secret(&s)
}

fn vwc(ca_bundle: Option<&str>) -> Value {
    let mut client_config = json!({"service": {"name": "celcost-webhook", "namespace": "celcost-system", "path": "/validate", "port": 443}});
    if let Some(ca) = ca_bundle {
        client_config["caBundle"] =
            serde_json::to_value(ByteString(ca.as_bytes().to_vec())).unwrap();
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "celcost", "resourceVersion": "7"},
        "webhooks": [{
            "name": "cost.celcost.io", "clientConfig": client_config,
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore"
        }]
    })
}

/// The caBundle patch: checks it and returns the bundle it sets.
async fn serve_ca_patch(api: &mut ApiServer, expected: &str) {
    let call = api.expect(Method::PATCH, VWC_PATH).await;
    assert_eq!(call.content_type, "application/json-patch+json");
    let ops = call.body.as_array().unwrap().clone();
    assert_eq!(
        ops[0],
        json!({"op": "test", "path": "/webhooks/0/name", "value": "cost.celcost.io"})
    );
    assert_eq!(ops[1]["op"], "add");
    assert_eq!(ops[1]["path"], "/webhooks/0/clientConfig/caBundle");
    let bundle: ByteString = serde_json::from_value(ops[1]["value"].clone()).unwrap();
    assert_eq!(String::from_utf8(bundle.0).unwrap(), expected);
    call.respond(200, &vwc(Some(expected)));
}

fn now() -> i64 {
    certs::now()
}

#[tokio::test]
async fn first_replica_creates_the_secret_and_patches_the_ca_bundle() {
    let (client, mut api) = mock();
    let s = settings();
    let resolver = CertResolver::default();
    let t = now();
    let (res, created) = tokio::join!(certs::sync_once(&client, &s, &resolver, t), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(404, &not_found());
        let call = api.expect(Method::POST, SECRET_PATH).await;
        assert_eq!(call.body["type"], "kubernetes.io/tls");
        assert_eq!(call.body["metadata"]["name"], "celcost-webhook-tls");
        let created = call.body.clone();
        let m = material_of(&created);
        call.respond(201, &created);
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(200, &vwc(None));
        serve_ca_patch(&mut api, &m.ca_bundle).await;
        created
    });
    let expiry = res.unwrap().expect("an expiry");
    assert!(expiry > t + 89 * 86_400, "{expiry}");
    let m = material_of(&created);
    assert_eq!(certs::check(&m, &s.hosts, t), None);
    assert!(resolver.is_loaded());

    // The next round finds everything current: two reads, no write.
    let (res, ()) = tokio::join!(certs::sync_once(&client, &s, &resolver, t + 60), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&m, "1"));
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(200, &vwc(Some(&m.ca_bundle)));
        api.expect_silence().await;
    });
    res.unwrap();
}

#[tokio::test]
async fn racing_replicas_use_the_secret_that_won() {
    let (client, mut api) = mock();
    let s = settings();
    let resolver = CertResolver::default();
    let t = now();
    // The other replica's Secret.
    let theirs = certs::renew(None, &Renewal::Ca("theirs".into()), &s.hosts, t, &s).unwrap();
    let (res, ()) = tokio::join!(certs::sync_once(&client, &s, &resolver, t), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(404, &not_found());
        // Our create loses: AlreadyExists.
        api.expect(Method::POST, SECRET_PATH)
            .await
            .respond(409, &conflict("AlreadyExists"));
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&theirs, "5"));
        // It is current: no write; their CA is already in the configuration.
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(200, &vwc(Some(&theirs.ca_bundle)));
        api.expect_silence().await;
    });
    res.unwrap();
    // We serve their certificate.
    assert!(
        !resolver.load(&theirs.cert, &theirs.key).unwrap(),
        "already loaded"
    );

    // A renewal that conflicts: both replicas find the certificate due; the other one's update
    // lands first, ours gets 409 Conflict, and we take theirs.
    let due = t + 61 * 86_400;
    let renewed_by_them = certs::renew(
        Some(&theirs),
        &Renewal::Serving("due".into()),
        &s.hosts,
        due,
        &s,
    )
    .unwrap();
    let (res, ()) = tokio::join!(certs::sync_once(&client, &s, &resolver, due), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&theirs, "5"));
        let put = api
            .expect(Method::PUT, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await;
        assert_eq!(
            put.body["metadata"]["resourceVersion"], "5",
            "a conditional update"
        );
        put.respond(409, &conflict("Conflict"));
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&renewed_by_them, "6"));
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(200, &vwc(Some(&theirs.ca_bundle)));
        api.expect_silence().await;
    });
    res.unwrap();
    assert!(
        !resolver
            .load(&renewed_by_them.cert, &renewed_by_them.key)
            .unwrap(),
        "serves the winner's certificate"
    );
}

#[tokio::test]
async fn read_only_mode_never_writes() {
    let (client, mut api) = mock();
    let mut s = settings();
    s.manage = false;
    let resolver = CertResolver::default();
    let (res, ()) = tokio::join!(certs::sync_once(&client, &s, &resolver, now()), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(404, &not_found());
        api.expect_silence().await;
    });
    assert!(
        matches!(res, Err(certs::CertError::NotProvided(_))),
        "{res:?}"
    );
    // cert-manager's Secret (no ca.key), even one near its expiry: read and served as it is.
    let t = now();
    let m = certs::renew(
        None,
        &Renewal::Ca("cm".into()),
        &s.hosts,
        t - 80 * 86_400,
        &s,
    )
    .unwrap();
    let mut secret = secret_of(&m, "3");
    secret["data"].as_object_mut().unwrap().remove("ca.key");
    let (res, ()) = tokio::join!(certs::sync_once(&client, &s, &resolver, t), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret);
        api.expect_silence().await;
    });
    res.unwrap();
    assert!(resolver.is_loaded());
}

#[tokio::test]
async fn url_mode_points_the_configuration_at_the_url() {
    let (client, mut api) = mock();
    let s = settings()
        .with_url("https://127.0.0.1:9443/validate")
        .unwrap();
    let resolver = CertResolver::default();
    let t = now();
    // A Secret of the in-cluster setup (no SAN for 127.0.0.1): its certificate is replaced.
    let incluster = settings();
    let m = certs::renew(
        None,
        &Renewal::Ca("x".into()),
        &incluster.hosts,
        t,
        &incluster,
    )
    .unwrap();
    let (res, ()) = tokio::join!(certs::sync_once(&client, &s, &resolver, t), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&m, "9"));
        let put = api
            .expect(Method::PUT, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await;
        let renewed = material_of(&put.body);
        assert_eq!(renewed.ca_bundle, m.ca_bundle, "same CA");
        assert_ne!(renewed.cert, m.cert);
        assert_eq!(certs::check(&renewed, &s.hosts, t), None, "SAN 127.0.0.1");
        let stored = put.body.clone();
        put.respond(200, &stored);
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(200, &vwc(Some(&m.ca_bundle)));
        let call = api.expect(Method::PATCH, VWC_PATH).await;
        let ops = call.body.as_array().unwrap().clone();
        assert_eq!(ops[1]["op"], "replace");
        assert_eq!(ops[1]["path"], "/webhooks/0/clientConfig");
        assert_eq!(ops[1]["value"]["url"], "https://127.0.0.1:9443/validate");
        assert!(ops[1]["value"].get("service").is_none());
        call.respond(200, &vwc(None));
    });
    res.unwrap();
}

#[tokio::test]
async fn missing_configuration_is_a_clear_error() {
    let (client, mut api) = mock();
    let s = settings();
    let t = now();
    let m = certs::renew(None, &Renewal::Ca("x".into()), &s.hosts, t, &s).unwrap();
    let resolver = CertResolver::default();
    let (res, ()) = tokio::join!(certs::sync_once(&client, &s, &resolver, t), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&m, "1"));
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(404, &not_found());
    });
    let e = res.unwrap_err().to_string();
    assert!(e.contains("--webhook=false"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// The TLS server and certificate rotation.

/// POSTs a review over TLS to `addr`, trusting `ca_bundle` and checking the name `HOST`: the
/// response body, and the DER of the certificate the server presented.
async fn post_tls(addr: std::net::SocketAddr, ca_bundle: &str, body: &[u8]) -> (String, Vec<u8>) {
    use rustls::pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca_bundle.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = connector
        .connect(HOST.try_into().unwrap(), tcp)
        .await
        .expect("TLS handshake trusting the Secret's CA");
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let head = format!(
        "POST /validate?timeout=5s HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.write_all(body).await.unwrap();
    let mut out = Vec::new();
    let _ = tls.read_to_end(&mut out).await;
    (String::from_utf8_lossy(&out).into_owned(), presented)
}

fn der_of(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_server_picks_up_renewed_certificates() {
    let (client, mut api) = mock();
    let s = settings();
    let t = now();
    // A Secret whose serving certificate is near its expiry, and one with a wrong SAN.
    let near_expiry = certs::renew(
        None,
        &Renewal::Ca("x".into()),
        &s.hosts,
        t - 70 * 86_400,
        &s,
    )
    .unwrap();
    assert!(matches!(
        certs::check(&near_expiry, &s.hosts, t),
        Some(Renewal::Serving(_))
    ));

    let resolver = Arc::new(CertResolver::default());
    resolver.load(&near_expiry.cert, &near_expiry.key).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let st = state(estimator());
    let server = tokio::spawn(webhook::serve_tls(
        listener,
        certs::server_config(resolver.clone()),
        webhook::router(st.clone()),
        st.metrics.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    let body = serde_json::to_vec(&review(
        "tls",
        "CREATE",
        crd_with("t.example.com", &[11_000]),
    ))
    .unwrap();
    let (answer, presented) = post_tls(addr, &near_expiry.ca_bundle, &body).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains(r#""allowed":true"#) && answer.contains("per-rule limit"),
        "{answer}"
    );
    assert_eq!(presented, der_of(&near_expiry.cert));

    // Renewal: the update is sent with the resourceVersion read, the caBundle is left alone (same
    // CA), and the server presents the new certificate on the next connection.
    let (res, renewed) = tokio::join!(certs::sync_once(&client, &s, &resolver, t), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&near_expiry, "11"));
        let put = api
            .expect(Method::PUT, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await;
        assert_eq!(put.body["metadata"]["resourceVersion"], "11");
        let stored = put.body.clone();
        put.respond(200, &stored);
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(200, &vwc(Some(&near_expiry.ca_bundle)));
        api.expect_silence().await;
        material_of(&stored)
    });
    res.unwrap();
    assert_eq!(renewed.ca_bundle, near_expiry.ca_bundle);
    assert_eq!(certs::check(&renewed, &s.hosts, t), None);
    let (answer, presented) = post_tls(addr, &renewed.ca_bundle, &body).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(presented, der_of(&renewed.cert), "the renewed certificate");

    // CA rotation (a CA issued 250 days ago, at 2/3 of its year): a new CA and certificate; the
    // caBundle patch carries the new CA and the old one; a client trusting only the new CA
    // connects.
    let old_ca = certs::renew(
        None,
        &Renewal::Ca("x".into()),
        &s.hosts,
        t - 250 * 86_400,
        &s,
    )
    .unwrap();
    let old_ca = certs::renew(
        Some(&old_ca),
        &Renewal::Serving("x".into()),
        &s.hosts,
        t - 10 * 86_400,
        &s,
    )
    .unwrap();
    assert!(matches!(
        certs::check(&old_ca, &s.hosts, t),
        Some(Renewal::Ca(_))
    ));
    let renewed = old_ca;
    let (res, rotated) = tokio::join!(certs::sync_once(&client, &s, &resolver, t), async {
        api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await
            .respond(200, &secret_of(&renewed, "12"));
        let put = api
            .expect(Method::PUT, &format!("{SECRET_PATH}/celcost-webhook-tls"))
            .await;
        let stored = put.body.clone();
        let rotated = material_of(&stored);
        put.respond(200, &stored);
        api.expect(Method::GET, VWC_PATH)
            .await
            .respond(200, &vwc(Some(&renewed.ca_bundle)));
        serve_ca_patch(&mut api, &rotated.ca_bundle).await;
        rotated
    });
    res.unwrap();
    assert!(
        rotated.ca_bundle.ends_with(&renewed.ca_bundle),
        "old CA kept after the new one"
    );
    let new_ca_only =
        rotated.ca_bundle[..rotated.ca_bundle.len() - renewed.ca_bundle.len()].to_string();
    let (answer, presented) = post_tls(addr, &new_ca_only, &body).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(presented, der_of(&rotated.cert));

    // Malformed input over the wire: 400, and the server still answers.
    let (answer, _) = post_tls(addr, &new_ca_only, b"{\"kind\":\"nope\"}").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("malformed AdmissionReview"), "{answer}");
    let (answer, _) = post_tls(addr, &new_ca_only, &body).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let _ = stop.send(());
    tokio::time::timeout(TIMEOUT, server)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_san_is_replaced_by_the_certificate_loop() {
    let (client, mut api) = mock();
    let s = settings();
    let t = now();
    let elsewhere = CertSettings::new("other-namespace", "celcost-webhook");
    let wrong = certs::renew(
        None,
        &Renewal::Ca("x".into()),
        &elsewhere.hosts,
        t,
        &elsewhere,
    )
    .unwrap();
    let resolver = Arc::new(CertResolver::default());
    let expiry = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let seen = expiry.clone();
    let task = tokio::spawn(certs::run(
        client,
        s.clone(),
        resolver.clone(),
        move |e| seen.store(e, std::sync::atomic::Ordering::SeqCst),
        async move {
            let _ = stopped.await;
        },
    ));
    // First round: the API server fails; the loop retries after a backoff.
    api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
        .await
        .respond(500, &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500, "message": "etcd"}));
    // Then: the wrong SAN is replaced.
    api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
        .await
        .respond(200, &secret_of(&wrong, "1"));
    let put = api
        .expect(Method::PUT, &format!("{SECRET_PATH}/celcost-webhook-tls"))
        .await;
    let fixed = material_of(&put.body);
    assert_eq!(certs::check(&fixed, &s.hosts, t), None);
    let stored = put.body.clone();
    put.respond(200, &stored);
    api.expect(Method::GET, VWC_PATH)
        .await
        .respond(200, &vwc(Some(&wrong.ca_bundle)));
    // The next round, `refresh` later: nothing to do.
    api.expect(Method::GET, &format!("{SECRET_PATH}/celcost-webhook-tls"))
        .await
        .respond(200, &secret_of(&fixed, "2"));
    api.expect(Method::GET, VWC_PATH)
        .await
        .respond(200, &vwc(Some(&fixed.ca_bundle)));
    let _ = stop.send(());
    tokio::time::timeout(TIMEOUT, task).await.unwrap().unwrap();
    assert_eq!(
        expiry.load(std::sync::atomic::Ordering::SeqCst),
        certs::not_after(&fixed.cert).unwrap()
    );
    assert!(
        !resolver.load(&fixed.cert, &fixed.key).unwrap(),
        "the fixed certificate is served"
    );
}
