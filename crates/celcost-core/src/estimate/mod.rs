//! The estimator's entry point: Kubernetes objects (as JSON values) in, reports out. Pure: no
//! IO, no cluster client, no advice (suggested bounds and cheaper rules sit above it, in
//! `crate::suggest` and `crate::rewrite`). The CLI and the operator both call this.

pub mod causes;
pub mod range;
pub mod versions;

use std::cell::OnceCell;

use serde_json::Value;

use crate::budget::{self, Limits, Stopped};
use crate::cel::decls::Version;
use crate::cel::env::Env;
use crate::cel::minor::Minor;
use crate::crd::Prepared;
use crate::report::{EstimateStopped, ObjectReport, StopReason, UpdateVerdict};
use crate::schema::catalog::SchemaCatalog;

/// The default Kubernetes version of the cost model.
pub const DEFAULT_KUBERNETES_VERSION: Version = Version::new(1, 36);

/// The kinds celcost estimates.
// (The doc line above is the `CostReport` CRD's description of `spec.target.kind`, which the
// operator's custom resource serializes with this type: it stays as it is.)
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub enum TargetKind {
    CustomResourceDefinition,
    ValidatingAdmissionPolicy,
    MutatingAdmissionPolicy,
}

impl TargetKind {
    /// The estimable kind of a manifest, from `apiVersion` and `kind`.
    pub fn of(v: &Value) -> Option<TargetKind> {
        let kind = v.get("kind").and_then(Value::as_str)?;
        let api = v
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match (kind, api) {
            ("CustomResourceDefinition", "apiextensions.k8s.io/v1") => {
                Some(TargetKind::CustomResourceDefinition)
            }
            (
                "ValidatingAdmissionPolicy",
                "admissionregistration.k8s.io/v1" | "admissionregistration.k8s.io/v1beta1",
            ) => Some(TargetKind::ValidatingAdmissionPolicy),
            // Every version any Kubernetes minor served; whether the minor estimated for serves
            // it is the estimate's to say (see `vap::map_api_version`).
            (
                "MutatingAdmissionPolicy",
                "admissionregistration.k8s.io/v1"
                | "admissionregistration.k8s.io/v1beta1"
                | "admissionregistration.k8s.io/v1alpha1",
            ) => Some(TargetKind::MutatingAdmissionPolicy),
            _ => None,
        }
    }

    /// The prefix of the operator's report names (`crd.<name>`, `vap.<name>`), also its
    /// metrics label.
    pub fn short(self) -> &'static str {
        match self {
            TargetKind::CustomResourceDefinition => "crd",
            TargetKind::ValidatingAdmissionPolicy => "vap",
            TargetKind::MutatingAdmissionPolicy => "map",
        }
    }

    /// The kind's name (`CustomResourceDefinition`).
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::CustomResourceDefinition => "CustomResourceDefinition",
            TargetKind::ValidatingAdmissionPolicy => "ValidatingAdmissionPolicy",
            TargetKind::MutatingAdmissionPolicy => "MutatingAdmissionPolicy",
        }
    }

    /// The name of the operator's report of the target `name`.
    pub fn report_name(self, name: &str) -> String {
        format!("{}.{}", self.short(), name)
    }
}

/// One object, and what the estimators of a range share of its estimates: work no minor does
/// differently ([`Prepared`] for a CRD), made by the first estimate that needs it and charged to
/// every estimate as if made again (its steps and the bytes it holds), so that each estimate
/// stops, or not, where it would alone.
pub struct Shared<'v> {
    object: &'v Value,
    crd: OnceCell<Metered<Prepared<'v>>>,
    /// The field errors each minor's estimate rendered its `errors` from, by minor: a minor
    /// that judges the object alike but words errors otherwise renders them again.
    errors: std::cell::RefCell<Vec<(Version, Vec<crate::crd::fielderr::FieldError>)>>,
}

/// Something made once, and what making it took of the work budget.
struct Metered<T> {
    value: T,
    steps: u64,
    bytes: isize,
}

