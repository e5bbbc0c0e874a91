//! `cargo fuzz run policy_document`: [`celcost::fuzzing::policy_document`] (what it feeds the estimator, and what
//! it checks).
#![no_main]

use celcost::budget::CountingAllocator;
use libfuzzer_sys::fuzz_target;

// Allocations counted, as in the binary: the memory budget of an estimate holds.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fuzz_target!(|data: &[u8]| celcost::fuzzing::policy_document(data));
