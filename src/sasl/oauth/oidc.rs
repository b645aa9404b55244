//! OIDC client credentials (KIP-768): a token from the identity provider's token endpoint, as
//! Kafka's `OAuthBearerLoginCallbackHandler` asks for it, and the claims a client reads from
//! it.
//!
//! The request is an HTTP POST of `grant_type=client_credentials` (and `scope`), with the client
//! id and secret URL-encoded in a Basic `Authorization` header (RFC 6749 §2.3.1). HTTP is
//! [`reqwest`] over strait's rustls configuration (ring), so the endpoint's trust settings are
//! the same kind as a cluster's. The token is a JWT: its claims are read with [`jsonwebtoken`]
//! without checking the signature (the broker checks it against the provider's keys); the
//! client needs `exp` and the subject claim, as Kafka's client-side validator does.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;

use crate::secret::Secret;
use crate::tls::TlsSettings;

use super::Token;

/// Settings of the client credentials grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// `sasl.oauthbearer.token.endpoint.url`.
    pub token_endpoint_url: String,
    /// The client id (JAAS `clientId`).
    pub client_id: String,
    /// The client secret (JAAS `clientSecret`; prints as `***`).
    pub client_secret: Secret,
    /// The scope asked for (JAAS `scope`), if any.
    pub scope: Option<String>,
    /// Trust settings of an `https` endpoint (the system roots when none are given).
    pub tls: TlsSettings,
    /// `sasl.login.connect.timeout.ms` (default 10 s).
    pub connect_timeout: Duration,
    /// `sasl.login.read.timeout.ms`: the whole answer must come within this (default 10 s).
    pub read_timeout: Duration,
    /// `sasl.oauthbearer.sub.claim.name` (default `sub`).
    pub sub_claim: String,
}

impl ClientCredentials {
    /// Settings with Kafka's defaults for the rest.
    pub fn new(url: &str, client_id: &str, client_secret: Secret) -> ClientCredentials {
        ClientCredentials {
            token_endpoint_url: url.to_string(),
            client_id: client_id.to_string(),
            client_secret,
            scope: None,
            tls: TlsSettings::default(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(10),
            sub_claim: "sub".to_string(),
        }
    }

    /// Checks the URL's form (`http` or `https`, no user info).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let url = reqwest::Url::parse(&self.token_endpoint_url)
            .map_err(|e| ("token_endpoint_url", format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(("token_endpoint_url", "must be an http or https URL".into()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err((
                "token_endpoint_url",
                "must not carry credentials; set the client id and secret".into(),
            ));
        }
        if self.client_id.is_empty() {
            return Err(("client_id", "empty".into()));
        }
        Ok(())
    }

    /// An HTTP client for the endpoint: its TLS trust, its timeouts, no redirects (a token
    /// request is not repeated elsewhere).
    pub fn http_client(&self) -> Result<reqwest::Client, String> {
        let b = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .timeout(self.read_timeout)
            .redirect(reqwest::redirect::Policy::none());
        // reqwest is built without a TLS provider of its own: it always gets strait's rustls
        // configuration (for an http endpoint one that trusts nothing, never used).
        let tls = if self.token_endpoint_url.starts_with("https:") {
            (*crate::tls::client_config(&self.tls)?).clone()
        } else {
            crate::tls::no_trust_config()?
        };
        b.use_preconfigured_tls(tls)
            .build()
            .map_err(|e| format!("HTTP client setup: {e}"))
    }

    /// Asks the endpoint for a token. The error says what failed (no secret, no token).
    pub async fn fetch(&self, http: &reqwest::Client) -> Result<Token, String> {
        let url = &self.token_endpoint_url;
        let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            enc(&self.client_id),
            enc(self.client_secret.expose())
        ));
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(s) = &self.scope {
            form.push(("scope", s));
        }
        let resp = http
            .post(url)
            .header(reqwest::header::AUTHORIZATION, format!("Basic {basic}"))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|e| request_problem(url, &e, self.read_timeout))?;
        let status = resp.status();
        let body = resp
            .bytes()
            .await
            .map_err(|e| request_problem(url, &e, self.read_timeout))?;
        if !status.is_success() {
            return Err(format!(
                "the token endpoint {url} answered {status}{}",
                oauth_error(&body)
            ));
        }
        let answer: TokenAnswer = serde_json::from_slice(&body).map_err(|e| {
            format!("the token endpoint {url} answered without a token (not the JSON of RFC 6749 §5.1: {e})")
        })?;
        let token = answer
            .access_token
            .ok_or_else(|| format!("the token endpoint {url} answered without access_token"))?;
        read_jwt(&token, &self.sub_claim, SystemTime::now())
            .map_err(|p| format!("the token from {url} is not usable: {p}"))
    }
}

