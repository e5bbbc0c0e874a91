//! celcost's advice and outputs, over the estimator of `celcost-core`: its layers, each module
//! importing only from those below it and from the core (`tests/it/layers.rs`):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | advice | `suggest`, `rewrite`, `fix` | suggested bounds, cheaper rules; the bounds written in the CRD's YAML or its Go types |
//! | output | `output` | table, markdown, json, sarif, github, diff |

pub mod fix;
pub mod output;
pub mod rewrite;
pub mod suggest;
