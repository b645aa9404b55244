//! The async copy loop for one partition: fetch from the source leader, plan, produce to the
//! target leader with acks=all, and advance only past batches the target acknowledged.

use std::time::Duration;

use crate::client::Cluster;
use crate::error::{Error, Result};
use crate::protocol::error_code;
use crate::protocol::fetch::{FetchLimits, FetchPartitionSpec};

use super::plan::{Outgoing, PartitionPlanner, ProducerIdentity};

/// What to copy.
#[derive(Debug, Clone)]
pub struct CopySpec {
    /// Topic on the source cluster.
    pub source_topic: String,
    /// Topic on the target cluster (must exist with at least `partition + 1` partitions).
    pub target_topic: String,
    /// Partition (the same index on both sides).
    pub partition: i32,
    /// First source offset to copy.
    pub from: i64,
    /// Stop once every source offset below this one is copied.
    pub until: i64,
    /// The target producer identity for idempotent writes (`None`: plain acks=all writes).
    pub producer: Option<ProducerIdentity>,
    /// Fetch limits (`max_bytes` is also the per-partition limit).
    pub limits: FetchLimits,
}

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Batches produced.
    pub batches: u64,
    /// Records produced.
    pub records: u64,
    /// Batch bytes produced.
    pub bytes: u64,
    /// Batches that had to be re-encoded.
    pub reencoded: u64,
    /// Source offsets with no target record (control batches, aborted data).
    pub dropped_offsets: u64,
    /// Target offset of the first record produced, if any.
    pub first_target_offset: Option<i64>,
}

/// Copies `spec.from..spec.until` of one partition from `source` to `target`.
pub async fn copy_partition(
    source: &Cluster,
    target: &Cluster,
    spec: &CopySpec,
) -> Result<CopyStats> {
    let mut planner = PartitionPlanner::new(spec.from, spec.producer, 0);
    let mut stats = CopyStats::default();
    let mut partition_max = spec.limits.max_bytes.clamp(1, 8 * 1024 * 1024);
    while planner.next_offset() < spec.until {
        let fetch_at = planner.next_offset();
        let fetched = source
            .retry("fetch", || async move {
                let (leader, epoch) = source.leader(&spec.source_topic, spec.partition).await?;
                let part = FetchPartitionSpec {
                    topic: spec.source_topic.as_str().into(),
                    partition: spec.partition,
                    offset: fetch_at,
                    current_leader_epoch: epoch,
                    max_bytes: partition_max,
                };
                let limits = FetchLimits {
                    max_bytes: spec.limits.max_bytes.max(partition_max),
                    ..spec.limits
                };
                let resp = source.fetch(leader, &[part], &limits).await?;
                let p = resp
                    .partitions
                    .into_iter()
                    .find(|p| *p.topic == *spec.source_topic && p.partition == spec.partition)
                    .ok_or_else(|| Error::invalid("fetch response lacks the partition"))?;
                if p.error_code != error_code::NONE {
                    if error_code::needs_metadata_refresh(p.error_code) {
                        source.invalidate(&spec.source_topic);
                    }
                    return Err(Error::broker(p.error_code, None));
                }
                Ok(p)
            })
            .await
            .map_err(|e| {
                e.partition(&spec.source_topic, spec.partition)
                    .offset(fetch_at)
            })?;
        let plan = planner.plan(&fetched).map_err(|e| {
            Error::from(e)
                .cluster(source.name())
                .partition(&spec.source_topic, spec.partition)
                .offset(fetch_at)
        })?;
        if plan.outgoing.is_empty() && plan.next_offset == fetch_at {
            if !fetched.records.is_empty() {
                // Only a partial batch came back: the batch is larger than we asked for.
                // Ask for more (Apache Kafka returns a whole first batch anyway; this covers
                // brokers that do not).
                partition_max = partition_max.saturating_mul(2);
            } else if fetched.high_watermark <= fetch_at {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            continue;
        }
        for (from, to) in &plan.dropped {
            stats.dropped_offsets += (to - from) as u64;
        }
        for out in &plan.outgoing {
            let base = produce_one(target, &spec.target_topic, spec.partition, out).await?;
            stats.first_target_offset.get_or_insert(base);
            stats.batches += 1;
            stats.records += out.source.count() as u64;
            stats.bytes += out.batch.len() as u64;
            stats.reencoded += u64::from(out.reencoded.is_some());
        }
    }
    Ok(stats)
}

/// Produces one batch to a partition's leader with acks=all, retrying retriable errors with
/// the same sequence number. Returns the target base offset.
pub async fn produce_one(
    target: &Cluster,
    topic: &str,
    partition: i32,
    out: &Outgoing,
) -> Result<i64> {
    let source_first = match &out.source {
        super::plan::SourceOffsets::Contiguous { first, .. } => *first,
        super::plan::SourceOffsets::Listed(v) => v.first().copied().unwrap_or(-1),
    };
    target
        .retry("produce", || {
            target.produce_batch(topic, partition, &out.batch)
        })
        .await
        .map_err(|e| e.partition(topic, partition).offset(source_first))
}
