//! Key and trust stores in both formats. TOML: `ssl_keystore_location`, `ssl_keystore_type`,
//! `ssl_keystore_password`, `ssl_key_password`, `ssl_keystore_alias`,
//! `ssl_truststore_location`, `ssl_truststore_type`, `ssl_truststore_password` in a
//! `[clusters.<alias>]` table, and `tls_keystore_location`, `tls_keystore_type`,
//! `tls_keystore_password`, `tls_key_password`, `tls_keystore_alias` in `[http]`. mm2.properties:
//! Kafka's `ssl.keystore.*`, `ssl.key.password`, `ssl.truststore.*` (a missing type means JKS,
//! as in Kafka), passwords with config providers. The files are read when the clients (or the
//! HTTP listener) are set up, so errors about their content name the cluster there.

use crate::secret::{ProviderKind, Secret};
use crate::tls::{StoreFile, StoreType, StoreTypeChoice};

use super::error::{ConfigError, Where};
use super::mm2::Lookup;
use super::security::toml_secret;
use super::toml::toml_str;
use super::{ClusterSettings, HttpSettings};

/// The store keys of a `[clusters.<alias>]` table.
pub(super) const CLUSTER_STORE_KEYS: &[&str] = &[
    "ssl_keystore_location",
    "ssl_keystore_type",
    "ssl_keystore_password",
    "ssl_key_password",
    "ssl_keystore_alias",
    "ssl_truststore_location",
    "ssl_truststore_type",
    "ssl_truststore_password",
];

/// The store keys of the `[http]` table.
pub(super) const HTTP_STORE_KEYS: &[&str] = &[
    "tls_keystore_location",
    "tls_keystore_type",
    "tls_keystore_password",
    "tls_key_password",
    "tls_keystore_alias",
];

/// One store as read from TOML keys, before it is checked.
#[derive(Default)]
struct StoreParts {
    location: Option<String>,
    store_type: Option<StoreType>,
    password: Option<Secret>,
}

/// The store keys of one TOML table (`prefix` `ssl` for a cluster, `tls` for `[http]`).
#[derive(Default)]
pub(super) struct TomlStores {
    keystore: StoreParts,
    truststore: StoreParts,
    key_password: Option<Secret>,
    alias: Option<String>,
}

/// `ssl_keystore_type` & co.: a store type.
fn toml_store_type(file: &str, kpath: &str, v: &toml::Value) -> Result<StoreType, ConfigError> {
    let s = toml_str(file, kpath, v)?;
    StoreType::parse(s).ok_or_else(|| {
        ConfigError::new(file, kpath, format!("unknown store type `{}`", s.trim()))
            .allowed(StoreType::ALLOWED)
    })
}

impl TomlStores {
    /// Reads `key` (one of [`CLUSTER_STORE_KEYS`] or [`HTTP_STORE_KEYS`]) at `kpath`.
    pub(super) fn read(
        &mut self,
        file: &str,
        kpath: &str,
        key: &str,
        v: &toml::Value,
    ) -> Result<(), ConfigError> {
        let name = key
            .strip_prefix("ssl_")
            .or_else(|| key.strip_prefix("tls_"))
            .unwrap_or(key);
        match name {
            "keystore_location" => {
                self.keystore.location = Some(toml_str(file, kpath, v)?.trim().to_string())
            }
            "truststore_location" => {
                self.truststore.location = Some(toml_str(file, kpath, v)?.trim().to_string())
            }
            "keystore_type" => self.keystore.store_type = Some(toml_store_type(file, kpath, v)?),
            "truststore_type" => {
                self.truststore.store_type = Some(toml_store_type(file, kpath, v)?)
            }
            "keystore_password" => self.keystore.password = Some(toml_secret(file, kpath, v)?),
            "truststore_password" => self.truststore.password = Some(toml_secret(file, kpath, v)?),
            "key_password" => self.key_password = Some(toml_secret(file, kpath, v)?),
            _ => {
                let a = toml_str(file, kpath, v)?.trim().to_string();
                if a.is_empty() {
                    return Err(ConfigError::new(file, kpath, "empty"));
                }
                self.alias = Some(a);
            }
        }
        Ok(())
    }

