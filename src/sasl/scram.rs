//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) client side, sans-io.
//!
//! A typestate exchange: [`ScramClient::new`] → [`ScramClient::client_first`] (bytes to send) →
//! [`ScramClient::server_first`] with the broker's answer → [`ScramFinal::client_final`] (bytes
//! to send) → [`ScramFinal::server_final`] with the broker's answer, which checks the server's
//! signature. Inputs from the peer are length-bounded and validated before any work is done; as
//! in Kafka, passwords are used as their UTF-8 bytes (no SASLprep) and no channel binding is
//! offered (`n,,`).

use std::num::NonZeroU32;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use ring::{digest, hmac, pbkdf2};

/// Longest server message accepted.
pub(crate) const MAX_SERVER_MESSAGE: usize = 4096;
/// Fewest PBKDF2 iterations accepted (Kafka's minimum for both mechanisms).
pub(crate) const MIN_ITERATIONS: u32 = 4096;
/// Most PBKDF2 iterations accepted, so a hostile server cannot make us spin.
pub(crate) const MAX_ITERATIONS: u32 = 1_000_000;

/// The hash function of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramHash {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramHash {
    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            ScramHash::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            ScramHash::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }
    fn hmac(self) -> hmac::Algorithm {
        match self {
            ScramHash::Sha256 => hmac::HMAC_SHA256,
            ScramHash::Sha512 => hmac::HMAC_SHA512,
        }
    }
    fn digest(self) -> &'static digest::Algorithm {
        match self {
            ScramHash::Sha256 => &digest::SHA256,
            ScramHash::Sha512 => &digest::SHA512,
        }
    }
    fn len(self) -> usize {
        match self {
            ScramHash::Sha256 => 32,
            ScramHash::Sha512 => 64,
        }
    }
}

/// Why a SCRAM exchange failed. Never carries the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    /// The server's message does not follow RFC 5802.
    #[error("malformed SCRAM server message: {0}")]
    Malformed(String),
    /// The server answered with `e=...`.
    #[error("the broker refused: {0}")]
    Refused(String),
    /// The server's signature does not match: it does not know our password.
    #[error("the server's SCRAM signature does not match (the broker could not prove it knows the credentials)")]
    BadServerSignature,
}

fn malformed(m: impl Into<String>) -> ScramError {
    ScramError::Malformed(m.into())
}

/// `saslname` escaping of RFC 5802: `=` → `=3D`, `,` → `=2C`.
pub(crate) fn escape_username(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

/// A client nonce: 24 random bytes, base64 (printable, no `,`).
pub fn random_nonce() -> Result<String, ScramError> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 24];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| malformed("no system randomness for a nonce"))?;
    Ok(B64.encode(bytes))
}

/// Constant-time equality of two byte strings (the length is not secret).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The first step: holds the client-first message.
pub struct ScramClient {
    hash: ScramHash,
    password: String,
    nonce: String,
    first_bare: String,
}

impl std::fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramClient")
            .field("hash", &self.hash)
            .field("password", &"***")
            .finish()
    }
}

/// The parsed server-first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFirst {
    /// Client nonce followed by the server's part.
    pub nonce: String,
    /// The salt (decoded).
    pub salt: Vec<u8>,
    /// PBKDF2 iterations.
    pub iterations: u32,
}

