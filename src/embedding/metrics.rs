//! Reading strait's series from the embedding program, without an HTTP listener.

use std::sync::Arc;

use tokio::sync::watch;

use crate::metrics::{MetricSample, MetricValue};
use crate::observe::{process_rss, Observer};
use crate::replicate::status::FlowStatus;

/// A handle on the series a [`Replicator`](crate::Replicator) records (what `/metrics`
/// serves), for a gateway that exports them itself. Cheap to clone; it stays readable after
/// the replicator stopped (the last values).
#[derive(Debug, Clone)]
pub struct Metrics {
    observer: Arc<Observer>,
    flows: Vec<watch::Receiver<FlowStatus>>,
}

impl Metrics {
    pub(crate) fn new(observer: Arc<Observer>, flows: Vec<watch::Receiver<FlowStatus>>) -> Metrics {
        Metrics { observer, flows }
    }

    fn statuses(&self) -> Vec<FlowStatus> {
        self.flows.iter().map(|r| r.borrow().clone()).collect()
    }

    /// The Prometheus text exposition (format 0.0.4): exactly what `/metrics` serves now.
    pub fn render_prometheus(&self) -> String {
        self.observer.exposition(&self.statuses(), process_rss())
    }

    /// Every series now, typed.
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            samples: self.observer.samples(&self.statuses(), process_rss()),
        }
    }
}

/// The series of a [`Metrics`] handle at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsSnapshot {
    samples: Vec<MetricSample>,
}

impl MetricsSnapshot {
    /// Every series, sorted by name then labels.
    pub fn samples(&self) -> &[MetricSample] {
        &self.samples
    }

    /// The series of family `name` whose labels include every pair of `matching`.
    pub fn series<'a>(
        &'a self,
        name: &'a str,
        matching: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a MetricSample> + 'a {
        self.samples
            .iter()
            .filter(move |s| s.name == name && matching.iter().all(|(k, v)| s.label(k) == Some(*v)))
    }

    /// The sum of the counters of family `name` whose labels include every pair of
    /// `matching` (0 when there is none), for example the records a flow replicated:
    /// `total("strait_replication_records_total", &[("flow", "edge->central")])`.
    pub fn total(&self, name: &str, matching: &[(&str, &str)]) -> u64 {
        self.series(name, matching)
            .map(|s| match s.value {
                MetricValue::Counter(c) => c,
                _ => 0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::names;

    #[test]
    fn the_handle_reads_what_the_flows_recorded() {
        let obs = Arc::new(Observer::new());
        obs.register_flow("a->b", "a", "b");
        obs.batch_acked("a->b", "orders", 0, 10, 1000, 0, false, 0);
        obs.batch_acked("a->b", "orders", 1, 5, 500, 0, false, 0);
        obs.batch_acked("c->d", "other", 0, 7, 70, 0, false, 0);
        let (_tx, rx) = watch::channel(FlowStatus {
            name: "a->b".into(),
            ..FlowStatus::default()
        });
        let m = Metrics::new(obs.clone(), vec![rx]);
        let snap = m.snapshot();
        assert_eq!(snap.total(names::RECORDS, &[("flow", "a->b")]), 15);
        assert_eq!(snap.total(names::BYTES, &[("flow", "a->b")]), 1500);
        assert_eq!(
            snap.total(names::RECORDS, &[("flow", "a->b"), ("partition", "1")]),
            5
        );
        assert_eq!(snap.total(names::RECORDS, &[]), 22);
        let text = m.render_prometheus();
        assert!(text.contains(
            "strait_replication_records_total{flow=\"a->b\",source=\"a\",target=\"b\",topic=\"orders\",partition=\"0\"} 10"
        ), "{text}");
        // The same text as the observer's exposition (what `/metrics` serves), RSS aside.
        let without_rss = |t: &str| {
            t.lines()
                .filter(|l| !l.starts_with("process_resident_memory_bytes "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            without_rss(&text),
            without_rss(&obs.exposition(&[m.statuses()[0].clone()], None))
        );
    }
}
