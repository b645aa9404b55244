//! Key and trust stores in Kafka's three formats: JKS (strait's reader, [`super::jks`]),
//! PKCS#12 (the `p12-keystore` crate: PBES2/AES-256 with an HMAC-SHA256 MAC as JDK 17's
//! `keytool` makes them, and the older PBES1 schemes) and PEM (certificates and a private key,
//! unencrypted or as an encrypted PKCS#8 `ENCRYPTED PRIVATE KEY` opened with the key password).
//!
//! The type of a store is given ([`StoreType`]) or detected from its first bytes. As the JDK
//! does (`keystore.type.compat`), a store of type JKS may be a PKCS#12 file and the other way
//! round; PEM given for a binary file, or JKS/PKCS12 for a PEM file, is an error.
//!
//! Every error is one line naming the store (`key store PATH` / `trust store PATH`, never its
//! content) and the cause: wrong password, no private key, several keys and no alias, unknown
//! alias, corrupt file, no certificate, or a type that does not match the file.

use std::path::{Path, PathBuf};

use pkcs8::der::Decode as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::jks::{self, JksEntry, JksError};
use crate::secret::Secret;

/// Largest store file read.
const MAX_STORE_FILE: u64 = 16 * 1024 * 1024;

/// The format of a key or trust store (`ssl.keystore.type` / `ssl.truststore.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    /// Java KeyStore (`JKS`), Kafka's default.
    Jks,
    /// PKCS#12 (`PKCS12`).
    Pkcs12,
    /// PEM certificates and, in a key store, a private key (`PEM`).
    Pem,
}

impl StoreType {
    /// The allowed names, for messages.
    pub const ALLOWED: &'static str = "JKS, PKCS12, PEM";

    /// Parses Kafka's name (`JKS`, `PKCS12`, `PEM`), ignoring case and surrounding whitespace.
    pub fn parse(s: &str) -> Option<StoreType> {
        match s.trim().to_ascii_uppercase().as_str() {
            "JKS" => Some(StoreType::Jks),
            "PKCS12" => Some(StoreType::Pkcs12),
            "PEM" => Some(StoreType::Pem),
            _ => None,
        }
    }

    /// Kafka's name.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreType::Jks => "JKS",
            StoreType::Pkcs12 => "PKCS12",
            StoreType::Pem => "PEM",
        }
    }
}

/// How the type of a store was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreTypeChoice {
    /// Detected from the file's first bytes (strait's TOML when no type is set).
    #[default]
    Detect,
    /// Set in the configuration.
    Set(StoreType),
    /// Not set in an `mm2.properties`, so JKS, Kafka's default.
    KafkaDefault,
}

/// A key or trust store file, its type and its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreFile {
    /// Where the store is.
    pub location: PathBuf,
    /// Its type.
    pub store_type: StoreTypeChoice,
    /// The store password (integrity check; for PKCS#12 also the key's encryption).
    pub password: Option<Secret>,
}

impl StoreFile {
    /// A store at `location` whose type is detected, without a password.
    pub fn new(location: impl Into<PathBuf>) -> StoreFile {
        StoreFile {
            location: location.into(),
            store_type: StoreTypeChoice::Detect,
            password: None,
        }
    }
}

/// A private key and its certificate chain (leaf first) read from a key store.
pub struct KeyMaterial {
    /// The certificate chain.
    pub chain: Vec<CertificateDer<'static>>,
    /// The private key.
    pub key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyMaterial({} certificates, key ***)", self.chain.len())
    }
}

/// A private key entry of a JKS store: alias, encrypted key, certificate chain.
type JksKey<'a> = (&'a str, &'a [u8], &'a [Vec<u8>]);

/// What the first bytes of a store say it is.
fn detect(data: &[u8]) -> Option<StoreType> {
    if data.starts_with(&jks::JKS_MAGIC) {
        return Some(StoreType::Jks);
    }
    if data.first() == Some(&0x30) {
        return Some(StoreType::Pkcs12);
    }
    let text = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    if text
        .windows(b"-----BEGIN ".len())
        .any(|w| w == b"-----BEGIN ")
    {
        return Some(StoreType::Pem);
    }
    None
}

/// Which store, for messages: `key store /path` or `trust store /path`.
struct Named<'a> {
    role: &'static str,
    path: &'a Path,
}

