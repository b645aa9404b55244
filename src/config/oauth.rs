//! OAUTHBEARER settings of a cluster in both formats: TOML's `sasl_oauthbearer_*` and
//! `sasl_login_*` keys, and in `mm2.properties` Kafka's own keys
//! (`sasl.oauthbearer.token.endpoint.url`, `sasl.login.callback.handler.class`, the
//! `OAuthBearerLoginModule` JAAS options `clientId`, `clientSecret`, `scope`, `extension_<name>`
//! and `ssl.truststore.*`, Kafka 4.1's `sasl.oauthbearer.client.credentials.*`, and the
//! `sasl.login.*` refresh and retry settings).

use std::path::PathBuf;
use std::time::Duration;

use crate::sasl::oauth::{
    message::check_extension, ClientCredentials, OAuthSettings, RefreshSettings, TokenProvider,
};
use crate::secret::{ProviderKind, Secret};
use crate::tls::TlsSettings;

use super::error::{ConfigError, Where};
use super::mm2::Lookup;
use super::security::toml_secret;
use super::toml::{toml_duration, toml_str, wrong_type};

/// The JAAS login module of OAUTHBEARER.
pub(super) const OAUTH_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// Login callback handlers that fetch tokens with client credentials (Kafka 3.4+ and the
/// older package).
const OIDC_HANDLERS: &[&str] = &[
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
];

/// The login callback handler of Amazon MSK IAM over OAUTHBEARER.
const MSK_HANDLER: &str = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler";
/// The login module of the older `AWS_MSK_IAM` mechanism.
pub(super) const MSK_MODULE: &str = "software.amazon.msk.auth.iam.IAMLoginModule";

/// The TOML keys of OAUTHBEARER settings.
pub(super) const TOML_KEYS: &[&str] = &[
    "sasl_oauthbearer_token_endpoint_url",
    "sasl_oauthbearer_client_id",
    "sasl_oauthbearer_client_secret",
    "sasl_oauthbearer_scope",
    "sasl_oauthbearer_extensions",
    "sasl_oauthbearer_ca_file",
    "sasl_oauthbearer_sub_claim_name",
    "sasl_login_connect_timeout_ms",
    "sasl_login_read_timeout_ms",
    "sasl_login_refresh_window_factor",
    "sasl_login_refresh_window_jitter",
    "sasl_login_refresh_min_period_secs",
    "sasl_login_refresh_buffer_secs",
    "sasl_login_retry_backoff_ms",
    "sasl_login_retry_backoff_max_ms",
    "sasl_oauthbearer_provider",
    "sasl_aws_region",
    "sasl_aws_profile",
    "sasl_aws_role_arn",
    "sasl_aws_role_session_name",
    "sasl_aws_sts_region",
];

/// The values of `sasl_oauthbearer_provider`.
const PROVIDERS: &str = "oidc, aws_msk_iam";

/// The mm2.properties keys read here (per cluster or global).
pub(super) const MM2_KEYS: &[&str] = &[
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.login.callback.handler.class",
    "sasl.oauthbearer.client.credentials.client.id",
    "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.scope",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "sasl.login.retry.backoff.ms",
    "sasl.login.retry.backoff.max.ms",
    "sasl.client.callback.handler.class",
];

/// OAUTHBEARER settings as read, before they are checked.
#[derive(Default)]
pub(super) struct OAuthParts {
    url: Option<String>,
    client_id: Option<String>,
    client_secret: Option<Secret>,
    scope: Option<String>,
    extensions: Vec<(String, String)>,
    ca_file: Option<PathBuf>,
    ca_pem: Option<String>,
    sub_claim: Option<String>,
    connect_timeout: Option<Duration>,
    read_timeout: Option<Duration>,
    refresh: RefreshSettings,
    /// `sasl_oauthbearer_provider = "aws_msk_iam"` (or MSK's login handler in mm2).
    msk: bool,
    aws: AwsParts,
    /// The first field set, for "set, but the mechanism is ..." errors.
    first: Option<&'static str>,
    /// Settings made in code (validation of a built configuration), kept whole.
    made: Option<OAuthSettings>,
}

