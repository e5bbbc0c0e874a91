//! High availability: two operator processes elect a leader on a Lease; only the leader writes.
//! The leader killed (SIGKILL): the other takes over once the lease expires. The leader stopped
//! (SIGTERM): it releases the lease, and the other takes over at its next attempt. Each prints
//! the measured failover time (from the signal until a CRD update, made as soon as the old
//! leader's process has exited, is reported).

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use super::{
    Operator, SERIAL, cluster, create_crd, delete_crd, eventually, install_crd, report_for, suffix,
    test_crd,
};

/// The lease's namespace: `default` exists in every cluster.
const NAMESPACE: &str = "default";
/// client-go's defaults, the operator's too.
const LEASE_SECONDS: u64 = 15;
const RETRY_SECONDS: u64 = 2;

struct Pair {
    ops: [Operator; 2],
    identities: [String; 2],
    lease: String,
}

/// Two operators electing a leader on a fresh Lease; returns them once one leads.
async fn pair(client: &Client, test: &str) -> (Pair, usize) {
    let lease = format!("celcost-e2e-{}", suffix());
    let identities = [format!("{test}-a"), format!("{test}-b")];
    let start = |i: usize| {
        Operator::start_with(
            &format!("{test}-{}", ["a", "b"][i]),
            &[
                "--leader-elect=true",
                "--leader-election-namespace",
                NAMESPACE,
                "--leader-election-lease-name",
                &lease,
            ],
            &[("POD_NAME", identities[i].as_str())],
        )
    };
    let mut ops = [start(0), start(1)];
    for op in &mut ops {
        // Followers are ready too: they watch and serve.
        op.wait_ready(Duration::from_secs(60)).await;
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let leader = eventually("one leader", Duration::from_secs(30), || async {
        let holder = leases.get_opt(&lease).await.ok()??.spec?.holder_identity?;
        let i = identities.iter().position(|id| *id == holder)?;
        (ops[i].metric("celcost_leader") == 1.0 && ops[1 - i].metric("celcost_leader") == 0.0)
            .then_some(i)
    })
    .await;
    (
        Pair {
            ops,
            identities,
            lease,
        },
        leader,
    )
}

fn holder(lease: &Lease) -> Option<&str> {
    lease.spec.as_ref()?.holder_identity.as_deref()
}

async fn set_items(client: &Client, name: &str, group: &str, items: u64) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"versions": test_crd(group, items)["spec"]["versions"]}})),
    )
    .await
    .unwrap();
}

/// What a failover measured.
struct Failover {
    /// Until the other replica's `celcost_leader` is 1.
    leader: Duration,
    /// Until the report of the CRD updated right after the signal reflects the update.
    reported: Duration,
}

/// Stops the leader with `signal`, updates the CRD at once, and measures the takeover.
async fn fail_over(
    client: &Client,
    pair: &mut Pair,
    leader: usize,
    signal: libc::c_int,
    crd: (&str, &str),
) -> Failover {
    let other = 1 - leader;
    let writes_before = pair.ops[other].metric("celcost_report_writes_total");
    assert_eq!(writes_before, 0.0, "the follower wrote nothing");
    let (name, group) = crd;
    let pid = libc::pid_t::try_from(pair.ops[leader].child.id()).unwrap();
    let t0 = Instant::now();
    // SAFETY: a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    // The change is made once the old leader has exited: after SIGTERM it may still finish a
    // reconcile (and write) before it releases the lease, and then the other replica would have
    // nothing to write and the test would measure no failover. From here on only the other
    // replica can write the report.
    let old_op = &mut pair.ops[leader];
    eventually("the old leader exited", Duration::from_secs(30), || {
        let exited = old_op.child.try_wait().unwrap().is_some();
        async move { exited.then_some(()) }
    })
    .await;
    set_items(client, name, group, 10_000).await;
    let other_op = &pair.ops[other];
    let leader_after = eventually("the other replica leads", Duration::from_secs(60), || {
        let v = other_op.metric("celcost_leader");
        async move { (v == 1.0).then(|| t0.elapsed()) }
    })
    .await;
    report_for(client, &format!("crd.{name}"), 2).await;
    let reported = t0.elapsed();
    Failover {
        leader: leader_after,
        reported,
    }
}

async fn run(test: &str, signal: libc::c_int) -> Option<Failover> {
    let _serial = SERIAL.lock().await;
    let client = cluster(test).await?;
    install_crd(&client).await;
    let group = format!("ha-{}.e2e.celcost.io", suffix());
    let name = format!("widgets.{group}");
    let (mut pair, leader) = pair(&client, test).await;
    create_crd(&client, &test_crd(&group, 1000)).await;
    report_for(&client, &format!("crd.{name}"), 1).await;
    let failover = fail_over(&client, &mut pair, leader, signal, (&name, &group)).await;

    let other = 1 - leader;
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let lease = leases.get(&pair.lease).await.unwrap();
    assert_eq!(holder(&lease), Some(pair.identities[other].as_str()));
    assert!(
        lease.spec.as_ref().unwrap().lease_transitions.unwrap_or(0) >= 1,
        "{lease:?}"
    );
    assert!(pair.ops[other].metric("celcost_report_writes_total") >= 1.0);
    assert_eq!(
        pair.ops[other].metric_with("celcost_leader_transitions_total", "change=\"acquired\""),
        1.0
    );
    let status = pair.ops[leader].child.wait().unwrap();
    if signal == libc::SIGTERM {
        assert!(status.success(), "a clean exit on SIGTERM: {status}");
        let log = std::fs::read_to_string(&pair.ops[leader].log).unwrap_or_default();
        assert!(log.contains("released the lease"), "{log}");
    }
    delete_crd(&client, &name).await;
    let _ = leases.delete(&pair.lease, &DeleteParams::default()).await;
    Some(failover)
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn killed_leader_is_replaced_within_the_lease_duration() {
    let Some(f) = run("ha-kill", libc::SIGKILL).await else {
        return;
    };
    println!(
        "failover after SIGKILL of the leader (lease {LEASE_SECONDS} s, retry {RETRY_SECONDS} s): \
         the other leads after {:.1} s; a CRD update made once it is dead is reported after {:.1} s",
        f.leader.as_secs_f64(),
        f.reported.as_secs_f64()
    );
    // It waits out the lease: not before it expires, and not much after.
    assert!(
        f.leader >= Duration::from_secs(LEASE_SECONDS - RETRY_SECONDS - 1),
        "took over a live lease? {:?}",
        f.leader
    );
    assert!(
        f.reported <= Duration::from_secs(LEASE_SECONDS + 5),
        "{:?}",
        f.reported
    );
}

#[tokio::test]
#[ignore = "needs a cluster: KUBECONFIG"]
async fn sigterm_hands_the_lease_over_at_once() {
    let Some(f) = run("ha-term", libc::SIGTERM).await else {
        return;
    };
    println!(
        "hand-over on SIGTERM of the leader (lease {LEASE_SECONDS} s, retry {RETRY_SECONDS} s): \
         the other leads after {:.1} s; a CRD update made once it exited is reported after {:.1} s",
        f.leader.as_secs_f64(),
        f.reported.as_secs_f64()
    );
    // Released: taken at the other's next attempt (2–2.4 s), not after the lease duration.
    assert!(
        f.reported <= Duration::from_secs(RETRY_SECONDS + 3),
        "{:?}",
        f.reported
    );
}
