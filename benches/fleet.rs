//! Fleet scale: the operator (the real `celcost controller` binary, a subprocess) against a fake
//! API server in this process on loopback, serving N CRDs renamed from the corpus
//! (`../shared/corpus/crds`, or `$CELCOST_CORPUS`), N/20 ValidatingAdmissionPolicies typed over
//! them, and the CostReport CRD; it accepts the reports' writes and counts them. A cold start
//! runs until every target has a report with a status.
//!
//! `cargo bench --bench fleet -- 2000 10000 20000` (default 2000). Env: `CELCOST_FLEET_LATENCY_MS`
//! adds that much latency to every write (a slow API server); `CELCOST_FLEET_FAIL_PERCENT`
//! answers that share of writes with a 503 (a struggling one); `CELCOST_FLEET_TIMEOUT_SECONDS`
//! (default 1800) gives up on a run; `CELCOST_FLEET_ARGS` adds arguments to the operator's command
//! line (e.g. `--watch-buffer-mib 4`); `CELCOST_FLEET_WRAP` runs it under a command (e.g.
//! `heaptrack -o /tmp/fleet`, with the binary built `--features system-allocator`);
//! `CELCOST_FLEET_LOG` sets its `RUST_LOG` (default `info`), and `CELCOST_FLEET_KEEP_LOG` keeps
//! its log (otherwise kept only when a report is missing).
//!
//! Per size it prints: CRDs, policies, wall time to the last report, the operator's CPU (total
//! and per target), its peak RSS (VmHWM), the writes (total, most to one report), target reads
//! (GETs of a CRD or policy: the CRDs policies are typed over, and targets the watch did not
//! spare), the writes the fake failed and the retries (reconciles after a failure). Prints
//! numbers; asserts nothing.
//!
//! The fake serves what the operator asks for: paginated lists (`limit`/`continue`) and watches
//! (bookmarks; quiet otherwise) of CRDs and policies as whole objects, of reports as metadata
//! (`as=PartialObjectMetadata`), GETs of CRDs, server-side apply, JSON and merge patches of
//! reports and their status, creates, deletes and events. Its objects are generated when served
//! (a corpus template with a new name), so the fake itself holds no fleet of objects.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "support/corpus.rs"]
mod corpus;
use corpus::corpus_crds;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const VAPS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const REPORTS: &str = "/apis/celcost.io/v1alpha1/costreports";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

/// One policy per this many CRDs.
const CRDS_PER_POLICY: usize = 20;

struct Fleet {
    /// Corpus CRDs as JSON values (templates).
    corpus: Vec<Value>,
    crds: usize,
    vaps: usize,
    rv: AtomicU64,
    reports: Mutex<HashMap<String, Value>>,
    /// Writes per report (apply, patch, status, create).
    writes: Mutex<HashMap<String, u32>>,
    /// GETs of a CRD or policy, by name.
    target_gets: AtomicU64,
    events: AtomicU64,
    /// Reports with a status.
    done: AtomicU64,
    report_events: tokio::sync::broadcast::Sender<(String, Value)>,
    latency: Duration,
    fail_percent: u64,
    /// Writes answered with a 503 (`fail_percent`).
    failed_writes: AtomicU64,
    requests: AtomicU64,
}

impl Fleet {
    fn template(&self, i: usize) -> &Value {
        &self.corpus[i % self.corpus.len()]
    }

    fn crd_group(&self, i: usize) -> String {
        format!(
            "s{i}.{}",
            self.template(i)["spec"]["group"].as_str().unwrap_or("x")
        )
    }

    fn crd_name(&self, i: usize) -> String {
        let plural = self.template(i)["spec"]["names"]["plural"]
            .as_str()
            .unwrap_or("x");
        format!("{plural}.{}", self.crd_group(i))
    }

