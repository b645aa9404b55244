//! TLS with rustls (ring provider): client configurations for secure clusters, a server
//! configuration for the HTTP endpoints, and a constant-time bearer-token check.
//!
//! Trust: the PEM CA certificates given (`ssl_ca_file`, or inline PEM), otherwise the system's
//! roots. A client certificate and key (PEM; PKCS#8, PKCS#1 RSA or SEC1 EC, unencrypted) turn on
//! mutual TLS. The name checked against the broker's certificate is the host of the address
//! dialled unless `ssl_server_name` overrides it. Messages about key files never quote them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::secret::Secret;

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
    if let Some(path) = &s.ca_file {
        given.extend(read_certificates(path)?);
    }
    if let Some(text) = &s.ca_pem {
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
            store
                .add(c)
                .map_err(|e| format!("unusable CA certificate: {e}"))?;
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
    let config = match (&s.certificate_file, &s.key_file) {
        (Some(cert), Some(key)) => builder
            .with_client_auth_cert(read_certificates(cert)?, read_private_key(key)?)
            .map_err(|e| format!("client certificate {} and its key: {e}", cert.display()))?,
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => return Err("a client certificate needs its private key file".into()),
        (None, Some(_)) => return Err("a client private key needs its certificate file".into()),
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
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_no_client_auth()
        .with_single_cert(read_certificates(cert)?, read_private_key(key)?)
        .map_err(|e| format!("server certificate {} and its key: {e}", cert.display()))?;
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
