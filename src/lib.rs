//! celcost's layers, each module importing only from those below it (`tests/it/layers.rs` holds
//! the table and fails on an import outside it):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | base | `budget`, `goregexp`, `positions`, `input`, `report`, `fixtures` | work budgets, Go regexps, YAML input with positions; the report model, its limits and number formatting; the objects tests wrap their cases in |
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
#[doc(hidden)]
pub mod fixtures;
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
