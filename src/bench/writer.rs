//! The bench's own producer: pre-encoded batches written straight into a topic as a good
//! producer would (one Produce request per leader carrying one batch for each of many
//! partitions, requests of about 1 MiB, several in flight), and a paced variant for the latency
//! phase that stamps every batch just before it goes out.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use super::data::DataShape;
use super::report::Transfer;
use crate::client::{Cluster, PendingProduce};
use crate::error::{Error, Result};
use crate::protocol::error_code;
use crate::protocol::produce::{ProducePartition, ProduceSettings, ProduceTopic};
use crate::records::{HeaderRewrite, RewrittenBatch};

/// Batch bytes per Produce request the writer aims at (librdkafka's default request size).
pub const REQUEST_BYTES: usize = 1 << 20;
/// Produce requests in flight per leader.
pub const IN_FLIGHT: usize = 5;

const SETTINGS: ProduceSettings<'static> = ProduceSettings {
    transactional_id: None,
    acks: -1,
    timeout_ms: 30_000,
};

/// Produce requests in flight, oldest first, with the checks of their answers.
struct Pipeline<'a> {
    cluster: &'a Cluster,
    topic: &'a str,
    pending: VecDeque<PendingProduce>,
    limit: usize,
}

impl<'a> Pipeline<'a> {
    fn new(cluster: &'a Cluster, topic: &'a str, limit: usize) -> Pipeline<'a> {
        Pipeline {
            cluster,
            topic,
            pending: VecDeque::new(),
            limit: limit.max(1),
        }
    }

    /// Sends one request of `(partition, batch)` to `leader`, first waiting for the oldest
    /// answer if the pipeline is full.
    async fn send(&mut self, leader: i32, parts: Vec<ProducePartition>) -> Result<()> {
        while self.pending.len() >= self.limit {
            self.finish_one().await?;
        }
        let topics = [ProduceTopic {
            name: self.topic.to_string(),
            partitions: parts,
        }];
        self.cluster.connection_id(leader).await?; // opened if it is not
        let p = self
            .cluster
            .produce_start(leader, &SETTINGS, &topics)
            .await?;
        self.pending.push_back(p);
        Ok(())
    }

    async fn finish_one(&mut self) -> Result<()> {
        let Some(p) = self.pending.pop_front() else {
            return Ok(());
        };
        for r in p.finish().await? {
            if r.error_code != error_code::NONE {
                return Err(Error::broker(r.error_code, r.error_message)
                    .cluster(self.cluster.name())
                    .partition(&r.topic, r.partition));
            }
        }
        Ok(())
    }

    async fn finish_all(&mut self) -> Result<()> {
        while !self.pending.is_empty() {
            self.finish_one().await?;
        }
        Ok(())
    }
}

async fn leaders(cluster: &Cluster, topic: &str, partitions: i32) -> Result<Vec<i32>> {
    let mut out = Vec::with_capacity(partitions as usize);
    for p in 0..partitions {
        let leader = cluster
            .retry("partition leader", || async move {
                cluster.leader(topic, p).await.map(|l| l.0)
            })
            .await?;
        out.push(leader);
    }
    Ok(out)
}

/// Groups `(partition, batch)` by leader into requests of about [`REQUEST_BYTES`] and sends
/// them.
async fn send_grouped(
    pipe: &mut Pipeline<'_>,
    leaders: &[i32],
    items: Vec<(i32, RewrittenBatch)>,
) -> Result<()> {
    let mut by_leader: BTreeMap<i32, Vec<ProducePartition>> = BTreeMap::new();
    for (partition, batch) in items {
        let leader = leaders[partition as usize];
        let parts = by_leader.entry(leader).or_default();
        let bytes: usize = parts.iter().map(|p| p.batch.len()).sum();
        if !parts.is_empty() && bytes + batch.len() > REQUEST_BYTES {
            let full = std::mem::take(parts);
            pipe.send(leader, full).await?;
        }
        by_leader
            .entry(leader)
            .or_default()
            .push(ProducePartition { partition, batch });
    }
    for (leader, parts) in by_leader {
        if !parts.is_empty() {
            pipe.send(leader, parts).await?;
        }
    }
    Ok(())
}

