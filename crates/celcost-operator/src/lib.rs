//! The operator: watches CustomResourceDefinitions, ValidatingAdmissionPolicies and (where served)
//! MutatingAdmissionPolicies cluster-wide and writes one `CostReport` per target (see `docs/operator.md`).
//!
//! Memory stays flat with the number of targets: the target watches deliver whole objects in
//! pages, but each is turned at once into its metadata (kept) and, when it needs an estimate,
//! its JSON text, held (bounded, with backpressure on the watch) until its reconcile estimates
//! it and drops it (`reports::pending`); the reports are watched metadata-only. A reconcile
//! reads the target only when no body is held (a resync, a new leader).
//!
//! Read top-down: `run` here wires the watches and controllers. The parts, each importing only
//! from those listed before it (`tests/it/layers.rs`):
//!
//! - [`error`], [`telemetry`] (logs), [`resource`] (the `CostReport` custom resource);
//! - [`leader`]: leader election on a Lease; [`serve`]: watches that recover, `/healthz`,
//!   `/readyz`, `/watches` and `/metrics` (and who may read it: [`serve::auth`]);
//! - [`reports`]: what every reconcile shares ([`reports::context`]: client, estimator, budget,
//!   the CRD store), the CRDs a policy's estimate needs ([`reports::schemas`]), the reconcile
//!   that estimates a target and writes its report ([`reports::reconcile`]), and the report's
//!   status ([`reports::status`]);
//! - [`webhook`]: the admission webhook, its warnings and its certificates.

pub mod backoff;
pub mod error;
pub mod leader;
pub mod reports;
pub mod resource;
pub mod serve;
pub mod telemetry;
pub mod webhook;

// The parts at their paths before the folders (`celcost::controller::status`, ...).
pub use reports::{context, map, reconcile, schemas, status};
pub use serve::{auth, http, metrics, watch};
pub use webhook::{certs, warnings};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PartialObjectMeta};
use kube::runtime::controller::{self, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use serve::watch::WatchedObject;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use celcost_core::cel::decls::Version;
use celcost_core::estimate::Estimator;

pub use context::{Budget, Context, CostEstimator, Settings, WithNextMinor};
pub use error::Error;
pub use reconcile::{Target, error_policy, reconcile};
pub use resource::{CostReport, CostReportSpec, CostReportStatus, TargetKind, crd_yaml};
pub use status::StatusSettings;
pub use telemetry::LogFormat;

/// The oldest and newest Kubernetes versions whose cost model the estimator has.
const OLDEST_MODEL: Version = celcost_core::cel::minor::OLDEST;
const NEWEST_MODEL: Version = celcost_core::cel::minor::NEWEST;

/// Flags of `celcost controller`; each has an environment variable.
#[derive(Clone, Debug, clap::Args)]
pub struct ControllerArgs {
    /// Address of the /healthz, /readyz and /watches server (plain HTTP: the kubelet's probes).
    #[arg(
        long,
        visible_alias = "health-probe-bind-address",
        env = "CELCOST_LISTEN_ADDRESS",
        default_value = "0.0.0.0:8080"
    )]
    pub listen_address: SocketAddr,
    /// Address of the /metrics server: `host:port`, `:port` (every address) or `0` (no metrics
    /// server).
    #[arg(long, env = "CELCOST_METRICS_BIND_ADDRESS", default_value = ":8443",
          value_parser = parse_bind_address)]
    pub metrics_bind_address: BindAddress,
    /// Serve /metrics over HTTPS to clients the API server authenticates (TokenReview) and
    /// authorizes (SubjectAccessReview of `get` on the non-resource URL /metrics); the
    /// certificate is the webhook's (its Secret) when the webhook is on, else self-signed.
    /// `--metrics-secure=false`: plain HTTP, to anyone.
    #[arg(long, env = "CELCOST_METRICS_SECURE", value_name = "BOOL", default_value_t = true,
          action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub metrics_secure: bool,
    /// The Service in front of /metrics: `<service>.<namespace>.svc` is in the metrics server's
    /// certificate (the namespace is the webhook's).
    #[arg(
        long,
        env = "CELCOST_METRICS_SERVICE",
        default_value = "celcost-metrics"
    )]
    pub metrics_service: String,
    /// Log format (the level comes from RUST_LOG, default info).
    #[arg(long, env = "CELCOST_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Percent of a limit from which a rule or total is "near budget" (events, WithinBudget).
    #[arg(long, env = "CELCOST_NEAR_BUDGET_PERCENT", default_value_t = 80,
          value_parser = clap::value_parser!(u8).range(1..=100))]
    pub near_budget_percent: u8,
    /// Targets reconciled at once, per kind (API calls in flight; memory is bounded by
    /// --memory-budget-mib).
    #[arg(long, env = "CELCOST_CONCURRENCY", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// MiB of target JSON (CRDs, policies) parsed and estimated at once, over all reconciles;
    /// the operator's memory grows with it (about 6 times this, plus the watched metadata).
    #[arg(long, env = "CELCOST_MEMORY_BUDGET_MIB", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub memory_budget_mib: u16,
    /// MiB of watched target JSON held per kind between its watch and its reconcile (the
    /// watch waits for room): it keeps the estimators busy, and more only costs memory.
    #[arg(long, env = "CELCOST_WATCH_BUFFER_MIB", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub watch_buffer_mib: u16,
    /// Kubernetes minor whose API server the estimates follow (1.28 to 1.37); default: the
    /// API server's own (an older one gets 1.30's rules, a newer one 1.37's, with a warning).
    /// Each report also carries the next minor's verdict (condition `UpgradeSafe`).
    #[arg(long, env = "CELCOST_KUBERNETES_VERSION", value_parser = celcost_core::cel::minor::parse_version)]
    pub kubernetes_version: Option<Version>,
    /// Whose build of that minor: `kubernetes` (upstream), `openshift`, or `auto` (OpenShift
    /// when the API server serves config.openshift.io).
    #[arg(long, env = "CELCOST_DISTRIBUTION", default_value = "auto", value_parser = parse_distribution)]
    pub distribution: DistributionChoice,
    /// Report APIs each target's findings are also written to, one cluster-scoped report per
    /// target owned by its CostReport: `openreports` (openreports.io/v1alpha1 ClusterReport),
    /// `policyreports` (wgpolicyk8s.io/v1alpha2 ClusterPolicyReport), `both`, `off`, or `auto`:
    /// whichever the cluster serves at start, OpenReports first (neither: off).
    #[arg(long, env = "CELCOST_REPORTS", value_enum, default_value = "auto")]
    pub reports: reports::policy_reports::ReportsChoice,
    /// Most rules (or policy expressions) listed in a report; the costliest are kept.
    #[arg(long, env = "CELCOST_MAX_RULES", default_value_t = 100,
          value_parser = clap::value_parser!(u16).range(1..=200))]
    pub max_rules: u16,
    /// Seconds between periodic re-checks of a target (no write when nothing changed).
    #[arg(long, env = "CELCOST_RESYNC_SECONDS", default_value_t = 3600)]
    pub resync_seconds: u64,
    /// The reporting instance of events (the pod name, from the downward API).
    #[arg(long, env = "POD_NAME")]
    pub instance: Option<String>,
    /// Seconds a watch may fail before `/watches` answers 503 (it recovers on its own
    /// meanwhile). Readiness (`/readyz`) does not depend on the watches.
    #[arg(
        long,
        visible_alias = "unready-after-seconds",
        env = "CELCOST_WATCH_UNHEALTHY_AFTER_SECONDS",
        default_value_t = 30
    )]
    pub watch_unhealthy_after_seconds: u64,
    /// Server-side timeout of each watch, seconds: a watch silent for this long plus 5 s (no
    /// events, no bookmarks) is restarted.
    #[arg(long, env = "CELCOST_WATCH_TIMEOUT_SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u32).range(5..=3600))]
    pub watch_timeout_seconds: u32,
    /// Longest wait between attempts to reach an API server that does not answer, seconds
    /// (with jitter, from 0.2 s up).
    #[arg(long, env = "CELCOST_WATCH_MAX_BACKOFF_SECONDS", default_value_t = 2.0)]
    pub watch_max_backoff_seconds: f64,
    /// Timeout of each API request of a reconcile, seconds.
    #[arg(long, env = "CELCOST_REQUEST_TIMEOUT_SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=300))]
    pub request_timeout_seconds: u64,
    /// Work budget of one target's estimate, in steps: a target that needs more gets
    /// `Estimated=False` (WorkBudgetExceeded) and an event; it is not retried until it changes.
    #[arg(long, env = "CELCOST_ESTIMATE_MAX_STEPS", default_value_t = celcost_core::budget::DEFAULT_STEPS)]
    pub estimate_max_steps: u64,
    /// Memory budget of one target's estimate, MiB (the operator's memory limit should exceed
    /// the number of cores times this, plus about 64 MiB).
    #[arg(long, env = "CELCOST_ESTIMATE_MAX_MEMORY_MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub estimate_max_memory_mib: u64,
    /// Leader election on a coordination.k8s.io Lease: only the leader writes reports, their
    /// status and events; the other replicas keep their watches warm and serve health and
    /// metrics. Default: on in a pod (the manifests also ask for it), off elsewhere (a local
    /// run); `--leader-elect` asks for it outside a pod, `--leader-elect=false` turns it off.
    #[arg(long, visible_alias = "leader-election", env = "CELCOST_LEADER_ELECT", value_name = "BOOL",
          action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub leader_elect: Option<bool>,
    /// Namespace of the Lease. Default: the pod's (the downward API's POD_NAMESPACE, or the
    /// service account's namespace file), else the namespace of KUBECONFIG's context.
    #[arg(long, env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(
        long,
        env = "CELCOST_LEADER_ELECTION_LEASE_NAME",
        default_value = "celcost"
    )]
    pub leader_election_lease_name: String,
    /// Seconds the other replicas wait after the leader's last renewal before they take over.
    #[arg(long, visible_alias = "lease-duration", env = "CELCOST_LEADER_ELECTION_LEASE_DURATION_SECONDS", default_value_t = 15,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub leader_election_lease_duration_seconds: u32,
    /// Seconds the leader keeps writing after the start of its last successful renewal (less
    /// than the lease duration).
    #[arg(
        long,
        visible_alias = "renew-deadline",
        env = "CELCOST_LEADER_ELECTION_RENEW_DEADLINE_SECONDS",
        default_value_t = 10.0
    )]
    pub leader_election_renew_deadline_seconds: f64,
    /// Seconds between attempts to acquire or renew the Lease.
    #[arg(
        long,
        visible_alias = "retry-period",
        env = "CELCOST_LEADER_ELECTION_RETRY_PERIOD_SECONDS",
        default_value_t = 2.0
    )]
    pub leader_election_retry_period_seconds: f64,
    /// The admission webhook (`--webhook`, `--webhook-*`).
    #[command(flatten)]
    pub webhook: webhook::WebhookArgs,
}

