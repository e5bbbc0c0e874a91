//! CEL: parsing (through the `cel` crate's parser), type checking and cost estimation, following
//! cel-go and the Kubernetes CEL libraries. Pure: no IO, no cluster client.

pub mod ast;
pub mod checker;
pub mod constraint;
pub mod cost;
pub mod decls;
pub mod env;
pub mod eval;
mod expecting;
pub mod gofmt;
pub mod k8s_cost;
pub mod minor;
pub mod parse;
pub mod runtime_cost;
pub mod types;
pub mod unparse;
pub mod version;
