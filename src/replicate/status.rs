//! What running flows report about themselves, for logs, `strait status` and the HTTP API.

/// One replicated partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionStatus {
    /// Source topic.
    pub source_topic: String,
    /// Remote topic on the target.
    pub target_topic: String,
    /// Partition index.
    pub partition: i32,
    /// Next source offset to replicate (everything below is on the target).
    pub source_next: i64,
    /// Target log end after what was acknowledged.
    pub target_next: i64,
    /// Source high watermark at the last fetch.
    pub source_end: i64,
    /// Records replicated by this process.
    pub records: u64,
    /// Batch bytes replicated by this process.
    pub bytes: u64,
    /// Source records deleted by retention before this process could replicate them.
    pub lost_records: u64,
    /// Why the partition stopped, if it did.
    pub failed: Option<String>,
}

impl PartitionStatus {
    /// Records on the source not yet on the target.
    pub fn lag(&self) -> i64 {
        (self.source_end - self.source_next).max(0)
    }
}

/// One flow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowStatus {
    /// `source->target`.
    pub name: String,
    /// Its partitions.
    pub partitions: Vec<PartitionStatus>,
    /// Mirror flows: the state of each mirror topic.
    pub mirrors: Vec<MirrorStatus>,
    /// Scale-out: the instances sharing this flow's target cluster, and what each runs.
    pub members: Vec<MemberStatus>,
    /// While an operator has the flow paused: since when and why.
    pub paused: Option<super::pause::PauseRecord>,
}

/// One mirror topic of a mirror flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct MirrorStatus {
    /// The mirror topic: its name on the destination (the source topic's after the flow's
    /// `prefix`, if it has one).
    pub topic: String,
    /// The source topic it mirrors.
    #[serde(default)]
    pub source_topic: String,
    /// Link name.
    pub link: String,
    /// `active`, `paused`, `promoting`, `promoted` or `failed_over`.
    pub state: String,
    /// As Cluster Linking reports it: `ACTIVE`, `PAUSED`, `PENDING_STOPPED`, `STOPPED`,
    /// `FAILED` or `SOURCE_UNAVAILABLE`.
    #[serde(default)]
    pub status: String,
    /// Why it has that status, when there is more to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// Partitions whose offsets equal the source's.
    pub identical_partitions: Vec<i32>,
    /// Partitions whose offsets are mapped, and why.
    pub mapped_partitions: Vec<(i32, String)>,
    /// Partitions stopped because something else wrote into the topic, and why.
    pub stopped_partitions: Vec<(i32, String)>,
}

/// One instance of the group sharing a target cluster's work.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct MemberStatus {
    /// Group member id.
    pub member_id: String,
    /// Host and process id.
    pub instance: String,
    /// Whether it is this process.
    pub this_instance: bool,
    /// Partitions of this flow it was assigned.
    pub partitions: usize,
    /// Whether it does this flow's flow-wide duties.
    pub duties: bool,
}
