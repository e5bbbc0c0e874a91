//! Who may read `/metrics`, decided by the API server as controller-runtime's
//! `pkg/metrics/filters` (`WithAuthenticationAndAuthorization`) decides it:
//!
//! - **Authentication** by a `TokenReview` of the request's bearer token. No token, or a token the
//!   API server does not authenticate: **401** `Unauthorized` (anonymous requests are refused). A
//!   review that cannot be made (the API server is down, the operator may not create
//!   TokenReviews): **500** `Authentication failed`.
//! - **Authorization** by a `SubjectAccessReview` of the non-resource request: the user's name,
//!   uid, groups (with `system:authenticated`, as the API server's authenticated group adder
//!   adds it) and extra; `verb` the request's method in lower case, `path` its path (`get` on
//!   `/metrics`, what the `celcost-metrics-reader` ClusterRole grants). Denied: **403**
//!   `Authorization denied for user <name>`; a review that fails: **500**.
//! - **Caches**, with controller-runtime's times: a token's answer (authenticated or not) for 1
//!   minute (`CacheTTL`), an allowed decision for 5 minutes (`AllowCacheTTL`), a denied one for 30
//!   seconds (`DenyCacheTTL`). Failed reviews are not cached. Each cache holds at most
//!   [`CACHE_ENTRIES`] answers (expired ones go first, then the one expiring soonest), so a scrape
//!   every 30 s costs the API server two reviews every few minutes and a flood of made-up tokens
//!   costs the operator bounded memory.
//!
//! Every review sent is counted in `celcost_metrics_auth_reviews_total{review, result}`.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::time::Instant;
use tracing::{debug, warn};

/// How long a token's answer is kept (controller-runtime's `CacheTTL`).
pub const TOKEN_TTL: Duration = Duration::from_secs(60);
/// How long an allowed decision is kept (`AllowCacheTTL`).
pub const ALLOW_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a denied decision is kept (`DenyCacheTTL`).
pub const DENY_TTL: Duration = Duration::from_secs(30);
/// Most answers each cache holds.
pub const CACHE_ENTRIES: usize = 1024;
/// Bound of one review call (controller-runtime's `TokenAccessReviewTimeout`).
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// `review` (`tokenreview`, `subjectaccessreview`) and `result` (`authenticated`,
/// `unauthenticated`, `allowed`, `denied`, `error`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReviewLabels {
    pub review: String,
    pub result: String,
}

/// The reviews the metrics server sent.
#[derive(Clone, Default)]
pub struct AuthMetrics {
    pub reviews: Family<ReviewLabels, Counter>,
    /// TLS handshakes of the metrics server that failed.
    pub tls_handshake_failures: Counter,
}

impl AuthMetrics {
    pub fn register(self, registry: &mut Registry) -> Self {
        registry.register(
            "metrics_auth_reviews",
            "TokenReviews and SubjectAccessReviews sent to authorize /metrics (cached answers are not counted)",
            self.reviews.clone(),
        );
        registry.register(
            "metrics_tls_handshake_failures",
            "TLS handshakes of the /metrics server that failed",
            self.tls_handshake_failures.clone(),
        );
        self
    }

    fn count(&self, review: &str, result: &str) {
        self.reviews
            .get_or_create(&ReviewLabels {
                review: review.into(),
                result: result.into(),
            })
            .inc();
    }

    /// Reviews sent so far of one kind (`tokenreview`, `subjectaccessreview`).
    pub fn sent(&self, review: &str) -> u64 {
        [
            "authenticated",
            "unauthenticated",
            "allowed",
            "denied",
            "error",
        ]
        .iter()
        .map(|result| {
            self.reviews
                .get(&ReviewLabels {
                    review: review.into(),
                    result: (*result).into(),
                })
                .map_or(0, |c| c.get())
        })
        .sum()
    }
}

/// The user a token stands for.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// What a decision is about.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Question {
    user: User,
    verb: String,
    path: String,
}