/// An address to listen on, or none (`0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

/// `host:port`, `:port` (every IPv4 address, as Go's `:8443`), or `0` (none), as
/// controller-runtime reads `--metrics-bind-address`.
pub fn parse_bind_address(s: &str) -> Result<BindAddress, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(BindAddress(None));
    }
    let full = match s.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => s.to_string(),
    };
    full.parse::<SocketAddr>()
        .map(|a| BindAddress(Some(a)))
        .map_err(|e| format!("{s:?}: {e} (host:port, :port or 0)"))
}

/// Where the operator runs: in a pod (a service account is mounted and the API server's
/// Service is in the environment), or elsewhere (a local run with KUBECONFIG).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Environment {
    InPod,
    Local,
}

impl Environment {
    /// Read from the process' environment.
    pub fn detect() -> Self {
        if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
            && std::path::Path::new(leader::NAMESPACE_FILE).exists()
        {
            Environment::InPod
        } else {
            Environment::Local
        }
    }
}

/// Whether a part is on, and why (for the start-up log line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    pub on: bool,
    pub why: &'static str,
}

impl std::fmt::Display for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", if self.on { "on" } else { "off" }, self.why)
    }
}

impl ControllerArgs {
    /// The watches' timeouts, backoff and health threshold.
    pub fn watch_settings(&self) -> watch::WatchSettings {
        watch::WatchSettings {
            timeout: self.watch_timeout_seconds,
            max_backoff: Duration::from_secs_f64(self.watch_max_backoff_seconds.clamp(0.2, 300.0)),
            unhealthy_after: Duration::from_secs(self.watch_unhealthy_after_seconds),
            ..watch::WatchSettings::default()
        }
    }

    /// Leader election: as asked, else on in a pod and off elsewhere.
    pub fn leader_election(&self, env: Environment) -> Switch {
        match (self.leader_elect, env) {
            (Some(true), _) => Switch {
                on: true,
                why: "asked: --leader-elect",
            },
            (Some(false), _) => Switch {
                on: false,
                why: "asked: --leader-elect=false",
            },
            (None, Environment::InPod) => Switch {
                on: true,
                why: "in a pod",
            },
            (None, Environment::Local) => Switch {
                on: false,
                why: "not in a pod; --leader-elect turns it on",
            },
        }
    }

    /// The admission webhook: as asked (`--webhook`, or a `--webhook-url` to call), else on in
    /// a pod (behind its Service) and off elsewhere.
    pub fn webhook(&self, env: Environment) -> Switch {
        match (self.webhook.enabled, env) {
            (Some(true), _) => Switch {
                on: true,
                why: "asked: --webhook",
            },
            (Some(false), _) => Switch {
                on: false,
                why: "asked: --webhook=false",
            },
            (None, _) if self.webhook.webhook_url.is_some() => Switch {
                on: true,
                why: "asked: --webhook-url",
            },
            (None, Environment::InPod) => Switch {
                on: true,
                why: "in a pod",
            },
            (None, Environment::Local) => Switch {
                on: false,
                why: "not in a pod; --webhook or --webhook-url turns it on",
            },
        }
    }

