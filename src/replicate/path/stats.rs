//! What the data path counts, handed out rather than pushed: it queues a [`Stat`] where
//! something worth a metric happened, and the shell drains them after each input
//! ([`super::DataPath::poll_stat`]) and reports them, stamping latencies with the wall clock
//! itself. So the state machine reads no clock of its own and knows no metrics registry.

use std::sync::Arc;

use crate::observe::{Observer, Side};

/// One thing the data path counted.
#[derive(Debug, Clone, PartialEq)]
pub enum Stat {
    /// A request or partition was retried on one side (`kind` names what).
    Retry {
        /// The cluster's side.
        side: Side,
        /// What was retried.
        kind: &'static str,
    },
    /// An error of the flow, counted by kind.
    Error {
        /// What kind.
        kind: &'static str,
    },
    /// Source records deleted by retention before they were replicated.
    Lost {
        /// Source topic.
        topic: Arc<str>,
        /// How many.
        records: u64,
    },
    /// A batch re-compressed from `before` to `after` bytes.
    Recompressed {
        /// Bytes before.
        before: u64,
        /// Bytes after.
        after: u64,
    },
    /// A batch fetched, with its newest record's timestamp (its age when fetched).
    Fetched {
        /// Source topic.
        topic: Arc<str>,
        /// Newest record's timestamp (ms; 0 or less: none).
        max_timestamp: i64,
    },
    /// A batch acknowledged by the target.
    Acked {
        /// Source topic.
        topic: Arc<str>,
        /// Partition.
        partition: i32,
        /// Records in it.
        records: u64,
        /// Its bytes.
        bytes: u64,
        /// Newest record's timestamp (ms).
        max_timestamp: i64,
        /// It came from a heartbeats topic.
        heartbeat: bool,
    },
}

impl Stat {
    /// Reports to `obs` for `flow` between `source` and `target`, at wall-clock `now_ms`.
    pub fn report(self, obs: &Observer, names: (&str, &str, &str), now_ms: i64) {
        let (flow, source, target) = names;
        match self {
            Stat::Retry { side, kind } => {
                let cluster = match side {
                    Side::Source => source,
                    Side::Target => target,
                };
                obs.retry(cluster, kind);
            }
            Stat::Error { kind } => obs.error(flow, kind),
            Stat::Lost { topic, records } => obs.records_lost(flow, &topic, records),
            Stat::Recompressed { before, after } => obs.recompressed(flow, before, after),
            Stat::Fetched {
                topic,
                max_timestamp,
            } => obs.batch_fetched(flow, &topic, max_timestamp, now_ms),
            Stat::Acked {
                topic,
                partition,
                records,
                bytes,
                max_timestamp,
                heartbeat,
            } => obs.batch_acked(
                flow,
                &topic,
                partition,
                records,
                bytes,
                max_timestamp,
                heartbeat,
                now_ms,
            ),
        }
    }
}
