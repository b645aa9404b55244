//! strait: a Kafka cross-cluster replicator that forwards record batches byte-for-byte.
//!
//! Most programs run strait as a command (`strait run --config strait.toml`). A program that
//! wants replication inside its own tokio runtime (an edge gateway, a migration tool) embeds it
//! through [`Replicator`]:
//!
//! ```no_run
//! use strait::{Replicator, ReplicatorError};
//!
//! # async fn embed() -> Result<(), ReplicatorError> {
//! let config = strait::config::load(std::path::Path::new("strait.toml"))?;
//! let replicator = match Replicator::builder(config).http("127.0.0.1:0").start() {
//!     Ok(r) => r,
//!     // The listener's port is taken: run without the status page.
//!     Err(ReplicatorError::Http { addr, problem, .. }) => {
//!         eprintln!("no status page on {addr}: {problem}");
//!         Replicator::builder_from_file("strait.toml")?.start()?
//!     }
//!     Err(e) => return Err(e),
//! };
//! // ... the program's own work ...
//! println!("ready: {}", replicator.status().ready);
//! match replicator.shutdown().await {
//!     Err(ReplicatorError::Auth(e)) => eprintln!("a cluster refused strait: {e}"),
//!     other => other?,
//! }
//! # Ok(())
//! # }
//! ```
//!
//! The documented API:
//! - [`Replicator`] and [`ReplicatorBuilder`]: start flows, read and follow their status, stop
//!   them.
//! - [`config`]: the configuration model, [`config::load`] and [`config::validate`].
//! - [`status`]: the status documents (the same as the REST API's `/api/status`).
//! - [`ReplicatorError`], and [`Error`] for a cluster's error (it names cluster, broker, topic,
//!   partition and offset).
//!
//! The other public modules are hidden from this documentation: they serve strait's own
//! command (`src/main.rs` and `src/cli/`), its integration and protocol tests, benchmarks,
//! examples and fuzz targets, which are separate crates and so can only reach `pub` items. They are not part of
//! the API and change without notice.
//!
//! The library never owns the process: no global state, no printing, no `exit`.

#![deny(missing_docs)]

pub mod config;
mod error;
mod filter;
mod metrics;
mod replicator;
pub mod status;
mod tls;

// Hidden, `pub` only for strait's own crates (see the crate documentation); each line says
// which of them reaches in.

// Scale-out assignment: `strait members` and tests/handover.rs.
#[doc(hidden)]
pub mod assignment;
// `strait bench` and tests/bench.rs.
#[doc(hidden)]
pub mod bench;
// The Kafka client: the CLI's commands, integration tests, examples/fill.rs.
#[doc(hidden)]
pub mod client;
// Batch planning (split, sequence, re-encode): the protocol conformance tests
// (protocol-tests/planner.rs).
#[doc(hidden)]
pub mod forward;
// In-process brokers: `strait demo` and `strait bench`.
#[doc(hidden)]
pub mod local_broker;
// Apache Kafka clusters for integration tests.
#[doc(hidden)]
pub mod local_kafka;
// MirrorMaker 2 launcher: `strait bench --peer mm2` and tests/mm2_takeover.rs.
#[doc(hidden)]
pub mod local_mm2;
// Mirror topics: `strait mirror`.
#[doc(hidden)]
pub mod mirror;
// MirrorMaker 2 record formats: `strait demo` and tests/mm2_interop.rs.
#[doc(hidden)]
pub mod mm2;
// Remote topic naming: tests/mm2_interop.rs.
#[doc(hidden)]
pub mod naming;
// Metrics, the REST API and its HTTP server: `strait status`, the `http_request` fuzz target.
#[doc(hidden)]
pub mod observe;
// Offset translation: `strait mirror`, tests/mm2_interop.rs, the `offset_map` fuzz target.
#[doc(hidden)]
pub mod offsets;
// The Kafka wire protocol: the CLI, tests/forward.rs, protocol-tests/, benches, the
// `responses` fuzz target.
#[doc(hidden)]
pub mod protocol;
// Record batches: the CLI, tests, benches, examples/fill.rs and the batch and codec fuzz
// targets.
#[doc(hidden)]
pub mod records;
// The replication engine: the CLI's commands, integration tests, examples/fill.rs, the
// `offset_map` fuzz target.
#[doc(hidden)]
pub mod replicate;
// SASL: protocol-tests/sasl.rs and the `scram` fuzz target.
#[doc(hidden)]
pub mod sasl;
// Secrets: `strait status` (its bearer token), protocol-tests/sasl.rs.
#[doc(hidden)]
pub mod secret;
// Plain-text tables: the CLI's output.
#[doc(hidden)]
pub mod table;

pub use error::{Context, Error, ErrorKind, Result};
pub use replicator::{Replicator, ReplicatorBuilder, ReplicatorError};
