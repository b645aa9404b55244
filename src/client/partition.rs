//! A narrow handle on one partition of a cluster, in rskafka's `PartitionClient` manner: what
//! the control plane and the commands ask of a single partition (its leader, one Fetch with
//! no wait, one offset), each error naming the cluster, topic, partition and offset.
//!
//! The data path does not use it: it fetches many partitions per request, in sessions.

use super::Cluster;
use crate::error::{Error, Result};
use crate::protocol::error_code;
use crate::protocol::fetch::{FetchLimits, FetchPartitionSpec, FetchedPartition, READ_UNCOMMITTED};

/// How much a one-shot fetch reads by default (1 MiB).
pub const DEFAULT_FETCH_BYTES: i32 = 1 << 20;

/// What [`PartitionClient::fetch_once`] reads: where, how much, in which isolation, and the
/// epoch of the batch read before (for the leader's divergence check, KIP-320).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchRead {
    /// The offset to read from.
    pub offset: i64,
    /// The leader epoch of the batch read before `offset` (-1: none).
    pub last_fetched_epoch: i32,
    /// How many bytes at most (the partition's and the response's limit).
    pub max_bytes: i32,
    /// [`READ_UNCOMMITTED`] or [`crate::protocol::fetch::READ_COMMITTED`].
    pub isolation: i8,
    /// The topic id the read belongs to (`None`: any; read by name). With an id, a broker
    /// that names topics by id (Fetch v13+) refuses the read once the topic was deleted,
    /// even if one of the same name was created since.
    pub topic_id: Option<[u8; 16]>,
}

impl FetchRead {
    /// A read at `offset`: no epoch known, [`DEFAULT_FETCH_BYTES`], read uncommitted.
    pub fn at(offset: i64) -> FetchRead {
        FetchRead {
            offset,
            last_fetched_epoch: -1,
            max_bytes: DEFAULT_FETCH_BYTES,
            isolation: READ_UNCOMMITTED,
            topic_id: None,
        }
    }

    /// At most `bytes` bytes.
    pub fn max_bytes(mut self, bytes: i32) -> FetchRead {
        self.max_bytes = bytes;
        self
    }

    /// In isolation level `isolation` (READ_COMMITTED or READ_UNCOMMITTED).
    pub fn isolation(mut self, isolation: i8) -> FetchRead {
        self.isolation = isolation;
        self
    }

    /// With the epoch of the batch read before the offset.
    pub fn last_fetched_epoch(mut self, epoch: i32) -> FetchRead {
        self.last_fetched_epoch = epoch;
        self
    }

    /// Of the topic with id `id` only (`None`: whichever topic has the name).
    pub fn topic_id(mut self, id: Option<[u8; 16]>) -> FetchRead {
        self.topic_id = id;
        self
    }
}

/// One partition of a [`Cluster`]: made by [`Cluster::partition`], cheap (two references and
/// an index), made again where needed rather than kept.
#[derive(Debug, Clone, Copy)]
pub struct PartitionClient<'a> {
    cluster: &'a Cluster,
    topic: &'a str,
    partition: i32,
}

impl Cluster {
    /// A handle on partition `partition` of `topic`.
    pub fn partition<'a>(&'a self, topic: &'a str, partition: i32) -> PartitionClient<'a> {
        PartitionClient {
            cluster: self,
            topic,
            partition,
        }
    }
}

impl<'a> PartitionClient<'a> {
    /// The cluster.
    pub fn cluster(&self) -> &'a Cluster {
        self.cluster
    }

    /// The topic.
    pub fn topic(&self) -> &'a str {
        self.topic
    }

    /// The partition index.
    pub fn index(&self) -> i32 {
        self.partition
    }

    /// Names the cluster, topic and partition in `e` (what it names already is kept).
    fn named(&self, e: Error) -> Error {
        e.cluster(self.cluster.name())
            .partition(self.topic, self.partition)
    }

    /// The leader's node id and leader epoch (from the metadata cache, loaded if missing).
    pub async fn leader(&self) -> Result<(i32, i32)> {
        self.cluster
            .leader(self.topic, self.partition)
            .await
            .map_err(|e| self.named(e))
    }

    /// One Fetch of this partition from its leader as `read` says, answered at once (no
    /// wait). A partition error, or an answer without the partition, names the cluster,
    /// topic, partition and offset; a diverging epoch is left in the answer.
    pub async fn fetch_once(&self, read: FetchRead) -> Result<FetchedPartition> {
        let at = |e: Error| self.named(e).offset(read.offset);
        let (leader, epoch) = self.leader().await.map_err(at)?;
        let spec = FetchPartitionSpec {
            topic: self.topic.into(),
            topic_id: read.topic_id,
            partition: self.partition,
            offset: read.offset,
            current_leader_epoch: epoch,
            last_fetched_epoch: read.last_fetched_epoch,
            max_bytes: read.max_bytes,
        };
        let limits = FetchLimits {
            max_wait_ms: 0,
            max_bytes: read.max_bytes,
            isolation_level: read.isolation,
            ..FetchLimits::default()
        };
        let resp = self
            .cluster
            .fetch(leader, &[spec], &limits)
            .await
            .map_err(at)?;
        let p = resp
            .partitions
            .into_iter()
            .next() // one partition asked for
            .ok_or_else(|| at(Error::invalid("the fetch answer lacks the partition")))?;
        if p.error_code != error_code::NONE {
            if error_code::needs_metadata_refresh(p.error_code) {
                self.cluster.invalidate(self.topic);
            }
            return Err(at(Error::broker(p.error_code, None)));
        }
        Ok(p)
    }

    /// The offset for `timestamp` ([`super::EARLIEST`], [`super::LATEST`] or a time in ms),
    /// retried as [`Cluster::list_offsets`] retries.
    pub async fn list_offset(&self, timestamp: i64) -> Result<i64> {
        let found = self
            .cluster
            .list_offsets(self.topic, &[self.partition], timestamp)
            .await
            .map_err(|e| self.named(e))?;
        self.only(found)
    }

    /// [`PartitionClient::list_offset`] tried once.
    pub async fn list_offset_once(&self, timestamp: i64) -> Result<i64> {
        let found = self
            .cluster
            .list_offsets_once(self.topic, &[self.partition], timestamp)
            .await
            .map_err(|e| self.named(e))?;
        self.only(found)
    }

    /// The offset of the one partition asked for.
    fn only(&self, found: Vec<(i32, i64)>) -> Result<i64> {
        found
            .into_iter()
            .find(|(p, _)| *p == self.partition)
            .map(|(_, offset)| offset)
            .ok_or_else(|| self.named(Error::invalid("the ListOffsets answer lacks the partition")))
    }
}
