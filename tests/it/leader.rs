//! Leader election against a mock API server (tower-test), on tokio's paused clock: the Lease
//! requests of acquiring, renewing, taking over and releasing, and when a replica stops leading.

use std::time::Duration;

use celcost::controller::leader::{
    Elector, LeaderMetrics, Leadership, LeaseConfig, RunningElector,
};
use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio::time::Instant;
use tower_test::mock::{Handle, SendResponse};

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/celcost-system/leases";
/// Virtual time (the clock is paused and jumps to the next timer when everything waits).
const TIMEOUT: Duration = Duration::from_secs(120);

struct Call {
    method: Method,
    path: String,
    body: Value,
    send: SendResponse<Response<Body>>,
}

impl Call {
    fn respond(self, code: u16, body: &Value) {
        self.send.send_response(
            Response::builder()
                .status(StatusCode::from_u16(code).unwrap())
                .header("content-type", "application/json")
                .body(Body::from(serde_json::to_vec(body).unwrap()))
                .unwrap(),
        );
    }

    /// Stores the written lease with resourceVersion `rv` and answers with it.
    fn store(self, rv: &str) -> Value {
        let mut stored = self.body.clone();
        stored["metadata"]["resourceVersion"] = json!(rv);
        self.respond(200, &stored);
        stored
    }
}

struct Server(Handle<Request<Body>, Response<Body>>);

impl Server {
    async fn next(&mut self) -> Call {
        let (req, send) = tokio::time::timeout(TIMEOUT, self.0.next_request())
            .await
            .expect("a request in time")
            .expect("a request");
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let bytes = req.into_body().collect_bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        Call {
            method,
            path,
            body,
            send,
        }
    }

    async fn expect(&mut self, method: Method, path: &str) -> Call {
        let call = self.next().await;
        assert_eq!(
            (&call.method, call.path.as_str()),
            (&method, path),
            "unexpected call"
        );
        call
    }
}

fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})
}

fn status(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "message": format!("error {code}")})
}

fn lease(holder: &str, rv: &str, renew: &str, transitions: i32) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "celcost", "namespace": "celcost-system", "resourceVersion": rv},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                 "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": renew,
                 "leaseTransitions": transitions}
    })
}

struct Replica {
    server: Server,
    leadership: Leadership,
    running: Option<RunningElector>,
    registry: Registry,
}

impl Replica {
    fn metrics(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).unwrap();
        out
    }
}

/// A replica `me` with client-go's default durations (15 s / 10 s / 2 s).
fn replica(me: &str) -> Replica {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let mut registry = Registry::with_prefix("celcost");
    let metrics = LeaderMetrics::default().register(&mut registry);
    let config = LeaseConfig::new("celcost-system", "celcost", me);
    let (elector, leadership) = Elector::new(client, config, metrics);
    Replica {
        server: Server(handle),
        leadership,
        running: Some(RunningElector::spawn(elector)),
        registry,
    }
}

/// Lets the elector take a response in (the clock stays put).
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// Acquires by creating the lease; returns the stored lease.
async fn acquire_by_create(r: &mut Replica, me: &str) -> Value {
    r.server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await
        .respond(404, &not_found());
    let create = r.server.expect(Method::POST, LEASES).await;
    let spec = &create.body["spec"];
    assert_eq!(create.body["metadata"]["name"], "celcost");
    assert_eq!(spec["holderIdentity"], me);
    assert_eq!(spec["leaseDurationSeconds"], 15);
    assert_eq!(spec["leaseTransitions"], 0);
    assert!(spec["acquireTime"].is_string(), "{spec}");
    assert_eq!(spec["acquireTime"], spec["renewTime"]);
    let mut stored = create.body.clone();
    stored["metadata"]["resourceVersion"] = json!("1");
    assert!(!r.leadership.is_leader(), "not before the create succeeded");
    create.respond(201, &stored);
    settle().await;
    assert!(r.leadership.is_leader());
    stored
}

