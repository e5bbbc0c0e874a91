//! `cargo fuzz run go_declarations`: [`celcost::fuzzing::go_declarations`] (the Go declaration reader of `fix --go`, and what it checks).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| celcost::fuzzing::go_declarations(data));