    fn crd(&self, i: usize) -> Value {
        let t = self.template(i);
        let mut spec = t["spec"].clone();
        spec["group"] = json!(self.crd_group(i));
        if let Some(o) = spec.as_object_mut() {
            o.remove("conversion");
        }
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": self.crd_name(i), "uid": format!("crd-uid-{i}"),
                "generation": 1, "resourceVersion": format!("{}", i + 1),
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"celcost.io/bench": "true"},
            },
            "spec": spec,
            "status": {"conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ], "acceptedNames": t["spec"]["names"].clone(), "storedVersions": ["v1"]},
        })
    }

    fn vap_name(i: usize) -> String {
        format!("fleet-policy-{i}")
    }

    fn vap(&self, i: usize) -> Value {
        // Typed over CRD i * CRDS_PER_POLICY: matches its resource.
        let c = i * CRDS_PER_POLICY;
        let t = self.template(c);
        let plural = t["spec"]["names"]["plural"].as_str().unwrap_or("x");
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {
                "name": Self::vap_name(i), "uid": format!("vap-uid-{i}"),
                "generation": 1, "resourceVersion": format!("{}", self.crds + i + 1),
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [self.crd_group(c)],
                    "apiVersions": [t["spec"]["versions"][0]["name"].clone()],
                    "operations": ["CREATE", "UPDATE"], "resources": [plural],
                }]},
                "validations": [
                    {"expression": "object.metadata.name.size() < 64", "message": "short names"},
                    {"expression": "!has(object.metadata.labels) || object.metadata.labels.all(k, k.size() < 64)"},
                ],
            },
        })
    }

    fn next_rv(&self) -> u64 {
        self.rv.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn targets(&self) -> usize {
        self.crds + self.vaps
    }
}

fn json_response(code: StatusCode, v: &Value) -> Response {
    (
        code,
        [("content-type", "application/json")],
        serde_json::to_vec(v).unwrap(),
    )
        .into_response()
}

fn status(code: u16, reason: &str, message: &str) -> Response {
    json_response(
        StatusCode::from_u16(code).unwrap(),
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "reason": reason, "message": message, "code": code}),
    )
}

fn query(uri: &Uri) -> HashMap<String, String> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(x) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(x);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn metadata_only(obj: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj["metadata"].clone()})
}

fn wants_metadata(headers: &HeaderMap) -> bool {
    headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("PartialObjectMetadata"))
}

