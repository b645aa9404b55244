//! Security settings of a cluster in both formats: SASL credentials and TLS files, checked
//! against the security protocol; secrets in TOML (`{ env = ... }`, `{ file = ... }`, or a
//! string); and in `mm2.properties`, `sasl.jaas.config` with Kafka's config providers (trust
//! and key stores are read in `stores`).

use std::path::Path;

use crate::sasl::{SaslCredentials, SaslMechanism, SaslSettings};
use crate::secret::{ProviderKind, Secret};

use super::error::{ConfigError, Where};
use super::kerberos::{self, KerberosParts, KRB5_MODULE};
use super::mm2::{mm2_list, Lookup};
use super::oauth::{self, OAuthParts, MSK_MODULE, OAUTH_MODULE};
use super::properties::{parse_jaas, Props};
use super::toml::{toml_str, unknown_key, wrong_type};
use super::{ClusterSettings, SecurityProtocol};

/// The forms a TOML secret takes.
const SECRET_FORMS: &str =
    "{ env = \"VAR\" }, { file = \"PATH\" }, { file = \"PATH\", key = \"KEY\" } or a string";

/// SASL settings as read, before they are checked against the security protocol.
#[derive(Default)]
pub(super) struct SaslParts {
    /// `sasl_mechanism` / `sasl.mechanism`.
    pub(super) mechanism: Option<SaslMechanism>,
    /// The user name.
    pub(super) username: Option<String>,
    /// The password.
    pub(super) password: Option<Secret>,
    /// OAUTHBEARER settings.
    pub(super) oauth: OAuthParts,
    /// GSSAPI (Kerberos) settings.
    pub(super) kerberos: KerberosParts,
}

impl SaslParts {
    /// The parts of settings already made (all set), or none.
    pub(super) fn from_settings(sasl: Option<SaslSettings>) -> SaslParts {
        let Some(s) = sasl else {
            return SaslParts::default();
        };
        let mut parts = SaslParts {
            mechanism: Some(s.mechanism),
            ..SaslParts::default()
        };
        match s.credentials {
            SaslCredentials::Password { username, password } => {
                parts.username = Some(username);
                parts.password = Some(password);
            }
            SaslCredentials::OAuthBearer(o) => parts.oauth = OAuthParts::from_settings(*o),
            SaslCredentials::Kerberos(k) => parts.kerberos = KerberosParts::from_settings(k),
        }
        parts
    }

    /// A field set for a mechanism other than `mechanism` (OAUTHBEARER or GSSAPI keys), with
    /// the mechanism it belongs to.
    fn foreign_field(&self, mechanism: SaslMechanism) -> Option<(&'static str, &'static str)> {
        let oauth = self.oauth.first_set().map(|f| (f, "OAUTHBEARER"));
        let kerberos = self.kerberos.first_set().map(|f| (f, "GSSAPI"));
        match mechanism {
            SaslMechanism::OAuthBearer => kerberos,
            SaslMechanism::Gssapi => oauth,
            _ => oauth.or(kerberos),
        }
    }

    /// Checks the parts against the protocol and the mechanism. Errors name TOML fields.
    pub(super) fn finish(
        self,
        protocol: SecurityProtocol,
    ) -> Result<Option<SaslSettings>, (&'static str, String)> {
        let password_fields = [
            ("sasl_username", self.username.is_some()),
            ("sasl_password", self.password.is_some()),
        ];
        if !protocol.uses_sasl() {
            let set = [("sasl_mechanism", self.mechanism.is_some())]
                .into_iter()
                .chain(password_fields)
                .chain(self.oauth.first_set().map(|f| (f, true)))
                .chain(self.kerberos.first_set().map(|f| (f, true)));
            if let Some((field, _)) = set.into_iter().find(|(_, s)| *s) {
                return Err((
                    field,
                    format!(
                        "set, but the security protocol is {} (SASL needs SASL_PLAINTEXT or SASL_SSL)",
                        protocol.as_str()
                    ),
                ));
            }
            return Ok(None);
        }
        let p = protocol.as_str();
        let mechanism = self.mechanism.ok_or((
            "sasl_mechanism",
            format!("missing: {p} needs a SASL mechanism"),
        ))?;
        let m = mechanism.as_str();
        if let Some((field, owner)) = self.foreign_field(mechanism) {
            return Err((
                field,
                format!("set, but sasl_mechanism is {m} (this key is for {owner})"),
            ));
        }
        if mechanism.uses_password() {
            let username = self
                .username
                .filter(|u| !u.is_empty())
                .ok_or(("sasl_username", format!("missing: {p} needs a user name")))?;
            let password = self
                .password
                .ok_or(("sasl_password", format!("missing: {p} needs a password")))?;
            return Ok(Some(SaslSettings::password(mechanism, &username, password)));
        }
        if let Some((field, _)) = password_fields.into_iter().find(|(_, s)| *s) {
            return Err((
                field,
                format!("set, but sasl_mechanism is {m}, which uses no user name or password"),
            ));
        }
        let credentials = match mechanism {
            SaslMechanism::Gssapi => SaslCredentials::Kerberos(self.kerberos.finish()?),
            _ => SaslCredentials::OAuthBearer(Box::new(self.oauth.finish()?)),
        };
        Ok(Some(SaslSettings {
            mechanism,
            credentials,
        }))
    }
}

