//! A reader of Java KeyStore (JKS) files, the format of `keytool -storetype JKS` and Kafka's
//! default `ssl.keystore.type` / `ssl.truststore.type`.
//!
//! Why strait has its own reader: the one JKS crate on crates.io (`jks` 0.3) indexes its input
//! without bounds checks in its DER and key-protector code (a truncated or corrupt store
//! panics instead of giving an error), pulls in a release candidate of `p12-keystore` and an
//! older `asn1-rs`, and has a single author and few releases. The format is small and stable
//! (unchanged since JDK 1.2), so this module reads it with `ring`'s SHA-1 and checked reads
//! only, and is tested against stores made by the JDK's `keytool`.
//!
//! The format (big-endian): magic `FEEDFEED`, version (1 or 2), entry count, then per entry a
//! tag (1 = private key, 2 = trusted certificate), the alias (Java's `writeUTF`), a timestamp,
//! and either an encrypted private key (an `EncryptedPrivateKeyInfo` protected with Sun's
//! `KeyProtector`) followed by its certificate chain, or one certificate (version 2 puts the
//! certificate type, `X.509`, before each certificate). The file ends with the SHA-1 digest of
//! the store password (UTF-16BE), the bytes `Mighty Aphrodite` and everything before it: the
//! integrity check that a wrong store password fails.
//!
//! Sun's key protector: the key bytes are a 20-byte salt, the key XORed with a SHA-1 key
//! stream (`d1 = SHA1(pw ‖ salt)`, `dn = SHA1(pw ‖ dn-1)`) and `SHA1(pw ‖ plain key)`, which a
//! wrong key password fails. The plain key is PKCS#8.

use ring::digest::{Context, SHA1_FOR_LEGACY_USE_ONLY};

/// The magic number a JKS file starts with.
pub(crate) const JKS_MAGIC: [u8; 4] = [0xFE, 0xED, 0xFE, 0xED];
/// The magic number of JCEKS, a JKS variant strait does not read.
pub(crate) const JCEKS_MAGIC: [u8; 4] = [0xCE, 0xCE, 0xCE, 0xCE];

/// The OID of Sun's key protector, 1.3.6.1.4.1.42.2.17.1.1, DER-encoded.
const KEY_PROTECTOR_OID: [u8; 10] = [0x2B, 0x06, 0x01, 0x04, 0x01, 0x2A, 0x02, 0x11, 0x01, 0x01];
/// What the store digest mixes in after the password.
const WHITENER: &[u8] = b"Mighty Aphrodite";
/// Length of a SHA-1 digest.
const SHA1_LEN: usize = 20;

/// Why a JKS file could not be read. Messages hold no key material and no password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JksError {
    /// The file is not a JKS file or is cut short or damaged; the text says where.
    Corrupt(String),
    /// The store's integrity check failed: wrong store password (or a changed file).
    WrongStorePassword,
    /// A private key's check failed: wrong key password.
    WrongKeyPassword(String),
    /// A private key protected with another algorithm than Sun's key protector.
    UnsupportedKeyProtection(String),
}

/// One entry of a JKS file.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum JksEntry {
    /// A private key (still encrypted) and its certificate chain (DER, leaf first).
    PrivateKey {
        /// The `EncryptedPrivateKeyInfo` (DER).
        encrypted: Vec<u8>,
        /// The certificate chain (DER).
        chain: Vec<Vec<u8>>,
    },
    /// A trusted certificate (DER).
    Certificate(Vec<u8>),
}

impl std::fmt::Debug for JksEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JksEntry::PrivateKey { chain, .. } => write!(f, "PrivateKey({} certs)", chain.len()),
            JksEntry::Certificate(_) => f.write_str("Certificate"),
        }
    }
}

/// The entries of a JKS file, by alias, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JksStore {
    /// (alias, entry).
    pub(crate) entries: Vec<(String, JksEntry)>,
}

