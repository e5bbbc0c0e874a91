//! Watches that come back as soon as their API server does, as client-go's reflectors do.
//!
//! kube's `watcher` runs the list/watch state machine; this wraps it with the recovery policy:
//! - **410 Gone / Expired** (the resource version is older than the watch cache, e.g. after an
//!   API server restart): relist at once, with no backoff, from a fresh watcher (kube keeps
//!   retrying the expired version when the 410 comes as the watch request's response);
//! - **429** (API Priority and Fairness): wait `Retry-After` (the Status' `retryAfterSeconds`),
//!   then go on; it is throttling, not an outage;
//! - **anything else** (connection refused, timeouts, 5xx): jittered exponential backoff from
//!   [`WatchSettings::min_backoff`] to [`WatchSettings::max_backoff`] (2 s by default). The cap is
//!   low because an API server comes back in seconds after a restart or an upgrade and a watch
//!   is back only when it has relisted; at 2 s a watch that has been down for minutes makes one
//!   connection attempt every 1–2 s (jitter from half to the full delay), a load a recovering
//!   API server does not notice, and is back at most 2 s after its API server.
//! - the backoff is reset by the first successful list or event.
//!
//! A silent watch (no events and no bookmarks) is restarted by kube's idle timeout: watches ask
//! for bookmarks and last [`WatchSettings::timeout`] on the server, and a watch that has said
//! nothing for that long plus 5 s is dropped and resumed.
//!
//! Every watch reports into [`Health`]: `/watches` fails while one has not listed yet or has
//! been failing for longer than [`WatchSettings::unhealthy_after`]; one log line when an outage
//! starts and one when it ends (with its duration), not one per retry; metrics count restarts
//! and relists and give the age of the last successful sync per watch.
//!
//! Errors do not leave this stream: the controller downstream would apply its own backoff to
//! every watch at once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::watcher::{self, Event};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::backoff::Backoff;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// How watches recover.
#[derive(Clone, Debug)]
pub struct WatchSettings {
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// Server-side watch timeout (seconds); a watch silent for this plus 5 s is restarted.
    pub timeout: u32,
    /// A watch failing for longer than this makes `/watches` fail.
    pub unhealthy_after: Duration,
    /// Wait after a 429 whose Status gives no `retryAfterSeconds`.
    pub default_retry_after: Duration,
    /// A failing watch that has been retried and then said nothing (no error, no event) for
    /// this long, while the API server has answered since its last error, is connected again:
    /// a resumed watch of a quiet resource has no event to give.
    pub quiet_restored: Duration,
}

impl Default for WatchSettings {
    fn default() -> Self {
        WatchSettings {
            min_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(2),
            timeout: 60,
            unhealthy_after: Duration::from_secs(30),
            default_retry_after: Duration::from_secs(1),
            quiet_restored: Duration::from_secs(3),
        }
    }
}

/// `watch="crd"|"vap"|"crd-reports"|...`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabels {
    pub watch: String,
}

/// `watch`, and why it restarted (`gone`, `throttled`, `error`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RestartLabels {
    pub watch: String,
    pub reason: String,
}

#[derive(Debug)]
struct State {
    listed: bool,
    last_sync: Option<Instant>,
    failing_since: Option<Instant>,
    /// The last error of the current outage.
    last_error: Option<Instant>,
    attempts: u64,
}

/// The state of every watch: `/watches` and the sync-age metric read it.
#[derive(Clone, Default)]
pub struct Health {
    watches: Arc<Mutex<HashMap<String, State>>>,
    /// When the API server last answered a request of this client with a 2xx (noted by
    /// [`Health::answers_layer`] on the client).
    answered: Arc<Mutex<Option<Instant>>>,
    restarts: Family<RestartLabels, Counter>,
    relists: Family<WatchLabels, Counter>,
    /// Told when a watch is restored after an outage ([`Health::restorations`]).
    restored: Arc<Mutex<Vec<futures::channel::mpsc::UnboundedSender<()>>>>,
}

