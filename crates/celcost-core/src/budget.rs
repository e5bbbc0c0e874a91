//! The work budget of one object's estimate: counted steps, and (where the binary installs
//! [`CountingAllocator`]) the bytes the estimate holds at once.
//!
//! Every loop of the estimator whose length depends on the input charges its steps with
//! [`charge`]. When an object's estimate goes over its steps or bytes, the estimate stops where it
//! is: [`charge`] unwinds (with [`std::panic::resume_unwind`], which runs no panic hook and
//! prints nothing) to [`run`], the object's boundary, which turns it into an [`Exceeded`] naming
//! the limit and the place (`spec.variables[42].expression`) set with [`at`]. A panic of the
//! estimator itself (a bug) is caught at the same boundary. Either way the caller reports that
//! object as not estimated and goes on with the others.
//!
//! The meter is per thread: an estimate runs on one thread (CLI workers, the operator's blocking
//! pool), and nested [`run`]s keep their own counts.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

/// Steps one object may take by default. The costliest object of the public corpus takes 44,953
/// (`cargo bench --bench corpus` lists the top ones) and a CRD of the API server's largest
/// request size (3 MiB) of rules about 2 million; a step is 0.1–0.2 µs, so the budget stops a
/// runaway estimate within a few seconds.
pub const DEFAULT_STEPS: u64 = 20_000_000;
/// Bytes one object's estimate may hold at once by default (where allocations are counted).
pub const DEFAULT_BYTES: usize = 256 << 20;

/// The limits of one object's estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Counted steps.
    pub steps: u64,
    /// Bytes allocated and not yet freed by the estimate, when the binary counts allocations
    /// ([`CountingAllocator`]); `usize::MAX` for none.
    pub bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            steps: DEFAULT_STEPS,
            bytes: DEFAULT_BYTES,
        }
    }
}

/// Which limit an estimate went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Steps,
    Memory,
}

/// Why an estimate stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// Over its budget (what the operator reports as `WorkBudgetExceeded`).
    Exceeded(Exceeded),
    /// The estimator panicked: a bug, reported with its message.
    Panicked(String),
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stopped::Exceeded(e) => e.fmt(f),
            Stopped::Panicked(m) => write!(f, "estimate stopped: internal error (a bug): {m}"),
        }
    }
}

/// An estimate over its budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exceeded {
    pub resource: Resource,
    /// The limit that was exceeded (steps, or bytes).
    pub limit: u64,
    /// Where the estimate was (a field path), if it said.
    pub at: Option<String>,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.resource {
            Resource::Steps => write!(
                f,
                "estimate stopped: work budget of {} steps exceeded",
                self.limit
            )?,
            Resource::Memory => write!(
                f,
                "estimate stopped: memory budget of {} MiB exceeded",
                self.limit >> 20
            )?,
        }
        if let Some(at) = &self.at {
            write!(f, " at {at}")?;
        }
        Ok(())
    }
}

/// The unwinding payload of a stop.
struct Unwind(Resource);

thread_local! {
    /// Whether a meter is running on this thread.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static STEPS_LEFT: Cell<u64> = const { Cell::new(0) };
    static AT: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Bytes allocated minus bytes freed on this thread (by [`CountingAllocator`]).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// `LIVE` above which the running meter stops the estimate; `isize::MAX` for none.
    static LIVE_LIMIT: Cell<isize> = const { Cell::new(isize::MAX) };
    static MEMORY_OVER: Cell<bool> = const { Cell::new(false) };
}

/// Charges `n` steps to the running estimate, and stops it (unwinding to [`run`]) when it is
/// over its steps or bytes. Without a running meter it does nothing.
#[inline]
pub fn charge(n: u64) {
    if !ACTIVE.with(Cell::get) {
        return;
    }
    let left = STEPS_LEFT.with(Cell::get);
    if left < n {
        STEPS_LEFT.with(|c| c.set(0));
        resume_unwind(Box::new(Unwind(Resource::Steps)));
    }
    STEPS_LEFT.with(|c| c.set(left - n));
    if MEMORY_OVER.with(Cell::get) {
        resume_unwind(Box::new(Unwind(Resource::Memory)));
    }
}

