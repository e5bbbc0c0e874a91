//! Watch recovery against a mock API server (tower-test), on tokio's paused clock so that every
//! wait is measured exactly: a 410 relists at once, connection errors back off (and the backoff
//! resets after a success), a 429's Retry-After is honoured, a silent watch is restarted, and
//! targets deleted while the watch was away are reported on the relist.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use celcost::controller::watch::{Health, WatchSettings, resilient};
use futures::StreamExt;
use futures::channel::mpsc;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use http_body_util::StreamBody;
use http_body_util::combinators::BoxBody;
use hyper::body::Frame;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PartialObjectMeta};
use kube::client::Body;
use kube::runtime::watcher::{self, Event, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tower_test::mock::Handle;

type RespBody = BoxBody<Bytes, Infallible>;
type Server = Handle<Request<Body>, Response<RespBody>>;

fn settings() -> WatchSettings {
    WatchSettings {
        timeout: 5,
        ..WatchSettings::default()
    }
}

type Started = (
    Server,
    mpsc::UnboundedReceiver<Event<PartialObjectMeta<CustomResourceDefinition>>>,
    Arc<Mutex<Vec<String>>>,
    Health,
);

/// A watch of CRD metadata through the mock, with the given settings; the events it yields go
/// into a channel, names gone on a relist into `gone`.
fn start(settings: WatchSettings) -> Started {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<RespBody>>();
    let health = Health::default();
    let service = tower::ServiceBuilder::new()
        .layer(health.answers_layer())
        .service(service);
    let client = Client::new(service, "default");
    let api = Api::<PartialObjectMeta<CustomResourceDefinition>>::all(client);
    let wc = watcher::Config {
        page_size: None,
        ..watcher::Config::default()
            .any_semantic()
            .timeout(settings.timeout)
    };
    let gone = Arc::new(Mutex::new(Vec::new()));
    let g = gone.clone();
    let stream = resilient(
        "crd",
        move || watcher(api.clone(), wc.clone()).boxed(),
        settings,
        health.clone(),
        Some(Box::new(move |n: &str| {
            g.lock().unwrap().push(n.to_string())
        })),
    );
    let (tx, rx) = mpsc::unbounded();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(e) = stream.next().await {
            let _ = tx.unbounded_send(e.expect("no errors come out"));
        }
    });
    (handle, rx, gone, health)
}

fn body(v: &Value) -> RespBody {
    http_body_util::Full::new(Bytes::from(serde_json::to_vec(v).unwrap())).boxed()
}

fn respond(send: tower_test::mock::SendResponse<Response<RespBody>>, code: u16, v: &Value) {
    send.send_response(
        Response::builder()
            .status(StatusCode::from_u16(code).unwrap())
            .body(body(v))
            .unwrap(),
    );
}

fn meta(name: &str, rv: &str) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
           "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": rv}})
}

fn list(names: &[&str], rv: &str) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
           "metadata": {"resourceVersion": rv},
           "items": names.iter().map(|n| meta(n, rv)).collect::<Vec<_>>()})
}

fn status(code: u16, reason: &str, retry_after: Option<u32>) -> Value {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "code": code, "reason": reason, "message": format!("error {code}")});
    if let Some(r) = retry_after {
        s["details"] = json!({"retryAfterSeconds": r});
    }
    s
}

/// The next request: whether it is a watch, and when it came.
async fn next(
    server: &mut Server,
) -> (
    bool,
    Instant,
    tower_test::mock::SendResponse<Response<RespBody>>,
) {
    let (req, send) = tokio::time::timeout(Duration::from_secs(600), server.next_request())
        .await
        .expect("a request within 10 min")
        .expect("a request");
    let q = req.uri().query().unwrap_or_default().to_string();
    (q.contains("watch=true"), Instant::now(), send)
}

/// A watch response whose events are the lines sent into the returned channel (it stays open,
/// silent, until the sender is dropped).
fn open_watch(
    send: tower_test::mock::SendResponse<Response<RespBody>>,
) -> mpsc::UnboundedSender<Value> {
    let (tx, rx) = mpsc::unbounded::<Value>();
    let frames = rx.map(|v| {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        Ok::<_, Infallible>(Frame::data(Bytes::from(line)))
    });
    send.send_response(
        Response::builder()
            .status(200)
            .body(BodyExt::boxed(StreamBody::new(frames)))
            .unwrap(),
    );
    tx
}

