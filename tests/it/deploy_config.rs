//! `config/default` renders with `kubectl kustomize` (what `kubectl apply -k` installs), and the
//! rendering has what high availability needs. Skipped (passes, says so) where kubectl is absent.

use std::process::Command;

use serde::Deserialize;
use serde_json::Value;

fn render() -> Option<Vec<Value>> {
    let out = match Command::new("kubectl")
        .args(["kustomize", "config/default"])
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
        "kubectl kustomize config/default failed: {}",
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