impl Health {
    /// One item each time a watch is restored after failing: the targets whose reconcile
    /// failed meanwhile (and wait out their backoff) are worth a try at once.
    pub fn restorations(&self) -> futures::channel::mpsc::UnboundedReceiver<()> {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        self.restored.lock().expect("health lock").push(tx);
        rx
    }

    fn notify_restored(&self) {
        self.restored
            .lock()
            .expect("health lock")
            .retain(|tx| tx.unbounded_send(()).is_ok());
    }

    /// Registers the metrics: restarts, relists, and the age of each watch's last sync
    /// (computed when scraped).
    pub fn register(self, registry: &mut prometheus_client::registry::Registry) -> Self {
        registry.register(
            "watch_restarts",
            "Watch errors after which a watch was resumed, per watch and reason (gone: 410, relisted at once; throttled: 429; error: backoff)",
            self.restarts.clone(),
        );
        registry.register(
            "watch_relists",
            "Lists after the first, per watch (a relist follows a 410 or a restart)",
            self.relists.clone(),
        );
        registry.register_collector(Box::new(SyncAge(self.clone())));
        self
    }

    fn with<R>(&self, name: &str, f: impl FnOnce(&mut State) -> R) -> R {
        let mut w = self.watches.lock().expect("watch health lock");
        let s = w.entry(name.to_string()).or_insert(State {
            listed: false,
            last_sync: None,
            failing_since: None,
            last_error: None,
            attempts: 0,
        });
        f(s)
    }

    /// A layer for the client the watches use: it notes every 2xx answer of the API server. A
    /// watch that was failing and has gone quiet is healthy again only if the API server has
    /// answered since its last error (a resumed watch of a quiet resource has no event to give,
    /// but its request got a 200); a quiet spell alone is no evidence (a connection attempt can
    /// hang as long as the API server is away).
    pub fn answers_layer<B>(
        &self,
    ) -> tower::util::MapResponseLayer<
        impl FnOnce(http::Response<B>) -> http::Response<B> + Clone + Send + Sync + 'static,
    > {
        let answered = self.answered.clone();
        tower::util::MapResponseLayer::new(move |res: http::Response<B>| {
            if res.status().is_success() {
                *answered.lock().expect("answered lock") = Some(Instant::now());
            }
            res
        })
    }

