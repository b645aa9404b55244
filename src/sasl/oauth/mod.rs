//! SASL/OAUTHBEARER (RFC 7628, KIP-255): where a cluster's tokens come from, the SASL
//! extensions sent with them, and a token cache shared by every connection to the cluster.
//!
//! The cache obtains a token when a connection first needs one and keeps it until its refresh
//! time ([`refresh::RefreshSettings::refresh_after`], Kafka's rules). Connections take the
//! cached token when they authenticate and again when they re-authenticate (KIP-368), so a
//! refreshed token reaches every connection within one broker session lifetime. One request
//! to the identity service is in flight at a time; after a failure the next waits out a
//! doubling backoff, and while it waits connections keep the old token if it has not expired,
//! else fail with [`ErrorKind::Credentials`](crate::error::ErrorKind::Credentials), which the
//! callers retry.

pub mod message;
#[cfg(feature = "aws-msk-iam")]
pub(crate) mod msk_iam;
pub mod oidc;
pub mod refresh;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::secret::Secret;

pub use oidc::ClientCredentials;
pub use refresh::RefreshSettings;

/// A token and what a client knows of it.
#[derive(Clone)]
pub struct Token {
    /// The token (prints as `***`).
    pub value: Secret,
    /// Its principal (the subject claim).
    pub principal: String,
    /// How long it was valid for when obtained.
    pub lifetime: Duration,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("principal", &self.principal)
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

/// Where tokens come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenProvider {
    /// An OIDC token endpoint, client credentials grant (KIP-768).
    ClientCredentials(Box<ClientCredentials>),
    /// Amazon MSK IAM: SigV4-signed tokens from the AWS credential chain.
    #[cfg(feature = "aws-msk-iam")]
    MskIam(msk_iam::MskIam),
}

impl TokenProvider {
    /// A short name for messages.
    pub fn describe(&self) -> String {
        match self {
            TokenProvider::ClientCredentials(c) => {
                format!("the token endpoint {}", c.token_endpoint_url)
            }
            #[cfg(feature = "aws-msk-iam")]
            TokenProvider::MskIam(_) => "the AWS MSK IAM signer".to_string(),
        }
    }
}

/// OAUTHBEARER settings of one cluster, with its token cache. Clones share the cache; equality
/// compares the settings only.
#[derive(Clone)]
pub struct OAuthSettings {
    /// Where tokens come from.
    pub provider: TokenProvider,
    /// SASL extensions (`extension_<name>` JAAS options), checked by
    /// [`message::check_extension`].
    pub extensions: Vec<(String, String)>,
    /// When to refresh, and the backoff after failures.
    pub refresh: RefreshSettings,
    cache: Arc<Shared>,
}

impl std::fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("provider", &self.provider)
            .field("extensions", &self.extensions)
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

impl PartialEq for OAuthSettings {
    fn eq(&self, o: &Self) -> bool {
        self.provider == o.provider && self.extensions == o.extensions && self.refresh == o.refresh
    }
}

impl Eq for OAuthSettings {}

/// The cache's state.
#[derive(Default)]
struct Cache {
    token: Option<Token>,
    /// When the cached token was obtained.
    obtained: Option<Instant>,
    /// When to ask for a new one.
    refresh_at: Option<Instant>,
    /// Whether a refresh runs in the background.
    refreshing: bool,
    /// Failed attempts in a row, the earliest next attempt and the last failure.
    failures: u32,
    next_attempt: Option<Instant>,
    last_problem: Option<String>,
    /// What the provider keeps between tokens.
    client: Option<ProviderClient>,
}

/// What a provider keeps between tokens.
#[derive(Clone)]
enum ProviderClient {
    /// The HTTP client of a token endpoint.
    Http(reqwest::Client),
    /// The AWS credential chain and region.
    #[cfg(feature = "aws-msk-iam")]
    Aws(msk_iam::Signer),
}

impl Cache {
    /// The cached token if it has not expired at `now`.
    fn valid(&self, now: Instant) -> Option<Token> {
        let t = self.token.as_ref()?;
        let expires = self.obtained? + t.lifetime;
        (now < expires).then(|| t.clone())
    }

    /// Whether the refresh time has come and no backoff holds the next attempt.
    fn refresh_due(&self, now: Instant) -> bool {
        self.refresh_at.is_none_or(|r| now >= r) && !self.backing_off(now)
    }

    /// Whether a failure's backoff still holds the next attempt.
    fn backing_off(&self, now: Instant) -> bool {
        self.next_attempt.is_some_and(|n| now < n)
    }

    /// The error while backing off with no valid token.
    fn backoff_problem(&self, now: Instant) -> String {
        let left = self
            .next_attempt
            .map(|n| n.saturating_duration_since(now))
            .unwrap_or_default();
        format!(
            "{} (next attempt in {} ms)",
            self.last_problem.as_deref().unwrap_or("no token yet"),
            left.as_millis()
        )
    }
}