/// Writes `batches` batches into `topic`: batch `b` is `pool[b % pool.len()]` and goes to
/// partition `b % partitions`. Times from the first request to the last answer.
pub async fn write_backlog(
    cluster: &Cluster,
    topic: &str,
    partitions: i32,
    pool: &[RewrittenBatch],
    batches: u64,
) -> Result<Transfer> {
    if pool.is_empty() || partitions <= 0 {
        return Err(Error::invalid("nothing to write"));
    }
    let leaders = leaders(cluster, topic, partitions).await?;
    let brokers = {
        let mut l = leaders.clone();
        l.sort_unstable();
        l.dedup();
        l.len()
    };
    let mut pipe = Pipeline::new(cluster, topic, IN_FLIGHT * brokers);
    // An idempotent producer, as Kafka's own producer is by default since 3.0 and as strait
    // writes: the broker checks every batch's sequence.
    let (producer_id, producer_epoch) = cluster.init_producer_id().await?;
    let mut sequences = vec![0i32; partitions as usize];
    let start = Instant::now();
    let (mut bytes, mut records) = (0u64, 0u64);
    let mut b = 0u64;
    while b < batches {
        let round_end = (b + partitions as u64).min(batches);
        let mut items = Vec::with_capacity((round_end - b) as usize);
        while b < round_end {
            let partition = (b % partitions as u64) as usize;
            let pooled = &pool[(b % pool.len() as u64) as usize];
            let batch = pooled.rewrite(&HeaderRewrite {
                producer_id: Some(producer_id),
                producer_epoch: Some(producer_epoch),
                base_sequence: Some(sequences[partition]),
                ..HeaderRewrite::default()
            });
            sequences[partition] = sequences[partition].wrapping_add(batch.records_count() as i32);
            bytes += batch.len() as u64;
            records += batch.records_count() as u64;
            items.push((partition as i32, batch));
            b += 1;
        }
        send_grouped(&mut pipe, &leaders, items).await?;
    }
    pipe.finish_all().await?;
    Ok(Transfer {
        bytes,
        records,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Writes freshly stamped batches of `shape` into `topic` at `bytes_per_second` for `duration`,
/// round-robin over the partitions. Every batch carries the time it was built as its
/// timestamp.
pub async fn write_paced(
    cluster: &Cluster,
    topic: &str,
    partitions: i32,
    shape: &DataShape,
    bytes_per_second: f64,
    duration: Duration,
) -> Result<Transfer> {
    let leaders = leaders(cluster, topic, partitions).await?;
    let mut pipe = Pipeline::new(cluster, topic, IN_FLIGHT * 4);
    let tick = Duration::from_millis(5);
    let start = Instant::now();
    let (mut bytes, mut records) = (0u64, 0u64);
    let mut next_partition = 0i32;
    let mut next_record = 0u64;
    let per_batch = shape.records_per_batch() as u64;
    while start.elapsed() < duration {
        let due = bytes_per_second * start.elapsed().as_secs_f64();
        let mut items = Vec::new();
        while (bytes as f64) < due && items.len() < partitions as usize {
            let batch = shape
                .batch(next_record, crate::replicate::store::now_ms())
                .map_err(|e| Error::invalid(format!("cannot encode a bench batch: {e}")))?;
            next_record += per_batch;
            bytes += batch.len() as u64;
            records += batch.records_count() as u64;
            items.push((next_partition, batch));
            next_partition = (next_partition + 1) % partitions;
        }
        if items.is_empty() {
            tokio::time::sleep(tick).await;
        } else {
            send_grouped(&mut pipe, &leaders, items).await?;
        }
    }
    pipe.finish_all().await?;
    Ok(Transfer {
        bytes,
        records,
        seconds: start.elapsed().as_secs_f64(),
    })
}
