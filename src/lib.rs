//! celcost: the command line (`cli`, driven by `src/main.rs`) and the fuzz targets' bodies
//! (`fuzzing`), over the workspace's crates, re-exported here at their paths:
//!
//! | crate | modules | what |
//! |---|---|---|
//! | `celcost-core` | `budget`, `goregexp`, `positions`, `input`, `report`, `fixtures`, `cel`, `schema`, `crd`, `vap`, `estimate`, `diff`, `locate` | the pure estimator |
//! | `celcost-advice` | `suggest`, `rewrite`, `fix`, `output` | suggested bounds, cheaper rules, `fix`, the output formats |
//! | `celcost-operator` | `controller` | the operator |
//! | `celcost` (this crate) | `cli`, `fuzzing` | the command line's driver; the fuzz targets' bodies |

pub mod cli;
pub mod fuzzing;

pub use celcost_advice::{fix, output, rewrite, suggest};
#[doc(hidden)]
pub use celcost_core::fixtures;
pub use celcost_core::{
    Estimator, budget, cel, crd, diff, estimate, goregexp, input, locate, positions, report,
    schema, vap,
};
pub use celcost_operator as controller;