impl Named<'_> {
    fn err(&self, problem: impl std::fmt::Display) -> String {
        format!("{} {}: {problem}", self.role, self.path.display())
    }
}

/// Reads the file and settles its type.
fn open(store: &StoreFile, name: &Named<'_>) -> Result<(Vec<u8>, StoreType), String> {
    let meta = std::fs::metadata(&store.location)
        .map_err(|e| name.err(format!("cannot read: {}", e.kind())))?;
    if meta.len() > MAX_STORE_FILE {
        return Err(name.err(format!(
            "larger than {} MiB, not a key or trust store",
            MAX_STORE_FILE >> 20
        )));
    }
    let data = std::fs::read(&store.location)
        .map_err(|e| name.err(format!("cannot read: {}", e.kind())))?;
    if data.starts_with(&jks::JCEKS_MAGIC) {
        return Err(name.err(
            "a JCEKS file, which strait does not read (convert it with keytool -importkeystore to PKCS12)",
        ));
    }
    let found = detect(&data)
        .ok_or_else(|| name.err("not a JKS, PKCS#12 or PEM file (corrupt, or another format)"))?;
    let wanted = match store.store_type {
        StoreTypeChoice::Detect => return Ok((data, found)),
        StoreTypeChoice::Set(t) => t,
        StoreTypeChoice::KafkaDefault => StoreType::Jks,
    };
    // JKS and PKCS12 read each other's files, as in the JDK (keystore.type.compat).
    if (wanted == StoreType::Pem) != (found == StoreType::Pem) {
        let how = if store.store_type == StoreTypeChoice::KafkaDefault {
            "no type is set, so it is read as JKS (Kafka's default)"
        } else {
            match wanted {
                StoreType::Pem => "the type is set to PEM",
                _ => "the type is set to JKS or PKCS12",
            }
        };
        let (file, fix) = if found == StoreType::Pem {
            ("PEM", "PEM")
        } else {
            ("binary (JKS or PKCS#12)", "JKS or PKCS12")
        };
        return Err(name.err(format!(
            "the file is {file}, but {how}: set the type to {fix}"
        )));
    }
    Ok((data, found))
}

/// Reads the private key and certificate chain of a key store. `key_password` decrypts the key
/// of a JKS store (default: the store password) or an encrypted PEM key; `alias` chooses among
/// several keys.
pub fn load_key_store(
    store: &StoreFile,
    key_password: Option<&Secret>,
    alias: Option<&str>,
) -> Result<KeyMaterial, String> {
    let name = Named {
        role: "key store",
        path: &store.location,
    };
    let (data, found) = open(store, &name)?;
    match found {
        StoreType::Pem => {
            if store.password.is_some() {
                return Err(name.err(
                    "a PEM key store has no store password (give the password of an encrypted key as the key password)",
                ));
            }
            if alias.is_some() {
                return Err(name.err("a PEM key store has no aliases; do not set one"));
            }
            let chain = pem_certificates(&data).map_err(|p| name.err(p))?;
            if chain.is_empty() {
                return Err(name.err("no certificate for the private key"));
            }
            let key = pem_private_key(&data, key_password).map_err(|p| name.err(p))?;
            Ok(KeyMaterial { chain, key })
        }
        StoreType::Jks => {
            let pw = store
                .password
                .as_ref()
                .ok_or_else(|| name.err("no store password given (a key store needs one)"))?;
            let parsed = jks::parse(&data, Some(pw.expose())).map_err(|e| jks_err(&name, e))?;
            let keys: Vec<JksKey<'_>> = parsed
                .entries
                .iter()
                .filter_map(|(a, e)| match e {
                    JksEntry::PrivateKey { encrypted, chain } => {
                        Some((a.as_str(), encrypted.as_slice(), chain.as_slice()))
                    }
                    JksEntry::Certificate(_) => None,
                })
                .collect();
            let aliases: Vec<&str> = keys.iter().map(|(a, _, _)| *a).collect();
            let i = choose(&name, &aliases, alias)?;
            let (a, encrypted, chain) = keys[i];
            let kpw = key_password.unwrap_or(pw);
            let plain =
                jks::decrypt_key(encrypted, kpw.expose(), a).map_err(|e| jks_err(&name, e))?;
            if chain.is_empty() {
                return Err(name.err(format!("the key `{a}` has no certificate")));
            }
            Ok(key_material(
                chain
                    .iter()
                    .map(|c| CertificateDer::from(c.clone()))
                    .collect(),
                plain,
            ))
        }
        StoreType::Pkcs12 => {
            let pw = store
                .password
                .as_ref()
                .or(key_password)
                .ok_or_else(|| name.err("no store password given (a key store needs one)"))?;
            let archive = pkcs12(&data, pw.expose(), &name)?;
            let aliases: Vec<String> = archive
                .keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    k.friendly_name
                        .clone()
                        .unwrap_or_else(|| format!("#{}", i + 1))
                })
                .collect();
            let refs: Vec<&str> = aliases.iter().map(String::as_str).collect();
            let i = choose(&name, &refs, alias)?;
            let bag = &archive.keys[i];
            let leaf = bag.local_key_id.as_ref().and_then(|id| {
                archive
                    .certs
                    .iter()
                    .find(|c| c.local_key_id.as_deref() == Some(id.as_ref()))
            });
            let leaf =
                leaf.ok_or_else(|| name.err(format!("the key `{}` has no certificate", refs[i])))?;
            let mut chain = vec![&leaf.cert];
            // Follow issuers among the store's certificates (leaf first, no cycles).
            while let Some(last) = chain.last() {
                if last.issuer() == last.subject() {
                    break;
                }
                let next = archive.certs.iter().map(|c| &c.cert).find(|c| {
                    c.subject() == last.issuer() && !chain.iter().any(|x| x.as_der() == c.as_der())
                });
                match next {
                    Some(c) => chain.push(c),
                    None => break,
                }
            }
            Ok(key_material(
                chain
                    .iter()
                    .map(|c| CertificateDer::from(c.as_der().to_vec()))
                    .collect(),
                bag.key.as_der().to_vec(),
            ))
        }
    }
}