/// Parses and validates a server-first message against our client nonce.
pub fn parse_server_first(msg: &[u8], client_nonce: &str) -> Result<ServerFirst, ScramError> {
    if msg.len() > MAX_SERVER_MESSAGE {
        return Err(malformed(format!(
            "server-first message of {} bytes (limit {MAX_SERVER_MESSAGE})",
            msg.len()
        )));
    }
    let text = std::str::from_utf8(msg).map_err(|_| malformed("server-first is not UTF-8"))?;
    let mut fields = text.split(',');
    let mut next = |name: &str| -> Result<&str, ScramError> {
        let f = fields
            .next()
            .ok_or_else(|| malformed(format!("server-first lacks `{name}=`")))?;
        f.strip_prefix(name)
            .and_then(|r| r.strip_prefix('='))
            .ok_or_else(|| {
                if let Some(e) = f.strip_prefix("e=") {
                    ScramError::Refused(e.chars().take(200).collect())
                } else {
                    malformed(format!("server-first: expected `{name}=`"))
                }
            })
    };
    if text.starts_with("m=") {
        return Err(malformed(
            "server-first demands an unsupported extension (m=)",
        ));
    }
    let nonce = next("r")?.to_string();
    let salt = next("s")?;
    let iterations = next("i")?;
    if !nonce.starts_with(client_nonce) || nonce.len() <= client_nonce.len() {
        return Err(malformed("server nonce does not extend the client nonce"));
    }
    if !nonce
        .bytes()
        .all(|b| (0x21..=0x7e).contains(&b) && b != b',')
    {
        return Err(malformed(
            "server nonce has characters outside printable ASCII",
        ));
    }
    let salt = B64
        .decode(salt)
        .map_err(|_| malformed("salt is not base64"))?;
    if salt.is_empty() {
        return Err(malformed("empty salt"));
    }
    let iterations: u32 = iterations
        .parse()
        .map_err(|_| malformed("iteration count is not a number"))?;
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        return Err(malformed(format!(
            "iteration count {iterations} outside {MIN_ITERATIONS}..={MAX_ITERATIONS}"
        )));
    }
    Ok(ServerFirst {
        nonce,
        salt,
        iterations,
    })
}

impl ScramClient {
    /// Starts an exchange for `username` with the given client nonce (see [`random_nonce`]).
    pub fn new(hash: ScramHash, username: &str, password: &str, nonce: String) -> ScramClient {
        let first_bare = format!("n={},r={nonce}", escape_username(username));
        ScramClient {
            hash,
            password: password.to_string(),
            nonce,
            first_bare,
        }
    }

    /// The client-first message.
    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.first_bare).into_bytes()
    }

    /// Takes the server-first message; computes the proof.
    pub fn server_first(self, msg: &[u8]) -> Result<ScramFinal, ScramError> {
        let first = parse_server_first(msg, &self.nonce)?;
        // Checked above: iterations >= MIN_ITERATIONS > 0.
        let iterations =
            NonZeroU32::new(first.iterations).ok_or_else(|| malformed("zero iterations"))?;
        let h = self.hash;
        let mut salted = vec![0u8; h.len()];
        pbkdf2::derive(
            h.pbkdf2(),
            iterations,
            &first.salt,
            self.password.as_bytes(),
            &mut salted,
        );
        let salted_key = hmac::Key::new(h.hmac(), &salted);
        let client_key = hmac::sign(&salted_key, b"Client Key");
        let stored_key = digest::digest(h.digest(), client_key.as_ref());
        let server_key = hmac::sign(&salted_key, b"Server Key");
        // The server-first message was checked to be UTF-8.
        let server_first = String::from_utf8_lossy(msg);
        let without_proof = format!("c=biws,r={}", first.nonce);
        let auth_message = format!("{},{server_first},{without_proof}", self.first_bare);
        let client_sig = hmac::sign(
            &hmac::Key::new(h.hmac(), stored_key.as_ref()),
            auth_message.as_bytes(),
        );
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(client_sig.as_ref())
            .map(|(a, b)| a ^ b)
            .collect();
        let server_sig = hmac::sign(
            &hmac::Key::new(h.hmac(), server_key.as_ref()),
            auth_message.as_bytes(),
        );
        Ok(ScramFinal {
            client_final: format!("{without_proof},p={}", B64.encode(proof)).into_bytes(),
            server_signature: server_sig.as_ref().to_vec(),
        })
    }
}

/// The last step: holds the client-final message and the expected server signature.
pub struct ScramFinal {
    client_final: Vec<u8>,
    server_signature: Vec<u8>,
}

impl std::fmt::Debug for ScramFinal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScramFinal")
    }
}

impl ScramFinal {
    /// The client-final message (with the proof).
    pub fn client_final(&self) -> &[u8] {
        &self.client_final
    }

