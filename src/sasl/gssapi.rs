//! SASL/GSSAPI (Kerberos V5, RFC 4752) as Apache Kafka speaks it: settings and the sans-io
//! parts of the exchange. The Kerberos work itself (tickets from the KDC, the GSS context)
//! is in `krb5`, behind the `gssapi` cargo feature.
//!
//! The exchange on a connection, in SaslAuthenticate rounds (after SaslHandshake `GSSAPI`):
//! 1. GSS context tokens: ours from `gss_init_sec_context` for `<service>@<broker host>` (the
//!    Kerberos principal `kafka/<host>@REALM`), the broker's answers fed back, until the context
//!    is complete; with mutual authentication the last broker token completes it and we send an
//!    empty message (RFC 4752 3.1, as Java's `GssKrb5Client` does).
//! 2. The broker's wrapped 4-byte offer: a bitmask of security layers and a maximum message size.
//! 3. Our wrapped answer: no security layer (`0x01`, Kafka never negotiates one: TLS protects
//!    the stream if anything does), maximum size 0, empty authorization id (the broker then takes
//!    the authenticated principal).
//!
//! The broker's host name is the host part of the address we connected to: the advertised host
//! of the broker, as with Kafka's Java client. Brokers should therefore advertise the name their
//! `kafka/<host>` principal carries.

use std::path::PathBuf;
use std::time::Duration;

/// Kafka's default `sasl.kerberos.service.name`.
pub(crate) const DEFAULT_SERVICE_NAME: &str = "kafka";

/// Where a cluster's Kerberos credentials come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KerberosSource {
    /// A keytab file (JAAS `useKeyTab=true keyTab="..."`): strait asks the KDC for tickets
    /// itself, into a private in-memory credential cache, and for new ones before they expire.
    Keytab(PathBuf),
    /// A ticket cache someone else keeps fresh (`kinit`, `k5start`; JAAS `useTicketCache=true`,
    /// optional `ticketCache="..."`): a cache name such as `FILE:/tmp/krb5cc_1000`, or the
    /// default cache (`KRB5CCNAME`) when `None`. strait re-reads it before its ticket expires.
    TicketCache(Option<String>),
}

/// Kerberos settings of one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KerberosSettings {
    /// The service part of the brokers' principals (`sasl.kerberos.service.name`, default
    /// `kafka`).
    pub service_name: String,
    /// Our principal, e.g. `strait@EXAMPLE.COM`; required with a keytab, optional with a ticket
    /// cache (whose own principal is used then).
    pub principal: Option<String>,
    /// Where the credentials come from.
    pub source: KerberosSource,
}

impl KerberosSettings {
    /// A short description for messages: principal and source, never key material.
    pub fn describe(&self) -> String {
        let who = self.principal.as_deref().unwrap_or("the cache's principal");
        match &self.source {
            KerberosSource::Keytab(p) => format!("{who} (keytab {})", p.display()),
            KerberosSource::TicketCache(Some(c)) => format!("{who} (ticket cache {c})"),
            KerberosSource::TicketCache(None) => format!("{who} (the default ticket cache)"),
        }
    }
}

/// The security-layer bit for "no security layer" (RFC 4752 3.3).
pub const NO_SECURITY_LAYER: u8 = 0x01;

/// A failed GSSAPI step, in one line without secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssapiError {
    /// What failed and why.
    pub message: String,
    /// Whether a later attempt may succeed by itself (the KDC could not be reached).
    pub transient: bool,
}

impl GssapiError {
    /// A permanent failure.
    pub fn new(message: impl Into<String>) -> GssapiError {
        GssapiError {
            message: message.into(),
            transient: false,
        }
    }
}

impl std::fmt::Display for GssapiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Our answer to the broker's unwrapped security-layer `offer` (RFC 4752 3.1): no security
/// layer, maximum message size 0, no authorization id. Fails if the offer is not 4 bytes or
/// does not allow going without a security layer.
pub fn security_layer_answer(offer: &[u8]) -> Result<[u8; 4], GssapiError> {
    if offer.len() != 4 {
        return Err(GssapiError::new(format!(
            "the broker's security-layer offer has {} bytes, RFC 4752 says 4",
            offer.len()
        )));
    }
    if offer[0] & NO_SECURITY_LAYER == 0 {
        return Err(GssapiError::new(format!(
            "the broker requires a SASL security layer (offer 0x{:02x}); strait supports none (use SASL_SSL for protection)",
            offer[0]
        )));
    }
    Ok([NO_SECURITY_LAYER, 0, 0, 0])
}

/// The host part of a broker address `host:port` or `[v6]:port`: the instance of the broker's
/// service principal.
pub fn service_host(addr: &str) -> &str {
    let host = match addr.rsplit_once(':') {
        Some((h, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => addr,
    };
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The GSS-API host-based service name of a broker: `service@host`.
pub fn target_name(service_name: &str, addr: &str) -> String {
    format!("{service_name}@{}", service_host(addr))
}

/// Share of a ticket's lifetime after which strait gets a new one (Kafka's
/// `sasl.kerberos.ticket.renew.window.factor`).
pub const RENEW_WINDOW: f64 = 0.80;

/// How long after getting credentials with `lifetime` left to get new ones: 80 % of it, and
/// never less than a second (a cache about to expire is read again at most once a second).
pub fn renew_after(lifetime: Duration) -> Duration {
    lifetime.mul_f64(RENEW_WINDOW).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_to_the_security_layer_offer() {
        assert_eq!(
            security_layer_answer(&[0x07, 0x00, 0x10, 0x00]),
            Ok([1, 0, 0, 0])
        );
        assert_eq!(
            security_layer_answer(&[0x01, 0xff, 0xff, 0xff]),
            Ok([1, 0, 0, 0])
        );
        let e = security_layer_answer(&[0x04, 0, 0, 0]).unwrap_err();
        assert!(e.message.contains("requires a SASL security layer"), "{e}");
        let e = security_layer_answer(&[1, 0, 0]).unwrap_err();
        assert!(e.message.contains("3 bytes"), "{e}");
        assert!(!e.transient);
    }

    #[test]
    fn service_principal_host_of_a_broker_address() {
        assert_eq!(service_host("localhost:9092"), "localhost");
        assert_eq!(
            service_host("kafka-1.example.com:9093"),
            "kafka-1.example.com"
        );
        assert_eq!(service_host("[::1]:9092"), "::1");
        assert_eq!(service_host("broker"), "broker");
        assert_eq!(target_name("kafka", "localhost:1234"), "kafka@localhost");
    }

    #[test]
    fn renewal_at_80_percent_of_the_lifetime() {
        assert_eq!(
            renew_after(Duration::from_secs(100)),
            Duration::from_secs(80)
        );
        assert_eq!(renew_after(Duration::ZERO), Duration::from_secs(1));
    }

    #[test]
    fn describe_names_principal_and_source() {
        let s = KerberosSettings {
            service_name: DEFAULT_SERVICE_NAME.into(),
            principal: Some("strait@EXAMPLE.COM".into()),
            source: KerberosSource::Keytab("/etc/strait.keytab".into()),
        };
        assert_eq!(
            s.describe(),
            "strait@EXAMPLE.COM (keytab /etc/strait.keytab)"
        );
    }
}
