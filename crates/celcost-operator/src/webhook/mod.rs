//! The validating admission webhook: `POST /validate` over HTTPS, for CustomResourceDefinitions,
//! ValidatingAdmissionPolicies and MutatingAdmissionPolicies (CREATE, UPDATE). It **never
//! denies**: every well-formed AdmissionReview gets `allowed: true`, with `warnings` (see
//! [`super::warnings`]) for the rules, expressions and totals at or above the near-budget
//! threshold — which kubectl prints on apply.
//!
//! - It answers from the estimate of the object in the request: no reads of the cluster. CRDs are
//!   estimated with the rules of the operator's Kubernetes minor, policies typed with the
//!   built-in schemas (the CostReport, written later, also uses the cluster's CRDs).
//! - Order of checks: the API server validates a CRD (its cost limits included) **before** the
//!   validating webhooks run (k8s.io/apiserver `pkg/registry/generic/registry/store.go`:
//!   `rest.BeforeCreate`, then `createValidation`), so an over-budget CRD is rejected by the API
//!   server with its own error and never reaches this webhook; the webhook sees accepted objects
//!   and warns about those near their limits.
//! - Within its timeout: the estimate runs on the blocking pool, at most one per core at once,
//!   with the operator's work budget, and the answer is sent by the API server's `?timeout=`
//!   (less a margin) whatever happens: an estimate that is late, over its budget, or fails gives
//!   `allowed: true` without warnings and a log line. The webhook configuration's
//!   `failurePolicy: Ignore` covers the operator being down.
//! - Bad input: a body that is not an `admission.k8s.io/v1` AdmissionReview with a request and a
//!   uid gets 400 with the reason; bodies over [`MAX_BODY_BYTES`] get 413.

pub mod certs;
pub mod warnings;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use kube::core::admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, META_API_VERSION_V1, META_KIND, Operation,
};
use kube::core::{DynamicObject, Status};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tracing::{debug, info, warn};

use celcost_core::schema::catalog::SchemaCatalog;

use crate::reports::context::CostEstimator;
use crate::resource::TargetKind;
use certs::{CertResolver, CertSettings};

/// Largest request body: an UPDATE's AdmissionReview carries the object and the old object, each
/// at most the API server's request limit (3 MiB, k8s.io/apiserver `pkg/server/config.go`
/// `MaxRequestBodyBytes`), plus the review's own fields.
pub const MAX_BODY_BYTES: usize = 2 * (3 << 20) + (256 << 10);
/// The API server's default webhook timeout, used when a request does not say (`?timeout=`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// What the answer keeps in hand for the way back.
const MARGIN: Duration = Duration::from_millis(500);
/// Bound of a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Flags of the webhook (flattened into `celcost controller`'s).
#[derive(Clone, Debug, clap::Args)]
pub struct WebhookArgs {
    /// Serve the admission webhook (warnings at apply time) and manage its certificate.
    /// Default: on in a pod (behind its Service) or with `--webhook-url`, off elsewhere (a local
    /// run); `--webhook=false` turns both off (the kustomize component config/components/no-webhook).
    #[arg(long = "webhook", env = "CELCOST_WEBHOOK", value_name = "BOOL",
          action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub enabled: Option<bool>,
    /// Address of the webhook's HTTPS server.
    #[arg(long, env = "CELCOST_WEBHOOK_ADDRESS", default_value = "0.0.0.0:9443")]
    pub webhook_address: SocketAddr,
    /// The Service the API server calls (its `<name>.<namespace>.svc` is the certificate's SAN).
    #[arg(
        long,
        env = "CELCOST_WEBHOOK_SERVICE",
        default_value = "celcost-webhook"
    )]
    pub webhook_service: String,
    /// Namespace of the Service and the Secret; default: the operator's (in a pod), else the
    /// namespace of KUBECONFIG's context.
    #[arg(long, env = "CELCOST_WEBHOOK_NAMESPACE")]
    pub webhook_namespace: Option<String>,
    /// Call this `https://` URL instead of the Service (an operator outside the cluster, e.g.
    /// `https://127.0.0.1:9443/validate`): written into the webhook configuration, its host added
    /// to the certificate's SANs.
    #[arg(long, env = "CELCOST_WEBHOOK_URL")]
    pub webhook_url: Option<String>,
    /// The Secret holding the CA and the serving certificate.
    #[arg(
        long,
        env = "CELCOST_WEBHOOK_SECRET",
        default_value = "celcost-webhook-tls"
    )]
    pub webhook_secret: String,
    /// The ValidatingWebhookConfiguration whose caBundle the operator keeps current.
    #[arg(long, env = "CELCOST_WEBHOOK_CONFIGURATION", default_value = "celcost")]
    pub webhook_configuration: String,
    /// Create and rotate the CA and serving certificate and patch caBundle; false: only read the
    /// Secret (written by cert-manager, caBundle injected by its cainjector).
    #[arg(long, env = "CELCOST_WEBHOOK_MANAGE_CERTIFICATES", default_value_t = true,
          action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub webhook_manage_certificates: bool,
    /// Seconds between two reads of the Secret by each replica (renewal, reload, caBundle).
    #[arg(long, env = "CELCOST_WEBHOOK_CERT_REFRESH_SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub webhook_cert_refresh_seconds: u64,
    /// Lifetime of the serving certificates the operator issues (renewed at 2/3 of it); the
    /// CA's is a year. Shorter only to watch a rotation happen (the e2e test).
    #[arg(long, env = "CELCOST_WEBHOOK_CERT_VALIDITY_SECONDS", default_value_t = 90 * 86_400,
          value_parser = clap::value_parser!(u64).range(30..=365 * 86_400))]
    pub webhook_cert_validity_seconds: u64,
}

