//! Reports: one `CostReport` per target, kept current. [`context`] is what every reconcile
//! shares; [`pending`] holds the targets' bodies from their watch to their reconcile;
//! [`reconcile`] takes a target's body, estimates it and applies its report; [`schemas`]
//! reads the CRDs a policy's typed estimate needs; [`status`] turns the estimator's report into
//! the report's status, [`conditions`] its conditions, [`events`] the transitions worth an event,
//! [`stored`] what the report says of a CRD the cluster serves though its minor would refuse it
//! on create (all four pure); [`map`] watches MutatingAdmissionPolicies at whichever version the
//! cluster serves; [`policy_reports`] writes the OpenReports and PolicyReport objects beside
//! each CostReport.

pub mod conditions;
pub mod context;
pub mod events;
pub mod map;
pub mod pending;
pub mod policy_reports;
pub mod reconcile;
pub mod schemas;
pub mod status;
pub mod stored;
