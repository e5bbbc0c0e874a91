//! MutatingAdmissionPolicy as a watched target. k8s-openapi's types follow one Kubernetes API
//! (the crate's feature), while clusters serve this kind at v1alpha1 (1.32+, off by default),
//! v1beta1 (1.34+, off by default) or v1 (1.36): one type per API version, chosen at start from
//! what the API server serves. The estimator reads the object as JSON, so the type keeps the
//! whole object as it came.

use std::borrow::Cow;

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Serialize};

use super::reconcile::Target;
use crate::resource::TargetKind;

macro_rules! mutating_admission_policy {
    ($name:ident, $version:literal) => {
        #[doc = concat!("`admissionregistration.k8s.io/", $version, "` MutatingAdmissionPolicy.")]
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        pub struct $name {
            #[serde(default)]
            pub metadata: ObjectMeta,
            /// Everything else (spec, apiVersion, kind), as the API server sent it.
            #[serde(flatten)]
            pub rest: serde_json::Map<String, serde_json::Value>,
        }

        impl Resource for $name {
            type DynamicType = ();
            type Scope = ClusterResourceScope;

            fn kind(_: &()) -> Cow<'_, str> {
                "MutatingAdmissionPolicy".into()
            }
            fn group(_: &()) -> Cow<'_, str> {
                "admissionregistration.k8s.io".into()
            }
            fn version(_: &()) -> Cow<'_, str> {
                $version.into()
            }
            fn plural(_: &()) -> Cow<'_, str> {
                "mutatingadmissionpolicies".into()
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }

        impl Target for $name {
            const KIND: TargetKind = TargetKind::MutatingAdmissionPolicy;
        }
    };
}

mutating_admission_policy!(MutatingAdmissionPolicyV1, "v1");
mutating_admission_policy!(MutatingAdmissionPolicyV1beta1, "v1beta1");
mutating_admission_policy!(MutatingAdmissionPolicyV1alpha1, "v1alpha1");

/// The API versions of the kind, preferred first.
pub const VERSIONS: [&str; 3] = ["v1", "v1beta1", "v1alpha1"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_whole_object() {
        let v = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": "m", "uid": "u"},
            "spec": {"mutations": [{"patchType": "JSONPatch"}]}
        });
        let p: MutatingAdmissionPolicyV1 = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("m"));
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        assert_eq!(
            MutatingAdmissionPolicyV1beta1::api_version(&()),
            "admissionregistration.k8s.io/v1beta1"
        );
    }
}
