//! `celcost estimate --cluster`: a live cluster's objects as the input of a run. Every
//! CustomResourceDefinition, ValidatingAdmissionPolicy and MutatingAdmissionPolicy the API
//! server stores is read with paged lists (read-only: `list` on the three resources, and
//! `/version`), as JSON, and handed to the run ([`super::Stored`]) page by page; the estimator
//! knows nothing of where they came from.
//!
//! - **Which cluster:** the kubeconfig (`KUBECONFIG`, `~/.kube/config`) or, in a pod, its
//!   service account; `--context` picks a kubeconfig context other than the current one.
//! - **Which minors:** the API server's own (`/version`) and the next, when celcost has its
//!   rules ([`minors_for`]); `--kubernetes-version` instead when given.
//! - **Sources:** `cluster:crd/NAME`, `cluster:vap/NAME` and `cluster:map/NAME` (the kinds as
//!   CostReports name them); no file positions. Each CRD's `update` is the newest minor's verdict
//!   on an update that keeps it as stored (`storedSource` the same source).
//! - **Big clusters:** lists of [`PAGE`] objects (`CELCOST_LIST_PAGE`); a page's CRDs are estimated (in parallel) and
//!   dropped but for those a policy is typed over. A progress bar on standard error when it is a
//!   terminal and the cluster has [`PROGRESS_FROM`] CRDs or more.

use std::io::IsTerminal;

use kube::Client;
use serde_json::Value;

use super::{Outcome, Run};
use celcost_core::cel::decls::Version;
use celcost_core::cel::minor::{Distribution, Minor};

/// What `--cluster` needs of its user.
pub const PERMISSIONS: &str = "list on customresourcedefinitions.apiextensions.k8s.io, \
validatingadmissionpolicies.admissionregistration.k8s.io and \
mutatingadmissionpolicies.admissionregistration.k8s.io (cluster-wide), and get on /version";

/// Objects asked for per list request (a big CRD's JSON is a few MiB); `CELCOST_LIST_PAGE`
/// to override.
pub const PAGE: usize = 50;

fn page_size() -> usize {
    std::env::var("CELCOST_LIST_PAGE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(PAGE)
}

/// From how many CRDs on a terminal a progress bar shows.
pub const PROGRESS_FROM: u64 = 200;

/// A resource celcost reads, and the API versions it is served at (the newest first).
struct Resource {
    /// How sources name the kind: `crd`, `vap`, `map`.
    short: &'static str,
    kind: &'static str,
    group: &'static str,
    plural: &'static str,
    versions: &'static [&'static str],
}

const CRDS: Resource = Resource {
    short: "crd",
    kind: "CustomResourceDefinition",
    group: "apiextensions.k8s.io",
    plural: "customresourcedefinitions",
    versions: &["v1"],
};

const POLICIES: [Resource; 2] = [
    Resource {
        short: "vap",
        kind: "ValidatingAdmissionPolicy",
        group: "admissionregistration.k8s.io",
        plural: "validatingadmissionpolicies",
        versions: &["v1"],
    },
    Resource {
        short: "map",
        kind: "MutatingAdmissionPolicy",
        group: "admissionregistration.k8s.io",
        plural: "mutatingadmissionpolicies",
        versions: &["v1", "v1beta1", "v1alpha1"],
    },
];

/// The minors a cluster is judged by without `--kubernetes-version`: its API server's and the
/// next one, as far as celcost has their rules; with what to tell the user when it has not.
pub fn minors_for(server: Version, d: Distribution) -> (Vec<Version>, Vec<String>) {
    let mut notes = Vec::new();
    let own = Minor::nearest(server, d);
    if own.kubernetes != server {
        notes.push(format!(
            "the API server is Kubernetes {server}, which celcost has no rules for: judged by {}'s rules (the nearest it has)",
            own.kubernetes
        ));
    }
    let mut minors = vec![own.kubernetes];
    match own.next() {
        Some(next) if own.kubernetes == server => minors.push(next.kubernetes),
        Some(_) => {}
        None => notes.push(format!(
            "celcost has no rules for Kubernetes {}.{} (its newest minor is {}): the next minor is not judged",
            own.kubernetes.major,
            own.kubernetes.minor + 1,
            own.kubernetes
        )),
    }
    (minors, notes)
}

/// A connection to the API server of the kubeconfig's current context (or `context`).
pub struct Cluster {
    runtime: tokio::runtime::Runtime,
    client: Client,
    /// The API server's `/version`: `v1.36.2`.
    pub git_version: String,
    /// Its minor, when it reports one.
    pub minor: Option<Version>,
}