    /// The Lease of leader election, `None` when it is off. `fallback_namespace` is the
    /// Lease's namespace when neither the flag nor a pod's service account gives one.
    pub fn lease(
        &self,
        env: Environment,
        fallback_namespace: &str,
    ) -> Result<Option<leader::LeaseConfig>, String> {
        if !self.leader_election(env).on {
            return Ok(None);
        }
        let seconds = |what: &str, s: f64| {
            Duration::try_from_secs_f64(s)
                .map_err(|_| format!("--leader-election-{what}-seconds: {s} is not a duration"))
        };
        let config = leader::LeaseConfig {
            lease_duration: Duration::from_secs(u64::from(
                self.leader_election_lease_duration_seconds,
            )),
            renew_deadline: seconds(
                "renew-deadline",
                self.leader_election_renew_deadline_seconds,
            )?,
            retry_period: seconds("retry-period", self.leader_election_retry_period_seconds)?,
            ..leader::LeaseConfig::new(
                &leader::namespace(
                    self.leader_election_namespace.as_deref(),
                    fallback_namespace,
                ),
                &self.leader_election_lease_name,
                &leader::identity(self.instance.as_deref()),
            )
        };
        config.validate()?;
        Ok(Some(config))
    }
}

/// `--distribution`: `None` for `auto` (decided from the API server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributionChoice(pub Option<celcost_core::cel::minor::Distribution>);

fn parse_distribution(s: &str) -> Result<DistributionChoice, String> {
    if s.eq_ignore_ascii_case("auto") {
        Ok(DistributionChoice(None))
    } else {
        celcost_core::cel::minor::Distribution::parse(s).map(|d| DistributionChoice(Some(d)))
    }
}

/// The API server's minor, when it reports one (`"1"`, `"33+"`).
pub fn server_minor(major: &str, minor: &str) -> Option<Version> {
    let digits = |s: &str| -> Option<u32> {
        s.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()
    };
    Some(Version::new(digits(major)?, digits(minor)?))
}

/// The cost model for an API server reporting `major`/`minor` (`"1"`, `"33+"`), clamped to the
/// versions the estimator knows.
pub fn model_version(major: &str, minor: &str) -> Version {
    match server_minor(major, minor) {
        Some(v) if v.major == 1 => v.clamp(OLDEST_MODEL, NEWEST_MODEL),
        _ => NEWEST_MODEL,
    }
}

/// The exit message when our CRD is not installed.
pub const INSTALL_HINT: &str = "the CostReport CRD (costreports.celcost.io) is not served by this cluster; \
install it first: `kubectl apply -f crds/costreport.yaml` (or `celcost crd | kubectl apply -f -`, \
or the whole operator with `kubectl apply -k config/default`)";

