//! TLS with rustls (ring provider): client configurations for secure clusters, a server
//! configuration for the HTTP endpoints, and a constant-time bearer-token check.
//!
//! Trust: a trust store ([`stores`]: JKS, PKCS#12 or PEM), the PEM CA certificates given
//! (`ssl_ca_file`, or inline PEM), otherwise the system's roots. A key store, or a client
//! certificate and key (PEM; PKCS#8, PKCS#1 RSA or SEC1 EC, unencrypted or encrypted PKCS#8
//! with the key password), turn on mutual TLS. The name checked against the broker's
//! certificate is the host of the address dialled unless `ssl_server_name` overrides it.
//! Messages about key files never quote them.
//!
//! Layout: this module builds the rustls configurations; `stores` reads key and trust stores;
//! `jks` is the Java KeyStore reader; `der` reads DER and completes the EC keys Java writes.

mod der;
mod jks;
pub mod stores;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::secret::Secret;

pub use stores::{KeyMaterial, StoreFile, StoreType, StoreTypeChoice};

/// TLS settings of one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM file of CA certificates to trust instead of the system roots.
    pub ca_file: Option<PathBuf>,
    /// PEM CA certificates given inline (mm2 `ssl.truststore.certificates`).
    pub ca_pem: Option<String>,
    /// PEM client certificate chain (mutual TLS).
    pub certificate_file: Option<PathBuf>,
    /// PEM private key of the client certificate.
    pub key_file: Option<PathBuf>,
    /// Name to verify the broker certificates against, instead of each broker's host.
    pub server_name: Option<String>,
    /// A trust store (JKS, PKCS#12 or PEM) of CA certificates to trust instead of the system
    /// roots (`ssl_truststore_location`, mm2 `ssl.truststore.location` of a binary type).
    pub truststore: Option<StoreFile>,
    /// A key store (JKS, PKCS#12 or PEM) with the client key and certificate chain.
    pub keystore: Option<StoreFile>,
    /// The password of the private key in the key store (default: the store password), or of
    /// an encrypted PEM key (`ssl_key_password`, mm2 `ssl.key.password`).
    pub key_password: Option<Secret>,
    /// Which private key of the key store to use when it holds several (`ssl_keystore_alias`).
    pub keystore_alias: Option<String>,
    /// Inline PEM certificate chain (mm2 `ssl.keystore.certificate.chain`).
    pub certificate_pem: Option<String>,
    /// Inline PEM private key (mm2 `ssl.keystore.key`), a secret.
    pub key_pem: Option<Secret>,
}

impl TlsSettings {
    /// Secrets of these settings written in clear in the configuration file, by role.
    pub fn literal_secrets(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let literal = |s: &Option<Secret>| {
            s.as_ref()
                .is_some_and(|s| s.source() == &crate::secret::SecretSource::Literal)
        };
        if literal(&self.keystore.as_ref().and_then(|k| k.password.clone())) {
            out.push("the key store password");
        }
        if literal(&self.key_password) {
            out.push("the key password");
        }
        if literal(&self.truststore.as_ref().and_then(|k| k.password.clone())) {
            out.push("the trust store password");
        }
        out
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn pem_problem(e: &pem::Error) -> String {
    match e {
        pem::Error::Io(io) => io.kind().to_string(),
        pem::Error::NoItemsFound => "no PEM item of the expected kind found".to_string(),
        _ => "malformed PEM".to_string(),
    }
}

/// Reads every certificate of a PEM file.
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            format!(
                "cannot read certificates from {}: {}",
                path.display(),
                pem_problem(&e)
            )
        })?;
    if certs.is_empty() {
        return Err(format!("no PEM certificate in {}", path.display()));
    }
    Ok(certs)
}

/// Reads the first private key of a PEM file.
pub fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        let extra = if matches!(e, pem::Error::NoItemsFound) {
            " (PKCS#8, PKCS#1 RSA or SEC1 EC; encrypted keys are not supported)"
        } else {
            ""
        };
        format!(
            "cannot read a private key from {}: {}{extra}",
            path.display(),
            pem_problem(&e)
        )
    })
}

fn roots(s: &TlsSettings) -> Result<rustls::RootCertStore, String> {
    let mut store = rustls::RootCertStore::empty();
    let mut given = Vec::new();
    if let Some(store) = &s.truststore {
        given.extend(stores::load_trust_store(store)?);
    }
    if let Some(path) = &s.ca_file {
        given.extend(read_certificates(path)?);
    }
    if let Some(text) = &s.ca_pem {
        let text = stores::normalize_inline_pem(text);
        let certs = CertificateDer::pem_slice_iter(text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("inline CA certificates: {}", pem_problem(&e)))?;
        if certs.is_empty() {
            return Err("inline CA certificates: no PEM certificate".to_string());
        }
        given.extend(certs);
    }
    if !given.is_empty() {
        for c in given {
            store.add(c).map_err(|e| match &s.truststore {
                Some(t) => format!(
                    "trust store {}: unusable CA certificate: {e}",
                    t.location.display()
                ),
                None => format!("unusable CA certificate: {e}"),
            })?;
        }
        return Ok(store);
    }
    let native = rustls_native_certs::load_native_certs();
    let (added, _) = store.add_parsable_certificates(native.certs);
    if added == 0 {
        return Err(
            "no system CA certificates found; set ssl_ca_file (TOML) or ssl.truststore.location (mm2)"
                .to_string(),
        );
    }
    Ok(store)
}

