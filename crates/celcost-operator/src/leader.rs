//! Leader election on a `coordination.k8s.io/v1` Lease, the way client-go's `leaderelection`
//! does it, on kube's API directly. Why not a crate: `kube-leader-election` compares the
//! Lease's timestamps with the local wall clock (skew-sensitive, no fencing, last released in
//! 2024); `kube-lease-manager` is maintained but also compares timestamps (with a skew
//! tolerance) and exposes leadership as a flag its task updates, not as a deadline each write
//! can check. What we need is below: expiry on this replica's monotonic clock, a term that ends
//! at a fixed instant every write checks, and a release once the controllers have stopped
//! (docs/operator.md, "High availability").
//!
//! - **Acquire**: a replica creates the Lease if it is missing; otherwise it takes it when it has
//!   no holder, or when the holder's record has not changed for the record's
//!   `leaseDurationSeconds` **as measured on this replica's own monotonic clock** from when it
//!   first saw that record. The record's `renewTime` is never compared with the local wall clock,
//!   so skewed clocks between nodes do not matter (only their rates).
//! - **Every write of the Lease** is an update with the `resourceVersion` last read (optimistic
//!   concurrency): of two replicas that take an expired lease at once, one gets a 409 and stays a
//!   follower.
//! - **Renew**: the leader renews every retry period. Its term ends at the start of its last
//!   successful renewal plus the renew deadline (10 s < the 15 s others wait), and **every write
//!   of the operator is gated on that instant** ([`Leadership::is_leader`]), so a reconcile in
//!   flight when the lease is lost writes nothing more, even if the elector is stuck in a request.
//! - **Release**: on shutdown (after the controllers have stopped) the leader stops writing and
//!   updates the Lease with no holder and `leaseDurationSeconds: 1`, as client-go's
//!   `ReleaseOnCancel` does: the other replica takes over at its next retry (2 s), not after 15 s.

use std::time::Duration;

use futures::Stream;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// The namespace of the Lease when neither the flag nor the pod's namespace says.
pub const DEFAULT_NAMESPACE: &str = "celcost-system";
/// Where a pod finds its namespace.
pub const NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
/// client-go's `JitterFactor` is 1.2 (waits of 2–4.4 s); 0.2 is enough between two replicas and
/// keeps a failover shorter.
const JITTER: f64 = 0.2;

