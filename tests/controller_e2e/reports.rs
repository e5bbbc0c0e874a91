//! The policy reports (`--reports`, issue 47) against a real API server: with the OpenReports
//! CRD installed, a CRD near budget gets a `ClusterReport` whose results and summary say so,
//! `kubectl get clusterreports` lists it, an operator restart rewrites none of them (their
//! resourceVersion stays), and it goes with its target (the garbage collector, through the
//! CostReport that owns it); with only the policy working group's CRD, a `ClusterPolicyReport`.
//! The report CRDs are the upstream copies in `../shared/crds`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use celcost::output::openreports::ReportApi;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::Value;

use super::{
    Operator, SERIAL, all_estimated, cluster, create_crd, delete_crd, eventually, install_crd,
    report_for, suffix, test_crd, wait_established,
};
use celcost::controller::CostReport;

fn crd_file(api: ReportApi) -> PathBuf {
    let (dir, file) = match api {
        ReportApi::OpenReports => ("openreports", "openreports.io_clusterreports.yaml"),
        ReportApi::PolicyReports => ("wgpolicyk8s", "wgpolicyk8s.io_clusterpolicyreports.yaml"),
    };
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/crds")
        .join(dir)
        .join(file)
}

fn crd_name(api: ReportApi) -> String {
    format!("{}.{}", api.plural(), api.group())
}

async fn install_report_crd(client: &Client, api: ReportApi) {
    let text = std::fs::read_to_string(crd_file(api)).expect("../shared/crds");
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(&text).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        &crd_name(api),
        &PatchParams::apply("celcost-e2e").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("install a report CRD");
    wait_established(client, &crd_name(api)).await;
}

/// Deletes the report CRD of `api` (and so every report of it) and waits until it is gone.
async fn remove_report_crd(client: &Client, api: ReportApi) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let _ = crds.delete(&crd_name(api), &DeleteParams::default()).await;
    eventually(
        &format!("CRD {} gone", crd_name(api)),
        Duration::from_secs(60),
        || async { matches!(crds.get_opt(&crd_name(api)).await, Ok(None)).then_some(()) },
    )
    .await;
}

fn reports_api(client: &Client, api: ReportApi) -> Api<DynamicObject> {
    Api::all_with(
        client.clone(),
        &celcost::controller::reports::policy_reports::api_resource(api),
    )
}

async fn report_of(client: &Client, api: ReportApi, name: &str) -> DynamicObject {
    let reports = reports_api(client, api);
    eventually(
        &format!("{} {name}", api.kind()),
        Duration::from_secs(60),
        || async { reports.get_opt(name).await.ok().flatten() },
    )
    .await
}

/// A CRD whose rule is near budget (82 %) has a report saying so, owned by its CostReport.
async fn check_near_budget(client: &Client, api: ReportApi, crd: &str) -> DynamicObject {
    let name = format!("crd.{crd}");
    let cost_report: CostReport = report_for(client, &name, 1).await;
    let r = report_of(client, api, &name).await;
    let owner = &r.owner_references()[0];
    assert_eq!(owner.kind, "CostReport");
    assert_eq!(owner.name, name);
    assert_eq!(Some(&owner.uid), cost_report.metadata.uid.as_ref());
    assert_eq!(r.labels()["app.kubernetes.io/managed-by"], "celcost");
    let d = &r.data;
    assert_eq!(d["scope"]["kind"], "CustomResourceDefinition");
    assert_eq!(d["scope"]["name"], crd);
    assert_eq!(d["summary"]["warn"], 1, "{d:#}");
    assert_eq!(d["summary"]["fail"], 0, "{d:#}");
    assert_eq!(d["summary"]["pass"], 0, "{d:#}");
    let results = d["results"].as_array().unwrap();
    let warn: Vec<&Value> = results.iter().filter(|x| x["result"] == "warn").collect();
    assert_eq!(warn.len(), 1, "{d:#}");
    assert_eq!(warn[0]["policy"], "celcost/rule-near-budget");
    assert_eq!(warn[0]["source"], "celcost");
    assert_eq!(warn[0]["properties"]["kubernetesVersion"], "v1.36");
    assert_eq!(warn[0]["properties"]["limit"], "10000000");
    // The same number as the CostReport's.
    let status = cost_report.status.unwrap().summary.unwrap();
    assert_eq!(
        warn[0]["properties"]["cost"],
        status.highest_rule_cost.to_string()
    );
    assert_eq!(status.rules_near_budget, 1);
    r
}

