//! `cargo fuzz run yaml_bound_edit`: [`celcost::fuzzing::yaml_bound_edit`] (a bound written into YAML by `fix`, and read back, and what it checks).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| celcost::fuzzing::yaml_bound_edit(data));