    /// Checks the server-final message: `v=<signature>` must match, `e=<error>` is a refusal.
    pub fn server_final(self, msg: &[u8]) -> Result<(), ScramError> {
        if msg.len() > MAX_SERVER_MESSAGE {
            return Err(malformed(format!(
                "server-final message of {} bytes (limit {MAX_SERVER_MESSAGE})",
                msg.len()
            )));
        }
        let text = std::str::from_utf8(msg).map_err(|_| malformed("server-final is not UTF-8"))?;
        let first = text.split(',').next().unwrap_or_default();
        if let Some(e) = first.strip_prefix("e=") {
            return Err(ScramError::Refused(e.chars().take(200).collect()));
        }
        let v = first
            .strip_prefix("v=")
            .ok_or_else(|| malformed("server-final lacks `v=`"))?;
        let sig = B64
            .decode(v)
            .map_err(|_| malformed("server signature is not base64"))?;
        if constant_time_eq(&sig, &self.server_signature) {
            Ok(())
        } else {
            Err(ScramError::BadServerSignature)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7677 section 3.
    const NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
    const SERVER_FIRST: &str =
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

    #[test]
    fn rfc7677_sha256_vector() {
        let c = ScramClient::new(ScramHash::Sha256, "user", "pencil", NONCE.to_string());
        assert_eq!(c.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let f = c.server_first(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(
            std::str::from_utf8(f.client_final()).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        f.server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap();
    }

    #[test]
    fn wrong_server_signature_is_refused() {
        let c = ScramClient::new(ScramHash::Sha256, "user", "pencil", NONCE.to_string());
        let f = c.server_first(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(
            f.server_final(b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Err(ScramError::BadServerSignature)
        );
        let c = ScramClient::new(ScramHash::Sha256, "user", "other", NONCE.to_string());
        let f = c.server_first(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(
            f.server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
            Err(ScramError::BadServerSignature)
        );
    }

    #[test]
    fn server_error_is_a_refusal() {
        let c = ScramClient::new(ScramHash::Sha512, "user", "pencil", NONCE.to_string());
        let f = c.server_first(SERVER_FIRST.as_bytes()).unwrap();
        assert_eq!(
            f.server_final(b"e=invalid-proof"),
            Err(ScramError::Refused("invalid-proof".into()))
        );
    }

    #[test]
    fn sha512_proof_has_the_right_length_and_differs_from_sha256() {
        let a = ScramClient::new(ScramHash::Sha512, "user", "pencil", NONCE.to_string())
            .server_first(SERVER_FIRST.as_bytes())
            .unwrap();
        let text = std::str::from_utf8(a.client_final()).unwrap();
        let proof = B64.decode(text.rsplit_once(",p=").unwrap().1).unwrap();
        assert_eq!(proof.len(), 64);
        assert_eq!(a.server_signature.len(), 64);
    }

    #[test]
    fn usernames_are_escaped() {
        assert_eq!(escape_username("a=b,c"), "a=3Db=2Cc");
        let c = ScramClient::new(ScramHash::Sha256, "a,b", "p", "xyz".into());
        assert_eq!(c.client_first(), b"n,,n=a=2Cb,r=xyz");
    }

    #[test]
    fn malformed_server_first_messages() {
        let bad: &[&str] = &[
            "",
            "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", // nonce not extended
            "r=someoneElse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            "r=rOprNGfwEbeRWgbNEkqOabc,s=!!!,i=4096",
            "r=rOprNGfwEbeRWgbNEkqOabc,s=,i=4096",
            "r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=12",
            "r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999999",
            "r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ==",
            "s=W22ZaJ0SNY7soEsUEjb6gQ==,r=rOprNGfwEbeRWgbNEkqOabc,i=4096",
            "m=ext,r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        ];
        for m in bad {
            assert!(
                matches!(
                    parse_server_first(m.as_bytes(), NONCE),
                    Err(ScramError::Malformed(_))
                ),
                "{m}"
            );
        }
        let huge = vec![b'a'; MAX_SERVER_MESSAGE + 1];
        assert!(parse_server_first(&huge, NONCE).is_err());
        assert_eq!(
            parse_server_first(b"e=unknown-user", NONCE),
            Err(ScramError::Refused("unknown-user".into()))
        );
    }

    #[test]
    fn nonces_are_random_and_printable() {
        let a = random_nonce().unwrap();
        let b = random_nonce().unwrap();
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c) && c != b','));
    }

    #[test]
    fn debug_hides_the_password() {
        let c = ScramClient::new(ScramHash::Sha256, "user", "pencil", NONCE.to_string());
        assert!(!format!("{c:?}").contains("pencil"));
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
