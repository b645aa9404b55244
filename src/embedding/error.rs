//! [`ReplicatorError`]: what an embedder matches on when a [`Replicator`](super::Replicator)
//! does not start or does not stop cleanly.

use crate::config::ConfigError;
use crate::error::Error;

/// Why a [`Replicator`](super::Replicator) could not start, or why its flows ended with an
/// error.
///
/// Each message is one line naming what it is about: the file and key of a configuration
/// error, the address of the HTTP listener, the cluster (and topic, partition, offset where
/// they apply) of a cluster's error.
///
/// ```no_run
/// # async fn embed() {
/// use strait::{Replicator, ReplicatorError};
///
/// match Replicator::builder_from_file("strait.toml").and_then(|b| b.start()) {
///     Ok(replicator) => {
///         if let Err(ReplicatorError::Auth(e)) = replicator.shutdown().await {
///             eprintln!("credentials refused: {e}");
///         }
///     }
///     Err(ReplicatorError::Config(e)) => eprintln!("fix {} in {}: {}", e.key, e.origin, e.problem),
///     Err(ReplicatorError::UnknownFlow { name, known, .. }) => {
///         eprintln!("no flow {name}; configured: {}", known.join(", "))
///     }
///     Err(ReplicatorError::Http { addr, .. }) => eprintln!("port taken: {addr}"),
///     Err(other) => eprintln!("{other}"),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicatorError {
    /// The configuration is invalid: [`ConfigError`] names the file, the key and what is
    /// allowed. Also a file that cannot be read (key `file`) and a configuration without an
    /// enabled flow (key `flows`).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// [`only_flow`](super::ReplicatorBuilder::only_flow) named a flow the configuration does
    /// not have.
    #[error("{origin}: no flow named {name:?} (flows: {})", known.join(", "))]
    UnknownFlow {
        /// The configuration file.
        origin: String,
        /// The name asked for.
        name: String,
        /// The flows the configuration has (`source->target`).
        known: Vec<String>,
    },
    /// The HTTP listener (status page, `/metrics`, REST API) could not be set up: the address
    /// cannot be bound, or its TLS certificate or key cannot be loaded.
    #[error("{origin}: http = {addr:?}: {problem}")]
    Http {
        /// The configuration file.
        origin: String,
        /// The listen address asked for.
        addr: String,
        /// What failed (for example `cannot listen: Address already in use`).
        problem: String,
    },
    /// A cluster refused strait: a TLS handshake failed or its SASL credentials were refused.
    /// Retrying cannot cure it; the error names the cluster.
    #[error(transparent)]
    Auth(Error),
    /// A cluster cannot be used: its TLS files cannot be read at start, or a flow stopped on
    /// an error from it. The error names the cluster, and the topic, partition and offset
    /// where they apply. (A cluster that does not answer yet is retried in the background, and
    /// shows as not connected in the status; it is not an error.)
    #[error(transparent)]
    Cluster(Error),
    /// Stopping failed: the task running the flows panicked or was cancelled.
    #[error("shutdown failed: {0}")]
    Shutdown(String),
}

impl ReplicatorError {
    /// A flow's error, as [`Auth`](Self::Auth) when a cluster refused strait, else
    /// [`Cluster`](Self::Cluster).
    pub(crate) fn from_flow(e: Error) -> ReplicatorError {
        if e.is_security() {
            ReplicatorError::Auth(e)
        } else {
            ReplicatorError::Cluster(e)
        }
    }

    /// As a [`strait::Error`](Error) for strait's own command, with the same message (a
    /// cluster's error kept as is).
    pub(crate) fn into_error(self) -> Error {
        match self {
            ReplicatorError::Auth(e) | ReplicatorError::Cluster(e) => e,
            other => Error::invalid(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn flow_errors_are_told_apart_and_keep_their_message() {
        let refused = Error::new(ErrorKind::Auth("bad password".into())).cluster("a");
        let e = ReplicatorError::from_flow(refused);
        assert!(matches!(e, ReplicatorError::Auth(_)));
        assert_eq!(
            e.to_string(),
            "cluster a: SASL authentication failed: bad password"
        );
        let lost = Error::broker(3, None).cluster("b").partition("orders", 2);
        let e = ReplicatorError::from_flow(lost);
        assert!(matches!(e, ReplicatorError::Cluster(_)));
        assert_eq!(e.into_error().code(), Some(3));
    }

    #[test]
    fn messages_name_the_file_and_what_was_asked() {
        let e = ReplicatorError::UnknownFlow {
            origin: "g.toml".into(),
            name: "a->c".into(),
            known: vec!["a->b".into(), "b->a".into()],
        };
        assert_eq!(
            e.to_string(),
            "g.toml: no flow named \"a->c\" (flows: a->b, b->a)"
        );
        let e = ReplicatorError::Http {
            origin: "g.toml".into(),
            addr: "127.0.0.1:1".into(),
            problem: "cannot listen: denied".into(),
        };
        assert_eq!(
            e.to_string(),
            "g.toml: http = \"127.0.0.1:1\": cannot listen: denied"
        );
    }
}
