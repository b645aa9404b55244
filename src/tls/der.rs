//! Just enough DER for key stores: reading one element, and completing the EC private keys the
//! JDK writes so that `ring` takes them.
//!
//! The JDK encodes an EC private key as PKCS#8 whose inner `ECPrivateKey` (RFC 5915) has no
//! `publicKey` field; `ring` requires that field (RFC 5915 makes it optional). The public key
//! is in the key's certificate, so [`complete_ec_key`] copies it from there.

/// DER `ecPublicKey` OID, 1.2.840.10045.2.1.
const EC_PUBLIC_KEY_OID: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01];

/// Reads one element with tag `tag` from the start of `data`: (contents, rest). `None` when
/// the tag differs or the element is cut short.
pub(crate) fn read(data: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&t, rest) = data.split_first()?;
    if t != tag {
        return None;
    }
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7F);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &b in &rest[..n] {
            len = (len << 8) | usize::from(b);
        }
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return None;
    }
    Some(rest.split_at(len))
}

/// One element: tag, length, contents.
fn write(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend(&bytes[skip..]);
    }
    out.extend(contents);
    out
}

/// The subjectPublicKey BIT STRING contents of an X.509 certificate whose key is an EC key.
fn ec_public_key(cert: &[u8]) -> Option<&[u8]> {
    let (cert, _) = read(cert, 0x30)?;
    let (tbs, _) = read(cert, 0x30)?;
    let mut rest = tbs;
    if rest.first() == Some(&0xA0) {
        rest = read(rest, 0xA0)?.1; // version
    }
    rest = read(rest, 0x02)?.1; // serial number
    for _ in 0..4 {
        rest = read(rest, 0x30)?.1; // signature, issuer, validity, subject
    }
    let (spki, _) = read(rest, 0x30)?;
    let (algorithm, rest) = read(spki, 0x30)?;
    let (oid, _) = read(algorithm, 0x06)?;
    if oid != EC_PUBLIC_KEY_OID {
        return None;
    }
    Some(read(rest, 0x03)?.0)
}

/// `key` (PKCS#8) with the public key of `cert` added, if it is an EC key without one; `None`
/// when there is nothing to change (not EC, already complete, or not parseable here: then the
/// key goes to rustls as it is and fails or works there).
pub(crate) fn complete_ec_key(key: &[u8], cert: &[u8]) -> Option<Vec<u8>> {
    let (info, _) = read(key, 0x30)?;
    let (version, rest) = read(info, 0x02)?;
    let (algorithm, rest) = read(rest, 0x30)?;
    let (oid, _) = read(algorithm, 0x06)?;
    if oid != EC_PUBLIC_KEY_OID {
        return None;
    }
    let (inner, _) = read(rest, 0x04)?;
    let (ec, _) = read(inner, 0x30)?;
    let (ec_version, ec_rest) = read(ec, 0x02)?;
    let (d, mut ec_rest) = read(ec_rest, 0x04)?;
    let mut params = None;
    if ec_rest.first() == Some(&0xA0) {
        let (p, r) = read(ec_rest, 0xA0)?;
        params = Some(p);
        ec_rest = r;
    }
    if ec_rest.first() == Some(&0xA1) {
        return None; // the public key is there
    }
    let public = ec_public_key(cert)?;
    let mut ec_new = write(0x02, ec_version);
    ec_new.extend(write(0x04, d));
    if let Some(p) = params {
        ec_new.extend(write(0xA0, p));
    }
    ec_new.extend(write(0xA1, &write(0x03, public)));
    let mut info_new = write(0x02, version);
    info_new.extend(write(0x30, algorithm));
    info_new.extend(write(0x04, &write(0x30, &ec_new)));
    Some(write(0x30, &info_new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip() {
        for n in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let c = vec![7u8; n];
            let w = write(0x04, &c);
            let (got, rest) = read(&w, 0x04).unwrap();
            assert_eq!((got.len(), rest.len()), (n, 0));
        }
        assert!(read(&[0x04, 0x85, 1, 1, 1, 1, 1], 0x04).is_none());
        assert!(read(&[0x04, 0x02, 1], 0x04).is_none());
        assert!(read(&[0x30, 0x00], 0x04).is_none());
        assert!(read(&[], 0x04).is_none());
    }

    #[test]
    fn a_complete_key_is_left_alone_and_a_stripped_one_is_completed() {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let full = c.signing_key.serialize_der();
        let cert = c.cert.der().to_vec();
        assert_eq!(complete_ec_key(&full, &cert), None);
        // Strip the public key as the JDK writes it, then complete it from the certificate.
        let (info, _) = read(&full, 0x30).unwrap();
        let (version, rest) = read(info, 0x02).unwrap();
        let (algorithm, rest) = read(rest, 0x30).unwrap();
        let (inner, _) = read(rest, 0x04).unwrap();
        let (ec, _) = read(inner, 0x30).unwrap();
        let (ec_version, ec_rest) = read(ec, 0x02).unwrap();
        let (d, _) = read(ec_rest, 0x04).unwrap();
        let mut ec_new = write(0x02, ec_version);
        ec_new.extend(write(0x04, d));
        let mut stripped = write(0x02, version);
        stripped.extend(write(0x30, algorithm));
        stripped.extend(write(0x04, &write(0x30, &ec_new)));
        let stripped = write(0x30, &stripped);
        let completed = complete_ec_key(&stripped, &cert).unwrap();
        let pair = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &completed,
            &ring::rand::SystemRandom::new(),
        );
        assert!(pair.is_ok(), "{pair:?}");
        assert!(ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &stripped,
            &ring::rand::SystemRandom::new(),
        )
        .is_err());
    }
}
