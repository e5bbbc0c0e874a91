//! celcost's estimator, a pure library: the Kubernetes API server's CEL cost estimates for CRD
//! rules and admission policies, as each supported minor computes them. No cluster client, no
//! rendering, no advice: [`Estimator`] takes objects (JSON values) and gives reports
//! ([`report`]). Its layers, each module importing only from those below it
//! (`tests/it/layers.rs` holds the table and fails on an import outside it):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | base | `budget`, `goregexp`, `positions`, `input`, `fixtures` | work budgets, Go regexps, YAML input with positions; the objects tests wrap their cases in |
//! | CEL | `cel` | parse, check, estimate one expression |
//! | schemas | `schema` | OpenAPI schemas as CEL types |
//! | report | `report` | the report model, its limits and number formatting |
//! | objects | `crd`, `vap` | a CRD's rules and totals; a policy's expressions |
//! | estimate | `estimate`, `diff`, `locate` | pure entry point (one minor or a range; `estimate::versions` the matrix of a range and `estimate::causes` the upstream change behind each of its steps), comparing two runs, source positions of a report |
//!
//! Above it: `celcost-advice` (suggestions, rewrites, `fix`, outputs), `celcost-operator` (the
//! controller) and `celcost` (the command line).

pub mod budget;
pub mod cel;
pub mod crd;
pub mod diff;
pub mod estimate;
#[doc(hidden)]
pub mod fixtures;
pub mod goregexp;
pub mod input;
pub mod locate;
pub mod positions;
pub mod report;
pub mod schema;
pub mod vap;

pub use estimate::Estimator;