    /// Whether the API server has answered since `name`'s last error.
    fn answered_since_last_error(&self, name: &str) -> bool {
        let answered = *self.answered.lock().expect("answered lock");
        let last_error = self.with(name, |s| s.last_error);
        match (answered, last_error) {
            (Some(a), Some(e)) => a > e,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// Whether every watch has listed and none has been failing for longer than
    /// `unhealthy_after`; else what is wrong.
    pub fn healthy(&self, unhealthy_after: Duration) -> Result<(), String> {
        let w = self.watches.lock().expect("watch health lock");
        let mut problems: Vec<String> = Vec::new();
        for (name, s) in w.iter() {
            if !s.listed {
                problems.push(format!("{name}: not listed yet"));
            } else if let Some(since) = s.failing_since
                && since.elapsed() > unhealthy_after
            {
                problems.push(format!(
                    "{name}: failing for {:.0} s",
                    since.elapsed().as_secs_f64()
                ));
            }
        }
        problems.sort();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Seconds each watch has been failing (0 when it works).
    pub fn failing(&self) -> Vec<(String, f64)> {
        self.seconds_per_watch(|s| Some(s.failing_since.map_or(0.0, |t| t.elapsed().as_secs_f64())))
    }

    /// Seconds since each watch's last successful list or event.
    pub fn sync_ages(&self) -> Vec<(String, f64)> {
        self.seconds_per_watch(|s| Some(s.last_sync?.elapsed().as_secs_f64()))
    }

    /// `seconds` of each watch that has them, by name.
    fn seconds_per_watch(&self, seconds: impl Fn(&State) -> Option<f64>) -> Vec<(String, f64)> {
        let w = self.watches.lock().expect("watch health lock");
        let mut v: Vec<(String, f64)> = w
            .iter()
            .filter_map(|(n, s)| Some((n.clone(), seconds(s)?)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// The `celcost_watch_last_sync_age_seconds` gauge, computed at scrape time.
#[derive(Debug)]
struct SyncAge(Health);

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health").finish_non_exhaustive()
    }
}

impl prometheus_client::collector::Collector for SyncAge {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        let gauge = prometheus_client::metrics::gauge::ConstGauge::new(0.0f64);
        for (name, help, values) in [
            (
                "watch_last_sync_age_seconds",
                "Seconds since the last successful list or event of each watch (a quiet watch ages too; a failing one is in watch_restarts)",
                self.0.sync_ages(),
            ),
            (
                "watch_failing_seconds",
                "Seconds each watch has been failing without an answer from the API server (0 while it works); /watches fails past --watch-unhealthy-after-seconds",
                self.0.failing(),
            ),
        ] {
            let mut family = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            for (watch, seconds) in values {
                let g = prometheus_client::metrics::gauge::ConstGauge::new(seconds);
                g.encode(family.encode_family(&WatchLabels { watch })?)?;
            }
        }
        Ok(())
    }
}

/// Why a watch stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 410: relist now.
    Gone,
    /// 429: wait this long.
    Throttled(Duration),
    /// Anything else: back off.
    Other,
}

/// How to recover from `e`.
pub fn classify(e: &watcher::Error, settings: &WatchSettings) -> Failure {
    let status = match e {
        watcher::Error::WatchError(s) => Some(&**s),
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(&**s),
        _ => None,
    };
    match status {
        Some(s) if s.code == 410 || s.reason == "Expired" || s.reason == "Gone" => Failure::Gone,
        Some(s) if s.code == 429 => Failure::Throttled(
            s.details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|&r| r > 0)
                .map_or(settings.default_retry_after, |r| {
                    Duration::from_secs(u64::from(r))
                }),
        ),
        _ => Failure::Other,
    }
}

/// What to call when a relist shows that objects were deleted while the watch was away.
pub type OnGone = Box<dyn Fn(&str) + Send + Sync>;

struct WatchTask<K> {
    name: String,
    make: Box<dyn Fn() -> BoxStream<'static, Result<Event<K>, watcher::Error>> + Send>,
    inner: BoxStream<'static, Result<Event<K>, watcher::Error>>,
    backoff: Backoff,
    settings: WatchSettings,
    health: Health,
    /// Names known before the current (re)list, and the names it has listed so far.
    known: HashSet<String>,
    listing: Option<HashSet<String>>,
    lists: u64,
    on_gone: Option<OnGone>,
}

/// A watch of `name` from `make` (a kube `watcher` of the resource), recovering as described
/// in the module: only events come out, never errors.
pub fn resilient<K, M>(
    name: &str,
    make: M,
    settings: WatchSettings,
    health: Health,
    on_gone: Option<OnGone>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static + use<K, M>
where
    K: kube::Resource + Send + 'static,
    M: Fn() -> BoxStream<'static, Result<Event<K>, watcher::Error>> + Send + 'static,
{
    health.with(name, |_| ());
    let state = WatchTask {
        name: name.to_string(),
        inner: make(),
        make: Box::new(make),
        backoff: Backoff::jittered(settings.min_backoff, settings.max_backoff),
        settings,
        health,
        known: HashSet::new(),
        listing: None,
        lists: 0,
        on_gone,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            let failing = st.health.with(&st.name, |s| s.failing_since.is_some());
            let item = if failing {
                match tokio::time::timeout(st.settings.quiet_restored, st.inner.next()).await {
                    Ok(item) => item,
                    Err(_) => {
                        // Quiet: restored if the API server has answered since the last error
                        // (the resumed watch's request got its 200); else still trying.
                        if st.health.answered_since_last_error(&st.name) {
                            st.mark_up(false);
                        }
                        continue;
                    }
                }
            } else {
                st.inner.next().await
            };
            match item {
                Some(Ok(event)) => {
                    st.observe(&event);
                    return Some((Ok(event), st));
                }
                Some(Err(e)) => st.recover(e).await,
                None => {
                    // A watcher does not end; if it does, start again.
                    st.inner = (st.make)();
                }
            }
        }
    })
}

impl<K: kube::Resource> WatchTask<K> {
    /// An answer from the API server: the backoff starts over, an outage ends.
    fn succeeded(&mut self, event: &Event<K>) {
        self.mark_up(matches!(event, Event::InitDone));
    }

