//! What the reconciles share: the [`Context`] (client, estimator, recorder, metrics, settings,
//! the memo of current reports, the memory and CPU [`Budget`]), the estimator seam
//! ([`CostEstimator`]), and the watched CRDs ([`CrdStore`]) with what a policy's report depends
//! on in them ([`Dep`]). `schemas` reads the CRDs a policy's estimate needs through it, and
//! `reconcile` writes the reports with it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{GetParams, PartialObjectMeta};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};

use celcost_core::cel::decls::Version;
use celcost_core::estimate::Estimator;
use celcost_core::report::ObjectReport;
use celcost_core::schema::catalog::SchemaCatalog;

use super::status::StatusSettings;
use crate::error::Error;
use crate::leader::Leadership;
use crate::resource::{CostReport, TargetKind};
use crate::serve::metrics::{KindLabels, Metrics, TargetLabels};

/// The estimator, as the reconciler sees it: a seam for tests (a failing estimator).
pub trait CostEstimator: Send + Sync + 'static {
    /// The report of a CRD or policy serialized with apiVersion and kind, policies typed with
    /// the schemas of `catalog`; `None` when the estimator does not handle the object.
    fn estimate(&self, object: &serde_json::Value, catalog: &SchemaCatalog)
    -> Option<ObjectReport>;
    /// The Kubernetes version of the cost model.
    fn kubernetes_version(&self) -> Version;
    /// `report` (this estimator's, of `object`) with suggested bounds for its rules and totals
    /// at or above `near_budget_percent` of their limits ([`celcost_advice::suggest`]). Estimators that
    /// make none return it unchanged.
    fn suggest(
        &self,
        _object: &serde_json::Value,
        report: ObjectReport,
        _near_budget_percent: u8,
    ) -> ObjectReport {
        report
    }
}

impl CostEstimator for Estimator {
    fn estimate(
        &self,
        object: &serde_json::Value,
        catalog: &SchemaCatalog,
    ) -> Option<ObjectReport> {
        let report = Estimator::estimate_with(self, object, "cluster", catalog)?;
        Some(self.with_stored_outlook(object, report))
    }

    fn kubernetes_version(&self) -> Version {
        Estimator::kubernetes_version(self)
    }

    fn suggest(
        &self,
        object: &serde_json::Value,
        report: ObjectReport,
        near_budget_percent: u8,
    ) -> ObjectReport {
        let settings = celcost_advice::suggest::Settings::new(f64::from(near_budget_percent));
        celcost_advice::suggest::suggest(self, object, report, &settings)
    }
}

/// The cluster's minor and the next one: each report is the cluster minor's, with the next
/// minor's verdict and changes beside it (`status.nextVersion`, condition `UpgradeSafe`).
pub struct WithNextMinor {
    pub current: Estimator,
    /// `None` when the cluster runs the newest minor celcost has rules for.
    pub next: Option<Estimator>,
    /// When set, a CRD's report carries suggested bounds for the rules and totals over their
    /// limit or near budget ([`celcost_advice::suggest`]) that fit the cluster minor and the next.
    pub suggest: Option<celcost_advice::suggest::Settings>,
}

impl CostEstimator for WithNextMinor {
    fn estimate(
        &self,
        object: &serde_json::Value,
        catalog: &SchemaCatalog,
    ) -> Option<ObjectReport> {
        let mut current = self.current.estimate_with(object, "cluster", catalog)?;
        let next = match &self.next {
            Some(n) if current.stopped.is_none() => {
                Some((n, n.estimate_with(object, "cluster", catalog)?))
            }
            _ => None,
        };
        if let Some(settings) = &self.suggest {
            // Bounds that fit both minors: what fixes the object before the upgrade keeps it
            // accepted after (and the other way round).
            let others: Vec<(&Estimator, &ObjectReport)> =
                next.iter().map(|(n, r)| (*n, r)).collect();
            current = celcost_advice::suggest::suggest_across(
                &self.current,
                &others,
                object,
                current,
                settings,
            );
        }
        // The cluster stores and serves the object: which updates of it this minor accepts.
        current = self.current.with_stored_outlook(object, current);
        match next {
            Some((_, next)) => Some(celcost_core::estimate::versions::with_next(current, next)),
            None => Some(current),
        }
    }