/// Whether the API server serves `K` (a 404 on a one-item list means no).
async fn served<K>(client: &Client) -> Result<bool, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::Scope: k8s_openapi::ResourceScope,
{
    let api: Api<K> = Api::all(client.clone());
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// The error `run` ends with.
pub type RunError = Box<dyn std::error::Error + Send + Sync>;

/// Runs the operator until SIGINT/SIGTERM, in five steps: [`detect`] what the cluster serves
/// and which minor it is, [`build_estimators`], [`start_servers`] (the elector, the webhook and
/// the probes and metrics servers), [`spawn_controllers`] (one per watched kind) and [`drain`]. One
/// [`CancellationToken`], cancelled by the first signal, stops every part: the controllers finish
/// their reconciles, the webhook lets open requests finish, the probes and metrics servers close; the lease
/// is given up last, once no controller writes any more (a second signal exits at once).
pub async fn run(args: ControllerArgs) -> Result<(), RunError> {
    telemetry::init(args.log_format);
    let cluster = detect(&args).await?;
    let estimators = build_estimators(&args, &cluster);
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    let watch_settings = args.watch_settings();
    let servers = start_servers(&args, &cluster, &estimators, &watch_settings, &shutdown).await?;
    let controllers = spawn_controllers(
        &args,
        &cluster,
        &estimators,
        &servers,
        watch_settings,
        &shutdown,
    );
    info!(model = %cluster.version, near_budget_percent = args.near_budget_percent, "celcost controller started");
    drain(controllers, servers).await
}

/// What [`detect`] finds out before anything starts.
struct Cluster {
    client: Client,
    /// The API server's answers on `client`, for the watches' health.
    health: watch::Health,
    lease: Option<leader::LeaseConfig>,
    webhook: Switch,
    vap_served: bool,
    /// The newest MutatingAdmissionPolicy API version served, if any.
    map_version: Option<&'static str>,
    version: Version,
    distribution: celcost_core::cel::minor::Distribution,
    /// The report APIs written to (`--reports`, against what the cluster serves).
    policy_reports: Vec<celcost_advice::output::openreports::ReportApi>,
}

/// The client, the flags checked against the environment, what the API server serves (our CRD
/// first: without it there is nothing to write), and its minor and distribution (unless given).
async fn detect(args: &ControllerArgs) -> Result<Cluster, RunError> {
    let env = Environment::detect();
    // Checked before anything is read: a bad flag fails at once.
    args.lease(env, leader::DEFAULT_NAMESPACE)?;
    // The watches' health notes the API server's answers on the client every part uses.
    let health = watch::Health::default();
    let client = client_with(&health).await?;
    let lease = args.lease(env, client.default_namespace())?;
    let webhook = args.webhook(env);
    info!(
        environment = ?env,
        leader_election = %args.leader_election(env),
        lease = %lease.as_ref().map(|l| format!("{}/{}", l.namespace, l.name)).unwrap_or_else(|| "-".into()),
        webhook = %webhook,
        "celcost controller starting"
    );
    if !served::<CostReport>(&client).await? {
        return Err(INSTALL_HINT.into());
    }
    let vap_served = served::<ValidatingAdmissionPolicy>(&client).await?;
    let map_version = served_map_version(&client).await?;
    match map_version {
        Some(v) => info!(version = v, "watching MutatingAdmissionPolicies"),
        None => info!(
            "admissionregistration.k8s.io MutatingAdmissionPolicies are not served (Kubernetes < 1.32, or not enabled); not watching them"
        ),
    }
    if !vap_served {
        warn!(
            "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies are not served (Kubernetes < 1.30?); watching CRDs only"
        );
    }
    let policy_reports = detect_policy_reports(&client, args.reports).await?;
    let version = match args.kubernetes_version {
        Some(v) => v,
        None => detect_version(&client).await?,
    };
    let distribution = match args.distribution.0 {
        Some(d) => d,
        None => detect_distribution(&client, version).await?,
    };
    Ok(Cluster {
        client,
        health,
        lease,
        webhook,
        vap_served,
        map_version,
        version,
        distribution,
        policy_reports,
    })
}

/// The report APIs to write to: `--reports` against what the cluster serves (asked only when
/// needed), said once in the log.
async fn detect_policy_reports(
    client: &Client,
    choice: reports::policy_reports::ReportsChoice,
) -> Result<Vec<celcost_advice::output::openreports::ReportApi>, kube::Error> {
    use celcost_advice::output::openreports::ReportApi;
    use reports::policy_reports::{ReportsChoice, resolve, served};
    let mut available = Vec::new();
    if choice != ReportsChoice::Off {
        for api in ReportApi::ALL {
            if served(client, api).await? {
                available.push(api);
            }
        }
    }
    let (on, note) = resolve(choice, &available);
    if let Some(note) = note {
        warn!("{note}");
    }
    let kinds: Vec<&str> = on.iter().map(|a| a.kind()).collect();
    info!(reports = ?choice, writing = %if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") }, "policy reports");
    Ok(on)
}

/// A client from the kubeconfig or the pod's service account, its answers noted in `health`.
async fn client_with(health: &watch::Health) -> Result<Client, RunError> {
    let client = kube::Config::infer()
        .await
        .map_err(|e| e.to_string())
        .map(|mut config| {
            // No silent retries of 429/503/504 inside the client: the watches' health sees the
            // API server throttle (and counts it), a watch backs off as asked, and a reconcile
            // goes to its target's backoff (the others proceed) instead of holding a
            // concurrency slot through the client's retries.
            config.default_retry = false;
            config
        })
        .and_then(|config| kube::client::ClientBuilder::try_from(config).map_err(|e| e.to_string()))
        .map(|builder| builder.with_layer(&health.answers_layer()).build())
        .map_err(|e| {
            format!("cannot configure a Kubernetes client (in-cluster or KUBECONFIG): {e}")
        })?;
    Ok(client)
}

/// The newest MutatingAdmissionPolicy API version the server serves, if any.
async fn served_map_version(client: &Client) -> Result<Option<&'static str>, kube::Error> {
    Ok(if served::<map::MutatingAdmissionPolicyV1>(client).await? {
        Some("v1")
    } else if served::<map::MutatingAdmissionPolicyV1beta1>(client).await? {
        Some("v1beta1")
    } else if served::<map::MutatingAdmissionPolicyV1alpha1>(client).await? {
        Some("v1alpha1")
    } else {
        None
    })
}

/// The cost model of the API server's minor (from `/version`), said in the log when it is out
/// of the known range.
async fn detect_version(client: &Client) -> Result<Version, kube::Error> {
    let info = client.apiserver_version().await?;
    let v = model_version(&info.major, &info.minor);
    match server_minor(&info.major, &info.minor) {
        Some(s) if s > NEWEST_MODEL => warn!(
            server = %info.git_version, model = %v,
            "the API server is newer than the newest Kubernetes minor celcost has rules for: \
             estimating with {v}'s rules (exact only if that minor changed nothing that \
             matters); UpgradeSafe is Unknown"
        ),
        Some(s) if s < OLDEST_MODEL => warn!(
            server = %info.git_version, model = %v,
            "the API server is older than the oldest Kubernetes minor celcost has rules for: \
             estimating with {v}'s rules"
        ),
        _ => {
            info!(server = %info.git_version, model = %v, "rules of the API server's minor")
        }
    }
    Ok(v)
}

/// OpenShift's build when the API server serves `config.openshift.io`, else upstream's.
async fn detect_distribution(
    client: &Client,
    version: Version,
) -> Result<celcost_core::cel::minor::Distribution, kube::Error> {
    let groups = client.list_api_groups().await?;
    Ok(
        if groups
            .groups
            .iter()
            .any(|g| g.name == "config.openshift.io")
        {
            info!("the API server serves config.openshift.io: OpenShift's build of {version}");
            celcost_core::cel::minor::Distribution::OpenShift
        } else {
            celcost_core::cel::minor::Distribution::Kubernetes
        },
    )
}

/// What [`build_estimators`] makes: the reports' (this minor and the next, with the advice) and
/// the webhook's (this minor), under the same work budget.
struct Estimators {
    reports: Arc<dyn CostEstimator>,
    webhook: Arc<Estimator>,
}

fn build_estimators(args: &ControllerArgs, cluster: &Cluster) -> Estimators {
    let limits = celcost_core::budget::Limits {
        steps: args.estimate_max_steps,
        bytes: usize::try_from(args.estimate_max_memory_mib << 20).unwrap_or(usize::MAX),
    };
    let minor = celcost_core::cel::minor::Minor::nearest(cluster.version, cluster.distribution);
    if let Some(note) = minor.stand_in_note() {
        warn!(model = %minor.label(), "{note}");
    }
    let reports: Arc<dyn CostEstimator> = Arc::new(WithNextMinor {
        current: Estimator::for_minor(minor).with_limits(limits),
        next: minor
            .next()
            .map(|n| Estimator::for_minor(n).with_limits(limits)),
        suggest: Some(celcost_advice::suggest::Settings::new(f64::from(
            args.near_budget_percent,
        ))),
    });
    Estimators {
        reports,
        webhook: Arc::new(Estimator::for_minor(minor).with_limits(limits)),
    }
}

/// What [`start_servers`] started, and what the controllers take from it.
struct Servers {
    elector: Option<leader::RunningElector>,
    webhook: Option<webhook::RunningWebhook>,
    /// `/healthz`, `/readyz`, `/watches`.
    probes: tokio::task::JoinHandle<std::io::Result<()>>,
    /// `/metrics` (none with `--metrics-bind-address=0`).
    metrics_server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    leadership: leader::Leadership,
    metrics: metrics::Metrics,
    health: watch::Health,
}

/// The metrics registry, the elector (only the leader writes; every replica watches and serves
/// health), the admission webhook, the probes server (`/healthz`, `/readyz`, `/watches`) and the
/// metrics server (`/metrics`). The servers stop on `shutdown`.
async fn start_servers(
    args: &ControllerArgs,
    cluster: &Cluster,
    estimators: &Estimators,
    watch_settings: &watch::WatchSettings,
    shutdown: &CancellationToken,
) -> Result<Servers, RunError> {
    let mut registry = Registry::with_prefix("celcost");
    let metrics = metrics::Metrics::default().register(&mut registry);
    let leader_metrics = leader::LeaderMetrics::default().register(&mut registry);
    let (leadership, elector) = match cluster.lease.clone() {
        Some(lease) => {
            let (elector, leadership) =
                leader::Elector::new(cluster.client.clone(), lease, leader_metrics);
            (leadership, Some(leader::RunningElector::spawn(elector)))
        }
        None => {
            leader_metrics.leader.set(1);
            (leader::Leadership::always(), None)
        }
    };
    let health = cluster.health.clone().register(&mut registry);
    let webhook_metrics = webhook::WebhookMetrics::default().register(&mut registry);
    let auth_metrics = auth::AuthMetrics::default().register(&mut registry);
    let metrics_hosts = certs::service_hosts(
        &args.metrics_service,
        args.webhook
            .webhook_namespace
            .as_deref()
            .unwrap_or_else(|| cluster.client.default_namespace()),
    );
    let secure_metrics = args.metrics_secure && args.metrics_bind_address.0.is_some();
    // The admission webhook answers from the estimate of the object in the request, with the
    // rules of the cluster's minor and the same work budget.
    let webhook = webhook::start(
        &args.webhook,
        cluster.webhook.on,
        if secure_metrics { &metrics_hosts } else { &[] },
        &cluster.client,
        webhook::WebhookState {
            metrics: webhook_metrics,
            ..webhook::WebhookState::new(estimators.webhook.clone(), args.near_budget_percent)
        },
        shutdown.clone(),
    )
    .await?;
    // Readiness is the webhook's (what the Services route to): it needs no watch to answer, so
    // it stays in its Service while the watches recover. The watches' health is /watches.
    let readiness: http::Readiness = match webhook.as_ref().map(webhook::RunningWebhook::serving) {
        Some(serving) => Arc::new(move || serving.ready()),
        None => Arc::new(|| Ok(())),
    };
    let watch_health: http::Readiness = {
        let health = health.clone();
        let after = watch_settings.unhealthy_after;
        Arc::new(move || health.healthy(after))
    };
    let probes = http::AdminState {
        ready: readiness,
        watches: watch_health,
    };
    let probes_listener = tokio::net::TcpListener::bind(args.listen_address)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen_address))?;
    info!(address = %args.listen_address, "serving /healthz, /readyz and /watches");
    let probes = tokio::spawn(http::serve_on(
        probes_listener,
        http::router(probes),
        shutdown.clone().cancelled_owned(),
    ));
    let metrics_server = start_metrics_server(
        args,
        cluster,
        webhook.as_ref(),
        metrics_hosts,
        Arc::new(registry),
        auth_metrics,
        shutdown,
    )
    .await?;
    Ok(Servers {
        elector,
        webhook,
        probes,
        metrics_server,
        leadership,
        metrics,
        health,
    })
}

