//! The policy reports beside each CostReport: an OpenReports `ClusterReport`
//! (`openreports.io/v1alpha1`) and/or a policy working group `ClusterPolicyReport`
//! (`wgpolicyk8s.io/v1alpha2`), the objects Policy Reporter and other report tools read. Their
//! content is [`celcost_advice::output::openreports`]'s (the same as `celcost estimate --output
//! openreports`); here they are owned by the target's CostReport (the garbage collector deletes
//! them with it) and written by the leader only when they differ from what the cluster has.
//! There are no Rust types for these APIs: they are dynamic objects.

use std::collections::BTreeMap;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Resource};
use serde_json::{Value, json};
use tracing::{info, warn};

use celcost_advice::output::openreports::{Body, ReportApi, Scope, object};

use super::context::Context;
use crate::error::Error;
use crate::resource::CostReport;

/// `--reports`: which report APIs the operator writes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportsChoice {
    /// Whichever the cluster serves, OpenReports first; neither: none.
    #[default]
    Auto,
    /// OpenReports `ClusterReport`s (openreports.io/v1alpha1).
    Openreports,
    /// The policy working group's `ClusterPolicyReport`s (wgpolicyk8s.io/v1alpha2).
    Policyreports,
    /// Both.
    Both,
    /// Neither.
    Off,
}

/// The APIs to write to for `choice`, given those the cluster serves; and what to say of it in
/// the log, once, when that is not what was asked.
pub fn resolve(choice: ReportsChoice, served: &[ReportApi]) -> (Vec<ReportApi>, Option<String>) {
    let asked: Vec<ReportApi> = match choice {
        ReportsChoice::Auto => {
            return match ReportApi::ALL.into_iter().find(|a| served.contains(a)) {
                Some(a) => (vec![a], None),
                None => (
                    Vec::new(),
                    Some(
                        "neither openreports.io/v1alpha1 ClusterReports nor wgpolicyk8s.io/v1alpha2 \
                         ClusterPolicyReports are served: writing no policy reports (--reports=auto)"
                            .to_string(),
                    ),
                ),
            };
        }
        ReportsChoice::Openreports => vec![ReportApi::OpenReports],
        ReportsChoice::Policyreports => vec![ReportApi::PolicyReports],
        ReportsChoice::Both => ReportApi::ALL.to_vec(),
        ReportsChoice::Off => Vec::new(),
    };
    let (on, missing): (Vec<ReportApi>, Vec<ReportApi>) =
        asked.into_iter().partition(|a| served.contains(a));
    let note = (!missing.is_empty()).then(|| {
        let names: Vec<String> = missing
            .iter()
            .map(|a| format!("{} {}s", a.api_version(), a.kind()))
            .collect();
        format!(
            "{} not served: not writing them (install their CRD and restart the operator)",
            names.join(" and ")
        )
    });
    (on, note)
}

/// The API resource of `api`, for dynamic objects.
pub fn api_resource(api: ReportApi) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(api.group(), api.version(), api.kind()),
        api.plural(),
    )
}