impl OAuthParts {
    /// Parts of settings made in code.
    pub(super) fn from_settings(o: OAuthSettings) -> OAuthParts {
        OAuthParts {
            first: Some("sasl_oauthbearer_token_endpoint_url"),
            made: Some(o),
            ..OAuthParts::default()
        }
    }

    /// The first OAUTHBEARER field set, if any.
    pub(super) fn first_set(&self) -> Option<&'static str> {
        self.first
    }

    fn mark(&mut self, field: &'static str) {
        self.first.get_or_insert(field);
    }

    /// Reads one TOML key of a cluster table; `Ok(false)` when it is not an OAUTHBEARER key.
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
        let s = || toml_str(file, kpath, v).map(str::to_string);
        let ms = || toml_duration(file, kpath, v, true);
        let secs = || toml_seconds(file, kpath, v);
        let ratio = || {
            v.as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .ok_or_else(|| wrong_type(file, kpath, v, "a number"))
        };
        match field {
            "sasl_oauthbearer_token_endpoint_url" => self.url = Some(s()?),
            "sasl_oauthbearer_client_id" => self.client_id = Some(s()?),
            "sasl_oauthbearer_client_secret" => {
                self.client_secret = Some(toml_secret(file, kpath, v)?)
            }
            "sasl_oauthbearer_scope" => self.scope = Some(s()?),
            "sasl_oauthbearer_extensions" => self.extensions = toml_extensions(file, kpath, v)?,
            "sasl_oauthbearer_ca_file" => self.ca_file = Some(s()?.into()),
            "sasl_oauthbearer_sub_claim_name" => self.sub_claim = Some(s()?),
            "sasl_login_connect_timeout_ms" => self.connect_timeout = Some(ms()?),
            "sasl_login_read_timeout_ms" => self.read_timeout = Some(ms()?),
            "sasl_login_refresh_window_factor" => self.refresh.window_factor = ratio()?,
            "sasl_login_refresh_window_jitter" => self.refresh.window_jitter = ratio()?,
            "sasl_login_refresh_min_period_secs" => self.refresh.min_period = secs()?,
            "sasl_login_refresh_buffer_secs" => self.refresh.buffer = secs()?,
            "sasl_login_retry_backoff_ms" => self.refresh.retry_backoff = ms()?,
            "sasl_login_retry_backoff_max_ms" => self.refresh.retry_backoff_max = ms()?,
            "sasl_oauthbearer_provider" => {
                self.msk = match s()?.as_str() {
                    "oidc" => false,
                    "aws_msk_iam" => true,
                    other => {
                        return Err(ConfigError::new(
                            file,
                            kpath,
                            format!("unknown token provider `{other}`"),
                        )
                        .allowed(PROVIDERS))
                    }
                }
            }
            "sasl_aws_region" => self.aws.region = Some(s()?),
            "sasl_aws_profile" => self.aws.profile = Some(s()?),
            "sasl_aws_role_arn" => self.aws.role_arn = Some(s()?),
            "sasl_aws_role_session_name" => self.aws.role_session_name = Some(s()?),
            _ => self.aws.sts_region = Some(s()?),
        }
        self.mark(field);
        Ok(true)
    }

    /// Checks the parts and makes the settings. Errors name TOML fields.
    pub(super) fn finish(self) -> Result<OAuthSettings, (&'static str, String)> {
        if let Some(made) = self.made {
            check_settings(&made)?;
            return Ok(made);
        }
        if self.msk {
            return self.finish_msk();
        }
        if let Some(field) = self.aws_field() {
            return Err((
                field,
                "set, but the token provider is OIDC (set sasl_oauthbearer_provider = \"aws_msk_iam\")"
                    .to_string(),
            ));
        }
        let url = self.url.ok_or((
            "sasl_oauthbearer_token_endpoint_url",
            "missing: OAUTHBEARER needs the identity provider's token endpoint".to_string(),
        ))?;
        let client_id = self.client_id.ok_or((
            "sasl_oauthbearer_client_id",
            "missing: OAUTHBEARER needs the client id".to_string(),
        ))?;
        let secret = self.client_secret.ok_or((
            "sasl_oauthbearer_client_secret",
            "missing: OAUTHBEARER needs the client secret".to_string(),
        ))?;
        let mut cc = ClientCredentials::new(&url, &client_id, secret);
        cc.scope = self.scope.filter(|s| !s.trim().is_empty());
        cc.tls = TlsSettings {
            ca_file: self.ca_file,
            ca_pem: self.ca_pem,
            ..TlsSettings::default()
        };
        if let Some(s) = self.sub_claim {
            cc.sub_claim = s;
        }
        if let Some(t) = self.connect_timeout {
            cc.connect_timeout = t;
        }
        if let Some(t) = self.read_timeout {
            cc.read_timeout = t;
        }
        let mut o = OAuthSettings::new(TokenProvider::ClientCredentials(Box::new(cc)));
        o.extensions = self.extensions;
        o.refresh = self.refresh;
        check_settings(&o)?;
        Ok(o)
    }
}