/// Builds the rustls client configuration for a cluster. Reads the files now, so a missing
/// or bad file is reported at start-up.
pub fn client_config(s: &TlsSettings) -> Result<Arc<rustls::ClientConfig>, String> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots(s)?);
    let config = match client_identity(s)? {
        Some((what, m)) => builder
            .with_client_auth_cert(m.chain, m.key)
            .map_err(|e| format!("{what}: the certificate does not fit the key: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// A client configuration that trusts no certificate (for HTTP clients that need one but
/// speak plain HTTP).
pub fn no_trust_config() -> Result<rustls::ClientConfig, String> {
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth())
}

/// The client certificate chain and key, if mutual TLS is configured, and what they came from
/// (for messages).
fn client_identity(s: &TlsSettings) -> Result<Option<(String, KeyMaterial)>, String> {
    if let Some(store) = &s.keystore {
        let m =
            stores::load_key_store(store, s.key_password.as_ref(), s.keystore_alias.as_deref())?;
        return Ok(Some((format!("key store {}", store.location.display()), m)));
    }
    if let (Some(chain), Some(key)) = (&s.certificate_pem, &s.key_pem) {
        let chain = stores::normalize_inline_pem(chain);
        let certs = CertificateDer::pem_slice_iter(chain.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("inline certificate chain: {}", pem_problem(&e)))?;
        if certs.is_empty() {
            return Err("inline certificate chain: no PEM certificate".to_string());
        }
        let key = stores::normalize_inline_pem(key.expose());
        let key = stores::pem_private_key(key.as_bytes(), s.key_password.as_ref())
            .map_err(|p| format!("inline private key: {p}"))?;
        return Ok(Some((
            "inline key store".to_string(),
            KeyMaterial { chain: certs, key },
        )));
    }
    match (&s.certificate_file, &s.key_file) {
        (Some(cert), Some(key)) => {
            let chain = read_certificates(cert)?;
            let key = match &s.key_password {
                None => read_private_key(key)?,
                Some(_) => {
                    let data = std::fs::read(key).map_err(|e| {
                        format!(
                            "cannot read a private key from {}: {}",
                            key.display(),
                            e.kind()
                        )
                    })?;
                    stores::pem_private_key(&data, s.key_password.as_ref())
                        .map_err(|p| format!("{}: {p}", key.display()))?
                }
            };
            Ok(Some((
                format!("client certificate {}", cert.display()),
                KeyMaterial { chain, key },
            )))
        }
        (None, None) => Ok(None),
        (Some(_), None) => Err("a client certificate needs its private key file".into()),
        (None, Some(_)) => Err("a client private key needs its certificate file".into()),
    }
}

/// The name to verify a broker at `addr` (`host:port`) against.
pub fn server_name(addr: &str, override_name: Option<&str>) -> Result<ServerName<'static>, String> {
    let host = match override_name {
        Some(n) => n,
        None => {
            let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
            host.trim_start_matches('[').trim_end_matches(']')
        }
    };
    ServerName::try_from(host.to_string())
        .map_err(|_| format!("`{host}` is not a valid TLS server name"))
}

/// Builds a rustls server configuration from a PEM certificate chain and key (for the HTTP
/// endpoints).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let m = KeyMaterial {
        chain: read_certificates(cert)?,
        key: read_private_key(key)?,
    };
    server_config_with(m, &format!("server certificate {}", cert.display()))
}

/// Builds a rustls server configuration from a key store (JKS, PKCS#12 or PEM), for the HTTP
/// endpoints; `key_password` and `alias` as for a cluster's key store.
pub fn server_config_from_store(
    store: &StoreFile,
    key_password: Option<&Secret>,
    alias: Option<&str>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let m = stores::load_key_store(store, key_password, alias)?;
    server_config_with(m, &format!("key store {}", store.location.display()))
}

fn server_config_with(m: KeyMaterial, what: &str) -> Result<Arc<rustls::ServerConfig>, String> {
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(m.chain, m.key)
        .map_err(|e| format!("{what}: the certificate does not fit the key: {e}"))?;
    Ok(Arc::new(config))
}

/// Whether an HTTP `Authorization` header value carries `token` as `Bearer <token>`. Compares
/// SHA-256 digests in constant time, so neither the token nor its length leaks through timing.
pub fn bearer_token_matches(authorization: Option<&str>, token: &Secret) -> bool {
    let Some(value) = authorization else {
        return false;
    };
    let value = value.trim();
    let presented = match value.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        _ => return false,
    };
    token_matches(presented, token)
}

