//! Key and trust stores made at test time by the JDK's `keytool` (JDK 17: PKCS#12 stores use
//! PBES2/AES-256 and an HMAC-SHA256 MAC): a CA, a client key pair signed by it (certificate
//! request, `-gencert`, reply imported), as JKS (separate key password) and PKCS12 key stores,
//! JKS and PKCS12 trust stores holding a given CA, a store with two keys, a store with a
//! trusted certificate only, and an HTTPS server key store for `127.0.0.1`. Nothing is
//! committed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Store password of the CA's own store.
pub const CA_PASSWORD: &str = "ca-Store-Pw-44Kd";
/// Store password of the JKS key store.
pub const JKS_STORE_PASSWORD: &str = "jks-Store-Pw-81Qa";
/// Key password of the JKS key store's private key (differs from its store password).
pub const JKS_KEY_PASSWORD: &str = "jks-Key-Pw-27Vm";
/// Store (and key) password of the PKCS12 key store.
pub const P12_PASSWORD: &str = "p12-Store-Pw-63Rt";
/// Password of the trust stores.
pub const TRUST_PASSWORD: &str = "trust-Store-Pw-19Xc";
/// Every password above, for `assert_no_secret`.
pub const STORE_SECRETS: &[&str] = &[
    CA_PASSWORD,
    JKS_STORE_PASSWORD,
    JKS_KEY_PASSWORD,
    P12_PASSWORD,
    TRUST_PASSWORD,
];

/// The stores of one test, in their own directory.
#[derive(Debug, Clone)]
pub struct TestStores {
    pub dir: PathBuf,
    /// The CA that signed the client (and HTTPS server) certificates, PEM: give it to Kafka as
    /// the client CA.
    pub ca_pem: PathBuf,
    /// JKS key store: the client key (alias `client`, key password [`JKS_KEY_PASSWORD`]) with
    /// its chain, and the CA as a trusted entry.
    pub client_jks: PathBuf,
    /// PKCS12 key store: the client key (alias `client`) with its chain.
    pub client_p12: PathBuf,
    /// JKS trust store holding the broker's CA.
    pub trust_jks: PathBuf,
    /// PKCS12 trust store holding the broker's CA.
    pub trust_p12: PathBuf,
    /// JKS store with two private keys, `first` (RSA) and `second` (EC P-256), store and key
    /// password [`JKS_STORE_PASSWORD`].
    pub two_keys_jks: PathBuf,
    /// PKCS12 key store for an HTTPS server on `127.0.0.1`/`localhost` (password
    /// [`P12_PASSWORD`]), signed by the CA.
    pub server_p12: PathBuf,
}

/// Runs keytool with `args`; panics with its output if it fails.
pub fn keytool(args: &[&str]) {
    let out = Command::new("keytool")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run keytool (a JDK 17 or newer on PATH): {e}"));
    assert!(
        out.status.success(),
        "keytool {}:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 test path")
}

/// A key pair in `store` (`storetype`) signed by the CA in `ca` (PKCS12): certificate request,
/// `-gencert`, CA imported as trusted, reply imported.
#[allow(clippy::too_many_arguments)]
fn signed_key(
    dir: &Path,
    ca: &Path,
    ca_pem: &Path,
    store: &Path,
    storetype: &str,
    storepass: &str,
    keypass: &str,
    alias: &str,
    dname: &str,
    ext: Option<&str>,
) {
    keytool(&[
        "-genkeypair",
        "-keystore",
        s(store),
        "-storetype",
        storetype,
        "-storepass",
        storepass,
        "-keypass",
        keypass,
        "-alias",
        alias,
        "-dname",
        dname,
        "-keyalg",
        "RSA",
        "-keysize",
        "2048",
        "-validity",
        "30",
    ]);
    let csr = dir.join(format!("{alias}-{storetype}.csr"));
    let crt = dir.join(format!("{alias}-{storetype}.crt"));
    keytool(&[
        "-certreq",
        "-keystore",
        s(store),
        "-storepass",
        storepass,
        "-keypass",
        keypass,
        "-alias",
        alias,
        "-file",
        s(&csr),
    ]);
    let mut gencert = vec![
        "-gencert",
        "-keystore",
        s(ca),
        "-storepass",
        CA_PASSWORD,
        "-alias",
        "ca",
        "-infile",
        s(&csr),
        "-outfile",
        s(&crt),
        "-rfc",
        "-validity",
        "30",
    ];
    if let Some(e) = ext {
        gencert.extend(["-ext", e]);
    }
    keytool(&gencert);
    keytool(&[
        "-importcert",
        "-keystore",
        s(store),
        "-storepass",
        storepass,
        "-alias",
        "ca",
        "-file",
        s(ca_pem),
        "-noprompt",
    ]);
    keytool(&[
        "-importcert",
        "-keystore",
        s(store),
        "-storepass",
        storepass,
        "-keypass",
        keypass,
        "-alias",
        alias,
        "-file",
        s(&crt),
    ]);
}

