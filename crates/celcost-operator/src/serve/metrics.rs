//! Prometheus metrics: reconcile counts, failures and durations per controller, report writes,
//! and per-target cost ratios (labels `kind`, `name`; never per rule, to keep series bounded).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::resource::TargetKind;

/// `kind="crd"|"vap"`: which controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: String,
}

/// A reconcile failure of a controller, by error category.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    pub kind: String,
    pub error: String,
}

/// One target.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    pub kind: String,
    pub name: String,
}

impl TargetLabels {
    pub fn new(kind: TargetKind, name: &str) -> Self {
        TargetLabels {
            kind: kind.short().to_string(),
            name: name.to_string(),
        }
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

type F64Gauge = Gauge<f64, AtomicU64>;

/// The operator's metrics, registered under the `celcost_` prefix.
#[derive(Clone)]
pub struct Metrics {
    pub reconciles: Family<KindLabels, Counter>,
    pub failures: Family<FailureLabels, Counter>,
    pub duration: Family<KindLabels, Histogram, fn() -> Histogram>,
    pub writes: Family<KindLabels, Counter>,
    pub estimates: Family<KindLabels, Counter>,
    /// Reconciles that ran again after a failure of the same target (its backoff).
    pub retries: Family<KindLabels, Counter>,
    /// Reads of a target the watch could not spare (no body held for it: a resync, a report
    /// edited by someone else, a body dropped for memory).
    pub target_reads: Family<KindLabels, Counter>,
    /// Targets estimated from the body their watch delivered (no read).
    pub watched_bodies: Family<KindLabels, Counter>,
    pub rule_ratio: Family<TargetLabels, F64Gauge>,
    pub total_ratio: Family<TargetLabels, F64Gauge>,
    pub estimation_failed: Family<TargetLabels, Gauge>,
    /// 1 while the next minor's API server would reject a target this minor accepts
    /// (`UpgradeSafe=False`, `RejectedByNextVersion`), 0 while it accepts it; absent when the
    /// next minor is unknown.
    pub next_version_rejects: Family<TargetLabels, Gauge>,
    /// CRDs the cluster serves though its minor would refuse them on create: their schemas
    /// cannot change until the rules named in their report fit (`SchemaUpdatable=False`).
    pub schema_frozen: Family<TargetLabels, Gauge>,
    /// Of those, the ones the API server refuses every update of.
    pub updates_refused: Family<TargetLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            reconciles: Family::default(),
            failures: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            writes: Family::default(),
            estimates: Family::default(),
            retries: Family::default(),
            target_reads: Family::default(),
            watched_bodies: Family::default(),
            rule_ratio: Family::default(),
            total_ratio: Family::default(),
            estimation_failed: Family::default(),
            next_version_rejects: Family::default(),
            schema_frozen: Family::default(),
            updates_refused: Family::default(),
        }
    }
}

impl Metrics {
    /// Registers every metric in `registry`.
    pub fn register(self, registry: &mut Registry) -> Self {
        registry.register(
            "reconcile_runs",
            "Reconciles started, per controller (kind=crd|vap)",
            self.reconciles.clone(),
        );
        registry.register(
            "reconcile_failures",
            "Reconciles that failed with an API error, per controller and error category",
            self.failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of reconciles, per controller",
            self.duration.clone(),
        );
        registry.register(
            "report_writes",
            "Writes of CostReports and of their status, per controller",
            self.writes.clone(),
        );
        registry.register(
            "estimates",
            "Targets estimated (skipped reconciles of unchanged targets are not counted)",
            self.estimates.clone(),
        );
        registry.register(
            "reconcile_retries",
            "Reconciles of a target that follow a failed one (per-target backoff), per controller",
            self.retries.clone(),
        );
        registry.register(
            "target_reads",
            "GETs of a target the watch could not spare (resync of a changed report, body dropped), per controller",
            self.target_reads.clone(),
        );
        registry.register(
            "watched_bodies",
            "Targets estimated from the object their watch delivered, without a read, per controller",
            self.watched_bodies.clone(),
        );
        registry.register(
            "highest_rule_cost_ratio",
            "Highest estimated rule cost of a target divided by its limit (CRDs: 10,000,000 per rule; policies: 1,000,000 per call)",
            self.rule_ratio.clone(),
        );
        registry.register(
            "highest_total_cost_ratio",
            "Highest estimated total of a target divided by its limit (CRDs: 100,000,000 per schema; policies: the 10,000,000 runtime budget)",
            self.total_ratio.clone(),
        );
        registry.register(
            "estimation_failed",
            "1 while a target has no estimate (its report is Ready=False)",
            self.estimation_failed.clone(),
        );
        registry.register(
            "next_version_rejects",
            "1 while the next Kubernetes minor's API server would reject a target that this minor accepts (UpgradeSafe=False, reason RejectedByNextVersion), 0 while it accepts it",
            self.next_version_rejects.clone(),
        );
        registry.register(
            "schema_frozen",
            "1 while the cluster serves a CRD that its Kubernetes minor would refuse on create: updates that keep its schemas may pass, a schema change is refused until the rules its report names fit (SchemaUpdatable=False)",
            self.schema_frozen.clone(),
        );
        registry.register(
            "updates_refused",
            "1 while the cluster serves a CRD that its Kubernetes minor refuses every update of (SchemaUpdatable=False, reason UpdatesRefused)",
            self.updates_refused.clone(),
        );
        registry.register_collector(Box::new(ProcessMemory));
        self
    }

