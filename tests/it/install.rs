//! The install: `kubectl kustomize` renders config/default (webhook included) and
//! config/no-webhook, and what they render is what the operator and the API server need — the
//! webhook configuration never denies and answers in time, its Service reaches the container's
//! port, and the RBAC the webhook adds is exactly the least privilege documented. Skipped (with
//! a line) where kubectl is not installed.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use serde_json::{Value, json};

/// The objects `kubectl kustomize dir` renders, or None without kubectl.
fn render(dir: &str) -> Option<Vec<Value>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = match Command::new("kubectl")
        .arg("kustomize")
        .arg(root.join(dir))
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            crate::common::skip(
                "CELCOST_REQUIRE_KUBECTL",
                "install",
                &format!("kubectl not found: {e}"),
            );
            return None;
        }
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| Value::deserialize(d).unwrap())
            .filter(|v| !v.is_null())
            .collect(),
    )
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

/// Every value of the container's environment variable `name` (one entry is expected).
fn env_values(deployment: &Value, name: &str) -> Vec<String> {
    env_of(deployment)
        .into_iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v)
        .collect()
}

fn env_of(deployment: &Value) -> Vec<(String, String)> {
    deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["name"].as_str().unwrap_or_default().to_string(),
                        e["value"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn default_installs_the_webhook_with_least_privilege() {
    let Some(objects) = render("config/default") else {
        return;
    };
    let vwc = find(&objects, "ValidatingWebhookConfiguration", "celcost")
        .expect("config/default has the ValidatingWebhookConfiguration");
    let hooks = vwc["webhooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 1);
    let w = &hooks[0];
    assert_eq!(w["failurePolicy"], "Ignore", "never in the way");
    assert_eq!(w["sideEffects"], "None");
    assert_eq!(w["matchPolicy"], "Equivalent");
    let timeout = w["timeoutSeconds"].as_u64().unwrap();
    assert!((1..=10).contains(&timeout), "timeoutSeconds {timeout}");
    assert_eq!(w["admissionReviewVersions"], json!(["v1"]));
    assert!(
        w["clientConfig"].get("caBundle").is_none(),
        "the operator writes it"
    );
    let resources: Vec<&str> = w["rules"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            assert_eq!(r["operations"], json!(["CREATE", "UPDATE"]), "{r}");
            r["resources"].as_array().unwrap().iter()
        })
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(
        resources,
        [
            "customresourcedefinitions",
            "validatingadmissionpolicies",
            "mutatingadmissionpolicies"
        ]
    );

    // The Service the configuration calls reaches the container's webhook port.
    let svc_ref = &w["clientConfig"]["service"];
    assert_eq!(svc_ref["path"], "/validate");
    let svc = find(
        &objects,
        "Service",
        svc_ref["name"].as_str().expect("a service reference"),
    )
    .expect("the webhook's Service");
    assert_eq!(svc["metadata"]["namespace"], svc_ref["namespace"]);
    assert_eq!(svc["spec"]["ports"][0]["port"], svc_ref["port"]);
    let target = svc["spec"]["ports"][0]["targetPort"].as_str().unwrap();
    let deployment = find(&objects, "Deployment", "celcost").expect("the Deployment");
    let pod = &deployment["spec"]["template"];
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&pod["metadata"]["labels"][k], v, "selector {k}");
    }
    let ports = pod["spec"]["containers"][0]["ports"].as_array().unwrap();
    let port = ports
        .iter()
        .find(|p| p["name"] == target)
        .expect("the container names the Service's targetPort");
    assert_eq!(port["containerPort"], 9443, "--webhook-address's default");
    assert_eq!(
        env_values(deployment, "CELCOST_WEBHOOK"),
        ["true"],
        "asked for explicitly"
    );

    // RBAC added by the webhook: exactly these rules.
    let role = find(&objects, "Role", "celcost-webhook").expect("the webhook's Role");
    assert_eq!(role["metadata"]["namespace"], "celcost-system");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["celcost-webhook-tls"], "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}
        ])
    );
    let cluster_role =
        find(&objects, "ClusterRole", "celcost-webhook").expect("the webhook's ClusterRole");
    assert_eq!(
        cluster_role["rules"],
        json!([{"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"],
                "resourceNames": ["celcost"], "verbs": ["get", "patch"]}])
    );
    for (kind, role_kind) in [
        ("RoleBinding", "Role"),
        ("ClusterRoleBinding", "ClusterRole"),
    ] {
        let b = find(&objects, kind, "celcost-webhook").expect(kind);
        assert_eq!(b["roleRef"]["kind"], role_kind);
        assert_eq!(b["roleRef"]["name"], "celcost-webhook");
        assert_eq!(
            b["subjects"],
            json!([{"kind": "ServiceAccount", "name": "celcost", "namespace": "celcost-system"}])
        );
    }
    // No other role grants anything on Secrets or webhook configurations.
    for o in &objects {
        if !matches!(o["kind"].as_str(), Some("Role" | "ClusterRole"))
            || o["metadata"]["name"] == "celcost-webhook"
        {
            continue;
        }
        for r in o["rules"].as_array().unwrap() {
            let res = r["resources"].to_string();
            assert!(
                !res.contains("secrets") && !res.contains("webhookconfigurations"),
                "{} {}: {r}",
                o["kind"],
                o["metadata"]["name"]
            );
        }
    }
}

#[test]
fn no_webhook_variant_has_none_of_it() {
    let (Some(default), Some(objects)) = (render("config/default"), render("config/no-webhook"))
    else {
        return;
    };
    let names = |objs: &[Value]| -> Vec<String> {
        objs.iter()
            .map(|o| format!("{}/{}", o["kind"], o["metadata"]["name"]))
            .collect()
    };
    let (with, without) = (names(&default), names(&objects));
    let mut removed: Vec<&str> = with
        .iter()
        .filter(|n| !without.contains(n))
        .map(String::as_str)
        .collect();
    removed.sort_unstable();
    assert_eq!(
        removed,
        [
            "\"ClusterRole\"/\"celcost-webhook\"",
            "\"ClusterRoleBinding\"/\"celcost-webhook\"",
            "\"Role\"/\"celcost-webhook\"",
            "\"RoleBinding\"/\"celcost-webhook\"",
            "\"Service\"/\"celcost-webhook\"",
            "\"ValidatingWebhookConfiguration\"/\"celcost\"",
        ],
        "{without:?}"
    );
    assert!(without.iter().all(|n| with.contains(n)));
    let deployment = find(&objects, "Deployment", "celcost").unwrap();
    assert_eq!(
        env_values(deployment, "CELCOST_WEBHOOK"),
        ["false"],
        "the operator is told, once"
    );
}
