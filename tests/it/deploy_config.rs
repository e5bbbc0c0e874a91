//! `config/default` renders with `kubectl kustomize` (what `kubectl apply -k` installs), and the
//! rendering has what high availability needs. Skipped (passes, says so) where kubectl is absent.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use serde_json::{Value, json};

fn render() -> Option<Vec<Value>> {
    render_dir(Path::new("config/default"))
}

/// `kubectl kustomize dir` (relative to the repository, or absolute).
fn render_dir(dir: &Path) -> Option<Vec<Value>> {
    let out = match Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            crate::common::skip(
                "CELCOST_REQUIRE_KUBECTL",
                "deploy_config",
                &format!("kubectl is not available ({e})"),
            );
            return None;
        }
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect();
    assert!(!docs.is_empty(), "nothing rendered");
    Some(docs)
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in config/default"))
}

#[test]
fn default_config_is_highly_available() {
    let Some(docs) = render() else { return };
    let deploy = find(&docs, "Deployment", "celcost");
    let ns = deploy["metadata"]["namespace"]
        .as_str()
        .expect("namespaced");
    assert_eq!(deploy["spec"]["replicas"], 2);
    let pod_labels = &deploy["spec"]["template"]["metadata"]["labels"];
    let pod = &deploy["spec"]["template"]["spec"];

    // Spread across nodes, selecting the operator's own pods.
    let spread = pod["topologySpreadConstraints"]
        .as_array()
        .expect("topologySpreadConstraints");
    let by_node = spread
        .iter()
        .find(|c| c["topologyKey"] == "kubernetes.io/hostname")
        .expect("a spread across nodes");
    assert_eq!(by_node["maxSkew"], 1);
    for (k, v) in by_node["labelSelector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(&pod_labels[k], v, "the spread selects the operator's pods");
    }

    // A disruption budget that keeps one of these pods.
    let pdb = find(&docs, "PodDisruptionBudget", "celcost");
    assert_eq!(pdb["metadata"]["namespace"], ns);
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    let selector = pdb["spec"]["selector"]["matchLabels"].as_object().unwrap();
    assert!(!selector.is_empty());
    for (k, v) in selector {
        assert_eq!(&pod_labels[k], v, "the budget selects the operator's pods");
    }

    // The pod knows its name (holder identity) and namespace (where the Lease is).
    let env = pod["containers"][0]["env"].as_array().unwrap();
    let field = |name: &str| {
        env.iter()
            .find(|e| e["name"] == name)
            .map(|e| e["valueFrom"]["fieldRef"]["fieldPath"].clone())
    };
    assert_eq!(field("POD_NAME"), Some("metadata.name".into()));
    assert_eq!(field("POD_NAMESPACE"), Some("metadata.namespace".into()));
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert!(
        !args.iter().any(|a| a
            .as_str()
            .is_some_and(|a| a.starts_with("--leader-elect") && a.ends_with("false"))),
        "leader election is on: {args:?}"
    );
    // Asked for explicitly, as controller-runtime's manifests do (the default is on only in a pod).
    let value = |name: &str| {
        env.iter()
            .filter(|e| e["name"] == name)
            .map(|e| e["value"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(value("CELCOST_LEADER_ELECT"), ["true"]);

    // Leases: a Role in the operator's namespace, bound to its service account; get and
    // update only on the one Lease, create (which cannot be name-restricted), nothing else.
    let role = find(&docs, "Role", "celcost-leader-election");
    assert_eq!(role["metadata"]["namespace"], ns);
    let mut verbs = Vec::new();
    for rule in role["rules"].as_array().unwrap() {
        assert_eq!(
            rule["apiGroups"],
            serde_json::json!(["coordination.k8s.io"])
        );
        assert_eq!(rule["resources"], serde_json::json!(["leases"]));
        for verb in rule["verbs"].as_array().unwrap() {
            let verb = verb.as_str().unwrap();
            if verb != "create" {
                assert_eq!(
                    rule["resourceNames"],
                    serde_json::json!(["celcost"]),
                    "{verb} is restricted to the Lease's name"
                );
            }
            verbs.push(verb.to_string());
        }
    }
    verbs.sort();
    assert_eq!(verbs, ["create", "get", "update"]);
    let binding = find(&docs, "RoleBinding", "celcost-leader-election");
    assert_eq!(binding["metadata"]["namespace"], ns);
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["roleRef"]["name"], "celcost-leader-election");
    let sa = pod["serviceAccountName"].as_str().unwrap();
    assert!(
        binding["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["kind"] == "ServiceAccount" && s["name"] == sa && s["namespace"] == ns),
        "bound to the operator's service account"
    );
    // No cluster-wide lease rights.
    for d in docs.iter().filter(|d| d["kind"] == "ClusterRole") {
        let rules = d["rules"].as_array().map(Vec::as_slice).unwrap_or_default();
        assert!(
            !rules.iter().any(|r| r["resources"]
                .as_array()
                .is_some_and(|rs| rs.iter().any(|x| x == "leases"))),
            "leases are namespaced: {d}"
        );
    }
}

/// The container port named `name` of the operator's Deployment.
fn container_port(deploy: &Value, name: &str) -> i64 {
    deploy["spec"]["template"]["spec"]["containers"][0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["containerPort"].as_i64())
        .unwrap_or_else(|| panic!("no container port {name}"))
}

/// /metrics on its own HTTPS port behind the Service, the probes on a plain port of their own,
/// the operator allowed to send TokenReviews and SubjectAccessReviews, and a reader role for
/// scrapers; config/prometheus scrapes over HTTPS with a service account's token.
#[test]
fn metrics_are_served_over_https_to_authorized_scrapers() {
    let Some(docs) = render() else { return };
    let deploy = find(&docs, "Deployment", "celcost");
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    let env: Vec<(String, String)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["value"].as_str()?.to_string(),
            ))
        })
        .collect();
    let var = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(var("CELCOST_METRICS_BIND_ADDRESS"), Some(":8443"));
    assert_eq!(var("CELCOST_LISTEN_ADDRESS"), Some("0.0.0.0:8080"));
    // Secure is the operator's default: nothing turns it off.
    assert_eq!(var("CELCOST_METRICS_SECURE"), None);
    assert_eq!(container_port(deploy, "https-metrics"), 8443);
    assert_eq!(container_port(deploy, "health"), 8080);
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(container[probe]["httpGet"]["port"], "health", "{probe}");
        assert!(
            container[probe]["httpGet"]["scheme"].is_null(),
            "{probe}: plain HTTP"
        );
    }
    let svc = find(&docs, "Service", "celcost-metrics");
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"name": "https-metrics", "port": 8443, "targetPort": "https-metrics", "protocol": "TCP"}])
    );

    let auth = find(&docs, "ClusterRole", "celcost-metrics-auth");
    assert_eq!(
        auth["rules"],
        json!([
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}
        ])
    );
    let binding = find(&docs, "ClusterRoleBinding", "celcost-metrics-auth");
    assert_eq!(binding["roleRef"]["name"], "celcost-metrics-auth");
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "celcost", "namespace": "celcost-system"}])
    );
    let reader = find(&docs, "ClusterRole", "celcost-metrics-reader");
    assert_eq!(
        reader["rules"],
        json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    );
    // The webhook's certificate names the metrics Service too (cert-manager's).
    let cm = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("config/components/cert-manager/certificate.yaml"),
    )
    .unwrap();
    assert!(
        cm.contains("- celcost-metrics.celcost-system.svc\n"),
        "{cm}"
    );

    let Some(prom) = render_dir(Path::new("config/prometheus")) else {
        return;
    };
    let sm = find(&prom, "ServiceMonitor", "celcost");
    let endpoint = &sm["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "https-metrics");
    assert_eq!(endpoint["scheme"], "https");
    assert!(endpoint["bearerTokenFile"].is_null());
    assert_eq!(
        endpoint["authorization"],
        json!({"type": "Bearer", "credentials": {"name": "celcost-metrics-scraper-token", "key": "token"}})
    );
    assert_eq!(
        endpoint["tlsConfig"],
        json!({"serverName": "celcost-metrics.celcost-system.svc",
               "ca": {"secret": {"name": "celcost-webhook-tls", "key": "ca.crt"}}})
    );
    let token = find(&prom, "Secret", "celcost-metrics-scraper-token");
    assert_eq!(token["type"], "kubernetes.io/service-account-token");
    assert_eq!(
        token["metadata"]["annotations"]["kubernetes.io/service-account.name"],
        "celcost-metrics-scraper"
    );
    find(&prom, "ServiceAccount", "celcost-metrics-scraper");
    let scraper = find(&prom, "ClusterRoleBinding", "celcost-metrics-scraper");
    assert_eq!(scraper["roleRef"]["name"], "celcost-metrics-reader");
    assert_eq!(
        scraper["subjects"],
        json!([{"kind": "ServiceAccount", "name": "celcost-metrics-scraper", "namespace": "celcost-system"}])
    );
}

