//! SASL authentication, sans-io: mechanisms, the PLAIN token, SCRAM ([`scram`]), OAUTHBEARER
//! ([`oauth`]: the token, where it comes from, when to refresh it), GSSAPI settings and message
//! checks ([`gssapi`]; the Kerberos calls are in `krb5`, behind the `gssapi` cargo feature),
//! and when to re-authenticate (KIP-368).
//!
//! The exchange on a connection (in `client::connection`) follows Kafka: ApiVersions, then
//! SaslHandshake v1 naming the mechanism, then SaslAuthenticate rounds carrying the mechanism's
//! messages; a SaslAuthenticate answer v1+ may carry `session_lifetime_ms`, after which the
//! broker closes the connection unless it re-authenticated.

pub mod gssapi;
#[cfg(feature = "gssapi")]
pub mod krb5;
pub mod oauth;
pub mod scram;

use std::time::Duration;

use crate::secret::Secret;

/// A SASL mechanism strait implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// `PLAIN` (RFC 4616): user name and password in one message. Use over TLS only.
    Plain,
    /// `SCRAM-SHA-256` (RFC 7677).
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628, KIP-255): a bearer token from an OIDC token endpoint (KIP-768)
    /// or an AWS MSK IAM signer.
    OAuthBearer,
    /// `GSSAPI` (RFC 4752): Kerberos V5, tickets from a keytab or a ticket cache (needs the
    /// `gssapi` cargo feature).
    Gssapi,
}

impl SaslMechanism {
    /// Every mechanism.
    pub const ALL: [SaslMechanism; 5] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OAuthBearer,
        SaslMechanism::Gssapi,
    ];

    /// Kafka's name (`sasl.mechanism`).
    pub fn as_str(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
            SaslMechanism::Gssapi => "GSSAPI",
        }
    }

    /// Parses Kafka's name, ignoring ASCII case.
    pub fn parse(s: &str) -> Option<SaslMechanism> {
        let s = s.trim();
        SaslMechanism::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s))
    }

    /// The names, for messages.
    pub fn allowed() -> String {
        SaslMechanism::ALL.map(|m| m.as_str()).join(", ")
    }

    /// Whether the mechanism authenticates with a user name and password.
    pub fn uses_password(self) -> bool {
        matches!(
            self,
            SaslMechanism::Plain | SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512
        )
    }
}

/// Credentials for one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSettings {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// What the mechanism authenticates with.
    pub credentials: SaslCredentials,
}

impl SaslSettings {
    /// PLAIN or SCRAM settings with a user name and password.
    pub fn password(mechanism: SaslMechanism, username: &str, password: Secret) -> SaslSettings {
        SaslSettings {
            mechanism,
            credentials: SaslCredentials::Password {
                username: username.to_string(),
                password,
            },
        }
    }