/// The fields of a token answer strait reads.
#[derive(serde::Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
}

/// What failed in a request, without the request's content.
fn request_problem(url: &str, e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!("the token endpoint {url} did not answer within {timeout:?}");
    }
    let mut cause = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if e.is_connect() {
        return format!("cannot connect to the token endpoint {url}: {cause}");
    }
    format!("the token endpoint {url} failed: {cause}")
}

/// The `error` and `error_description` of an RFC 6749 §5.2 answer, as `: error (description)`,
/// or nothing.
fn oauth_error(body: &[u8]) -> String {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_slice(body) else {
        return String::new();
    };
    let field = |k: &str| {
        m.get(k)
            .and_then(|v| v.as_str())
            .map(|s| s.chars().take(200).collect::<String>())
    };
    match (field("error"), field("error_description")) {
        (Some(e), Some(d)) => format!(": {e} ({d})"),
        (Some(e), None) => format!(": {e}"),
        _ => String::new(),
    }
}

/// Reads a JWT's claims without checking its signature: `exp` (required, in the future of
/// `now`), the subject claim `sub_claim` (required) and `iat` (optional).
pub(crate) fn read_jwt(token: &str, sub_claim: &str, now: SystemTime) -> Result<Token, String> {
    let mut v = jsonwebtoken::Validation::default();
    v.insecure_disable_signature_validation();
    v.validate_exp = false;
    v.validate_aud = false;
    v.required_spec_claims.clear();
    let key = jsonwebtoken::DecodingKey::from_secret(&[]);
    let data = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(token, &key, &v)
        .map_err(|e| format!("not a JWT ({e})"))?;
    let claims = data.claims;
    let exp = claims
        .get("exp")
        .and_then(|v| v.as_f64())
        .ok_or("it has no numeric `exp` claim")?;
    let principal = claims
        .get(sub_claim)
        .and_then(|v| v.as_str())
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| format!("it has no `{sub_claim}` claim"))?
        .to_string();
    let expires_at = UNIX_EPOCH + Duration::from_secs_f64(exp.max(0.0));
    let lifetime = expires_at.duration_since(now).map_err(|_| {
        let ago = now.duration_since(expires_at).unwrap_or_default();
        format!(
            "it expired {}s ago by this machine's clock (exp {}); check the clock",
            ago.as_secs(),
            exp as u64
        )
    })?;
    Ok(Token {
        value: Secret::literal(token),
        principal,
        lifetime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!(
            "{}.{}.{}",
            b(r#"{"alg":"RS256","typ":"JWT"}"#),
            b(claims),
            b("sig")
        )
    }

    #[test]
    fn claims_are_read_without_the_signature() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let t = read_jwt(
            &jwt(r#"{"sub":"strait","exp":1030,"iat":1000}"#),
            "sub",
            now,
        )
        .unwrap();
        assert_eq!(t.principal, "strait");
        assert_eq!(t.lifetime, Duration::from_secs(30));
        assert!(!format!("{t:?}").contains("eyJ"));
        let t = read_jwt(&jwt(r#"{"client_id":"c1","exp":1060}"#), "client_id", now).unwrap();
        assert_eq!(t.principal, "c1");
    }

    #[test]
    fn unusable_tokens_are_named() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000);
        let e = read_jwt("opaque-token", "sub", now).unwrap_err();
        assert!(e.starts_with("not a JWT"), "{e}");
        let e = read_jwt(&jwt(r#"{"sub":"s"}"#), "sub", now).unwrap_err();
        assert!(e.contains("exp"), "{e}");
        let e = read_jwt(&jwt(r#"{"exp":2000}"#), "sub", now).unwrap_err();
        assert!(e.contains("`sub`"), "{e}");
        let e = read_jwt(&jwt(r#"{"sub":"s","exp":900}"#), "sub", now).unwrap_err();
        assert!(e.contains("expired 100s ago") && e.contains("clock"), "{e}");
    }

    #[test]
    fn oauth_errors_are_quoted_briefly() {
        assert_eq!(
            oauth_error(br#"{"error":"invalid_client","error_description":"bad secret"}"#),
            ": invalid_client (bad secret)"
        );
        assert_eq!(oauth_error(b"<html>"), "");
    }

    #[test]
    fn urls_are_checked() {
        let mut c = ClientCredentials::new("https://idp/token", "c", Secret::literal("s"));
        assert!(c.check().is_ok());
        c.token_endpoint_url = "ftp://idp/token".into();
        assert!(c.check().is_err());
        c.token_endpoint_url = "https://u:p@idp/token".into();
        assert!(c.check().unwrap_err().1.contains("credentials"));
    }
}