    /// Forgets the gauges of every target (this replica no longer leads).
    pub fn forget_all_targets(&self) {
        self.rule_ratio.clear();
        self.total_ratio.clear();
        self.estimation_failed.clear();
        self.next_version_rejects.clear();
        self.schema_frozen.clear();
        self.updates_refused.clear();
    }

    /// Forgets a target's gauges (deleted target).
    pub fn forget(&self, labels: &TargetLabels) {
        self.rule_ratio.remove(labels);
        self.total_ratio.remove(labels);
        self.estimation_failed.remove(labels);
        self.next_version_rejects.remove(labels);
        self.schema_frozen.remove(labels);
        self.updates_refused.remove(labels);
    }

    /// A CRD's `SchemaUpdatable` state: the gauges are set while it is False, absent otherwise.
    pub fn record_schema_frozen(&self, labels: &TargetLabels, frozen: bool, refused: bool) {
        for (family, on) in [
            (&self.schema_frozen, frozen),
            (&self.updates_refused, refused),
        ] {
            if on {
                family.get_or_create(labels).set(1);
            } else {
                family.remove(labels);
            }
        }
    }
}

/// `celcost_process_resident_memory_bytes` and `celcost_process_peak_resident_memory_bytes`
/// (VmRSS and VmHWM of /proc/self/status, read when scraped): how close a replica is to its
/// memory limit, and how close it came.
#[derive(Debug)]
struct ProcessMemory;

/// VmRSS and VmHWM in bytes, from the text of /proc/self/status.
pub fn rss_and_peak(status: &str) -> Option<(u64, u64)> {
    let kib = |key: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()
            .map(|k| k * 1024)
    };
    Some((kib("VmRSS:")?, kib("VmHWM:")?))
}

impl prometheus_client::collector::Collector for ProcessMemory {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::gauge::ConstGauge;
        let Some((rss, peak)) = std::fs::read_to_string("/proc/self/status")
            .ok()
            .as_deref()
            .and_then(rss_and_peak)
        else {
            return Ok(());
        };
        for (name, help, value) in [
            (
                "process_resident_memory_bytes",
                "Resident memory of the operator's process (VmRSS)",
                rss,
            ),
            (
                "process_peak_resident_memory_bytes",
                "Peak resident memory of the operator's process since it started (VmHWM)",
                peak,
            ),
        ] {
            let g = ConstGauge::new(value as f64);
            let e = encoder.encode_descriptor(name, help, None, g.metric_type())?;
            g.encode(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_memory_is_read_from_proc_status() {
        let status = "Name:\tcelcost\nVmHWM:\t  81234 kB\nVmRSS:\t   70000 kB\n";
        assert_eq!(rss_and_peak(status), Some((70000 * 1024, 81234 * 1024)));
        assert_eq!(rss_and_peak("Name:\tx\n"), None);
        let mut registry = Registry::with_prefix("celcost");
        Metrics::default().register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("celcost_process_peak_resident_memory_bytes "))
            .expect(&text);
        let peak: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(peak > 1024.0 * 1024.0, "{line}");
    }
}