/// The `/metrics` server on `--metrics-bind-address`: HTTPS behind TokenReview and
/// SubjectAccessReview (`serve::auth`), with the webhook's certificate when the webhook runs (its
/// Secret names `hosts` too), else a self-signed one made now; plain HTTP with
/// `--metrics-secure=false`.
async fn start_metrics_server(
    args: &ControllerArgs,
    cluster: &Cluster,
    webhook: Option<&webhook::RunningWebhook>,
    mut hosts: Vec<String>,
    registry: Arc<Registry>,
    auth_metrics: auth::AuthMetrics,
    shutdown: &CancellationToken,
) -> Result<Option<tokio::task::JoinHandle<std::io::Result<()>>>, RunError> {
    let Some(addr) = args.metrics_bind_address.0 else {
        info!("no metrics server (--metrics-bind-address=0)");
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("metrics: cannot listen on {addr}: {e}"))?;
    if !args.metrics_secure {
        info!(address = %addr, "serving /metrics in plain HTTP, to anyone (--metrics-secure=false)");
        let router = http::metrics_router(registry, None);
        return Ok(Some(tokio::spawn(http::serve_on(
            listener,
            router,
            shutdown.clone().cancelled_owned(),
        ))));
    }
    let (resolver, source) = match webhook {
        Some(w) => (w.resolver(), "the webhook's Secret"),
        None => {
            hosts.extend(["localhost".to_string(), "127.0.0.1".to_string()]);
            let resolver = certs::self_signed(&hosts, certs::now())
                .map_err(|e| format!("metrics: cannot make a certificate: {e}"))?;
            (resolver, "self-signed at start")
        }
    };
    info!(
        address = %addr,
        certificate = source,
        hosts = ?hosts,
        "serving /metrics over HTTPS to authorized clients (TokenReview, SubjectAccessReview of get /metrics)"
    );
    let handshake_failures = auth_metrics.tls_handshake_failures.clone();
    let auth = auth::MetricsAuth::new(cluster.client.clone(), auth_metrics);
    let router = http::metrics_router(registry, Some(auth));
    let shutdown = shutdown.clone();
    Ok(Some(tokio::spawn(async move {
        webhook::serve_tls_counting(
            listener,
            certs::server_config(resolver),
            router,
            handshake_failures,
            "metrics",
            shutdown.cancelled_owned(),
        )
        .await;
        Ok(())
    })))
}

/// One controller per watched kind, stopping on `shutdown`: the CRDs', and the policies' when
/// served. Policies are typed with the cluster's CRDs: the policy controllers read the CRD
/// watch's store, and each CRD event re-checks the policies whose report depends on that CRD.
fn spawn_controllers(
    args: &ControllerArgs,
    cluster: &Cluster,
    estimators: &Estimators,
    servers: &Servers,
    watch_settings: watch::WatchSettings,
    shutdown: &CancellationToken,
) -> futures::future::BoxFuture<'static, ()> {
    let recorder = Recorder::new(
        cluster.client.clone(),
        Reporter {
            controller: "celcost".into(),
            instance: args.instance.clone(),
        },
    );
    let settings = Settings {
        status: StatusSettings {
            near_budget_percent: args.near_budget_percent,
            max_rules: usize::from(args.max_rules),
        },
        requeue: Duration::from_secs(args.resync_seconds.max(60)),
        memory_budget_bytes: usize::from(args.memory_budget_mib) << 20,
        pending_bytes: usize::from(args.watch_buffer_mib) << 20,
        request_timeout: Duration::from_secs(args.request_timeout_seconds),
        policy_reports: cluster.policy_reports.clone(),
        ..Settings::default()
    };
    let shared = Shared {
        budget: Budget::new(settings.memory_budget_bytes, settings.estimators),
        client: cluster.client.clone(),
        estimator: estimators.reports.clone(),
        recorder,
        metrics: servers.metrics.clone(),
        settings,
        config: controller::Config::default().concurrency(args.concurrency),
        health: servers.health.clone(),
        watch_settings,
        leadership: servers.leadership.clone(),
        shutdown: shutdown.clone(),
    };

    let (vap_crd_events, vap_crd_events_rx) = futures::channel::mpsc::unbounded();
    let (map_crd_events, map_crd_events_rx) = futures::channel::mpsc::unbounded();
    let mut observers = Vec::new();
    if cluster.vap_served {
        observers.push(vap_crd_events);
    }
    if cluster.map_version.is_some() {
        observers.push(map_crd_events);
    }
    let crds = controller_for::<CustomResourceDefinition>(&shared, observers, None);
    let links = |events| {
        Some(CrdLinks {
            store: crds.targets.clone(),
            events,
            listed: crds.listed.clone(),
        })
    };
    let mut runs: Vec<futures::future::BoxFuture<'static, ()>> = Vec::new();
    if cluster.vap_served {
        let vaps = controller_for::<ValidatingAdmissionPolicy>(
            &shared,
            Vec::new(),
            links(vap_crd_events_rx),
        );
        runs.push(vaps.run);
    }
    let map_links = links(map_crd_events_rx);
    match cluster.map_version {
        Some("v1") => runs.push(
            controller_for::<map::MutatingAdmissionPolicyV1>(&shared, Vec::new(), map_links).run,
        ),
        Some("v1beta1") => runs.push(
            controller_for::<map::MutatingAdmissionPolicyV1beta1>(&shared, Vec::new(), map_links)
                .run,
        ),
        Some(_) => runs.push(
            controller_for::<map::MutatingAdmissionPolicyV1alpha1>(&shared, Vec::new(), map_links)
                .run,
        ),
        None => {}
    }
    runs.push(crds.run);
    futures::future::join_all(runs).map(|_| ()).boxed()
}