    fn kubernetes_version(&self) -> Version {
        self.current.kubernetes_version()
    }
}

/// Settings of the reconciler.
#[derive(Clone, Debug)]
pub struct Settings {
    pub status: StatusSettings,
    /// Periodic re-check of every target (a no-op when nothing changed): one trigger for all
    /// targets (the controller's), not a requeue of each.
    pub requeue: Duration,
    /// First and longest delay of the per-target retry backoff after API errors.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// Bytes of target JSON parsed and estimated at once, over all reconciles: what bounds the
    /// operator's memory, whatever the concurrency (a target larger than this runs alone).
    pub memory_budget_bytes: usize,
    /// Estimates run at once, over all reconciles.
    pub estimators: usize,
    /// Longest retry delay when the API server cannot be reached at all (no connection): a
    /// target is back at most this long after its API server (a restored watch triggers it
    /// sooner). Other failures back off up to `max_backoff`.
    pub max_transient_backoff: Duration,
    /// Timeout of each API request (a write gets more for a large body: [`Context::write_sized`]).
    pub request_timeout: Duration,
    /// Bytes of the targets' bodies held between their watch and their reconcile (per kind).
    pub pending_bytes: usize,
    /// Whether retry delays are drawn between half and all of the backoff (off: exactly the
    /// backoff, for tests).
    pub jitter: bool,
    /// The report APIs each target's findings are also written to (`--reports`, resolved
    /// against what the cluster serves); none by default.
    pub policy_reports: Vec<celcost_advice::output::openreports::ReportApi>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            status: StatusSettings::default(),
            requeue: Duration::from_secs(3600),
            min_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            memory_budget_bytes: 4 << 20,
            estimators: std::thread::available_parallelism().map_or(2, usize::from),
            max_transient_backoff: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            pending_bytes: 4 << 20,
            jitter: true,
            policy_reports: Vec::new(),
        }
    }
}

/// What the last successful reconcile of a target wrote or saw: while the target's uid and
/// generation are unchanged and the watched report is one of these resourceVersions (our own
/// writes, or the report we found current), there is nothing to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Memo {
    pub(super) uid: Option<String>,
    pub(super) generation: Option<i64>,
    pub(super) report_versions: Vec<String>,
    /// Policies: the CRDs their typed estimate read (or looked for).
    pub(super) deps: Vec<Dep>,
}

/// A target's estimate whose report was not written (the write failed): the retry writes it
/// without reading or estimating the target again.
#[derive(Clone, Debug)]
pub(super) struct Computed {
    pub(super) uid: Option<String>,
    pub(super) generation: Option<i64>,
    /// The status without its conditions.
    pub(super) base: crate::resource::CostReportStatus,
    /// Why there is no estimate: a reason of `status::reason` and a message.
    pub(super) failure: Option<(&'static str, String)>,
    pub(super) deps: Vec<Dep>,
    /// The policy reports' content, when `Settings::policy_reports` names an API.
    pub(super) policy_report: Option<celcost_advice::output::openreports::Body>,
}

/// The state shared by the reconciles of one controller.
pub struct Context {
    pub client: Client,
    pub estimator: Arc<dyn CostEstimator>,
    pub recorder: Recorder,
    pub metrics: Metrics,
    pub settings: Settings,
    /// Metadata of the reports of this controller's kind, from a watch.
    pub reports: Store<PartialObjectMeta<CostReport>>,
    pub(super) memo: Arc<Mutex<HashMap<String, Memo>>>,
    pub(super) failures: Arc<Mutex<HashMap<String, u32>>>,
    /// Estimates whose write failed, per report name, until their retry.
    pub(super) unwritten: Arc<Mutex<HashMap<String, Computed>>>,
    /// Memory and CPU bounds (shared by the controllers of all kinds).
    pub(super) budget: Budget,
    /// Policies: the watched CRDs, whose schemas type their estimates.
    pub(super) crds: Option<CrdStore>,
    /// Whether the CRD watch's first list is complete (`None`: counted as complete).
    pub(super) crds_listed: Option<tokio::sync::watch::Receiver<bool>>,
    /// Whether this replica may write (leader election); always, by default.
    pub leadership: Leadership,
    /// The targets' bodies from their (full-object) watch, until their reconcile takes them;
    /// empty with a metadata-only feed (the reconcile then reads the target).
    pub pending: Arc<super::pending::Pending>,
}

impl Context {
    pub fn new(
        client: Client,
        estimator: Arc<dyn CostEstimator>,
        recorder: Recorder,
        metrics: Metrics,
        settings: Settings,
        reports: Store<PartialObjectMeta<CostReport>>,
    ) -> Self {
        let budget = Budget::new(settings.memory_budget_bytes, settings.estimators);
        Context {
            client,
            estimator,
            recorder,
            metrics,
            settings,
            reports,
            memo: Arc::default(),
            failures: Arc::default(),
            unwritten: Arc::default(),
            budget,
            crds: None,
            crds_listed: None,
            leadership: Leadership::always(),
            pending: Arc::default(),
        }
    }