/// What the election needs.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// This replica's holder identity: unique among the replicas.
    pub identity: String,
    /// How long the others wait after the last renewal they saw (whole seconds: the Lease keeps
    /// seconds).
    pub lease_duration: Duration,
    /// How long the leader keeps writing after the start of its last successful renewal.
    pub renew_deadline: Duration,
    /// Between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// client-go's defaults and rules: 15 s / 10 s / 2 s; lease duration > renew deadline >
    /// 1.2 × retry period.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaseConfig {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Whether the durations are consistent (the rules of client-go's `NewLeaderElector`).
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration.subsec_nanos() != 0 || self.lease_duration.is_zero() {
            return Err("the lease duration must be a whole number of seconds, at least 1".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(format!(
                "the lease duration ({:?}) must be longer than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.retry_period.is_zero()
            || self.renew_deadline <= self.retry_period.mul_f64(1.0 + JITTER)
        {
            return Err(format!(
                "the renew deadline ({:?}) must be longer than 1.2 times the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if self.identity.is_empty() || self.name.is_empty() || self.namespace.is_empty() {
            return Err("the lease needs a name, a namespace and an identity".into());
        }
        Ok(())
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// The Lease's namespace: the flag (or `POD_NAMESPACE`), else the service account's namespace
/// file of a pod, else `fallback` (the namespace of KUBECONFIG's context on a local run).
pub fn namespace(flag: Option<&str>, fallback: &str) -> String {
    flag.map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| {
            std::fs::read_to_string(NAMESPACE_FILE)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| fallback.to_string())
}

/// The holder identity: the pod name (unique), else the hostname with a random suffix (two
/// processes on one host, or a restart, are different holders).
pub fn identity(pod_name: Option<&str>) -> String {
    if let Some(p) = pod_name.map(str::trim).filter(|p| !p.is_empty()) {
        return p.to_string();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "celcost".to_string());
    let suffix: String = std::iter::repeat_with(fastrand::lowercase)
        .take(8)
        .collect();
    format!("{host}_{suffix}")
}

/// This replica's standing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// Another replica leads, or none: write nothing.
    Follower,
    /// The leader, until `until` unless renewed before (`None`: leader election is off, the
    /// only replica writes).
    Leader { until: Option<Instant> },
}

/// What the channel carries: the term, and how many terms began (a loss and a new term
/// between two looks at the channel are still seen as such).
#[derive(Clone, Copy, Debug)]
struct Standing {
    term: Term,
    terms: u64,
}

fn leads(t: Term) -> bool {
    matches!(t, Term::Leader { .. })
}

/// Sets the [`Term`] a [`Leadership`] reports (the elector, or a test).
#[derive(Debug)]
pub struct TermSender(watch::Sender<Standing>);

impl TermSender {
    /// A new term when this replica did not lead; a renewal otherwise.
    pub fn set(&self, term: Term) {
        self.0.send_modify(|s| {
            if leads(term) && !leads(s.term) {
                s.terms += 1;
            }
            s.term = term;
        });
    }

    /// The current term.
    pub fn term(&self) -> Term {
        self.0.borrow().term
    }
}

/// Whether this replica may write now: what every write of the operator checks.
#[derive(Clone, Debug)]
pub struct Leadership {
    rx: watch::Receiver<Standing>,
}

impl Leadership {
    /// Leader election off: always the leader.
    pub fn always() -> Self {
        Leadership::channel(Term::Leader { until: None }).1
    }

    /// A leadership driven by the sender (the elector, or a test).
    pub fn channel(initial: Term) -> (TermSender, Leadership) {
        let (tx, rx) = watch::channel(Standing {
            term: initial,
            terms: u64::from(leads(initial)),
        });
        (TermSender(tx), Leadership { rx })
    }

    /// Whether this replica leads at this instant: its term has not ended (a term ends at its
    /// deadline by itself, whatever the elector is doing).
    pub fn is_leader(&self) -> bool {
        match self.rx.borrow().term {
            Term::Follower => false,
            Term::Leader { until: None } => true,
            Term::Leader { until: Some(t) } => Instant::now() < t,
        }
    }

    /// The current term.
    pub fn term(&self) -> Term {
        self.rx.borrow().term
    }

    /// One item each time this replica becomes the leader (the controllers then re-check every
    /// target: nothing was reconciled while following).
    pub fn acquired(&self) -> impl Stream<Item = ()> + Send + 'static {
        self.changes(|was: Standing, now: Standing| now.terms != was.terms)
    }

    /// One item each time this replica stops leading (it forgets what it knew of the reports
    /// and drops its per-target gauges, which only the leader exports).
    pub fn lost(&self) -> impl Stream<Item = ()> + Send + 'static {
        // A term seen that is over, or a whole term that began and ended unseen.
        self.changes(|was: Standing, now: Standing| {
            if leads(was.term) {
                now.terms != was.terms || !leads(now.term)
            } else {
                now.terms > was.terms + 1 || (now.terms > was.terms && !leads(now.term))
            }
        })
    }

    fn changes(
        &self,
        hit: fn(Standing, Standing) -> bool,
    ) -> impl Stream<Item = ()> + Send + 'static {
        let mut rx = self.rx.clone();
        let was = *rx.borrow_and_update();
        futures::stream::unfold((rx, was), move |(mut rx, mut was)| async move {
            loop {
                rx.changed().await.ok()?;
                let now = *rx.borrow_and_update();
                let yes = hit(was, now);
                was = now;
                if yes {
                    return Some(((), (rx, was)));
                }
            }
        })
    }
}

/// `change="acquired"|"lost"|"released"`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChangeLabels {
    pub change: String,
}

/// `celcost_leader` and `celcost_leader_transitions_total`.
#[derive(Clone, Default)]
pub struct LeaderMetrics {
    pub leader: Gauge,
    pub transitions: Family<ChangeLabels, Counter>,
}

impl LeaderMetrics {
    pub fn register(self, registry: &mut Registry) -> Self {
        registry.register(
            "leader",
            "1 while this replica is the leader (the one that writes reports, their status and events)",
            self.leader.clone(),
        );
        registry.register(
            "leader_transitions",
            "Changes of this replica's leadership: acquired, lost (not renewed in time, or taken over), released (on shutdown)",
            self.transitions.clone(),
        );
        self
    }

    fn count(&self, change: &str) {
        self.transitions
            .get_or_create(&ChangeLabels {
                change: change.to_string(),
            })
            .inc();
    }
}

/// The elector: run it with [`Elector::run`].
pub struct Elector {
    api: Api<Lease>,
    config: LeaseConfig,
    tx: TermSender,
    metrics: LeaderMetrics,
    /// The Lease as last read or written (its resourceVersion is the precondition of the next
    /// write).
    observed: Option<Lease>,
    /// When this replica first saw the observed record (holder, times, duration, transitions).
    observed_at: Instant,
    /// Since when attempts fail (one warning per outage).
    failing_since: Option<Instant>,
}

/// What an attempt found.
enum Attempt {
    /// We hold the lease: written at an instant after `started`.
    Holding { started: Instant },
    /// Another replica holds a valid lease, or won the race.
    Held,
}

impl Elector {
    pub fn new(client: Client, config: LeaseConfig, metrics: LeaderMetrics) -> (Self, Leadership) {
        let (tx, leadership) = Leadership::channel(Term::Follower);
        metrics.leader.set(0);
        let elector = Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            tx,
            metrics,
            observed: None,
            observed_at: Instant::now(),
            failing_since: None,
        };
        (elector, leadership)
    }

    fn leads(&self) -> Option<Instant> {
        match self.tx.term() {
            Term::Leader { until } => until,
            Term::Follower => None,
        }
    }

    /// Acquires and renews the lease until `stop` completes, then releases it if held.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) {
        tokio::pin!(stop);
        info!(
            lease = %format!("{}/{}", self.config.namespace, self.config.name),
            identity = %self.config.identity,
            "leader election: waiting for the lease"
        );
        loop {
            // A leader's attempt is bounded by its term: at that instant it is no longer the
            // leader, whatever the request does.
            let deadline = self
                .leads()
                .unwrap_or_else(|| Instant::now() + self.config.renew_deadline);
            let result = tokio::select! {
                _ = &mut stop => break,
                r = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()) => r,
            };
            match result {
                Ok(Ok(Attempt::Holding { started })) => {
                    self.recovered();
                    self.hold(started + self.config.renew_deadline);
                }
                Ok(Ok(Attempt::Held)) => {
                    self.recovered();
                    self.follow("another replica holds the lease");
                }
                Ok(Err(e)) => {
                    self.failed(Some(&e));
                    self.expire_if_due();
                }
                Err(_) => {
                    self.failed(None);
                    self.expire_if_due();
                }
            }
            let wait = self.wait();
            tokio::select! {
                _ = &mut stop => break,
                _ = tokio::time::sleep(wait) => {}
            }
            self.expire_if_due();
        }
        self.release().await;
    }

    /// How long to wait before the next attempt: the retry period for the leader; for a
    /// follower the retry period with jitter, or less when the observed lease expires sooner.
    fn wait(&self) -> Duration {
        let retry = self.config.retry_period;
        if self.leads().is_some() {
            return retry;
        }
        let jittered = crate::backoff::stretched(retry, JITTER, fastrand::f64());
        match self.expiry_of_other() {
            Some(at) => {
                let until = at.saturating_duration_since(Instant::now());
                if until.is_zero() || until >= jittered {
                    jittered
                } else {
                    // A moment after it expires (timers are not exact).
                    until + Duration::from_millis(10)
                }
            }
            None => jittered,
        }
    }

    /// When the lease held by another replica expires, by our observation.
    fn expiry_of_other(&self) -> Option<Instant> {
        let spec = self.observed.as_ref()?.spec.as_ref()?;
        let holder = spec.holder_identity.as_deref().filter(|h| !h.is_empty())?;
        if holder == self.config.identity {
            return None;
        }
        let seconds = u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0);
        Some(self.observed_at + Duration::from_secs(seconds))
    }

    /// One attempt: create the lease, renew it, or take it if free or expired.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let started = Instant::now();
        // The leader renews the lease it last wrote without reading it first (client-go does
        // the same); a 409 means it changed: read it.
        if self.leads().is_some()
            && let Some(lease) = self.observed.clone()
        {
            let renewed = self.record(&lease, true);
            if self.replace(&renewed).await? {
                return Ok(Attempt::Holding { started });
            }
            debug!("the lease changed since our last renewal; reading it");
        }
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            let now = MicroTime(Timestamp::now());
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.config.identity.clone()),
                    lease_duration_seconds: Some(self.config.lease_seconds()),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            let created = self.api.create(&PostParams::default(), &lease).await;
            return Ok(if self.written(created)? {
                Attempt::Holding { started }
            } else {
                // Another replica created it first.
                Attempt::Held
            });
        };
        self.observe(lease.clone());
        if let Some(expiry) = self.expiry_of_other()
            && Instant::now() < expiry
        {
            return Ok(Attempt::Held);
        }
        let ours = holder_of(&lease) == Some(self.config.identity.as_str());
        let taken = self.record(&lease, ours);
        Ok(if self.replace(&taken).await? {
            Attempt::Holding { started }
        } else {
            // Another replica wrote it first.
            Attempt::Held
        })
    }

    /// Replaces the lease with `lease` (read with its resourceVersion); whether it was written,
    /// as [`Elector::written`].
    async fn replace(&mut self, lease: &Lease) -> Result<bool, kube::Error> {
        let replaced = self
            .api
            .replace(&self.config.name, &PostParams::default(), lease)
            .await;
        self.written(replaced)
    }

    /// Whether a write of the lease went through (the lease written is observed); `Ok(false)` on
    /// a 409: the lease changed since it was read, or another replica created it first.
    fn written(&mut self, result: Result<Lease, kube::Error>) -> Result<bool, kube::Error> {
        match result {
            Ok(written) => {
                self.observe(written);
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `lease` held by us from now: renewed (`ours`: same acquireTime and transitions) or
    /// taken (new acquireTime, one more transition). Keeps its resourceVersion (the
    /// precondition).
    fn record(&self, lease: &Lease, ours: bool) -> Lease {
        let now = MicroTime(Timestamp::now());
        let old = lease.spec.clone().unwrap_or_default();
        let transitions = old.lease_transitions.unwrap_or(0);
        let mut lease = lease.clone();
        lease.metadata.managed_fields = None;
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_seconds()),
            acquire_time: if ours {
                old.acquire_time.clone().or_else(|| Some(now.clone()))
            } else {
                Some(now.clone())
            },
            renew_time: Some(now),
            lease_transitions: Some(if ours {
                transitions
            } else {
                transitions.saturating_add(1)
            }),
            ..old
        });
        lease
    }

    /// Remembers `lease`; a record other than the one observed restarts the observation clock.
    fn observe(&mut self, lease: Lease) {
        let changed = self.observed.as_ref().map(|o| &o.spec) != Some(&lease.spec);
        if changed {
            self.observed_at = Instant::now();
        }
        self.observed = Some(lease);
    }

    fn hold(&mut self, until: Instant) {
        if self.leads().is_none() {
            info!(
                identity = %self.config.identity,
                lease = %format!("{}/{}", self.config.namespace, self.config.name),
                "leader election: acquired the lease; this replica writes the reports"
            );
            self.metrics.leader.set(1);
            self.metrics.count("acquired");
        }
        self.tx.set(Term::Leader { until: Some(until) });
    }

    fn follow(&mut self, why: &str) {
        if self.leads().is_some() {
            warn!(
                holder = holder_of_opt(self.observed.as_ref()).unwrap_or("-"),
                "leader election: lost the lease ({why}); writes stop"
            );
            self.tx.set(Term::Follower);
            self.metrics.leader.set(0);
            self.metrics.count("lost");
        }
    }

    /// A leader whose term has ended without a renewal is no longer the leader.
    fn expire_if_due(&mut self) {
        if let Some(until) = self.leads()
            && Instant::now() >= until
        {
            self.follow("not renewed within the renew deadline");
        }
    }

    /// An attempt failed with `e` (`None`: it timed out).
    fn failed(&mut self, e: Option<&kube::Error>) {
        if self.failing_since.is_none() {
            self.failing_since = Some(Instant::now());
            let hint = match e {
                Some(kube::Error::Api(status)) if status.code == 404 => {
                    " (does the namespace exist? set --leader-election-namespace, or --leader-elect=false for a single replica)"
                }
                Some(kube::Error::Api(status)) if status.code == 403 => {
                    " (the service account needs get, create and update on coordination.k8s.io leases in that namespace)"
                }
                _ => "",
            };
            let what = e.map_or_else(|| "timed out".to_string(), ToString::to_string);
            warn!(
                lease = %format!("{}/{}", self.config.namespace, self.config.name),
                error = %what,
                "leader election: cannot acquire or renew the lease{hint}"
            );
        } else {
            debug!(error = ?e, "leader election: attempt failed");
        }
    }

    fn recovered(&mut self) {
        if let Some(since) = self.failing_since.take() {
            info!(
                after_seconds = since.elapsed().as_secs_f64(),
                "leader election: the lease is reachable again"
            );
        }
    }

    /// Stops writing, then gives the lease up (if held): no holder, `leaseDurationSeconds: 1`,
    /// conditional on our last write, so it never clears another holder's lease.
    async fn release(&mut self) {
        let Term::Leader { .. } = self.tx.term() else {
            return;
        };
        self.tx.set(Term::Follower);
        self.metrics.leader.set(0);
        let Some(lease) = self.observed.clone() else {
            return;
        };
        if holder_of(&lease) != Some(self.config.identity.as_str()) {
            return;
        }
        let now = MicroTime(Timestamp::now());
        let mut released = lease.clone();
        released.metadata.managed_fields = None;
        let old = lease.spec.unwrap_or_default();
        released.spec = Some(LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: old.lease_transitions,
            ..old
        });
        let params = PostParams::default();
        let request = self.api.replace(&self.config.name, &params, &released);
        match tokio::time::timeout(self.config.renew_deadline, request).await {
            Ok(Ok(_)) => {
                self.metrics.count("released");
                info!("leader election: released the lease")
            }
            Ok(Err(e)) => {
                warn!(error = %e, "leader election: could not release the lease; the other replica takes it when it expires")
            }
            Err(_) => warn!(
                "leader election: releasing the lease timed out; the other replica takes it when it expires"
            ),
        }
    }
}