    /// The secrets of these settings that were written in clear in the configuration, by
    /// role (never by value).
    pub fn literal_secrets(&self) -> Vec<&'static str> {
        let literal = |s: &Secret| s.source() == &crate::secret::SecretSource::Literal;
        match &self.credentials {
            SaslCredentials::Password { password, .. } if literal(password) => {
                vec!["the SASL password"]
            }
            SaslCredentials::OAuthBearer(o) => match &o.provider {
                oauth::TokenProvider::ClientCredentials(c) if literal(&c.client_secret) => {
                    vec!["the OAUTHBEARER client secret"]
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
}

/// What a SASL mechanism authenticates with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslCredentials {
    /// PLAIN and SCRAM: a user name and password.
    Password {
        /// User name.
        username: String,
        /// Password (prints as `***`).
        password: Secret,
    },
    /// OAUTHBEARER: where tokens come from, the SASL extensions, and the cluster's token cache.
    OAuthBearer(Box<oauth::OAuthSettings>),
    /// GSSAPI: the Kerberos principal, where its tickets come from, and the brokers' service
    /// name.
    Kerberos(gssapi::KerberosSettings),
}

/// The PLAIN message: `authzid NUL authcid NUL password`, with an empty authzid.
pub(crate) fn plain_token(username: &str, password: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(username.len() + password.len() + 2);
    out.push(0);
    out.extend_from_slice(username.as_bytes());
    out.push(0);
    out.extend_from_slice(password.as_bytes());
    out
}

/// How long after a successful authentication to re-authenticate, given the broker's
/// `session_lifetime_ms` and a random `fraction` in `[0, 1)`: like Kafka's clients, at a random
/// point between 85 % and 95 % of the lifetime. `None` when the broker set no lifetime.
pub(crate) fn reauth_delay(session_lifetime_ms: i64, fraction: f64) -> Option<Duration> {
    if session_lifetime_ms <= 0 {
        return None;
    }
    let fraction = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let share = 0.85 + 0.10 * fraction;
    let ms = (session_lifetime_ms as f64 * share).floor() as u64;
    Some(Duration::from_millis(ms))
}

/// A random fraction in `[0, 1)` from the system's randomness (0.5 if it is unavailable).
pub(crate) fn random_fraction() -> f64 {
    use ring::rand::SecureRandom as _;
    let mut b = [0u8; 4];
    match ring::rand::SystemRandom::new().fill(&mut b) {
        Ok(()) => u32::from_be_bytes(b) as f64 / (u32::MAX as f64 + 1.0),
        Err(_) => 0.5,
    }
}

/// Whether re-authentication is due at `now` given the deadline set after the last one.
pub(crate) fn reauth_due(deadline: Option<std::time::Instant>, now: std::time::Instant) -> bool {
    deadline.is_some_and(|d| now >= d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn mechanism_names() {
        assert_eq!(
            SaslMechanism::parse("scram-sha-512"),
            Some(SaslMechanism::ScramSha512)
        );
        assert_eq!(SaslMechanism::parse(" PLAIN "), Some(SaslMechanism::Plain));
        assert_eq!(
            SaslMechanism::parse("oauthbearer"),
            Some(SaslMechanism::OAuthBearer)
        );
        assert_eq!(SaslMechanism::parse("gssapi"), Some(SaslMechanism::Gssapi));
        assert_eq!(SaslMechanism::parse("NTLM"), None);
        assert_eq!(
            SaslMechanism::allowed(),
            "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI"
        );
    }

    #[test]
    fn plain_token_bytes() {
        assert_eq!(plain_token("user", "pass"), b"\0user\0pass");
    }

    #[test]
    fn reauth_between_85_and_95_percent() {
        assert_eq!(reauth_delay(0, 0.5), None);
        assert_eq!(reauth_delay(-1, 0.5), None);
        assert_eq!(
            reauth_delay(10_000, 0.0),
            Some(Duration::from_millis(8_500))
        );
        assert_eq!(
            reauth_delay(10_000, 0.5),
            Some(Duration::from_millis(9_000))
        );
        assert_eq!(
            reauth_delay(10_000, 0.999_9),
            Some(Duration::from_millis(9_499))
        );
        assert_eq!(
            reauth_delay(10_000, 7.0),
            Some(Duration::from_millis(9_500))
        );
        assert_eq!(
            reauth_delay(10_000, f64::NAN),
            Some(Duration::from_millis(8_500))
        );
        for _ in 0..100 {
            let f = random_fraction();
            assert!((0.0..1.0).contains(&f));
            let d = reauth_delay(60_000, f).unwrap();
            assert!(d >= Duration::from_millis(51_000) && d < Duration::from_millis(57_000));
        }
    }

    #[test]
    fn reauth_due_only_after_the_deadline() {
        let now = Instant::now();
        assert!(!reauth_due(None, now));
        assert!(!reauth_due(Some(now + Duration::from_secs(1)), now));
        assert!(reauth_due(Some(now), now));
        assert!(reauth_due(Some(now), now + Duration::from_millis(1)));
    }

    #[test]
    fn settings_debug_hides_the_password() {
        let s =
            SaslSettings::password(SaslMechanism::Plain, "alice", Secret::literal("wonderland"));
        let d = format!("{s:?}");
        assert!(d.contains("alice") && !d.contains("wonderland"), "{d}");
    }
}
