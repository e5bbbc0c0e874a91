//! The integration tests that can share one process, as one test binary (each file a module:
//! `cargo test --test it range::` runs one file's). `tests/scaling.rs` has a binary of its own
//! (its global allocator counts every allocation of the process), and so has
//! `tests/controller_e2e` (the cluster suites, run by `e2e/`).

mod common;
#[path = "../../benches/support/families.rs"]
mod families;
#[path = "../../benches/support/fuzzgen.rs"]
mod fuzzgen;

mod action;
mod bad_input;
mod causes;
mod ci_output;
mod cli_versions;
mod conformance;
mod controller;
mod cost_vectors;
mod crd_sync;
mod deploy_config;
mod fix;
mod fuzz_regressions;
mod golden;
mod headroom;
mod helm;
mod hostile;
mod image;
mod install;
mod layers;
mod leader;
mod locations;
mod minors;
mod openreports;
mod pipes;
mod range;
mod rewrites;
mod suggestions;
mod typed_estimates;
mod upgrade_day;
mod watch;
mod webhook;