/// Checks TLS settings against the security protocol. Errors name TOML fields.
pub(super) fn check_security(c: &ClusterSettings) -> Result<(), (&'static str, String)> {
    let t = &c.tls;
    let set = [
        ("ssl_ca_file", t.ca_file.is_some() || t.ca_pem.is_some()),
        ("ssl_certificate_file", t.certificate_file.is_some()),
        ("ssl_key_file", t.key_file.is_some()),
        ("ssl_server_name", t.server_name.is_some()),
        (
            "ssl_keystore_location",
            t.keystore.is_some() || t.key_pem.is_some(),
        ),
        ("ssl_truststore_location", t.truststore.is_some()),
        ("ssl_key_password", t.key_password.is_some()),
        ("ssl_keystore_alias", t.keystore_alias.is_some()),
    ];
    if !c.security_protocol.uses_tls() {
        if let Some((field, _)) = set.iter().find(|(_, s)| *s) {
            return Err((
                field,
                format!(
                    "set, but the security protocol is {} (TLS needs SSL or SASL_SSL)",
                    c.security_protocol.as_str()
                ),
            ));
        }
        return Ok(());
    }
    match (&t.certificate_file, &t.key_file) {
        (Some(_), None) => {
            return Err((
                "ssl_key_file",
                "missing: a client certificate needs its private key".to_string(),
            ))
        }
        (None, Some(_)) => {
            return Err((
                "ssl_certificate_file",
                "missing: a client private key needs its certificate".to_string(),
            ))
        }
        _ => {}
    }
    if let Some(n) = &t.server_name {
        crate::tls::server_name("", Some(n)).map_err(|p| ("ssl_server_name", p))?;
    }
    if t.keystore_alias.is_some() && t.keystore.is_none() {
        return Err((
            "ssl_keystore_alias",
            "set, but there is no key store (ssl_keystore_location)".to_string(),
        ));
    }
    if t.key_password.is_some()
        && t.keystore.is_none()
        && t.key_file.is_none()
        && t.key_pem.is_none()
    {
        return Err((
            "ssl_key_password",
            "set, but there is no key store or key file to use it with".to_string(),
        ));
    }
    Ok(())
}

/// A secret in TOML: a string, `{ env = "VAR" }`, `{ file = "PATH" }` or
/// `{ file = "PATH", key = "KEY" }`.
pub(super) fn toml_secret(file: &str, path: &str, v: &toml::Value) -> Result<Secret, ConfigError> {
    match v {
        toml::Value::String(s) if s.is_empty() => {
            Err(ConfigError::new(file, path, "empty").allowed(SECRET_FORMS))
        }
        toml::Value::String(s) => Ok(Secret::literal(s)),
        toml::Value::Table(t) => {
            for k in t.keys() {
                if !["env", "file", "key"].contains(&k.as_str()) {
                    return Err(unknown_key(
                        file,
                        &format!("{path}.{k}"),
                        k,
                        &["env", "file", "key"],
                        "",
                    ));
                }
            }
            let resolved = match (t.get("env"), t.get("file"), t.get("key")) {
                (Some(e), None, None) => {
                    Secret::from_env(toml_str(file, &format!("{path}.env"), e)?)
                }
                (None, Some(f), None) => {
                    Secret::from_file(Path::new(toml_str(file, &format!("{path}.file"), f)?))
                }
                (None, Some(f), Some(k)) => Secret::from_properties_file(
                    Path::new(toml_str(file, &format!("{path}.file"), f)?),
                    toml_str(file, &format!("{path}.key"), k)?,
                ),
                _ => {
                    return Err(ConfigError::new(file, path, "give either `env` or `file`")
                        .allowed(SECRET_FORMS))
                }
            };
            resolved.map_err(|p| ConfigError::new(file, path, p))
        }
        other => Err(wrong_type(file, path, other, "a secret").allowed(SECRET_FORMS)),
    }
}

