//! The schemas a policy's typed estimate reads, from the cluster: the CRDs of the custom
//! resources it matches and of its `paramKind` ([`celcost_core::vap::schema_needs`] says which), and
//! what the report then depends on ([`Dep`], checked against the CRD store of
//! [`super::context`]), so that a policy's report follows the CRDs it was typed against.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;
use tracing::debug;

use super::context::{Context, Dep, crds_of_group, get_json, group_of};
use crate::error::Error;
use celcost_core::vap::SchemaNeeds;

/// How long a policy's estimate waits for the CRD watch's first list.
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Most CRDs of a group read to find the one defining a `paramKind`.
const MAX_PARAM_CANDIDATES: usize = 16;

/// What the estimate needs of a CRD's JSON, read without building the whole tree.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Head {
    #[serde(default)]
    pub metadata: HeadMeta,
    #[serde(default)]
    spec: HeadSpec,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct HeadMeta {
    pub uid: Option<String>,
    pub generation: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
struct HeadSpec {
    names: Option<HeadNames>,
}

#[derive(Debug, Default, Deserialize)]
struct HeadNames {
    kind: Option<String>,
}

impl Head {
    pub(super) fn of(text: &str) -> Head {
        serde_json::from_str(text).unwrap_or_default()
    }

    fn kind(&self) -> Option<&str> {
        self.spec.names.as_ref()?.kind.as_deref()
    }

    fn seen(&self) -> Option<(String, Option<i64>)> {
        self.metadata
            .uid
            .clone()
            .map(|uid| (uid, self.metadata.generation))
    }
}

/// The CRDs (as JSON text) a policy's typed estimate needs, read from the API server's watch
/// cache, and what the report then depends on. A CRD that does not exist is a dependency too:
/// its creation re-estimates the policy.
pub(super) async fn fetch(
    ctx: &Context,
    needs: &SchemaNeeds,
) -> Result<(Vec<String>, Vec<Dep>), Error> {
    let path = {
        use kube::Resource;
        CustomResourceDefinition::url_path(&(), None)
    };
    // (name, text, head) of each CRD read.
    let mut read: Vec<(String, String, Head)> = Vec::new();
    let mut deps = Vec::new();
    for name in &needs.crds {
        let text = get_json(ctx, &path, name).await?;
        let head = text.as_deref().map(Head::of).unwrap_or_default();
        deps.push(Dep::Crd {
            name: name.clone(),
            seen: head.seen(),
        });
        if let Some(text) = text {
            read.push((name.clone(), text, head));
        }
    }
    if let Some((group, _version, kind)) = &needs.param_kind {
        let defines = |name: &str, head: &Head| {
            group_of(name) == Some(group.as_str()) && head.kind() == Some(kind.as_str())
        };
        let already = read.iter().any(|(n, _, h)| defines(n, h));
        if let (false, Some(crds)) = (already, ctx.crds.as_ref()) {
            // The group's CRDs come from the CRD watch: wait for its first list, but not
            // forever (a watch that cannot list leaves the group empty for now; its events
            // re-check the policy later).
            let _ =
                tokio::time::timeout(LIST_WAIT, crate::serve::watch::wait_until_ready(crds)).await;
            let mut candidates = crds_of_group(crds, group);
            // `<plural of the kind>.<group>` first: the usual name.
            let lower = kind.to_lowercase();
            candidates.sort_by_key(|n| !n.starts_with(&lower));
            let mut found = false;
            for name in candidates.iter().take(MAX_PARAM_CANDIDATES) {
                if needs.crds.contains(name) {
                    continue;
                }
                let Some(text) = get_json(ctx, &path, name).await? else {
                    continue;
                };
                let head = Head::of(&text);
                if defines(name, &head) {
                    deps.push(Dep::Crd {
                        name: name.clone(),
                        seen: head.seen(),
                    });
                    read.push((name.clone(), text, head));
                    found = true;
                    break;
                }
            }
            if !found {
                debug!(%group, %kind, "no CRD defines the param kind");
                candidates.sort();
                deps.push(Dep::Group {
                    group: group.clone(),
                    names: candidates,
                });
            }
        }
    }
    Ok((read.into_iter().map(|(_, t, _)| t).collect(), deps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_read_uid_generation_and_kind() {
        let h = Head::of(
            r#"{"metadata":{"name":"a.b.c","uid":"u","generation":3},"spec":{"names":{"kind":"A"},"versions":[]}}"#,
        );
        assert_eq!(h.seen(), Some(("u".into(), Some(3))));
        assert_eq!(h.kind(), Some("A"));
        assert_eq!(Head::of("not json").seen(), None);
    }
}
