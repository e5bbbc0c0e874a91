//! The operator's two plain servers. The **probes** server (`--listen-address`, what the kubelet
//! calls): `/healthz` (liveness: the process serves), `/readyz` (readiness, what the Services route by: the admission webhook can answer,
//! i.e. it has a serving certificate; always when the webhook is off) and `/watches` (the
//! controller's health: every watch has listed and none has been failing for long, see
//! `watch::Health`; 503 with the reasons otherwise). Watches do not make a replica unready: the
//! webhook answers without them, and taking it out of its Service while the API server recovers
//! would only make the API server's calls fail open.
//!
//! The **metrics** router (`--metrics-bind-address`): `/metrics` (Prometheus/OpenMetrics text),
//! behind [`super::auth`] unless `--metrics-secure=false`; the operator serves it over HTTPS
//! (`webhook::serve_tls`) or, not secure, in plain HTTP with [`serve_on`].

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;

use super::auth::MetricsAuth;

/// Whether a part is ready (or healthy), or why not.
pub type Readiness = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What the handlers read.
#[derive(Clone)]
pub struct AdminState {
    /// `/readyz`.
    pub ready: Readiness,
    /// `/watches`.
    pub watches: Readiness,
}

/// The probes' routes.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/watches", get(watches))
        .with_state(state)
}

/// `/metrics`, each request authenticated and authorized first when `auth` is given (whatever
/// its path: an unknown path of an authorized user is 404, of anyone else 401 or 403).
pub fn metrics_router(registry: Arc<Registry>, auth: Option<MetricsAuth>) -> Router {
    let router = Router::new()
        .route("/metrics", get(metrics))
        .with_state(registry);
    match auth {
        Some(auth) => router.layer(axum::middleware::from_fn_with_state(
            auth,
            super::auth::require,
        )),
        None => router,
    }
}

async fn metrics(State(registry): State<Arc<Registry>>) -> impl IntoResponse {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &registry) {
        Ok(()) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            body,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn readyz(State(state): State<AdminState>) -> impl IntoResponse {
    probe(&state.ready, "ready", "not ready")
}

async fn watches(State(state): State<AdminState>) -> impl IntoResponse {
    probe(&state.watches, "watches ok", "watches failing")
}

/// 200 and `ok` when `check` passes, else 503 and `failing: <why>`.
fn probe(check: &Readiness, ok: &str, failing: &str) -> (StatusCode, String) {
    match check() {
        Ok(()) => (StatusCode::OK, format!("{ok}\n")),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{failing}: {why}\n"),
        ),
    }
}

/// Binds `addr` and serves `router` in plain HTTP until `shutdown` completes.
pub async fn serve(
    addr: SocketAddr,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    serve_on(listener, router, shutdown).await
}

/// Serves `router` in plain HTTP on a bound listener until `shutdown` completes.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};

    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let path = path.to_string();
        tokio::task::spawn_blocking(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
            let mut buf = String::new();
            s.read_to_string(&mut buf).unwrap();
            let code = buf.split_whitespace().nth(1).unwrap().parse().unwrap();
            (code, buf)
        })
        .await
        .unwrap()
    }

    /// Asserts that `path` answers `code` with `text` in its body.
    async fn answers(addr: SocketAddr, path: &str, code: u16, text: &str) {
        let (got, body) = get(addr, path).await;
        assert_eq!(got, code, "{path}: {body}");
        assert!(body.contains(text), "{path}: {body}");
    }

    /// Passes while `flag` is set, else fails with `why`.
    fn flagged(flag: &Arc<AtomicBool>, why: &'static str) -> Readiness {
        let flag = flag.clone();
        Arc::new(move || {
            if flag.load(Ordering::Acquire) {
                Ok(())
            } else {
                Err(why.to_string())
            }
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_readiness_and_metrics() {
        let mut registry = Registry::with_prefix("celcost");
        let metrics = crate::serve::metrics::Metrics::default().register(&mut registry);
        metrics
            .rule_ratio
            .get_or_create(&crate::serve::metrics::TargetLabels {
                kind: "crd".into(),
                name: "widgets.example.com".into(),
            })
            .set(0.5);
        let ready = Arc::new(AtomicBool::new(false));
        let watching = Arc::new(AtomicBool::new(false));
        let state = AdminState {
            ready: flagged(&ready, "webhook: no serving certificate loaded yet"),
            watches: flagged(&watching, "crd: failing for 31 s"),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let metrics_addr = metrics_listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_on(listener, router(state), async move {
            let _ = stopped.await;
        }));
        let (stop_metrics, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
        let metrics_server = tokio::spawn(serve_on(
            metrics_listener,
            metrics_router(Arc::new(registry), None),
            async move {
                let _ = metrics_stopped.await;
            },
        ));

        assert_eq!(get(addr, "/healthz").await.0, 200);
        answers(
            addr,
            "/readyz",
            503,
            "not ready: webhook: no serving certificate",
        )
        .await;
        ready.store(true, Ordering::Release);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        // The watches are told apart: failing watches do not make the replica unready.
        answers(
            addr,
            "/watches",
            503,
            "watches failing: crd: failing for 31 s",
        )
        .await;
        assert_eq!(get(addr, "/readyz").await.0, 200);
        watching.store(true, Ordering::Release);
        assert_eq!(get(addr, "/watches").await.0, 200);
        // Metrics are on their own listener, not on the probes'.
        assert_eq!(get(addr, "/metrics").await.0, 404);
        let (code, body) = get(metrics_addr, "/metrics").await;
        assert_eq!(code, 200);
        assert!(body.contains("application/openmetrics-text"), "{body}");
        assert!(
            body.contains(
                "celcost_highest_rule_cost_ratio{kind=\"crd\",name=\"widgets.example.com\"} 0.5"
            ),
            "{body}"
        );
        assert_eq!(get(addr, "/nope").await.0, 404);
        assert_eq!(get(metrics_addr, "/healthz").await.0, 404);
        let _ = stop.send(());
        server.await.unwrap().unwrap();
        let _ = stop_metrics.send(());
        metrics_server.await.unwrap().unwrap();
    }
}
