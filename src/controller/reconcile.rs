//! The reconciler: fetch the target, estimate it, server-side apply its report, publish events on
//! transitions. Idempotent; writes nothing when nothing changed.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use futures::FutureExt;
use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, DeleteParams, GetParams, PartialObjectMeta, Patch, PatchParams, Preconditions,
};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::{debug, info, instrument, warn};

use crate::Estimator;
use crate::cel::decls::Version;
use crate::report::ObjectReport;
use crate::schema::catalog::SchemaCatalog;

use super::error::Error;
use super::metrics::{FailureLabels, KindLabels, Metrics, TargetLabels};
use super::resource::{CostReport, CostReportSpec, TargetKind, TargetRef};
use super::schemas::{self, CrdStore, Dep, Head};
use super::status::{
    Failure, StatusSettings, estimate_status, estimation_failed_message, failed_status, is_ready,
    reason, same_status, transitions, with_conditions,
};

/// The field manager of every write.
pub const MANAGER: &str = "celcost";
/// Label on every report: which kind of target it describes (`crd`, `vap`).
pub const LABEL_TARGET_KIND: &str = "celcost.io/target-kind";
/// Label on every report.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// A kind the operator estimates: cluster-scoped, read-only to us.
pub trait Target:
    Resource<DynamicType = (), Scope = ClusterResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
    const KIND: TargetKind;
}

impl Target for CustomResourceDefinition {
    const KIND: TargetKind = TargetKind::CustomResourceDefinition;
}

impl Target for ValidatingAdmissionPolicy {
    const KIND: TargetKind = TargetKind::ValidatingAdmissionPolicy;
}

/// The estimator, as the reconciler sees it: a seam for tests (a failing estimator).
pub trait CostEstimator: Send + Sync + 'static {
    /// The report of a CRD or policy serialized with apiVersion and kind, policies typed with
    /// the schemas of `catalog`; `None` when the estimator does not handle the object.
    fn estimate(&self, object: &serde_json::Value, catalog: &SchemaCatalog)
    -> Option<ObjectReport>;
    /// The Kubernetes version of the cost model.
    fn kubernetes_version(&self) -> Version;
}

impl CostEstimator for Estimator {
    fn estimate(
        &self,
        object: &serde_json::Value,
        catalog: &SchemaCatalog,
    ) -> Option<ObjectReport> {
        Estimator::estimate_with(self, object, "cluster", catalog)
    }

    fn kubernetes_version(&self) -> Version {
        Estimator::kubernetes_version(self)
    }
}

/// The cluster's minor and the next one: each report is the cluster minor's, with the next
/// minor's verdict and changes beside it (`status.nextVersion`, condition `UpgradeSafe`).
pub struct WithNextMinor {
    pub current: Estimator,
    /// `None` when the cluster runs the newest minor celcost has rules for.
    pub next: Option<Estimator>,
    /// When set, a CRD's report carries suggested bounds for the rules and totals over their
    /// limit or near budget ([`crate::suggest`]), found with the cluster minor's estimator.
    pub suggest: Option<crate::suggest::Settings>,
}

