//! GSSAPI (Kerberos) settings of a cluster in both formats: TOML's `sasl_kerberos_*` keys, and
//! in `mm2.properties` Kafka's `sasl.kerberos.service.name` and the JAAS options of
//! `com.sun.security.auth.module.Krb5LoginModule` (`useKeyTab`, `keyTab`, `principal`,
//! `useTicketCache`, `ticketCache`; `storeKey`, `doNotPrompt`, `refreshKrb5Config`,
//! `isInitiator` and `debug` are accepted and change nothing for a client).

use std::path::PathBuf;

use crate::sasl::gssapi::{KerberosSettings, KerberosSource, DEFAULT_SERVICE_NAME};

use super::error::{ConfigError, Where};
use super::mm2::Lookup;
use super::toml::toml_str;

/// The JAAS login module of GSSAPI.
pub(super) const KRB5_MODULE: &str = "com.sun.security.auth.module.Krb5LoginModule";

/// The TOML keys of GSSAPI settings.
pub(super) const TOML_KEYS: &[&str] = &[
    "sasl_kerberos_service_name",
    "sasl_kerberos_principal",
    "sasl_kerberos_keytab",
    "sasl_kerberos_ccache",
];

/// The mm2 keys of GSSAPI settings besides `sasl.jaas.config`.
pub(super) const MM2_KEYS: &[&str] = &["sasl.kerberos.service.name"];

/// `Krb5LoginModule` options that need nothing from a client like strait.
const IGNORED_OPTIONS: &[&str] = &[
    "storeKey",
    "doNotPrompt",
    "refreshKrb5Config",
    "isInitiator",
    "debug",
    "renewTGT",
];

/// GSSAPI settings as read, before they are checked.
#[derive(Default)]
pub(super) struct KerberosParts {
    service_name: Option<String>,
    principal: Option<String>,
    keytab: Option<PathBuf>,
    ccache: Option<String>,
    /// The first field set, for "set, but the mechanism is ..." errors.
    first: Option<&'static str>,
}

impl KerberosParts {
    /// Parts of settings made in code.
    pub(super) fn from_settings(k: KerberosSettings) -> KerberosParts {
        let mut p = KerberosParts {
            service_name: Some(k.service_name),
            principal: k.principal,
            first: Some("sasl_kerberos_principal"),
            ..KerberosParts::default()
        };
        match k.source {
            KerberosSource::Keytab(path) => p.keytab = Some(path),
            KerberosSource::TicketCache(Some(c)) => p.ccache = Some(c),
            KerberosSource::TicketCache(None) => {}
        }
        p
    }

    /// The first GSSAPI field set, if any.
    pub(super) fn first_set(&self) -> Option<&'static str> {
        self.first
    }

    fn mark(&mut self, field: &'static str) {
        self.first.get_or_insert(field);
    }

    /// Reads one TOML key of a cluster table; `Ok(false)` when it is not a GSSAPI key.
    pub(super) fn toml_key(
        &mut self,
        file: &str,
        kpath: &str,
        key: &str,
        v: &toml::Value,
    ) -> Result<bool, ConfigError> {
        let Some(field) = TOML_KEYS.iter().copied().find(|k| *k == key) else {
            return Ok(false);
        };
        let s = toml_str(file, kpath, v)?.trim().to_string();
        match field {
            "sasl_kerberos_service_name" => self.service_name = Some(s),
            "sasl_kerberos_principal" => self.principal = Some(s),
            "sasl_kerberos_keytab" => self.keytab = Some(s.into()),
            _ => self.ccache = Some(s),
        }
        self.mark(field);
        Ok(true)
    }

    /// Checks the parts and makes the settings. Errors name TOML fields.
    pub(super) fn finish(self) -> Result<KerberosSettings, (&'static str, String)> {
        if !cfg!(feature = "gssapi") {
            return Err((
                "sasl_mechanism",
                "GSSAPI needs strait built with the `gssapi` feature (Kerberos through the system's GSS-API library)".to_string(),
            ));
        }
        let service_name = self
            .service_name
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
        if service_name.is_empty() || service_name.contains(['@', '/']) {
            return Err((
                "sasl_kerberos_service_name",
                format!("`{service_name}` is not a service name (the first part of the brokers' principals, e.g. kafka)"),
            ));
        }
        let principal = self.principal.filter(|p| !p.is_empty());
        let source = match (self.keytab, self.ccache) {
            (Some(_), Some(_)) => {
                return Err((
                    "sasl_kerberos_ccache",
                    "set together with sasl_kerberos_keytab: give one source of tickets"
                        .to_string(),
                ))
            }
            (Some(keytab), None) => {
                check_keytab(&keytab).map_err(|p| ("sasl_kerberos_keytab", p))?;
                if principal.is_none() {
                    return Err((
                        "sasl_kerberos_principal",
                        "missing: a keytab needs the principal to authenticate as (e.g. strait@EXAMPLE.COM)".to_string(),
                    ));
                }
                KerberosSource::Keytab(keytab)
            }
            (None, Some(c)) if c.is_empty() => {
                return Err(("sasl_kerberos_ccache", "empty".to_string()))
            }
            (None, Some(c)) => KerberosSource::TicketCache(Some(c)),
            (None, None) => KerberosSource::TicketCache(None),
        };
        Ok(KerberosSettings {
            service_name,
            principal,
            source,
        })
    }

    /// Reads the `Krb5LoginModule` options.
    pub(super) fn mm2_jaas(
        &mut self,
        file: &str,
        at: &Where,
        options: &[(String, String)],
    ) -> Result<(), ConfigError> {
        let flag = |key: &str| {
            options
                .iter()
                .any(|(k, v)| k == key && v.trim().eq_ignore_ascii_case("true"))
        };
        let (use_keytab, use_cache) = (flag("useKeyTab"), flag("useTicketCache"));
        for (key, value) in options {
            match key.as_str() {
                "principal" => self.principal = Some(value.trim().to_string()),
                "keyTab" if use_keytab => self.keytab = Some(value.trim().into()),
                "ticketCache" if use_cache => self.ccache = Some(value.trim().to_string()),
                "useKeyTab" | "useTicketCache" | "keyTab" | "ticketCache" => {}
                k if IGNORED_OPTIONS.contains(&k) => {}
                k => {
                    return Err(at
                        .error(
                            file,
                            format!("Krb5LoginModule option `{k}` is not supported"),
                        )
                        .allowed("useKeyTab, keyTab, principal, useTicketCache, ticketCache"))
                }
            }
        }
        if use_keytab && self.keytab.is_none() {
            return Err(at.error(file, "useKeyTab=true needs keyTab=\"PATH\""));
        }
        if !use_keytab && !use_cache {
            return Err(at.error(
                file,
                "neither useKeyTab nor useTicketCache is true: strait cannot prompt for a password",
            ));
        }
        if use_keytab && use_cache {
            // Java tries the cache first, then the keytab; strait keeps its own tickets.
            self.ccache = None;
        }
        self.mark("sasl_kerberos_principal");
        Ok(())
    }
}