async fn names_until_init_done(
    rx: &mut mpsc::UnboundedReceiver<Event<PartialObjectMeta<CustomResourceDefinition>>>,
) -> Vec<String> {
    let mut names = Vec::new();
    loop {
        match rx.next().await.expect("an event") {
            Event::InitApply(o) => names.push(o.name_any()),
            Event::InitDone => return names,
            _ => {}
        }
    }
}

#[tokio::test(start_paused = true)]
async fn expired_watch_relists_at_once_without_backoff() {
    let (mut server, mut rx, gone, health) = start(settings());
    let (watch, _, send) = next(&mut server).await;
    assert!(!watch);
    respond(send, 200, &list(&["a.x.io", "b.x.io"], "10"));
    assert_eq!(names_until_init_done(&mut rx).await, ["a.x.io", "b.x.io"]);
    assert!(health.healthy(Duration::from_secs(30)).is_ok());

    // The watch from rv 10 is told it expired (an API server restart, a compacted etcd).
    let (watch, _, send) = next(&mut server).await;
    assert!(watch);
    let tx = open_watch(send);
    tx.unbounded_send(json!({"type": "ERROR", "object": status(410, "Expired", None)}))
        .unwrap();
    let expired_at = Instant::now();
    let (watch, at, send) = next(&mut server).await;
    assert!(!watch, "a relist, not a watch from the expired version");
    assert_eq!(at - expired_at, Duration::ZERO, "no backoff after a 410");
    // b was deleted while the watch was away: the relist says so.
    respond(send, 200, &list(&["a.x.io", "c.x.io"], "20"));
    assert_eq!(names_until_init_done(&mut rx).await, ["a.x.io", "c.x.io"]);
    assert_eq!(*gone.lock().unwrap(), ["b.x.io"]);

    // The same when the 410 is the watch request's own response.
    let (watch, _, send) = next(&mut server).await;
    assert!(watch);
    respond(send, 410, &status(410, "Gone", None));
    let t = Instant::now();
    let (watch, at, send) = next(&mut server).await;
    assert!(!watch);
    assert_eq!(at - t, Duration::ZERO);
    respond(send, 200, &list(&["a.x.io"], "30"));
    names_until_init_done(&mut rx).await;
}

