//! The byte stream under a connection: plain TCP or TLS over TCP (rustls), split into a read
//! half for the reader task and a write half for requests. Both halves keep vectored writes
//! (`is_write_vectored` is true for TCP and for tokio-rustls streams).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::error::{Error, ErrorKind, Result};

/// The read half of a transport.
pub(crate) type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
/// The write half of a transport.
pub(crate) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// TLS client settings for a cluster's connections.
#[derive(Clone)]
pub struct TlsClient {
    /// The rustls configuration (roots, client certificate).
    pub config: Arc<rustls::ClientConfig>,
    /// Name verified instead of each broker's host, if set.
    pub server_name: Option<String>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// Opens a TCP connection to `addr` and, with `tls`, completes a TLS handshake, all within
/// `timeout`. A handshake the peer refuses or a certificate that does not verify is an
/// [`ErrorKind::Tls`] error; socket errors stay [`ErrorKind::Io`].
pub async fn connect(
    addr: &str,
    timeout: Duration,
    tls: Option<&TlsClient>,
) -> Result<(ReadHalf, WriteHalf)> {
    let work = async {
        let stream = TcpStream::connect(addr).await.map_err(Error::from)?;
        stream.set_nodelay(true).map_err(Error::from)?;
        match tls {
            None => {
                let (r, w) = stream.into_split();
                Ok((Box::new(r) as ReadHalf, Box::new(w) as WriteHalf))
            }
            Some(tls) => {
                let name = crate::tls::server_name(addr, tls.server_name.as_deref())
                    .map_err(|e| Error::new(ErrorKind::Tls(e)))?;
                let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
                let stream = connector
                    .connect(name, stream)
                    .await
                    .map_err(handshake_error)?;
                let (r, w) = tokio::io::split(stream);
                Ok((Box::new(r) as ReadHalf, Box::new(w) as WriteHalf))
            }
        }
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| Error::new(ErrorKind::Timeout(timeout, "connect")))?
}

/// A handshake error: rustls' own errors (carried as `InvalidData`) and a peer that hangs up
/// or resets mid-handshake (a plaintext listener does that to a TLS hello) are TLS failures;
/// other socket errors are ordinary I/O errors.
fn handshake_error(e: std::io::Error) -> Error {
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return Error::new(ErrorKind::Tls(inner.to_string()));
    }
    match e.kind() {
        std::io::ErrorKind::InvalidData => Error::new(ErrorKind::Tls(e.to_string())),
        std::io::ErrorKind::UnexpectedEof
        | std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::ConnectionAborted => Error::new(ErrorKind::Tls(format!(
            "the broker closed the connection during the handshake ({}): is this a TLS listener, and does it want a client certificate?",
            e.kind()
        ))),
        _ => Error::from(e),
    }
}
