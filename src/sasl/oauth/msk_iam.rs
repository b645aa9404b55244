//! Amazon MSK IAM access control over OAUTHBEARER: the token is a SigV4-presigned URL
//! `https://kafka.<region>.amazonaws.com/?Action=kafka-cluster%3AConnect&...` (service
//! `kafka-cluster`, valid 900 s, signed header `host`), with a `User-Agent` parameter appended,
//! base64url-encoded without padding — the format of AWS's `aws-msk-iam-sasl-signer` libraries
//! and of `IAMOAuthBearerLoginCallbackHandler`.
//!
//! Credentials come from the AWS SDK's standard chain (`aws-config`: environment, shared
//! profile files with an optional profile name, web identity for EKS, ECS and EC2 instance
//! metadata), optionally through an assumed role; signing is `aws-sigv4`. The
//! `aws-msk-iam-sasl-signer` crate does the same with these crates but pulls in AWS's default
//! HTTPS stack (aws-lc) and panics on some inputs, so strait calls the two crates directly
//! with an HTTPS client on rustls with ring, like the rest of strait.

use std::time::{Duration, SystemTime};

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use base64::Engine as _;

use crate::secret::Secret;

use super::Token;

/// How long a token is valid (the presigned URL's `X-Amz-Expires`).
pub(crate) const TOKEN_LIFETIME: Duration = Duration::from_secs(900);
/// The SigV4 service name.
const SERVICE: &str = "kafka-cluster";
/// The action a Kafka client asks for.
const ACTION: &str = "kafka-cluster:Connect";

/// Where the IAM identity comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MskIam {
    /// The cluster's AWS region; when unset, from the bootstrap host name
    /// (`*.kafka.<region>.amazonaws.com`) or the SDK's region chain (`AWS_REGION`, profile).
    pub region: Option<String>,
    /// A named profile of the shared AWS files (JAAS `awsProfileName`).
    pub profile: Option<String>,
    /// A role to assume with the chain's credentials (JAAS `awsRoleArn`).
    pub role_arn: Option<String>,
    /// The session name of the assumed role (JAAS `awsRoleSessionName`).
    pub role_session_name: Option<String>,
    /// The STS region for assuming the role (JAAS `awsStsRegion`).
    pub sts_region: Option<String>,
}

/// The region in an MSK broker host name (`b-1.name.abc123.c2.kafka.eu-west-1.amazonaws.com`).
pub(crate) fn region_of_host(host_port: &str) -> Option<String> {
    let host = host_port.rsplit_once(':').map_or(host_port, |(h, _)| h);
    let labels: Vec<&str> = host.split('.').collect();
    let i = labels.iter().position(|l| *l == "kafka")?;
    let region = labels.get(i + 1)?;
    let rest = labels.get(i + 2..)?;
    (rest.first() == Some(&"amazonaws") && !region.is_empty()).then(|| region.to_string())
}

/// A signer: the credentials provider of the chain and the region, made once per cluster.
#[derive(Clone, Debug)]
pub(crate) struct Signer {
    credentials: SharedCredentialsProvider,
    region: String,
}

impl Signer {
    /// Loads the SDK's configuration for `s` (no network yet: credentials are fetched when a
    /// token is made).
    pub async fn new(s: &MskIam) -> Result<Signer, String> {
        use aws_smithy_http_client::tls;
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http);
        if let Some(r) = &s.region {
            loader = loader.region(Region::new(r.clone()));
        }
        if let Some(p) = &s.profile {
            loader = loader.profile_name(p);
        }
        let sdk = loader.load().await;
        let region = sdk.region().map(|r| r.to_string()).ok_or(
            "no AWS region: set sasl_aws_region (or AWS_REGION), or use the MSK bootstrap host name",
        )?;
        let mut credentials = sdk
            .credentials_provider()
            .ok_or("the AWS SDK found no credentials provider")?;
        if let Some(arn) = &s.role_arn {
            let session = s
                .role_session_name
                .clone()
                .unwrap_or_else(|| "strait-msk-iam".to_string());
            let mut b = aws_config::sts::AssumeRoleProvider::builder(arn)
                .configure(&sdk)
                .session_name(session);
            if let Some(r) = &s.sts_region {
                b = b.region(Region::new(r.clone()));
            }
            credentials = SharedCredentialsProvider::new(b.build().await);
        }
        Ok(Signer {
            credentials,
            region,
        })
    }

    /// A token signed now with the chain's current credentials.
    pub async fn token(&self) -> Result<Token, String> {
        let creds = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| format!("no AWS credentials: {}", error_chain(&e)))?;
        sign(&self.region, &creds, SystemTime::now())
    }
}

