//! Errors with the context an operator needs: cluster, broker, topic, partition and offset.

use std::fmt;

use crate::protocol::error_code;
use crate::protocol::wire::WireError;
use crate::records::RecordsError;

/// Where an error happened. Every field is optional; [`Error`]'s message names those set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Context {
    /// Cluster alias (or bootstrap address when no alias is known).
    pub cluster: Option<String>,
    /// Broker address, with node id when known.
    pub broker: Option<String>,
    /// Topic.
    pub topic: Option<String>,
    /// Partition.
    pub partition: Option<i32>,
    /// Offset.
    pub offset: Option<i64>,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A socket error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// No answer in time.
    #[error("timed out after {0:?} ({1})")]
    Timeout(std::time::Duration, &'static str),
    /// The connection closed while a request was outstanding.
    #[error("connection closed: {0}")]
    Closed(String),
    /// Bytes that do not parse as the expected response.
    #[error("malformed response: {0}")]
    Wire(#[from] WireError),
    /// Bad record data.
    #[error("{0}")]
    Records(#[from] RecordsError),
    /// The broker answered with an error code.
    #[error("broker error {name} ({code}){}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Broker {
        /// Kafka error code.
        code: i16,
        /// Its name.
        name: String,
        /// The broker's message, if any.
        message: Option<String>,
    },
    /// The peer does not speak a version of an API we need.
    #[error("broker does not support {api} in versions {ours} (it offers {theirs})")]
    UnsupportedVersion {
        /// API name.
        api: String,
        /// Our range.
        ours: String,
        /// The broker's range, or "none".
        theirs: String,
    },
    /// The peer broke the protocol in a way a parser cannot name.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Something a caller asked for that does not exist or cannot be done.
    #[error("{0}")]
    Invalid(String),
    /// TLS could not be set up or the handshake failed (an untrusted certificate, a name
    /// mismatch, a listener that does not speak TLS). Not retried.
    #[error("TLS handshake failed: {0}")]
    Tls(String),
    /// The broker refused our SASL credentials or mechanism. Not retried.
    #[error("SASL authentication failed: {0}")]
    Auth(String),
    /// Credentials could not be obtained from an identity service (an OIDC token endpoint
    /// down, slow or refusing the client; a signer without AWS credentials). Retried with a
    /// backoff: the service may come back or be fixed.
    #[error("cannot obtain credentials: {0}")]
    Credentials(String),
}

/// An error with its context.
#[derive(Debug)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Where (boxed to keep `Result`s small).
    pub context: Box<Context>,
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with no context yet.
    pub fn new(kind: impl Into<ErrorKind>) -> Error {
        Error {
            kind: kind.into(),
            context: Box::default(),
        }
    }
    /// A broker error code as an error.
    pub fn broker(code: i16, message: Option<String>) -> Error {
        Error::new(ErrorKind::Broker {
            code,
            name: error_code::name(code),
            message,
        })
    }
    /// An `Invalid` error.
    pub fn invalid(msg: impl Into<String>) -> Error {
        Error::new(ErrorKind::Invalid(msg.into()))
    }
    /// Sets the cluster unless already set.
    pub fn cluster(mut self, c: &str) -> Error {
        self.context.cluster.get_or_insert_with(|| c.to_string());
        self
    }
    /// Sets the broker unless already set.
    pub fn broker_addr(mut self, b: &str) -> Error {
        self.context.broker.get_or_insert_with(|| b.to_string());
        self
    }
    /// Sets topic and partition unless already set.
    pub fn partition(mut self, topic: &str, partition: i32) -> Error {
        self.context.topic.get_or_insert_with(|| topic.to_string());
        self.context.partition.get_or_insert(partition);
        self
    }
    /// Sets the topic unless already set.
    pub fn topic(mut self, topic: &str) -> Error {
        self.context.topic.get_or_insert_with(|| topic.to_string());
        self
    }
    /// Sets the offset unless already set.
    pub fn offset(mut self, offset: i64) -> Error {
        self.context.offset.get_or_insert(offset);
        self
    }
    /// The broker error code, if this is a broker error.
    pub fn code(&self) -> Option<i16> {
        match self.kind {
            ErrorKind::Broker { code, .. } => Some(code),
            _ => None,
        }
    }
    /// Whether this is a TLS or authentication failure, which retrying cannot cure.
    pub fn is_security(&self) -> bool {
        matches!(self.kind, ErrorKind::Tls(_) | ErrorKind::Auth(_))
    }
    /// Whether retrying (after a metadata refresh) may succeed.
    pub fn is_retriable(&self) -> bool {
        match &self.kind {
            ErrorKind::Broker { code, .. } => error_code::is_retriable(*code),
            ErrorKind::Io(_)
            | ErrorKind::Timeout(..)
            | ErrorKind::Closed(_)
            | ErrorKind::Credentials(_) => true,
            _ => false,
        }
    }
}

impl<E: Into<ErrorKind>> From<E> for Error {
    fn from(e: E) -> Error {
        Error::new(e)
    }
}

impl Context {
    /// A partition of a cluster: cluster, topic and partition set.
    pub fn of_partition(cluster: &str, topic: &str, partition: i32) -> Context {
        Context {
            cluster: Some(cluster.to_string()),
            topic: Some(topic.to_string()),
            partition: Some(partition),
            ..Context::default()
        }
    }

    /// With the offset set.
    pub fn at(mut self, offset: i64) -> Context {
        self.offset = Some(offset);
        self
    }

    /// One line: the context, then `what`, as an [`Error`] with this context reads
    /// (`cluster a, topic t, partition 0, offset 5: what`); `what` alone when nothing is set.
    pub fn line(&self, what: impl fmt::Display) -> String {
        if self.is_empty() {
            what.to_string()
        } else {
            format!("{self}: {what}")
        }
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self == &Context::default()
    }
}

/// The fields set, in the order cluster, broker, topic, partition, offset:
/// `cluster a, topic t, partition 0, offset 5`.
impl fmt::Display for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self;
        let mut parts = Vec::new();
        if let Some(v) = &c.cluster {
            parts.push(format!("cluster {v}"));
        }
        if let Some(v) = &c.broker {
            parts.push(format!("broker {v}"));
        }
        if let Some(v) = &c.topic {
            parts.push(format!("topic {v}"));
        }
        if let Some(v) = c.partition {
            parts.push(format!("partition {v}"));
        }
        if let Some(v) = c.offset {
            parts.push(format!("offset {v}"));
        }
        f.write_str(&parts.join(", "))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.context.is_empty() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{}: {}", self.context, self.kind)
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.kind.source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_and_a_context_line_read_the_same() {
        let e = Error::invalid("partition stopped")
            .cluster("a")
            .partition("orders", 3)
            .offset(150);
        let line = Context::of_partition("a", "orders", 3)
            .at(150)
            .line("partition stopped");
        assert_eq!(
            e.to_string(),
            "cluster a, topic orders, partition 3, offset 150: partition stopped"
        );
        assert_eq!(line, e.to_string());
        assert_eq!(
            Error::invalid("x").cluster("b").topic("t").to_string(),
            "cluster b, topic t: x"
        );
        assert_eq!(Error::invalid("bare").to_string(), "bare");
        assert_eq!(Context::default().line("bare"), "bare");
    }
}