/// JAAS login module of SASL/PLAIN.
pub(super) const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// JAAS login module of SASL/SCRAM.
pub(super) const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// The config providers an mm2.properties declares with a class strait implements.
pub(super) fn mm2_providers(props: &Props) -> Vec<(String, ProviderKind)> {
    let Some((names, _)) = props.get("config.providers") else {
        return Vec::new();
    };
    mm2_list(names)
        .into_iter()
        .filter_map(|name| {
            let (class, _) = props.get(&format!("config.providers.{name}.class"))?;
            Some((name, ProviderKind::from_class(class)?))
        })
        .collect()
}

/// Whether a `config.providers*` key only declares providers strait implements.
pub(super) fn mm2_provider_key_understood(key: &str, props: &Props) -> bool {
    if key == "config.providers" {
        let Some((names, _)) = props.get(key) else {
            return false;
        };
        let known = mm2_providers(props);
        return mm2_list(names)
            .iter()
            .all(|n| known.iter().any(|(k, _)| k == n));
    }
    key.strip_prefix("config.providers.")
        .and_then(|rest| rest.strip_suffix(".class"))
        .is_some_and(|_| {
            props
                .get(key)
                .is_some_and(|(class, _)| ProviderKind::from_class(class).is_some())
        })
}

/// The mm2 key for a TOML security field.
fn mm2_security_key(field: &str) -> &'static str {
    match field {
        "sasl_mechanism" => "sasl.mechanism",
        "sasl_username" | "sasl_password" => "sasl.jaas.config",
        "ssl_ca_file" | "ssl_truststore_location" => "ssl.truststore.location",
        "ssl_key_password" => "ssl.key.password",
        f if f.starts_with("sasl_kerberos_") => kerberos::mm2_key(f),
        f if f.starts_with("sasl_") => oauth::mm2_key(f),
        _ => "ssl.keystore.location",
    }
}

/// Reads a cluster's SASL and TLS settings from mm2.properties (`get` looks up the
/// cluster's own key, then the global one).
pub(super) fn mm2_security(
    file: &str,
    alias: &str,
    get: Lookup,
    providers: &[(String, ProviderKind)],
    c: &mut ClusterSettings,
) -> Result<(), ConfigError> {
    // As in Kafka's clients, SASL and SSL settings apply only to protocols that use them
    // (a global `sasl.mechanism` does not break a PLAINTEXT cluster).
    let protocol = c.security_protocol;
    let sasl = if protocol.uses_sasl() {
        mm2_sasl(file, get, providers)?
    } else {
        SaslParts::default()
    };
    let field_at = |field: &str| {
        let key = mm2_security_key(field);
        get(key)
            .map(|(_, at)| at)
            .unwrap_or_else(|| Where::key(format!("{alias}.{key}")))
    };
    c.sasl = sasl
        .finish(c.security_protocol)
        .map_err(|(field, p)| field_at(field).error(file, p))?;
    oauth::fill_msk_region(c);
    if !protocol.uses_tls() {
        return Ok(());
    }
    super::stores::mm2_tls(file, get, providers, c)?;
    check_security(c).map_err(|(field, p)| field_at(field).error(file, p))
}

/// `sasl.mechanism` and the credentials in `sasl.jaas.config`.
fn mm2_sasl(
    file: &str,
    get: Lookup,
    providers: &[(String, ProviderKind)],
) -> Result<SaslParts, ConfigError> {
    let mut sasl = SaslParts {
        oauth: oauth::mm2_parts(file, get, providers)?,
        kerberos: kerberos::mm2_parts(get),
        ..SaslParts::default()
    };
    if let Some((v, at)) = get("sasl.mechanism") {
        if v.trim().eq_ignore_ascii_case("AWS_MSK_IAM") {
            // Served over OAUTHBEARER (see the key's note in `Config::unsupported`).
            sasl.mechanism = Some(SaslMechanism::OAuthBearer);
            sasl.oauth.set_msk();
        }
        let mechanism = sasl.mechanism.or_else(|| SaslMechanism::parse(v));
        sasl.mechanism = Some(mechanism.ok_or_else(|| {
            at.error(
                file,
                format!("unknown or unsupported SASL mechanism `{}`", v.trim()),
            )
            .allowed(format!("{}, AWS_MSK_IAM", SaslMechanism::allowed()))
        })?);
    }
    if let Some((v, at)) = get("sasl.jaas.config") {
        mm2_jaas(file, v, &at, providers, &mut sasl)?;
    }
    Ok(sasl)
}

