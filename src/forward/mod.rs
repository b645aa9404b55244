//! Moving batches from a source partition to a target partition: the sans-io [`plan`] decides
//! what each fetched batch becomes; the replicate flow's data path runs the fetch/produce loop.

pub mod plan;

pub use plan::{Outgoing, PartitionPlanner, Plan, ProducerIdentity, Reencode, SourceOffsets};
