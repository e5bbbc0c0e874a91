//! celcost's layers, each module importing only from those below it (`tests/it/layers.rs` holds
//! the table and fails on an import outside it):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | base | `budget`, `goregexp`, `positions`, `input`, `report` | work budgets, Go regexps, YAML input with positions; the report model, its limits and number formatting |
//! | CEL | `cel` | parse, check, estimate one expression |
//! | schemas | `schema` | OpenAPI schemas as CEL types |
//! | objects | `crd`, `vap` | a CRD's rules and totals; a policy's expressions |
//! | estimate | `estimate`, `diff`, `locate` | pure entry point (one minor or a range), comparing two runs, source positions of a report |
//! | advice | `suggest`, `rewrite`, `fix` | suggested bounds, cheaper rules; the bounds written in the CRD's YAML or its Go types |
//! | output | `output` | table, markdown, json, sarif, github, diff |
//! | front ends | `cli`, `controller`, `fuzzing` | the command line's driver; the operator; the fuzz targets' bodies |

pub mod budget;
pub mod cel;
pub mod cli;
pub mod controller;
pub mod crd;
pub mod diff;
pub mod estimate;
pub mod fix;
pub mod fuzzing;
pub mod goregexp;
pub mod input;
pub mod locate;
pub mod output;
pub mod positions;
pub mod report;
pub mod rewrite;
pub mod schema;
pub mod suggest;
pub mod vap;

pub use estimate::Estimator;

/// The CI outputs at their old path (now [`output::findings`], [`output::sarif`],
/// [`output::github`]).
pub mod ci {
    pub use crate::cli::parse_percent;
    pub use crate::output::findings::*;
    pub use crate::output::github::*;
    pub use crate::output::sarif::*;
    pub use crate::report::DEFAULT_NEAR_BUDGET_PERCENT;
}

/// Ranges of minors at their old path (now [`report::versions`], the model, and
/// [`estimate::range`], the estimators).
pub mod versions {
    pub use crate::estimate::range::*;
    pub use crate::report::versions::*;
}