/// A keytab must be a readable file (its contents are never shown).
fn check_keytab(path: &std::path::Path) -> Result<(), String> {
    match std::fs::File::open(path).and_then(|f| f.metadata()) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(format!("{} is not a file", path.display())),
        Err(e) => Err(format!("cannot read the keytab {}: {e}", path.display())),
    }
}

/// The mm2 key behind a TOML field of these settings.
pub(super) fn mm2_key(field: &str) -> &'static str {
    match field {
        "sasl_kerberos_service_name" => "sasl.kerberos.service.name",
        _ => "sasl.jaas.config",
    }
}

/// Reads the mm2 keys of GSSAPI (not the JAAS line: see [`KerberosParts::mm2_jaas`]).
pub(super) fn mm2_parts(get: Lookup) -> KerberosParts {
    let mut p = KerberosParts::default();
    if let Some((v, _)) = get("sasl.kerberos.service.name") {
        p.service_name = Some(v.trim().to_string());
    }
    p
}

#[cfg(all(test, feature = "gssapi"))]
mod tests {
    use crate::config::parse_toml;
    use crate::config::testing::*;
    use crate::sasl::gssapi::{KerberosSettings, KerberosSource};
    use crate::sasl::{SaslCredentials, SaslMechanism};

    const BASE: &str =
        "[clusters.a]\nbootstrap_servers = \"h:1\"\nsecurity_protocol = \"SASL_PLAINTEXT\"\n";

    fn kerberos_of(c: &crate::config::Config) -> KerberosSettings {
        let s = c.clusters["a"].sasl.as_ref().unwrap();
        assert_eq!(s.mechanism, SaslMechanism::Gssapi);
        match &s.credentials {
            SaslCredentials::Kerberos(k) => k.clone(),
            other => panic!("not Kerberos: {other:?}"),
        }
    }

    #[test]
    fn toml_keytab_ticket_cache_and_default_cache() {
        let keytab = temp_file("strait.keytab", "not really a keytab");
        let c = parse_toml(
            &format!(
                "{BASE}sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_principal = \"strait@EXAMPLE.COM\"\nsasl_kerberos_keytab = \"{}\"\n",
                keytab.display()
            ),
            "k.toml",
        )
        .unwrap();
        let k = kerberos_of(&c);
        assert_eq!(k.service_name, "kafka");
        assert_eq!(k.principal.as_deref(), Some("strait@EXAMPLE.COM"));
        assert_eq!(k.source, KerberosSource::Keytab(keytab));
        let c = parse_toml(
            &format!("{BASE}sasl_mechanism = \"gssapi\"\nsasl_kerberos_service_name = \"kafka-prod\"\nsasl_kerberos_ccache = \"FILE:/tmp/cc\"\n"),
            "k.toml",
        )
        .unwrap();
        let k = kerberos_of(&c);
        assert_eq!(k.service_name, "kafka-prod");
        assert_eq!(
            k.source,
            KerberosSource::TicketCache(Some("FILE:/tmp/cc".into()))
        );
        let c = parse_toml(&format!("{BASE}sasl_mechanism = \"GSSAPI\"\n"), "k.toml").unwrap();
        assert_eq!(kerberos_of(&c).source, KerberosSource::TicketCache(None));
    }

