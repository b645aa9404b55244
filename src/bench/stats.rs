//! Latency samples and their percentiles (sans-io).

use serde::Serialize;

/// Latency samples in milliseconds.
#[derive(Debug, Default, Clone)]
pub struct Samples {
    values: Vec<i64>,
}

/// Percentiles of a set of samples, nearest-rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Median.
    pub p50_ms: i64,
    /// 99th percentile.
    pub p99_ms: i64,
    /// Largest sample.
    pub max_ms: i64,
}

impl Samples {
    /// An empty set.
    pub fn new() -> Samples {
        Samples::default()
    }

    /// Adds one sample.
    pub fn record(&mut self, ms: i64) {
        self.values.push(ms);
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True without samples.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// p50, p99 and max; `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        if self.values.is_empty() {
            return None;
        }
        let mut v = self.values.clone();
        v.sort_unstable();
        Some(Summary {
            count: v.len(),
            p50_ms: nearest_rank(&v, 50.0),
            p99_ms: nearest_rank(&v, 99.0),
            max_ms: v[v.len() - 1],
        })
    }
}

/// The nearest-rank percentile `p` (0 < p <= 100) of sorted, non-empty `sorted`: the smallest
/// value with at least p% of the samples at or below it.
pub fn nearest_rank(sorted: &[i64], p: f64) -> i64 {
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_has_no_summary() {
        assert_eq!(Samples::new().summary(), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut s = Samples::new();
        for v in (1..=100).rev() {
            s.record(v);
        }
        let sum = s.summary().unwrap();
        assert_eq!(sum.count, 100);
        assert_eq!(sum.p50_ms, 50);
        assert_eq!(sum.p99_ms, 99);
        assert_eq!(sum.max_ms, 100);
    }

    #[test]
    fn small_sets() {
        let mut s = Samples::new();
        s.record(7);
        assert_eq!(
            s.summary().unwrap(),
            Summary {
                count: 1,
                p50_ms: 7,
                p99_ms: 7,
                max_ms: 7
            }
        );
        s.record(3);
        s.record(100);
        let sum = s.summary().unwrap();
        assert_eq!((sum.p50_ms, sum.p99_ms, sum.max_ms), (7, 100, 100));
    }
}
