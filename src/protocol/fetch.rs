//! Fetch (key 1), versions 4..=17: the request is built with `kafka-protocol`; the response is
//! decoded here so each partition's records stay a zero-copy slice of the response frame.
//!
//! From v13 (KIP-516) a Fetch names topics by topic id, not by name: a broker refuses an id
//! that is not the topic's now (`UNKNOWN_TOPIC_ID`, `INCONSISTENT_TOPIC_ID`), so a topic
//! deleted and created again under the same name is never read under the old one's id. A
//! request uses v13+ only when every partition in it has a known topic id
//! ([`version_for`]); the answer names topics by id, and [`name_topics`] maps them back.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::wire::{Reader, WireError};

/// First Fetch version naming topics by id (KIP-516).
pub const MIN_TOPIC_ID_VERSION: i16 = 13;

/// The Fetch version for a request of `parts` to a broker whose highest common version is
/// `negotiated`: `negotiated` when it names topics by id and every partition's topic id is
/// known, else at most v12 (by name).
pub fn version_for(negotiated: i16, parts: &[FetchPartitionSpec]) -> i16 {
    if negotiated >= MIN_TOPIC_ID_VERSION && parts.iter().all(|p| p.topic_id.is_some()) {
        negotiated
    } else {
        negotiated.min(MIN_TOPIC_ID_VERSION - 1)
    }
}

/// Read everything (READ_UNCOMMITTED).
pub const READ_UNCOMMITTED: i8 = 0;
/// Read only committed transactional data; aborted transactions are listed (READ_COMMITTED).
pub const READ_COMMITTED: i8 = 1;

/// One partition to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionSpec {
    /// Topic name (shared: a Fetch names every partition of a topic, every round).
    pub topic: Arc<str>,
    /// The topic's id (`None`: not known; the partition is fetched by name, at most v12).
    pub topic_id: Option<[u8; 16]>,
    /// Partition index.
    pub partition: i32,
    /// Offset to fetch from.
    pub offset: i64,
    /// Leader epoch we believe current (-1 when unknown).
    pub current_leader_epoch: i32,
    /// Leader epoch of the last batch read before `offset` (-1 when unknown): from v12 the
    /// leader answers with the epoch and offset where its log diverges from it (KIP-320).
    pub last_fetched_epoch: i32,
    /// At most this many bytes for this partition.
    pub max_bytes: i32,
}

/// Limits of one Fetch request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// How long the broker may wait for `min_bytes`.
    pub max_wait_ms: i32,
    /// Answer as soon as this many bytes are there.
    pub min_bytes: i32,
    /// At most this many bytes in the whole response.
    pub max_bytes: i32,
    /// [`READ_UNCOMMITTED`] or [`READ_COMMITTED`].
    pub isolation_level: i8,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 50 * 1024 * 1024,
            isolation_level: READ_UNCOMMITTED,
        }
    }
}

/// Builds a full (sessionless) Fetch request. Partitions of one topic are grouped together in
/// the order given. Each topic carries its name and its id (nil when unknown): the encoder
/// writes the name up to v12 and the id from v13.
pub fn request(parts: &[FetchPartitionSpec], limits: &FetchLimits) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for p in parts {
        let mut fp = FetchPartition::default();
        fp.partition = p.partition;
        fp.current_leader_epoch = p.current_leader_epoch;
        fp.fetch_offset = p.offset;
        fp.last_fetched_epoch = p.last_fetched_epoch;
        fp.log_start_offset = -1;
        fp.partition_max_bytes = p.max_bytes;
        match topics.last_mut() {
            Some(t) if t.topic.0.as_str() == &*p.topic && t.topic_id == uuid(p.topic_id) => {
                t.partitions.push(fp)
            }
            _ => {
                let mut t = FetchTopic::default();
                t.topic = TopicName(StrBytes::from_string(p.topic.to_string()));
                t.topic_id = uuid(p.topic_id);
                t.partitions.push(fp);
                topics.push(t);
            }
        }
    }
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    // At least 1 ms: nisshi 0.8.1 answers a Fetch with max_wait_ms = 0 with no partitions at
    // all, even when data is there. Apache Kafka answers at once either way.
    req.max_wait_ms = limits.max_wait_ms.max(1);
    req.min_bytes = limits.min_bytes;
    req.max_bytes = limits.max_bytes;
    req.isolation_level = limits.isolation_level;
    req.session_id = 0;
    req.session_epoch = -1;
    req.topics = topics;
    req
}

/// A topic id as the `kafka-protocol` crate holds it (nil when unknown).
pub(crate) fn uuid(id: Option<[u8; 16]>) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id.unwrap_or_default())
}

/// An aborted transaction listed for a partition under READ_COMMITTED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTransaction {
    /// The producer whose transaction aborted.
    pub producer_id: i64,
    /// First offset of the aborted transaction.
    pub first_offset: i64,
}

/// One partition of a Fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPartition {
    /// Topic name, one allocation per topic of the response (v13+: empty until
    /// [`name_topics`] names it).
    pub topic: Arc<str>,
    /// v13+: the topic's id, as the answer names the topic.
    pub topic_id: Option<[u8; 16]>,
    /// Partition index.
    pub partition: i32,
    /// Error code.
    pub error_code: i16,
    /// High watermark.
    pub high_watermark: i64,
    /// Last stable offset.
    pub last_stable_offset: i64,
    /// Log start offset (-1 before v5).
    pub log_start_offset: i64,
    /// Aborted transactions (READ_COMMITTED only).
    pub aborted_transactions: Vec<AbortedTransaction>,
    /// The records blob, a slice of the response frame; may end in a truncated batch.
    pub records: Bytes,
    /// v12+: the leader's log diverges from the `last_fetched_epoch` asked with: the largest
    /// epoch it has at or below it, and where that epoch ends (no records are returned).
    pub diverging_epoch: Option<EpochEndOffset>,
}

