//! The estimator's entry point: Kubernetes objects (as JSON values) in, reports out. Pure: no
//! IO, no cluster client. The CLI and the operator both call this.

use serde_json::Value;

use crate::cel::decls::Version;
use crate::cel::env::Env;
use crate::crd::estimate_crd;
use crate::report::ObjectReport;
use crate::schema::catalog::SchemaCatalog;

/// The default Kubernetes version of the cost model.
pub const DEFAULT_KUBERNETES_VERSION: Version = Version::new(1, 36);

/// The oldest Kubernetes version whose cost formulas the estimator has. Older versions gate the
/// CEL libraries by version, but their API servers estimated some expressions differently
/// (`has()`, string literal sizes, comprehension result sizes, `==` on Kubernetes types: see
/// the version history of the cost model).
pub const EXACT_SINCE: Version = Version::new(1, 33);

/// Why numbers for `kubernetes` may differ from its API server's, if they may.
pub fn inexact_reason(kubernetes: Version) -> Option<String> {
    (kubernetes < EXACT_SINCE).then(|| {
        format!(
            "the cost formulas are those of Kubernetes {EXACT_SINCE} and later; the API server of \
             {kubernetes} estimates some expressions differently (has(), string literal sizes, \
             comprehension results, == on Kubernetes types), so its numbers may differ"
        )
    })
}

/// What an object is, for the estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    CustomResourceDefinition,
    ValidatingAdmissionPolicy,
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
            _ => None,
        }
    }
}

/// An estimator for one Kubernetes version.
pub struct Estimator {
    env: Env,
}

impl Default for Estimator {
    fn default() -> Self {
        Estimator::new(DEFAULT_KUBERNETES_VERSION)
    }
}

impl Estimator {
    pub fn new(kubernetes: Version) -> Self {
        Estimator {
            env: Env::for_kubernetes(kubernetes),
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
        match TargetKind::of(v)? {
            TargetKind::CustomResourceDefinition => Some(self.estimate_crd(v, source)),
            TargetKind::ValidatingAdmissionPolicy => {
                Some(self.estimate_vap_with(v, source, catalog))
            }
        }
    }

    pub fn estimate_crd(&self, v: &Value, source: &str) -> ObjectReport {
        estimate_crd(&self.env, v, source)
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
        crate::vap::estimate_vap_with(&self.env, v, source, catalog)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_before_the_current_cost_formulas_are_flagged() {
        assert!(inexact_reason(Version::new(1, 32)).is_some_and(|w| w.contains("1.32")));
        assert_eq!(inexact_reason(EXACT_SINCE), None);
        assert_eq!(inexact_reason(DEFAULT_KUBERNETES_VERSION), None);
    }
}