/// The cache of one cluster's settings, shared by their clones.
#[derive(Default)]
struct Shared {
    state: std::sync::Mutex<Cache>,
    /// Held while asking the provider: one request at a time.
    fetching: tokio::sync::Mutex<()>,
}

impl OAuthSettings {
    /// Settings with Kafka's refresh defaults and no extensions.
    pub fn new(provider: TokenProvider) -> OAuthSettings {
        OAuthSettings {
            provider,
            extensions: Vec::new(),
            refresh: RefreshSettings::default(),
            cache: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A token for authenticating now, without waiting while a valid one is cached: past its
    /// refresh time the cached token is returned and a new one is asked for in the background.
    /// With no valid token, waits for the provider. The error names the provider and the
    /// cause, never a secret.
    pub async fn token(&self) -> Result<Token, String> {
        {
            let mut c = self.state();
            let now = Instant::now();
            if let Some(t) = c.valid(now) {
                if c.refresh_due(now) && !c.refreshing {
                    c.refreshing = true;
                    let me = self.clone();
                    tokio::spawn(async move {
                        let _ = me.refresh().await;
                    });
                }
                return Ok(t);
            }
            if c.backing_off(now) {
                return Err(c.backoff_problem(now));
            }
        }
        self.refresh().await
    }

    /// Asks the provider for a token unless another caller just did; on failure the cached
    /// token serves, with a warning, until it expires.
    async fn refresh(&self) -> Result<Token, String> {
        let _one = self.cache.fetching.lock().await;
        let http = {
            let c = self.state();
            let now = Instant::now();
            match c.valid(now) {
                Some(t) if !c.refresh_due(now) => return Ok(t),
                None if c.backing_off(now) => return Err(c.backoff_problem(now)),
                _ => c.client.clone(),
            }
        };
        let result = self.fetch(http).await;
        let mut c = self.state();
        c.refreshing = false;
        let now = Instant::now();
        match result {
            Ok((t, client)) => {
                let after = self
                    .refresh
                    .refresh_after(t.lifetime, crate::sasl::random_fraction());
                tracing::debug!(
                    provider = %self.provider.describe(),
                    principal = %t.principal,
                    lifetime = ?t.lifetime,
                    refresh_in = ?after,
                    "obtained an OAUTHBEARER token"
                );
                c.token = Some(t.clone());
                c.obtained = Some(now);
                c.refresh_at = Some(now + after);
                c.failures = 0;
                c.next_attempt = None;
                c.last_problem = None;
                c.client = Some(client);
                Ok(t)
            }
            Err(problem) => {
                c.failures = c.failures.saturating_add(1);
                c.next_attempt = Some(now + self.refresh.retry_after(c.failures));
                c.last_problem = Some(problem.clone());
                match c.valid(now) {
                    Some(t) => {
                        tracing::warn!(
                            provider = %self.provider.describe(),
                            "cannot refresh the OAUTHBEARER token; the current one serves until it expires: {problem}"
                        );
                        Ok(t)
                    }
                    None => Err(problem),
                }
            }
        }
    }

    /// One request to the provider, with what it kept from the last one.
    async fn fetch(
        &self,
        client: Option<ProviderClient>,
    ) -> Result<(Token, ProviderClient), String> {
        match (&self.provider, client) {
            (TokenProvider::ClientCredentials(cc), client) => {
                let http = match client {
                    Some(ProviderClient::Http(h)) => h,
                    _ => cc.http_client()?,
                };
                let t = cc.fetch(&http).await?;
                Ok((t, ProviderClient::Http(http)))
            }
            #[cfg(feature = "aws-msk-iam")]
            (TokenProvider::MskIam(m), client) => {
                let signer = match client {
                    Some(ProviderClient::Aws(s)) => s,
                    _ => msk_iam::Signer::new(m).await?,
                };
                let t = signer.token().await?;
                Ok((t, ProviderClient::Aws(signer)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_cache_and_compare_by_settings() {
        let p = TokenProvider::ClientCredentials(Box::new(ClientCredentials::new(
            "http://127.0.0.1:9/token",
            "c",
            Secret::literal("s3cr3t-value"),
        )));
        let a = OAuthSettings::new(p.clone());
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.cache, &b.cache));
        assert_eq!(a, OAuthSettings::new(p));
        assert!(!format!("{a:?}").contains("s3cr3t"));
    }

    #[tokio::test]
    async fn a_provider_that_cannot_be_reached_backs_off() {
        // Port 9 (discard) is closed on loopback: the connection is refused at once.
        let mut cc = ClientCredentials::new("http://127.0.0.1:9/token", "c", Secret::literal("s"));
        cc.connect_timeout = Duration::from_secs(2);
        let o = OAuthSettings::new(TokenProvider::ClientCredentials(Box::new(cc)));
        let e = o.token().await.unwrap_err();
        assert!(e.contains("cannot connect to the token endpoint"), "{e}");
        let e = o.token().await.unwrap_err();
        assert!(e.contains("next attempt in"), "{e}");
    }
}