/// Answers kept until they expire, at most `capacity` of them.
struct Cache<K, V> {
    entries: HashMap<K, (V, Instant)>,
    capacity: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Cache<K, V> {
    fn new(capacity: usize) -> Self {
        Cache {
            entries: HashMap::new(),
            capacity: capacity.max(1),
        }
    }

    fn get(&mut self, key: &K, now: Instant) -> Option<V> {
        match self.entries.get(key) {
            Some((v, until)) if *until > now => Some(v.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    fn insert(&mut self, key: K, value: V, ttl: Duration, now: Instant) {
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.entries.retain(|_, (_, until)| *until > now);
            if self.entries.len() >= self.capacity
                && let Some(soonest) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, until))| *until)
                    .map(|(k, _)| k.clone())
            {
                self.entries.remove(&soonest);
            }
        }
        self.entries.insert(key, (value, now + ttl));
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Why a request is not served.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no bearer token, or the API server does not authenticate it.
    Unauthorized,
    /// 403: the SubjectAccessReview denied `user`.
    Forbidden { user: String },
    /// 500: a review could not be made.
    AuthenticationFailed,
    /// 500: the SubjectAccessReview of `user` could not be made.
    AuthorizationFailed { user: String },
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (code, text) = match self {
            Refusal::Unauthorized => (StatusCode::UNAUTHORIZED, "Unauthorized".to_string()),
            Refusal::Forbidden { user } => (
                StatusCode::FORBIDDEN,
                format!("Authorization denied for user {user}"),
            ),
            Refusal::AuthenticationFailed => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Authentication failed".to_string(),
            ),
            Refusal::AuthorizationFailed { user } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Authorization for user {user} failed"),
            ),
        };
        (
            code,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{text}\n"),
        )
            .into_response()
    }
}

/// Authenticates and authorizes requests with the API server, caching its answers.
#[derive(Clone)]
pub struct MetricsAuth {
    inner: Arc<Inner>,
}

struct Inner {
    client: kube::Client,
    tokens: Mutex<Cache<String, Option<User>>>,
    decisions: Mutex<Cache<Question, bool>>,
    metrics: AuthMetrics,
}

impl MetricsAuth {
    pub fn new(client: kube::Client, metrics: AuthMetrics) -> Self {
        Self::with_capacity(client, metrics, CACHE_ENTRIES)
    }

    /// With caches of `capacity` answers each.
    pub fn with_capacity(client: kube::Client, metrics: AuthMetrics, capacity: usize) -> Self {
        MetricsAuth {
            inner: Arc::new(Inner {
                client,
                tokens: Mutex::new(Cache::new(capacity)),
                decisions: Mutex::new(Cache::new(capacity)),
                metrics,
            }),
        }
    }

    /// Answers held in the token and decision caches.
    pub fn cached(&self) -> (usize, usize) {
        (
            self.inner.tokens.lock().map_or(0, |c| c.len()),
            self.inner.decisions.lock().map_or(0, |c| c.len()),
        )
    }

    /// Whether the holder of `authorization` (the header's value) may `verb` on `path`.
    pub async fn check(
        &self,
        authorization: Option<&str>,
        verb: &str,
        path: &str,
    ) -> Result<User, Refusal> {
        let token = bearer(authorization).ok_or(Refusal::Unauthorized)?;
        let user = self
            .authenticate(token)
            .await?
            .ok_or(Refusal::Unauthorized)?;
        let question = Question {
            user,
            verb: verb.to_string(),
            path: path.to_string(),
        };
        if self.authorize(&question).await? {
            Ok(question.user)
        } else {
            Err(Refusal::Forbidden {
                user: question.user.name,
            })
        }
    }

