//! Per-flow time series for the status page: a ring of samples (rates, lag, latency) taken
//! every few seconds from cumulative totals. Pure: callers pass the totals and the time.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::metrics::Histogram;

/// How often the HTTP shell samples, and how many samples are kept (10 minutes).
pub const SAMPLE_EVERY_MS: i64 = 2_000;
/// Samples kept per flow.
pub const SAMPLES_KEPT: usize = 300;

/// Cumulative totals of one flow at one moment.
#[derive(Debug, Clone)]
pub struct Totals {
    /// Wall-clock time, milliseconds since the epoch.
    pub t_ms: i64,
    /// Records replicated so far.
    pub records: u64,
    /// Bytes replicated so far.
    pub bytes: u64,
    /// Records replicated so far per source topic.
    pub per_topic: BTreeMap<String, u64>,
    /// Replication latency of every batch so far (seconds).
    pub latency: Histogram,
}

/// One point of the series: what happened between two totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Sample {
    /// End of the interval, milliseconds since the epoch.
    pub t_ms: i64,
    /// Records replicated per second over the interval.
    pub records_per_second: f64,
    /// Bytes replicated per second over the interval.
    pub bytes_per_second: f64,
    /// Records on the source not yet on the target, at the end of the interval.
    pub lag: i64,
    /// 99th percentile replication latency over the interval (upper bucket bound, ms).
    pub latency_p99_ms: Option<f64>,
    /// Largest replication latency over the interval (ms).
    pub latency_max_ms: Option<f64>,
}

/// The series of one flow.
#[derive(Debug, Clone)]
pub struct Series {
    kept: usize,
    samples: VecDeque<Sample>,
    last: Option<Totals>,
    topic_rates: BTreeMap<String, f64>,
}

fn rate(now: u64, before: u64, seconds: f64) -> f64 {
    now.saturating_sub(before) as f64 / seconds
}

impl Series {
    /// An empty series keeping the last `kept` samples.
    pub fn new(kept: usize) -> Series {
        Series {
            kept: kept.max(1),
            samples: VecDeque::new(),
            last: None,
            topic_rates: BTreeMap::new(),
        }
    }

    /// Adds the totals at a new moment, the lag then, and the largest latency seen since the
    /// previous call (seconds). The first call only remembers the totals; each later one adds
    /// a sample. Totals older than the previous ones are ignored.
    pub fn push(&mut self, totals: Totals, lag: i64, max_latency: Option<f64>) {
        let Some(last) = &self.last else {
            self.last = Some(totals);
            return;
        };
        if totals.t_ms <= last.t_ms {
            return;
        }
        let seconds = (totals.t_ms - last.t_ms) as f64 / 1000.0;
        let p99 = totals.latency.quantile_since(Some(&last.latency), 0.99);
        // The top bucket has no upper bound: the largest latency seen stands in for it.
        let p99 = match (p99, max_latency) {
            (Some(p), Some(m)) if p.is_infinite() => Some(m),
            (Some(p), Some(m)) => Some(p.min(m)),
            (p, _) => p.filter(|p| p.is_finite()),
        };
        let sample = Sample {
            t_ms: totals.t_ms,
            records_per_second: rate(totals.records, last.records, seconds),
            bytes_per_second: rate(totals.bytes, last.bytes, seconds),
            lag,
            latency_p99_ms: p99.map(|s| s * 1000.0),
            latency_max_ms: max_latency.map(|s| s * 1000.0),
        };
        self.topic_rates = totals
            .per_topic
            .iter()
            .map(|(t, n)| {
                let before = last.per_topic.get(t).copied().unwrap_or(*n);
                (t.clone(), rate(*n, before, seconds))
            })
            .collect();
        self.samples.push_back(sample);
        while self.samples.len() > self.kept {
            self.samples.pop_front();
        }
        self.last = Some(totals);
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter()
    }

    /// The latest sample.
    pub fn latest(&self) -> Option<&Sample> {
        self.samples.back()
    }

    /// Records per second of a source topic over the latest interval (0 when unknown).
    pub fn topic_rate(&self, topic: &str) -> f64 {
        self.topic_rates.get(topic).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::LATENCY_BUCKETS;

    fn totals(t_ms: i64, records: u64, latencies: &[f64], base: Option<&Histogram>) -> Totals {
        let mut latency = base
            .cloned()
            .unwrap_or_else(|| Histogram::new(LATENCY_BUCKETS));
        for l in latencies {
            latency.observe(*l);
        }
        Totals {
            t_ms,
            records,
            bytes: records * 10,
            per_topic: BTreeMap::from([("t".to_string(), records)]),
            latency,
        }
    }

    #[test]
    fn rates_latency_and_ring() {
        let mut s = Series::new(2);
        let a = totals(10_000, 100, &[], None);
        s.push(a.clone(), 50, None);
        assert_eq!(s.samples().count(), 0);
        let b = totals(12_000, 300, &[0.004, 0.02], Some(&a.latency));
        s.push(b.clone(), 20, Some(0.02));
        let got = s.latest().unwrap().clone();
        assert_eq!(got.t_ms, 12_000);
        assert_eq!(got.records_per_second, 100.0);
        assert_eq!(got.bytes_per_second, 1000.0);
        assert_eq!(got.lag, 20);
        // p99 falls in the 0.025 bucket, capped by the max actually seen.
        assert_eq!(got.latency_p99_ms, Some(20.0));
        assert_eq!(got.latency_max_ms, Some(20.0));
        assert_eq!(s.topic_rate("t"), 100.0);
        assert_eq!(s.topic_rate("other"), 0.0);
        // An interval with nothing replicated: no latency.
        let c = totals(14_000, 300, &[], Some(&b.latency));
        s.push(c.clone(), 0, None);
        let got = s.latest().unwrap();
        assert_eq!(got.records_per_second, 0.0);
        assert_eq!(got.latency_p99_ms, None);
        // Stale totals are ignored; the ring keeps two samples.
        s.push(totals(13_000, 900, &[], None), 0, None);
        assert_eq!(s.samples().count(), 2);
        s.push(
            totals(16_000, 400, &[700.0], Some(&c.latency)),
            0,
            Some(700.0),
        );
        let v: Vec<i64> = s.samples().map(|x| x.t_ms).collect();
        assert_eq!(v, vec![14_000, 16_000]);
        // Beyond the top bucket the max seen stands in.
        assert_eq!(s.latest().unwrap().latency_p99_ms, Some(700_000.0));
    }

    #[test]
    fn counter_going_back_gives_zero_not_negative() {
        let mut s = Series::new(10);
        s.push(totals(0, 500, &[], None), 0, None);
        s.push(totals(1_000, 100, &[], None), 0, None);
        assert_eq!(s.latest().unwrap().records_per_second, 0.0);
    }
}