/// A watch that stays quiet but for bookmarks, until `timeoutSeconds`.
fn quiet_watch(
    fleet: &Arc<Fleet>,
    q: &HashMap<String, String>,
    kind: &str,
    api_version: &str,
) -> Response {
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .unwrap_or(60u64);
    let rv = fleet.rv.load(Ordering::SeqCst).to_string();
    let bookmark = json!({"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
        "metadata": {"resourceVersion": rv}}});
    let line = Bytes::from(format!("{bookmark}\n"));
    let stream = futures::stream::unfold(0u64, move |n| {
        let line = line.clone();
        async move {
            if n > 0 {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            if n * 5 >= timeout {
                return None;
            }
            Some((Ok::<_, std::io::Error>(line), n + 1))
        }
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// A list page of targets `make(i)` for i in 0..n, from `continue` on.
fn list_page(
    fleet: &Arc<Fleet>,
    q: &HashMap<String, String>,
    n: usize,
    kind: &str,
    meta: bool,
    make: impl Fn(usize) -> Value,
) -> Response {
    let start: usize = q.get("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
    let limit: usize = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(usize::MAX);
    let end = start.saturating_add(limit).min(n);
    let items: Vec<Value> = (start..end)
        .map(|i| {
            if meta {
                metadata_only(&make(i))
            } else {
                make(i)
            }
        })
        .collect();
    let mut metadata = json!({"resourceVersion": fleet.rv.load(Ordering::SeqCst).to_string()});
    if end < n {
        metadata["continue"] = json!(end.to_string());
        metadata["remainingItemCount"] = json!(n - end);
    }
    let (api_version, list_kind) = if meta {
        (
            "meta.k8s.io/v1".to_string(),
            "PartialObjectMetadataList".to_string(),
        )
    } else {
        (
            if kind == "CustomResourceDefinition" {
                "apiextensions.k8s.io/v1"
            } else {
                "admissionregistration.k8s.io/v1"
            }
            .to_string(),
            format!("{kind}List"),
        )
    };
    json_response(
        StatusCode::OK,
        &json!({"apiVersion": api_version, "kind": list_kind, "metadata": metadata, "items": items}),
    )
}

async fn handle(
    axum::extract::State(fleet): axum::extract::State<Arc<Fleet>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    fleet.requests.fetch_add(1, Ordering::Relaxed);
    let path = uri.path().to_string();
    let q = query(&uri);
    let meta = wants_metadata(&headers);
    let watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    match (method.clone(), path.as_str()) {
        (Method::GET, "/version") => json_response(
            StatusCode::OK,
            &json!({"major": "1", "minor": "36", "gitVersion": "v1.36.2", "gitCommit": "fake",
                    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.26",
                    "compiler": "gc", "platform": "linux/amd64"}),
        ),
        (Method::GET, CRDS) if watch => quiet_watch(
            &fleet,
            &q,
            "CustomResourceDefinition",
            "apiextensions.k8s.io/v1",
        ),
        (Method::GET, CRDS) => list_page(
            &fleet,
            &q,
            fleet.crds,
            "CustomResourceDefinition",
            meta,
            |i| fleet.crd(i),
        ),
        (Method::GET, VAPS) if watch => quiet_watch(
            &fleet,
            &q,
            "ValidatingAdmissionPolicy",
            "admissionregistration.k8s.io/v1",
        ),
        (Method::GET, VAPS) => list_page(
            &fleet,
            &q,
            fleet.vaps,
            "ValidatingAdmissionPolicy",
            meta,
            |i| fleet.vap(i),
        ),
        (Method::GET, p) if p.starts_with(CRDS) => {
            fleet.target_gets.fetch_add(1, Ordering::Relaxed);
            let name = &p[CRDS.len() + 1..];
            // Names are `<plural>.s<i>.<group>`.
            let i = name
                .split('.')
                .nth(1)
                .and_then(|s| s.strip_prefix('s'))
                .and_then(|s| s.parse::<usize>().ok());
            match i.filter(|&i| i < fleet.crds && fleet.crd_name(i) == name) {
                Some(i) => json_response(StatusCode::OK, &fleet.crd(i)),
                None => status(404, "NotFound", "not found"),
            }
        }
        (Method::GET, p) if p.starts_with(VAPS) => {
            fleet.target_gets.fetch_add(1, Ordering::Relaxed);
            let name = &p[VAPS.len() + 1..];
            match name
                .strip_prefix("fleet-policy-")
                .and_then(|s| s.parse::<usize>().ok())
            {
                Some(i) if i < fleet.vaps => json_response(StatusCode::OK, &fleet.vap(i)),
                _ => status(404, "NotFound", "not found"),
            }
        }
        (Method::GET, p) if p.starts_with("/apis/admissionregistration.k8s.io/") => status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
        (Method::GET, REPORTS) if watch => report_watch(&fleet, &q),
        (Method::GET, REPORTS) => {
            let selector = q.get("labelSelector").cloned().unwrap_or_default();
            let reports = fleet.reports.lock().unwrap();
            let items: Vec<Value> = reports
                .values()
                .filter(|r| matches_selector(r, &selector))
                .map(|r| if meta { metadata_only(r) } else { r.clone() })
                .collect();
            json_response(
                StatusCode::OK,
                &json!({"apiVersion": if meta {"meta.k8s.io/v1"} else {"celcost.io/v1alpha1"},
                        "kind": if meta {"PartialObjectMetadataList"} else {"CostReportList"},
                        "metadata": {"resourceVersion": fleet.rv.load(Ordering::SeqCst).to_string()},
                        "items": items}),
            )
        }
        (Method::POST, EVENTS) => {
            fleet.events.fetch_add(1, Ordering::Relaxed);
            let mut v: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
            v["metadata"]["resourceVersion"] = json!(fleet.next_rv().to_string());
            json_response(StatusCode::CREATED, &v)
        }
        (m, p) if p.starts_with(REPORTS) => report_request(&fleet, m, p, &headers, &body).await,
        _ => status(
            404,
            "NotFound",
            &format!("fake API server: no {method} {path}"),
        ),
    }
}

fn matches_selector(report: &Value, selector: &str) -> bool {
    selector
        .split(',')
        .filter(|s| !s.is_empty())
        .all(|kv| match kv.split_once('=') {
            Some((k, v)) => report["metadata"]["labels"][k] == v,
            None => true,
        })
}

fn report_watch(fleet: &Arc<Fleet>, q: &HashMap<String, String>) -> Response {
    let selector = q.get("labelSelector").cloned().unwrap_or_default();
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .unwrap_or(60u64);
    let rx = fleet.report_events.subscribe();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    let stream = futures::stream::unfold(rx, move |mut rx| {
        let selector = selector.clone();
        async move {
            loop {
                let ev = tokio::time::timeout_at(deadline, rx.recv()).await;
                match ev {
                    Ok(Ok((type_, obj))) => {
                        if !matches_selector(&obj, &selector) {
                            continue;
                        }
                        let line = format!(
                            "{}\n",
                            json!({"type": type_, "object": metadata_only(&obj)})
                        );
                        return Some((Ok::<_, std::io::Error>(Bytes::from(line)), rx));
                    }
                    Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => continue,
                    _ => return None,
                }
            }
        }
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}

async fn report_request(
    fleet: &Arc<Fleet>,
    method: Method,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let rest = path[REPORTS.len()..].trim_start_matches('/');
    let (name, sub) = match rest.split_once('/') {
        Some((n, s)) => (n.to_string(), Some(s.to_string())),
        None => (rest.to_string(), None),
    };
    if method == Method::GET {
        let r = fleet.reports.lock().unwrap().get(&name).cloned();
        return match r {
            Some(r) => json_response(StatusCode::OK, &r),
            None => status(404, "NotFound", "not found"),
        };
    }
    if method == Method::DELETE {
        let r = fleet.reports.lock().unwrap().remove(&name);
        return match r {
            Some(r) => {
                let _ = fleet.report_events.send(("DELETED".into(), r.clone()));
                json_response(StatusCode::OK, &r)
            }
            None => status(404, "NotFound", "not found"),
        };
    }
    // A write: slow and failing as asked.
    if !fleet.latency.is_zero() {
        tokio::time::sleep(fleet.latency).await;
    }
    if fleet.fail_percent > 0 && fastrand::u64(0..100) < fleet.fail_percent {
        fleet.failed_writes.fetch_add(1, Ordering::Relaxed);
        return status(503, "ServiceUnavailable", "fake: overloaded");
    }
    let input: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return status(400, "BadRequest", &format!("body: {e}")),
    };
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let (name, created, obj) = {
        let mut reports = fleet.reports.lock().unwrap();
        let name = if method == Method::POST {
            input["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        } else {
            name
        };
        let existing = reports.get(&name).cloned();
        let mut obj = match (&existing, method.clone()) {
            (Some(_), Method::POST) => return status(409, "AlreadyExists", "already exists"),
            (None, Method::PATCH) if !content_type.contains("apply-patch") => {
                return status(404, "NotFound", "not found");
            }
            (Some(e), _) => e.clone(),
            (None, _) => json!({"apiVersion": "celcost.io/v1alpha1", "kind": "CostReport",
                "metadata": {"name": name, "uid": format!("report-uid-{}", fleet.next_rv()),
                             "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1}}),
        };
        let is_status = sub.as_deref() == Some("status");
        if content_type.contains("json-patch") {
            for op in input.as_array().cloned().unwrap_or_default() {
                let p = op["path"].as_str().unwrap_or("");
                if (op["op"] == "add" || op["op"] == "replace") && p == "/status" {
                    obj["status"] = op["value"].clone();
                }
            }
        } else {
            // Apply, merge patch, create: top-level members (status only on /status).
            for (k, v) in input.as_object().cloned().unwrap_or_default() {
                match k.as_str() {
                    "metadata" => {
                        for mk in ["labels", "ownerReferences", "annotations"] {
                            if !v[mk].is_null() {
                                obj["metadata"][mk] = v[mk].clone();
                            }
                        }
                    }
                    "status" if !is_status && method != Method::POST => {}
                    "apiVersion" | "kind" => {}
                    _ => obj[k] = v,
                }
            }
        }
        obj["metadata"]["resourceVersion"] = json!(fleet.next_rv().to_string());
        let had_status = existing.as_ref().is_some_and(|e| !e["status"].is_null());
        if !had_status && !obj["status"].is_null() {
            fleet.done.fetch_add(1, Ordering::SeqCst);
        }
        reports.insert(name.clone(), obj.clone());
        (name, existing.is_none(), obj)
    };
    *fleet.writes.lock().unwrap().entry(name).or_insert(0) += 1;
    let _ = fleet.report_events.send((
        if created { "ADDED" } else { "MODIFIED" }.into(),
        obj.clone(),
    ));
    json_response(
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        &obj,
    )
}

/// utime + stime of a process, seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of stat; after ") " the third field is index 0.
    (t(11) + t(12)) / ticks
}

fn status_kib(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn metric(addr: SocketAddr, name: &str) -> f64 {
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return f64::NAN;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .fold(0.0, |a, b| a + b)
}

struct Row {
    crds: usize,
    vaps: usize,
    wall: f64,
    cpu: f64,
    peak_mib: f64,
    writes: u64,
    max_writes: u32,
    target_gets: u64,
    failed_writes: u64,
    retries: f64,
    events: u64,
    missing: u64,
}

async fn run(corpus: Vec<Value>, n: usize, timeout: Duration) -> Row {
    let vaps = n / CRDS_PER_POLICY;
    let (tx, _) = tokio::sync::broadcast::channel(1 << 16);
    let fleet = Arc::new(Fleet {
        corpus,
        crds: n,
        vaps,
        rv: AtomicU64::new((n + vaps + 10) as u64),
        reports: Mutex::default(),
        writes: Mutex::default(),
        target_gets: AtomicU64::new(0),
        events: AtomicU64::new(0),
        done: AtomicU64::new(0),
        report_events: tx,
        latency: Duration::from_millis(
            std::env::var("CELCOST_FLEET_LATENCY_MS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
        ),
        fail_percent: std::env::var("CELCOST_FLEET_FAIL_PERCENT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        failed_writes: AtomicU64::new(0),
        requests: AtomicU64::new(0),
    });
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(fleet.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    let dir = std::env::temp_dir().join(format!("celcost-fleet-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{addr}\n\
             users:\n- name: fake\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n\
             current-context: fake\n"
        ),
    )
    .unwrap();
    let metrics_addr: SocketAddr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let log = std::fs::File::create(dir.join("operator.log")).unwrap();
    let started = Instant::now();
    // `CELCOST_FLEET_WRAP`: a command the operator runs under (a heap profiler).
    let wrap: Vec<String> = std::env::var("CELCOST_FLEET_WRAP")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    let mut command = match wrap.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(env!("CARGO_BIN_EXE_celcost"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_celcost")),
    };
    let mut child: Child = command
        .args([
            "controller",
            "--listen-address",
            "127.0.0.1:0",
            "--metrics-bind-address",
            &metrics_addr.to_string(),
            "--metrics-secure=false",
            "--distribution",
            "kubernetes",
            "--kubernetes-version",
            "1.36",
            "--leader-elect=false",
            "--webhook=false",
        ])
        .args(
            std::env::var("CELCOST_FLEET_ARGS")
                .unwrap_or_default()
                .split_whitespace(),
        )
        .env("KUBECONFIG", &kubeconfig)
        .env(
            "RUST_LOG",
            std::env::var("CELCOST_FLEET_LOG").unwrap_or_else(|_| "info".into()),
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start the operator");
    let pid = child.id();
    let targets = fleet.targets() as u64;
    let mut peak = 0;
    let mut last_print = Instant::now();
    while fleet.done.load(Ordering::SeqCst) < targets && started.elapsed() < timeout {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(status_kib(pid, "VmHWM:"));
        if let Ok(Some(st)) = child.try_wait() {
            eprintln!(
                "operator exited: {st}; see {}",
                dir.join("operator.log").display()
            );
            break;
        }
        if last_print.elapsed() > Duration::from_secs(30) {
            last_print = Instant::now();
            eprintln!(
                "  … {n}: {:.0} s, {} of {targets} reports, RSS {} MiB",
                started.elapsed().as_secs_f64(),
                fleet.done.load(Ordering::SeqCst),
                status_kib(pid, "VmRSS:") / 1024
            );
        }
    }
    let wall = started.elapsed().as_secs_f64();
    peak = peak.max(status_kib(pid, "VmHWM:"));
    let cpu = cpu_seconds(pid);
    // Let the last writes' events come back, then read the operator's counters.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let retries = metric(metrics_addr, "celcost_reconcile_retries_total");
    // Stopped as a pod is (SIGTERM, then SIGKILL after 10 s): what it prints on the way out
    // (`MIMALLOC_SHOW_STATS=1`) goes to its log.
    // SAFETY: signals the child this function started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let stop = Instant::now();
    while stop.elapsed() < Duration::from_secs(10) && matches!(child.try_wait(), Ok(None)) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    server.abort();
    let writes = fleet.writes.lock().unwrap();
    let row = Row {
        crds: n,
        vaps,
        wall,
        cpu,
        peak_mib: peak as f64 / 1024.0,
        writes: writes.values().map(|&w| u64::from(w)).sum(),
        max_writes: writes.values().copied().max().unwrap_or(0),
        target_gets: fleet.target_gets.load(Ordering::Relaxed),
        failed_writes: fleet.failed_writes.load(Ordering::Relaxed),
        retries,
        events: fleet.events.load(Ordering::Relaxed),
        missing: targets - fleet.done.load(Ordering::SeqCst).min(targets),
    };
    if row.missing == 0 && std::env::var_os("CELCOST_FLEET_KEEP_LOG").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("operator log kept: {}", dir.join("operator.log").display());
    }
    row
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() { vec![2000] } else { sizes };
    let corpus = corpus_crds();
    if corpus.is_empty() {
        println!("SKIPPED fleet: no corpus CRDs (../shared/corpus/crds or $CELCOST_CORPUS)");
        return;
    }
    let bytes: usize = corpus
        .iter()
        .map(|c| serde_json::to_vec(c).map_or(0, |v| v.len()))
        .sum();
    println!(
        "fleet: {} corpus CRDs (mean {:.1} KiB as JSON), renamed; one policy per {CRDS_PER_POLICY} CRDs",
        corpus.len(),
        bytes as f64 / corpus.len() as f64 / 1024.0
    );
    let timeout = Duration::from_secs(
        std::env::var("CELCOST_FLEET_TIMEOUT_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1800),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for n in sizes {
        let row = rt.block_on(run(corpus.clone(), n, timeout));
        println!(
            "  {n} CRDs: {:.1} s, CPU {:.1} s, peak RSS {:.1} MiB, {} writes, {} missing",
            row.wall, row.cpu, row.peak_mib, row.writes, row.missing
        );
        rows.push(row);
    }
    println!();
    println!(
        "| CRDs | policies | wall s | operator CPU s | CPU ms/target | peak RSS MiB | writes | writes/report max | GETs of CRDs/policies | failed writes | retries | events | missing |"
    );
    println!(
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for r in rows {
        let t = (r.crds + r.vaps).max(1) as f64;
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {} | {} | {} | {} | {} | {} | {} |",
            r.crds,
            r.vaps,
            r.wall,
            r.cpu,
            r.cpu * 1000.0 / t,
            r.peak_mib,
            r.writes,
            r.max_writes,
            r.target_gets,
            r.failed_writes,
            r.retries,
            r.events,
            r.missing
        );
    }
}
