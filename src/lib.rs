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
//! - [`Metrics`]: the series `/metrics` serves, read in process ([`Replicator::metrics`]).
//! - [`Shutdown`]: the stop signal the engine's loops wait on (a closed channel is a stop).
//! - [`config`]: the configuration model, [`config::load`] and [`config::validate`].
//! - [`status`]: the status documents (the same as the REST API's `/api/status`).
//! - [`ReplicatorError`], and [`Error`] for a cluster's error (it names cluster, broker, topic,
//!   partition and offset).
//!
//! The building blocks beneath it are public modules too, documented but not part of that API:
//! they follow strait's own command (`src/main.rs`, `src/cli/`), its tests, benchmarks and fuzz
//! targets, and change with them.
//! - [`client`]: connections and the per-cluster client; [`protocol`]: the wire protocol;
//!   [`records`]: record batches; [`forward`]: what each fetched batch becomes on the target.
//! - [`replicate`]: the engine behind [`Replicator`]; [`assignment`]: sharing a target's work
//!   among instances; [`mirror`]: mirror topics; [`offsets`]: source-to-target offset maps.
//! - [`mm2`] and [`naming`]: MirrorMaker 2's record formats and topic names; [`sasl`] and
//!   [`secret`]: authentication and the secrets it uses; [`observe`]: metrics and the REST API.
//!
//! # Features
//!
//! - `cli` (default): the `strait` command and what only it runs: clap, tracing-subscriber,
//!   the benchmark (`bench`), the in-process brokers (`local_broker`) and the Apache Kafka and
//!   MirrorMaker 2 launchers (`local_kafka`, `local_mm2`) that the bench, the demo and the
//!   integration tests start. A program embedding strait turns it off:
//!   `strait = { version = "0.1", default-features = false, features = ["aws-msk-iam"] }`.
//! - `aws-msk-iam` (default): OAUTHBEARER tokens for Amazon MSK with IAM access control.
//! - `gssapi` (default): SASL/GSSAPI (Kerberos) through the system's MIT krb5 library.
//!
//! The library never owns the process: no global state, no printing, no `exit`.

#![deny(missing_docs)]

pub mod assignment;
pub mod client;
pub mod config;
mod embedding;
mod error;
mod filter;
pub mod forward;
mod metrics;
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
mod shutdown;
pub mod status;
mod tls;

// The command's own (feature `cli`): `strait bench`, `strait demo`, and the clusters they and
// the integration tests start.
#[cfg(feature = "cli")]
pub mod bench;
#[cfg(feature = "cli")]
pub mod local_broker;
#[cfg(feature = "cli")]
pub mod local_kafka;
#[cfg(feature = "cli")]
pub mod local_mm2;

pub use embedding::{Metrics, MetricsSnapshot, Replicator, ReplicatorBuilder, ReplicatorError};
pub use error::{Context, Error, ErrorKind, Result};
pub use metrics::{MetricSample, MetricValue};
pub use shutdown::Shutdown;
