//! The reconciler: fetch the target, estimate it, server-side apply its report, publish events on
//! transitions. Idempotent; writes nothing when nothing changed.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PartialObjectMeta, Patch, PatchParams, Preconditions};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::{debug, info, instrument, warn};

use celcost_advice::output::openreports::{self, Scope};
use celcost_core::report::ObjectReport;
use celcost_core::schema::catalog::SchemaCatalog;

use super::conditions::{
    Failure, estimation_failed_message, failed_status, is_ready, same_status, with_conditions,
};
use super::context::{Computed, Context, Dep, Memo, get_json};
use super::events::transitions;
use super::policy_reports;
use super::schemas::{self, Head};
use super::status::{estimate_status, reason};
use crate::backoff;
use crate::error::Error;
use crate::resource::{CostReport, CostReportSpec, CostReportStatus, TargetKind, TargetRef};
use crate::serve::metrics::{FailureLabels, KindLabels, TargetLabels};

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

/// Reconciles one target, given its metadata from the watch.
#[instrument(skip_all, fields(kind = K::KIND.short(), name = %meta.name_any()))]
pub async fn reconcile<K: Target>(
    meta: Arc<PartialObjectMeta<K>>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let kind = K::KIND;
    // A follower reconciles nothing (it would only read and estimate): a new term re-checks
    // every target (`Leadership::acquired`).
    if !ctx.leadership.is_leader() {
        return Ok(Action::await_change());
    }
    let labels = Context::kind_labels(kind);
    ctx.metrics.reconciles.get_or_create(&labels).inc();
    let attempt = ctx
        .failures
        .lock()
        .expect("failures lock")
        .get(&kind.report_name(&meta.name_any()))
        .copied();
    if attempt.is_some() {
        ctx.metrics.retries.get_or_create(&labels).inc();
    }
    let started = Instant::now();
    let result = reconcile_inner::<K>(&meta, &ctx).await;
    ctx.metrics
        .duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    let report_name = kind.report_name(&meta.name_any());
    if let Err(Error::NotLeader(what)) = &result {
        // The lease was lost during the reconcile: nothing more was written, and the next term
        // re-checks the target.
        info!(
            not_sent = what,
            "lost the lease during the reconcile; writes stopped"
        );
        return Ok(Action::await_change());
    }
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
            let first = ctx.note_failure(&report_name) == 1;
            // A failure nobody can fix by waiting (RBAC, schema) is worth a Warning, once per
            // run of failures; transient ones (409, 429, 5xx, transport) only hit the metrics.
            if first && !e.is_transient() {
                let ev = Event {
                    type_: EventType::Warning,
                    reason: e.event_reason().to_string(),
                    note: Some(celcost_core::report::format::truncate(&e.to_string(), 1024).0),
                    action: "WriteReport".to_string(),
                    secondary: None,
                };
                if let Err(err) = ctx
                    .write(
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
/// exponential backoff with jitter (1 s, 2 s, 4 s, ... up to 5 min, each delay drawn between
/// half and all of it), reset by a success. A slow or overloaded API server (timeouts, 5xx,
/// 409) therefore sees each failing target less and less often while the others proceed; an
/// API server that is away altogether (no connection) costs nothing to ask, and its targets
/// retry within 5 s; a restored watch retries every failed target at once.
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
    let max = if error.is_unreachable() {
        ctx.settings.max_transient_backoff
    } else {
        ctx.settings.max_backoff
    };
    let delay = error.retry_after().unwrap_or_else(|| {
        let full = backoff::exponential(n, ctx.settings.min_backoff, max);
        if ctx.settings.jitter {
            backoff::jittered(full, fastrand::f64())
        } else {
            full
        }
    });
    warn!(kind = K::KIND.short(), name = %meta.name_any(), error = %error, attempt = n, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

fn target_ref_of<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    let mut r = obj.object_ref(&());
    r.resource_version = None;
    r.api_version = Some(K::api_version(&()).to_string());
    r.kind = Some(K::kind(&()).to_string());
    r
}

/// A reference to the `K` named `name`, with its `uid`.
fn reference_to<K: Resource<DynamicType = ()>>(name: &str, uid: Option<String>) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).to_string()),
        kind: Some(K::kind(&()).to_string()),
        name: Some(name.to_string()),
        uid,
        ..ObjectReference::default()
    }
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
        .write("delete report", reports.delete(&report_name, &params))
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
            Some(st) if st.reason == celcost_core::report::StopReason::WorkBudgetExceeded => {
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

/// One reconcile, step by step: skip a target whose report is current; read the target (its
/// report goes with it when it is gone); read what its estimate needs; estimate it; apply the
/// report, write its status when it changed (with events for the transitions); record the
/// target's metrics and what the report now reflects.
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
    // The body the watch delivered, if it is the one the metadata says (or newer).
    let body = ctx
        .pending
        .take(&name)
        .filter(|b| b.uid == seen.uid && b.generation >= seen.generation);
    // An estimate of this very generation whose write failed: written without a read or an
    // estimate.
    let unwritten = ctx
        .take_unwritten(&report_name)
        .filter(|c| body.is_none() && c.uid == seen.uid && c.generation == seen.generation);
    if ctx.is_current(&report_name, &seen) {
        debug!("report is current");
        return Ok(Action::await_change());
    }

    let reports: Api<CostReport> = Api::all(ctx.client.clone());
    let (computed, existing) = match unwritten {
        Some(c) => {
            let existing = existing_report(ctx, &reports, &report_name).await;
            match existing {
                Ok(e) => (c, e),
                Err(e) => {
                    ctx.keep_unwritten(report_name, c);
                    return Err(e);
                }
            }
        }
        None => match compute::<K>(ctx, &reports, (&name, &report_name), body, &seen).await? {
            ControlFlow::Continue(c) => c,
            ControlFlow::Break(action) => return Ok(action),
        },
    };
    match write_computed::<K>(ctx, &reports, &name, &report_name, &computed, existing).await {
        Ok(report_versions) => {
            let Computed {
                uid,
                generation,
                deps,
                ..
            } = computed;
            ctx.memo.lock().expect("memo lock").insert(
                report_name,
                Memo {
                    uid,
                    generation,
                    report_versions,
                    deps,
                },
            );
        }
        // A lost lease: the next term re-checks the target from scratch.
        Err(e @ Error::NotLeader(_)) => return Err(e),
        Err(e) => {
            // Kept for the retry: what failed was the write, not the estimate.
            ctx.keep_unwritten(report_name, computed);
            return Err(e);
        }
    }
    // The periodic re-check comes from the controller's resync trigger (`controller_for`).
    Ok(Action::await_change())
}

