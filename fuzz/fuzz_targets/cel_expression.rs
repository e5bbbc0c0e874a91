//! `cargo fuzz run cel_expression`: [`celcost::fuzzing::cel_expression`] (what it feeds the estimator, and what
//! it checks).
#![no_main]

use celcost::budget::CountingAllocator;
use libfuzzer_sys::fuzz_target;

// Allocations counted, as in the binary: the memory budget of an estimate holds.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fuzz_target!(|data: &[u8]| celcost::fuzzing::cel_expression(data));
