//! The JSON documents of the REST API (`/api/status`, `/api/flows`, `/api/groups`), shared by
//! the server and `strait status`.

use serde::{Deserialize, Serialize};

use super::series::Sample;

/// `/api/status`: everything the status page and `strait status` show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StatusDoc {
    /// strait's version.
    pub version: String,
    /// The server's clock when it answered (ms since the epoch): ages are relative to it.
    pub now_ms: i64,
    /// Seconds since the engine started.
    pub uptime_seconds: u64,
    /// Every flow connected to both clusters, none stopped and no partition stopped (what
    /// `/ready` answers).
    pub ready: bool,
    /// The flows, by name.
    pub flows: Vec<FlowDoc>,
}

/// One flow (`/api/flows`, `/api/flows/{name}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FlowDoc {
    /// `source->target`.
    pub name: String,
    /// Source cluster alias.
    pub source: String,
    /// Target cluster alias.
    pub target: String,
    /// The source cluster answered.
    pub source_connected: bool,
    /// The target cluster answered.
    pub target_connected: bool,
    /// Why the source is not connected (the last error), while it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_problem: Option<String>,
    /// Why the target is not connected (the last error), while it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_problem: Option<String>,
    /// Why the flow stopped, if it did.
    pub stopped: Option<String>,
    /// While an operator has the flow paused: since when (`changed_ms`) and why.
    #[serde(default)]
    pub paused: Option<crate::replicate::pause::PauseRecord>,
    /// Records replicated by this process.
    pub records: u64,
    /// Batch bytes replicated by this process.
    pub bytes: u64,
    /// Records on the source not yet on the target, over all partitions.
    pub lag: i64,
    /// Records per second over the latest sample interval.
    pub records_per_second: f64,
    /// Bytes per second over the latest sample interval.
    pub bytes_per_second: f64,
    /// 99th percentile replication latency over the latest sample interval (ms).
    pub latency_p99_ms: Option<f64>,
    /// Largest replication latency over the latest sample interval (ms).
    pub latency_max_ms: Option<f64>,
    /// Latest end-to-end heartbeat latency (ms).
    pub heartbeat_latency_ms: Option<f64>,
    /// Batch bytes fetched and not yet acknowledged by the target.
    pub buffered_bytes: u64,
    /// Replicated topics.
    pub topics: Vec<TopicDoc>,
    /// Consumer groups with checkpoints written by this flow.
    pub groups: Vec<GroupDoc>,
    /// Mirror flows: the state of each mirror topic.
    #[serde(default)]
    pub mirrors: Vec<crate::replicate::status::MirrorStatus>,
    /// The instances sharing the target cluster's work and what each runs (this flow's part).
    #[serde(default)]
    pub members: Vec<crate::replicate::status::MemberStatus>,
    /// Samples of the last minutes, oldest first (only in `/api/status`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Sample>,
}

/// One replicated topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TopicDoc {
    /// Topic on the source.
    pub source_topic: String,
    /// Remote topic on the target.
    pub target_topic: String,
    /// Records not yet on the target, over its partitions.
    pub lag: i64,
    /// Records replicated by this process.
    pub records: u64,
    /// Bytes replicated by this process.
    pub bytes: u64,
    /// Records per second over the latest sample interval.
    pub records_per_second: f64,
    /// Partitions that stopped on an error.
    pub failed_partitions: usize,
    /// Its partitions.
    pub partitions: Vec<PartitionDoc>,
}

/// One replicated partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PartitionDoc {
    /// Partition index.
    pub partition: i32,
    /// Next source offset to replicate.
    pub source_next: i64,
    /// Target log end after what was acknowledged.
    pub target_next: i64,
    /// Source high watermark at the last fetch.
    pub source_end: i64,
    /// `source_end - source_next`.
    pub lag: i64,
    /// Records replicated by this process.
    pub records: u64,
    /// Bytes replicated by this process.
    pub bytes: u64,
    /// Source records deleted by retention before this process could replicate them.
    #[serde(default)]
    pub lost_records: u64,
    /// Why the partition stopped, if it did.
    pub failed: Option<String>,
}

/// A consumer group's checkpoints written by one flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GroupDoc {
    /// The group.
    pub group: String,
    /// When a checkpoint of this group last changed (ms since the epoch).
    pub updated_ms: i64,
    /// Last checkpoint per partition.
    pub partitions: Vec<CheckpointDoc>,
}

/// The last checkpoint of one group partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CheckpointDoc {
    /// Topic as named on the target.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Committed offset on the source.
    pub upstream_offset: i64,
    /// Translated offset on the target.
    pub downstream_offset: i64,
    /// When this checkpoint changed (ms since the epoch).
    pub updated_ms: i64,
}

/// `/api/groups`: every flow's groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GroupsDoc {
    /// Per flow.
    pub flows: Vec<FlowGroupsDoc>,
}

/// The groups of one flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FlowGroupsDoc {
    /// `source->target`.
    pub flow: String,
    /// Its groups.
    pub groups: Vec<GroupDoc>,
}

/// `/api/flows`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FlowsDoc {
    /// The flows, without their series.
    pub flows: Vec<FlowDoc>,
}