impl CostEstimator for WithNextMinor {
    fn estimate(
        &self,
        object: &serde_json::Value,
        catalog: &SchemaCatalog,
    ) -> Option<ObjectReport> {
        let mut current = self.current.estimate_with(object, "cluster", catalog)?;
        if let Some(settings) = &self.suggest {
            current = crate::suggest::suggest(&self.current, object, current, settings);
        }
        match &self.next {
            Some(n) if current.stopped.is_none() => {
                let next = n.estimate_with(object, "cluster", catalog)?;
                Some(crate::versions::with_next(current, next))
            }
            _ => Some(current),
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
    /// Periodic re-check of every target (a no-op when nothing changed).
    pub requeue: Duration,
    /// First and longest delay of the per-target retry backoff after API errors.
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// Bytes of target JSON parsed and estimated at once, over all reconciles: what bounds the
    /// operator's memory, whatever the concurrency (a target larger than this runs alone).
    pub memory_budget_bytes: usize,
    /// Estimates run at once, over all reconciles.
    pub estimators: usize,
    /// Longest retry delay after a transient failure (API server down, timeout, conflict): a
    /// target is back at most this long after its API server (relists trigger it sooner).
    pub max_transient_backoff: Duration,
    /// Timeout of each API request.
    pub request_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            status: StatusSettings::default(),
            requeue: Duration::from_secs(3600),
            min_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            memory_budget_bytes: 8 << 20,
            estimators: std::thread::available_parallelism().map_or(2, usize::from),
            max_transient_backoff: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// What the last successful reconcile of a target wrote or saw: while the target's uid and
/// generation are unchanged and the watched report is one of these resourceVersions (our own
/// writes, or the report we found current), there is nothing to do.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Memo {
    uid: Option<String>,
    generation: Option<i64>,
    report_versions: Vec<String>,
    /// Policies: the CRDs their typed estimate read (or looked for).
    deps: Vec<Dep>,
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
    memo: Arc<Mutex<HashMap<String, Memo>>>,
    failures: Arc<Mutex<HashMap<String, u32>>>,
    /// Memory and CPU bounds (shared by the controllers of all kinds).
    budget: Budget,
    /// Policies: the watched CRDs, whose schemas type their estimates.
    pub(super) crds: Option<CrdStore>,
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
            budget,
            crds: None,
        }
    }