/// A target's report computed afresh: its body (as the watch delivered it, else read), its
/// policies' schemas, the estimate, and the report there now; or the action when there is
/// nothing to write (the target is gone, has no uid, or was read stale, or its old report is
/// an earlier object's).
async fn compute<K: Target>(
    ctx: &Context,
    reports: &Api<CostReport>,
    (name, report_name): (&str, &str),
    body: Option<super::pending::Body>,
    seen: &Memo,
) -> Result<ControlFlow<Action, (Computed, Option<CostReport>)>, Error> {
    let kind = K::KIND;
    let text = match body {
        Some(b) => {
            count(&ctx.metrics.watched_bodies, kind);
            b.text
        }
        None => {
            count(&ctx.metrics.target_reads, kind);
            let Some(text) = get_json(ctx, &K::url_path(&(), None), name).await? else {
                // Deleted: its report goes too (the garbage collector would, later).
                debug!("target is gone");
                delete_orphaned_report(ctx, kind, name, None).await;
                return Ok(ControlFlow::Break(Action::await_change()));
            };
            text
        }
    };
    let head = Head::of(&text);
    let generation = head.metadata.generation;
    let uid = head.metadata.uid;
    let Some(uid_str) = uid.clone() else {
        warn!("target has no uid; skipped");
        return Ok(ControlFlow::Break(Action::await_change()));
    };
    if generation < seen.generation && uid == seen.uid {
        // The watch cache is behind the watch that triggered us: read again shortly.
        debug!(?generation, seen = ?seen.generation, "stale read; retrying");
        return Ok(ControlFlow::Break(Action::requeue(Duration::from_secs(1))));
    }
    let (schemas, deps) = policy_schemas(ctx, kind, &text).await?;
    // Parsed trees are several times the size of their text: wait until they fit.
    let memory = ctx
        .budget
        .reserve(text.len() + schemas.iter().map(String::len).sum::<usize>())
        .await;
    let existing = existing_report(ctx, reports, report_name).await?;
    if let Some(e) = existing.as_ref()
        && e.spec.target_ref.uid != uid_str
    {
        // The report of an earlier object of the same name: its targetRef is
        // immutable, and the garbage collector is about to delete it (its owner is
        // gone). Its deletion triggers us.
        info!(report = %report_name, "report belongs to a deleted object of the same name; deleting it");
        delete_orphaned_report(ctx, kind, name, Some(uid_str.as_str())).await;
        return Ok(ControlFlow::Break(Action::requeue(Duration::from_secs(1))));
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
    count(&ctx.metrics.estimates, kind);
    let version = format!("v{}", ctx.estimator.kubernetes_version());
    let wants_reports = !ctx.settings.policy_reports.is_empty();
    let near = f64::from(ctx.settings.status.near_budget_percent);
    let (base, failure, policy_report) = match outcome {
        Outcome::Report(r) => (
            estimate_status(kind, &r, ctx.settings.status),
            None,
            wants_reports.then(|| openreports::body(&r, near)),
        ),
        Outcome::Failed(why, msg) => {
            let body = wants_reports.then(|| openreports::error_body(&msg, &version));
            (failed_status(&version), Some((why, msg)), body)
        }
    };
    Ok(ControlFlow::Continue((
        Computed {
            uid,
            generation,
            base,
            failure,
            deps,
            policy_report,
        },
        existing,
    )))
}

/// Writes the report of `computed` (the report object when it differs, its status when it
/// differs, events for the transitions) and records the target's metrics; the report's
/// resourceVersions after it.
async fn write_computed<K: Target>(
    ctx: &Context,
    reports: &Api<CostReport>,
    name: &str,
    report_name: &str,
    computed: &Computed,
    existing: Option<CostReport>,
) -> Result<Vec<String>, Error> {
    let kind = K::KIND;
    let uid_str = computed.uid.clone().unwrap_or_default();
    let desired = desired_report::<K>(name, &uid_str);
    let regarding = reference_to::<K>(name, computed.uid.clone());
    let failure = computed.failure.as_ref().map(|(why, msg)| Failure {
        reason: why,
        message: msg.as_str(),
    });
    let prev = existing.as_ref().and_then(|r| r.status.as_ref());
    let status = with_conditions(
        computed.base.clone(),
        kind,
        computed.generation,
        failure,
        prev,
        Timestamp::now(),
    );

    let written =
        apply_report(ctx, reports, kind, report_name, existing.as_ref(), &desired).await?;
    let mut report_versions = written.versions;
    if !prev.is_some_and(|p| same_status(p, &status)) {
        report_versions.extend(write_status(ctx, reports, kind, report_name, &status).await?);
        // Events only for what changed since the last written status.
        let related = reference_to::<CostReport>(report_name, written.uid.clone());
        publish_transitions(ctx, kind, prev, &status, &regarding, &related).await?;
    } else {
        debug!("status unchanged; nothing written");
    }
    record_cost_ratios(ctx, kind, name, &status, failure.is_none());
    if let (Some(body), Some(owner)) = (&computed.policy_report, &written.uid) {
        let scope = Scope {
            api_version: K::api_version(&()).to_string(),
            kind: K::kind(&()).to_string(),
            name: name.to_string(),
            uid: computed.uid.clone(),
        };
        let labels = desired.labels().clone();
        for &api in &ctx.settings.policy_reports {
            let object = policy_reports::desired(api, &labels, report_name, owner, &scope, body);
            if policy_reports::write(ctx, api, MANAGER, &object).await? {
                count(&ctx.metrics.writes, kind);
            }
        }
    }
    Ok(report_versions)
}

/// Policies: the CRDs their typed estimate reads (and what the report then depends on), when
/// the cluster's CRDs are watched; nothing for CRDs.
async fn policy_schemas(
    ctx: &Context,
    kind: TargetKind,
    text: &str,
) -> Result<(Vec<String>, Vec<Dep>), Error> {
    Ok(match (kind, ctx.crds.is_some()) {
        (TargetKind::ValidatingAdmissionPolicy | TargetKind::MutatingAdmissionPolicy, true) => {
            let needs = serde_json::from_str::<Value>(text)
                .map(|v| celcost_core::vap::schema_needs(&v))
                .unwrap_or_default();
            schemas::fetch(ctx, &needs).await?
        }
        _ => (Vec::new(), Vec::new()),
    })
}

/// The target's report as it is, for its previous status. Once the reports watch has listed, a
/// report it does not know does not exist (yet): the read is skipped.
async fn existing_report(
    ctx: &Context,
    reports: &Api<CostReport>,
    report_name: &str,
) -> Result<Option<CostReport>, Error> {
    let known_absent = ctx.reports.wait_until_ready().now_or_never().is_some()
        && ctx.reports.get(&ObjectRef::new(report_name)).is_none();
    if known_absent {
        Ok(None)
    } else {
        Ok(ctx
            .timed("get report", reports.get_opt(report_name))
            .await?)
    }
}

/// The report's `resourceVersion`s after [`apply_report`], and its uid.
struct Written {
    /// The one read if nothing is written, else each of our writes (the watch may show the first
    /// before the second).
    versions: Vec<String>,
    uid: Option<String>,
}

/// Server-side applies the report (spec, owner, labels) unless `existing` already has it.
async fn apply_report(
    ctx: &Context,
    reports: &Api<CostReport>,
    kind: TargetKind,
    report_name: &str,
    existing: Option<&CostReport>,
    desired: &CostReport,
) -> Result<Written, Error> {
    let params = PatchParams::apply(MANAGER).force();
    let mut written = Written {
        versions: existing
            .and_then(|r| r.metadata.resource_version.clone())
            .into_iter()
            .collect(),
        uid: existing.and_then(|r| r.metadata.uid.clone()),
    };
    if !existing.is_some_and(|e| report_matches(e, desired)) {
        let applied = ctx
            .write(
                "apply report",
                reports.patch(report_name, &params, &Patch::Apply(desired)),
            )
            .await?;
        count(&ctx.metrics.writes, kind);
        written.versions = applied.metadata.resource_version.into_iter().collect();
        written.uid = applied.metadata.uid;
        info!(report = %report_name, "applied report");
    }
    Ok(written)
}

/// Writes the report's status; returns the report's new `resourceVersion`.
async fn write_status(
    ctx: &Context,
    reports: &Api<CostReport>,
    kind: TargetKind,
    report_name: &str,
    status: &CostReportStatus,
) -> Result<Option<String>, Error> {
    // The whole status in one JSON patch `add` (which replaces an existing member): the
    // operator owns all of it, and this costs the API server about half of a server-side
    // apply of the same status, which parses the body as YAML and merges it field by field.
    let value = serde_json::to_value(status)?;
    let bytes = serde_json::to_vec(&value).map_or(0, |v| v.len());
    let patch = json_patch::Patch(vec![json_patch::PatchOperation::Add(
        json_patch::AddOperation {
            path: json_patch::jsonptr::PointerBuf::from_tokens(["status"]),
            value,
        },
    )]);
    let status_params = PatchParams {
        field_manager: Some(MANAGER.to_string()),
        ..PatchParams::default()
    };
    let applied = ctx
        .write_sized(
            "patch report status",
            bytes,
            reports.patch_status(report_name, &status_params, &Patch::Json::<()>(patch)),
        )
        .await?;
    count(&ctx.metrics.writes, kind);
    info!(
        report = %report_name,
        ready = is_ready(status),
        rule = status.summary.as_ref().map(|s| s.highest_rule_percent.as_str()).unwrap_or("-"),
        total = status.summary.as_ref().map(|s| s.highest_total_percent.as_str()).unwrap_or("-"),
        "wrote report status"
    );
    Ok(applied.metadata.resource_version)
}

/// Publishes an event on the target (`regarding`) for each transition from `prev` to `status`;
/// losing the lease stops the reconcile, other failures are logged.
async fn publish_transitions(
    ctx: &Context,
    kind: TargetKind,
    prev: Option<&CostReportStatus>,
    status: &CostReportStatus,
    regarding: &ObjectReference,
    related: &ObjectReference,
) -> Result<(), Error> {
    for t in transitions(kind, prev, status) {
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
        match ctx
            .write("publish event", ctx.recorder.publish(&ev, regarding))
            .await
        {
            Ok(()) => {}
            Err(e @ Error::NotLeader(_)) => return Err(e),
            Err(e) => warn!(error = %e, reason = t.reason, "cannot publish event"),
        }
    }
    Ok(())
}

/// Counts one more of `kind` in a per-controller counter of the metrics.
fn count(counter: &Family<KindLabels, Counter>, kind: TargetKind) {
    counter.get_or_create(&Context::kind_labels(kind)).inc();
}

/// The target's cost ratios (or that its estimate failed) in the metrics.
fn record_cost_ratios(
    ctx: &Context,
    kind: TargetKind,
    name: &str,
    status: &CostReportStatus,
    estimated: bool,
) {
    let target_labels = TargetLabels::new(kind, name);
    let (frozen, refused) = super::stored::gauges(status);
    ctx.metrics
        .record_schema_frozen(&target_labels, frozen, refused);
    match status.summary.as_ref().filter(|_| estimated) {
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
            // The next minor: whether its API server would reject what this one accepts.
            match status.next_version.as_ref() {
                Some(n) => {
                    let rejects = n.upgrade_safe == "False"
                        && n.reason == super::status::reason::REJECTED_BY_NEXT_VERSION;
                    ctx.metrics
                        .next_version_rejects
                        .get_or_create(&target_labels)
                        .set(i64::from(rejects));
                }
                None => {
                    ctx.metrics.next_version_rejects.remove(&target_labels);
                }
            }
        }
        None => {
            ctx.metrics.rule_ratio.remove(&target_labels);
            ctx.metrics.total_ratio.remove(&target_labels);
            ctx.metrics.next_version_rejects.remove(&target_labels);
            ctx.metrics
                .estimation_failed
                .get_or_create(&target_labels)
                .set(1);
        }
    }
}