fn kubectl_get(plural: &str) -> String {
    let out = std::process::Command::new("kubectl")
        .args(["get", plural])
        .output()
        .expect("run kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn policy_reports_follow_their_targets() {
    let _serial = SERIAL.lock().await;
    let Some(client) = cluster("policy_reports_follow_their_targets").await else {
        return;
    };
    install_crd(&client).await;
    remove_report_crd(&client, ReportApi::PolicyReports).await;
    install_report_crd(&client, ReportApi::OpenReports).await;

    // OpenReports served: auto writes ClusterReports.
    let group = format!("openreports-{}.e2e.celcost.io", suffix());
    let crd = format!("widgets.{group}");
    create_crd(&client, &test_crd(&group, 10_000)).await;
    let before_restart = {
        let mut op = Operator::start("reports-openreports", &[]);
        op.wait_ready(Duration::from_secs(60)).await;
        check_near_budget(&client, ReportApi::OpenReports, &crd).await;
        let listed = kubectl_get("clusterreports");
        assert!(listed.contains(&format!("crd.{crd}")), "{listed}");
        println!("kubectl get clusterreports:\n{listed}");
        // Every report written before the restart.
        all_estimated(&client, &op).await;
        reports_api(&client, ReportApi::OpenReports)
            .list(&Default::default())
            .await
            .unwrap()
            .items
    };
    // A restarted operator rewrites none of them.
    {
        let mut op = Operator::start("reports-openreports-restarted", &[]);
        op.wait_ready(Duration::from_secs(60)).await;
        all_estimated(&client, &op).await;
        assert_eq!(
            op.metric("celcost_report_writes_total"),
            0.0,
            "no writes on restart"
        );
        let reports = reports_api(&client, ReportApi::OpenReports);
        for r in &before_restart {
            let now = reports.get(&r.name_any()).await.unwrap();
            assert_eq!(
                now.resource_version(),
                r.resource_version(),
                "{} rewritten",
                r.name_any()
            );
        }
        println!(
            "restart: {} ClusterReports, resourceVersions unchanged",
            before_restart.len()
        );
        // Gone with its target: CRD → CostReport → ClusterReport (the garbage collector).
        delete_crd(&client, &crd).await;
        eventually(
            "the ClusterReport of a deleted CRD gone",
            Duration::from_secs(90),
            || async {
                matches!(reports.get_opt(&format!("crd.{crd}")).await, Ok(None)).then_some(())
            },
        )
        .await;
    }

    // `celcost estimate --output openreports` writes objects the API server takes as they are:
    // a server-side dry run with strict field validation (an unknown field is an error, not
    // pruned), over objects within budget, near it, over it and refused by the next minor.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_celcost"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "estimate",
            "--kubernetes-version",
            "1.36..1.37",
            "--output",
            "openreports",
            "examples/crds",
            "examples/policies",
            "tests/data/upgrade-1.37",
        ])
        .output()
        .unwrap();
    let file = std::env::temp_dir().join(format!("celcost-openreports-{}.yaml", suffix()));
    std::fs::write(&file, &out.stdout).unwrap();
    let applied = std::process::Command::new("kubectl")
        .args([
            "apply",
            "--server-side",
            "--dry-run=server",
            "--validate=strict",
            // Other tests' operators may have written a report of the same name: a dry run
            // checks the schema, it does not take the fields over.
            "--force-conflicts",
            "-f",
        ])
        .arg(&file)
        .output()
        .expect("run kubectl");
    let _ = std::fs::remove_file(&file);
    let said = String::from_utf8_lossy(&applied.stdout).to_string();
    assert!(
        applied.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    assert_eq!(
        said.matches("serverside-applied (server dry run)").count(),
        6,
        "{said}"
    );

    // Only the policy working group's API served: auto writes ClusterPolicyReports.
    remove_report_crd(&client, ReportApi::OpenReports).await;
    install_report_crd(&client, ReportApi::PolicyReports).await;
    let group = format!("policyreports-{}.e2e.celcost.io", suffix());
    let crd = format!("widgets.{group}");
    create_crd(&client, &test_crd(&group, 10_000)).await;
    {
        let mut op = Operator::start("reports-policyreports", &[]);
        op.wait_ready(Duration::from_secs(60)).await;
        let r = check_near_budget(&client, ReportApi::PolicyReports, &crd).await;
        assert!(
            r.data.get("source").is_none(),
            "v1alpha2 has no top-level source"
        );
        let listed = kubectl_get("clusterpolicyreports");
        assert!(listed.contains(&format!("crd.{crd}")), "{listed}");
        println!("kubectl get clusterpolicyreports:\n{listed}");
        all_estimated(&client, &op).await;
        drop(op);
        // Written at v1alpha2, stored at v1beta1: read back equal, so a restart writes nothing.
        let mut op = Operator::start("reports-policyreports-restarted", &[]);
        op.wait_ready(Duration::from_secs(60)).await;
        all_estimated(&client, &op).await;
        assert_eq!(op.metric("celcost_report_writes_total"), 0.0);
        let again = report_of(&client, ReportApi::PolicyReports, &format!("crd.{crd}")).await;
        assert_eq!(again.resource_version(), r.resource_version());
        delete_crd(&client, &crd).await;
        let reports = reports_api(&client, ReportApi::PolicyReports);
        eventually(
            "the ClusterPolicyReport of a deleted CRD gone",
            Duration::from_secs(90),
            || async {
                matches!(reports.get_opt(&format!("crd.{crd}")).await, Ok(None)).then_some(())
            },
        )
        .await;
    }
    // `--reports=off`: none written even where the API is served.
    let group = format!("reports-off-{}.e2e.celcost.io", suffix());
    let crd = format!("widgets.{group}");
    create_crd(&client, &test_crd(&group, 10_000)).await;
    {
        let mut op = Operator::start("reports-off", &["--reports=off"]);
        op.wait_ready(Duration::from_secs(60)).await;
        report_for(&client, &format!("crd.{crd}"), 1).await;
        all_estimated(&client, &op).await;
        let reports = reports_api(&client, ReportApi::PolicyReports);
        assert!(
            reports
                .get_opt(&format!("crd.{crd}"))
                .await
                .unwrap()
                .is_none()
        );
        delete_crd(&client, &crd).await;
    }
    remove_report_crd(&client, ReportApi::PolicyReports).await;
}