    async fn authenticate(&self, token: &str) -> Result<Option<User>, Refusal> {
        if let Some(hit) = lock(&self.inner.tokens).get(&token.to_string(), Instant::now()) {
            return Ok(hit);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let api: Api<TokenReview> = Api::all(self.inner.client.clone());
        let answer =
            tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review)).await;
        let status = match answer {
            Ok(Ok(r)) => r.status.unwrap_or_default(),
            Ok(Err(e)) => {
                self.inner.metrics.count("tokenreview", "error");
                warn!(error = %e, "/metrics: the TokenReview failed");
                return Err(Refusal::AuthenticationFailed);
            }
            Err(_) => {
                self.inner.metrics.count("tokenreview", "error");
                warn!(timeout = ?REVIEW_TIMEOUT, "/metrics: the TokenReview timed out");
                return Err(Refusal::AuthenticationFailed);
            }
        };
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(u)) => {
                let mut groups = u.groups.unwrap_or_default();
                if !groups.iter().any(|g| g == "system:authenticated") {
                    groups.push("system:authenticated".into());
                }
                Some(User {
                    name: u.username.unwrap_or_default(),
                    uid: u.uid.unwrap_or_default(),
                    groups,
                    extra: u.extra.unwrap_or_default(),
                })
            }
            _ => None,
        };
        self.inner.metrics.count(
            "tokenreview",
            if user.is_some() {
                "authenticated"
            } else {
                "unauthenticated"
            },
        );
        if user.is_none() {
            debug!(error = ?status.error, "/metrics: token not authenticated");
        }
        lock(&self.inner.tokens).insert(token.to_string(), user.clone(), TOKEN_TTL, Instant::now());
        Ok(user)
    }

    async fn authorize(&self, q: &Question) -> Result<bool, Refusal> {
        if let Some(hit) = lock(&self.inner.decisions).get(q, Instant::now()) {
            return Ok(hit);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(q.user.name.clone()),
                uid: (!q.user.uid.is_empty()).then(|| q.user.uid.clone()),
                groups: Some(q.user.groups.clone()),
                extra: (!q.user.extra.is_empty()).then(|| q.user.extra.clone()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(q.path.clone()),
                    verb: Some(q.verb.clone()),
                }),
                resource_attributes: None,
            },
            ..SubjectAccessReview::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.inner.client.clone());
        let answer =
            tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review)).await;
        let failed = |why: String| {
            self.inner.metrics.count("subjectaccessreview", "error");
            warn!(user = %q.user.name, error = %why, "/metrics: the SubjectAccessReview failed");
            Refusal::AuthorizationFailed {
                user: q.user.name.clone(),
            }
        };
        let status = match answer {
            Ok(Ok(r)) => r
                .status
                .ok_or_else(|| failed("no status in the answer".into()))?,
            Ok(Err(e)) => return Err(failed(e.to_string())),
            Err(_) => return Err(failed(format!("timed out after {REVIEW_TIMEOUT:?}"))),
        };
        let allowed = status.allowed && status.denied != Some(true);
        self.inner.metrics.count(
            "subjectaccessreview",
            if allowed { "allowed" } else { "denied" },
        );
        if !allowed {
            debug!(user = %q.user.name, reason = ?status.reason, "/metrics: access denied");
        }
        let ttl = if allowed { ALLOW_TTL } else { DENY_TTL };
        lock(&self.inner.decisions).insert(q.clone(), allowed, ttl, Instant::now());
        Ok(allowed)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves a cache that is still consistent.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case, as the API