#[tokio::test(start_paused = true)]
async fn errors_back_off_up_to_the_cap_and_success_resets_it() {
    let (mut server, mut rx, _, health) = start(settings());
    // The API server is away: every list fails.
    let mut waits = Vec::new();
    let (_, mut last, send) = next(&mut server).await;
    respond(send, 503, &status(503, "ServiceUnavailable", None));
    for _ in 0..8 {
        let (_, at, send) = next(&mut server).await;
        waits.push(at - last);
        last = at;
        respond(send, 503, &status(503, "ServiceUnavailable", None));
    }
    assert!(
        waits[0] >= Duration::from_millis(100) && waits[0] <= Duration::from_millis(200),
        "{waits:?}"
    );
    assert!(
        waits[1] > Duration::from_millis(200) - Duration::from_millis(1),
        "{waits:?}"
    );
    assert!(
        waits.iter().all(|w| *w <= Duration::from_secs(2)),
        "{waits:?}"
    );
    assert!(
        waits[7] >= Duration::from_secs(1),
        "capped at 2 s, jittered from half: {waits:?}"
    );
    // Failing for 12 s: not ready after 10 s.
    assert!(health.healthy(Duration::from_secs(10)).is_err());

    // Back: the list succeeds, the backoff starts over.
    let (_, _, send) = next(&mut server).await;
    respond(send, 200, &list(&["a.x.io"], "5"));
    names_until_init_done(&mut rx).await;
    assert!(health.healthy(Duration::from_secs(10)).is_ok());
    let (watch, _, send) = next(&mut server).await;
    assert!(watch);
    respond(send, 500, &status(500, "InternalError", None));
    let t = Instant::now();
    let (watch, at, send) = next(&mut server).await;
    assert!(watch, "the watch resumes from where it was");
    assert!(at - t <= Duration::from_millis(200), "reset: {:?}", at - t);
    let tx = open_watch(send);
    tx.unbounded_send(json!({"type": "ADDED", "object": meta("b.x.io", "6")}))
        .unwrap();
    match rx.next().await.unwrap() {
        Event::Apply(o) => assert_eq!(o.name_any(), "b.x.io"),
        e => panic!("{e:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn throttled_lists_wait_retry_after() {
    let (mut server, mut rx, _, _) = start(settings());
    let (_, _, send) = next(&mut server).await;
    respond(send, 429, &status(429, "TooManyRequests", Some(3)));
    let t = Instant::now();
    let (_, at, send) = next(&mut server).await;
    assert!(at - t >= Duration::from_secs(3), "{:?}", at - t);
    assert!(at - t < Duration::from_millis(3100), "{:?}", at - t);
    respond(send, 200, &list(&["a.x.io"], "1"));
    names_until_init_done(&mut rx).await;
}

#[tokio::test(start_paused = true)]
async fn a_silent_watch_is_restarted() {
    let (mut server, mut rx, _, _) = start(settings());
    let (_, _, send) = next(&mut server).await;
    respond(send, 200, &list(&["a.x.io"], "1"));
    names_until_init_done(&mut rx).await;
    let (watch, opened, send) = next(&mut server).await;
    assert!(watch);
    // Open, but nothing comes: no events, no bookmarks (a hung connection).
    let _silent = open_watch(send);
    let (watch, at, send) = next(&mut server).await;
    assert!(watch, "resumed from its resource version");
    let waited = at - opened;
    assert!(
        waited >= Duration::from_secs(5) && waited <= Duration::from_secs(11),
        "restarted after {waited:?} (timeout 5 s + 5 s)"
    );
    // The resumed watch delivers.
    let tx = open_watch(send);
    tx.unbounded_send(json!({"type": "ADDED", "object": meta("b.x.io", "2")}))
        .unwrap();
    match rx.next().await.unwrap() {
        Event::Apply(o) => assert_eq!(o.name_any(), "b.x.io"),
        e => panic!("{e:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_quiet_resumed_watch_is_healthy_again() {
    let (mut server, mut rx, _, health) = start(settings());
    let (_, _, send) = next(&mut server).await;
    respond(send, 200, &list(&["a.x.io"], "1"));
    names_until_init_done(&mut rx).await;
    // The API server is away for a while: every watch attempt fails.
    for _ in 0..20 {
        let (watch, _, send) = next(&mut server).await;
        assert!(watch);
        respond(send, 503, &status(503, "ServiceUnavailable", None));
    }
    assert!(health.healthy(Duration::from_secs(10)).is_err());
    // Back, and nothing changed meanwhile: the resumed watch has no event to give.
    let (watch, _, send) = next(&mut server).await;
    assert!(watch);
    let _quiet = open_watch(send);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(health.healthy(Duration::from_secs(10)), Ok(()));
}

#[tokio::test(start_paused = true)]
async fn a_hanging_reconnection_is_not_a_restored_watch() {
    // In a pod, while the API server is away, a connection attempt can hang for seconds with
    // neither an answer nor an error: that quiet is no sign the watch works again.
    let (mut server, mut rx, _, health) = start(settings());
    let (_, _, send) = next(&mut server).await;
    respond(send, 200, &list(&["a.x.io"], "1"));
    names_until_init_done(&mut rx).await;
    let (watch, _, send) = next(&mut server).await;
    assert!(watch);
    respond(send, 503, &status(503, "ServiceUnavailable", None));
    // The next attempt is never answered.
    let (watch, _, _hanging) = next(&mut server).await;
    assert!(watch);
    tokio::time::sleep(Duration::from_secs(40)).await;
    let why = health.healthy(Duration::from_secs(30)).unwrap_err();
    assert!(why.contains("crd: failing for"), "{why}");
    let failing = health.failing();
    assert!(failing[0].1 >= 40.0, "{failing:?}");
}