/// The AWS settings of MSK IAM, as read.
#[derive(Default)]
struct AwsParts {
    region: Option<String>,
    profile: Option<String>,
    role_arn: Option<String>,
    role_session_name: Option<String>,
    sts_region: Option<String>,
}

impl OAuthParts {
    /// The first AWS field set, if any.
    fn aws_field(&self) -> Option<&'static str> {
        let a = &self.aws;
        [
            ("sasl_aws_region", a.region.is_some()),
            ("sasl_aws_profile", a.profile.is_some()),
            ("sasl_aws_role_arn", a.role_arn.is_some()),
            ("sasl_aws_role_session_name", a.role_session_name.is_some()),
            ("sasl_aws_sts_region", a.sts_region.is_some()),
        ]
        .into_iter()
        .find(|(_, set)| *set)
        .map(|(f, _)| f)
    }

    /// MSK IAM settings: no client credentials, no extensions.
    #[cfg(feature = "aws-msk-iam")]
    fn finish_msk(self) -> Result<OAuthSettings, (&'static str, String)> {
        let oidc = [
            ("sasl_oauthbearer_token_endpoint_url", self.url.is_some()),
            ("sasl_oauthbearer_client_id", self.client_id.is_some()),
            (
                "sasl_oauthbearer_client_secret",
                self.client_secret.is_some(),
            ),
            ("sasl_oauthbearer_extensions", !self.extensions.is_empty()),
        ];
        if let Some((field, _)) = oidc.into_iter().find(|(_, set)| *set) {
            return Err((
                field,
                "set, but the token provider is aws_msk_iam (IAM credentials come from the AWS chain)"
                    .to_string(),
            ));
        }
        let a = self.aws;
        let msk = crate::sasl::oauth::msk_iam::MskIam {
            region: a.region,
            profile: a.profile,
            role_arn: a.role_arn,
            role_session_name: a.role_session_name,
            sts_region: a.sts_region,
        };
        let mut o = OAuthSettings::new(TokenProvider::MskIam(msk));
        o.refresh = self.refresh;
        check_settings(&o)?;
        Ok(o)
    }

    /// MSK IAM needs the `aws-msk-iam` feature.
    #[cfg(not(feature = "aws-msk-iam"))]
    fn finish_msk(self) -> Result<OAuthSettings, (&'static str, String)> {
        Err((
            "sasl_oauthbearer_provider",
            "aws_msk_iam needs strait built with the `aws-msk-iam` feature".to_string(),
        ))
    }
}