/// `outcome`: what a request got.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// `warned`, `clean`, `skipped` (not an object celcost estimates), `not_estimated` (the
    /// estimate failed, went over its budget or was late), `busy`, `bad_request`.
    pub outcome: String,
}

/// The webhook's metrics.
#[derive(Clone)]
pub struct WebhookMetrics {
    pub requests: Family<OutcomeLabels, Counter>,
    pub duration: Histogram,
    /// Expiry of the serving certificate loaded, Unix seconds.
    pub certificate_expiry: Gauge,
    pub tls_handshake_failures: Counter,
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        WebhookMetrics {
            requests: Family::default(),
            duration: Histogram::new(exponential_buckets(0.001, 2.0, 14)),
            certificate_expiry: Gauge::default(),
            tls_handshake_failures: Counter::default(),
        }
    }
}

impl WebhookMetrics {
    pub fn register(self, registry: &mut Registry) -> Self {
        registry.register(
            "webhook_requests",
            "Admission reviews answered, by outcome",
            self.requests.clone(),
        );
        registry.register(
            "webhook_duration_seconds",
            "Time to answer an admission review",
            self.duration.clone(),
        );
        registry.register(
            "webhook_certificate_expiry_timestamp_seconds",
            "Expiry of the webhook's serving certificate (Unix seconds)",
            self.certificate_expiry.clone(),
        );
        registry.register(
            "webhook_tls_handshake_failures",
            "TLS handshakes of the webhook server that failed",
            self.tls_handshake_failures.clone(),
        );
        self
    }

    fn count(&self, outcome: &str) {
        self.requests
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_string(),
            })
            .inc();
    }
}

/// What the handler reads.
#[derive(Clone)]
pub struct WebhookState {
    /// The estimator of the operator's Kubernetes minor (with its work budget).
    pub estimator: Arc<dyn CostEstimator>,
    pub near_budget_percent: u8,
    /// Estimates (and bodies) in hand at once.
    pub permits: Arc<Semaphore>,
    pub max_body_bytes: usize,
    pub metrics: WebhookMetrics,
}

impl WebhookState {
    pub fn new(estimator: Arc<dyn CostEstimator>, near_budget_percent: u8) -> Self {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        WebhookState {
            estimator,
            near_budget_percent,
            permits: Arc::new(Semaphore::new(cores.max(1))),
            max_body_bytes: MAX_BODY_BYTES,
            metrics: WebhookMetrics::default(),
        }
    }
}