/// config/default with the component config/network-policy, in a temporary overlay.
fn render_with_network_policy() -> Option<Vec<Value>> {
    let dir = tempfile::tempdir().unwrap();
    // kustomize wants paths relative to the overlay.
    let depth = dir.path().components().count() - 1;
    let rel = |p: &str| {
        format!(
            "{}{}",
            "../".repeat(depth),
            Path::new(env!("CARGO_MANIFEST_DIR")).join(p).display()
        )
        .replace("//", "/")
    };
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources: [{}]\ncomponents: [{}]\n",
            rel("config/default"),
            rel("config/network-policy")
        ),
    )
    .unwrap();
    render_dir(dir.path())
}

/// The NetworkPolicies select the operator's pods and let in only the webhook's port (from
/// anywhere: the API server is not a pod) and the metrics port (from namespaces labelled
/// `metrics: enabled`); nothing opens the probes port, which the kubelet reaches from the node.
#[test]
fn network_policies_open_only_the_webhook_and_the_metrics() {
    let Some(docs) = render_with_network_policy() else {
        return;
    };
    let deploy = find(&docs, "Deployment", "celcost");
    let pod_labels = &deploy["spec"]["template"]["metadata"]["labels"];
    let policies: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] == "NetworkPolicy")
        .collect();
    assert_eq!(policies.len(), 2);
    let mut opened = Vec::new();
    for p in &policies {
        assert_eq!(p["metadata"]["namespace"], "celcost-system");
        let selector = p["spec"]["podSelector"]["matchLabels"].as_object().unwrap();
        assert!(!selector.is_empty());
        for (k, v) in selector {
            assert_eq!(&pod_labels[k], v, "{}", p["metadata"]["name"]);
        }
        assert_eq!(
            p["spec"]["policyTypes"],
            json!(["Ingress"]),
            "egress is not restricted"
        );
        for rule in p["spec"]["ingress"].as_array().unwrap() {
            for port in rule["ports"].as_array().unwrap() {
                opened.push((port["port"].as_i64().unwrap(), rule["from"].clone()));
            }
        }
    }
    opened.sort_by_key(|(p, _)| *p);
    assert_eq!(
        opened,
        [
            (
                container_port(deploy, "https-metrics"),
                json!([{"namespaceSelector": {"matchLabels": {"metrics": "enabled"}}}])
            ),
            (container_port(deploy, "webhook"), Value::Null),
        ]
    );
    // Without the component there are none.
    let Some(plain) = render() else { return };
    assert!(!plain.iter().any(|d| d["kind"] == "NetworkPolicy"));
}