/// A PKCS#8 key from a JKS or PKCS12 store and its chain; an EC key the JDK wrote without its
/// public key gets it from the certificate (see `der`), as `ring` needs it.
fn key_material(chain: Vec<CertificateDer<'static>>, pkcs8: Vec<u8>) -> KeyMaterial {
    let key = chain
        .first()
        .and_then(|c| super::der::complete_ec_key(&pkcs8, c))
        .unwrap_or(pkcs8);
    KeyMaterial {
        chain,
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
    }
}

/// Reads the certificates of a trust store (every certificate in it, trusted entries and key
/// chains alike, as a Java trust manager trusts them).
pub fn load_trust_store(store: &StoreFile) -> Result<Vec<CertificateDer<'static>>, String> {
    let name = Named {
        role: "trust store",
        path: &store.location,
    };
    let (data, found) = open(store, &name)?;
    let certs: Vec<CertificateDer<'static>> = match found {
        StoreType::Pem => {
            if store.password.is_some() {
                return Err(name.err("a PEM trust store has no password; do not set one"));
            }
            pem_certificates(&data).map_err(|p| name.err(p))?
        }
        StoreType::Jks => {
            let pw = store.password.as_ref().map(Secret::expose);
            let parsed = jks::parse(&data, pw).map_err(|e| jks_err(&name, e))?;
            parsed
                .entries
                .into_iter()
                .flat_map(|(_, e)| match e {
                    JksEntry::Certificate(c) => vec![c],
                    JksEntry::PrivateKey { chain, .. } => chain,
                })
                .map(CertificateDer::from)
                .collect()
        }
        StoreType::Pkcs12 => {
            let pw = store.password.as_ref().map_or("", Secret::expose);
            let archive = pkcs12(&data, pw, &name).map_err(|e| {
                if store.password.is_none() {
                    name.err("cannot be read without a password; set the trust store password")
                } else {
                    e
                }
            })?;
            archive
                .certs
                .iter()
                .map(|c| CertificateDer::from(c.cert.as_der().to_vec()))
                .collect()
        }
    };
    if certs.is_empty() {
        return Err(name.err("holds no certificate"));
    }
    Ok(certs)
}