    /// Writes only while `leadership` says this replica leads.
    pub fn with_leadership(mut self, leadership: Leadership) -> Self {
        self.leadership = leadership;
        self
    }

    /// Types policies with the CRDs of the cluster: their metadata from `crds` (a watch), their
    /// schemas read when a policy needs them. Without it, policies are typed with the built-in
    /// schemas only.
    pub fn with_crd_store(mut self, crds: CrdStore) -> Self {
        self.crds = Some(crds);
        self
    }

    /// Says when the CRD store's first list is complete. Until then, a CRD a policy's estimate
    /// read but the store does not have yet is still to come in a later page, not gone: the
    /// policy's report stays current (the CRD's arrival re-checks it, and so does the list's
    /// end). Without it, each write of a policy's report (apply, status), coming back through
    /// the reports watch during a cold start, read the policy and its CRDs again and estimated
    /// it again: three GETs per policy where one is needed.
    pub fn with_crds_listed(mut self, listed: tokio::sync::watch::Receiver<bool>) -> Self {
        self.crds_listed = Some(listed);
        self
    }

    /// The targets (policies) whose report depends on the CRD `crd_name`.
    pub fn dependents(&self, crd_name: &str) -> Vec<String> {
        let memo = self.memo.lock().expect("memo lock");
        memo.iter()
            .filter(|(_, m)| m.deps.iter().any(|d| d.concerns(crd_name)))
            .filter_map(|(report, _)| report.split_once('.').map(|(_, n)| n.to_string()))
            .collect()
    }

    /// Uses `budget` (shared with other contexts) instead of a budget of its own.
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    pub(super) fn kind_labels(kind: TargetKind) -> KindLabels {
        KindLabels {
            kind: kind.short().to_string(),
        }
    }

    /// The estimate of `report_name` whose write failed, if one is kept (taken for its retry).
    pub(super) fn take_unwritten(&self, report_name: &str) -> Option<Computed> {
        self.unwritten
            .lock()
            .expect("unwritten lock")
            .remove(report_name)
    }

    /// Keeps an estimate whose write failed for the retry of its target.
    pub(super) fn keep_unwritten(&self, report_name: String, computed: Computed) {
        self.unwritten
            .lock()
            .expect("unwritten lock")
            .insert(report_name, computed);
    }

    /// Whether the report of `report_name` is known to be current for this target.
    pub(super) fn is_current(&self, report_name: &str, memo: &Memo) -> bool {
        let Some(stored) = self.memo_while_watched(report_name) else {
            return false;
        };
        let listed = self.crds_listed.as_ref().is_none_or(|l| *l.borrow());
        let deps_current = match self.crds.as_ref() {
            Some(crds) => stored.deps.iter().all(|d| d.is_current_while(crds, listed)),
            None => true,
        };
        stored.uid == memo.uid && stored.generation == memo.generation && deps_current
    }