    #[test]
    fn toml_kerberos_errors_name_the_key() {
        let keytab = temp_file("strait2.keytab", "x");
        let k = keytab.display();
        let err = |extra: &str| parse_toml(&format!("{BASE}{extra}"), "k.toml").unwrap_err();
        let e = err(&format!(
            "sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_keytab = \"{k}\"\n"
        ));
        assert_eq!(e.key, "clusters.a.sasl_kerberos_principal");
        let e = err("sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_principal = \"p@R\"\nsasl_kerberos_keytab = \"/no/such.keytab\"\n");
        assert_eq!(e.key, "clusters.a.sasl_kerberos_keytab");
        assert!(e.problem.contains("/no/such.keytab"), "{e}");
        let e = err(&format!("sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_principal = \"p@R\"\nsasl_kerberos_keytab = \"{k}\"\nsasl_kerberos_ccache = \"FILE:/c\"\n"));
        assert_eq!(e.key, "clusters.a.sasl_kerberos_ccache");
        let e = err("sasl_mechanism = \"GSSAPI\"\nsasl_kerberos_service_name = \"kafka/host\"\n");
        assert_eq!(e.key, "clusters.a.sasl_kerberos_service_name");
        let e = err("sasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"u\"\nsasl_password = \"p\"\nsasl_kerberos_principal = \"p@R\"\n");
        assert_eq!(e.key, "clusters.a.sasl_kerberos_principal");
        assert!(e.problem.contains("GSSAPI"), "{e}");
        let e = err("sasl_mechanism = \"GSSAPI\"\nsasl_username = \"u\"\n");
        assert_eq!(e.key, "clusters.a.sasl_username");
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nsasl_kerberos_ccache = \"FILE:/c\"\n",
            "k.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_kerberos_ccache");
        assert!(e.problem.contains("PLAINTEXT"), "{e}");
    }

    #[test]
    fn mm2_krb5_login_module() {
        let keytab = temp_file("mm2.keytab", "x");
        let c = mm2_with(&format!(
            "a.security.protocol = SASL_PLAINTEXT\na.sasl.mechanism = GSSAPI\n\
             a.sasl.kerberos.service.name = kafka-x\n\
             a.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required \\\n  \
             useKeyTab=true storeKey=true keyTab=\"{}\" principal=\"strait@EXAMPLE.COM\";\n\
             b.security.protocol = SASL_PLAINTEXT\nb.sasl.mechanism = GSSAPI\n\
             b.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true;\n",
            keytab.display()
        ));
        let k = kerberos_of(&c);
        assert_eq!(
            (k.service_name.as_str(), k.principal.as_deref()),
            ("kafka-x", Some("strait@EXAMPLE.COM"))
        );
        assert_eq!(k.source, KerberosSource::Keytab(keytab));
        assert!(c.unsupported.is_empty(), "{:?}", c.unsupported);
        match &c.clusters["b"].sasl.as_ref().unwrap().credentials {
            SaslCredentials::Kerberos(k) => {
                assert_eq!(k.source, KerberosSource::TicketCache(None));
                assert_eq!(k.service_name, "kafka");
            }
            other => panic!("{other:?}"),
        }
        let c = mm2_with(
            "a.security.protocol = SASL_PLAINTEXT\na.sasl.mechanism = GSSAPI\n\
             a.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache=\"/tmp/krb5cc_7\";\n",
        );
        assert_eq!(
            kerberos_of(&c).source,
            KerberosSource::TicketCache(Some("/tmp/krb5cc_7".into()))
        );
    }

    #[test]
    fn mm2_krb5_errors() {
        let jaas = |opts: &str| {
            mm2_err(&format!(
                "{MM2_BASE}a.security.protocol = SASL_PLAINTEXT\na.sasl.mechanism = GSSAPI\n\
                 a.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required {opts};\n"
            ))
        };
        let e = jaas("principal=\"p@R\"");
        assert_eq!(e.key, "a.sasl.jaas.config");
        assert!(e.problem.contains("cannot prompt"), "{e}");
        let e = jaas("useKeyTab=true principal=\"p@R\"");
        assert!(e.problem.contains("keyTab"), "{e}");
        let e = jaas("useTicketCache=true tryFirstPass=true");
        assert!(e.problem.contains("tryFirstPass"), "{e}");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_PLAINTEXT\na.sasl.mechanism = SCRAM-SHA-512\n\
             a.sasl.jaas.config = com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true;\n"
        ));
        assert!(e.problem.contains("does not implement"), "{e}");
    }
}