/// Fills in an MSK IAM cluster's region from its bootstrap host names when none is set.
pub(super) fn fill_msk_region(c: &mut super::ClusterSettings) {
    #[cfg(feature = "aws-msk-iam")]
    {
        use crate::sasl::oauth::msk_iam::region_of_host;
        use crate::sasl::SaslCredentials;
        let region = c.bootstrap_servers.iter().find_map(|b| region_of_host(b));
        if let Some(SaslCredentials::OAuthBearer(o)) = c.sasl.as_mut().map(|s| &mut s.credentials) {
            if let TokenProvider::MskIam(m) = &mut o.provider {
                if m.region.is_none() {
                    m.region = region;
                }
            }
        }
    }
    #[cfg(not(feature = "aws-msk-iam"))]
    let _ = c;
}

/// Checks settings however they were made.
fn check_settings(o: &OAuthSettings) -> Result<(), (&'static str, String)> {
    match &o.provider {
        TokenProvider::ClientCredentials(cc) => cc.check().map_err(|(f, p)| {
            let field = match f {
                "client_id" => "sasl_oauthbearer_client_id",
                _ => "sasl_oauthbearer_token_endpoint_url",
            };
            (field, p)
        })?,
        #[cfg(feature = "aws-msk-iam")]
        TokenProvider::MskIam(_) => {}
    }
    for (k, v) in &o.extensions {
        check_extension(k, v).map_err(|p| ("sasl_oauthbearer_extensions", p))?;
    }
    o.refresh.check().map_err(|(f, p)| {
        let field = match f {
            "refresh_window_factor" => "sasl_login_refresh_window_factor",
            "refresh_window_jitter" => "sasl_login_refresh_window_jitter",
            "refresh_min_period" => "sasl_login_refresh_min_period_secs",
            "refresh_buffer" => "sasl_login_refresh_buffer_secs",
            _ => "sasl_login_retry_backoff_ms",
        };
        (field, p)
    })
}

/// A number of seconds, zero allowed.
fn toml_seconds(file: &str, kpath: &str, v: &toml::Value) -> Result<Duration, ConfigError> {
    match v.as_integer() {
        Some(n) if n >= 0 => Ok(Duration::from_secs(n as u64)),
        _ => Err(wrong_type(
            file,
            kpath,
            v,
            "a number of seconds (0 or more)",
        )),
    }
}

/// `sasl_oauthbearer_extensions = { logicalCluster = "lkc-1", identityPoolId = "pool-2" }`.
fn toml_extensions(
    file: &str,
    kpath: &str,
    v: &toml::Value,
) -> Result<Vec<(String, String)>, ConfigError> {
    let t = v
        .as_table()
        .ok_or_else(|| wrong_type(file, kpath, v, "a table of extension names and values"))?;
    let mut out = Vec::new();
    for (k, v) in t {
        let value = toml_str(file, &format!("{kpath}.{k}"), v)?;
        check_extension(k, value).map_err(|p| ConfigError::new(file, kpath, p))?;
        out.push((k.clone(), value.to_string()));
    }
    Ok(out)
}

/// The mm2 key behind a TOML field of these settings.
pub(super) fn mm2_key(field: &str) -> &'static str {
    match field {
        "sasl_oauthbearer_token_endpoint_url" => "sasl.oauthbearer.token.endpoint.url",
        "sasl_oauthbearer_sub_claim_name" => "sasl.oauthbearer.sub.claim.name",
        "sasl_login_refresh_window_factor" => "sasl.login.refresh.window.factor",
        "sasl_login_refresh_window_jitter" => "sasl.login.refresh.window.jitter",
        "sasl_login_refresh_min_period_secs" => "sasl.login.refresh.min.period.seconds",
        "sasl_login_refresh_buffer_secs" => "sasl.login.refresh.buffer.seconds",
        "sasl_login_retry_backoff_ms" => "sasl.login.retry.backoff.ms",
        _ => "sasl.jaas.config",
    }
}