/// Whether the API server serves `api` (its group version lists its resource).
pub async fn served(client: &Client, api: ReportApi) -> Result<bool, kube::Error> {
    match client.list_api_group_resources(&api.api_version()).await {
        Ok(list) => Ok(list.resources.iter().any(|r| r.name == api.plural())),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// The report object of `api` for the CostReport `report_name` (uid `owner_uid`) about `scope`,
/// with the CostReport's `labels`.
pub fn desired(
    api: ReportApi,
    labels: &BTreeMap<String, String>,
    report_name: &str,
    owner_uid: &str,
    scope: &Scope,
    body: &Body,
) -> Value {
    let metadata = json!({
        "labels": labels,
        "ownerReferences": [{
            "apiVersion": CostReport::api_version(&()),
            "kind": CostReport::kind(&()),
            "name": report_name,
            "uid": owner_uid,
            "controller": true,
        }],
    });
    object(api, report_name, scope, body, metadata)
}

/// Whether `existing` already has everything of `desired`: its labels, owner and content.
fn matches(existing: &DynamicObject, desired: &Value) -> bool {
    let labels_ok = desired["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| {
            existing
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(k))
                .map(String::as_str)
                == v.as_str()
        });
    let owners: Vec<Value> = existing
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect();
    let owner_ok = desired["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|o| owners.contains(o));
    let content_ok = desired
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
        .all(|(k, v)| existing.data.get(k) == Some(v));
    labels_ok && owner_ok && content_ok
}

/// Writes `desired` (of `api`) unless the cluster has it already: a server-side apply of the
/// whole object by field manager `manager`. Returns whether it wrote.
pub(super) async fn write(
    ctx: &Context,
    api: ReportApi,
    manager: &str,
    desired: &Value,
) -> Result<bool, Error> {
    let name = desired["metadata"]["name"].as_str().unwrap_or_default();
    let reports: Api<DynamicObject> = Api::all_with(ctx.client.clone(), &api_resource(api));
    let existing = ctx
        .timed("get policy report", reports.get_opt(name))
        .await?;
    if existing.as_ref().is_some_and(|e| matches(e, desired)) {
        return Ok(false);
    }
    let bytes = serde_json::to_vec(desired).map_or(0, |v| v.len());
    let applied = ctx
        .write_sized(
            "apply policy report",
            bytes,
            reports.patch(
                name,
                &PatchParams::apply(manager).force(),
                &Patch::Apply(desired),
            ),
        )
        .await;
    match applied {
        Ok(_) => {
            info!(report = %name, kind = api.kind(), "applied policy report");
            Ok(true)
        }
        // The API is not served any more (its CRD was deleted after the start): the CostReport
        // is what matters; a restart discovers the APIs again.
        Err(Error::Kube(kube::Error::Api(s))) if s.code == 404 => {
            warn!(report = %name, kind = api.kind(), "the report API is not served any more; not written");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_openreports_first_and_says_so_when_neither_is_served() {
        use ReportApi::*;
        assert_eq!(
            resolve(ReportsChoice::Auto, &[PolicyReports, OpenReports]),
            (vec![OpenReports], None)
        );
        assert_eq!(
            resolve(ReportsChoice::Auto, &[PolicyReports]),
            (vec![PolicyReports], None)
        );
        let (none, note) = resolve(ReportsChoice::Auto, &[]);
        assert!(none.is_empty());
        assert!(note.unwrap().contains("writing no policy reports"));
        assert_eq!(
            resolve(ReportsChoice::Both, &[OpenReports, PolicyReports]).0,
            vec![OpenReports, PolicyReports]
        );
        let (on, note) = resolve(ReportsChoice::Both, &[PolicyReports]);
        assert_eq!(on, vec![PolicyReports]);
        assert!(
            note.unwrap()
                .contains("openreports.io/v1alpha1 ClusterReports not served")
        );
        assert_eq!(
            resolve(ReportsChoice::Off, &ReportApi::ALL),
            (Vec::new(), None)
        );
    }

    #[test]
    fn an_unchanged_report_matches_and_a_changed_one_does_not() {
        let scope = Scope {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            name: "widgets.example.com".into(),
            uid: Some("u1".into()),
        };
        let body = celcost_advice::output::openreports::error_body("stopped", "v1.36");
        let labels = BTreeMap::from([(
            "app.kubernetes.io/managed-by".to_string(),
            "celcost".to_string(),
        )]);
        let want = desired(
            ReportApi::OpenReports,
            &labels,
            "crd.widgets.example.com",
            "owner-uid",
            &scope,
            &body,
        );
        // As the API server returns it: more metadata, the same content.
        let mut served = want.clone();
        served["metadata"]["resourceVersion"] = json!("42");
        served["metadata"]["uid"] = json!("x");
        served["metadata"]["labels"]["other"] = json!("kept");
        served["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(null);
        let existing: DynamicObject = serde_json::from_value(served.clone()).unwrap();
        assert!(matches(&existing, &want));
        let mut changed = served.clone();
        changed["summary"]["error"] = json!(0);
        assert!(!matches(&serde_json::from_value(changed).unwrap(), &want));
        let mut other_owner = served;
        other_owner["metadata"]["ownerReferences"][0]["uid"] = json!("old");
        assert!(!matches(
            &serde_json::from_value(other_owner).unwrap(),
            &want
        ));
    }
}
