//! Moving batches from a source partition to a target partition: the sans-io [`plan`] decides
//! what each fetched batch becomes, [`copy`] runs the fetch/produce loop.

pub mod copy;
pub mod plan;

pub use copy::{copy_partition, CopySpec, CopyStats};
pub use plan::{Outgoing, PartitionPlanner, Plan, ProducerIdentity, Reencode, SourceOffsets};