/// Checked big-endian reads from a byte slice.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], JksError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.data.len())
            .ok_or_else(|| JksError::Corrupt(format!("cut short in {what}")))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u16(&mut self, what: &str) -> Result<u16, JksError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, JksError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Java's `readUTF`: a 2-byte length and modified UTF-8 (read leniently).
    fn utf(&mut self, what: &str) -> Result<String, JksError> {
        let n = self.u16(what)?;
        let b = self.take(usize::from(n), what)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }

    /// A 4-byte length and that many bytes.
    fn bytes(&mut self, what: &str) -> Result<Vec<u8>, JksError> {
        let n = self.u32(what)?;
        let n = usize::try_from(n).map_err(|_| JksError::Corrupt(format!("{what} too long")))?;
        Ok(self.take(n, what)?.to_vec())
    }
}

/// The password as Java's key stores hash it: each UTF-16 unit, big-endian.
fn password_bytes(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

/// Parses a JKS file. With `password`, checks the store's integrity digest first (as Java
/// does when given a password); without, reads the entries unchecked (trust stores only).
pub(crate) fn parse(data: &[u8], password: Option<&str>) -> Result<JksStore, JksError> {
    if data.len() < 12 + SHA1_LEN {
        return Err(JksError::Corrupt("too short for a JKS file".into()));
    }
    let (body, digest) = data.split_at(data.len() - SHA1_LEN);
    if let Some(pw) = password {
        let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
        ctx.update(&password_bytes(pw));
        ctx.update(WHITENER);
        ctx.update(body);
        if ctx.finish().as_ref() != digest {
            return Err(JksError::WrongStorePassword);
        }
    }
    let mut r = Reader { data: body, pos: 0 };
    let magic = r.take(4, "the header")?;
    if magic != JKS_MAGIC {
        return Err(JksError::Corrupt("not a JKS file".into()));
    }
    let version = r.u32("the header")?;
    if version != 1 && version != 2 {
        return Err(JksError::Corrupt(format!("unknown JKS version {version}")));
    }
    let count = r.u32("the header")?;
    let mut entries = Vec::new();
    for i in 0..count {
        let what = format!("entry {}", i + 1);
        let tag = r.u32(&what)?;
        let alias = r.utf(&what)?;
        r.take(8, &what)?; // creation date
        let entry = match tag {
            1 => {
                let encrypted = r.bytes(&what)?;
                let n = r.u32(&what)?;
                let mut chain = Vec::new();
                for _ in 0..n {
                    chain.push(read_cert(&mut r, version, &what)?);
                }
                JksEntry::PrivateKey { encrypted, chain }
            }
            2 => JksEntry::Certificate(read_cert(&mut r, version, &what)?),
            other => {
                return Err(JksError::Corrupt(format!(
                    "{what} has unknown type {other} (secret keys need JCEKS or PKCS12)"
                )))
            }
        };
        entries.push((alias, entry));
    }
    if r.pos != body.len() {
        return Err(JksError::Corrupt("extra bytes after the last entry".into()));
    }
    Ok(JksStore { entries })
}

/// One certificate of a version-1 or -2 store.
fn read_cert(r: &mut Reader<'_>, version: u32, what: &str) -> Result<Vec<u8>, JksError> {
    if version == 2 {
        let kind = r.utf(what)?;
        if kind != "X.509" {
            return Err(JksError::Corrupt(format!(
                "{what} holds a {kind} certificate (only X.509 is supported)"
            )));
        }
    }
    r.bytes(what)
}

/// Reads one DER element with tag `tag` from the start of `data`: (contents, rest).
fn der<'a>(data: &'a [u8], tag: u8, what: &str) -> Result<(&'a [u8], &'a [u8]), JksError> {
    super::der::read(data, tag).ok_or_else(|| JksError::Corrupt(format!("malformed {what}")))
}