/// Whether `presented` is the token, compared in constant time.
pub fn token_matches(presented: &str, token: &Secret) -> bool {
    let a = ring::digest::digest(&ring::digest::SHA256, presented.as_bytes());
    let b = ring::digest::digest(&ring::digest::SHA256, token.expose().as_bytes());
    crate::sasl::scram::constant_time_eq(a.as_ref(), b.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("strait-tls-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    fn self_signed() -> (String, String) {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        (c.cert.pem(), c.signing_key.serialize_pem())
    }

    #[test]
    fn bearer_tokens() {
        let t = Secret::literal("tok-123");
        assert!(bearer_token_matches(Some("Bearer tok-123"), &t));
        assert!(bearer_token_matches(Some("bearer  tok-123 "), &t));
        assert!(!bearer_token_matches(Some("Bearer tok-124"), &t));
        assert!(!bearer_token_matches(Some("Bearer tok-1234"), &t));
        assert!(!bearer_token_matches(Some("Basic tok-123"), &t));
        assert!(!bearer_token_matches(Some("tok-123"), &t));
        assert!(!bearer_token_matches(None, &t));
    }

    #[test]
    fn server_config_from_files() {
        let (cert, key) = self_signed();
        let c = temp("srv.crt", &cert);
        let k = temp("srv.key", &key);
        assert!(server_config(&c, &k).is_ok());
        let e = server_config(&c, &c).unwrap_err();
        assert!(e.contains("private key"), "{e}");
        let e = server_config(Path::new("/nonexistent/x.crt"), &k).unwrap_err();
        assert!(e.contains("/nonexistent/x.crt"), "{e}");
    }

    #[test]
    fn key_errors_do_not_quote_the_file() {
        let k = temp(
            "garbage.key",
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==!!\n-----END PRIVATE KEY-----\n",
        );
        let e = read_private_key(&k).unwrap_err();
        assert!(!e.contains("c2VjcmV0"), "{e}");
    }

    #[test]
    fn client_config_with_ca_and_mtls() {
        let (cert, key) = self_signed();
        let c = temp("cli.crt", &cert);
        let k = temp("cli.key", &key);
        let s = TlsSettings {
            ca_file: Some(c.clone()),
            certificate_file: Some(c.clone()),
            key_file: Some(k),
            ..TlsSettings::default()
        };
        let cfg = client_config(&s).unwrap();
        assert!(cfg.client_auth_cert_resolver.has_certs());
        let s = TlsSettings {
            ca_pem: Some(cert.clone()),
            ..TlsSettings::default()
        };
        assert!(client_config(&s).is_ok());
        let s = TlsSettings {
            ca_file: Some(c.clone()),
            certificate_file: Some(c),
            ..TlsSettings::default()
        };
        assert!(client_config(&s).unwrap_err().contains("private key"));
    }

    #[test]
    fn inline_pem_key_store_and_encrypted_key_file() {
        let (cert, key) = self_signed();
        let s = TlsSettings {
            ca_pem: Some(cert.clone()),
            certificate_pem: Some(cert.clone()),
            key_pem: Some(Secret::literal(&key)),
            ..TlsSettings::default()
        };
        assert!(client_config(&s)
            .unwrap()
            .client_auth_cert_resolver
            .has_certs());
        let s = TlsSettings {
            ca_pem: Some(cert.clone()),
            certificate_pem: Some(cert.clone()),
            key_pem: Some(Secret::literal("-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n")),
            ..TlsSettings::default()
        };
        let e = client_config(&s).unwrap_err();
        assert!(
            e.starts_with("inline private key:") && !e.contains("c2VjcmV0"),
            "{e}"
        );
        // A key password on a PEM key file that is not encrypted is not needed, and harmless.
        let c = temp("pw.crt", &cert);
        let k = temp("pw.key", &key);
        let s = TlsSettings {
            ca_file: Some(c.clone()),
            certificate_file: Some(c),
            key_file: Some(k),
            key_password: Some(Secret::literal("unused")),
            ..TlsSettings::default()
        };
        assert!(client_config(&s).is_ok());
    }

    #[test]
    fn server_names() {
        assert_eq!(
            server_name("broker1.example.com:9093", None).unwrap(),
            ServerName::try_from("broker1.example.com").unwrap()
        );
        assert_eq!(
            server_name("127.0.0.1:9093", None).unwrap(),
            ServerName::try_from("127.0.0.1").unwrap()
        );
        assert_eq!(
            server_name("[::1]:9093", None).unwrap(),
            ServerName::try_from("::1").unwrap()
        );
        assert_eq!(
            server_name("10.0.0.1:9093", Some("kafka.internal")).unwrap(),
            ServerName::try_from("kafka.internal").unwrap()
        );
        assert!(server_name("x:1", Some("bad name!")).is_err());
    }
}
