//! What a run measures: a log-linear latency histogram (about 3% precision, fixed size,
//! merged and read while the run goes on), the per-second time series, errors by code,
//! and the process's own CPU time and a process's memory from /proc.

use std::collections::BTreeMap;

/// Values below `2 * SUB` are exact; above, each power of two is split into `SUB` buckets.
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// Counts of values (microseconds here) in buckets whose width is at most 1/32 of their
/// lower bound.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    ((shift as u64 + 1) * SUB + ((v >> shift) - SUB)) as usize
}

/// The highest value that falls in bucket `i`.
fn bucket_top(i: usize) -> u64 {
    let i = i as u64;
    if i < 2 * SUB {
        return i;
    }
    let shift = i / SUB - 1;
    let sub = i % SUB + SUB;
    ((sub + 1) << shift).saturating_sub(1)
}

impl Histogram {
    pub(crate) fn record(&mut self, v: u64) {
        self.counts[bucket(v)] += 1;
        self.count += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    pub(crate) fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at quantile `q` (0–1): the top of the bucket holding the ⌈q·n⌉-th
    /// smallest value, never above the largest value recorded; 0 when empty.
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_top(i).min(self.max);
            }
        }
        self.max
    }
}

/// One second of the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Second {
    /// Seconds since the start, at the end of this interval.
    pub(crate) t: u64,
    pub(crate) moves: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) errors: u64,
    pub(crate) idle_open: u64,
}

/// Everything recorded while the run goes on (behind one lock; a few thousand records a
/// second contend for it very little).
#[derive(Default)]
pub(crate) struct Recorder {
    /// Move round trips (µs) since the start.
    pub(crate) total: Histogram,
    /// Move round trips (µs) of the current second.
    pub(crate) second: Histogram,
    pub(crate) errors: BTreeMap<String, u64>,
    /// The first error of each code, in full (printed at the end).
    pub(crate) first_errors: BTreeMap<String, String>,
    errors_second: u64,
    pub(crate) reconnects: u64,
    pub(crate) series: Vec<Second>,
    /// Bot replies: from our move's ack to the computer's move (µs).
    pub(crate) bot_replies: Histogram,
    /// Events spectators received.
    pub(crate) spectator_events: u64,
    /// Quick match: seek sent → matched (µs), and matches with a bot.
    pub(crate) pairing: Histogram,
    pub(crate) matched_with_bot: u64,
}

impl Recorder {
    pub(crate) fn move_done(&mut self, micros: u64) {
        self.total.record(micros);
        self.second.record(micros);
    }

    /// An error of `code`; `detail` is kept for the first of each code.
    pub(crate) fn error_with(&mut self, code: &str, detail: impl FnOnce() -> String) {
        if !self.first_errors.contains_key(code) {
            self.first_errors.insert(code.to_owned(), detail());
        }
        self.error(code);
    }

    pub(crate) fn error(&mut self, code: &str) {
        *self.errors.entry(code.to_owned()).or_insert(0) += 1;
        self.errors_second += 1;
    }

    /// Closes the current second (at `t` seconds since the start) into the series.
    pub(crate) fn tick(&mut self, t: u64, idle_open: u64) -> Second {
        let s = Second {
            t,
            moves: self.second.count(),
            p50_ms: ms(self.second.quantile(0.5)),
            p99_ms: ms(self.second.quantile(0.99)),
            max_ms: ms(self.second.max()),
            errors: self.errors_second,
            idle_open,
        };
        self.second = Histogram::default();
        self.errors_second = 0;
        self.series.push(s.clone());
        s
    }

    pub(crate) fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

pub(crate) fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// This process's CPU time so far (user, system), in seconds, from /proc/self/stat.
pub(crate) fn own_cpu() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_cpu(&stat)
}

/// utime and stime (fields 14 and 15) of a /proc/PID/stat line, in seconds. Linux reports
/// them in USER_HZ, which is 100 on every architecture it exposes to user space.
pub(crate) fn parse_cpu(stat: &str) -> Option<(f64, f64)> {
    // The command name (field 2) may hold spaces and parentheses: count after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user as f64 / 100.0, system as f64 / 100.0))
}

/// A process's CPU time so far (user + system), in seconds.
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu(&stat).map(|(user, system)| user + system)
}

/// A process's resident memory in KiB (VmRSS of /proc/PID/status).
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_rss(&status)
}

pub(crate) fn parse_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::default();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 50);
        assert_eq!(h.quantile(0.99), 99);
        assert_eq!(h.quantile(1.0), 100);
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(h.max(), 100);
        assert!((h.mean() - 50.5).abs() < 1e-9);
    }

    #[test]
    fn large_values_are_within_one_thirty_second() {
        // Every value lands in a bucket whose top is at most 1/32 above it, and quantiles
        // never go below the true value's bucket.
        let mut v = 1u64;
        while v < u64::MAX / 3 {
            let top = bucket_top(bucket(v));
            assert!(top >= v, "{v}: top {top}");
            assert!((top - v) as f64 <= v as f64 / 32.0 + 1.0, "{v}: top {top}");
            v = v * 3 + 1;
        }
        assert!(bucket(u64::MAX) < BUCKETS);
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (q, exact) in [(0.5, 50_000.0), (0.95, 95_000.0), (0.99, 99_000.0)] {
            let got = h.quantile(q) as f64;
            assert!(
                got >= exact && got <= exact * (1.0 + 1.0 / 32.0),
                "q{q}: {got}"
            );
        }
        assert_eq!(h.quantile(1.0), 100_000);
    }

    #[test]
    fn buckets_are_contiguous_and_ordered() {
        for i in 1..BUCKETS - 1 {
            assert_eq!(bucket(bucket_top(i - 1) + 1), i, "bucket {i}");
        }
    }

    #[test]
    fn an_empty_histogram_reads_zero() {
        let h = Histogram::default();
        assert_eq!((h.quantile(0.99), h.max(), h.count()), (0, 0, 0));
        assert_eq!(h.mean(), 0.0);
    }

    #[test]
    fn a_tick_closes_the_second() {
        let mut r = Recorder::default();
        r.move_done(40);
        r.move_done(60);
        r.error("rate_limited");
        let s = r.tick(1, 7);
        assert_eq!((s.t, s.moves, s.errors, s.idle_open), (1, 2, 1, 7));
        assert_eq!((s.p50_ms, s.max_ms), (0.04, 0.06));
        let s = r.tick(2, 7);
        assert_eq!((s.moves, s.errors), (0, 0));
        assert_eq!(r.total.count(), 2);
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.errors["rate_limited"], 1);
    }

    #[test]
    fn proc_fields_are_parsed() {
        let stat = "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0";
        assert_eq!(parse_cpu(stat), Some((2.5, 0.75)));
        assert_eq!(parse_cpu("garbage"), None);
        let status = "Name:\tfrontier\nVmPeak:\t  99 kB\nVmRSS:\t   41234 kB\nThreads: 3\n";
        assert_eq!(parse_rss(status), Some(41234));
        assert_eq!(parse_rss("Name: x\n"), None);
        assert!(own_cpu().is_some());
        assert!(rss_kib(std::process::id()).is_some_and(|k| k > 0));
    }
}
