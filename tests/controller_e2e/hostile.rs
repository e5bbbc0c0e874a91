//! Hostile objects the API server accepts, next to normal ones: the operator stays up and under
//! its memory limit, reports the ones over its work budget as not estimated (with an event), and
//! keeps the other reports current.

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;

use super::*;

/// The memory limit of the operator's container in `config/manager`.
const MEMORY_LIMIT_KIB: u64 = 256 * 1024;

/// `v0: object.metadata.name`, `vN: variables.vN-1 + variables.vN-1`: exponential for an
/// estimator that expands variables where they are used.
fn chained_policy(name: &str, n: usize) -> Value {
    let mut vars = vec![json!({"name": "v0", "expression": "object.metadata.name"})];
    for i in 1..n {
        vars.push(json!({"name": format!("v{i}"), "expression": format!("variables.v{} + variables.v{}", i - 1, i - 1)}));
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {"celcost.io/e2e": "true"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "variables": vars,
            "validations": [{"expression": format!("size(variables.v{}) < 10", n - 1)}]
        }
    })
}

/// A CRD with `n` bounded string fields, a rule on each.
fn wide_crd(group: &str, n: usize) -> Value {
    let mut props = serde_json::Map::new();
    for i in 0..n {
        props.insert(
            format!("f{i}"),
            json!({"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self.size() < 5"}]}),
        );
    }
    let mut crd = test_crd(group, 10);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        .as_object_mut()
        .unwrap()
        .extend(props);
    crd
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn hostile_objects_do_not_stall_the_others() {
    let test = "hostile_objects_do_not_stall_the_others";
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster(test).await else {
        return;
    };
    install_crd(&client).await;
    // A budget that the test's normal CRDs (about 2,000 steps) and the 30-variable policy fit
    // in, and the 3,000-variable policy and the 3,000-rule CRD (about 50,000) do not.
    let mut op = Operator::start(test, &["--estimate-max-steps", "20000"]);
    op.wait_ready(Duration::from_secs(60)).await;
    let s = suffix();
    let vaps: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let mut policies = Vec::new();
    for n in [30, 3000] {
        let name = format!("chain{n}-{s}");
        let vap: ValidatingAdmissionPolicy =
            serde_json::from_value(chained_policy(&name, n)).unwrap();
        let t = Instant::now();
        vaps.create(&PostParams::default(), &vap)
            .await
            .unwrap_or_else(|e| panic!("the API server accepts {name}: {e}"));
        println!(
            "{test}: the API server accepted {name} in {:?}",
            t.elapsed()
        );
        policies.push(name);
    }
    let wide = format!("wide-{s}.e2e.celcost.io");
    create_crd(&client, &wide_crd(&wide, 3000)).await;
    let normal = format!("normal-{s}.e2e.celcost.io");
    create_crd(&client, &test_crd(&normal, 1000)).await;

    // The 30-variable policy is estimated (each variable once); the two big ones are not.
    let reports: Api<CostReport> = Api::all(client.clone());
    let estimated = |name: String| {
        let reports = reports.clone();
        async move {
            eventually(
                &format!("report {name}"),
                Duration::from_secs(60),
                || async {
                    let r = reports.get_opt(&name).await.ok()??;
                    let c = r
                        .status
                        .as_ref()?
                        .conditions
                        .iter()
                        .find(|c| c.type_ == "Estimated")?
                        .clone();
                    Some((c.status, c.reason, c.message))
                },
            )
            .await
        }
    };
    let (st, reason, _) = estimated(format!("vap.{}", policies[0])).await;
    assert_eq!((st.as_str(), reason.as_str()), ("True", "Estimated"));
    for name in [
        format!("vap.{}", policies[1]),
        format!("crd.widgets.{wide}"),
    ] {
        let (st, reason, message) = estimated(name.clone()).await;
        assert_eq!(
            (st.as_str(), reason.as_str()),
            ("False", "WorkBudgetExceeded"),
            "{name}: {message}"
        );
        assert!(
            message.contains("work budget of 20000 steps exceeded at"),
            "{message}"
        );
        println!("{test}: {name}: {message}");
    }
    let events = eventually(
        "an event on the policy",
        Duration::from_secs(30),
        || async {
            let e = events_about(&client, &policies[1]).await;
            (!e.is_empty()).then_some(e)
        },
    )
    .await;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("WorkBudgetExceeded")),
        "{events:?}"
    );

    // The normal CRD is followed: its update is reported within seconds.
    report_for(&client, &format!("crd.widgets.{normal}"), 1).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        &format!("widgets.{normal}"),
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"versions": test_crd(&normal, 10_000)["spec"]["versions"]}})),
    )
    .await
    .unwrap();
    let t = Instant::now();
    let r = report_for(&client, &format!("crd.widgets.{normal}"), 2).await;
    assert_eq!(condition(&r, "WithinBudget"), ("False", "RuleNearBudget"));
    println!(
        "{test}: a normal CRD's update reported after {:.2} s",
        t.elapsed().as_secs_f64()
    );
    assert!(t.elapsed() < Duration::from_secs(10));

    // Not retried in a tight loop: the budget failures stay at one estimate each.
    let before = op.metric("celcost_estimates_total");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = op.metric("celcost_estimates_total");
    assert!(after - before <= 1.0, "estimates {before} → {after}");
    assert!(op.alive(), "the operator is up");
    let peak = op.peak_rss_kib();
    println!(
        "{test}: operator peak RSS {:.1} MiB (limit {} MiB)",
        peak as f64 / 1024.0,
        MEMORY_LIMIT_KIB / 1024
    );
    assert!(peak < MEMORY_LIMIT_KIB);

    for p in &policies {
        let _ = vaps.delete(p, &DeleteParams::default()).await;
    }
    delete_crd(&client, &format!("widgets.{wide}")).await;
    delete_crd(&client, &format!("widgets.{normal}")).await;
}