/// Reads the user name and password of a PLAIN or SCRAM login module (`value`, set at `at`),
/// which must match the mechanism already in `sasl`.
fn mm2_jaas(
    file: &str,
    value: &str,
    at: &Where,
    providers: &[(String, ProviderKind)],
    sasl: &mut SaslParts,
) -> Result<(), ConfigError> {
    let jaas = parse_jaas(value).map_err(|p| at.error(file, p))?;
    let module_mechanisms: &[SaslMechanism] = match jaas.module.as_str() {
        PLAIN_MODULE => &[SaslMechanism::Plain],
        SCRAM_MODULE => &[SaslMechanism::ScramSha256, SaslMechanism::ScramSha512],
        OAUTH_MODULE | MSK_MODULE => &[SaslMechanism::OAuthBearer],
        KRB5_MODULE => &[SaslMechanism::Gssapi],
        other => {
            return Err(at
                .error(file, format!("login module {other} is not supported"))
                .allowed(format!(
                    "{PLAIN_MODULE}, {SCRAM_MODULE}, {OAUTH_MODULE}, {MSK_MODULE}, {KRB5_MODULE}"
                )))
        }
    };
    if let Some(m) = sasl.mechanism {
        if !module_mechanisms.contains(&m) {
            return Err(at.error(
                file,
                format!(
                    "login module {} does not implement sasl.mechanism {}",
                    jaas.module,
                    m.as_str()
                ),
            ));
        }
    }
    if jaas.module == OAUTH_MODULE {
        return sasl.oauth.mm2_jaas(file, at, &jaas.options, providers);
    }
    if jaas.module == MSK_MODULE {
        return sasl
            .oauth
            .mm2_msk_module(file, at, &jaas.options, providers);
    }
    if jaas.module == KRB5_MODULE {
        return sasl.kerberos.mm2_jaas(file, at, &jaas.options);
    }
    for (key, value) in &jaas.options {
        let secret = || {
            Secret::from_mm2_value(value, providers)
                .map_err(|p| at.error(file, format!("option `{key}`: {p}")))
        };
        match key.as_str() {
            "username" => sasl.username = Some(secret()?.expose().to_string()),
            "password" => sasl.password = Some(secret()?),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_toml;
    use crate::config::testing::*;

    /// The user name and password of PLAIN or SCRAM settings.
    fn password_of(s: &SaslSettings) -> (&str, &str) {
        match &s.credentials {
            SaslCredentials::Password { username, password } => (username, password.expose()),
            other => panic!("no password: {other:?}"),
        }
    }

    #[test]
    fn toml_security_settings_and_secret_forms() {
        std::env::set_var("STRAIT_CFG_TEST_PW", "env-pass-1");
        let pw_file = temp_file("pw", "file-pass-2\n");
        let props = temp_file("pw.properties", "b.password=props-pass-3\n");
        let text = format!(
            r#"
[clusters.a]
bootstrap_servers = "h:1"
security_protocol = "SASL_SSL"
sasl_mechanism = "SCRAM-SHA-512"
sasl_username = "alice"
sasl_password = {{ env = "STRAIT_CFG_TEST_PW" }}
ssl_ca_file = "/etc/ca.pem"
ssl_certificate_file = "/etc/c.pem"
ssl_key_file = "/etc/c.key"
ssl_server_name = "kafka.internal"
[clusters.b]
bootstrap_servers = "h:2"
security_protocol = "SASL_PLAINTEXT"
sasl_mechanism = "PLAIN"
sasl_username = "bob"
sasl_password = {{ file = "{}", key = "b.password" }}
[clusters.c]
bootstrap_servers = "h:3"
security_protocol = "SASL_PLAINTEXT"
sasl_mechanism = "SCRAM-SHA-256"
sasl_username = "carol"
sasl_password = {{ file = "{}" }}
"#,
            props.display(),
            pw_file.display()
        );
        let c = parse_toml(&text, "s.toml").unwrap();
        let a = &c.clusters["a"];
        let sa = a.sasl.as_ref().unwrap();
        assert_eq!(sa.mechanism, SaslMechanism::ScramSha512);
        assert_eq!(password_of(sa), ("alice", "env-pass-1"));
        assert_eq!(a.tls.ca_file.as_deref(), Some(Path::new("/etc/ca.pem")));
        assert_eq!(a.tls.server_name.as_deref(), Some("kafka.internal"));
        assert_eq!(
            password_of(c.clusters["b"].sasl.as_ref().unwrap()).1,
            "props-pass-3"
        );
        assert_eq!(
            password_of(c.clusters["c"].sasl.as_ref().unwrap()).1,
            "file-pass-2"
        );
        assert!(c.clusters["a"].literal_secrets().is_empty());
        let debug = format!("{c:?}");
        for secret in ["env-pass-1", "props-pass-3", "file-pass-2"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }

    #[test]
    fn toml_security_errors_name_the_key_not_the_value() {
        let base = "[clusters.a]\nbootstrap_servers = \"h:1\"\n";
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password = {{ env = \"STRAIT_CFG_TEST_UNSET\" }}\n"),
            "s.toml",
        )
        .unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.sasl_password",
            "environment variable STRAIT_CFG_TEST_UNSET is not set",
            None,
        );
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"NTLM\"\n"),
            "s.toml",
        )
        .unwrap_err();
        check(
            &e,
            "s.toml",
            "clusters.a.sasl_mechanism",
            "unknown SASL mechanism `NTLM`",
            Some("PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI"),
        );
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_password = \"hunter2\"\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_username");
        assert!(!e.to_string().contains("hunter2"));
        let e = parse_toml(&format!("{base}sasl_mechanism = \"PLAIN\"\n"), "s.toml").unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_mechanism");
        assert!(e.problem.contains("PLAINTEXT"), "{e}");
        let e = parse_toml(&format!("{base}ssl_ca_file = \"/x\"\n"), "s.toml").unwrap_err();
        assert_eq!(e.key, "clusters.a.ssl_ca_file");
        let e = parse_toml(
            &format!("{base}security_protocol = \"SSL\"\nssl_certificate_file = \"/c\"\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.ssl_key_file");
        let e = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password = {{ vault = \"x\" }}\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_password.vault");
        let c = parse_toml(
            &format!("{base}security_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password = \"hunter2\"\n"),
            "s.toml",
        )
        .unwrap();
        assert_eq!(
            c.clusters["a"].literal_secrets(),
            vec!["the SASL password of cluster a".to_string()]
        );
    }

    #[test]
    fn mm2_sasl_ssl_with_config_providers() {
        let props = temp_file("mm2.secrets", "b.pw = from-props\n");
        std::env::set_var("STRAIT_CFG_TEST_MM2", "from-env");
        let c = mm2_with(&format!(
            "config.providers = file, env\n\
             config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n\
             config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
             a.security.protocol = SASL_SSL\n\
             a.sasl.mechanism = SCRAM-SHA-256\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"${{env:STRAIT_CFG_TEST_MM2}}\";\n\
             a.ssl.truststore.type = PEM\n\
             a.ssl.truststore.location = /etc/ca.pem\n\
             b.security.protocol = SASL_PLAINTEXT\n\
             b.sasl.mechanism = PLAIN\n\
             b.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required \\\n  username=\"bob\" password=\"${{file:{}:b.pw}}\";\n",
            props.display()
        ));
        let a = &c.clusters["a"];
        assert_eq!(a.security_protocol, SecurityProtocol::SaslSsl);
        let sa = a.sasl.as_ref().unwrap();
        assert_eq!(
            (sa.mechanism, password_of(sa).0),
            (SaslMechanism::ScramSha256, "alice")
        );
        assert_eq!(password_of(sa).1, "from-env");
        assert_eq!(a.tls.ca_file.as_deref(), Some(Path::new("/etc/ca.pem")));
        let sb = c.clusters["b"].sasl.as_ref().unwrap();
        assert_eq!(password_of(sb).1, "from-props");
        assert!(c.unsupported.is_empty(), "{:?}", c.unsupported);
        assert!(!format!("{c:?}").contains("from-env"));
    }

    #[test]
    fn mm2_security_errors() {
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SSL\na.ssl.truststore.type = JCEKS\na.ssl.truststore.location = /x.p12\n"
        ));
        assert_eq!(e.key, "a.ssl.truststore.type");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = SCRAM-SHA-512\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"sekrit\";\n"
        ));
        assert_eq!(e.key, "a.sasl.jaas.config");
        assert!(e.problem.contains("does not implement"), "{e}");
        assert!(!e.to_string().contains("sekrit"));
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"sekrit\n"
        ));
        assert!(e.problem.contains("unterminated"), "{e}");
        assert!(!e.to_string().contains("sekrit"));
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
             a.sasl.jaas.config = com.example.NtlmLoginModule required;\n"
        ));
        assert!(e.problem.contains("not supported"), "{e}");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = PLAIN\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"${{env:STRAIT_CFG_TEST_UNSET2}}\";\n"
        ));
        assert!(
            e.problem.contains("STRAIT_CFG_TEST_UNSET2 is not set"),
            "{e}"
        );
        let e = mm2_err(&format!("{MM2_BASE}a.security.protocol = SASL_SSL\n"));
        assert_eq!(e.key, "a.sasl.mechanism");
    }
}
