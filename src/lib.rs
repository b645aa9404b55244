//! strait: a Kafka cross-cluster replicator that forwards record batches byte-for-byte.
//!
//! Most programs run strait as a command (`strait run --config strait.toml`). A program that
//! wants replication inside its own tokio runtime (an edge gateway, a migration tool) embeds it
//! through [`Replicator`]:
//!
//! ```no_run
//! # async fn embed() -> Result<(), strait::Error> {
//! let config = strait::config::load(std::path::Path::new("strait.toml"))
//!     .map_err(|e| strait::Error::invalid(e.to_string()))?;
//! let replicator = strait::Replicator::builder(config).start()?;
//! // ... the program's own work ...
//! println!("ready: {}", replicator.status().ready);
//! replicator.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Layers, from the bytes up:
//! - [`records`]: record batches, sans-io (split, header rewrite with CRC upkeep, codecs).
//! - [`protocol`]: the Kafka wire protocol, sans-io (framing, bounded response decoders).
//! - [`client`]: the async shell (connections, broker pool, metadata, typed requests).
//! - [`sasl`], [`tls`], [`secret`]: secure clusters (SASL PLAIN/SCRAM, TLS, secrets kept out of
//!   logs and messages).
//! - [`metrics`], [`observe`]: metrics, the REST API, the status page and its HTTP server.
//! - [`replicate`]: flows, with [`mirror`] topics and scale-out through [`assignment`];
//!   [`Replicator`] on top.
//!
//! Modules hidden from this documentation (`bench`, `local_broker`, `local_kafka`, `local_mm2`, `table`)
//! serve strait's own command, benchmark and tests; they are not part of the API and change
//! without notice.
//!
//! The library never owns the process: no global state, no printing, no `exit`.

#![deny(missing_docs)]

pub mod assignment;
#[doc(hidden)]
pub mod bench;
pub mod client;
pub mod config;
pub mod error;
pub mod filter;
pub mod forward;
#[doc(hidden)]
pub mod local_broker;
#[doc(hidden)]
pub mod local_kafka;
#[doc(hidden)]
pub mod local_mm2;
pub mod metrics;
pub mod mirror;
pub mod mm2;
pub mod naming;
pub mod observe;
pub mod offsets;
pub mod protocol;
pub mod records;
pub mod replicate;
pub mod replicator;
pub mod sasl;
pub mod secret;
#[doc(hidden)]
pub mod table;
pub mod tls;

pub use error::{Error, ErrorKind, Result};
pub use replicator::{Replicator, ReplicatorBuilder};