/// The one key to use: the one `alias` names, or the only one.
fn choose(name: &Named<'_>, aliases: &[&str], alias: Option<&str>) -> Result<usize, String> {
    let listed = || {
        let mut sorted = aliases.to_vec();
        sorted.sort_unstable();
        sorted.join(", ")
    };
    match (aliases.len(), alias) {
        (0, _) => Err(name.err(
            "holds no private key (only certificates: is this a trust store?)",
        )),
        (_, Some(a)) => aliases.iter().position(|x| *x == a).ok_or_else(|| {
            name.err(format!("no private key with alias `{a}` (keys: {})", listed()))
        }),
        (1, None) => Ok(0),
        (_, None) => Err(name.err(format!(
            "holds {} private keys; choose one by alias (ssl_keystore_alias; tls_keystore_alias in [http]) (keys: {})",
            aliases.len(),
            listed()
        ))),
    }
}

/// A JKS reading error as a message about the store.
fn jks_err(name: &Named<'_>, e: JksError) -> String {
    match e {
        JksError::Corrupt(what) => name.err(format!("corrupt JKS file ({what})")),
        JksError::WrongStorePassword => name.err(
            "wrong store password (the store's integrity check failed), or the file was changed",
        ),
        JksError::WrongKeyPassword(a) => name.err(format!(
            "wrong key password for `{a}` (the key's integrity check failed)"
        )),
        JksError::UnsupportedKeyProtection(a) => name.err(format!(
            "the key `{a}` is protected with an algorithm strait does not read (re-import it with keytool)"
        )),
    }
}

/// Opens a PKCS#12 file.
fn pkcs12(
    data: &[u8],
    password: &str,
    name: &Named<'_>,
) -> Result<p12_keystore::Pkcs12Archive, String> {
    use p12_keystore::error::Error as E;
    p12_keystore::Pkcs12Archive::from_pkcs12(data, password).map_err(|e| match e {
        E::MacError(_) => name.err(
            "wrong store password (the store's integrity check failed), or the file was changed",
        ),
        E::UnpadError | E::Pkcs5Error(_) | E::InvalidPrivateKey => {
            name.err("wrong password: an entry could not be decrypted")
        }
        E::UnsupportedEncryptionScheme | E::UnsupportedMacAlgorithm | E::UnsupportedContentType => {
            name.err(format!("PKCS#12 file uses an unsupported algorithm ({e})"))
        }
        E::InvalidParameters => name.err(
            "PKCS#12 file with unsupported parameters (iteration counts over 1,000,000 are refused)",
        ),
        _ => name.err("corrupt PKCS#12 file"),
    })
}

/// Every certificate of a PEM file (no error for none).
fn pem_certificates(data: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(data)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot read PEM certificates: {}", super::pem_problem(&e)))
}

/// Inline PEM from an mm2.properties, as Kafka reads it: Java's line continuations join a PEM
/// block into one line (`-----BEGIN CERTIFICATE----- MIIB... -----END CERTIFICATE-----`), so
/// each `BEGIN`/`END` block is rewritten with its base64 (whitespace removed) in 64-column
/// lines. Text without a complete block is returned unchanged (and fails to parse later).
pub(crate) fn normalize_inline_pem(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + "-----BEGIN ".len()..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = &after[..label_end];
        let body = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(body_end) = body.find(&end_marker) else {
            break;
        };
        let b64: String = body[..body_end].split_whitespace().collect();
        out.push_str(&format!("-----BEGIN {label}-----\n"));
        for line in b64.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push('\n');
        }
        out.push_str(&end_marker);
        out.push('\n');
        rest = &body[body_end + end_marker.len()..];
    }
    if out.is_empty() {
        text.to_string()
    } else {
        out
    }
}