    /// Puts a cluster's stores (table at `path`) into its TLS settings, checking that the
    /// type and password of a store come with its location, and that a store and the PEM
    /// file keys are not both set.
    pub(super) fn apply_cluster(
        self,
        file: &str,
        path: &str,
        c: &mut ClusterSettings,
    ) -> Result<(), ConfigError> {
        let err = |field: &str, p: &str| ConfigError::new(file, format!("{path}.{field}"), p);
        let t = &mut c.tls;
        t.keystore = store(self.keystore, "ssl_keystore").map_err(|(f, p)| err(&f, p))?;
        t.truststore = store(self.truststore, "ssl_truststore").map_err(|(f, p)| err(&f, p))?;
        if t.keystore.is_some() && (t.certificate_file.is_some() || t.key_file.is_some()) {
            let field = if t.certificate_file.is_some() {
                "ssl_certificate_file"
            } else {
                "ssl_key_file"
            };
            return Err(err(
                field,
                "also set: ssl_keystore_location; give the client key either as a key store or as PEM files",
            ));
        }
        if t.truststore.is_some() && t.ca_file.is_some() {
            return Err(err(
                "ssl_ca_file",
                "also set: ssl_truststore_location; give the CAs either as a trust store or as a PEM file",
            ));
        }
        t.key_password = self.key_password;
        t.keystore_alias = self.alias;
        Ok(())
    }

    /// Puts the `[http]` key store into `h`.
    pub(super) fn apply_http(self, file: &str, h: &mut HttpSettings) -> Result<(), ConfigError> {
        let err = |field: &str, p: &str| ConfigError::new(file, format!("http.{field}"), p);
        h.tls_keystore = store(self.keystore, "tls_keystore").map_err(|(f, p)| err(&f, p))?;
        h.tls_key_password = self.key_password;
        h.tls_keystore_alias = self.alias;
        Ok(())
    }
}

/// A store from its parts; the type and password need the location (`prefix_location`).
fn store(
    parts: StoreParts,
    prefix: &'static str,
) -> Result<Option<StoreFile>, (String, &'static str)> {
    let Some(location) = parts.location else {
        if parts.store_type.is_some() {
            return Err((format!("{prefix}_type"), "set, but no store location is"));
        }
        if parts.password.is_some() {
            return Err((
                format!("{prefix}_password"),
                "set, but no store location is",
            ));
        }
        return Ok(None);
    };
    if location.is_empty() {
        return Err((format!("{prefix}_location"), "empty"));
    }
    Ok(Some(StoreFile {
        location: location.into(),
        store_type: parts
            .store_type
            .map_or(StoreTypeChoice::Detect, StoreTypeChoice::Set),
        password: parts.password,
    }))
}

/// `ssl.<kind>.type` of an mm2.properties, if set.
fn mm2_store_type(file: &str, get: Lookup, kind: &str) -> Result<Option<StoreType>, ConfigError> {
    let key = format!("ssl.{kind}.type");
    match get(&key) {
        None => Ok(None),
        Some((v, at)) => StoreType::parse(v).map(Some).ok_or_else(|| {
            at.error(file, format!("unknown store type `{}`", v.trim()))
                .allowed(StoreType::ALLOWED)
        }),
    }
}

/// A password (config providers resolved), if `key` is set.
fn mm2_password(
    file: &str,
    get: Lookup,
    providers: &[(String, ProviderKind)],
    key: &str,
) -> Result<Option<(Secret, Where)>, ConfigError> {
    match get(key) {
        None => Ok(None),
        Some((v, at)) => {
            let s = Secret::from_mm2_value(v.trim(), providers).map_err(|p| at.error(file, p))?;
            Ok(Some((s, at)))
        }
    }
}