    /// Types policies with the CRDs of the cluster: their metadata from `crds` (a watch), their
    /// schemas read when a policy needs them. Without it, policies are typed with the built-in
    /// schemas only.
    pub fn with_crd_store(mut self, crds: CrdStore) -> Self {
        self.crds = Some(crds);
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

    fn kind_labels(kind: TargetKind) -> KindLabels {
        KindLabels {
            kind: kind.short().to_string(),
        }
    }

    /// Whether the report of `report_name` is known to be current for this target.
    fn is_current(&self, report_name: &str, memo: &Memo) -> bool {
        let stored = self
            .memo
            .lock()
            .expect("memo lock")
            .get(report_name)
            .cloned();
        let Some(stored) = stored else {
            return false;
        };
        let watched = self
            .reports
            .get(&ObjectRef::new(report_name))
            .and_then(|r| r.metadata.resource_version.clone());
        let deps_current = match self.crds.as_ref() {
            Some(crds) => stored.deps.iter().all(|d| d.is_current(crds)),
            None => true,
        };
        stored.uid == memo.uid
            && stored.generation == memo.generation
            && watched.is_some_and(|rv| stored.report_versions.contains(&rv))
            && deps_current
    }

    /// Forgets a deleted target: its memo, backoff and gauges.
    pub fn forget(&self, kind: TargetKind, name: &str) {
        (self.forget_handle())(kind, name)
    }

    /// [`Context::forget`] as a function that outlives a borrow of the context (for the watch
    /// that finds targets deleted while it was away).
    pub fn forget_handle(&self) -> impl Fn(TargetKind, &str) + Send + Sync + 'static {
        let (memo, failures, metrics) = (
            self.memo.clone(),
            self.failures.clone(),
            self.metrics.clone(),
        );
        move |kind, name| {
            let report_name = kind.report_name(name);
            memo.lock().expect("memo lock").remove(&report_name);
            failures.lock().expect("failures lock").remove(&report_name);
            metrics.forget(&TargetLabels::new(kind, name));
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
    async fn estimator(&self) -> OwnedSemaphorePermit {
        self.estimators
            .clone()
            .acquire_owned()
            .await
            .expect("the budget is never closed")
    }
}

/// Reconciles one target, given its metadata from the watch.
#[instrument(skip_all, fields(kind = K::KIND.short(), name = %meta.name_any()))]
pub async fn reconcile<K: Target>(
    meta: Arc<PartialObjectMeta<K>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let kind = K::KIND;
    let labels = Context::kind_labels(kind);
    ctx.metrics.reconciles.get_or_create(&labels).inc();
    let started = Instant::now();
    let result = reconcile_inner::<K>(&meta, &ctx).await;
    ctx.metrics
        .duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    let report_name = kind.report_name(&meta.name_any());
    match &result {
        Ok(_) => {
            ctx.failures
                .lock()
                .expect("failures lock")
                .remove(&report_name);
        }
        Err(e) => {
            ctx.metrics
                .failures
                .get_or_create(&FailureLabels {
                    kind: kind.short().to_string(),
                    error: e.metric_label(),
                })
                .inc();
            let first = {
                let mut f = ctx.failures.lock().expect("failures lock");
                let n = f.entry(report_name).or_insert(0);
                *n += 1;
                *n == 1
            };
            // A failure nobody can fix by waiting (RBAC, schema) is worth a Warning, once per
            // run of failures; transient ones (409, 429, 5xx, transport) only hit the metrics.
            if first && !e.is_transient() {
                let ev = Event {
                    type_: EventType::Warning,
                    reason: e.event_reason().to_string(),
                    note: Some(super::status::truncate(&e.to_string(), 1024).0),
                    action: "WriteReport".to_string(),
                    secondary: None,
                };
                if let Err(err) = ctx
                    .timed(
                        "publish event",
                        ctx.recorder.publish(&ev, &target_ref_of(&*meta)),
                    )
                    .await
                {
                    debug!(error = %err, "cannot publish the failure event");
                }
            }
        }
    }
    result
}

/// Requeue after an API error: what a 429 asks for (`Retry-After`); else per-target
/// exponential backoff (1 s, 2 s, 4 s, ...), up to 5 s for transient failures (the API server
/// is away, a conflict) and 5 min for others (RBAC, a rejected report).
pub fn error_policy<K: Target>(
    meta: Arc<PartialObjectMeta<K>>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let report_name = K::KIND.report_name(&meta.name_any());
    let n = ctx
        .failures
        .lock()
        .expect("failures lock")
        .get(&report_name)
        .copied()
        .unwrap_or(1);
    let max = if error.is_transient() {
        ctx.settings.max_transient_backoff
    } else {
        ctx.settings.max_backoff
    };
    let delay = error
        .retry_after()
        .unwrap_or_else(|| backoff(n, ctx.settings.min_backoff, max));
    warn!(kind = K::KIND.short(), name = %meta.name_any(), error = %error, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// `min × 2^(n-1)`, at most `max`.
pub fn backoff(n: u32, min: Duration, max: Duration) -> Duration {
    let factor = 1u32
        .checked_shl(n.saturating_sub(1).min(20))
        .unwrap_or(u32::MAX);
    min.saturating_mul(factor).min(max)
}

fn target_ref_of<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    let mut r = obj.object_ref(&());
    r.resource_version = None;
    r.api_version = Some(K::api_version(&()).to_string());
    r.kind = Some(K::kind(&()).to_string());
    r
}

/// Deletes the report of target `name` unless its owner is the target of that name now
/// (`live_uid`). The garbage collector deletes reports with their targets too, but only once it
/// has caught up after an API server restart (tens of seconds); this makes a deletion show
/// within seconds, also one that happened while the operator's watch was away. The delete is
/// conditional on the report's uid, so a report written for a new target meanwhile stays.
pub async fn delete_orphaned_report(
    ctx: &Context,
    kind: TargetKind,
    name: &str,
    live_uid: Option<&str>,
) {
    let report_name = kind.report_name(name);
    let Some(report) = ctx.reports.get(&ObjectRef::new(&report_name)) else {
        return;
    };
    let owner = report
        .metadata
        .owner_references
        .as_ref()
        .and_then(|o| o.first())
        .map(|o| o.uid.as_str());
    if owner.is_some() && owner == live_uid {
        return;
    }
    let reports: Api<CostReport> = Api::all(ctx.client.clone());
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: report.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match ctx
        .timed("delete report", reports.delete(&report_name, &params))
        .await
    {
        Ok(_) => info!(report = %report_name, "deleted the report of a deleted target"),
        // Gone already (the garbage collector), or replaced: nothing to do.
        Err(Error::Kube(kube::Error::Api(s))) if s.code == 404 || s.code == 409 => {}
        // Not allowed (an older ClusterRole) or failing: the garbage collector will do it.
        Err(e) => {
            debug!(report = %report_name, error = %e, "could not delete the report of a deleted target")
        }
    }
}

/// What the estimator made of a target.
enum Outcome {
    Report(Box<ObjectReport>),
    /// A reason of [`reason`] and a message.
    Failed(&'static str, String),
}

/// Parses and estimates a target (JSON text) with the CRDs its policy estimate reads (`schemas`,
/// JSON texts), off the async workers and a few at a time: the estimator is CPU-bound, and only
/// the targets being estimated are held as parsed trees.
async fn estimate(
    ctx: &Context,
    kind: TargetKind,
    api_version: String,
    target_kind: String,
    target: String,
    schemas: Vec<String>,
) -> Outcome {
    let estimator = ctx.estimator.clone();
    let slot = ctx.budget.estimator().await;
    // A panic in the estimator is a failed estimate of this target, not a crash.
    let joined = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let mut value: Value = match serde_json::from_str(&target) {
            Ok(v) => v,
            Err(e) => return Err(format!("its JSON cannot be read: {e}")),
        };
        drop(target);
        // The kind may be missing from a single-object read; the estimator needs it.
        if let Some(o) = value.as_object_mut() {
            o.insert("apiVersion".into(), api_version.into());
            o.insert("kind".into(), target_kind.into());
        }
        let mut catalog = SchemaCatalog::new();
        for text in schemas {
            if let Ok(crd) = serde_json::from_str::<Value>(&text) {
                catalog.add_crd(crd);
            }
        }
        Ok(estimator.estimate(&value, &catalog))
    })
    .await;
    match joined {
        Ok(Ok(Some(report))) => match &report.stopped {
            // Over its work budget, or a bug the estimator caught: no numbers.
            Some(st) if st.reason == crate::report::WORK_BUDGET_EXCEEDED => {
                Outcome::Failed(reason::WORK_BUDGET_EXCEEDED, st.message.clone())
            }
            Some(st) => Outcome::Failed(
                reason::ESTIMATION_FAILED,
                estimation_failed_message(kind, Some(&st.message)),
            ),
            None => Outcome::Report(Box::new(report)),
        },
        Ok(Ok(None)) => Outcome::Failed(
            reason::ESTIMATION_FAILED,
            estimation_failed_message(kind, None),
        ),
        Ok(Err(detail)) => Outcome::Failed(
            reason::ESTIMATION_FAILED,
            estimation_failed_message(kind, Some(&detail)),
        ),
        Err(e) => {
            let detail = if e.is_panic() {
                let p = e.into_panic();
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                format!("panicked: {msg}")
            } else {
                "cancelled".to_string()
            };
            Outcome::Failed(
                reason::ESTIMATION_FAILED,
                estimation_failed_message(kind, Some(&detail)),
            )
        }
    }
}

/// The report object (without status) of the target `name` with `uid`.
pub fn desired_report<K: Target>(name: &str, uid: &str) -> CostReport {
    let kind = K::KIND;
    let owner = OwnerReference {
        api_version: K::api_version(&()).to_string(),
        kind: K::kind(&()).to_string(),
        name: name.to_string(),
        uid: uid.to_string(),
        controller: Some(true),
        // Not blocking: that would need delete rights on the targets.
        block_owner_deletion: None,
    };
    let labels = BTreeMap::from([
        (LABEL_MANAGED_BY.to_string(), MANAGER.to_string()),
        (LABEL_TARGET_KIND.to_string(), kind.short().to_string()),
    ]);
    CostReport {
        metadata: ObjectMeta {
            name: Some(kind.report_name(name)),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: CostReportSpec {
            target_ref: TargetRef {
                api_version: K::api_version(&()).to_string(),
                kind,
                name: name.to_string(),
                uid: uid.to_string(),
            },
        },
        status: None,
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

/// Whether `existing` already has everything `desired` applies (spec, owner, labels).
fn report_matches(existing: &CostReport, desired: &CostReport) -> bool {
    let labels_ok = desired
        .labels()
        .iter()
        .all(|(k, v)| existing.labels().get(k) == Some(v));
    let owner_ok = desired
        .owner_references()
        .iter()
        .all(|o| existing.owner_references().contains(o));
    existing.spec == desired.spec && labels_ok && owner_ok
}

async fn reconcile_inner<K: Target>(
    meta: &PartialObjectMeta<K>,
    ctx: &Context,
) -> Result<Action, Error> {
    let kind = K::KIND;
    let name = meta.name_any();
    let report_name = kind.report_name(&name);
    let seen = Memo {
        uid: meta.metadata.uid.clone(),
        generation: meta.metadata.generation,
        report_versions: Vec::new(),
        deps: Vec::new(),
    };
    if ctx.is_current(&report_name, &seen) {
        debug!("report is current");
        return Ok(Action::requeue(ctx.settings.requeue));
    }

    let Some(text) = get_json(ctx, &K::url_path(&(), None), &name).await? else {
        // Deleted: its report goes too (the garbage collector would, later).
        debug!("target is gone");
        delete_orphaned_report(ctx, kind, &name, None).await;
        return Ok(Action::await_change());
    };
    let head = Head::of(&text);
    let generation = head.metadata.generation;
    let uid = head.metadata.uid;
    let Some(uid_str) = uid.clone() else {
        warn!("target has no uid; skipped");
        return Ok(Action::await_change());
    };
    if generation < seen.generation && uid == seen.uid {
        // The watch cache is behind the watch that triggered us: read again shortly.
        debug!(?generation, seen = ?seen.generation, "stale read; retrying");
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    // Policies: the CRDs their typed estimate reads, when the cluster's CRDs are watched.
    let (schemas, deps) = match (kind, ctx.crds.is_some()) {
        (TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy, true) => {
            let needs = serde_json::from_str::<Value>(&text)
                .map(|v| crate::vap::schema_needs(&v))
                .unwrap_or_default();
            schemas::fetch(ctx, &needs).await?
        }
        _ => (Vec::new(), Vec::new()),
    };
    // Parsed trees are several times the size of their text: wait until they fit.
    let memory = ctx
        .budget
        .reserve(text.len() + schemas.iter().map(String::len).sum::<usize>())
        .await;
    let regarding = ObjectReference {
        api_version: Some(K::api_version(&()).to_string()),
        kind: Some(K::kind(&()).to_string()),
        name: Some(name.clone()),
        uid: uid.clone(),
        ..ObjectReference::default()
    };

    let reports: Api<CostReport> = Api::all(ctx.client.clone());
    // Once the reports watch has listed, a report it does not know does not exist (yet): skip
    // the read. Otherwise read it, for its previous status.
    let known_absent = ctx.reports.wait_until_ready().now_or_never().is_some()
        && ctx.reports.get(&ObjectRef::new(&report_name)).is_none();
    let existing = if known_absent {
        None
    } else {
        ctx.timed("get report", reports.get_opt(&report_name))
            .await?
    };
    let desired = desired_report::<K>(&name, &uid_str);
    if let Some(e) = existing.as_ref()
        && e.spec.target_ref.uid != desired.spec.target_ref.uid
    {
        // The report of an earlier object of the same name: its targetRef is immutable, and the
        // garbage collector is about to delete it (its owner is gone). Its deletion triggers us.
        info!(report = %report_name, "report belongs to a deleted object of the same name; deleting it");
        delete_orphaned_report(ctx, kind, &name, Some(uid_str.as_str())).await;
        return Ok(Action::requeue(Duration::from_secs(1)));
    }

    let outcome = estimate(
        ctx,
        kind,
        K::api_version(&()).to_string(),
        K::kind(&()).to_string(),
        text,
        schemas,
    )
    .await;
    drop(memory);
    ctx.metrics
        .estimates
        .get_or_create(&Context::kind_labels(kind))
        .inc();
    let version = format!("v{}", ctx.estimator.kubernetes_version());
    let (base, failure) = match &outcome {
        Outcome::Report(r) => (estimate_status(kind, r, ctx.settings.status), None),
        Outcome::Failed(why, msg) => (
            failed_status(&version),
            Some(Failure {
                reason: why,
                message: msg.as_str(),
            }),
        ),
    };
    let prev = existing.as_ref().and_then(|r| r.status.as_ref());
    let status = with_conditions(base, kind, generation, failure, prev, Timestamp::now());

    let params = PatchParams::apply(MANAGER).force();
    // The report's resourceVersions this reconcile leaves behind: the one read if nothing is
    // written, else each of our writes (the watch may show the first before the second).
    let mut report_versions: Vec<String> = existing
        .as_ref()
        .and_then(|r| r.metadata.resource_version.clone())
        .into_iter()
        .collect();
    let mut report_uid = existing.as_ref().and_then(|r| r.metadata.uid.clone());
    if !existing
        .as_ref()
        .is_some_and(|e| report_matches(e, &desired))
    {
        let applied = ctx
            .timed(
                "apply report",
                reports.patch(&report_name, &params, &Patch::Apply(&desired)),
            )
            .await?;
        ctx.metrics
            .writes
            .get_or_create(&Context::kind_labels(kind))
            .inc();
        report_versions = applied.metadata.resource_version.into_iter().collect();
        report_uid = applied.metadata.uid;
        info!(report = %report_name, "applied report");
    }
    let changed = !prev.is_some_and(|p| same_status(p, &status));
    if changed {
        // The whole status in one JSON patch `add` (which replaces an existing member): the
        // operator owns all of it, and this costs the API server about half of a server-side
        // apply of the same status, which parses the body as YAML and merges it field by field.
        let patch = json_patch::Patch(vec![json_patch::PatchOperation::Add(
            json_patch::AddOperation {
                path: json_patch::jsonptr::PointerBuf::from_tokens(["status"]),
                value: serde_json::to_value(&status)?,
            },
        )]);
        let status_params = PatchParams {
            field_manager: Some(MANAGER.to_string()),
            ..PatchParams::default()
        };
        let applied = ctx
            .timed(
                "patch report status",
                reports.patch_status(&report_name, &status_params, &Patch::Json::<()>(patch)),
            )
            .await?;
        ctx.metrics
            .writes
            .get_or_create(&Context::kind_labels(kind))
            .inc();
        report_versions.extend(applied.metadata.resource_version);
        info!(
            report = %report_name,
            ready = is_ready(&status),
            rule = status.summary.as_ref().map(|s| s.highest_rule_percent.as_str()).unwrap_or("-"),
            total = status.summary.as_ref().map(|s| s.highest_total_percent.as_str()).unwrap_or("-"),
            "wrote report status"
        );
        // Events only for what changed since the last written status.
        let related = ObjectReference {
            api_version: Some(CostReport::api_version(&()).to_string()),
            kind: Some(CostReport::kind(&()).to_string()),
            name: Some(report_name.clone()),
            uid: report_uid.clone(),
            ..ObjectReference::default()
        };
        for t in transitions(kind, prev, &status) {
            let ev = Event {
                type_: if t.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: t.reason.to_string(),
                note: Some(t.note),
                action: "Estimate".to_string(),
                secondary: Some(related.clone()),
            };
            if let Err(e) = ctx
                .timed("publish event", ctx.recorder.publish(&ev, &regarding))
                .await
            {
                warn!(error = %e, reason = t.reason, "cannot publish event");
            }
        }
    } else {
        debug!("status unchanged; nothing written");
    }

    let target_labels = TargetLabels::new(kind, &name);
    match status.summary.as_ref().filter(|_| failure.is_none()) {
        Some(s) => {
            ctx.metrics
                .rule_ratio
                .get_or_create(&target_labels)
                .set(s.highest_rule_cost as f64 / s.rule_limit.max(1) as f64);
            ctx.metrics
                .total_ratio
                .get_or_create(&target_labels)
                .set(s.highest_total_cost as f64 / s.total_limit.max(1) as f64);
            ctx.metrics.estimation_failed.remove(&target_labels);
        }
        None => {
            ctx.metrics.rule_ratio.remove(&target_labels);
            ctx.metrics.total_ratio.remove(&target_labels);
            ctx.metrics
                .estimation_failed
                .get_or_create(&target_labels)
                .set(1);
        }
    }

    ctx.memo.lock().expect("memo lock").insert(
        report_name,
        Memo {
            uid,
            generation,
            report_versions,
            deps,
        },
    );
    Ok(Action::requeue(ctx.settings.requeue))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