/// Takes `n` steps from the running meter without stopping it, as a nested [`run`] takes its
/// steps when it ends: work done once and reused counts as if it had been done again.
pub fn consume(n: u64) {
    if ACTIVE.with(Cell::get) {
        STEPS_LEFT.with(|c| c.set(c.get().saturating_sub(n)));
    }
}

/// `f`'s result and the steps it took of the running meter (0 without one): what a result
/// kept for reuse is charged again each time it is reused ([`spend_again`]).
pub fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = steps_left();
    let out = f();
    (out, before.saturating_sub(steps_left()))
}

/// Takes the `steps` a kept result took to make ([`counted`]) when that many are left, as if it
/// were made again; `false` (nothing taken) when fewer are left: the caller makes it again, to
/// stop where it would without it.
pub fn spend_again(steps: u64) -> bool {
    let enough = steps_left() >= steps;
    if enough {
        consume(steps);
    }
    enough
}

/// Bytes this thread holds (allocated and not yet freed), where allocations are counted.
pub fn live_bytes() -> isize {
    LIVE.with(Cell::get)
}

/// Counts `bytes` that the running estimate reuses from an earlier one as if it held them
/// itself: its byte limit comes down by as much (with [`consume`] for the steps, work done once
/// and reused counts as if it had been done again). Without a running meter it does nothing.
pub fn hold(bytes: isize) {
    if !ACTIVE.with(Cell::get) || bytes <= 0 {
        return;
    }
    let limit = LIVE_LIMIT.with(|c| {
        c.set(c.get().saturating_sub(bytes));
        c.get()
    });
    if LIVE.with(Cell::get) > limit {
        MEMORY_OVER.with(|m| m.set(true));
    }
}

/// Whether this thread runs within a budget ([`run`]).
pub fn active() -> bool {
    ACTIVE.with(Cell::get)
}

/// The steps the running meter has left; 0 without one.
pub fn steps_left() -> u64 {
    if ACTIVE.with(Cell::get) {
        STEPS_LEFT.with(Cell::get)
    } else {
        0
    }
}

/// Says where the running estimate is (a field path), for the stop message.
pub fn at(place: &str) {
    if ACTIVE.with(Cell::get) {
        AT.with(|a| {
            let mut a = a.borrow_mut();
            let s = a.get_or_insert_with(String::new);
            s.clear();
            s.push_str(place);
        });
    }
}

/// What an estimate used: steps and the highest bytes held at once (0 where allocations are not
/// counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub steps: u64,
    pub peak_bytes: usize,
}

thread_local! {
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// Runs one object's estimate under `limits`: its result, or why it stopped.
pub fn run<T>(limits: Limits, f: impl FnOnce() -> T) -> Result<T, Stopped> {
    run_measured(limits, f).0
}

/// As [`run`], with what the estimate used.
pub fn run_measured<T>(limits: Limits, f: impl FnOnce() -> T) -> (Result<T, Stopped>, Usage) {
    // An outer meter (a nested run) is saved and restored.
    let saved = (
        ACTIVE.with(Cell::get),
        STEPS_LEFT.with(Cell::get),
        AT.with(|a| a.borrow_mut().take()),
        LIVE_LIMIT.with(Cell::get),
        MEMORY_OVER.with(Cell::get),
        PEAK.with(Cell::get),
    );
    let base = LIVE.with(Cell::get);
    let limit_bytes = isize::try_from(limits.bytes).unwrap_or(isize::MAX);
    ACTIVE.with(|c| c.set(true));
    STEPS_LEFT.with(|c| c.set(limits.steps));
    LIVE_LIMIT.with(|c| c.set(base.saturating_add(limit_bytes)));
    MEMORY_OVER.with(|c| c.set(false));
    PEAK.with(|c| c.set(base));

    let result = catch_unwind(AssertUnwindSafe(f));

    let steps = limits.steps - STEPS_LEFT.with(Cell::get);
    let at = AT.with(|a| a.borrow_mut().take());
    let peak = PEAK.with(Cell::get).saturating_sub(base).max(0) as usize;
    ACTIVE.with(|c| c.set(saved.0));
    STEPS_LEFT.with(|c| c.set(saved.1.saturating_sub(steps)));
    AT.with(|a| *a.borrow_mut() = saved.2);
    LIVE_LIMIT.with(|c| c.set(saved.3));
    MEMORY_OVER.with(|c| c.set(saved.4));
    PEAK.with(|c| c.set(saved.5.max(base.saturating_add(peak as isize))));
    let usage = Usage {
        steps,
        peak_bytes: peak,
    };
    let out = result.map_err(|payload| match payload.downcast::<Unwind>() {
        Ok(u) => Stopped::Exceeded(Exceeded {
            resource: u.0,
            limit: match u.0 {
                Resource::Steps => limits.steps,
                Resource::Memory => limits.bytes as u64,
            },
            at,
        }),
        Err(p) => Stopped::Panicked(
            p.downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string()),
        ),
    });
    (out, usage)
}