/// The routes: `POST /validate`.
pub fn router(state: WebhookState) -> Router {
    Router::new()
        .route("/validate", post(validate))
        .with_state(state)
}

/// A request the webhook could not take.
#[derive(Debug)]
pub struct Rejection {
    pub status: StatusCode,
    pub message: String,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        (
            self.status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{}\n", self.message),
        )
            .into_response()
    }
}

fn bad_request(message: String) -> Rejection {
    Rejection {
        status: StatusCode::BAD_REQUEST,
        message,
    }
}

/// The parts of an AdmissionReview the webhook reads.
#[derive(Debug)]
pub struct Review {
    pub uid: String,
    pub operation: String,
    /// `metadata.name` of the object, else the request's `name`.
    pub name: String,
    pub object: Option<Value>,
}

/// Reads an AdmissionReview; the error says what is wrong with it. The envelope is read as
/// kube's [`AdmissionReview`] (request fields, [`Operation`]); the reviewed object is kept as the
/// JSON it came as (the estimator reads JSON, and a typed copy of a large CRD would be a second
/// one). The checks the webhook's callers see first (apiVersion and kind, a request, its uid)
/// run on the JSON before the typed read, so their reasons stay specific.
pub fn parse_review(body: &[u8]) -> Result<Review, String> {
    let not_review = |e: serde_json::Error| {
        format!("malformed AdmissionReview: not JSON of an AdmissionReview: {e}")
    };
    let mut v: Value = serde_json::from_slice(body).map_err(not_review)?;
    if !v.is_object() {
        return Err(not_review(serde::de::Error::custom(
            "expected a JSON object",
        )));
    }
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let (api, kind) = (text(&v, "apiVersion"), text(&v, "kind"));
    if api != META_API_VERSION_V1 || kind != META_KIND {
        return Err(format!(
            "malformed AdmissionReview: expected apiVersion admission.k8s.io/v1 and kind \
             AdmissionReview, got apiVersion {api:?} and kind {kind:?}"
        ));
    }
    let request = v
        .get_mut("request")
        .filter(|r| !r.is_null())
        .ok_or("malformed AdmissionReview: no request")?;
    if matches!(request.get("uid"), None | Some(Value::Null))
        || request.get("uid").and_then(Value::as_str) == Some("")
    {
        return Err("malformed AdmissionReview: the request has no uid".into());
    }
    let object = request
        .as_object_mut()
        .and_then(|r| {
            // A `null` field is an absent one, as Go's decoder (the API server's) reads it.
            r.retain(|_, v| !v.is_null());
            // Fields kube's request type requires that the webhook does not read: empty when
            // absent, so a review with a uid is answered as it was before the typed read (the
            // webhook never denies).
            for (key, empty) in [
                ("kind", json!({"group": "", "version": "", "kind": ""})),
                (
                    "resource",
                    json!({"group": "", "version": "", "resource": ""}),
                ),
                ("userInfo", json!({})),
            ] {
                r.entry(key).or_insert(empty);
            }
            r.remove("object")
        })
        .filter(|o| !o.is_null());
    let review: AdmissionReview<DynamicObject> = serde_json::from_value(v).map_err(not_review)?;
    let req: AdmissionRequest<DynamicObject> = review
        .try_into()
        .map_err(|_| "malformed AdmissionReview: no request")?;
    let name = object
        .as_ref()
        .and_then(|o| o.pointer("/metadata/name"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or(req.name);
    let operation = match req.operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    };
    Ok(Review {
        uid: req.uid,
        operation: operation.to_string(),
        name,
        object,
    })
}

/// The answer to the review `uid`: allowed, with `warnings` — kube's [`AdmissionResponse`],
/// without the empty `status` it always writes (the answer carries `uid`, `allowed` and
/// `warnings` only, as it did before).
pub fn allowed(uid: &str, warnings: &[String]) -> Value {
    let mut response = AdmissionResponse::invalid("");
    response.uid = uid.to_string();
    response.allowed = true;
    response.result = Status::default();
    response.warnings = (!warnings.is_empty()).then(|| warnings.to_vec());
    let mut review = serde_json::to_value(response.into_review()).unwrap_or(Value::Null);
    if let Some(r) = review.get_mut("response").and_then(Value::as_object_mut)
        && r.get("status")
            .is_some_and(|s| s.as_object().is_some_and(|s| s.is_empty()))
    {
        r.remove("status");
    }
    review
}

/// The API server's `?timeout=` (a Go duration: `5s`, `1m0s`, `500ms`), if the request has one.
pub fn requested_timeout(query: Option<&str>) -> Option<Duration> {
    let v = query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("timeout="))?;
    parse_go_duration(v)
}

fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[u..];
        total += value * unit;
    }
    (total.is_finite() && total > 0.0).then(|| Duration::from_secs_f64(total.min(3600.0)))
}

/// How long the webhook may take: the API server's timeout less a margin.
fn deadline_of(query: Option<&str>) -> Duration {
    let t = requested_timeout(query).unwrap_or(DEFAULT_TIMEOUT);
    t.saturating_sub(MARGIN).max(t / 2)
}

/// The kind of report of an estimable object.
fn target_kind(object: &Value) -> Option<TargetKind> {
    TargetKind::of(object)
}

/// What the estimate of a reviewed object gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Warnings (none: `clean`).
    Warnings(Vec<String>),
    /// Not an object celcost estimates, or no object (why).
    Skipped(&'static str),
    /// No estimate (why): no warning, a log line.
    NotEstimated(String),
}

/// Estimates the reviewed object and turns the estimate into warnings, with the bounds to add
/// ([`CostEstimator::suggest`]). Runs on the calling thread (a blocking one); a panic of the
/// estimator is caught.
pub fn assess(estimator: &dyn CostEstimator, review: &Review, near_budget_percent: u8) -> Outcome {
    assess_then_suggest(estimator, review, near_budget_percent, |_| {})
}

/// [`assess`] in two steps: `plain` gets the warnings of the estimate alone as soon as they are
/// known (when there are any), so that an answer can still carry them when the search for
/// bounds does not finish in time; the result has the suggestions too.
pub fn assess_then_suggest(
    estimator: &dyn CostEstimator,
    review: &Review,
    near_budget_percent: u8,
    plain: impl FnOnce(&Outcome),
) -> Outcome {
    if !matches!(review.operation.as_str(), "CREATE" | "UPDATE") {
        return Outcome::Skipped("not a CREATE or UPDATE");
    }
    let Some(object) = review.object.as_ref() else {
        return Outcome::Skipped("no object");
    };
    let Some(kind) = target_kind(object) else {
        return Outcome::Skipped("not a kind celcost estimates");
    };
    let panicked = |p: Box<dyn std::any::Any + Send>| {
        p.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into())
    };
    let estimated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        estimator.estimate(object, &SchemaCatalog::new())
    }));
    let report = match estimated {
        Ok(Some(report)) => match &report.stopped {
            Some(stopped) => return Outcome::NotEstimated(stopped.message.clone()),
            None => report,
        },
        Ok(None) => {
            return Outcome::NotEstimated(format!(
                "the estimator does not handle this {} (its API version?)",
                kind.as_str()
            ));
        }
        Err(p) => {
            return Outcome::NotEstimated(format!("the estimator panicked: {}", panicked(p)));
        }
    };
    let first = warnings::warnings(kind, &review.name, &report, near_budget_percent);
    if first.is_empty() || kind != TargetKind::CustomResourceDefinition {
        return Outcome::Warnings(first);
    }
    plain(&Outcome::Warnings(first.clone()));
    let suggested = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        estimator.suggest(object, report, near_budget_percent)
    }));
    match suggested {
        Ok(report) => Outcome::Warnings(warnings::warnings(
            kind,
            &review.name,
            &report,
            near_budget_percent,
        )),
        Err(p) => {
            warn!(name = %review.name, "the search for bounds panicked: {}", panicked(p));
            Outcome::Warnings(first)
        }
    }
}

async fn validate(State(st): State<WebhookState>, req: Request<Body>) -> Response {
    let started = Instant::now();
    let deadline = deadline_of(req.uri().query());
    let response = answer(&st, req, started, deadline).await;
    st.metrics.duration.observe(started.elapsed().as_secs_f64());
    response
}