    /// The watch works (again); `listed` when a list has just completed.
    fn mark_up(&mut self, listed: bool) {
        self.backoff.reset();
        let now = Instant::now();
        let ended = self.health.with(&self.name, |s| {
            s.last_sync = Some(now);
            let ended = s
                .failing_since
                .take()
                .map(|since| (since.elapsed(), s.attempts));
            s.attempts = 0;
            s.last_error = None;
            if listed {
                s.listed = true;
            }
            ended
        });
        if let Some((lasted, attempts)) = ended {
            self.health.notify_restored();
            info!(
                watch = %self.name,
                outage_seconds = format!("{:.1}", lasted.as_secs_f64()),
                attempts,
                "watch restored"
            );
        }
    }

    fn observe(&mut self, event: &Event<K>) {
        // `Init` comes before the list request is sent (and again after each failed one): it
        // is not a sign of success. Everything else is an answer from the API server.
        if !matches!(event, Event::Init) {
            self.succeeded(event);
        }
        match event {
            Event::Init => {
                self.listing = Some(HashSet::new());
            }
            Event::InitApply(o) => {
                if let Some(l) = self.listing.as_mut() {
                    l.insert(o.name_any());
                }
            }
            Event::InitDone => {
                self.lists += 1;
                if self.lists > 1 {
                    self.health
                        .relists
                        .get_or_create(&WatchLabels {
                            watch: self.name.clone(),
                        })
                        .inc();
                }
                if let Some(listed) = self.listing.take() {
                    if let Some(f) = &self.on_gone {
                        for gone in self.known.difference(&listed) {
                            debug!(watch = %self.name, name = %gone, "deleted while the watch was away");
                            f(gone);
                        }
                    }
                    self.known = listed;
                }
            }
            Event::Apply(o) => {
                self.known.insert(o.name_any());
            }
            Event::Delete(o) => {
                self.known.remove(&o.name_any());
            }
        }
    }

