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

/// Which of a minor's error-wording rules (`crd::fielderr::wording`, by index) the current
/// estimate consulted, on this thread: a report's words depend on those rules only, so a range
/// shares it between minors that agree on them even where others differ.
pub mod wording_consulted {
    use std::cell::Cell;

    thread_local! {
        static CONSULTED: Cell<u32> = const { Cell::new(0) };
    }

    /// Notes that wording rule `rule` decided some text.
    pub fn note(rule: usize) {
        CONSULTED.with(|c| c.set(c.get() | 1 << rule));
    }

    /// `f`'s result and the wording rules it consulted (a bit per rule index). Nested calls see
    /// their own; the enclosing one sees theirs too.
    pub fn tracking<R>(f: impl FnOnce() -> R) -> (R, u32) {
        /// Puts back what the enclosing tracking had consulted, beside what this one did (also
        /// when `f` unwinds: an estimate stopped by its work budget).
        struct Restore(u32);
        impl Drop for Restore {
            fn drop(&mut self) {
                CONSULTED.with(|c| c.set(c.get() | self.0));
            }
        }
        let _outer = Restore(CONSULTED.with(|c| c.replace(0)));
        let r = f();
        (r, CONSULTED.with(Cell::get))
    }

    /// `f`'s result, what it consults not noted (comparing minors' rules decides no text).
    pub fn ignoring<R>(f: impl FnOnce() -> R) -> R {
        struct Restore(u32);
        impl Drop for Restore {
            fn drop(&mut self) {
                CONSULTED.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CONSULTED.with(|c| c.get()));
        f()
    }
}