async fn answer(
    st: &WebhookState,
    req: Request<Body>,
    started: Instant,
    deadline: Duration,
) -> Response {
    // A permit per review in hand (its body, its parsed tree, its estimate): what bounds memory
    // and CPU. Waiting longer than the deadline is answered 503 (the API server fails open).
    let permit = match tokio::time::timeout(deadline, st.permits.clone().acquire_owned()).await {
        Ok(Ok(p)) => p,
        _ => {
            st.metrics.count("busy");
            warn!("admission review not taken: every estimate slot stayed busy until its deadline");
            return Rejection {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: "busy: every estimate slot is taken".into(),
            }
            .into_response();
        }
    };
    let remaining = deadline.saturating_sub(started.elapsed());
    let bytes = match read_body(st, req, remaining).await {
        Ok(b) => b,
        Err(rejected) => return rejected,
    };
    // Parsing and estimating run on the blocking pool, with the permit: a late estimate keeps
    // its slot until it ends (bounded by the work budget), so late ones cannot pile up.
    let (tx, rx) = tokio::sync::oneshot::channel::<Result<Review, String>>();
    let estimator = st.estimator.clone();
    let near = st.near_budget_percent;
    let (plain_tx, mut plain_rx) = tokio::sync::oneshot::channel::<Outcome>();
    let job = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let review = match parse_review(&bytes) {
            Ok(r) => r,
            Err(e) => {
                let _ = tx.send(Err(e));
                return None;
            }
        };
        drop(bytes);
        let head = Review {
            uid: review.uid.clone(),
            operation: review.operation.clone(),
            name: review.name.clone(),
            object: None,
        };
        let kind = review.object.as_ref().and_then(target_kind);
        let _ = tx.send(Ok(head));
        let outcome = assess_then_suggest(&*estimator, &review, near, |o| {
            let _ = plain_tx.send(o.clone());
        });
        Some((kind, outcome))
    });
    let review = match rx.await {
        Ok(Ok(r)) => r,
        Ok(Err(message)) => {
            st.metrics.count("bad_request");
            debug!(error = %message, "bad admission review");
            return bad_request(message).into_response();
        }
        // The parser panicked (it does not): a clear 500, the process stays up.
        Err(_) => {
            st.metrics.count("bad_request");
            return Rejection {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                message: "the AdmissionReview could not be read".into(),
            }
            .into_response();
        }
    };
    let remaining = deadline.saturating_sub(started.elapsed());
    let (kind, outcome) = match tokio::time::timeout(remaining, job).await {
        Ok(Ok(Some(done))) => done,
        Ok(Ok(None)) => (None, Outcome::NotEstimated("no review".into())),
        Ok(Err(e)) => (
            None,
            Outcome::NotEstimated(format!("estimate task failed: {e}")),
        ),
        // Late: the warnings without their bounds when the estimate itself was done.
        Err(_) => match plain_rx.try_recv() {
            Ok(plain) => {
                info!(name = %review.name, "the search for bounds did not finish within {deadline:?}: warnings without them");
                (None, plain)
            }
            Err(_) => (
                None,
                Outcome::NotEstimated(format!(
                    "the estimate did not finish within {deadline:?} (it goes on, within its work budget)"
                )),
            ),
        },
    };
    let warnings = counted(st, kind, &review, outcome, started);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        allowed(&review.uid, &warnings).to_string(),
    )
        .into_response()
}

/// The request's body, within the time left and the size limit; the answer to send instead
/// when it is too large, unreadable or late.
async fn read_body(
    st: &WebhookState,
    req: Request<Body>,
    remaining: Duration,
) -> Result<axum::body::Bytes, Response> {
    match tokio::time::timeout(
        remaining,
        axum::body::to_bytes(req.into_body(), st.max_body_bytes),
    )
    .await
    {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => {
            st.metrics.count("bad_request");
            let too_large = is_length_limit(&e);
            Err(if too_large {
                Rejection {
                    status: StatusCode::PAYLOAD_TOO_LARGE,
                    message: format!("AdmissionReview larger than {} bytes", st.max_body_bytes),
                }
            } else {
                bad_request(format!("cannot read the request body: {e}"))
            }
            .into_response())
        }
        Err(_) => {
            st.metrics.count("bad_request");
            Err(Rejection {
                status: StatusCode::REQUEST_TIMEOUT,
                message: "the request body did not arrive in time".into(),
            }
            .into_response())
        }
    }
}