/// The error and its causes, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Makes the token for `region` with `creds` at `now`: valid [`TOKEN_LIFETIME`], or until the
/// credentials expire if that is sooner.
pub fn sign(region: &str, creds: &Credentials, now: SystemTime) -> Result<Token, String> {
    use aws_sigv4::http_request::{
        sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    };
    use aws_sigv4::sign::v4;

    let mut url = reqwest::Url::parse(&format!("https://kafka.{region}.amazonaws.com/"))
        .map_err(|e| format!("AWS region `{region}` does not make a host name: {e}"))?;
    url.query_pairs_mut().append_pair("Action", ACTION);
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(TOKEN_LIFETIME);
    let identity = creds.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| format!("SigV4 parameters: {e}"))?;
    let request = SignableRequest::new(
        "GET",
        url.as_str(),
        std::iter::empty(),
        SignableBody::Bytes(&[]),
    )
    .map_err(|e| format!("SigV4 request: {e}"))?;
    let (instructions, _) = sign(request, &params.into())
        .map_err(|e| format!("SigV4 signing: {e}"))?
        .into_parts();
    {
        let mut q = url.query_pairs_mut();
        for (name, value) in instructions.params() {
            q.append_pair(name, value);
        }
        q.append_pair(
            "User-Agent",
            &format!("strait/{}", env!("CARGO_PKG_VERSION")),
        );
    }
    let mut lifetime = TOKEN_LIFETIME;
    if let Some(exp) = creds.expiry() {
        let left = exp
            .duration_since(now)
            .map_err(|_| "the AWS credentials have expired".to_string())?;
        lifetime = lifetime.min(left);
    }
    Ok(Token {
        value: Secret::literal(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(url.as_str()),
        ),
        principal: format!("AWS IAM ({region})"),
        lifetime,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    /// AWS's documented example credentials.
    fn creds(expiry: Option<SystemTime>) -> Credentials {
        Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("session-token-example".to_string()),
            expiry,
            "test",
        )
    }

    fn decode(t: &Token) -> reqwest::Url {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(t.value.expose())
            .expect("base64url without padding");
        reqwest::Url::parse(std::str::from_utf8(&raw).expect("UTF-8")).expect("a URL")
    }

    fn hmac(key: &[u8], data: &str) -> Vec<u8> {
        let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
        ring::hmac::sign(&k, data.as_bytes()).as_ref().to_vec()
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// The token is the presigned URL MSK expects, and its signature is SigV4 as AWS documents
    /// it, recomputed here from the canonical request.
    #[test]
    fn the_token_is_a_presigned_connect_url_with_a_valid_signature() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000); // 2023-11-14T22:13:20Z
        let t = sign("eu-west-1", &creds(None), now).unwrap();
        assert_eq!(t.lifetime, Duration::from_secs(900));
        let url = decode(&t);
        assert_eq!(url.host_str(), Some("kafka.eu-west-1.amazonaws.com"));
        let q: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("Action").as_deref(), Some("kafka-cluster:Connect"));
        assert_eq!(get("X-Amz-Algorithm").as_deref(), Some("AWS4-HMAC-SHA256"));
        assert_eq!(
            get("X-Amz-Credential").as_deref(),
            Some("AKIDEXAMPLE/20231114/eu-west-1/kafka-cluster/aws4_request")
        );
        assert_eq!(get("X-Amz-Date").as_deref(), Some("20231114T221320Z"));
        assert_eq!(get("X-Amz-Expires").as_deref(), Some("900"));
        assert_eq!(get("X-Amz-SignedHeaders").as_deref(), Some("host"));
        assert_eq!(
            get("X-Amz-Security-Token").as_deref(),
            Some("session-token-example")
        );
        assert!(get("User-Agent").unwrap().starts_with("strait/"));
        assert_eq!(q.last().map(|(k, _)| k.as_str()), Some("User-Agent"));

        // SigV4 by hand: the canonical query is every parameter but the signature and the
        // user agent, sorted, URI-encoded.
        let enc = |s: &str| {
            s.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        };
        let mut params: Vec<(String, String)> = q
            .iter()
            .filter(|(k, _)| k != "X-Amz-Signature" && k != "User-Agent")
            .map(|(k, v)| (enc(k), enc(v)))
            .collect();
        params.sort();
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let empty_hash = hex(ring::digest::digest(&ring::digest::SHA256, b"").as_ref());
        let canonical = format!(
            "GET\n/\n{}\nhost:kafka.eu-west-1.amazonaws.com\n\nhost\n{empty_hash}",
            query.join("&")
        );
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n20231114T221320Z\n20231114/eu-west-1/kafka-cluster/aws4_request\n{}",
            hex(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()).as_ref())
        );
        let k = hmac(b"AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20231114");
        let k = hmac(&k, "eu-west-1");
        let k = hmac(&k, "kafka-cluster");
        let k = hmac(&k, "aws4_request");
        assert_eq!(get("X-Amz-Signature"), Some(hex(&hmac(&k, &to_sign))));
    }

    #[test]
    fn short_lived_credentials_shorten_the_token() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let t = sign(
            "us-east-1",
            &creds(Some(now + Duration::from_secs(120))),
            now,
        )
        .unwrap();
        assert_eq!(t.lifetime, Duration::from_secs(120));
        let e = sign("us-east-1", &creds(Some(now - Duration::from_secs(1))), now).unwrap_err();
        assert!(e.contains("expired"), "{e}");
        // The secret key never appears in the token or its Debug form.
        let t = sign("us-east-1", &creds(None), now).unwrap();
        let url = decode(&t).to_string();
        assert!(!url.contains("wJalrXUtnFEMI"), "{url}");
        assert!(!format!("{t:?}").contains("AKID"));
    }

    #[test]
    fn the_region_comes_from_an_msk_host_name() {
        assert_eq!(
            region_of_host("b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098").as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(
            region_of_host("boot-abc.c1.kafka-serverless.us-east-2.amazonaws.com:9098"),
            None
        );
        assert_eq!(region_of_host("kafka.internal:9092"), None);
        assert_eq!(region_of_host("127.0.0.1:9092"), None);
    }

    /// With Kafka's defaults a 15-minute token is refreshed 5 minutes before it ends (the
    /// buffer comes before the 80 to 85 % window).
    #[test]
    fn tokens_refresh_before_their_15_minutes_end() {
        let r = super::super::RefreshSettings::default();
        for random in [0.0, 0.5, 0.99] {
            assert_eq!(
                r.refresh_after(TOKEN_LIFETIME, random),
                Duration::from_secs(600)
            );
        }
    }
}
