//! Consumer groups across clusters: reading committed offsets, writing and reading MM2-format
//! checkpoints, and committing translated offsets for a group from outside it.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::store;
use crate::client::Cluster;
use crate::error::{Error, Result};
use crate::mm2::Checkpoint;
use crate::protocol::error_code;

/// A group's committed offset for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Next offset the group will read.
    pub offset: i64,
    /// Metadata committed with it.
    pub metadata: String,
}

/// Collects committed partitions from OffsetFetch topics (v8+ `groups[].topics` and older
/// `topics` have different types with the same fields).
macro_rules! collect_committed {
    ($topics:expr, $out:expr) => {
        for t in $topics {
            for p in &t.partitions {
                if p.error_code == error_code::NONE && p.committed_offset >= 0 {
                    $out.push(Committed {
                        topic: t.name.0.to_string(),
                        partition: p.partition_index,
                        offset: p.committed_offset,
                        metadata: p
                            .metadata
                            .as_ref()
                            .map(|m| m.to_string())
                            .unwrap_or_default(),
                    });
                }
            }
        }
    };
}

/// A group's committed offsets on a cluster (partitions without a commit are left out).
pub async fn committed(cluster: &Cluster, group: &str) -> Result<Vec<Committed>> {
    let resp = cluster.offset_fetch(group).await?;
    let mut out = Vec::new();
    match resp.groups.first() {
        Some(g) => {
            if g.error_code != error_code::NONE {
                return Err(Error::broker(g.error_code, None).cluster(cluster.name()));
            }
            collect_committed!(&g.topics, out);
        }
        None => {
            if resp.error_code != error_code::NONE {
                return Err(Error::broker(resp.error_code, None).cluster(cluster.name()));
            }
            collect_committed!(&resp.topics, out);
        }
    }
    out.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    Ok(out)
}

/// The number of active members of a group on a cluster (0 for an empty or unknown group).
pub async fn active_members(cluster: &Cluster, group: &str) -> Result<usize> {
    let resp = cluster.describe_group(group).await?;
    let Some(g) = resp.groups.first() else {
        return Ok(0);
    };
    if g.error_code == error_code::GROUP_ID_NOT_FOUND {
        return Ok(0);
    }
    if g.error_code != error_code::NONE {
        return Err(Error::broker(g.error_code, None).cluster(cluster.name()));
    }
    Ok(g.members.len())
}

/// Commits `offsets` (topic, partition, offset) for `group` from outside the group, as
/// `kafka-consumer-groups --reset-offsets` does (generation -1, no member id).
pub async fn commit(cluster: &Cluster, group: &str, offsets: &[(String, i32, i64)]) -> Result<()> {
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (topic, partition, offset) in offsets {
        let mut p = OffsetCommitRequestPartition::default();
        p.partition_index = *partition;
        p.committed_offset = *offset;
        p.committed_leader_epoch = -1;
        p.committed_metadata = Some(StrBytes::from_static_str(""));
        match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.partitions.push(p),
            None => {
                let mut t = OffsetCommitRequestTopic::default();
                t.name = TopicName(StrBytes::from_string(topic.clone()));
                t.partitions.push(p);
                topics.push(t);
            }
        }
    }
    let mut req = OffsetCommitRequest::default();
    req.group_id = GroupId(StrBytes::from_string(group.to_string()));
    req.generation_id_or_member_epoch = -1;
    req.member_id = StrBytes::from_static_str("");
    req.retention_time_ms = -1;
    req.topics = topics;
    cluster.offset_commit(group, req).await
}

/// Appends checkpoints to the checkpoints topic `topic` on the target (MM2's
/// `<source>.checkpoints.internal` by default).
pub async fn write_checkpoints(
    target: &Cluster,
    topic: &str,
    checkpoints: &[Checkpoint],
    replication_factor: i16,
) -> Result<()> {
    if checkpoints.is_empty() {
        return Ok(());
    }
    store::ensure_compacted_topic(target, topic, replication_factor).await?;
    let mut records = Vec::with_capacity(checkpoints.len());
    for c in checkpoints {
        let key = c.encode_key().map_err(|e| {
            Error::invalid(format!("checkpoint of group {}: {e}", c.consumer_group_id))
        })?;
        let value = c.encode_value().map_err(|e| {
            Error::invalid(format!("checkpoint of group {}: {e}", c.consumer_group_id))
        })?;
        records.push((Bytes::from(key), Some(Bytes::from(value))));
    }
    store::append_once(target, topic, 0, &records).await?;
    Ok(())
}

/// The latest checkpoint of every (group, topic, partition) in the checkpoints topic `topic`
/// on the target. Reads only the target cluster.
pub async fn read_checkpoints(
    target: &Cluster,
    topic: &str,
) -> Result<BTreeMap<(String, String, i32), Checkpoint>> {
    let mut out = BTreeMap::new();
    for (k, v) in store::read_latest(target, topic).await? {
        match Checkpoint::decode(&k, &v) {
            Ok(c) => {
                out.insert(
                    (c.consumer_group_id.clone(), c.topic.clone(), c.partition),
                    c,
                );
            }
            Err(e) => {
                tracing::warn!(cluster = %target.name(), %topic, "unreadable checkpoint skipped: {e}")
            }
        }
    }
    Ok(out)
}