impl Cluster {
    /// Connects and reads `/version`.
    pub fn connect(context: Option<&str>) -> Result<Cluster, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        let client = runtime.block_on(client(context))?;
        let info = runtime
            .block_on(client.apiserver_version())
            .map_err(|e| format!("cannot read the API server's /version: {e}"))?;
        let minor = server_minor(&info.major, &info.minor);
        Ok(Cluster {
            runtime,
            client,
            git_version: info.git_version,
            minor,
        })
    }

    /// Every CRD, ValidatingAdmissionPolicy and MutatingAdmissionPolicy of the cluster,
    /// estimated by `run`. A list that fails (forbidden, ...) is an input error naming the
    /// resource and what `--cluster` needs; the other resources are read all the same.
    pub fn estimate(&self, run: &Run<'_>) -> Outcome {
        let mut errors = Vec::new();
        let mut skipped = Vec::new();
        let mut policies = Vec::new();
        for r in &POLICIES {
            let read = self.list(r, &mut |page| policies.extend(page));
            note(r, read, &mut errors, &mut skipped);
        }
        let mut stored = run.stored(policies);
        let read = self.list(&CRDS, &mut |page| stored.crds(page));
        note(&CRDS, read, &mut errors, &mut skipped);
        let mut outcome = stored.finish();
        outcome.input_errors.splice(0..0, errors);
        outcome.skipped.splice(0..0, skipped);
        outcome
    }

    /// Lists `r` at the newest version the API server serves, page by page: `Ok(None)` when it
    /// serves none. Each item gets the list's `apiVersion` and its kind (list items have
    /// neither) and its source.
    fn list(
        &self,
        r: &Resource,
        on_page: &mut dyn FnMut(Vec<(String, Value)>),
    ) -> Result<Option<&'static str>, String> {
        for version in r.versions {
            match self.list_version(r, version, on_page) {
                Err(Listed::NotServed) => continue,
                Err(Listed::Failed(e)) => return Err(e),
                Ok(()) => return Ok(Some(version)),
            }
        }
        Ok(None)
    }

    fn list_version(
        &self,
        r: &Resource,
        version: &str,
        on_page: &mut dyn FnMut(Vec<(String, Value)>),
    ) -> Result<(), Listed> {
        let mut token: Option<String> = None;
        let mut first = true;
        let mut progress: Option<indicatif::ProgressBar> = None;
        loop {
            let page = self.page(r, version, token.as_deref(), first)?;
            if first {
                progress = progress_bar(r, &page);
            }
            first = false;
            token = page
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            let items = objects(r, version, page);
            let count = items.len() as u64;
            on_page(items);
            if let Some(p) = &progress {
                p.inc(count);
            }
            if token.is_none() {
                break;
            }
        }
        if let Some(p) = progress {
            p.finish_and_clear();
        }
        Ok(())
    }

    /// One page of a list.
    fn page(
        &self,
        r: &Resource,
        version: &str,
        token: Option<&str>,
        first: bool,
    ) -> Result<Value, Listed> {
        let mut url = format!(
            "/apis/{}/{version}/{}?limit={}",
            r.group,
            r.plural,
            page_size()
        );
        if let Some(t) = token {
            url.push_str("&continue=");
            url.push_str(&percent_encode(t));
        }
        let request = http::Request::get(url)
            .body(Vec::new())
            .map_err(|e| Listed::Failed(e.to_string()))?;
        let what = format!("{}.{}", r.plural, r.group);
        match self.runtime.block_on(self.client.request::<Value>(request)) {
            Ok(v) => Ok(v),
            Err(kube::Error::Api(s)) if s.code == 404 && first => Err(Listed::NotServed),
            Err(kube::Error::Api(s)) if s.code == 401 || s.code == 403 => {
                Err(Listed::Failed(format!(
                    "cannot list {what}: {} ({}): `celcost estimate --cluster` needs {PERMISSIONS}",
                    s.message.trim_end_matches('.'),
                    s.reason
                )))
            }
            Err(kube::Error::Api(s)) if s.code == 410 => Err(Listed::Failed(format!(
                "the list of {what} expired while it was read ({}): run again",
                s.message
            ))),
            Err(e) => Err(Listed::Failed(format!("cannot list {what}: {e}"))),
        }
    }
}

/// The minor of `/version`'s `major` and `minor` (`"1"`, `"36+"`), when it names one.
fn server_minor(major: &str, minor: &str) -> Option<Version> {
    let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
    Version::parse(&format!("{}.{digits}", major.trim_end_matches('+')))
}

/// Why a list stopped.
enum Listed {
    /// Its first page was a 404: the version is not served.
    NotServed,
    Failed(String),
}

