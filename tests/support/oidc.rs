//! An OIDC identity provider on loopback for OAUTHBEARER tests: a token endpoint
//! (`POST /token`, client credentials in a Basic header, RFC 6749 §4.4) issuing RS256 JWTs, and
//! the JWKS (`GET /jwks`) that Apache Kafka's `OAuthBearerValidatorCallbackHandler` checks them
//! against. The RSA key is made at start by `openssl genpkey`; tokens are signed with ring.
//!
//! A test can make it answer 401, hang, issue tokens already expired (a clock skew), or go
//! down (its port closed) and come back on the same port; it counts the token requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use ring::signature::{RsaKeyPair, RSA_PKCS1_SHA256};

/// The audience and issuer of the tokens.
pub const AUDIENCE: &str = "kafka";
/// The key id in the JWKS and in each token's header.
const KID: &str = "strait-test-key";

/// How the token endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Tokens for the right client id and secret, 401 otherwise.
    Serve,
    /// 401 `invalid_client` to everyone (a secret rotated on the provider's side).
    Refuse,
    /// No answer for this long, then a token.
    Slow(Duration),
    /// Tokens whose `exp` passed an hour ago (this machine's clock is ahead of the provider's).
    Expired,
}

struct State {
    mode: Mode,
    lifetime: Duration,
    client_id: String,
    client_secret: String,
    token_requests: usize,
    tokens_issued: usize,
}

/// A running identity provider.
pub struct Idp {
    port: u16,
    tls: Option<Arc<rustls::ServerConfig>>,
    key: Arc<RsaKeyPair>,
    jwks: Arc<String>,
    state: Arc<Mutex<State>>,
    running: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

impl Idp {
    /// Starts a provider on a free port for one client, issuing tokens valid for `lifetime`;
    /// over TLS with the certificate and key files given.
    pub fn start(
        client_id: &str,
        client_secret: &str,
        lifetime: Duration,
        tls: Option<(&Path, &Path)>,
    ) -> Idp {
        let key = rsa_key();
        let jwks = jwks(&key);
        let tls = tls.map(|(cert, key)| server_config(cert, key));
        let mut idp = Idp {
            port: super::broker::free_port(),
            tls,
            key: Arc::new(key),
            jwks: Arc::new(jwks),
            state: Arc::new(Mutex::new(State {
                mode: Mode::Serve,
                lifetime,
                client_id: client_id.to_string(),
                client_secret: client_secret.to_string(),
                token_requests: 0,
                tokens_issued: 0,
            })),
            running: None,
        };
        idp.up();
        idp
    }

    fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The token endpoint's URL.
    pub fn token_url(&self) -> String {
        format!("{}://127.0.0.1:{}/token", self.scheme(), self.port)
    }

    /// The JWKS URL.
    pub fn jwks_url(&self) -> String {
        format!("{}://127.0.0.1:{}/jwks", self.scheme(), self.port)
    }

    /// The issuer of the tokens.
    pub fn issuer(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme(), self.port)
    }

    /// Writes the JWKS to `path`; returns its `file:` URL (Kafka reads JWKS files too).
    pub fn write_jwks(&self, path: &Path) -> String {
        std::fs::write(path, self.jwks.as_bytes()).expect("write the JWKS");
        format!("file://{}", path.display())
    }

    /// Changes how the token endpoint answers.
    pub fn set_mode(&self, mode: Mode) {
        self.state.lock().expect("idp state").mode = mode;
    }

    /// Token requests so far (answered or not).
    pub fn token_requests(&self) -> usize {
        self.state.lock().expect("idp state").token_requests
    }

    /// Tokens issued so far.
    pub fn tokens_issued(&self) -> usize {
        self.state.lock().expect("idp state").tokens_issued
    }

    /// Closes the port: connections are refused until [`Idp::up`].
    pub fn down(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            stop.store(true, Ordering::SeqCst);
            // Wake the accept loop.
            let _ = TcpStream::connect(("127.0.0.1", self.port));
            thread.join().expect("idp thread");
        }
    }

    /// Listens again on the same port.
    pub fn up(&mut self) {
        if self.running.is_some() {
            return;
        }
        let listener = bind_retrying(self.port);
        let stop = Arc::new(AtomicBool::new(false));
        let (s, key, jwks, state, tls) = (
            stop.clone(),
            self.key.clone(),
            self.jwks.clone(),
            self.state.clone(),
            self.tls.clone(),
        );
        let issuer = self.issuer();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let (key, jwks, state, tls, issuer) = (
                    key.clone(),
                    jwks.clone(),
                    state.clone(),
                    tls.clone(),
                    issuer.clone(),
                );
                std::thread::spawn(move || {
                    let _ = serve(conn, tls, &key, &jwks, &state, &issuer);
                });
            }
        });
        self.running = Some((stop, thread));
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        self.down();
    }
}