/// A leader epoch and the offset where it ends in the leader's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    /// The epoch.
    pub epoch: i32,
    /// The first offset after it.
    pub end_offset: i64,
}

/// Reads a partition's tagged fields (v12+), keeping the diverging epoch (tag 0); the
/// current leader (tag 1) and snapshot id (tag 2) are skipped by their length.
fn partition_tags(r: &mut Reader) -> Result<Option<EpochEndOffset>, WireError> {
    let n = r.uvarint("tagged fields")? as usize;
    let mut diverging = None;
    for _ in 0..n {
        let tag = r.uvarint("tag")?;
        let len = r.uvarint("tag length")? as usize;
        let mut field = Reader::new(r.take_bytes(len, "tag value")?);
        if tag == 0 {
            let epoch = field.i32("diverging epoch")?;
            let end_offset = field.i64("diverging end offset")?;
            field.skip_tagged_fields()?;
            // The schema's default (-1, -1) means "no divergence".
            if epoch >= 0 && end_offset >= 0 {
                diverging = Some(EpochEndOffset { epoch, end_offset });
            }
        }
    }
    Ok(diverging)
}

/// A decoded Fetch response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FetchResponse {
    /// Top-level error code (v7+).
    pub error_code: i16,
    /// Fetch session id (v7+).
    pub session_id: i32,
    /// Partitions in response order.
    pub partitions: Vec<FetchedPartition>,
}

/// Decodes a Fetch response body at `version` (4..=17). From v13 topics come as ids: the
/// partitions carry [`FetchedPartition::topic_id`] and an empty name until [`name_topics`].
/// The top-level tagged fields (v16+: the endpoints of new leaders, KIP-951) are skipped.
pub fn decode_response(mut r: Reader, version: i16) -> Result<FetchResponse, WireError> {
    let c = version >= 12;
    r.i32("throttle time")?;
    let (error_code, session_id) = if version >= 7 {
        (r.i16("error code")?, r.i32("session id")?)
    } else {
        (0, 0)
    };
    let by_id = version >= MIN_TOPIC_ID_VERSION;
    // The smallest topic: a name (2 bytes, 1 compact) or an id (16), a partition array, tags.
    let nt = r.array(c, if by_id { 18 } else { 5 }, "responses")?;
    let unnamed: Arc<str> = Arc::from("");
    let mut partitions = Vec::new();
    for _ in 0..nt {
        let (topic, topic_id) = if by_id {
            (unnamed.clone(), Some(r.uuid("topic id")?))
        } else {
            (Arc::from(r.string(c, "topic")?), None)
        };
        let np = r.array(c, 30, "partitions")?;
        partitions.reserve(np);
        for _ in 0..np {
            partitions.push(decode_partition(&mut r, version, (&topic, topic_id))?);
        }
        if c {
            r.skip_tagged_fields()?;
        }
    }
    if c {
        r.skip_tagged_fields()?;
    }
    Ok(FetchResponse {
        error_code,
        session_id,
        partitions,
    })
}

/// One partition of a Fetch response of `topic` (name, and id from v13).
fn decode_partition(
    r: &mut Reader,
    version: i16,
    topic: (&Arc<str>, Option<[u8; 16]>),
) -> Result<FetchedPartition, WireError> {
    let c = version >= 12;
    let partition = r.i32("partition index")?;
    let error_code = r.i16("error code")?;
    let high_watermark = r.i64("high watermark")?;
    let last_stable_offset = r.i64("last stable offset")?;
    let log_start_offset = if version >= 5 {
        r.i64("log start offset")?
    } else {
        -1
    };
    let na = r.array_len(c, 16, "aborted transactions")?.unwrap_or(0);
    let mut aborted_transactions = Vec::with_capacity(na);
    for _ in 0..na {
        let producer_id = r.i64("aborted producer id")?;
        let first_offset = r.i64("aborted first offset")?;
        if c {
            r.skip_tagged_fields()?;
        }
        aborted_transactions.push(AbortedTransaction {
            producer_id,
            first_offset,
        });
    }
    if version >= 11 {
        r.i32("preferred read replica")?;
    }
    let records = r.nullable_bytes(c, "records")?.unwrap_or_default();
    let diverging_epoch = if c { partition_tags(r)? } else { None };
    Ok(FetchedPartition {
        topic: topic.0.clone(),
        topic_id: topic.1,
        partition,
        error_code,
        high_watermark,
        last_stable_offset,
        log_start_offset,
        aborted_transactions,
        records,
        diverging_epoch,
    })
}

/// Topic names by topic id, for [`name_topics`].
pub type TopicNames = HashMap<[u8; 16], Arc<str>>;

/// The topic names of `parts` by their ids (those with one).
pub fn names_of(parts: &[FetchPartitionSpec]) -> TopicNames {
    parts
        .iter()
        .filter_map(|p| Some((p.topic_id?, p.topic.clone())))
        .collect()
}

/// Names the partitions of a v13+ answer by their topic ids from `names`. A partition of an
/// id not in `names` (a topic never asked for) is dropped, and counted in the return value.
pub fn name_topics(resp: &mut FetchResponse, names: &TopicNames) -> usize {
    let before = resp.partitions.len();
    resp.partitions.retain_mut(|p| {
        let Some(id) = p.topic_id else {
            return true; // named by the answer itself (before v13)
        };
        match names.get(&id) {
            Some(name) => {
                p.topic = name.clone();
                true
            }
            None => false,
        }
    });
    before - resp.partitions.len()
}