/// Decrypts a private key of a JKS store with Sun's key protector: the PKCS#8 DER.
pub(crate) fn decrypt_key(
    encrypted: &[u8],
    password: &str,
    alias: &str,
) -> Result<Vec<u8>, JksError> {
    let what = "encrypted private key";
    let (info, _) = der(encrypted, 0x30, what)?;
    let (algorithm, rest) = der(info, 0x30, what)?;
    let (oid, _) = der(algorithm, 0x06, what)?;
    if oid != KEY_PROTECTOR_OID {
        return Err(JksError::UnsupportedKeyProtection(alias.to_string()));
    }
    let (protected, _) = der(rest, 0x04, what)?;
    if protected.len() < 2 * SHA1_LEN {
        return Err(JksError::Corrupt(format!("{what} too short")));
    }
    let (salt, rest) = protected.split_at(SHA1_LEN);
    let (cipher, check) = rest.split_at(rest.len() - SHA1_LEN);
    let pw = password_bytes(password);
    let mut plain = Vec::with_capacity(cipher.len());
    let mut previous = salt.to_vec();
    for chunk in cipher.chunks(SHA1_LEN) {
        let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
        ctx.update(&pw);
        ctx.update(&previous);
        let stream = ctx.finish();
        plain.extend(chunk.iter().zip(stream.as_ref()).map(|(c, k)| c ^ k));
        previous = stream.as_ref().to_vec();
    }
    let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(&pw);
    ctx.update(&plain);
    if ctx.finish().as_ref() != check {
        return Err(JksError::WrongKeyPassword(alias.to_string()));
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-2 store with one trusted certificate, its digest made with `pw`.
    fn one_cert_store(pw: &str, cert: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(JKS_MAGIC);
        b.extend(2u32.to_be_bytes());
        b.extend(1u32.to_be_bytes());
        b.extend(2u32.to_be_bytes());
        b.extend(2u16.to_be_bytes());
        b.extend(b"ca");
        b.extend(0u64.to_be_bytes());
        b.extend(5u16.to_be_bytes());
        b.extend(b"X.509");
        b.extend((cert.len() as u32).to_be_bytes());
        b.extend(cert);
        let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
        ctx.update(&password_bytes(pw));
        ctx.update(WHITENER);
        ctx.update(&b);
        b.extend(ctx.finish().as_ref());
        b
    }

    #[test]
    fn digest_and_entries() {
        let store = one_cert_store("changeit", b"\x30\x00");
        let s = parse(&store, Some("changeit")).unwrap();
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.entries[0].0, "ca");
        assert_eq!(s.entries[0].1, JksEntry::Certificate(b"\x30\x00".to_vec()));
        assert_eq!(
            parse(&store, Some("wrong")),
            Err(JksError::WrongStorePassword)
        );
        assert!(parse(&store, None).is_ok());
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let store = one_cert_store("pw", b"\x30\x03\x02\x01\x00");
        for n in 0..store.len() {
            assert!(parse(&store[..n], None).is_err(), "cut at {n}");
        }
        // A huge count or length is an error too.
        let mut big = store.clone();
        big[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(parse(&big, None).is_err());
        for n in 0..40 {
            let mut bad = vec![0x30u8, 0x82, 0xFF, 0xFF];
            bad.truncate(n.min(4));
            assert!(decrypt_key(&bad, "pw", "a").is_err());
        }
    }

    #[test]
    fn key_protector_round_trip() {
        // Protect a key the way Sun's KeyProtector does, then recover it.
        let plain: Vec<u8> = (0..45u8).collect();
        let salt = [7u8; SHA1_LEN];
        let pw = password_bytes("keypw");
        let mut out = salt.to_vec();
        let mut previous = salt.to_vec();
        for chunk in plain.chunks(SHA1_LEN) {
            let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
            ctx.update(&pw);
            ctx.update(&previous);
            let d = ctx.finish();
            out.extend(chunk.iter().zip(d.as_ref()).map(|(p, k)| p ^ k));
            previous = d.as_ref().to_vec();
        }
        let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
        ctx.update(&pw);
        ctx.update(&plain);
        out.extend(ctx.finish().as_ref());
        let mut alg = vec![0x06, KEY_PROTECTOR_OID.len() as u8];
        alg.extend(KEY_PROTECTOR_OID);
        alg.extend([0x05, 0x00]);
        let mut inner = vec![0x30, alg.len() as u8];
        inner.extend(alg);
        inner.extend([0x04, out.len() as u8]);
        inner.extend(&out);
        let mut der_bytes = vec![0x30, 0x81, inner.len() as u8];
        der_bytes.extend(inner);
        assert_eq!(decrypt_key(&der_bytes, "keypw", "k").unwrap(), plain);
        assert_eq!(
            decrypt_key(&der_bytes, "other", "k"),
            Err(JksError::WrongKeyPassword("k".into()))
        );
    }
}
