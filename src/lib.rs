//! strait: a Kafka cross-cluster replicator that forwards record batches byte-for-byte.
//!
//! Layers, from the bytes up:
//! - [`records`]: record batches, sans-io (split, header rewrite with CRC upkeep, codecs).
//! - [`protocol`]: the Kafka wire protocol, sans-io (framing, bounded response decoders).
//! - [`client`]: the async shell (connections, broker pool, metadata, typed requests).
//! - [`sasl`], [`tls`], [`secret`]: secure clusters (SASL PLAIN/SCRAM, TLS, secrets kept out of
//!   logs and messages).
//! - [`metrics`], [`observe`]: metrics, the REST API, the status page and its HTTP server.
//! - [`replicate`]: flows, with [`mirror`] topics and scale-out through [`assignment`].
//! - [`table`]: the commands' plain-text tables.
//!
//! The library never owns the process: no global state, no printing, no `exit`.

pub mod assignment;
pub mod bench;
pub mod client;
pub mod config;
pub mod error;
pub mod filter;
pub mod forward;
pub mod local_broker;
pub mod local_kafka;
pub mod metrics;
pub mod mirror;
pub mod mm2;
pub mod naming;
pub mod observe;
pub mod offsets;
pub mod protocol;
pub mod records;
pub mod replicate;
pub mod sasl;
pub mod secret;
pub mod table;
pub mod tls;

pub use error::{Error, ErrorKind, Result};