/// A rustls server configuration from PEM files.
fn server_config(cert: &Path, key: &Path) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .expect("provider certificate");
    let key = PrivateKeyDer::from_pem_file(key).expect("provider key");
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .expect("provider certificate and key");
    Arc::new(cfg)
}

fn bind_retrying(port: u16) -> TcpListener {
    for _ in 0..50 {
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            return l;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("cannot listen on 127.0.0.1:{port} again");
}

/// One connection: one request, one answer.
fn serve(
    conn: TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    key: &RsaKeyPair,
    jwks: &str,
    state: &Mutex<State>,
    issuer: &str,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    match tls {
        None => answer(conn, key, jwks, state, issuer),
        Some(cfg) => {
            let server = rustls::ServerConnection::new(cfg).map_err(std::io::Error::other)?;
            answer(
                rustls::StreamOwned::new(server, conn),
                key,
                jwks,
                state,
                issuer,
            )
        }
    }
}

fn answer<S: Read + Write>(
    stream: S,
    key: &RsaKeyPair,
    jwks: &str,
    state: &Mutex<State>,
    issuer: &str,
) -> std::io::Result<()> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let path = line.split(' ').nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h == "\r\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |k: &str| headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let len: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    let (code, text) = match path.as_str() {
        "/jwks" => (200, jwks.to_string()),
        "/token" => token_answer(header("authorization"), &body, key, state, issuer),
        _ => (404, "{}".to_string()),
    };
    let mut stream = r.into_inner();
    let reason = if code == 200 { "OK" } else { "Error" };
    write!(
        stream,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    stream.flush()
}

fn token_answer(
    authorization: Option<String>,
    body: &[u8],
    key: &RsaKeyPair,
    state: &Mutex<State>,
    issuer: &str,
) -> (u16, String) {
    let (mode, lifetime, id, secret) = {
        let mut s = state.lock().expect("idp state");
        s.token_requests += 1;
        (
            s.mode,
            s.lifetime,
            s.client_id.clone(),
            s.client_secret.clone(),
        )
    };
    let refused = (
        401,
        r#"{"error":"invalid_client","error_description":"client authentication failed"}"#
            .to_string(),
    );
    if mode == Mode::Refuse {
        return refused;
    }
    if let Mode::Slow(d) = mode {
        std::thread::sleep(d);
    }
    let form = String::from_utf8_lossy(body);
    if !form
        .split('&')
        .any(|kv| kv == "grant_type=client_credentials")
    {
        return (400, r#"{"error":"unsupported_grant_type"}"#.to_string());
    }
    // RFC 6749 §2.3.1: id and secret form-URL-encoded, then Basic.
    let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let want =
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", enc(&id), enc(&secret)));
    if authorization.as_deref() != Some(&format!("Basic {want}")) {
        return refused;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let (iat, exp) = match mode {
        Mode::Expired => (now - 7200, now - 3600),
        _ => (now, now + lifetime.as_secs()),
    };
    let claims = serde_json::json!({
        "iss": issuer,
        "aud": AUDIENCE,
        "sub": id,
        "iat": iat,
        "exp": exp,
        "scope": "kafka",
    });
    let token = sign(key, &claims);
    state.lock().expect("idp state").tokens_issued += 1;
    (
        200,
        serde_json::json!({
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": exp.saturating_sub(now),
        })
        .to_string(),
    )
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// An RS256 JWS of `claims`.
fn sign(key: &RsaKeyPair, claims: &serde_json::Value) -> String {
    let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": KID});
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let mut sig = vec![0; key.public().modulus_len()];
    key.sign(
        &RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .expect("sign");
    format!("{input}.{}", b64(&sig))
}

/// A 2048-bit RSA key made by `openssl genpkey`.
fn rsa_key() -> RsaKeyPair {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::PrivatePkcs8KeyDer;
    let out = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ])
        .output()
        .expect("run openssl genpkey (Debian package openssl)");
    assert!(out.status.success(), "openssl genpkey failed");
    let der = PrivatePkcs8KeyDer::from_pem_slice(&out.stdout).expect("PKCS#8 PEM from openssl");
    RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).expect("RSA key")
}

/// The JWKS of `key`.
fn jwks(key: &RsaKeyPair) -> String {
    let c: ring::rsa::PublicKeyComponents<Vec<u8>> = key.public().into();
    let strip = |v: &[u8]| {
        let start = v.iter().position(|b| *b != 0).unwrap_or(v.len());
        v[start..].to_vec()
    };
    let (n, e) = (strip(&c.n), strip(&c.e));
    serde_json::json!({
        "keys": [{
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": KID,
            "n": b64(&n),
            "e": b64(&e),
        }]
    })
    .to_string()
}
