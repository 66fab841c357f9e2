//! One jittered exponential backoff, capped, reset on success.

use std::time::Duration;

/// Delays that double from `base` up to `cap`, each drawn uniformly from its upper half.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    attempt: u32,
}

impl Backoff {
    /// A backoff starting at `base`, never above `cap`.
    pub fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff {
            base,
            cap,
            attempt: 0,
        }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        let exp = self.base.saturating_mul(1 << self.attempt.min(16));
        self.attempt = self.attempt.saturating_add(1);
        let ceiling = exp.min(self.cap);
        let mut byte = [0u8; 1];
        let jitter = if getrandom::fill(&mut byte).is_ok() {
            f64::from(byte[0]) / 255.0
        } else {
            0.5
        };
        ceiling.mul_f64(0.5 + 0.5 * jitter)
    }

    /// Back to the first delay, after a success.
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_caps_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_millis(100));
        let first = b.next_delay();
        assert!(first >= Duration::from_millis(5) && first <= Duration::from_millis(10));
        for _ in 0..20 {
            assert!(b.next_delay() <= Duration::from_millis(100));
        }
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(10));
    }
}