/// Waits for the controllers to stop (on the token), then hands over: the lease is given up so
/// that the other replica takes over at once, and the webhook and the probes and metrics servers are waited
/// for (they stopped on the same token).
async fn drain(
    controllers: futures::future::BoxFuture<'static, ()>,
    servers: Servers,
) -> Result<(), RunError> {
    controllers.await;
    info!("controllers stopped");
    if let Some(elector) = servers.elector {
        elector.stop().await;
    }
    if let Some(w) = servers.webhook {
        w.stopped().await;
    }
    let probes = joined("probes server", servers.probes.await);
    let metrics = match servers.metrics_server {
        Some(m) => joined("metrics server", m.await),
        None => Ok(()),
    };
    probes.and(metrics)
}

/// A server's end, as `run`'s error.
fn joined(
    what: &str,
    ended: Result<std::io::Result<()>, tokio::task::JoinError>,
) -> Result<(), RunError> {
    match ended {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("{what}: {e}").into()),
        Err(e) => Err(format!("{what}: {e}").into()),
    }
}

/// Cancels `shutdown` on the first SIGINT or SIGTERM; exits the process on the second.
async fn cancel_on_signal(shutdown: CancellationToken) {
    signal().await;
    info!("signal received: stopping (a second signal exits at once)");
    shutdown.cancel();
    signal().await;
    warn!("second signal: exiting without draining");
    std::process::exit(130);
}

/// The next SIGINT or SIGTERM (SIGINT only where there is no SIGTERM).
async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// What the two controllers share.
struct Shared {
    client: Client,
    estimator: Arc<dyn CostEstimator>,
    recorder: Recorder,
    metrics: metrics::Metrics,
    settings: Settings,
    config: controller::Config,
    budget: Budget,
    health: watch::Health,
    watch_settings: watch::WatchSettings,
    leadership: leader::Leadership,
    /// Cancelled to stop: every controller shuts down on it.
    shutdown: CancellationToken,
}

/// The stores keep only what the reconciler reads: name, uid, generation, resourceVersion and,
/// of reports, their owners (the owner's uid tells an orphan; the controller maps a report's
/// event to its target through them). Labels, annotations, finalizers, managedFields and
/// timestamps are dropped, and so is the object's type (its store knows it): with 20,000 CRDs
/// each byte here is 20 KB of the pod's memory.
fn keep_what_the_reconciler_reads<K: kube::Resource>(obj: &mut PartialObjectMeta<K>) {
    let m = &mut obj.metadata;
    m.managed_fields = None;
    m.annotations = None;
    m.labels = None;
    m.finalizers = None;
    m.creation_timestamp = None;
    m.self_link = None;
    m.generate_name = None;
    obj.types = None;
}

/// The controller of one kind.
struct KindController<K: Target> {
    run: futures::future::BoxFuture<'static, ()>,
    /// The watched targets.
    targets: Store<PartialObjectMeta<K>>,
    /// Whether the targets' first list is complete.
    listed: tokio::sync::watch::Receiver<bool>,
}

/// How the policy controller follows the CRDs.
struct CrdLinks {
    store: context::CrdStore,
    events: futures::channel::mpsc::UnboundedReceiver<PartialObjectMeta<CustomResourceDefinition>>,
    /// Whether the CRDs' first list is complete.
    listed: tokio::sync::watch::Receiver<bool>,
}

/// Page size of a target watch's list: the pages hold whole objects (a page of large CRDs is
/// a few MiB as it is parsed), and each is turned into metadata and a held body before the
/// next is asked for.
const TARGET_PAGE_SIZE: u32 = 25;

/// The controller of one kind. Its target events are also sent to `observe`; `crds` makes it
/// type policies with the cluster's CRDs and follow them.
///
/// The targets are watched whole (a reconcile needs the object: reading it again would double
/// the API server's work), but nothing keeps them whole: each event becomes the target's
/// metadata, which the store keeps, and, when the target needs an estimate, its JSON text held
/// in [`Context::pending`] until its reconcile takes it (bounded: the watch waits for room).
/// The reports are watched metadata-only.
fn controller_for<K: Target>(
    shared: &Shared,
    observe: Vec<futures::channel::mpsc::UnboundedSender<PartialObjectMeta<K>>>,
    crds: Option<CrdLinks>,
) -> KindController<K> {
    let kind = K::KIND;
    let (reports, report_events) = report_watch(shared, kind);
    let (ctx, crd_events, crds_listed) = context_for(shared, reports, crds);

    // The targets: whole objects, in pages, turned into metadata (kept) and bodies (held until
    // reconciled). The store is ready at once, so reconciles start with the first page and
    // free the room the next pages' bodies wait for.
    let (targets, mut targets_writer) = reflector::store::<PartialObjectMeta<K>>();
    targets_writer.apply_watcher_event(&watcher::Event::Init);
    targets_writer.apply_watcher_event(&watcher::Event::InitDone);
    let resource = kube::core::ApiResource::erase::<K>(&());
    let target_api = Api::<WatchedObject>::all_with(shared.client.clone(), &resource);
    let target_wc = watcher::Config {
        page_size: Some(TARGET_PAGE_SIZE),
        ..watcher::Config::default().timeout(shared.watch_settings.timeout)
    };
    // Deleted targets, seen as deletions or missing from a relist (deleted while the watch was
    // away): their memo and gauges are forgotten and their reports deleted (by the reaper
    // below; the garbage collector would, but late after an API server restart).
    let (gone_tx, gone_rx) = futures::channel::mpsc::unbounded::<String>();
    let forget_gone: watch::OnGone = {
        let ctx_forget = ctx.forget_handle();
        let gone_tx = gone_tx.clone();
        Box::new(move |name: &str| {
            ctx_forget(kind, name);
            let _ = gone_tx.unbounded_send(name.to_string());
        })
    };
    // Until the first list of the targets is complete, a reconcile request for a target not in
    // the store (a report's watch triggering its owner) is no sign of a deletion: the target may
    // be in a later page. Those names are checked when the list ends.
    let unlisted: Arc<std::sync::Mutex<Option<std::collections::HashSet<String>>>> =
        Arc::new(std::sync::Mutex::new(Some(Default::default())));
    let (listed_tx, listed) = tokio::sync::watch::channel(false);
    let compactor = Compactor::<K> {
        ctx: ctx.clone(),
        store: targets.clone(),
        listing: Arc::default(),
        unlisted: unlisted.clone(),
        gone: gone_tx.clone(),
        listed: listed_tx,
        _kind: std::marker::PhantomData,
    };
    let target_events = watch::resilient(
        kind.short(),
        move || watcher(target_api.clone(), target_wc.clone()).boxed(),
        shared.watch_settings.clone(),
        shared.health.clone(),
        Some(forget_gone),
    )
    .then(move |event| {
        let compactor = compactor.clone();
        async move { compactor.compact(event).await }
    })
    .flat_map(futures::stream::iter)
    .reflect(targets_writer)
    .touched_objects()
    .inspect(move |event| {
        if let Ok(obj) = event {
            for tx in &observe {
                // The receiver only goes when the operator stops.
                let _ = tx.unbounded_send(obj.clone());
            }
        }
    });

    let forget = ctx.clone();
    let reaper = reaper_for(&ctx, &targets, gone_rx);
    // A lost lease: forget the memo and the gauges (the next term re-checks every target).
    let on_loss = {
        let ctx = ctx.clone();
        shared.leadership.lost().for_each(move |()| {
            ctx.forget_all();
            futures::future::ready(())
        })
    };
    let controller =
        Controller::for_stream(target_events, targets.clone()).owns_stream(report_events);
    let controller = with_triggers(controller, shared, crds_listed, crd_events, &ctx);
    let run = controller
        .with_config(shared.config.clone())
        .graceful_shutdown_on(shared.shutdown.clone().cancelled_owned())
        .run(reconcile::<K>, error_policy::<K>, ctx)
        .for_each(move |res| {
            match res {
                Ok((obj, _)) => debug!(kind = kind.short(), name = %obj.name, "reconciled"),
                Err(controller::Error::ObjectNotFound(obj)) => {
                    if let Some(early) = unlisted.lock().expect("unlisted lock").as_mut() {
                        // Not listed yet (perhaps in a later page): checked at the list's end.
                        early.insert(obj.name.clone());
                        return futures::future::ready(());
                    }
                    // The target was deleted: its report goes with it (garbage collector).
                    debug!(kind = kind.short(), name = %obj.name, "target deleted");
                    forget.forget(kind, &obj.name);
                    let _ = gone_tx.unbounded_send(obj.name.clone());
                }
                // Logged by the error policy.
                Err(controller::Error::ReconcilerFailed(..)) => {}
                // Watch errors are handled (and logged) by `watch::resilient`.
                Err(e) => debug!(kind = kind.short(), error = %e, "controller error"),
            }
            futures::future::ready(())
        });
    // The reaper ends with the controller (on shutdown).
    let reaper = futures::future::join(reaper, on_loss);
    let run = futures::future::select(Box::pin(run), Box::pin(reaper))
        .map(|_| ())
        .boxed();
    KindController {
        run,
        targets,
        listed,
    }
}

