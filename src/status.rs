//! The status documents: what [`Replicator::status`](crate::Replicator::status) returns and
//! the REST API serves at `/api/status` (JSON with these field names).
//!
//! Their types are `#[non_exhaustive]`: new fields are added without a breaking change, so
//! read them by name rather than building them.

pub use crate::observe::api::{
    CheckpointDoc, FlowDoc, GroupDoc, PartitionDoc, StatusDoc, TopicDoc,
};
pub use crate::observe::series::Sample;
pub use crate::replicate::status::{MemberStatus, MirrorStatus};
