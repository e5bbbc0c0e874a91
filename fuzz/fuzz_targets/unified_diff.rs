//! `cargo fuzz run unified_diff`: [`celcost::fuzzing::unified_diff`] (`fix`'s unified diff, and what it checks).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| celcost::fuzzing::unified_diff(data));
