//! The latency probe: reads a topic on the target from the start with a short fetch wait and
//! takes, for every batch, the time it was read minus the batch's max timestamp (the bench
//! stamps each batch when it builds it, just before producing it to the source). So a sample
//! spans produce to the source, strait's fetch, strait's produce to the target, and the probe's
//! next fetch. Batches built during the warm-up (fresh brokers still compiling their hot code)
//! are read but not sampled.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::stats::Samples;
use crate::client::Cluster;
use crate::error::{Error, Result};
use crate::protocol::error_code;
use crate::protocol::fetch::{FetchLimits, FetchPartitionSpec, READ_UNCOMMITTED};
use crate::records::{split, Entry};

/// What the producer side tells the probe.
#[derive(Debug, Default)]
pub struct ProducerState {
    /// Records produced so far.
    pub produced: AtomicU64,
    /// True once the producer stopped.
    pub done: AtomicBool,
    /// Batches stamped before this time (ms since the epoch) are the warm-up: read, but not
    /// sampled. 0: every batch counts.
    pub count_from_ms: AtomicI64,
}

impl ProducerState {
    /// Whether a batch stamped at `stamp_ms` is sampled (it was built after the warm-up).
    pub fn counts(&self, stamp_ms: i64) -> bool {
        stamp_ms >= self.count_from_ms.load(Ordering::Acquire)
    }
}

/// Reads `topic` on `cluster` until the producer is done and every record it produced was
/// read, or `grace` passed after it was done. Returns the samples and the records read.
pub async fn probe(
    cluster: &Cluster,
    topic: &str,
    partitions: i32,
    producer: &ProducerState,
    grace: Duration,
) -> Result<(Samples, u64)> {
    let mut offsets: Vec<i64> = vec![0; partitions as usize];
    let mut samples = Samples::new();
    let mut seen = 0u64;
    let mut done_at: Option<Instant> = None;
    let limits = FetchLimits {
        max_wait_ms: 5,
        min_bytes: 1,
        max_bytes: 16 << 20,
        isolation_level: READ_UNCOMMITTED,
    };
    loop {
        if producer.done.load(Ordering::Acquire) {
            let at = *done_at.get_or_insert_with(Instant::now);
            if seen >= producer.produced.load(Ordering::Acquire) {
                return Ok((samples, seen));
            }
            if at.elapsed() > grace {
                return Err(Error::invalid(format!(
                    "only {seen} of {} records arrived within {grace:?} after the producer stopped",
                    producer.produced.load(Ordering::Acquire)
                ))
                .cluster(cluster.name())
                .topic(topic));
            }
        }
        let mut by_leader: BTreeMap<i32, Vec<FetchPartitionSpec>> = BTreeMap::new();
        let mut missing = false;
        for (p, &offset) in offsets.iter().enumerate() {
            match cluster.leader(topic, p as i32).await {
                Ok((leader, epoch)) => {
                    by_leader
                        .entry(leader)
                        .or_default()
                        .push(FetchPartitionSpec {
                            topic: topic.into(),
                            topic_id: None,
                            partition: p as i32,
                            offset,
                            current_leader_epoch: epoch,
                            last_fetched_epoch: -1,
                            max_bytes: 1 << 20,
                        })
                }
                Err(_) => missing = true,
            }
        }
        if missing {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        for (leader, specs) in by_leader {
            let resp = cluster.fetch(leader, &specs, &limits).await?;
            let now = crate::replicate::store::now_ms();
            for part in resp.partitions {
                if part.error_code != error_code::NONE {
                    if error_code::needs_metadata_refresh(part.error_code) {
                        cluster.invalidate(topic);
                    }
                    continue;
                }
                let Some(offset) = offsets.get_mut(part.partition as usize) else {
                    continue;
                };
                for entry in split(part.records) {
                    let Ok(Entry::V2(batch)) = entry else {
                        break; // a truncated tail or a legacy entry: fetched again next time
                    };
                    if batch.next_offset() <= *offset {
                        continue;
                    }
                    if producer.counts(batch.max_timestamp()) {
                        samples.record(now - batch.max_timestamp());
                    }
                    seen += batch.records_count().max(0) as u64;
                    *offset = batch.next_offset();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_stamped_in_the_warm_up_are_not_sampled() {
        let state = ProducerState::default();
        assert!(state.counts(1), "no warm-up: every batch counts");
        state.count_from_ms.store(1_000, Ordering::Release);
        assert!(!state.counts(999));
        assert!(state.counts(1_000));
        assert!(state.counts(1_001));
    }
}
