//! The async shell: connections, the per-cluster client and typed requests.

pub mod cluster;
pub mod connection;

pub use cluster::{Cluster, ClusterConfig, PendingFetch, PendingProduce, Route, EARLIEST, LATEST};
pub use connection::{Connection, ConnectionConfig, PendingResponse};