    /// Whether the last reconcile of the target saw this uid and generation and its report is
    /// unchanged since: its watch event (CRD status churn, a resync) needs no estimate, so its
    /// body need not be held.
    pub fn needs_no_estimate(
        &self,
        kind: TargetKind,
        name: &str,
        uid: Option<&str>,
        generation: Option<i64>,
    ) -> bool {
        self.memo_while_watched(&kind.report_name(name))
            .is_some_and(|stored| stored.uid.as_deref() == uid && stored.generation == generation)
    }

    /// The memo of `report_name`, while the watched report is one of its resourceVersions.
    fn memo_while_watched(&self, report_name: &str) -> Option<Memo> {
        let stored = self
            .memo
            .lock()
            .expect("memo lock")
            .get(report_name)
            .cloned()?;
        let watched = self
            .reports
            .get(&ObjectRef::new(report_name))
            .and_then(|r| r.metadata.resource_version.clone());
        watched
            .is_some_and(|rv| stored.report_versions.contains(&rv))
            .then_some(stored)
    }

    /// Counts a failed reconcile of the report's target; the failures in a row so far (its
    /// backoff's exponent; a success resets it).
    pub fn note_failure(&self, report_name: &str) -> u32 {
        let mut f = self.failures.lock().expect("failures lock");
        let n = f.entry(report_name.to_string()).or_insert(0);
        *n += 1;
        *n
    }

    /// Forgets a deleted target: its memo, backoff and gauges.
    pub fn forget(&self, kind: TargetKind, name: &str) {
        (self.forget_handle())(kind, name)
    }

    /// [`Context::forget`] as a function that outlives a borrow of the context (for the watch
    /// that finds targets deleted while it was away).
    pub fn forget_handle(&self) -> impl Fn(TargetKind, &str) + Send + Sync + 'static {
        let (memo, failures, metrics, pending, unwritten) = (
            self.memo.clone(),
            self.failures.clone(),
            self.metrics.clone(),
            self.pending.clone(),
            self.unwritten.clone(),
        );
        move |kind, name| {
            let report_name = kind.report_name(name);
            pending.remove(name);
            unwritten
                .lock()
                .expect("unwritten lock")
                .remove(&report_name);
            memo.lock().expect("memo lock").remove(&report_name);
            failures.lock().expect("failures lock").remove(&report_name);
            metrics.forget(&TargetLabels::new(kind, name));
        }
    }

    /// Forgets what this replica knew of every report (memo, failures) and drops the
    /// per-target gauges: on losing the lease, since only the leader exports them and a new term
    /// re-checks every target.
    pub fn forget_all(&self) {
        self.memo.lock().expect("memo lock").clear();
        self.failures.lock().expect("failures lock").clear();
        self.pending.clear();
        self.unwritten.lock().expect("unwritten lock").clear();
        self.metrics.forget_all_targets();
    }

