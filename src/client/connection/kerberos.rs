//! The SASL/GSSAPI rounds of a connection (RFC 4752 as Apache Kafka runs it; see
//! [`crate::sasl::gssapi`]): GSS context tokens until the context is complete, then the
//! broker's wrapped security-layer offer and our wrapped answer.
//!
//! Failures are one line naming the mechanism. A KDC that cannot be reached is a credentials
//! error (retried with a backoff: the KDC may come back); anything else is an authentication
//! failure (not retried).

use super::{Connection, WriteHalf};
use crate::error::{Error, ErrorKind, Result};
use crate::sasl::gssapi::{GssapiError, KerberosSettings};

/// Most SaslAuthenticate rounds a GSSAPI exchange may take (Kerberos needs 3).
#[cfg(feature = "gssapi")]
const MAX_ROUNDS: usize = 8;

impl Connection {
    /// Runs the GSSAPI exchange after SaslHandshake; returns the session lifetime (ms, 0 =
    /// none). The Kerberos calls run on tokio's blocking pool.
    #[cfg(feature = "gssapi")]
    pub(super) async fn gssapi_authenticate(
        &self,
        w: &mut WriteHalf,
        settings: &KerberosSettings,
    ) -> Result<i64> {
        use crate::sasl::krb5::GssExchange;
        let (mut exchange, mut token) = GssExchange::start(settings, &self.addr)
            .await
            .map_err(gssapi_error)?;
        let mut rounds = 0;
        let offer = loop {
            rounds += 1;
            if rounds > MAX_ROUNDS {
                return Err(gssapi_error(GssapiError::new(format!(
                    "no security-layer offer from the broker after {MAX_ROUNDS} rounds"
                ))));
            }
            let (reply, _) = self
                .sasl_authenticate(w, token)
                .await
                .map_err(name_mechanism)?;
            if exchange.is_complete() {
                if reply.is_empty() {
                    token = Vec::new();
                    continue;
                }
                break reply;
            }
            (exchange, token) = exchange.step(reply.to_vec()).await.map_err(gssapi_error)?;
        };
        let answer = exchange.answer_offer(&offer).map_err(gssapi_error)?;
        let (_, lifetime) = self
            .sasl_authenticate(w, answer)
            .await
            .map_err(name_mechanism)?;
        tracing::debug!(broker = %self.addr, principal = %settings.describe(), "authenticated with Kerberos");
        Ok(lifetime)
    }

    /// Without the `gssapi` feature: an error saying so.
    #[cfg(not(feature = "gssapi"))]
    pub(super) async fn gssapi_authenticate(
        &self,
        _w: &mut WriteHalf,
        _settings: &KerberosSettings,
    ) -> Result<i64> {
        Err(gssapi_error(GssapiError::new(
            "this strait was built without the `gssapi` feature (Kerberos)",
        )))
    }
}

/// A GSSAPI failure as an error: credentials (retried) when the KDC could not be reached,
/// authentication (not retried) otherwise.
fn gssapi_error(e: GssapiError) -> Error {
    if e.transient {
        Error::new(ErrorKind::Credentials(format!("GSSAPI: {e}")))
    } else {
        Error::new(ErrorKind::Auth(format!("GSSAPI: {e}")))
    }
}

/// The broker's refusal, with the mechanism named.
#[cfg(feature = "gssapi")]
fn name_mechanism(e: Error) -> Error {
    match e.kind {
        ErrorKind::Auth(m) => Error {
            kind: ErrorKind::Auth(format!("GSSAPI: {m}")),
            context: e.context,
        },
        _ => e,
    }
}
