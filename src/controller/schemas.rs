//! The schemas a policy's typed estimate reads, from the cluster: the CRDs of the custom
//! resources it matches and of its `paramKind` ([`crate::vap::schema_needs`] says which), and
//! whether they changed since a report was written, so that a policy's report follows the CRDs
//! it was typed against.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use serde::Deserialize;
use tracing::debug;

use super::error::Error;
use super::reconcile::{Context, get_json};
use crate::vap::SchemaNeeds;

/// The watched metadata of every CRD.
pub type CrdStore = Store<PartialObjectMeta<CustomResourceDefinition>>;

/// How long a policy's estimate waits for the CRD watch's first list.
const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Most CRDs of a group read to find the one defining a `paramKind`.
const MAX_PARAM_CANDIDATES: usize = 16;

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
        match self {
            Dep::Crd { name, seen } => {
                let now = crds.get(&ObjectRef::new(name)).and_then(|m| {
                    m.metadata
                        .uid
                        .clone()
                        .map(|uid| (uid, m.metadata.generation))
                });
                now == *seen
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
fn group_of(crd_name: &str) -> Option<&str> {
    crd_name.split_once('.').map(|(_, g)| g)
}

/// The CRD names of a group, sorted.
fn crds_of_group(crds: &CrdStore, group: &str) -> Vec<String> {
    let mut names: Vec<String> = crds
        .state()
        .iter()
        .map(|m| m.name_any())
        .filter(|n| group_of(n) == Some(group))
        .collect();
    names.sort();
    names
}

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
    pub fn of(text: &str) -> Head {
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
                tokio::time::timeout(LIST_WAIT, crate::controller::watch::wait_until_ready(crds))
                    .await;
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
    use kube::runtime::reflector;
    use kube::runtime::watcher;

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
    }

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