/// What the run says of a resource's list: an input error when it failed, a line on standard
/// error when the API server serves none of its versions.
fn note(
    r: &Resource,
    read: Result<Option<&'static str>, String>,
    errors: &mut Vec<String>,
    skipped: &mut Vec<String>,
) {
    match read {
        Err(e) => errors.push(format!("cluster: {e}")),
        Ok(None) => skipped.push(format!(
            "cluster: {}.{} are not served ({}): none read",
            r.plural,
            r.group,
            r.versions.join(", ")
        )),
        Ok(Some(_)) => {}
    }
}

/// The items of a list page, each with its `apiVersion`, `kind` and source.
fn objects(r: &Resource, version: &str, page: Value) -> Vec<(String, Value)> {
    let Value::Object(mut page) = page else {
        return Vec::new();
    };
    let Some(Value::Array(items)) = page.remove("items") else {
        return Vec::new();
    };
    let api_version = format!("{}/{version}", r.group);
    items
        .into_iter()
        .filter_map(|item| {
            let Value::Object(mut o) = item else {
                return None;
            };
            o.entry("apiVersion")
                .or_insert_with(|| Value::String(api_version.clone()));
            o.entry("kind")
                .or_insert_with(|| Value::String(r.kind.to_string()));
            let name = o
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let source = format!("cluster:{}/{name}", r.short);
            Some((source, Value::Object(o)))
        })
        .collect()
}

/// A progress bar for a big list on a terminal: `Some` when standard error is one and the
/// list has [`PROGRESS_FROM`] items or more (the first page's count and `remainingItemCount`).
fn progress_bar(r: &Resource, first_page: &Value) -> Option<indicatif::ProgressBar> {
    let here = first_page
        .get("items")
        .and_then(Value::as_array)
        .map_or(0, Vec::len) as u64;
    let remaining = first_page
        .pointer("/metadata/remainingItemCount")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let total = here + remaining;
    if total < PROGRESS_FROM || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(format!("{} read", r.plural));
    Some(bar)
}

/// A continue token in a query (tokens are base64: `+`, `/` and `=` need escaping).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The client of the kubeconfig's current context, `context`, or the pod's service account.
async fn client(context: Option<&str>) -> Result<Client, String> {
    let config = match context {
        Some(c) => {
            let options = kube::config::KubeConfigOptions {
                context: Some(c.to_string()),
                ..Default::default()
            };
            kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|e| format!("cannot use the kubeconfig's context {c:?}: {e}"))?
        }
        None => kube::Config::infer().await.map_err(|e| {
            format!("cannot configure a Kubernetes client (KUBECONFIG, ~/.kube/config or in-cluster): {e}")
        })?,
    };
    Client::try_from(config).map_err(|e| format!("cannot configure a Kubernetes client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(minor: u32) -> Version {
        Version::new(1, minor)
    }

    #[test]
    fn a_cluster_is_judged_by_its_minor_and_the_next() {
        let k = Distribution::Kubernetes;
        assert_eq!(minors_for(v(36), k), (vec![v(36), v(37)], vec![]));
        let (minors, notes) = minors_for(v(37), k);
        assert_eq!(minors, vec![v(37)]);
        assert!(
            notes[0].contains("no rules for Kubernetes 1.38"),
            "{notes:?}"
        );
        let (minors, notes) = minors_for(v(40), k);
        assert_eq!(minors, vec![v(37)]);
        assert!(
            notes[0].contains("1.40, which celcost has no rules for"),
            "{notes:?}"
        );
        assert_eq!(minors_for(v(28), k), (vec![v(28), v(29)], vec![]));
        let (minors, notes) = minors_for(v(27), k);
        assert_eq!(minors, vec![v(28)]);
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn list_items_get_their_kind_and_source() {
        let page = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinitionList",
            "items": [{"metadata": {"name": "a.example.com"}, "spec": {}}]
        });
        let items = objects(&CRDS, "v1", page);
        assert_eq!(items[0].0, "cluster:crd/a.example.com");
        assert_eq!(items[0].1["kind"], "CustomResourceDefinition");
        assert_eq!(items[0].1["apiVersion"], "apiextensions.k8s.io/v1");
    }

    #[test]
    fn server_minors() {
        assert_eq!(server_minor("1", "36"), Some(v(36)));
        assert_eq!(server_minor("1", "33+"), Some(v(33)));
        assert_eq!(server_minor("1", ""), None);
    }

    #[test]
    fn continue_tokens_are_escaped() {
        assert_eq!(percent_encode("eyJ2Ijo+/="), "eyJ2Ijo%2B%2F%3D");
    }
}
