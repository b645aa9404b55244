//! The async shell: connections, the per-cluster client and typed requests.

pub mod admin;
pub mod cluster;
pub mod connection;
pub mod group;
pub mod partition;
pub mod transport;

pub use admin::{AclBinding, ConfigOp};
pub use cluster::{
    Cluster, ClusterConfig, Lane, PendingFetch, PendingProduce, Route, EARLIEST, LATEST,
};
pub use connection::{Connection, ConnectionConfig, PendingResponse};
pub use partition::{FetchRead, PartitionClient};
pub use transport::TlsClient;
