//! Test certificates generated at test time (rcgen): a CA, a server certificate for
//! 127.0.0.1/localhost signed by it, a client certificate signed by it, and an unrelated CA.
//! Keys are PKCS#8 PEM (what Kafka's PEM key store and strait read). Nothing is committed.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// PEM files of a generated test PKI, in their own directory.
#[derive(Debug, Clone)]
pub struct TestPki {
    pub dir: PathBuf,
    /// The CA that signed the server and client certificates.
    pub ca_cert: PathBuf,
    /// Server certificate for `127.0.0.1` and `localhost`.
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// Client certificate (CN `strait-client`) for mutual TLS.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    /// A CA that signed nothing here: trusting only it must fail the handshake.
    pub other_ca_cert: PathBuf,
}

fn new_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("CA key")).expect("CA cert")
}

fn leaf(issuer: &CertifiedIssuer<'static, KeyPair>, names: &[&str], cn: &str) -> (String, String) {
    let mut params =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("leaf params");
    params.distinguished_name.push(DnType::CommonName, cn);
    let key = KeyPair::generate().expect("leaf key");
    let cert = params.signed_by(&key, issuer).expect("sign leaf");
    (cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test PEM");
    p
}

impl TestPki {
    /// Generates everything into a fresh temp directory.
    pub fn generate(label: &str) -> TestPki {
        let dir = std::env::temp_dir().join(format!(
            "strait-pki-{label}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&dir).expect("create PKI dir");
        let ca = new_ca("strait test CA");
        let other = new_ca("unrelated test CA");
        let (server_cert, server_key) = leaf(&ca, &["127.0.0.1", "localhost"], "localhost");
        let (client_cert, client_key) = leaf(&ca, &[], "strait-client");
        TestPki {
            ca_cert: write(&dir, "ca.pem", &ca.pem()),
            other_ca_cert: write(&dir, "other-ca.pem", &other.pem()),
            server_cert: write(&dir, "server.pem", &server_cert),
            server_key: write(&dir, "server.key", &server_key),
            client_cert: write(&dir, "client.pem", &client_cert),
            client_key: write(&dir, "client.key", &client_key),
            dir,
        }
    }
}