/// Runs `f` beside the running estimate, not charged to it: under a meter of its own with the
/// steps and bytes the estimate has left (so the two never hold more than the estimate's
/// limit), or under the default limits where no estimate runs. The estimate's steps, peak and
/// where it stops are as if `f` had not run. For work that only tells something of the
/// estimate (whether the other cost algorithm agrees with it).
pub fn aside<T>(f: impl FnOnce() -> T) -> Result<T, Stopped> {
    let limits = if ACTIVE.with(Cell::get) {
        let left = LIVE_LIMIT
            .with(Cell::get)
            .saturating_sub(LIVE.with(Cell::get));
        Limits {
            steps: STEPS_LEFT.with(Cell::get),
            bytes: usize::try_from(left).unwrap_or(0),
        }
    } else {
        Limits::default()
    };
    let (steps, peak) = (STEPS_LEFT.with(Cell::get), PEAK.with(Cell::get));
    let result = run(limits, f);
    STEPS_LEFT.with(|c| c.set(steps));
    PEAK.with(|c| c.set(peak));
    result
}

/// The allocator ([`Inner`]), counting the bytes each thread holds, so that an estimate over its
/// byte limit stops at its next step instead of taking the process's memory. The binary
/// installs it (`#[global_allocator]`); without it only steps are counted.
pub struct CountingAllocator;

/// What [`CountingAllocator`] forwards to: mimalloc. Reading YAML and building the checker's
/// values make millions of small, short-lived allocations; with glibc's allocator they took a
/// third of the CLI's CPU on the public corpus (perf), with mimalloc a fraction of that.
/// With the `system-allocator` feature, the system's (heap profilers intercept it).
#[cfg(not(feature = "system-allocator"))]
type Inner = mimalloc::MiMalloc;
#[cfg(not(feature = "system-allocator"))]
const INNER: Inner = mimalloc::MiMalloc;
#[cfg(feature = "system-allocator")]
type Inner = std::alloc::System;
#[cfg(feature = "system-allocator")]
const INNER: Inner = std::alloc::System;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (`include/mimalloc.h`, v2 and v3 alike);
/// the Rust bindings do not name it. A test checks it against the option's documented default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// For a long-running process (the operator): memory freed goes back to the system at once,
/// so that the resident size follows what is held rather than the bursts behind it. One place
/// for every allocator setting; call it early, before the threads start.
///
/// - mimalloc (the default build) purges freed pages only after `purge_delay` (1 s in v3): set
///   to 0. The fleet benchmark's operator (2,000 CRDs) peaked at 190 MiB with the defaults,
///   129-131 MiB with this and the next, at the same CPU. `MIMALLOC_PURGE_DELAY` wins.
/// - Transparent huge pages: on a kernel with THP `always` (or `madvise`, where mimalloc asks
///   for them), a purged 4 KiB page inside a huge page stays resident, so the process turns
///   them off for itself. `MIMALLOC_ALLOW_THP` (any value) keeps them.
/// - glibc (`--features system-allocator`, the container image's build) gives every thread that
///   allocates its own arena (up to 8 per core) and seldom returns their free memory, so the
///   estimate threads kept the high-water mark of every CRD they parsed: two arenas. The scale
///   benchmark's peak went from 102-135 MiB to 69 MiB at no cost in time, the fleet
///   benchmark's at 20,000 CRDs to 195 MiB (mimalloc: 217 MiB). `MALLOC_ARENA_MAX` wins.
pub fn return_freed_memory_promptly() {
    allocator_settings(0);
}