    async fn recover(&mut self, e: watcher::Error) {
        let failure = classify(&e, &self.settings);
        let reason = match failure {
            Failure::Gone => "gone",
            Failure::Throttled(_) => "throttled",
            Failure::Other => "error",
        };
        self.health
            .restarts
            .get_or_create(&RestartLabels {
                watch: self.name.clone(),
                reason: reason.to_string(),
            })
            .inc();
        match failure {
            Failure::Gone => {
                debug!(watch = %self.name, error = %e, "resource version expired; relisting now");
                self.inner = (self.make)();
            }
            Failure::Throttled(wait) => {
                debug!(watch = %self.name, error = %e, wait = ?wait, "throttled by the API server; waiting Retry-After");
                tokio::time::sleep(wait).await;
            }
            Failure::Other => {
                let first = self.health.with(&self.name, |s| {
                    s.attempts += 1;
                    s.last_error = Some(Instant::now());
                    if s.failing_since.is_none() {
                        s.failing_since = Some(Instant::now());
                        true
                    } else {
                        false
                    }
                });
                if first {
                    warn!(watch = %self.name, error = %e, max_backoff = ?self.settings.max_backoff, "watch lost; retrying");
                } else {
                    debug!(watch = %self.name, error = %e, "watch still failing");
                }
                let wait = self.backoff.next_delay();
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// Waits for a store's first list. `Store::wait_until_ready` wakes only its latest poller (a
/// oneshot underneath), and the controller's applier polls it too: poll again now and then.
pub async fn wait_until_ready<K>(store: &kube::runtime::reflector::Store<K>)
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    while tokio::time::timeout(Duration::from_millis(200), store.wait_until_ready())
        .await
        .is_err()
    {}
}

/// A watched object as the operator holds it between its watch and its reconcile: the
/// metadata, and the object's JSON text without `managedFields`, made in one pass over the
/// watch's stream. Watching `DynamicObject`s built each object's tree (several times its text)
/// and wrote it out again as text: for 20,000 CRDs of 65 KiB, 1.3 GB of short-lived small
/// allocations on the async workers, among the long-lived metadata of every target, which kept
/// half-used allocator pages resident.
#[derive(Clone, Debug)]
pub struct WatchedObject {
    pub metadata: kube::api::ObjectMeta,
    /// `{...}`: the object as the API server sent it, but `metadata` written from
    /// [`WatchedObject::metadata`] (which has no `managedFields`).
    pub text: String,
}

impl kube::Resource for WatchedObject {
    type DynamicType = kube::api::ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn group(dt: &kube::api::ApiResource) -> std::borrow::Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &kube::api::ApiResource) -> std::borrow::Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &kube::api::ApiResource) -> std::borrow::Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &kube::api::ApiResource) -> std::borrow::Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &kube::api::ApiResource) -> std::borrow::Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &kube::api::ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut kube::api::ObjectMeta {
        &mut self.metadata
    }
}

impl<'de> serde::Deserialize<'de> for WatchedObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Vec::new();
        let metadata = d.deserialize_map(TopLevel { out: &mut out })?;
        let text = String::from_utf8(out).map_err(serde::de::Error::custom)?;
        Ok(WatchedObject { metadata, text })
    }
}

/// The object's members written as JSON to `out` as they are read; its `metadata` read
/// (without `managedFields`) and written from what was read.
struct TopLevel<'a> {
    out: &'a mut Vec<u8>,
}

impl<'de> serde::de::Visitor<'de> for TopLevel<'_> {
    type Value = kube::api::ObjectMeta;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut metadata = None;
        self.out.push(b'{');
        let mut first = true;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "metadata" {
                let mut m: kube::api::ObjectMeta = map.next_value()?;
                m.managed_fields = None;
                if !first {
                    self.out.push(b',');
                }
                serde_json::to_writer(&mut *self.out, "metadata").map_err(A::Error::custom)?;
                self.out.push(b':');
                serde_json::to_writer(&mut *self.out, &m).map_err(A::Error::custom)?;
                metadata = Some(m);
            } else {
                if !first {
                    self.out.push(b',');
                }
                serde_json::to_writer(&mut *self.out, key.as_ref()).map_err(A::Error::custom)?;
                self.out.push(b':');
                map.next_value_seed(Json {
                    out: &mut *self.out,
                })?;
            }
            first = false;
        }
        self.out.push(b'}');
        Ok(metadata.unwrap_or_default())
    }
}