    /// `fut` (a write: of a report, its status, an event, a deletion), if this replica leads
    /// now, bounded by the request timeout. Checked when the request is about to be sent (`fut`
    /// sends nothing before it is polled), so a reconcile in flight when the lease is lost
    /// writes nothing more.
    pub(super) async fn write<T>(
        &self,
        what: &'static str,
        fut: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, Error> {
        if !self.leadership.is_leader() {
            return Err(Error::NotLeader(what));
        }
        self.timed(what, fut).await
    }

    /// [`Context::write`] of a request that sends `bytes`: its timeout grows with them (1 s per
    /// 100 KiB over the request timeout), so a large report on a slow API server is not cut
    /// off and retried forever.
    pub(super) async fn write_sized<T>(
        &self,
        what: &'static str,
        bytes: usize,
        fut: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, Error> {
        if !self.leadership.is_leader() {
            return Err(Error::NotLeader(what));
        }
        let timeout = sized_timeout(self.settings.request_timeout, bytes);
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r.map_err(Error::from),
            Err(_) => Err(Error::Timeout(timeout, what)),
        }
    }

    /// `fut` (an API request), bounded by the request timeout.
    pub(super) async fn timed<T>(
        &self,
        what: &'static str,
        fut: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, Error> {
        match tokio::time::timeout(self.settings.request_timeout, fut).await {
            Ok(r) => r.map_err(Error::from),
            Err(_) => Err(Error::Timeout(self.settings.request_timeout, what)),
        }
    }
}

/// The timeout of a request that sends or receives `bytes`: `base` plus 1 s per 100 KiB.
pub fn sized_timeout(base: Duration, bytes: usize) -> Duration {
    base + Duration::from_secs_f64(bytes as f64 / (100.0 * 1024.0))
}

/// What bounds the operator's memory and CPU whatever the concurrency: bytes of target JSON
/// parsed and estimated at once (reconciles wait for their target's size), and estimates run at
/// once (CPU-bound, one per core is enough). Shared by the controllers of all kinds.
#[derive(Clone, Debug)]
pub struct Budget {
    kib: Arc<Semaphore>,
    total_kib: u32,
    estimators: Arc<Semaphore>,
}

impl Budget {
    /// A budget of `memory_bytes` (at least 1 MiB) and `estimators` estimates at once (at least
    /// one).
    pub fn new(memory_bytes: usize, estimators: usize) -> Self {
        let total_kib = u32::try_from((memory_bytes / 1024).max(1024)).unwrap_or(u32::MAX >> 3);
        Budget {
            kib: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            estimators: Arc::new(Semaphore::new(estimators.max(1))),
        }
    }

    /// Waits until `bytes` fit in the memory budget; the permit holds them until dropped.
    /// Anything larger than the whole budget waits for all of it.
    pub async fn reserve(&self, bytes: usize) -> OwnedSemaphorePermit {
        let kib = u32::try_from(bytes / 1024 + 1)
            .unwrap_or(u32::MAX)
            .min(self.total_kib);
        self.kib
            .clone()
            .acquire_many_owned(kib)
            .await
            .expect("the budget is never closed")
    }

    /// Waits for an estimator slot.
    pub(super) async fn estimator(&self) -> OwnedSemaphorePermit {
        self.estimators
            .clone()
            .acquire_owned()
            .await
            .expect("the budget is never closed")
    }
}

/// GETs an object as JSON text, from the API server's watch cache (`resourceVersion=0`): no
/// etcd read, and no typed copy of a possibly huge CRD. `None` when it does not exist.
pub(super) async fn get_json(
    ctx: &Context,
    url_path: &str,
    name: &str,
) -> Result<Option<String>, Error> {
    let request = kube::core::Request::new(url_path)
        .get(name, &GetParams::any())
        .map_err(kube::Error::BuildRequest)?;
    match ctx.timed("get", ctx.client.request_text(request)).await {
        Ok(text) => Ok(Some(text)),
        Err(Error::Kube(kube::Error::Api(s))) if s.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// The watched metadata of every CRD.
pub type CrdStore = Store<PartialObjectMeta<CustomResourceDefinition>>;

/// A CRD a policy's report depends on, as it was when the report was computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dep {
    /// A CRD by name, with its uid and generation then (`None`: it did not exist).
    Crd {
        name: String,
        seen: Option<(String, Option<i64>)>,
    },
    /// No CRD of `group` defined the param kind: the CRD names of the group then.
    Group { group: String, names: Vec<String> },
}

impl Dep {
    /// Whether the CRDs are still as they were (per the watched metadata).
    pub fn is_current(&self, crds: &CrdStore) -> bool {
        self.is_current_while(crds, true)
    }

    /// [`Dep::is_current`], with the store's first list complete (`listed`) or not: before, a
    /// CRD that was read but is not in the store yet counts as unchanged (it comes in a later
    /// page).
    pub fn is_current_while(&self, crds: &CrdStore, listed: bool) -> bool {
        match self {
            Dep::Crd { name, seen } => {
                let now = crds.get(&ObjectRef::new(name)).and_then(|m| {
                    m.metadata
                        .uid
                        .clone()
                        .map(|uid| (uid, m.metadata.generation))
                });
                now == *seen || (now.is_none() && seen.is_some() && !listed)
            }
            Dep::Group { group, names } => crds_of_group(crds, group) == *names,
        }
    }

    /// Whether a change of the CRD `crd_name` can change this dependency.
    pub fn concerns(&self, crd_name: &str) -> bool {
        match self {
            Dep::Crd { name, .. } => name == crd_name,
            Dep::Group { group, .. } => group_of(crd_name) == Some(group.as_str()),
        }
    }
}

/// The group of a CRD name (`<plural>.<group>`).
pub(super) fn group_of(crd_name: &str) -> Option<&str> {
    crd_name.split_once('.').map(|(_, g)| g)
}

/// The CRD names of a group, sorted.
pub(super) fn crds_of_group(crds: &CrdStore, group: &str) -> Vec<String> {
    let mut names: Vec<String> = crds
        .state()
        .iter()
        .map(|m| m.name_any())
        .filter(|n| group_of(n) == Some(group))
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;
    use kube::runtime::watcher;

    #[tokio::test]
    async fn the_budget_bounds_bytes_in_flight_and_admits_anything_alone() {
        let budget = Budget::new(2 << 20, 1);
        let a = budget.reserve(1536 << 10).await;
        // 1 MiB more does not fit beside 1.5 MiB of 2 MiB: it waits for the first to go.
        let waiting = tokio::time::timeout(Duration::from_millis(50), budget.reserve(1 << 20));
        assert!(waiting.await.is_err());
        drop(a);
        let b = budget.reserve(1 << 20).await;
        drop(b);
        // Larger than the whole budget: it takes all of it, rather than waiting forever.
        let huge = budget.reserve(64 << 20).await;
        assert_eq!(budget.kib.available_permits(), 0);
        drop(huge);
        assert_eq!(budget.kib.available_permits(), 2048);
        // One estimate at a time here.
        let slot = budget.estimator().await;
        let second = tokio::time::timeout(Duration::from_millis(50), budget.estimator());
        assert!(second.await.is_err());
        drop(slot);
    }

    fn meta(name: &str, uid: &str, generation: i64) -> PartialObjectMeta<CustomResourceDefinition> {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": name, "uid": uid, "generation": generation}
        }))
        .unwrap()
    }