const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The private key of a PEM file: unencrypted (PKCS#8, PKCS#1 RSA, SEC1 EC), or encrypted
/// PKCS#8 opened with `password`.
pub(crate) fn pem_private_key(
    data: &[u8],
    password: Option<&Secret>,
) -> Result<PrivateKeyDer<'static>, String> {
    let text = String::from_utf8_lossy(data);
    if let Some(start) = text.find(ENCRYPTED_BEGIN) {
        let body = &text[start + ENCRYPTED_BEGIN.len()..];
        let end = body
            .find(ENCRYPTED_END)
            .ok_or("malformed PEM (an encrypted private key without its END line)")?;
        let b64: String = body[..end].split_whitespace().collect();
        use base64::Engine as _;
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| "malformed PEM (the encrypted private key is not base64)")?;
        let pw = password.ok_or("the private key is encrypted and no key password is given")?;
        let info = pkcs8::EncryptedPrivateKeyInfoRef::from_der(&der)
            .map_err(|_| "malformed encrypted private key")?;
        let plain = info.decrypt(pw.expose()).map_err(|e| match e {
            pkcs8::Error::EncryptedPrivateKey(
                pkcs8::pkcs5::Error::AlgorithmParametersInvalid { .. }
                | pkcs8::pkcs5::Error::UnsupportedAlgorithm { .. }
                | pkcs8::pkcs5::Error::NoPbes1CryptSupport,
            ) => {
                "the private key is encrypted with an algorithm strait does not read (use PBES2 with AES)".to_string()
            }
            _ => "wrong key password (the encrypted private key could not be decrypted)".to_string(),
        })?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            plain.as_bytes().to_vec(),
        )));
    }
    PrivateKeyDer::from_pem_slice(data).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => {
            "no private key (PKCS#8, encrypted PKCS#8, PKCS#1 RSA or SEC1 EC)".to_string()
        }
        other => format!(
            "cannot read the private key: {}",
            super::pem_problem(&other)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, data: &[u8]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("strait-stores-{}-{name}", std::process::id()));
        std::fs::write(&p, data).unwrap();
        p
    }

    /// A self-signed certificate and its PKCS#8 key, PEM.
    fn cert_and_key() -> (String, String) {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        (c.cert.pem(), c.signing_key.serialize_pem())
    }

    /// `key_pem` (PKCS#8) encrypted with PBES2 (PBKDF2-SHA256, AES-256-CBC), as PEM.
    fn encrypt(key_pem: &str, password: &str) -> String {
        use base64::Engine as _;
        let der = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let info = pkcs8::PrivateKeyInfoRef::from_der(der.secret_der()).unwrap();
        let params = pkcs8::pkcs5::pbes2::Parameters::generate_pbkdf2_sha256_aes256cbc(
            2048, &[9; 16], [3; 16],
        )
        .unwrap();
        let enc = info.encrypt_with_params(params, password).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(enc.as_bytes());
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!("{ENCRYPTED_BEGIN}\n{}\n{ENCRYPTED_END}\n", lines.join("\n"))
    }

    #[test]
    fn store_types_and_detection() {
        assert_eq!(StoreType::parse(" pkcs12 "), Some(StoreType::Pkcs12));
        assert_eq!(StoreType::parse("jks"), Some(StoreType::Jks));
        assert_eq!(StoreType::parse("Pem"), Some(StoreType::Pem));
        assert_eq!(StoreType::parse("JCEKS"), None);
        assert_eq!(detect(&[0xFE, 0xED, 0xFE, 0xED, 0]), Some(StoreType::Jks));
        assert_eq!(detect(&[0x30, 0x82]), Some(StoreType::Pkcs12));
        assert_eq!(
            detect(b"# ca\n-----BEGIN CERTIFICATE-----\n"),
            Some(StoreType::Pem)
        );
        assert_eq!(detect(b"hello"), None);
        let p = temp("jceks", &[0xCE, 0xCE, 0xCE, 0xCE, 0, 0, 0, 2]);
        let e = load_trust_store(&StoreFile::new(&p)).unwrap_err();
        assert!(
            e.contains("JCEKS") && e.contains(&p.display().to_string()),
            "{e}"
        );
        let e = load_trust_store(&StoreFile::new("/nonexistent/t.jks")).unwrap_err();
        assert_eq!(
            e,
            "trust store /nonexistent/t.jks: cannot read: entity not found"
        );
    }

    #[test]
    fn pem_key_store_plain_and_encrypted() {
        let (cert, key) = cert_and_key();
        let plain = temp("plain.pem", format!("{key}{cert}").as_bytes());
        let m = load_key_store(&StoreFile::new(&plain), None, None).unwrap();
        assert_eq!(m.chain.len(), 1);
        assert!(!format!("{m:?}").contains("BEGIN"));

        let pw = Secret::literal("pem-Key-Pw-55");
        let enc = temp(
            "enc.pem",
            format!("{}{cert}", encrypt(&key, "pem-Key-Pw-55")).as_bytes(),
        );
        let mut store = StoreFile::new(&enc);
        store.store_type = StoreTypeChoice::Set(StoreType::Pem);
        let m = load_key_store(&store, Some(&pw), None).unwrap();
        assert_eq!(
            m.key.secret_der(),
            PrivateKeyDer::from_pem_slice(key.as_bytes())
                .unwrap()
                .secret_der()
        );
        let wrong = load_key_store(&store, Some(&Secret::literal("wrong-pw-x")), None).unwrap_err();
        assert!(wrong.contains("wrong key password"), "{wrong}");
        let none = load_key_store(&store, None, None).unwrap_err();
        assert!(none.contains("no key password"), "{none}");
        for e in [&wrong, &none] {
            assert!(!e.contains("pw-x") && !e.contains("BEGIN"), "{e}");
        }

        // A PEM store has no store password and no aliases; Kafka's default type is JKS.
        store.password = Some(pw.clone());
        let e = load_key_store(&store, None, None).unwrap_err();
        assert!(e.contains("no store password"), "{e}");
        let e = load_key_store(&StoreFile::new(&plain), None, Some("a")).unwrap_err();
        assert!(e.contains("no aliases"), "{e}");
        let mut jks = StoreFile::new(&plain);
        jks.store_type = StoreTypeChoice::KafkaDefault;
        let e = load_key_store(&jks, None, None).unwrap_err();
        assert!(e.contains("no type is set, so it is read as JKS"), "{e}");

        // Certificates only: no private key; a key only: no certificate.
        let only_cert = temp("cert.pem", cert.as_bytes());
        let e = load_key_store(&StoreFile::new(&only_cert), None, None).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "key store {}: no private key",
                only_cert.display()
            )),
            "{e}"
        );
        let only_key = temp("key.pem", key.as_bytes());
        let e = load_key_store(&StoreFile::new(&only_key), None, None).unwrap_err();
        assert!(e.contains("no certificate"), "{e}");
        let e = load_trust_store(&StoreFile::new(&only_key)).unwrap_err();
        assert!(e.contains("holds no certificate"), "{e}");
        assert_eq!(
            load_trust_store(&StoreFile::new(&only_cert)).unwrap().len(),
            1
        );
    }

    #[test]
    fn inline_pem_joined_by_line_continuations() {
        let (cert, key) = cert_and_key();
        // What Java's properties reader makes of a block written with `\` continuations.
        let joined = |pem: &str| {
            pem.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let two = format!("{} {}", joined(&cert), joined(&cert));
        let norm = normalize_inline_pem(&two);
        let certs = CertificateDer::pem_slice_iter(norm.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(
            certs[0],
            CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()
        );
        let k = normalize_inline_pem(&joined(&key));
        assert!(pem_private_key(k.as_bytes(), None).is_ok());
        let enc = normalize_inline_pem(&joined(&encrypt(&key, "inline-pw")));
        let pw = Secret::literal("inline-pw");
        assert!(pem_private_key(enc.as_bytes(), Some(&pw)).is_ok());
        assert_eq!(normalize_inline_pem("no pem here"), "no pem here");
        assert_eq!(
            normalize_inline_pem("-----BEGIN CERTIFICATE----- abc"),
            "-----BEGIN CERTIFICATE----- abc"
        );
    }

    #[test]
    fn binary_type_for_a_pem_file_and_back() {
        let (cert, _) = cert_and_key();
        let pem = temp("ca.pem", cert.as_bytes());
        let mut s = StoreFile::new(&pem);
        s.store_type = StoreTypeChoice::Set(StoreType::Pkcs12);
        let e = load_trust_store(&s).unwrap_err();
        assert!(
            e.contains("the file is PEM, but the type is set to JKS or PKCS12"),
            "{e}"
        );
        let bin = temp("x.p12", &[0x30, 0x03, 0x02, 0x01, 0x03]);
        let mut s = StoreFile::new(&bin);
        s.store_type = StoreTypeChoice::Set(StoreType::Pem);
        let e = load_trust_store(&s).unwrap_err();
        assert!(e.contains("the file is binary"), "{e}");
        s.store_type = StoreTypeChoice::Set(StoreType::Jks);
        s.password = Some(Secret::literal("pw"));
        let e = load_trust_store(&s).unwrap_err();
        assert!(e.contains("corrupt PKCS#12 file"), "{e}");
    }
}