/// The trust and key stores of a TLS cluster in mm2.properties: JKS (the default), PKCS12 or
/// PEM files, inline PEM (`ssl.truststore.certificates`, `ssl.keystore.certificate.chain` +
/// `ssl.keystore.key`), and their passwords.
pub(super) fn mm2_tls(
    file: &str,
    get: Lookup,
    providers: &[(String, ProviderKind)],
    c: &mut ClusterSettings,
) -> Result<(), ConfigError> {
    let ttype = mm2_store_type(file, get, "truststore")?;
    let tpass = mm2_password(file, get, providers, "ssl.truststore.password")?;
    if let Some((v, _)) = get("ssl.truststore.location") {
        let location = v.trim();
        match ttype {
            Some(StoreType::Pem) => {
                if let Some((_, at)) = tpass {
                    return Err(at.error(
                        file,
                        "a PEM trust store has no password (Kafka refuses one too); remove it",
                    ));
                }
                c.tls.ca_file = Some(location.into());
            }
            other => {
                c.tls.truststore = Some(StoreFile {
                    location: location.into(),
                    store_type: other.map_or(StoreTypeChoice::KafkaDefault, StoreTypeChoice::Set),
                    password: tpass.map(|(s, _)| s),
                })
            }
        }
    }
    if let Some((v, at)) = get("ssl.truststore.certificates") {
        if ttype.is_some_and(|t| t != StoreType::Pem) {
            return Err(at.error(file, "inline certificates need ssl.truststore.type=PEM"));
        }
        c.tls.ca_pem = Some(v.to_string());
    }

    let ktype = mm2_store_type(file, get, "keystore")?;
    let kpass = mm2_password(file, get, providers, "ssl.keystore.password")?;
    let key_password = mm2_password(file, get, providers, "ssl.key.password")?;
    let pem_password_error = |at: Where| {
        at.error(
            file,
            "a PEM key store has no store password (Kafka refuses one too); give an encrypted key's password as ssl.key.password",
        )
    };
    if let Some((v, _)) = get("ssl.keystore.location") {
        let location = v.trim();
        match ktype {
            Some(StoreType::Pem) => {
                if let Some((_, at)) = kpass {
                    return Err(pem_password_error(at));
                }
                c.tls.certificate_file = Some(location.into());
                c.tls.key_file = Some(location.into());
            }
            other => {
                c.tls.keystore = Some(StoreFile {
                    location: location.into(),
                    store_type: other.map_or(StoreTypeChoice::KafkaDefault, StoreTypeChoice::Set),
                    password: kpass.map(|(s, _)| s),
                })
            }
        }
    } else {
        let chain = get("ssl.keystore.certificate.chain");
        let key = get("ssl.keystore.key");
        match (chain, key) {
            (Some((chain, at)), Some((key, _))) => {
                if ktype.is_some_and(|t| t != StoreType::Pem) {
                    return Err(at.error(file, "an inline key store needs ssl.keystore.type=PEM"));
                }
                if let Some((_, at)) = kpass {
                    return Err(pem_password_error(at));
                }
                c.tls.certificate_pem = Some(chain.to_string());
                c.tls.key_pem = Some(
                    Secret::from_mm2_value(key.trim(), providers)
                        .map_err(|p| Where::key("ssl.keystore.key").error(file, p))?,
                );
            }
            (Some((_, at)), None) => {
                return Err(at.error(file, "set, but ssl.keystore.key (its private key) is not"))
            }
            (None, Some((_, at))) => {
                return Err(at.error(
                    file,
                    "set, but ssl.keystore.certificate.chain (its certificates) is not",
                ))
            }
            (None, None) => {}
        }
    }
    let has_key = c.tls.keystore.is_some() || c.tls.key_file.is_some() || c.tls.key_pem.is_some();
    if has_key {
        c.tls.key_password = key_password.map(|(s, _)| s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::parse_toml;
    use crate::config::testing::*;

    const SSL: &str = "[clusters.a]\nbootstrap_servers = \"h:1\"\nsecurity_protocol = \"SSL\"\n";

    #[test]
    fn toml_stores_and_passwords() {
        std::env::set_var("STRAIT_CFG_TEST_KS_PW", "ks-pass-Qx7");
        let pw = temp_file("ts.pw", "ts-pass-Lm2\n");
        let c = parse_toml(
            &format!(
                "{SSL}ssl_keystore_location = \"/etc/k.jks\"\nssl_keystore_type = \"jks\"\n\
                 ssl_keystore_password = {{ env = \"STRAIT_CFG_TEST_KS_PW\" }}\n\
                 ssl_key_password = \"key-pass-Zz9\"\nssl_keystore_alias = \"client\"\n\
                 ssl_truststore_location = \"/etc/t.p12\"\n\
                 ssl_truststore_password = {{ file = \"{}\" }}\n",
                pw.display()
            ),
            "s.toml",
        )
        .unwrap();
        let t = &c.clusters["a"].tls;
        let ks = t.keystore.as_ref().unwrap();
        assert_eq!(ks.location, Path::new("/etc/k.jks"));
        assert_eq!(ks.store_type, StoreTypeChoice::Set(StoreType::Jks));
        assert_eq!(ks.password.as_ref().unwrap().expose(), "ks-pass-Qx7");
        let ts = t.truststore.as_ref().unwrap();
        assert_eq!(ts.store_type, StoreTypeChoice::Detect);
        assert_eq!(ts.password.as_ref().unwrap().expose(), "ts-pass-Lm2");
        assert_eq!(t.key_password.as_ref().unwrap().expose(), "key-pass-Zz9");
        assert_eq!(t.keystore_alias.as_deref(), Some("client"));
        assert_eq!(
            c.clusters["a"].literal_secrets(),
            vec!["the key password of cluster a".to_string()]
        );
        let debug = format!("{c:?}");
        for s in ["ks-pass-Qx7", "ts-pass-Lm2", "key-pass-Zz9"] {
            assert!(!debug.contains(s), "{debug}");
        }
    }

    #[test]
    fn toml_store_errors() {
        let e = parse_toml(&format!("{SSL}ssl_keystore_type = \"BCFKS\"\n"), "s.toml").unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.ssl_keystore_type",
            "unknown store type `BCFKS`",
            Some("JKS, PKCS12, PEM"),
        );
        let e = parse_toml(
            &format!("{SSL}ssl_truststore_password = \"sekrit-pw-1\"\n"),
            "s.toml",
        )
        .unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.ssl_truststore_password",
            "no store location",
            None,
        );
        assert!(!e.to_string().contains("sekrit"));
        let e = parse_toml(
            &format!("{SSL}ssl_keystore_location = \"/k.jks\"\nssl_certificate_file = \"/c.pem\"\nssl_key_file = \"/k.pem\"\n"),
            "s.toml",
        )
        .unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.ssl_certificate_file",
            "also set",
            None,
        );
        let e = parse_toml(
            &format!("{SSL}ssl_truststore_location = \"/t.jks\"\nssl_ca_file = \"/c.pem\"\n"),
            "s.toml",
        )
        .unwrap_err();
        check(&e, "s.toml", "clusters.a.ssl_ca_file", "also set", None);
        let e = parse_toml(&format!("{SSL}ssl_keystore_alias = \"x\"\n"), "s.toml").unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.ssl_keystore_alias",
            "no key store",
            None,
        );
        let e = parse_toml(&format!("{SSL}ssl_key_password = \"p\"\n"), "s.toml").unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.ssl_key_password",
            "no key store",
            None,
        );
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nssl_keystore_location = \"/k.jks\"\n",
            "s.toml",
        )
        .unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.ssl_keystore_location",
            "the security protocol is PLAINTEXT",
            None,
        );
        let e = parse_toml(&format!("{SSL}ssl_keystore = \"/k.jks\"\n"), "s.toml").unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.ssl_keystore",
            "unknown key",
            Some("ssl_keystore_location"),
        );
    }

    #[test]
    fn toml_http_key_store() {
        std::env::set_var("STRAIT_CFG_TEST_HTTP_KS", "http-ks-pw");
        let c = parse_toml(
            &format!(
                "[http]\ntls_keystore_location = \"/etc/h.p12\"\ntls_keystore_type = \"PKCS12\"\n\
                 tls_keystore_password = {{ env = \"STRAIT_CFG_TEST_HTTP_KS\" }}\n{TWO}"
            ),
            "h.toml",
        )
        .unwrap();
        let h = c.http.unwrap();
        let ks = h.tls_keystore.as_ref().unwrap();
        assert_eq!(ks.store_type, StoreTypeChoice::Set(StoreType::Pkcs12));
        assert_eq!(ks.password.as_ref().unwrap().expose(), "http-ks-pw");
        let e = parse_toml(
            &format!("[http]\ntls_keystore_location = \"/h.p12\"\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n{TWO}"),
            "h.toml",
        )
        .unwrap_err();
        check(&e, "h.toml", "http.tls_cert", "also set", None);
        let e = parse_toml(
            &format!("[http]\ntls_keystore_password = \"x\"\n{TWO}"),
            "h.toml",
        )
        .unwrap_err();
        check(
            &e,
            "h.toml",
            "http.tls_keystore_password",
            "no store location",
            None,
        );
    }

    #[test]
    fn mm2_stores_default_to_jks_and_take_config_providers() {
        let secrets = temp_file(
            "mm2-stores.properties",
            "ks = mm2-ks-pw\nkey = mm2-key-pw\n",
        );
        std::env::set_var("STRAIT_CFG_TEST_MM2_TS", "mm2-ts-pw");
        let c = mm2_with(&format!(
            "a.security.protocol = SSL\n\
             a.ssl.keystore.location = /etc/a.jks\n\
             a.ssl.keystore.password = ${{file:{p}:ks}}\n\
             a.ssl.key.password = ${{file:{p}:key}}\n\
             a.ssl.truststore.location = /etc/t.jks\n\
             a.ssl.truststore.password = ${{env:STRAIT_CFG_TEST_MM2_TS}}\n\
             b.security.protocol = SSL\n\
             b.ssl.keystore.type = PKCS12\nb.ssl.keystore.location = /etc/b.p12\n\
             b.ssl.keystore.password = plain-b-pw\n\
             b.ssl.truststore.type = PEM\nb.ssl.truststore.location = /etc/ca.pem\n",
            p = secrets.display()
        ));
        let a = &c.clusters["a"].tls;
        let ks = a.keystore.as_ref().unwrap();
        assert_eq!(ks.store_type, StoreTypeChoice::KafkaDefault);
        assert_eq!(ks.password.as_ref().unwrap().expose(), "mm2-ks-pw");
        assert_eq!(a.key_password.as_ref().unwrap().expose(), "mm2-key-pw");
        let ts = a.truststore.as_ref().unwrap();
        assert_eq!(ts.store_type, StoreTypeChoice::KafkaDefault);
        assert_eq!(ts.password.as_ref().unwrap().expose(), "mm2-ts-pw");
        let b = &c.clusters["b"].tls;
        assert_eq!(
            b.keystore.as_ref().unwrap().store_type,
            StoreTypeChoice::Set(StoreType::Pkcs12)
        );
        assert_eq!(b.ca_file.as_deref(), Some(Path::new("/etc/ca.pem")));
        assert!(c.unsupported.is_empty(), "{:?}", c.unsupported);
        assert_eq!(
            c.clusters["b"].literal_secrets(),
            vec!["the key store password of cluster b".to_string()]
        );
        assert!(!format!("{c:?}").contains("pw"));
    }

    #[test]
    fn mm2_inline_pem_key_store() {
        std::env::set_var(
            "STRAIT_CFG_TEST_MM2_KEY",
            "-----BEGIN PRIVATE KEY-----\nx\n",
        );
        let c = mm2_with(
            "a.security.protocol = SSL\na.ssl.keystore.type = PEM\n\
             a.ssl.keystore.certificate.chain = -----BEGIN CERTIFICATE----- \\\n  abc \\\n  -----END CERTIFICATE-----\n\
             a.ssl.keystore.key = ${env:STRAIT_CFG_TEST_MM2_KEY}\n\
             a.ssl.key.password = kp\n",
        );
        let a = &c.clusters["a"].tls;
        assert!(a.certificate_pem.as_deref().unwrap().contains("abc"));
        assert!(a.key_pem.as_ref().unwrap().expose().contains("PRIVATE KEY"));
        assert_eq!(a.key_password.as_ref().unwrap().expose(), "kp");
        assert!(!format!("{c:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn mm2_store_errors() {
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SSL\na.ssl.truststore.type = BCFKS\na.ssl.truststore.location = /x\n"
        ));
        check(
            &e,
            "mm2.properties:5",
            "a.ssl.truststore.type",
            "unknown store type `BCFKS`",
            Some("JKS, PKCS12, PEM"),
        );
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SSL\na.ssl.keystore.type = PEM\na.ssl.keystore.location = /k.pem\na.ssl.keystore.password = sekrit-pw\n"
        ));
        assert_eq!(e.key, "a.ssl.keystore.password");
        assert!(
            e.problem.contains("PEM key store has no store password"),
            "{e}"
        );
        assert!(!e.to_string().contains("sekrit"));
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SSL\na.ssl.keystore.type = PEM\na.ssl.keystore.certificate.chain = x\n"
        ));
        assert_eq!(e.key, "a.ssl.keystore.certificate.chain");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SSL\na.ssl.truststore.location = /t.jks\na.ssl.truststore.password = ${{env:STRAIT_CFG_TEST_UNSET_TS}}\n"
        ));
        assert_eq!(e.key, "a.ssl.truststore.password");
        assert!(
            e.problem.contains("STRAIT_CFG_TEST_UNSET_TS is not set"),
            "{e}"
        );
    }
}