/// Reads the mm2 keys of OAUTHBEARER (not the JAAS line: see [`OAuthParts::mm2_jaas`]).
pub(super) fn mm2_parts(
    file: &str,
    get: Lookup,
    providers: &[(String, ProviderKind)],
) -> Result<OAuthParts, ConfigError> {
    let mut p = OAuthParts::default();
    if let Some((class, at)) = get("sasl.login.callback.handler.class") {
        let class = class.trim();
        if class == MSK_HANDLER {
            p.set_msk();
        } else if !OIDC_HANDLERS.contains(&class) {
            return Err(at
                .error(
                    file,
                    format!("login callback handler {class} is not supported"),
                )
                .allowed(format!("{}, {MSK_HANDLER}", OIDC_HANDLERS.join(", "))));
        }
    }
    let text = |key: &str| get(key).map(|(v, _)| v.trim().to_string());
    if let Some(u) = text("sasl.oauthbearer.token.endpoint.url") {
        p.url = Some(u);
        p.mark("sasl_oauthbearer_token_endpoint_url");
    }
    p.client_id = text("sasl.oauthbearer.client.credentials.client.id");
    p.scope = text("sasl.oauthbearer.scope");
    p.sub_claim = text("sasl.oauthbearer.sub.claim.name");
    if let Some((v, at)) = get("sasl.oauthbearer.client.credentials.client.secret") {
        p.client_secret =
            Some(Secret::from_mm2_value(v.trim(), providers).map_err(|e| at.error(file, e))?);
    }
    let number = |key: &str| -> Result<Option<f64>, ConfigError> {
        match get(key) {
            None => Ok(None),
            Some((v, at)) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n >= 0.0)
                .map(Some)
                .ok_or_else(|| at.error(file, format!("`{}` is not a number", v.trim()))),
        }
    };
    let ms = |n: f64| Duration::from_millis(n as u64);
    if let Some(n) = number("sasl.login.connect.timeout.ms")? {
        p.connect_timeout = Some(ms(n));
    }
    if let Some(n) = number("sasl.login.read.timeout.ms")? {
        p.read_timeout = Some(ms(n));
    }
    if let Some(n) = number("sasl.login.refresh.window.factor")? {
        p.refresh.window_factor = n;
    }
    if let Some(n) = number("sasl.login.refresh.window.jitter")? {
        p.refresh.window_jitter = n;
    }
    if let Some(n) = number("sasl.login.refresh.min.period.seconds")? {
        p.refresh.min_period = Duration::from_secs(n as u64);
    }
    if let Some(n) = number("sasl.login.refresh.buffer.seconds")? {
        p.refresh.buffer = Duration::from_secs(n as u64);
    }
    if let Some(n) = number("sasl.login.retry.backoff.ms")? {
        p.refresh.retry_backoff = ms(n);
    }
    if let Some(n) = number("sasl.login.retry.backoff.max.ms")? {
        p.refresh.retry_backoff_max = ms(n);
    }
    Ok(p)
}

impl OAuthParts {
    /// Marks the parts as MSK IAM (`sasl.mechanism = AWS_MSK_IAM`).
    pub(super) fn set_msk(&mut self) {
        self.msk = true;
        self.mark("sasl_oauthbearer_provider");
    }

    /// The older `AWS_MSK_IAM` mechanism: its `IAMLoginModule` options become MSK IAM over
    /// OAUTHBEARER.
    pub(super) fn mm2_msk_module(
        &mut self,
        file: &str,
        at: &Where,
        options: &[(String, String)],
        providers: &[(String, ProviderKind)],
    ) -> Result<(), ConfigError> {
        self.set_msk();
        self.mm2_jaas(file, at, options, providers)
    }