/// A JSON value written to `out` as it is read, as `serde_json` writes a `Value` (non-finite
/// floats as `null`): [`serde_transcode`] feeds what the deserializer reads straight to a
/// `serde_json` serializer. Only the object's top level ([`TopLevel`]) is copied by hand, as it
/// reads `metadata` into [`kube::api::ObjectMeta`] and drops its `managedFields` on the way.
struct Json<'a> {
    out: &'a mut Vec<u8>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Json<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        serde_transcode::transcode(d, &mut serde_json::Serializer::new(self.out))
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(code: u16, reason: &str, retry: Option<u32>) -> Box<Status> {
        let mut s = Status::failure("x", reason);
        s.code = code;
        if let Some(r) = retry {
            s.details = Some(
                serde_json::from_value(serde_json::json!({ "retryAfterSeconds": r }))
                    .expect("status details"),
            );
        }
        Box::new(s)
    }

    #[test]
    fn failures_are_classified_as_client_go_does() {
        let set = WatchSettings::default();
        assert_eq!(
            classify(
                &watcher::Error::WatchError(status(410, "Expired", None)),
                &set
            ),
            Failure::Gone
        );
        assert_eq!(
            classify(
                &watcher::Error::WatchStartFailed(kube::Error::Api(status(410, "Gone", None))),
                &set
            ),
            Failure::Gone
        );
        assert_eq!(
            classify(
                &watcher::Error::InitialListFailed(kube::Error::Api(status(
                    429,
                    "TooManyRequests",
                    Some(7)
                ))),
                &set
            ),
            Failure::Throttled(Duration::from_secs(7))
        );
        assert_eq!(
            classify(
                &watcher::Error::WatchFailed(kube::Error::Api(status(
                    429,
                    "TooManyRequests",
                    None
                ))),
                &set
            ),
            Failure::Throttled(set.default_retry_after)
        );
        assert_eq!(
            classify(
                &watcher::Error::WatchFailed(kube::Error::Api(status(500, "InternalError", None))),
                &set
            ),
            Failure::Other
        );
    }

    /// A CRD as the API server sends it: managed fields, numbers of every kind, escapes,
    /// empty and nested containers.
    fn crd_json() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": "widgets.example.com", "uid": "u-1", "generation": 3,
                "resourceVersion": "42", "labels": {"a": "b"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {
                "group": "example.com",
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                    "openAPIV3Schema": {"type": "object", "properties": {"n": {
                        "type": "number", "default": 1.5, "maximum": -2, "minimum": 18446744073709551615u64,
                        "enum": [0.1, 1e300, -0.0, null, "\u{e9}\"\\\n\t\u{1}", [], {}],
                        "x-kubernetes-validations": [{"rule": "self < 10.0"}]
                    }}}
                }}]
            },
            "status": {"conditions": []}
        })
    }

    #[test]
    fn watched_objects_are_their_json_without_managed_fields() {
        let original = crd_json();
        let mut expected = original.clone();
        expected["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let mut meta: kube::api::ObjectMeta =
            serde_json::from_value(original["metadata"].clone()).unwrap();
        meta.managed_fields = None;
        let check = |w: &WatchedObject| {
            assert_eq!(w.metadata, meta);
            let back: serde_json::Value = serde_json::from_str(&w.text).unwrap();
            assert_eq!(back, expected, "{}", w.text);
            // Written as serde_json writes the value, members in their order.
            let mut as_value = back.clone();
            as_value["metadata"] = serde_json::to_value(&meta).unwrap();
            assert_eq!(w.text, serde_json::to_string(&as_value).unwrap());
        };
        // Read from text, as a list's item and as a watch event (whose object serde buffers
        // when `object` comes before `type`).
        let text = serde_json::to_string(&original).unwrap();
        check(&serde_json::from_str::<WatchedObject>(&text).unwrap());
        let list = format!(
            r#"{{"apiVersion": "v1", "kind": "List", "metadata": {{}}, "items": [{text}]}}"#
        );
        let list: kube::core::ObjectList<WatchedObject> = serde_json::from_str(&list).unwrap();
        check(&list.items[0]);
        for event in [
            format!(r#"{{"type": "ADDED", "object": {text}}}"#),
            format!(r#"{{"object": {text}, "type": "MODIFIED"}}"#),
        ] {
            match serde_json::from_str::<kube::core::WatchEvent<WatchedObject>>(&event).unwrap() {
                kube::core::WatchEvent::Added(w) | kube::core::WatchEvent::Modified(w) => check(&w),
                e => panic!("{e:?}"),
            }
        }
        // Not an object: an error, not a panic.
        assert!(serde_json::from_str::<WatchedObject>("[1]").is_err());
    }
}