/// The triggers of a kind's controller besides its targets' and reports' events.
fn with_triggers<K: Target>(
    controller: Controller<PartialObjectMeta<K>>,
    shared: &Shared,
    crds_listed: Option<tokio::sync::watch::Receiver<bool>>,
    crd_events: Option<
        futures::channel::mpsc::UnboundedReceiver<PartialObjectMeta<CustomResourceDefinition>>,
    >,
    ctx: &Arc<Context>,
) -> Controller<PartialObjectMeta<K>> {
    // A new term re-checks every target; so does a watch restored after an outage (the
    // targets whose reconcile failed meanwhile would otherwise wait out their backoff; the
    // others are current and cost a lookup).
    // The periodic re-check of every target (`--resync-seconds`) is one trigger for all of them,
    // not a requeue per target: the controller's scheduler kept a timer entry and two copies of
    // the target's reference (name, uid, resourceVersion) for each, about 0.6 KiB per target.
    let resync = {
        let period = shared.settings.requeue;
        futures::stream::unfold((), move |()| async move {
            tokio::time::sleep(period).await;
            Some(((), ()))
        })
    };
    let mut controller = controller
        .reconcile_all_on(shared.leadership.acquired())
        .reconcile_all_on(shared.health.restorations())
        .reconcile_all_on(resync);
    if let Some(mut listed) = crds_listed {
        // The CRDs' first list is complete: every policy is checked again, so that one whose
        // CRD was read before the store had it and is not in the list (deleted meanwhile) is
        // estimated again; the others are current and cost a lookup.
        controller = controller.reconcile_all_on(futures::stream::once(async move {
            let _ = listed.wait_for(|l| *l).await;
        }));
    }
    if let Some(events) = crd_events {
        let deps = ctx.clone();
        controller = controller.watches_stream(
            events.map(Ok::<_, watcher::Error>),
            move |crd: PartialObjectMeta<CustomResourceDefinition>| {
                deps.dependents(&crd.name_any())
                    .into_iter()
                    .map(|name| ObjectRef::new(&name))
            },
        );
    }
    controller
}

/// A kind's CostReports, watched metadata-only from the watch cache (`resourceVersion=0`) in
/// one response: the store the reconciler reads, and the stream its controller owns. Watches ask
/// for bookmarks (the default) and last `timeout` on the server: a watch that stays silent longer
/// than that is restarted (`watch`).
fn report_watch(
    shared: &Shared,
    kind: TargetKind,
) -> (
    Store<PartialObjectMeta<CostReport>>,
    impl futures::Stream<Item = Result<PartialObjectMeta<CostReport>, watcher::Error>>
    + Send
    + 'static
    + use<>,
) {
    let wc = watcher::Config {
        page_size: None,
        ..watcher::Config::default()
            .any_semantic()
            .timeout(shared.watch_settings.timeout)
    };
    let (reports, reports_writer): (Store<PartialObjectMeta<CostReport>>, _) = reflector::store();
    let report_api = Api::<PartialObjectMeta<CostReport>>::all(shared.client.clone());
    let report_wc = wc.labels(&format!(
        "{}={}",
        reconcile::LABEL_TARGET_KIND,
        kind.short()
    ));
    let events = watch::resilient(
        &format!("{}-reports", kind.short()),
        move || watcher(report_api.clone(), report_wc.clone()).boxed(),
        shared.watch_settings.clone(),
        shared.health.clone(),
        None,
    )
    .modify(keep_what_the_reconciler_reads)
    .reflect(reports_writer)
    .touched_objects();
    (reports, events)
}

/// A kind's reconcile context over its reports' store; with `crds`, it types policies with the
/// cluster's CRDs: then also the CRD events (to follow) and whether their first list is done.
#[allow(clippy::type_complexity)]
fn context_for(
    shared: &Shared,
    reports: Store<PartialObjectMeta<CostReport>>,
    crds: Option<CrdLinks>,
) -> (
    Arc<Context>,
    Option<futures::channel::mpsc::UnboundedReceiver<PartialObjectMeta<CustomResourceDefinition>>>,
    Option<tokio::sync::watch::Receiver<bool>>,
) {
    let mut ctx = Context::new(
        shared.client.clone(),
        shared.estimator.clone(),
        shared.recorder.clone(),
        shared.metrics.clone(),
        shared.settings.clone(),
        reports,
    )
    .with_budget(shared.budget.clone())
    .with_leadership(shared.leadership.clone());
    ctx.pending = Arc::new(reports::pending::Pending::new(
        shared.settings.pending_bytes,
    ));
    let (mut crd_events, mut crds_listed) = (None, None);
    if let Some(links) = crds {
        ctx = ctx
            .with_crd_store(links.store)
            .with_crds_listed(links.listed.clone());
        crd_events = Some(links.events);
        crds_listed = Some(links.listed);
    }
    (Arc::new(ctx), crd_events, crds_listed)
}

/// The reaper, run beside a kind's controller: it deletes the report of each target named on
/// `gone` unless the store has that target again.
fn reaper_for<K: Target>(
    ctx: &Arc<Context>,
    targets: &Store<PartialObjectMeta<K>>,
    gone: futures::channel::mpsc::UnboundedReceiver<String>,
) -> impl std::future::Future<Output = ()> + Send + 'static + use<K> {
    let kind = K::KIND;
    let (ctx, targets) = (ctx.clone(), targets.clone());
    gone.for_each(move |name| {
        let (ctx, targets) = (ctx.clone(), targets.clone());
        async move {
            let live = targets
                .get(&ObjectRef::new(&name))
                .and_then(|t| t.metadata.uid.clone());
            reconcile::delete_orphaned_report(&ctx, kind, &name, live.as_deref()).await;
        }
    })
}