fn holder_of(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty())
}

fn holder_of_opt(lease: Option<&Lease>) -> Option<&str> {
    holder_of(lease?)
}

/// A running elector: [`RunningElector::stop`] releases the lease.
pub struct RunningElector {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningElector {
    /// Starts `elector` on its own task.
    pub fn spawn(elector: Elector) -> RunningElector {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(elector.run(async move {
            let _ = stopped.await;
        }));
        RunningElector { stop, task }
    }

    /// Stops renewing and releases the lease (if held); returns once the release is sent.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_rules_are_client_gos() {
        let c = LeaseConfig::new("ns", "celcost", "me");
        assert_eq!(c.validate(), Ok(()));
        let bad = |f: fn(&mut LeaseConfig)| {
            let mut c = LeaseConfig::new("ns", "celcost", "me");
            f(&mut c);
            c.validate().is_err()
        };
        assert!(bad(|c| c.lease_duration = Duration::from_secs(10)));
        assert!(bad(|c| c.lease_duration = Duration::from_millis(15500)));
        assert!(bad(|c| c.retry_period = Duration::from_secs(9)));
        assert!(bad(|c| c.retry_period = Duration::ZERO));
        assert!(bad(|c| c.identity.clear()));
    }

    #[test]
    fn identity_and_namespace() {
        assert_eq!(identity(Some("celcost-7d9f-abcde")), "celcost-7d9f-abcde");
        let a = identity(None);
        let b = identity(None);
        assert_ne!(a, b, "two processes on one host are two holders");
        assert!(a.contains('_'), "{a}");
        assert_eq!(namespace(Some("ops"), "dev"), "ops");
        if !std::path::Path::new(NAMESPACE_FILE).exists() {
            assert_eq!(namespace(None, "dev"), "dev");
            assert_eq!(namespace(Some(" "), DEFAULT_NAMESPACE), DEFAULT_NAMESPACE);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_term_ends_at_its_deadline_by_itself() {
        let (tx, l) = Leadership::channel(Term::Follower);
        assert!(!l.is_leader());
        tx.set(Term::Leader {
            until: Some(Instant::now() + Duration::from_secs(10)),
        });
        assert!(l.is_leader());
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(!l.is_leader(), "the term ended without a renewal");
        assert!(Leadership::always().is_leader());
    }

    #[tokio::test]
    async fn acquired_and_lost_follow_the_changes_only() {
        use futures::StreamExt;
        let (tx, l) = Leadership::channel(Term::Follower);
        let mut acquired = Box::pin(l.acquired());
        let mut lost = Box::pin(l.lost());
        tx.set(Term::Leader { until: None });
        assert_eq!(acquired.next().await, Some(()));
        // A renewal is no new term.
        tx.set(Term::Leader {
            until: Some(Instant::now() + Duration::from_secs(10)),
        });
        tx.set(Term::Follower);
        assert_eq!(lost.next().await, Some(()));
        tx.set(Term::Leader { until: None });
        assert_eq!(acquired.next().await, Some(()));
        // Lost and acquired again before anyone looked: both are seen.
        tx.set(Term::Follower);
        tx.set(Term::Leader { until: None });
        assert_eq!(lost.next().await, Some(()));
        assert_eq!(acquired.next().await, Some(()));
        drop(tx);
        assert_eq!(acquired.next().await, None);
        assert_eq!(lost.next().await, None);
    }
}
