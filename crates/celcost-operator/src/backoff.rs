//! Waiting before a retry, for every loop of the operator that retries: the watches
//! ([`crate::watch`]), the webhook's certificates ([`crate::certs`]),
//! leader election ([`crate::leader`]) and the reconciles' per-target backoff
//! ([`crate::reconcile`]). Delays double from a least to a most; jitter spreads
//! the retries of replicas or targets that failed together.

use std::time::Duration;

/// Exponential backoff: the delay doubles from `min` to at most `max` with each
/// [`Backoff::next_delay`], back to `min` on [`Backoff::reset`]; jittered or not.
#[derive(Clone, Debug)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Duration,
    jitter: bool,
}

impl Backoff {
    /// Each delay drawn from `[d/2, d]` ([`jittered`]), `d` doubling from `min` to `max`.
    pub fn jittered(min: Duration, max: Duration) -> Self {
        Backoff {
            min,
            max,
            next: min,
            jitter: true,
        }
    }

    /// Each delay `d` itself, doubling from `min` to `max`.
    pub fn exact(min: Duration, max: Duration) -> Self {
        Backoff {
            jitter: false,
            ..Backoff::jittered(min, max)
        }
    }

    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        if self.jitter {
            jittered(d, fastrand::f64())
        } else {
            d
        }
    }

    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

/// `min × 2^(n-1)`, at most `max`: the delay after the `n`th failure in a row.
pub fn exponential(n: u32, min: Duration, max: Duration) -> Duration {
    let factor = 1u32
        .checked_shl(n.saturating_sub(1).min(20))
        .unwrap_or(u32::MAX);
    min.saturating_mul(factor).min(max)
}

/// `delay` scaled into [half, all] of it by `r` in [0, 1): retries that failed together
/// spread out instead of coming back together.
pub fn jittered(delay: Duration, r: f64) -> Duration {
    delay.mul_f64(0.5 + 0.5 * r.clamp(0.0, 1.0))
}

/// `delay` stretched by up to `factor` of it by `r` in [0, 1) (client-go's `wait.Jitter`):
/// `[delay, delay × (1 + factor)]`.
pub fn stretched(delay: Duration, factor: f64, r: f64) -> Duration {
    delay.mul_f64(1.0 + factor * r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_jittered_capped_and_reset() {
        // The watches' timings.
        let mut b = Backoff::jittered(Duration::from_millis(200), Duration::from_secs(2));
        let delays: Vec<Duration> = (0..10).map(|_| b.next_delay()).collect();
        assert!(delays[0] >= Duration::from_millis(100) && delays[0] <= Duration::from_millis(200));
        assert!(delays.iter().all(|d| *d <= Duration::from_secs(2)));
        assert!(delays[9] >= Duration::from_secs(1));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(200));
    }

    #[test]
    fn exact_backoff_doubles_to_its_most() {
        // The certificates' timings: 1 s doubling to the refresh period.
        let mut b = Backoff::exact(Duration::from_secs(1), Duration::from_secs(10));
        let delays: Vec<u64> = (0..6).map(|_| b.next_delay().as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 10, 10]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_secs(1));
    }

    #[test]
    fn exponential_and_jitter() {
        let s = Duration::from_secs;
        assert_eq!(exponential(1, s(1), s(300)), s(1));
        assert_eq!(exponential(4, s(1), s(300)), s(8));
        assert_eq!(exponential(100, s(1), s(300)), s(300));
        assert_eq!(jittered(s(10), 0.0), s(5));
        assert_eq!(jittered(s(10), 1.0), s(10));
        assert_eq!(stretched(s(10), 0.2, 0.0), s(10));
        assert_eq!(stretched(s(10), 0.2, 1.0), s(12));
    }
}