/// For a command that runs and exits (`celcost estimate`, `diff`): the operator's settings
/// ([`return_freed_memory_promptly`]) with freed pages purged after 10 ms, not at once. With
/// mimalloc's defaults (huge pages where the kernel gives them on request, a purge delay of
/// 1 s), the resident size of a policy of 3,000 chained variables was 66-69 MiB against a
/// heap peak of 13.5 MiB; with these, 34 MiB, and the corpus's CLI run takes 0.2 s less system
/// time (fewer huge-page faults). A delay of 0 costs another 0.1 s of system time on the corpus
/// for 1-2 MiB.
pub fn keep_resident_memory_near_the_heap() {
    allocator_settings(10);
}

fn allocator_settings(purge_delay_ms: std::ffi::c_long) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an option value; mimalloc reads it on its next purge.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, purge_delay_ms) };
    }
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: sets a flag of this process (no huge pages on later faults); no memory is
        // touched. A kernel without it returns an error, which changes nothing.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
        }
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter and is MT-Safe (glibc manual);
        // arenas made before the call stay, which is why it is called early.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }
}

#[inline]
fn count(delta: isize) {
    // `try_with`: never fails for these const-initialized cells, and must not panic here.
    let _ = LIVE.try_with(|l| {
        let now = l.get().wrapping_add(delta);
        l.set(now);
        if delta > 0 && ACTIVE.try_with(Cell::get).unwrap_or(false) {
            let _ = PEAK.try_with(|p| {
                if now > p.get() {
                    p.set(now);
                }
            });
            if now > LIVE_LIMIT.try_with(Cell::get).unwrap_or(isize::MAX) {
                let _ = MEMORY_OVER.try_with(|m| m.set(true));
            }
        }
    });
}

// SAFETY: every call is forwarded to `INNER` unchanged; the bookkeeping only touches
// thread-local cells that need no allocation.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `INNER`'s.
        let p = unsafe { INNER.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { INNER.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { INNER.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { INNER.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_memory_is_returned_at_once_once_asked() {
        use libmimalloc_sys::mi_option_get;
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads and sets an option value.
        unsafe {
            // The index is purge_delay's: mimalloc v3 documents a default of 1000 ms.
            assert_eq!(mi_option_get(MI_OPTION_PURGE_DELAY), 1000);
            return_freed_memory_promptly();
            assert_eq!(mi_option_get(MI_OPTION_PURGE_DELAY), 0);
        }
    }

    #[test]
    fn a_run_within_its_steps_returns_its_result() {
        let (r, usage) = run_measured(
            Limits {
                steps: 100,
                bytes: usize::MAX,
            },
            || {
                for _ in 0..10 {
                    charge(10);
                }
                7
            },
        );
        assert_eq!(r, Ok(7));
        assert_eq!(usage.steps, 100);
    }

    #[test]
    fn a_run_over_its_steps_stops_where_it_is() {
        let reached = std::cell::Cell::new(0);
        let r = run(
            Limits {
                steps: 1_000,
                bytes: usize::MAX,
            },
            || {
                at("spec.variables[42].expression");
                loop {
                    charge(1);
                    reached.set(reached.get() + 1);
                }
            },
        );
        assert_eq!(reached.get(), 1_000);
        let Err(Stopped::Exceeded(e)) = r else {
            panic!("{r:?}")
        };
        assert_eq!(
            e.to_string(),
            "estimate stopped: work budget of 1000 steps exceeded at spec.variables[42].expression"
        );
        // The meter is gone with the run.
        charge(1_000_000);
    }

    #[test]
    fn nested_runs_keep_their_own_counts_and_panics_are_caught() {
        let outer = run(
            Limits {
                steps: 50,
                bytes: usize::MAX,
            },
            || {
                charge(20);
                let inner: Result<(), Stopped> = run(Limits::default(), || panic!("a bug"));
                assert_eq!(inner, Err(Stopped::Panicked("a bug".into())));
                // Still the outer meter: 30 left.
                charge(30);
                charge(1);
            },
        );
        assert!(matches!(
            outer,
            Err(Stopped::Exceeded(Exceeded {
                resource: Resource::Steps,
                limit: 50,
                ..
            }))
        ));
    }
}