/// The warnings of an outcome, counted in the metrics and logged.
fn counted(
    st: &WebhookState,
    kind: Option<TargetKind>,
    review: &Review,
    outcome: Outcome,
    started: Instant,
) -> Vec<String> {
    let kind_name = kind.map_or("", TargetKind::as_str);
    match outcome {
        Outcome::Warnings(w) => {
            if w.is_empty() {
                st.metrics.count("clean");
            } else {
                st.metrics.count("warned");
                info!(kind = kind_name, name = %review.name, operation = %review.operation,
                      warnings = w.len(), elapsed = ?started.elapsed(), "admission warnings");
            }
            w
        }
        Outcome::Skipped(why) => {
            st.metrics.count("skipped");
            debug!(name = %review.name, why, "admission review skipped");
            Vec::new()
        }
        Outcome::NotEstimated(why) => {
            st.metrics.count("not_estimated");
            warn!(kind = kind_name, name = %review.name, operation = %review.operation,
                  reason = %why, "no estimate for an admission review: allowed without warnings");
            Vec::new()
        }
    }
}

/// Whether reading a body failed on its size limit (http-body-util's `LengthLimitError`,
/// somewhere in the error's chain).
fn is_length_limit(e: &axum::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err.to_string().contains("length limit exceeded") {
            return true;
        }
        cur = err.source();
    }
    false
}

/// Serves `router` over TLS on `listener` until `shutdown`, then lets open requests finish
/// (up to 10 s). Each connection's handshake and request headers are bounded in time.
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    metrics: WebhookMetrics,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    serve_tls_counting(
        listener,
        tls,
        router,
        metrics.tls_handshake_failures,
        "webhook",
        shutdown,
    )
    .await;
}

