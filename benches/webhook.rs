//! The admission webhook's answer for the largest CRD of the corpus (`cargo bench --bench
//! webhook`; `../shared/corpus`, or `$CELCOST_CORPUS`): parse, estimate and warnings through
//! the handler, as the API server posts an AdmissionReview. Prints p50, p99 and max of
//! `$CELCOST_WEBHOOK_RUNS` runs (default 50), and the answer's start.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use celcost::Estimator;
use celcost::cel::decls::Version;
use celcost::controller::webhook::{self, WebhookState};
use common::{corpus_dir, files_under};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// An AdmissionReview of a CREATE of `object`.
fn review(object: Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "big",
            "kind": {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"},
            "resource": {"group": "apiextensions.k8s.io", "version": "v1", "resource": "customresourcedefinitions"},
            "name": object.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": object,
            "oldObject": null,
            "dryRun": false
        }
    })
}

/// POSTs `body` to `/validate?timeout=5s` through the router: (status, body text).
async fn post(st: &WebhookState, body: Vec<u8>) -> (StatusCode, String) {
    let req = Request::builder()
        .method(Method::POST)
        .uri("/validate?timeout=5s")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("a request");
    let res = webhook::router(st.clone())
        .oneshot(req)
        .await
        .expect("an answer");
    let status = res.status();
    let bytes = res.into_body().collect().await.expect("a body").to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn main() {
    let Some(corpus) = corpus_dir() else {
        println!("SKIPPED: no corpus (../shared/corpus beside the checkout, or $CELCOST_CORPUS)");
        return;
    };
    let mut files = Vec::new();
    files_under(&corpus.join("crds"), &mut files);
    let Some(largest) = files
        .into_iter()
        .max_by_key(|p| p.metadata().map(|m| m.len()).unwrap_or(0))
    else {
        println!("SKIPPED: no CRD in {}", corpus.display());
        return;
    };
    let text = std::fs::read_to_string(&largest).expect("the largest CRD reads");
    let object = celcost::input::parse_documents(&text)
        .into_iter()
        .find_map(|d| d.value.ok())
        .expect("a document");
    let body = serde_json::to_vec(&review(object)).expect("JSON");
    let st = WebhookState::new(
        Arc::new(
            Estimator::new(Version::new(1, 36)).with_limits(celcost::budget::Limits::default()),
        ),
        80,
    );
    let runs: usize = std::env::var("CELCOST_WEBHOOK_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50)
        .max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (mut times, last) = rt.block_on(async {
        let mut times: Vec<Duration> = Vec::with_capacity(runs);
        let mut last = String::new();
        for _ in 0..runs {
            let started = Instant::now();
            let (status, text) = post(&st, body.clone()).await;
            times.push(started.elapsed());
            assert_eq!(status, StatusCode::OK, "{text}");
            last = text;
        }
        (times, last)
    });
    times.sort();
    let p = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "webhook latency for {} ({} bytes of AdmissionReview), {runs} runs: p50 {:?}, p99 {:?}, max {:?}",
        largest.display(),
        body.len(),
        p(0.5),
        p(0.99),
        times[times.len() - 1]
    );
    println!("answer: {}", &last[..last.len().min(600)]);
}