/// server reads it); `None` for no header, another scheme or an empty token.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let (scheme, token) = header?.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The axum middleware: the request goes on only when [`MetricsAuth::check`] lets it.
pub async fn require(State(auth): State<MetricsAuth>, req: Request, next: Next) -> Response {
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let verb = req.method().as_str().to_ascii_lowercase();
    let path = req.uri().path().to_string();
    match auth.check(authorization, &verb, &path).await {
        Ok(_) => next.run(req).await,
        Err(refusal) => refusal.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body as AxumBody;
    use http::{Request as HttpRequest, Response as HttpResponse};
    use kube::client::Body;
    use serde_json::{Value, json};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tower::ServiceExt;

    /// Calls the fake API server got: (TokenReviews, SubjectAccessReviews).
    #[derive(Clone, Default)]
    struct Calls(Arc<AtomicUsize>, Arc<AtomicUsize>);

    impl Calls {
        fn get(&self) -> (usize, usize) {
            (self.0.load(Ordering::SeqCst), self.1.load(Ordering::SeqCst))
        }
    }

    /// A fake API server: tokens `reader` and `other` are the service accounts `x:reader` and
    /// `x:other` (`boom` fails the review with a 500, anything else is not authenticated); only
    /// `x:reader` may `get` `/metrics`, and the SAR of `x:broken` fails.
    fn api_server() -> (kube::Client, Calls) {
        let (service, mut handle) =
            tower_test::mock::pair::<HttpRequest<Body>, HttpResponse<Body>>();
        let calls = Calls::default();
        let counted = calls.clone();
        tokio::spawn(async move {
            while let Some((req, send)) = handle.next_request().await {
                let path = req.uri().path().to_string();
                let bytes = req.into_body().collect_bytes().await.unwrap();
                let body: Value = serde_json::from_slice(&bytes).unwrap();
                let (code, answer) = if path == "/apis/authentication.k8s.io/v1/tokenreviews" {
                    counted.0.fetch_add(1, Ordering::SeqCst);
                    let token = body["spec"]["token"].as_str().unwrap_or_default();
                    match token {
                        "boom" => (
                            500,
                            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500, "message": "etcd is gone"}),
                        ),
                        "reader" | "other" | "broken" => (
                            201,
                            json!({
                            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                            "spec": body["spec"],
                            "status": {"authenticated": true, "user": {
                                "username": format!("system:serviceaccount:x:{token}"),
                                "uid": format!("uid-{token}"),
                                "groups": ["system:serviceaccounts", "system:serviceaccounts:x"]}}}),
                        ),
                        _ => (
                            201,
                            json!({
                            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                            "spec": body["spec"],
                            "status": {"authenticated": false, "error": "invalid bearer token"}}),
                        ),
                    }
                } else if path == "/apis/authorization.k8s.io/v1/subjectaccessreviews" {
                    counted.1.fetch_add(1, Ordering::SeqCst);
                    let spec = &body["spec"];
                    let user = spec["user"].as_str().unwrap_or_default();
                    let groups = spec["groups"].as_array().cloned().unwrap_or_default();
                    assert!(groups.contains(&json!("system:authenticated")), "{spec}");
                    assert_eq!(
                        spec["uid"],
                        json!(format!("uid-{}", user.rsplit(':').next().unwrap()))
                    );
                    let allowed = user == "system:serviceaccount:x:reader"
                        && spec["nonResourceAttributes"]
                            == json!({"path": "/metrics", "verb": "get"})
                        && spec.get("resourceAttributes").is_none();
                    if user.ends_with(":broken") {
                        (
                            503,
                            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503, "message": "unavailable"}),
                        )
                    } else {
                        (
                            201,
                            json!({
                            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                            "spec": spec, "status": {"allowed": allowed}}),
                        )
                    }
                } else {
                    (
                        404,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "message": "not found"}),
                    )
                };
                send.send_response(
                    HttpResponse::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(Body::from(serde_json::to_vec(&answer).unwrap()))
                        .unwrap(),
                );
            }
        });
        (kube::Client::new(service, "default"), calls)
    }

    fn server(capacity: usize) -> (axum::Router, Calls, AuthMetrics, MetricsAuth) {
        let (client, calls) = api_server();
        let mut registry = Registry::with_prefix("celcost");
        let metrics = AuthMetrics::default().register(&mut registry);
        let auth = MetricsAuth::with_capacity(client, metrics.clone(), capacity);
        let router = super::super::http::metrics_router(Arc::new(registry), Some(auth.clone()));
        (router, calls, metrics, auth)
    }

    async fn scrape(router: &axum::Router, token: Option<&str>) -> (u16, String) {
        scrape_path(router, token, "/metrics").await
    }

    async fn scrape_path(router: &axum::Router, token: Option<&str>, path: &str) -> (u16, String) {
        let mut req = HttpRequest::get(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let res = router
            .clone()
            .oneshot(req.body(AxumBody::empty()).unwrap())
            .await
            .unwrap();
        let code = res.status().as_u16();
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        (code, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn no_token_is_401_without_a_review() {
        let (router, calls, _, _) = server(CACHE_ENTRIES);
        let (code, body) = scrape(&router, None).await;
        assert_eq!((code, body.as_str()), (401, "Unauthorized\n"));
        let res = router
            .clone()
            .oneshot(
                HttpRequest::get("/metrics")
                    .header("authorization", "Basic dXNlcjpwYXNz")
                    .body(AxumBody::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 401);
        assert_eq!(calls.get(), (0, 0));
    }

    #[tokio::test]
    async fn a_token_the_api_server_does_not_authenticate_is_401() {
        let (router, calls, metrics, _) = server(CACHE_ENTRIES);
        assert_eq!(scrape(&router, Some("made-up")).await.0, 401);
        assert_eq!(calls.get(), (1, 0));
        // Cached: the same token again costs nothing.
        assert_eq!(scrape(&router, Some("made-up")).await.0, 401);
        assert_eq!(calls.get(), (1, 0));
        assert_eq!(metrics.sent("tokenreview"), 1);
    }

    #[tokio::test]
    async fn a_denied_review_is_403() {
        let (router, calls, metrics, _) = server(CACHE_ENTRIES);
        let (code, body) = scrape(&router, Some("other")).await;
        assert_eq!(
            (code, body.as_str()),
            (
                403,
                "Authorization denied for user system:serviceaccount:x:other\n"
            )
        );
        assert_eq!(calls.get(), (1, 1));
        assert_eq!(scrape(&router, Some("other")).await.0, 403);
        assert_eq!(calls.get(), (1, 1));
        assert_eq!(metrics.sent("subjectaccessreview"), 1);
    }

    #[tokio::test]
    async fn an_allowed_review_is_200_and_the_second_scrape_sends_no_review() {
        let (router, calls, metrics, _) = server(CACHE_ENTRIES);
        let (code, body) = scrape(&router, Some("reader")).await;
        assert_eq!(code, 200, "{body}");
        assert!(
            body.contains("celcost_metrics_auth_reviews_total"),
            "{body}"
        );
        assert_eq!(calls.get(), (1, 1));
        let (code, body) = scrape(&router, Some("reader")).await;
        assert_eq!(code, 200);
        assert_eq!(calls.get(), (1, 1), "the second scrape sent a review");
        // The counter tells the same: one review of each kind.
        assert!(
            body.contains("celcost_metrics_auth_reviews_total{review=\"tokenreview\",result=\"authenticated\"} 1"),
            "{body}"
        );
        assert!(
            body.contains("celcost_metrics_auth_reviews_total{review=\"subjectaccessreview\",result=\"allowed\"} 1"),
            "{body}"
        );
        assert_eq!(
            (
                metrics.sent("tokenreview"),
                metrics.sent("subjectaccessreview")
            ),
            (1, 1)
        );
        // Another path is authorized as its own question (and then not found).
        assert_eq!(scrape_path(&router, Some("reader"), "/nope").await.0, 403);
        assert_eq!(calls.get(), (1, 2));
    }

    #[tokio::test]
    async fn a_failed_review_is_500_and_not_cached() {
        let (router, calls, metrics, _) = server(CACHE_ENTRIES);
        let (code, body) = scrape(&router, Some("boom")).await;
        assert_eq!((code, body.as_str()), (500, "Authentication failed\n"));
        assert_eq!(scrape(&router, Some("boom")).await.0, 500);
        assert_eq!(calls.get(), (2, 0));
        let (code, body) = scrape(&router, Some("broken")).await;
        assert_eq!(
            (code, body.as_str()),
            (
                500,
                "Authorization for user system:serviceaccount:x:broken failed\n"
            )
        );
        assert_eq!(calls.get(), (3, 1));
        assert_eq!(scrape(&router, Some("broken")).await.0, 500);
        // The token's answer is cached, the failed decision is not.
        assert_eq!(calls.get(), (3, 2));
        assert_eq!(
            metrics
                .reviews
                .get_or_create(&ReviewLabels {
                    review: "subjectaccessreview".into(),
                    result: "error".into()
                })
                .get(),
            2
        );
    }

    #[tokio::test(start_paused = true)]
    async fn answers_expire_at_controller_runtimes_times() {
        let (router, calls, _, _) = server(CACHE_ENTRIES);
        assert_eq!(scrape(&router, Some("reader")).await.0, 200);
        assert_eq!(scrape(&router, Some("other")).await.0, 403);
        assert_eq!(calls.get(), (2, 2));
        // 29 s: all cached.
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(scrape(&router, Some("other")).await.0, 403);
        assert_eq!(calls.get(), (2, 2));
        // 31 s: the denial is asked again (the token is still known).
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(scrape(&router, Some("other")).await.0, 403);
        assert_eq!(calls.get(), (2, 3));
        // 61 s: the tokens are reviewed again, the allowed decision is kept (5 min).
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(scrape(&router, Some("reader")).await.0, 200);
        assert_eq!(calls.get(), (3, 3));
        // 5 min 1 s: asked again.
        tokio::time::advance(Duration::from_secs(240)).await;
        assert_eq!(scrape(&router, Some("reader")).await.0, 200);
        assert_eq!(calls.get(), (4, 4));
    }

    #[tokio::test]
    async fn many_tokens_stay_within_the_bound() {
        let (router, calls, _, auth) = server(8);
        for i in 0..50 {
            assert_eq!(scrape(&router, Some(&format!("made-up-{i}"))).await.0, 401);
        }
        assert_eq!(calls.get(), (50, 0));
        assert!(auth.cached().0 <= 8, "{:?}", auth.cached());
    }

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(Some("Bearer")), None);
        assert_eq!(bearer(None), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_cache_expires_and_stays_bounded() {
        let mut c: Cache<u32, bool> = Cache::new(3);
        let t0 = Instant::now();
        c.insert(1, true, Duration::from_secs(10), t0);
        c.insert(2, false, Duration::from_secs(20), t0);
        c.insert(3, true, Duration::from_secs(30), t0);
        assert_eq!(c.get(&1, t0 + Duration::from_secs(9)), Some(true));
        // Full: the entry expiring soonest makes room.
        c.insert(4, true, Duration::from_secs(40), t0);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&1, t0), None);
        assert_eq!(c.get(&2, t0), Some(false));
        // Expired entries go first.
        c.insert(
            5,
            true,
            Duration::from_secs(40),
            t0 + Duration::from_secs(25),
        );
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(&3, t0 + Duration::from_secs(25)), Some(true));
        assert_eq!(c.get(&2, t0 + Duration::from_secs(25)), None);
        assert_eq!(c.get(&3, t0 + Duration::from_secs(30)), None);
    }
}