/// [`serve_tls`] for any server (`what` names it in the logs), counting failed handshakes in
/// `handshake_failures`: the webhook's, and the metrics server's.
pub async fn serve_tls_counting(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    handshake_failures: Counter,
    what: &'static str,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a little, go on.
                    debug!(error = %e, server = what, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let acceptor = acceptor.clone();
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let handshake_failures = handshake_failures.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    handshake_failures.inc();
                    debug!(%peer, error = %e, server = what, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    handshake_failures.inc();
                    return;
                }
            };
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(conn).await {
                debug!(%peer, error = %e, server = what, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(10), graceful.shutdown())
        .await
        .is_err()
    {
        debug!(server = what, "connections still open after 10 s; closing");
    }
}

/// A running webhook: its server and its certificate loop.
pub struct RunningWebhook {
    server: tokio::task::JoinHandle<()>,
    certs: tokio::task::JoinHandle<()>,
    serving: Serving,
}

/// Whether the webhook can answer: its server listens and a serving certificate is loaded.
#[derive(Clone)]
pub struct Serving {
    resolver: Arc<CertResolver>,
    secret: String,
}

impl Serving {
    /// The webhook's readiness; why not, when it is not ready.
    pub fn ready(&self) -> Result<(), String> {
        if self.resolver.is_loaded() {
            Ok(())
        } else {
            Err(format!(
                "webhook: no serving certificate loaded yet (Secret {})",
                self.secret
            ))
        }
    }
}

impl RunningWebhook {
    /// What readiness reads.
    pub fn serving(&self) -> Serving {
        self.serving.clone()
    }

    /// The serving certificate, as the Secret has it (the metrics server serves it too).
    pub fn resolver(&self) -> Arc<CertResolver> {
        self.serving.resolver.clone()
    }

    /// Waits for the server (which stops accepting on the shutdown token and lets open
    /// requests finish) and the certificate loop to end.
    pub async fn stopped(self) {
        let _ = self.server.await;
        let _ = self.certs.await;
    }
}

/// Binds the webhook's address and starts its server and certificate loop until `shutdown`
/// (`None` with `--webhook=false`). The certificate names `extra_hosts` too (the metrics
/// Service's names, when the metrics server serves the same certificate).
pub async fn start(
    args: &WebhookArgs,
    enabled: bool,
    extra_hosts: &[String],
    client: &kube::Client,
    state: WebhookState,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<Option<RunningWebhook>, Box<dyn std::error::Error + Send + Sync>> {
    if !enabled {
        return Ok(None);
    }
    let namespace = args
        .webhook_namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let mut settings = CertSettings::new(&namespace, &args.webhook_service);
    settings.secret = args.webhook_secret.clone();
    settings.configuration = args.webhook_configuration.clone();
    settings.manage = args.webhook_manage_certificates;
    settings.refresh = Duration::from_secs(args.webhook_cert_refresh_seconds);
    settings.cert_validity = Duration::from_secs(args.webhook_cert_validity_seconds);
    if let Some(url) = &args.webhook_url {
        settings = settings.with_url(url)?;
    }
    for host in extra_hosts {
        if !settings.hosts.contains(host) {
            settings.hosts.push(host.clone());
        }
    }
    let listener = tokio::net::TcpListener::bind(args.webhook_address)
        .await
        .map_err(|e| format!("webhook: cannot listen on {}: {e}", args.webhook_address))?;
    let resolver = Arc::new(CertResolver::default());
    let serving = Serving {
        resolver: resolver.clone(),
        secret: format!("{}/{}", settings.namespace, settings.secret),
    };
    let metrics = state.metrics.clone();
    let expiry = metrics.certificate_expiry.clone();
    let certs = tokio::spawn(certs::run(
        client.clone(),
        settings.clone(),
        resolver.clone(),
        move |t| {
            expiry.set(t);
        },
        shutdown.clone().cancelled_owned(),
    ));
    info!(
        address = %args.webhook_address,
        secret = %format!("{}/{}", settings.namespace, settings.secret),
        configuration = %settings.configuration,
        hosts = ?settings.hosts,
        manage_certificates = settings.manage,
        "serving the admission webhook (POST /validate)"
    );
    let server = tokio::spawn(serve_tls(
        listener,
        certs::server_config(resolver),
        router(state),
        metrics,
        shutdown.cancelled_owned(),
    ));
    Ok(Some(RunningWebhook {
        server,
        certs,
        serving,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_go_duration("1m0s"), Some(Duration::from_secs(60)));
        assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("2.5s"), Some(Duration::from_millis(2500)));
        assert_eq!(parse_go_duration(""), None);
        assert_eq!(parse_go_duration("5"), None);
        assert_eq!(parse_go_duration("0s"), None);
        assert_eq!(
            requested_timeout(Some("timeout=5s")),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            requested_timeout(Some("a=b&timeout=3s")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(requested_timeout(None), None);
        assert_eq!(deadline_of(Some("timeout=5s")), Duration::from_millis(4500));
        assert_eq!(
            deadline_of(Some("timeout=500ms")),
            Duration::from_millis(250)
        );
        assert_eq!(deadline_of(None), Duration::from_millis(9500));
    }

    #[test]
    fn reviews() {
        let ok = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","operation":"CREATE","name":"n","object":{"metadata":{"name":"m"}}}}"#;
        let r = parse_review(ok).unwrap();
        assert_eq!(
            (r.uid.as_str(), r.name.as_str(), r.operation.as_str()),
            ("u1", "m", "CREATE")
        );
        for (body, needle) in [
            (&b"{"[..], "not JSON"),
            (br#"[1,2]"#, "not JSON"),
            (br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}"#, "admission.k8s.io/v1beta1"),
            (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#, "no request"),
            (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}"#, "no uid"),
            (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}"#, "not JSON"),
        ] {
            let e = parse_review(body).unwrap_err();
            assert!(e.starts_with("malformed AdmissionReview"), "{e}");
            assert!(e.contains(needle), "{e}");
        }
        assert_eq!(
            allowed("u1", &[]),
            json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u1","allowed":true}})
        );
        assert_eq!(
            allowed("u1", &["w".into()])["response"]["warnings"],
            json!(["w"])
        );
    }
}