impl<'v> Shared<'v> {
    pub fn new(object: &'v Value) -> Self {
        Shared {
            object,
            crd: OnceCell::new(),
            errors: std::cell::RefCell::new(Vec::new()),
        }
    }

    pub fn object(&self) -> &'v Value {
        self.object
    }

    /// The errors of minor `from`'s estimate, rendered as minor `to` words them; `None` when
    /// `from` kept none (no estimate, an API server panic).
    pub fn errors_worded_for(
        &self,
        from: Version,
        to: Version,
    ) -> Option<(Vec<String>, Vec<crate::report::ErrorParts>)> {
        let kept = self.errors.borrow();
        let (_, errors) = kept.iter().find(|(k, _)| *k == from)?;
        Some(crate::crd::fielderr::render_all(errors, to))
    }

    /// Keeps the field errors minor `version`'s estimate rendered its `errors` from.
    fn keep_errors(&self, version: Version, errors: Option<Vec<crate::crd::fielderr::FieldError>>) {
        if let Some(errors) = errors {
            self.errors.borrow_mut().push((version, errors));
        }
    }

    /// `f` of the object's [`Prepared`] CRD, made now unless an earlier estimate made it.
    fn with_crd<R>(&self, f: impl FnOnce(&Prepared<'v>) -> R) -> R {
        if let Some(m) = self.crd.get() {
            if budget::spend_again(m.steps) {
                budget::hold(m.bytes);
                return f(&m.value);
            }
            // Fewer steps left than making it took: made again, to stop where it would alone.
            return f(&Prepared::new(self.object));
        }
        let (steps, bytes) = (budget::steps_left(), budget::live_bytes());
        let value = Prepared::new(self.object);
        let made = self.crd.get_or_init(|| Metered {
            value,
            steps: steps - budget::steps_left(),
            bytes: budget::live_bytes() - bytes,
        });
        f(&made.value)
    }
}

/// An estimator for one Kubernetes version. Each object is estimated within a work budget
/// ([`Limits`]): one that goes over it, or that trips a bug, gets a report saying so
/// ([`ObjectReport::stopped`]) and the others are unaffected.
pub struct Estimator {
    env: Env,
    limits: Limits,
}

impl Default for Estimator {
    fn default() -> Self {
        Estimator::new(DEFAULT_KUBERNETES_VERSION)
    }
}

/// The stack every object's estimate runs on.
pub const OBJECT_STACK: usize = 64 << 20;

impl Estimator {
    pub fn new(kubernetes: Version) -> Self {
        Estimator {
            env: Env::for_kubernetes(kubernetes),
            limits: Limits::default(),
        }
    }

    /// The estimator of one minor's API server (see [`crate::cel::minor`]).
    pub fn for_minor(minor: &'static Minor) -> Self {
        Estimator {
            env: Env::for_minor(minor),
            limits: Limits::default(),
        }
    }