    /// Reads the `OAuthBearerLoginModule` options: `clientId`, `clientSecret`, `scope`,
    /// `extension_<name>`, and the token endpoint's `ssl.truststore.location` /
    /// `ssl.truststore.certificates` (PEM). Options of Kafka's unsecured development login
    /// (`unsecuredLoginStringClaim_sub` and friends) are refused.
    pub(super) fn mm2_jaas(
        &mut self,
        file: &str,
        at: &Where,
        options: &[(String, String)],
        providers: &[(String, ProviderKind)],
    ) -> Result<(), ConfigError> {
        for (key, value) in options {
            let secret = || {
                Secret::from_mm2_value(value, providers)
                    .map_err(|p| at.error(file, format!("option `{key}`: {p}")))
            };
            match key.as_str() {
                "awsProfileName" => self.aws.profile = Some(value.clone()),
                "awsRoleArn" => self.aws.role_arn = Some(value.clone()),
                "awsRoleSessionName" => self.aws.role_session_name = Some(value.clone()),
                "awsStsRegion" => self.aws.sts_region = Some(value.clone()),
                "clientId" => self.client_id = Some(secret()?.expose().to_string()),
                "clientSecret" => self.client_secret = Some(secret()?),
                "scope" => self.scope = Some(value.clone()),
                "ssl.truststore.location" => self.ca_file = Some(value.into()),
                "ssl.truststore.certificates" => self.ca_pem = Some(value.clone()),
                "ssl.truststore.type" if !value.eq_ignore_ascii_case("PEM") => {
                    return Err(at.error(
                        file,
                        format!("option `ssl.truststore.type`: {value} is not supported for the token endpoint; give a PEM file"),
                    ))
                }
                k if k.starts_with("unsecuredLogin") => {
                    return Err(at.error(
                        file,
                        format!("option `{k}`: Kafka's unsecured OAUTHBEARER login (for development only) is not supported; set sasl.oauthbearer.token.endpoint.url and the client credentials"),
                    ))
                }
                k => {
                    if let Some(name) = k.strip_prefix("extension_") {
                        check_extension(name, value)
                            .map_err(|p| at.error(file, format!("option `{k}`: {p}")))?;
                        self.extensions.push((name.to_string(), value.clone()));
                    }
                }
            }
        }
        if !self.msk {
            self.mark("sasl_oauthbearer_client_id");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_toml;
    use crate::config::testing::*;
    use crate::sasl::{SaslCredentials, SaslMechanism};

    use super::*;

    fn oauth(c: &crate::config::ClusterSettings) -> &OAuthSettings {
        match &c.sasl.as_ref().expect("sasl").credentials {
            SaslCredentials::OAuthBearer(o) => o,
            other => panic!("not OAUTHBEARER: {other:?}"),
        }
    }

    fn cc(o: &OAuthSettings) -> &ClientCredentials {
        match &o.provider {
            TokenProvider::ClientCredentials(c) => c,
            #[allow(unreachable_patterns)]
            other => panic!("not client credentials: {other:?}"),
        }
    }

    #[test]
    fn toml_oauthbearer_with_extensions_and_refresh_settings() {
        std::env::set_var("STRAIT_CFG_TEST_OIDC", "oidc-secret-1");
        let c = parse_toml(
            r#"
[clusters.a]
bootstrap_servers = "h:1"
security_protocol = "SASL_SSL"
sasl_mechanism = "OAUTHBEARER"
sasl_oauthbearer_token_endpoint_url = "https://idp.example/oauth2/token"
sasl_oauthbearer_client_id = "strait"
sasl_oauthbearer_client_secret = { env = "STRAIT_CFG_TEST_OIDC" }
sasl_oauthbearer_scope = "kafka"
sasl_oauthbearer_extensions = { logicalCluster = "lkc-1", identityPoolId = "pool-2" }
sasl_oauthbearer_ca_file = "/etc/idp-ca.pem"
sasl_login_refresh_window_factor = 0.9
sasl_login_retry_backoff_max_ms = 5000
"#,
            "s.toml",
        )
        .unwrap();
        let a = &c.clusters["a"];
        assert_eq!(
            a.sasl.as_ref().unwrap().mechanism,
            SaslMechanism::OAuthBearer
        );
        let o = oauth(a);
        let cc = cc(o);
        assert_eq!(cc.token_endpoint_url, "https://idp.example/oauth2/token");
        assert_eq!(cc.client_id, "strait");
        assert_eq!(cc.client_secret.expose(), "oidc-secret-1");
        assert_eq!(cc.scope.as_deref(), Some("kafka"));
        assert_eq!(
            cc.tls.ca_file.as_deref(),
            Some(std::path::Path::new("/etc/idp-ca.pem"))
        );
        assert_eq!(o.extensions.len(), 2);
        assert_eq!(o.refresh.window_factor, 0.9);
        assert_eq!(o.refresh.retry_backoff_max, Duration::from_secs(5));
        assert!(!format!("{c:?}").contains("oidc-secret-1"));
        assert!(a.literal_secrets().is_empty());
    }

    #[test]
    fn toml_oauthbearer_errors_name_the_key() {
        let base = "[clusters.a]\nbootstrap_servers = \"h:1\"\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"OAUTHBEARER\"\n";
        let e = parse_toml(base, "s.toml").unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_oauthbearer_token_endpoint_url");
        let e = parse_toml(
            &format!("{base}sasl_oauthbearer_token_endpoint_url = \"https://i/t\"\nsasl_oauthbearer_client_id = \"c\"\nsasl_oauthbearer_client_secret = \"hunter2-x\"\nsasl_oauthbearer_extensions = {{ auth = \"x\" }}\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_oauthbearer_extensions");
        assert!(!e.to_string().contains("hunter2"));
        let e = parse_toml(
            &format!("{base}sasl_oauthbearer_token_endpoint_url = \"https://i/t\"\nsasl_oauthbearer_client_id = \"c\"\nsasl_oauthbearer_client_secret = \"s\"\nsasl_username = \"u\"\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_username");
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password = \"p\"\nsasl_oauthbearer_client_id = \"c\"\n",
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_oauthbearer_client_id");
        assert!(e.problem.contains("OAUTHBEARER"), "{e}");
        let e = parse_toml(
            &format!("{base}sasl_oauthbearer_token_endpoint_url = \"https://i/t\"\nsasl_oauthbearer_client_id = \"c\"\nsasl_oauthbearer_client_secret = \"s\"\nsasl_login_refresh_window_factor = 2\n"),
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_login_refresh_window_factor");
    }

    #[test]
    fn mm2_oauthbearer_as_kafka_documents_it() {
        std::env::set_var("STRAIT_CFG_TEST_MM2_OIDC", "mm2-oidc-secret");
        let c = mm2_with(
            "config.providers = env\n\
             config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
             a.security.protocol = SASL_SSL\n\
             a.sasl.mechanism = OAUTHBEARER\n\
             a.sasl.login.callback.handler.class = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
             a.sasl.oauthbearer.token.endpoint.url = https://idp.example/token\n\
             a.sasl.login.refresh.buffer.seconds = 30\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \\\n  clientId=\"strait\" clientSecret=\"${env:STRAIT_CFG_TEST_MM2_OIDC}\" scope=\"kafka\" extension_logicalCluster=\"lkc-9\" extension_identityPoolId=\"pool-3\";\n\
             b.security.protocol = SASL_PLAINTEXT\n\
             b.sasl.mechanism = OAUTHBEARER\n\
             b.sasl.oauthbearer.token.endpoint.url = http://127.0.0.1:8080/token\n\
             b.sasl.oauthbearer.client.credentials.client.id = c2\n\
             b.sasl.oauthbearer.client.credentials.client.secret = ${env:STRAIT_CFG_TEST_MM2_OIDC}\n\
             b.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n",
        );
        let a = oauth(&c.clusters["a"]);
        assert_eq!(cc(a).client_id, "strait");
        assert_eq!(cc(a).client_secret.expose(), "mm2-oidc-secret");
        assert_eq!(
            a.extensions,
            vec![
                ("logicalCluster".to_string(), "lkc-9".to_string()),
                ("identityPoolId".to_string(), "pool-3".to_string())
            ]
        );
        assert_eq!(a.refresh.buffer, Duration::from_secs(30));
        let b = oauth(&c.clusters["b"]);
        assert_eq!(cc(b).client_id, "c2");
        assert!(c.unsupported.is_empty(), "{:?}", c.unsupported);
    }

    #[cfg(feature = "aws-msk-iam")]
    fn msk(c: &crate::config::ClusterSettings) -> &crate::sasl::oauth::msk_iam::MskIam {
        match &oauth(c).provider {
            TokenProvider::MskIam(m) => m,
            other => panic!("not MSK IAM: {other:?}"),
        }
    }

    #[cfg(feature = "aws-msk-iam")]
    #[test]
    fn msk_iam_in_toml_and_as_msk_documents_it_in_mm2() {
        let c = parse_toml(
            r#"
[clusters.a]
bootstrap_servers = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
security_protocol = "SASL_SSL"
sasl_mechanism = "OAUTHBEARER"
sasl_oauthbearer_provider = "aws_msk_iam"
sasl_aws_profile = "msk"
"#,
            "s.toml",
        )
        .unwrap();
        let m = msk(&c.clusters["a"]);
        assert_eq!(m.region.as_deref(), Some("eu-west-1"));
        assert_eq!(m.profile.as_deref(), Some("msk"));
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"OAUTHBEARER\"\nsasl_oauthbearer_provider = \"aws_msk_iam\"\nsasl_oauthbearer_client_id = \"c\"\n",
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_oauthbearer_client_id");
        let e = parse_toml(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"OAUTHBEARER\"\nsasl_aws_region = \"x\"\n",
            "s.toml",
        )
        .unwrap_err();
        assert_eq!(e.key, "clusters.a.sasl_aws_region");

        let c = mm2_with(
            "a.security.protocol = SASL_SSL\n\
             a.sasl.mechanism = OAUTHBEARER\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n\
             a.sasl.login.callback.handler.class = software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler\n\
             a.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n\
             b.security.protocol = SASL_SSL\n\
             b.sasl.mechanism = AWS_MSK_IAM\n\
             b.sasl.jaas.config = software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName=\"prod\" awsRoleArn=\"arn:aws:iam::123456789012:role/msk\" awsRoleSessionName=\"repl\" awsStsRegion=\"us-east-1\";\n\
             b.sasl.client.callback.handler.class = software.amazon.msk.auth.iam.IAMClientCallbackHandler\n",
        );
        assert_eq!(msk(&c.clusters["a"]), &Default::default());
        let b = msk(&c.clusters["b"]);
        assert_eq!(b.profile.as_deref(), Some("prod"));
        assert_eq!(
            b.role_arn.as_deref(),
            Some("arn:aws:iam::123456789012:role/msk")
        );
        assert_eq!(b.role_session_name.as_deref(), Some("repl"));
        assert_eq!(b.sts_region.as_deref(), Some("us-east-1"));
        assert_eq!(
            c.clusters["b"].sasl.as_ref().unwrap().mechanism,
            SaslMechanism::OAuthBearer
        );
        assert_eq!(c.unsupported.len(), 1, "{:?}", c.unsupported);
        assert!(c.unsupported[0].starts_with("b.sasl.mechanism: strait authenticates with the same IAM credentials over OAUTHBEARER"), "{:?}", c.unsupported);
    }

    #[test]
    fn mm2_oauthbearer_errors() {
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = OAUTHBEARER\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"admin\";\n"
        ));
        assert!(e.problem.contains("unsecured"), "{e}");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = OAUTHBEARER\n\
             a.sasl.login.callback.handler.class = com.example.MyHandler\n"
        ));
        assert_eq!(e.key, "a.sasl.login.callback.handler.class");
        let e = mm2_err(&format!(
            "{MM2_BASE}a.security.protocol = SASL_SSL\na.sasl.mechanism = OAUTHBEARER\n\
             a.sasl.oauthbearer.token.endpoint.url = https://i/t\n\
             a.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId=\"c\";\n"
        ));
        assert_eq!(e.key, "a.sasl.jaas.config");
        assert!(e.problem.contains("client secret"), "{e}");
    }
}