    #[test]
    fn deps_follow_the_watched_crds() {
        let (store, mut writer) = reflector::store::<PartialObjectMeta<CustomResourceDefinition>>();
        writer.apply_watcher_event(&watcher::Event::Apply(meta("widgets.example.com", "u1", 1)));
        let crd = Dep::Crd {
            name: "widgets.example.com".into(),
            seen: Some(("u1".into(), Some(1))),
        };
        let missing = Dep::Crd {
            name: "gadgets.example.com".into(),
            seen: None,
        };
        let group = Dep::Group {
            group: "example.com".into(),
            names: vec!["widgets.example.com".into()],
        };
        assert!(crd.is_current(&store) && missing.is_current(&store) && group.is_current(&store));
        assert!(crd.concerns("widgets.example.com") && !crd.concerns("gadgets.example.com"));
        assert!(group.concerns("gadgets.example.com") && !group.concerns("gadgets.example.org"));

        // A new generation, a new CRD in the group, a recreated CRD: each is a change.
        writer.apply_watcher_event(&watcher::Event::Apply(meta("widgets.example.com", "u1", 2)));
        assert!(!crd.is_current(&store));
        writer.apply_watcher_event(&watcher::Event::Apply(meta("gadgets.example.com", "u2", 1)));
        assert!(!missing.is_current(&store) && !group.is_current(&store));
        writer.apply_watcher_event(&watcher::Event::Delete(meta(
            "widgets.example.com",
            "u1",
            2,
        )));
        writer.apply_watcher_event(&watcher::Event::Apply(meta("widgets.example.com", "u3", 1)));
        assert!(!crd.is_current(&store));

        // Before the store's first list is complete, a CRD read but not listed yet is current;
        // one listed with another generation is not, and neither is a missing one afterwards.
        let later = Dep::Crd {
            name: "later.example.com".into(),
            seen: Some(("u4".into(), Some(1))),
        };
        assert!(later.is_current_while(&store, false) && !later.is_current(&store));
        assert!(!crd.is_current_while(&store, false));
        assert!(!missing.is_current_while(&store, false));
    }
}
