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
}