/// A trust store of `storetype` at `path` holding `cert` (PEM).
pub fn trust_store(path: &Path, storetype: &str, cert: &Path) {
    keytool(&[
        "-importcert",
        "-keystore",
        s(path),
        "-storetype",
        storetype,
        "-storepass",
        TRUST_PASSWORD,
        "-alias",
        "broker-ca",
        "-file",
        s(cert),
        "-noprompt",
    ]);
}

impl TestStores {
    /// Makes every store in a fresh temporary directory; the trust stores hold `broker_ca`
    /// (PEM), the CA of the brokers' certificates.
    pub fn generate(label: &str, broker_ca: &Path) -> TestStores {
        let dir = std::env::temp_dir().join(crate::support::topic_name(&format!(
            "strait-stores-{label}"
        )));
        std::fs::create_dir_all(&dir).expect("create stores dir");
        let ca = dir.join("ca.p12");
        let ca_pem = dir.join("ca.pem");
        keytool(&[
            "-genkeypair",
            "-keystore",
            s(&ca),
            "-storetype",
            "PKCS12",
            "-storepass",
            CA_PASSWORD,
            "-alias",
            "ca",
            "-dname",
            "CN=strait keytool CA",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-validity",
            "30",
            "-ext",
            "bc:c",
        ]);
        keytool(&[
            "-exportcert",
            "-keystore",
            s(&ca),
            "-storepass",
            CA_PASSWORD,
            "-alias",
            "ca",
            "-rfc",
            "-file",
            s(&ca_pem),
        ]);
        let client_jks = dir.join("client.jks");
        signed_key(
            &dir,
            &ca,
            &ca_pem,
            &client_jks,
            "JKS",
            JKS_STORE_PASSWORD,
            JKS_KEY_PASSWORD,
            "client",
            "CN=strait-client",
            None,
        );
        let client_p12 = dir.join("client.p12");
        signed_key(
            &dir,
            &ca,
            &ca_pem,
            &client_p12,
            "PKCS12",
            P12_PASSWORD,
            P12_PASSWORD,
            "client",
            "CN=strait-client",
            None,
        );
        let server_p12 = dir.join("server.p12");
        signed_key(
            &dir,
            &ca,
            &ca_pem,
            &server_p12,
            "PKCS12",
            P12_PASSWORD,
            P12_PASSWORD,
            "server",
            "CN=localhost",
            Some("san=ip:127.0.0.1,dns:localhost"),
        );
        let trust_jks = dir.join("trust.jks");
        trust_store(&trust_jks, "JKS", broker_ca);
        let trust_p12 = dir.join("trust.p12");
        trust_store(&trust_p12, "PKCS12", broker_ca);
        let two_keys_jks = dir.join("two-keys.jks");
        // `first` RSA, `second` EC (the JDK writes EC keys without their public key).
        for (alias, alg, size) in [("first", "RSA", "2048"), ("second", "EC", "256")] {
            keytool(&[
                "-genkeypair",
                "-keystore",
                s(&two_keys_jks),
                "-storetype",
                "JKS",
                "-storepass",
                JKS_STORE_PASSWORD,
                "-keypass",
                JKS_STORE_PASSWORD,
                "-alias",
                alias,
                "-dname",
                &format!("CN={alias}"),
                "-keyalg",
                alg,
                "-keysize",
                size,
                "-validity",
                "30",
            ]);
        }
        TestStores {
            dir,
            ca_pem,
            client_jks,
            client_p12,
            trust_jks,
            trust_p12,
            two_keys_jks,
            server_p12,
        }
    }
}