/// Turns a target watch's whole objects into what the operator keeps: the metadata (for the
/// store and the controller) and, for a target that needs an estimate, its body in
/// [`Context::pending`]. The store is fed plain `Apply`/`Delete` events (it was made ready
/// empty): a list's objects are reconcilable as they arrive, and the end of a list deletes
/// from the store what the list no longer had.
struct Compactor<K: Target> {
    ctx: Arc<Context>,
    store: Store<PartialObjectMeta<K>>,
    /// The names of the list under way.
    listing: Arc<std::sync::Mutex<Option<std::collections::HashSet<String>>>>,
    /// Targets asked for before the first list ended and not found then (`None` after it).
    unlisted: Arc<std::sync::Mutex<Option<std::collections::HashSet<String>>>>,
    /// Where deleted targets go (their reports are deleted).
    gone: futures::channel::mpsc::UnboundedSender<String>,
    /// Set when the first list is complete.
    listed: tokio::sync::watch::Sender<bool>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: Target> Clone for Compactor<K> {
    fn clone(&self) -> Self {
        Compactor {
            ctx: self.ctx.clone(),
            store: self.store.clone(),
            listing: self.listing.clone(),
            unlisted: self.unlisted.clone(),
            gone: self.gone.clone(),
            listed: self.listed.clone(),
            _kind: std::marker::PhantomData,
        }
    }
}

type MetaEvent<K> = Result<watcher::Event<PartialObjectMeta<K>>, watcher::Error>;

impl<K: Target> Compactor<K> {
    async fn compact(
        &self,
        event: Result<watcher::Event<WatchedObject>, watcher::Error>,
    ) -> Vec<MetaEvent<K>> {
        let event = match event {
            Ok(e) => e,
            Err(e) => return vec![Err(e)],
        };
        match event {
            watcher::Event::Init => {
                *self.listing.lock().expect("listing lock") = Some(Default::default());
                Vec::new()
            }
            watcher::Event::InitApply(obj) | watcher::Event::Apply(obj) => {
                let name = obj.name_any();
                if let Some(l) = self.listing.lock().expect("listing lock").as_mut() {
                    l.insert(name.clone());
                }
                let meta = self.hold(obj).await;
                vec![Ok(watcher::Event::Apply(meta))]
            }
            watcher::Event::Delete(obj) => {
                self.ctx.pending.remove(&obj.name_any());
                vec![Ok(watcher::Event::Delete(metadata_of(obj.metadata)))]
            }
            watcher::Event::InitDone => {
                self.listed.send_replace(true);
                let Some(listed) = self.listing.lock().expect("listing lock").take() else {
                    return Vec::new();
                };
                // The first list is complete: what was asked for and is not in it is gone.
                let early = self.unlisted.lock().expect("unlisted lock").take();
                for name in early.into_iter().flatten() {
                    if !listed.contains(&name) {
                        self.ctx.forget(K::KIND, &name);
                        let _ = self.gone.unbounded_send(name);
                    }
                }
                self.store
                    .state()
                    .into_iter()
                    .filter(|m| !listed.contains(&m.name_any()))
                    .map(|m| {
                        self.ctx.pending.remove(&m.name_any());
                        Ok(watcher::Event::Delete((*m).clone()))
                    })
                    .collect()
            }
        }
    }

    /// The target's metadata; its body is held (waiting for room) when this replica leads and
    /// the target's report is not known to be current for this generation.
    async fn hold(&self, obj: WatchedObject) -> PartialObjectMeta<K> {
        let WatchedObject { metadata, text } = obj;
        let meta = metadata_of::<K>(metadata);
        let (uid, generation) = (meta.metadata.uid.clone(), meta.metadata.generation);
        let name = meta.name_any();
        if !self.ctx.leadership.is_leader()
            || self
                .ctx
                .needs_no_estimate(K::KIND, &name, uid.as_deref(), generation)
        {
            self.ctx.pending.remove(&name);
            return meta;
        }
        self.ctx.pending.put(name, uid, generation, text).await;
        meta
    }
}

/// The metadata the store keeps of a watched object ([`keep_what_the_reconciler_reads`]).
fn metadata_of<K: Target>(metadata: kube::api::ObjectMeta) -> PartialObjectMeta<K> {
    let mut meta = PartialObjectMeta::<K> {
        types: None,
        metadata,
        _phantom: std::marker::PhantomData,
    };
    keep_what_the_reconciler_reads(&mut meta);
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_read_as_controller_runtime_reads_them() {
        let at = |s: &str| parse_bind_address(s).map(|b| b.0.map(|a| a.to_string()));
        assert_eq!(at(":8443"), Ok(Some("0.0.0.0:8443".into())));
        assert_eq!(at("127.0.0.1:9090"), Ok(Some("127.0.0.1:9090".into())));
        assert_eq!(at("[::]:8443"), Ok(Some("[::]:8443".into())));
        assert_eq!(at("0"), Ok(None));
        for bad in ["", ":", "8443", "localhost:8443", ":99999"] {
            let e = at(bad).unwrap_err();
            assert!(e.contains("host:port, :port or 0"), "{bad}: {e}");
        }
    }

    #[test]
    fn model_version_clamps() {
        assert_eq!(model_version("1", "33"), Version::new(1, 33));
        assert_eq!(model_version("1", "34+"), Version::new(1, 34));
        assert_eq!(model_version("1", "40"), NEWEST_MODEL);
        assert_eq!(model_version("1", "20"), OLDEST_MODEL);
        assert_eq!(model_version("x", ""), NEWEST_MODEL);
        assert_eq!(server_minor("1", "38+"), Some(Version::new(1, 38)));
        assert_eq!(server_minor("", "38"), None);
        assert_eq!(parse_distribution("auto"), Ok(DistributionChoice(None)));
        assert!(parse_distribution("openshift").unwrap().0.is_some());
        assert!(parse_distribution("rancher").is_err());
    }

    #[test]
    fn verify_cli() {
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: ControllerArgs,
        }
        Wrapper::command().debug_assert();
        // Every argument's type agrees with its parser (clap checks that only when read).
        use clap::Parser;
        let w = Wrapper::try_parse_from(["celcost"]).unwrap();
        assert_eq!(w.args.distribution, DistributionChoice(None));
        assert_eq!(w.args.kubernetes_version, None);
        let w = Wrapper::try_parse_from([
            "celcost",
            "--distribution",
            "openshift",
            "--kubernetes-version",
            "1.31",
        ])
        .unwrap();
        assert_eq!(
            w.args.distribution,
            DistributionChoice(Some(celcost_core::cel::minor::Distribution::OpenShift))
        );
        assert_eq!(w.args.kubernetes_version, Some(Version::new(1, 31)));
        assert!(Wrapper::try_parse_from(["celcost", "--kubernetes-version", "1.27"]).is_err());
    }
}
