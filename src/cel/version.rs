//! A Kubernetes minor version, below both the declarations (`decls`) and the minors' rules
//! (`minor`), which name it.

/// A Kubernetes minor version (`1.NN`), used for library availability and cost-rule gates.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32) -> Self {
        Version { major, minor }
    }

    pub fn parse(s: &str) -> Option<Version> {
        let s = s.trim().trim_start_matches('v');
        let mut it = s.split('.');
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some(Version { major, minor })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Which of a minor's rules the current estimate consulted, on this thread, a bit each: its
/// error-wording rules (`crd::fielderr::wording`, bit = index), whether some parse depended on
/// the parser options ([`PARSER_OPTIONS`]), whether some cost may differ under cel-go's other
/// cost estimator ([`COST_ALGORITHM`]), and the cost rules cel-go v0.29 changed
/// ([`GLOBAL_MATCHES`], [`AFFIX_RUNTIME_COST`]). A report depends on those rules only, as far as they go:
/// a range shares it between minors that agree on the ones it consulted.
pub mod consulted {
    use std::cell::Cell;

    /// Some CEL text of the estimate parses differently with other parser options (a gated
    /// macro, a quoted name).
    pub const PARSER_OPTIONS: u32 = 1 << 30;
    /// Some cost of the estimate may differ under the other cost algorithm
    /// ([`crate::cel::cost::CostAlgorithm`]).
    pub const COST_ALGORITHM: u32 = 1 << 31;
    /// Some cost of a global `matches(s, re)` was made ([`super::super::minor::Minor::global_matches_cost`]).
    pub const GLOBAL_MATCHES: u32 = 1 << 29;
    /// Some runtime cost of `s.startsWith(p)` / `s.endsWith(p)` was counted
    /// ([`super::super::minor::Minor::affix_runtime_cost_by_argument`]).
    pub const AFFIX_RUNTIME_COST: u32 = 1 << 28;
    /// The rules the estimate tells of as it goes, beside the wording rules.
    pub const ESTIMATE_RULES: u32 =
        PARSER_OPTIONS | COST_ALGORITHM | GLOBAL_MATCHES | AFFIX_RUNTIME_COST;

    thread_local! {
        static CONSULTED: Cell<u32> = const { Cell::new(0) };
    }

    /// Notes the rules of `bits`.
    pub fn note(bits: u32) {
        CONSULTED.with(|c| c.set(c.get() | bits));
    }

    /// Whether the call under way has consulted a rule of `bits` (since the innermost
    /// [`tracking`] or [`holding_back`] began).
    pub fn noted(bits: u32) -> bool {
        CONSULTED.with(Cell::get) & bits != 0
    }

    /// Notes that wording rule `rule` decided some text.
    pub fn note_wording(rule: usize) {
        note(1 << rule);
    }

    /// Puts back what the enclosing call had consulted, beside what `keep` says of the inner
    /// call's (also when it unwinds: an estimate stopped by its work budget).
    struct Restore<K: Fn(u32) -> u32> {
        outer: u32,
        keep: K,
    }
    impl<K: Fn(u32) -> u32> Drop for Restore<K> {
        fn drop(&mut self) {
            CONSULTED.with(|c| c.set(self.outer | (self.keep)(c.get())));
        }
    }

    /// `f`'s result and the rules it consulted. Nested calls see their own; the enclosing one
    /// sees theirs too.
    pub fn tracking<R>(f: impl FnOnce() -> R) -> (R, u32) {
        let _outer = Restore {
            outer: CONSULTED.with(|c| c.replace(0)),
            keep: |inner| inner,
        };
        let r = f();
        (r, CONSULTED.with(Cell::get))
    }

    /// `f`'s result, what it consults not noted (comparing minors' rules decides no text).
    pub fn ignoring<R>(f: impl FnOnce() -> R) -> R {
        let _outer = Restore {
            outer: CONSULTED.with(Cell::get),
            keep: |_| 0,
        };
        f()
    }

    /// `f`'s result and whether it consulted a rule of `bits`, which the enclosing call does not
    /// see noted (the caller notes them, or not, once it knows more); the others it does.
    pub fn holding_back<R>(bits: u32, f: impl FnOnce() -> R) -> (R, bool) {
        let _outer = Restore {
            outer: CONSULTED.with(|c| c.replace(0)),
            keep: move |inner| inner & !bits,
        };
        let r = f();
        (r, CONSULTED.with(Cell::get) & bits != 0)
    }
}