#[tokio::test(start_paused = true)]
async fn acquires_renews_and_releases() {
    let mut r = replica("a");
    let stored = acquire_by_create(&mut r, "a").await;
    let m = r.metrics();
    assert!(m.contains("celcost_leader 1"), "{m}");
    assert!(
        m.contains("celcost_leader_transitions_total{change=\"acquired\"} 1"),
        "{m}"
    );

    // Renewals: every retry period, an update of the lease last written (its resourceVersion
    // is the precondition), same holder and acquireTime, no new transition; no read before.
    let mut last = stored;
    let mut at = Instant::now();
    for rv in 2..5 {
        let renew = r
            .server
            .expect(Method::PUT, &format!("{LEASES}/celcost"))
            .await;
        assert_eq!(at.elapsed(), Duration::from_secs(2), "the retry period");
        at = Instant::now();
        let (spec, was) = (&renew.body["spec"], &last["spec"]);
        assert_eq!(
            renew.body["metadata"]["resourceVersion"],
            last["metadata"]["resourceVersion"]
        );
        assert_eq!(spec["holderIdentity"], "a");
        assert_eq!(spec["acquireTime"], was["acquireTime"]);
        assert_eq!(spec["leaseTransitions"], 0);
        assert_eq!(spec["leaseDurationSeconds"], 15);
        assert!(spec["renewTime"].as_str() >= was["renewTime"].as_str());
        last = renew.store(&rv.to_string());
        settle().await;
        assert!(r.leadership.is_leader());
    }

    // SIGTERM: the replica stops writing, then gives the lease up: no holder, 1 s, on the
    // last resourceVersion (it never clears a lease another replica took meanwhile).
    let running = r.running.take().unwrap();
    let stop = tokio::spawn(running.stop());
    let release = r
        .server
        .expect(Method::PUT, &format!("{LEASES}/celcost"))
        .await;
    assert!(
        !r.leadership.is_leader(),
        "writes stop before the release is sent"
    );
    let spec = &release.body["spec"];
    assert_eq!(release.body["metadata"]["resourceVersion"], "4");
    assert!(
        spec.get("holderIdentity").is_none_or(Value::is_null),
        "{spec}"
    );
    assert_eq!(spec["leaseDurationSeconds"], 1);
    assert_eq!(spec["leaseTransitions"], 0);
    release.store("5");
    tokio::time::timeout(TIMEOUT, stop).await.unwrap().unwrap();
    let m = r.metrics();
    assert!(m.contains("celcost_leader 0"), "{m}");
    assert!(
        m.contains("celcost_leader_transitions_total{change=\"released\"} 1"),
        "{m}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_follower_takes_over_only_once_the_lease_expired() {
    let mut r = replica("a");
    let held = lease("b", "7", "2026-01-01T00:00:00.000000Z", 3);
    r.server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await
        .respond(200, &held);
    let first_seen = Instant::now();
    settle().await;
    assert!(!r.leadership.is_leader());
    // The holder renews once (a new renewTime): the wait starts again from then.
    let mut renewed_seen = None;
    let take = loop {
        let call = r.server.next().await;
        if call.method == Method::PUT {
            break call;
        }
        assert_eq!(
            (&call.method, call.path.as_str()),
            (&Method::GET, format!("{LEASES}/celcost").as_str())
        );
        // Followers retry every 2–2.4 s (jitter).
        if renewed_seen.is_none() && first_seen.elapsed() >= Duration::from_secs(6) {
            renewed_seen = Some(Instant::now());
        }
        if renewed_seen.is_some() {
            call.respond(200, &lease("b", "8", "2026-01-01T00:00:06.000000Z", 3));
        } else {
            call.respond(200, &held);
        }
        settle().await;
        assert!(!r.leadership.is_leader(), "the lease is b's");
    };
    // Taken 15 s (the lease duration, on this replica's clock) after the renewal was seen, and
    // promptly then (not a whole retry period late).
    let waited = renewed_seen.expect("the renewal was served").elapsed();
    assert!(
        waited >= Duration::from_secs(15) && waited <= Duration::from_millis(15_100),
        "{waited:?}"
    );
    let spec = &take.body["spec"];
    assert_eq!(take.body["metadata"]["resourceVersion"], "8");
    assert_eq!(spec["holderIdentity"], "a");
    assert_eq!(
        spec["leaseTransitions"], 4,
        "a new holder: one more transition"
    );
    assert_ne!(spec["acquireTime"], "2026-01-01T00:00:00.000000Z");
    assert_eq!(spec["acquireTime"], spec["renewTime"]);
    take.store("9");
    settle().await;
    assert!(r.leadership.is_leader());
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_at_the_next_attempt() {
    let mut r = replica("a");
    let mut released = lease("b", "7", "2026-01-01T00:00:00.000000Z", 3);
    released["spec"]["holderIdentity"] = Value::Null;
    released["spec"]["leaseDurationSeconds"] = json!(1);
    r.server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await
        .respond(200, &released);
    let take = r
        .server
        .expect(Method::PUT, &format!("{LEASES}/celcost"))
        .await;
    assert_eq!(take.body["spec"]["holderIdentity"], "a");
    assert_eq!(take.body["spec"]["leaseDurationSeconds"], 15);
    assert_eq!(take.body["spec"]["leaseTransitions"], 4);
    take.store("8");
    settle().await;
    assert!(r.leadership.is_leader());
}

#[tokio::test(start_paused = true)]
async fn two_replicas_racing_for_the_lease_one_loses_on_conflict() {
    let mut r = replica("a");
    r.server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await
        .respond(404, &not_found());
    // The other replica created it first.
    r.server
        .expect(Method::POST, LEASES)
        .await
        .respond(409, &status(409));
    settle().await;
    assert!(!r.leadership.is_leader());
    // It reads the lease at its next attempt and follows.
    r.server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await
        .respond(200, &lease("b", "1", "2026-01-01T00:00:00.000000Z", 0));
    settle().await;
    assert!(!r.leadership.is_leader());
    let m = r.metrics();
    assert!(m.contains("celcost_leader 0"), "{m}");
}

#[tokio::test(start_paused = true)]
async fn a_lease_taken_over_ends_the_term_at_once() {
    let mut r = replica("a");
    acquire_by_create(&mut r, "a").await;
    // The renewal conflicts: someone wrote the lease. Read it: b holds it now.
    r.server
        .expect(Method::PUT, &format!("{LEASES}/celcost"))
        .await
        .respond(409, &status(409));
    r.server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await
        .respond(200, &lease("b", "3", "2026-01-01T00:00:30.000000Z", 1));
    settle().await;
    assert!(!r.leadership.is_leader());
    let m = r.metrics();
    assert!(m.contains("celcost_leader 0"), "{m}");
    assert!(
        m.contains("celcost_leader_transitions_total{change=\"lost\"} 1"),
        "{m}"
    );
    // Following now: it reads, it does not write (b's lease is fresh).
    r.server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await
        .respond(200, &lease("b", "3", "2026-01-01T00:00:30.000000Z", 1));
    settle().await;
    assert!(!r.leadership.is_leader());
    // Stopping a follower releases nothing.
    let running = r.running.take().unwrap();
    tokio::time::timeout(TIMEOUT, running.stop())
        .await
        .expect("stops at once");
    assert!(
        tokio::time::timeout(Duration::from_secs(5), r.server.0.next_request())
            .await
            .map_or(true, |r| r.is_none()),
        "no request after a follower stopped"
    );
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_stops_writing_at_its_renew_deadline() {
    let mut r = replica("a");
    acquire_by_create(&mut r, "a").await;
    // The start of the last successful write: the term ends 10 s (the renew deadline) after.
    let deadline = Instant::now() + Duration::from_secs(10);
    // Renewals at 2, 4, 6 and 8 s fail (the API server answers 500).
    for _ in 0..4 {
        let call = r
            .server
            .expect(Method::PUT, &format!("{LEASES}/celcost"))
            .await;
        assert!(Instant::now() < deadline);
        assert!(r.leadership.is_leader(), "still within the renew deadline");
        call.respond(500, &status(500));
        settle().await;
    }
    // The term ends at the deadline itself, whatever the elector is doing.
    tokio::time::sleep_until(deadline - Duration::from_millis(1)).await;
    assert!(r.leadership.is_leader());
    tokio::time::sleep_until(deadline).await;
    assert!(!r.leadership.is_leader(), "not renewed within the deadline");
    // Then it follows: it reads the lease before writing it again.
    let call = r
        .server
        .expect(Method::GET, &format!("{LEASES}/celcost"))
        .await;
    call.respond(500, &status(500));
    settle().await;
    assert!(!r.leadership.is_leader());
    let m = r.metrics();
    assert!(m.contains("celcost_leader 0"), "{m}");
    assert!(
        m.contains("celcost_leader_transitions_total{change=\"lost\"} 1"),
        "{m}"
    );
}