    /// The rules being followed.
    pub fn minor(&self) -> &'static Minor {
        self.env.minor
    }

    /// The compile environment (declarations, parser options).
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// The same estimator with another work budget per object.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs one object's estimate within the work budget.
    fn guarded(
        &self,
        v: &Value,
        source: &str,
        kind: &str,
        f: impl FnOnce() -> ObjectReport,
    ) -> ObjectReport {
        // The checker, the estimator and the schema walks recurse as deep as the input nests
        // (CEL to 250 levels): every object gets a stack that deep inputs cannot overflow,
        // whatever thread it runs on (reserved address space, committed only as used).
        let (mut r, (rules, libraries)) = crate::cel::version::consulted::tracking_all(|| {
            match stacker::grow(OBJECT_STACK, || budget::run(self.limits, f)) {
                Ok(r) => r,
                Err(stop) => self.stopped_report(v, source, kind, &stop),
            }
        });
        r.made_by = crate::report::MadeBy {
            minor: Some(self.env.minor),
            consulted: crate::report::Consulted { rules, libraries },
        };
        r
    }

    /// The report of an object whose estimate stopped.
    fn stopped_report(&self, v: &Value, source: &str, kind: &str, stop: &Stopped) -> ObjectReport {
        let s = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        ObjectReport {
            source: source.to_string(),
            kind: kind.to_string(),
            api_version: s("/apiVersion"),
            name: s("/metadata/name"),
            kubernetes_version: format!("v{}", self.env.kubernetes),
            valid: false,
            stopped: Some(stopped_by(stop)),
            ..ObjectReport::default()
        }
    }

    pub fn kubernetes_version(&self) -> Version {
        self.env.kubernetes
    }

    /// Estimates an object; `None` when its kind is not one the estimator handles. Policies get
    /// typed estimates from the built-in schemas only (see [`Estimator::estimate_with`]).
    pub fn estimate(&self, v: &Value, source: &str) -> Option<ObjectReport> {
        self.estimate_with(v, source, &SchemaCatalog::new())
    }

    /// Estimates an object; policies get typed estimates from the schemas in `catalog` (CRDs
    /// and OpenAPI documents the caller knows), then the built-in ones. CRD estimates do not
    /// depend on the catalog.
    pub fn estimate_with(
        &self,
        v: &Value,
        source: &str,
        catalog: &SchemaCatalog,
    ) -> Option<ObjectReport> {
        self.estimate_shared(&Shared::new(v), source, catalog)
    }

    /// As [`Estimator::estimate_with`], for one of the estimates of a range ([`Shared`]).
    pub fn estimate_shared(
        &self,
        shared: &Shared<'_>,
        source: &str,
        catalog: &SchemaCatalog,
    ) -> Option<ObjectReport> {
        let v = shared.object();
        match TargetKind::of(v)? {
            TargetKind::CustomResourceDefinition => Some(self.estimate_crd_shared(shared, source)),
            kind => Some(self.estimate_policy_shared(shared, source, catalog, kind)),
        }
    }

    /// A policy's estimate (of `kind`), its field errors kept in `shared` for the range's other
    /// minors.
    fn estimate_policy_shared(
        &self,
        shared: &Shared<'_>,
        source: &str,
        catalog: &SchemaCatalog,
        kind: TargetKind,
    ) -> ObjectReport {
        let (name, estimate): (_, PolicyEstimate) = match kind {
            TargetKind::MutatingAdmissionPolicy => (
                "MutatingAdmissionPolicy",
                crate::vap::estimate_map_keeping_errors,
            ),
            _ => (
                "ValidatingAdmissionPolicy",
                crate::vap::estimate_vap_keeping_errors,
            ),
        };
        let v = shared.object();
        self.guarded(v, source, name, || {
            let (report, errors) = estimate(&self.env, v, source, catalog);
            shared.keep_errors(self.env.kubernetes, errors);
            report
        })
    }

    /// The costs of one CRD schema root's rules and its total, this minor's, and nothing else
    /// ([`crate::crd::schema_costs`]): under the running work budget (a stop unwinds to it).
    pub fn schema_costs(
        &self,
        schema: &crate::schema::Schema,
        field_path: &str,
    ) -> crate::crd::SchemaCosts {
        crate::crd::schema_costs(&self.env, schema, field_path)
    }

    pub fn estimate_crd(&self, v: &Value, source: &str) -> ObjectReport {
        self.estimate_crd_shared(&Shared::new(v), source)
    }

    /// As [`Estimator::estimate_crd`], for one of the estimates of a range ([`Shared`]).
    pub fn estimate_crd_shared(&self, shared: &Shared<'_>, source: &str) -> ObjectReport {
        let v = shared.object();
        self.guarded(v, source, "CustomResourceDefinition", || {
            shared.with_crd(|prepared| {
                let (report, errors) =
                    crate::crd::estimate_prepared_keeping_errors(&self.env, v, source, prepared);
                shared.keep_errors(self.env.kubernetes, errors);
                report
            })
        })
    }

    /// The API server's verdict on an UPDATE of `old` (a CRD as the cluster stores it) to
    /// `new` ([`crate::crd::update`]), within the work budget. `create` is `new`'s report by
    /// this estimator. `None` unless both are CRDs.
    pub fn update_verdict(
        &self,
        old: &Value,
        new: &Value,
        create: &ObjectReport,
        stored_source: &str,
    ) -> Option<UpdateVerdict> {
        let crd = Some(TargetKind::CustomResourceDefinition);
        if TargetKind::of(old) != crd || TargetKind::of(new) != crd {
            return None;
        }
        let judged = stacker::grow(OBJECT_STACK, || {
            budget::run(self.limits, || {
                crate::crd::update::judge_update(&self.env, old, new, create, stored_source)
            })
        });
        Some(judged.unwrap_or_else(|stop| UpdateVerdict {
            stored_source: stored_source.to_string(),
            valid: false,
            stopped: Some(stopped_by(&stop)),
            ..UpdateVerdict::default()
        }))
    }

    /// A CRD's create report with, in `update`, the verdict on an update of `old` (as the
    /// cluster stores it, read from `stored_source`) to it.
    pub fn estimate_update(
        &self,
        old: &Value,
        new: &Value,
        source: &str,
        stored_source: &str,
    ) -> ObjectReport {
        let mut r = self.estimate_crd(new, source);
        if r.stopped.is_none() {
            r.update = self.update_verdict(old, new, &r, stored_source);
        }
        r
    }

    /// The report of an object as the cluster stores it: `report` (its create report by this
    /// estimator) and, for a CRD this minor would refuse on create, in `update`, the verdict on
    /// an update that keeps it as it is (the stored object against itself): whether updates
    /// that keep its schemas pass (the total must still fit), and in `held` what each schema
    /// change is refused for until it fits.
    pub fn with_stored_outlook(&self, object: &Value, mut report: ObjectReport) -> ObjectReport {
        if !report.valid && report.stopped.is_none() {
            report.update = self.update_verdict(object, object, &report, "cluster");
        }
        report
    }

    pub fn estimate_vap(&self, v: &Value, source: &str) -> ObjectReport {
        self.estimate_vap_with(v, source, &SchemaCatalog::new())
    }

    pub fn estimate_vap_with(
        &self,
        v: &Value,
        source: &str,
        catalog: &SchemaCatalog,
    ) -> ObjectReport {
        let shared = Shared::new(v);
        self.estimate_policy_shared(
            &shared,
            source,
            catalog,
            TargetKind::ValidatingAdmissionPolicy,
        )
    }

    pub fn estimate_map(&self, v: &Value, source: &str) -> ObjectReport {
        self.estimate_map_with(v, source, &SchemaCatalog::new())
    }

    /// Estimates a MutatingAdmissionPolicy (admissionregistration v1alpha1, v1beta1 or v1);
    /// policies of an API version this Kubernetes version does not serve are estimated, and
    /// rejected with an error saying so.
    pub fn estimate_map_with(
        &self,
        v: &Value,
        source: &str,
        catalog: &SchemaCatalog,
    ) -> ObjectReport {
        let shared = Shared::new(v);
        self.estimate_policy_shared(
            &shared,
            source,
            catalog,
            TargetKind::MutatingAdmissionPolicy,
        )
    }
}

/// A policy kind's estimate, keeping the field errors its report's are rendered from.
type PolicyEstimate = fn(
    &Env,
    &Value,
    &str,
    &SchemaCatalog,
) -> (ObjectReport, Option<Vec<crate::crd::fielderr::FieldError>>);

/// What the report says of an estimate or verdict stopped by its work budget or a panic.
fn stopped_by(stop: &Stopped) -> EstimateStopped {
    EstimateStopped {
        reason: match stop {
            Stopped::Exceeded(_) => StopReason::WorkBudgetExceeded,
            Stopped::Panicked(_) => StopReason::InternalError,
        },
        message: stop.to_string(),
        at: match stop {
            Stopped::Exceeded(e) => e.at.clone(),
            Stopped::Panicked(_) => None,
        },
        location: None,
    }
}
