//! One connection to one broker: pipelined requests matched by correlation id, response
//! frames read under a size cap, request frames written with vectored writes.
//!
//! Set-up follows Kafka: TCP (and TLS, see [`super::transport`]), ApiVersions, then for SASL
//! clusters SaslHandshake and SaslAuthenticate rounds. When the broker gives the session a
//! lifetime (KIP-368), the connection re-authenticates before it ends: the first request started
//! after the deadline (85–95 % of the lifetime) waits for the requests in flight, runs the SASL
//! exchange again, then goes out.

mod kerberos;

use std::collections::HashMap;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::{Decodable, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};

use super::transport::{self, ReadHalf, TlsClient, WriteHalf};
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::api_versions::{self, ApiVersionsResponse};
use crate::protocol::frame::{
    check_frame_size, encode_request, peek_correlation_id, response_body, RequestFrame, RequestMeta,
};
use crate::protocol::wire::Reader;
use crate::protocol::{error_code, supported_versions};
use crate::sasl::oauth::{self, OAuthSettings};
use crate::sasl::scram::{self, ScramClient, ScramHash};
use crate::sasl::{self, SaslCredentials, SaslMechanism, SaslSettings};

/// Settings of a connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// Our client id in request headers.
    pub client_id: String,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Time allowed for a response (Fetch adds its own `max_wait_ms`).
    pub request_timeout: Duration,
    /// Largest response frame accepted; larger declared sizes close the connection.
    pub max_frame: usize,
    /// TLS, if the cluster uses it.
    pub tls: Option<TlsClient>,
    /// SASL credentials, if the cluster uses SASL.
    pub sasl: Option<SaslSettings>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            client_id: "strait".to_string(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_frame: crate::protocol::frame::DEFAULT_MAX_FRAME,
            tls: None,
            sasl: None,
        }
    }
}

type Pending = Arc<Mutex<PendingMap>>;

#[derive(Default, Debug)]
struct PendingMap {
    waiting: HashMap<i32, oneshot::Sender<Result<Bytes, String>>>,
    /// Set once the reader stopped: new requests fail at once with this reason.
    closed: Option<String>,
    /// Told whenever `waiting` becomes empty or the reader stops.
    idle: Arc<Notify>,
}

static NEXT_CONNECTION_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A live connection to one broker. Cheap to share behind an `Arc`; requests from many tasks
/// are pipelined on it.
pub struct Connection {
    /// Process-wide unique id of this connection.
    id: u64,
    addr: String,
    config: ConnectionConfig,
    writer: tokio::sync::Mutex<WriteHalf>,
    pending: Pending,
    /// When to re-authenticate (KIP-368), if the broker set a session lifetime.
    reauth_at: Mutex<Option<Instant>>,
    next_correlation_id: AtomicI32,
    versions: ApiVersionsResponse,
    broken: Arc<AtomicBool>,
    reader: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Connection {
    /// Connects to `addr` (with TLS if configured), negotiates API versions (ApiVersions v3,
    /// falling back to the broker's v0 answer) and authenticates if SASL is configured.
    pub async fn connect(addr: &str, config: &ConnectionConfig) -> Result<Connection> {
        let (read, write) = transport::connect(addr, config.connect_timeout, config.tls.as_ref())
            .await
            .map_err(|e| e.broker_addr(addr))?;
        let pending: Pending = Arc::default();
        let broken = Arc::new(AtomicBool::new(false));
        let reader = tokio::spawn(read_loop(
            read,
            pending.clone(),
            broken.clone(),
            config.max_frame,
        ));
        let mut conn = Connection {
            addr: addr.to_string(),
            config: config.clone(),
            writer: tokio::sync::Mutex::new(write),
            pending,
            next_correlation_id: AtomicI32::new(1),
            id: NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed),
            versions: ApiVersionsResponse::default(),
            broken,
            reader,
            reauth_at: Mutex::new(None),
        };
        conn.versions = conn.handshake().await.map_err(|e| e.broker_addr(addr))?;
        if conn.config.sasl.is_some() {
            let mut w = conn.writer.lock().await;
            // Boxed, like the re-authentication below: the exchanges of every mechanism make a
            // large future, which would otherwise sit inside every caller's.
            Box::pin(conn.authenticate(&mut w))
                .await
                .map_err(|e| e.broker_addr(addr))?;
        }
        Ok(conn)
    }

    /// Runs SaslHandshake and the SaslAuthenticate rounds of the configured mechanism on the
    /// locked writer, then sets the re-authentication deadline.
    async fn authenticate(&self, w: &mut WriteHalf) -> Result<()> {
        let Some(settings) = &self.config.sasl else {
            return Ok(());
        };
        let mechanism = settings.mechanism;
        let hs = self
            .call_locked(
                w,
                &SaslHandshakeRequest::default()
                    .with_mechanism(StrBytes::from_static_str(mechanism.as_str())),
            )
            .await?;
        if hs.error_code == error_code::UNSUPPORTED_SASL_MECHANISM {
            let offered: Vec<&str> = hs.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(Error::new(ErrorKind::Auth(format!(
                "the broker does not enable {} (it offers: {})",
                mechanism.as_str(),
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join(", ")
                }
            ))));
        }
        if hs.error_code != error_code::NONE {
            // Not a refusal of the credentials (for example ILLEGAL_SASL_STATE when the
            // broker ended the session as re-authentication began): a new connection cures it.
            return Err(Error::new(ErrorKind::Protocol(format!(
                "the broker refused the SASL handshake for {}: {}",
                mechanism.as_str(),
                error_code::name(hs.error_code)
            ))));
        }
        let lifetime_ms = match &settings.credentials {
            SaslCredentials::Password { username, password } => {
                self.password_exchange(w, mechanism, username, password.expose())
                    .await?
            }
            SaslCredentials::OAuthBearer(o) => self.oauthbearer_exchange(w, o).await?,
            SaslCredentials::Kerberos(k) => self.gssapi_authenticate(w, k).await?,
        };
        let deadline =
            sasl::reauth_delay(lifetime_ms, sasl::random_fraction()).map(|d| Instant::now() + d);
        if let Some(d) = deadline {
            tracing::debug!(
                broker = %self.addr,
                session_lifetime_ms = lifetime_ms,
                reauthenticate_in = ?d.saturating_duration_since(Instant::now()),
                "SASL session has a lifetime"
            );
        }
        *self.reauth_at.lock().unwrap_or_else(|e| e.into_inner()) = deadline;
        Ok(())
    }

    /// PLAIN (one message) or SCRAM (client-first, client-final, and the server's signature
    /// checked); returns the session lifetime.
    async fn password_exchange(
        &self,
        w: &mut WriteHalf,
        mechanism: SaslMechanism,
        username: &str,
        password: &str,
    ) -> Result<i64> {
        let hash = match mechanism {
            SaslMechanism::ScramSha256 => ScramHash::Sha256,
            SaslMechanism::ScramSha512 => ScramHash::Sha512,
            _ => {
                let token = sasl::plain_token(username, password);
                return Ok(self.sasl_authenticate(w, token).await?.1);
            }
        };
        let nonce = scram::random_nonce().map_err(scram_error)?;
        let client = ScramClient::new(hash, username, password, nonce);
        let (server_first, _) = self.sasl_authenticate(w, client.client_first()).await?;
        let last = client.server_first(&server_first).map_err(scram_error)?;
        let (server_final, lifetime) = self
            .sasl_authenticate(w, last.client_final().to_vec())
            .await?;
        last.server_final(&server_final).map_err(scram_error)?;
        Ok(lifetime)
    }

    /// OAUTHBEARER: the cluster's current token with the SASL extensions in one message. A
    /// broker that rejects the token answers with an error challenge; the client then sends
    /// `%x01` and the broker ends the exchange with its error. Returns the session lifetime.
    async fn oauthbearer_exchange(&self, w: &mut WriteHalf, o: &OAuthSettings) -> Result<i64> {
        let token = o
            .token()
            .await
            .map_err(|p| Error::new(ErrorKind::Credentials(format!("OAUTHBEARER: {p}"))))?;
        let first = oauth::message::client_first(token.value.expose(), &o.extensions);
        let (challenge, lifetime) = self.sasl_authenticate(w, first).await?;
        if challenge.is_empty() {
            return Ok(lifetime);
        }
        let rejected = oauth::message::describe_server_error(&challenge);
        let detail = match self
            .sasl_authenticate(w, oauth::message::after_failure())
            .await
        {
            Err(e) => format!(
                "OAUTHBEARER token of {}: {rejected}; {}",
                token.principal, e.kind
            ),
            Ok(_) => format!("OAUTHBEARER token of {}: {rejected}", token.principal),
        };
        Err(Error::new(ErrorKind::Auth(detail)))
    }

    /// One SaslAuthenticate round: our message out, the broker's message and the session
    /// lifetime (0 = none) back.
    async fn sasl_authenticate(&self, w: &mut WriteHalf, message: Vec<u8>) -> Result<(Bytes, i64)> {
        let resp = self
            .call_locked(
                w,
                &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(message)),
            )
            .await?;
        if resp.error_code != error_code::NONE {
            let detail = resp
                .error_message
                .as_ref()
                .map(|m| m.to_string())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| error_code::name(resp.error_code));
            return Err(Error::new(ErrorKind::Auth(detail)));
        }
        Ok((resp.auth_bytes, resp.session_lifetime_ms))
    }

    /// Re-authenticates if the session deadline passed: waits for the requests in flight
    /// (none may be answered while the broker re-authenticates), then runs the exchange.
    async fn reauthenticate_if_due(&self, w: &mut WriteHalf) -> Result<()> {
        let due = sasl::reauth_due(
            *self.reauth_at.lock().unwrap_or_else(|e| e.into_inner()),
            Instant::now(),
        );
        if !due {
            return Ok(());
        }
        let deadline = Instant::now() + self.config.request_timeout;
        loop {
            let idle = lock(&self.pending).idle.clone();
            let notified = idle.notified();
            {
                let p = lock(&self.pending);
                if let Some(reason) = &p.closed {
                    return Err(
                        Error::new(ErrorKind::Closed(reason.clone())).broker_addr(&self.addr)
                    );
                }
                if p.waiting.is_empty() {
                    break;
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if tokio::time::timeout(left, notified).await.is_err() {
                self.broken.store(true, Ordering::Relaxed);
                return Err(Error::new(ErrorKind::Timeout(
                    self.config.request_timeout,
                    "requests in flight before re-authentication",
                ))
                .broker_addr(&self.addr));
            }
        }
        tracing::debug!(broker = %self.addr, "re-authenticating (SASL session lifetime)");
        // Boxed: this future sits inside every request's, and the SASL exchanges of every
        // mechanism are large (debug builds overflowed a worker's stack without it).
        Box::pin(self.authenticate(w)).await.map_err(|e| {
            self.broken.store(true, Ordering::Relaxed);
            e.broker_addr(&self.addr)
        })
    }

    /// Sends a `kafka-protocol` request on the locked writer and decodes its answer.
    async fn call_locked<R: Request>(&self, w: &mut WriteHalf, req: &R) -> Result<R::Response> {
        let key = ApiKey::try_from(R::KEY)
            .map_err(|_| Error::invalid(format!("unknown API key {}", R::KEY)))?;
        let version = self.version(key)?;
        let meta = self.meta(key, version);
        let id = meta.correlation_id;
        let frame = encode_request(&meta, req).map_err(Error::invalid)?;
        let bytes = self
            .write_registered(w, id, frame)
            .await?
            .wait(self.config.request_timeout)
            .await?;
        let mut body = response_body(bytes, key, version)?;
        let mut rest = body.rest();
        R::Response::decode(&mut rest, version).map_err(|e| {
            Error::new(ErrorKind::Protocol(format!(
                "cannot decode {key:?} v{version} response: {e}"
            )))
        })
    }

    async fn handshake(&self) -> Result<ApiVersionsResponse> {
        let ours = supported_versions(ApiKey::ApiVersions)
            .map(|v| v.max)
            .unwrap_or(0);
        let mut version = ours;
        loop {
            let frame = self
                .roundtrip(|id, client| api_versions::encode_request(id, client, version))
                .await
                .map_err(|e| match e.kind {
                    _ if e.kind.to_string().contains(SPEAKS_TLS) => {
                        Error::new(ErrorKind::Tls(SPEAKS_TLS.to_string()))
                    }
                    // With TLS 1.3 the broker's refusal of the client (no certificate, or one it
                    // does not trust) arrives as an alert on the first read.
                    _ if e.kind.to_string().contains("fatal alert") => {
                        Error::new(ErrorKind::Tls(format!(
                            "the broker refused the TLS session ({}): if it requires a client certificate, set ssl_certificate_file and ssl_key_file",
                            e.kind
                        )))
                    }
                    ErrorKind::Closed(_) | ErrorKind::Wire(_) | ErrorKind::Timeout(..) => {
                        Error::new(ErrorKind::Protocol(format!(
                            "no Kafka ApiVersions answer ({}); is this a Kafka listener?",
                            e.kind
                        )))
                    }
                    _ => e,
                })?;
            let mut r = Reader::new(frame);
            r.i32("correlation id")?;
            let resp = api_versions::decode_response(r, version).map_err(|e| {
                Error::new(ErrorKind::Protocol(format!(
                    "not a Kafka ApiVersions response: {e}"
                )))
            })?;
            if resp.error_code == error_code::UNSUPPORTED_VERSION {
                let theirs = resp.range(ApiKey::ApiVersions).map(|v| v.max).unwrap_or(0);
                if theirs < version {
                    version = theirs;
                    continue;
                }
            }
            if resp.error_code != error_code::NONE {
                return Err(Error::broker(resp.error_code, None));
            }
            return Ok(resp);
        }
    }

    /// The broker address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// A process-wide unique id: requests on one connection are handled in order, requests on
    /// two connections are not.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What the broker said it supports.
    pub fn api_versions(&self) -> &ApiVersionsResponse {
        &self.versions
    }

    /// True once the connection failed; the pool replaces it.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// The version to use for `key`: the highest both sides support.
    pub fn version(&self, key: ApiKey) -> Result<i16> {
        let ours = supported_versions(key)
            .ok_or_else(|| Error::invalid(format!("strait does not implement {key:?}")))?;
        let theirs = self.versions.range(key);
        theirs.and_then(|t| ours.negotiate(t)).ok_or_else(|| {
            Error::new(ErrorKind::UnsupportedVersion {
                api: format!("{key:?}"),
                ours: format!("{}..={}", ours.min, ours.max),
                theirs: theirs
                    .map(|t| format!("{}..={}", t.min, t.max))
                    .unwrap_or_else(|| "none".to_string()),
            })
            .broker_addr(&self.addr)
        })
    }

    /// The header fields for a request with a fresh correlation id.
    pub fn meta(&self, api_key: ApiKey, version: i16) -> RequestMeta<'_> {
        RequestMeta {
            api_key,
            version,
            correlation_id: self.next_correlation_id.fetch_add(1, Ordering::Relaxed),
            client_id: &self.config.client_id,
        }
    }

    /// Sends a frame built for `correlation_id` and waits for the matching response frame
    /// (the bytes after the size prefix, starting with the correlation id).
    pub async fn roundtrip(&self, build: impl FnOnce(i32, &str) -> RequestFrame) -> Result<Bytes> {
        self.roundtrip_timeout(self.config.request_timeout, build)
            .await
    }

    /// [`Connection::roundtrip`] with an explicit timeout.
    pub async fn roundtrip_timeout(
        &self,
        timeout: Duration,
        build: impl FnOnce(i32, &str) -> RequestFrame,
    ) -> Result<Bytes> {
        let id = self.next_correlation_id.fetch_add(1, Ordering::Relaxed);
        let frame = build(id, &self.config.client_id);
        self.send_frame(id, frame, timeout).await
    }

    /// Sends a frame whose header carries `correlation_id` and waits for its response.
    pub async fn send_frame(
        &self,
        correlation_id: i32,
        frame: RequestFrame,
        timeout: Duration,
    ) -> Result<Bytes> {
        self.start(correlation_id, frame).await?.wait(timeout).await
    }

    /// Writes a frame and returns at once with a handle on its response. Frames started one
    /// after another on a connection reach the broker in that order, which keeps pipelined
    /// Produce requests in sequence.
    pub async fn start(&self, correlation_id: i32, frame: RequestFrame) -> Result<PendingResponse> {
        let mut w = self.writer.lock().await;
        if self.config.sasl.is_some() {
            self.reauthenticate_if_due(&mut w).await?;
        }
        self.write_registered(&mut w, correlation_id, frame).await
    }

    /// Registers `correlation_id` and writes the frame on the locked writer.
    async fn write_registered(
        &self,
        w: &mut WriteHalf,
        correlation_id: i32,
        frame: RequestFrame,
    ) -> Result<PendingResponse> {
        let (tx, rx) = oneshot::channel();
        {
            let mut p = lock(&self.pending);
            if let Some(reason) = &p.closed {
                return Err(Error::new(ErrorKind::Closed(reason.clone())).broker_addr(&self.addr));
            }
            p.waiting.insert(correlation_id, tx);
        }
        let written = write_chunks(w, &frame.chunks).await;
        if let Err(e) = written {
            lock(&self.pending).waiting.remove(&correlation_id);
            self.broken.store(true, Ordering::Relaxed);
            return Err(Error::from(e).broker_addr(&self.addr));
        }
        Ok(PendingResponse {
            rx,
            arrived: None,
            correlation_id,
            pending: self.pending.clone(),
            addr: self.addr.clone(),
        })
    }
}

/// A request written to a broker whose response has not been read yet.
#[derive(Debug)]
pub struct PendingResponse {
    rx: oneshot::Receiver<Result<Bytes, String>>,
    /// The answer, once [`PendingResponse::ready`] has seen it.
    arrived: Option<std::result::Result<Result<Bytes, String>, oneshot::error::RecvError>>,
    correlation_id: i32,
    pending: Pending,
    addr: String,
}

impl PendingResponse {
    /// Returns once the answer (or the connection's end) has arrived, keeping it for
    /// [`PendingResponse::wait`]. Cancel-safe: dropping the future loses nothing, so it can race
    /// other events in a `select!`.
    pub async fn ready(&mut self) {
        if self.arrived.is_none() {
            let got = (&mut self.rx).await;
            self.arrived = Some(got);
        }
    }

    /// Waits for the response frame (the bytes after the size prefix).
    pub async fn wait(self, timeout: Duration) -> Result<Bytes> {
        self.wait_reporting(timeout, timeout).await
    }

    /// Like [`PendingResponse::wait`] for the `remaining` part of a request's `timeout`; a
    /// timeout is reported as the whole `timeout`.
    pub async fn wait_reporting(mut self, remaining: Duration, timeout: Duration) -> Result<Bytes> {
        let got = match self.arrived.take() {
            Some(got) => Ok(got),
            None => tokio::time::timeout(remaining, &mut self.rx).await,
        };
        match got {
            Ok(Ok(Ok(bytes))) => Ok(bytes),
            Ok(Ok(Err(reason))) => {
                Err(Error::new(ErrorKind::Closed(reason)).broker_addr(&self.addr))
            }
            Ok(Err(_)) => {
                Err(Error::new(ErrorKind::Closed("reader stopped".to_string()))
                    .broker_addr(&self.addr))
            }
            Err(_) => {
                lock(&self.pending).waiting.remove(&self.correlation_id);
                Err(Error::new(ErrorKind::Timeout(timeout, "response")).broker_addr(&self.addr))
            }
        }
    }
}

fn scram_error(e: scram::ScramError) -> Error {
    Error::new(ErrorKind::Auth(e.to_string()))
}

fn lock(p: &Pending) -> std::sync::MutexGuard<'_, PendingMap> {
    // A poisoned lock only means another task panicked while holding it; the map is still
    // consistent (single inserts and removes).
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes all chunks with vectored writes, resuming after partial writes.
async fn write_chunks(w: &mut WriteHalf, chunks: &[Bytes]) -> std::io::Result<()> {
    let mut idx = 0;
    let mut off = 0;
    while idx < chunks.len() {
        let mut slices: [IoSlice<'_>; 64] = [IoSlice::new(&[]); 64];
        let mut n = 0;
        let mut i = idx;
        let mut first = true;
        while i < chunks.len() && n < slices.len() {
            let s = if first {
                &chunks[i][off..]
            } else {
                &chunks[i][..]
            };
            first = false;
            if !s.is_empty() {
                slices[n] = IoSlice::new(s);
                n += 1;
            }
            i += 1;
        }
        if n == 0 {
            break;
        }
        let mut written = w.write_vectored(&slices[..n]).await?;
        if written == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                "socket accepted no bytes",
            ));
        }
        while written > 0 && idx < chunks.len() {
            let left = chunks[idx].len() - off;
            if written >= left {
                written -= left;
                idx += 1;
                off = 0;
            } else {
                off += written;
                written = 0;
            }
        }
        while idx < chunks.len() && chunks[idx].len() == off {
            idx += 1;
            off = 0;
        }
    }
    w.flush().await
}

async fn read_loop(mut r: ReadHalf, pending: Pending, broken: Arc<AtomicBool>, max: usize) {
    let reason = loop {
        match read_frame(&mut r, max).await {
            Ok(frame) => {
                let Some(id) = peek_correlation_id(&frame) else {
                    break "response shorter than a correlation id".to_string();
                };
                let tx = {
                    let mut p = lock(&pending);
                    let tx = p.waiting.remove(&id);
                    if p.waiting.is_empty() {
                        p.idle.notify_waiters();
                    }
                    tx
                };
                match tx {
                    Some(tx) => {
                        let _ = tx.send(Ok(frame));
                    }
                    // A late answer to a request that timed out: drop it.
                    None => tracing::debug!(correlation_id = id, "response to a forgotten request"),
                }
            }
            Err(e) => break e,
        }
    };
    broken.store(true, Ordering::Relaxed);
    let mut p = lock(&pending);
    p.closed = Some(reason.clone());
    for (_, tx) in p.waiting.drain() {
        let _ = tx.send(Err(reason.clone()));
    }
    p.idle.notify_waiters();
}

/// Frames up to this size get their whole buffer at once (no reallocation, so record bytes are
/// read into place once); larger ones, up to the cap, grow with the bytes that actually arrive.
const PREALLOCATE_UP_TO: usize = 64 * 1024 * 1024;

/// What a plaintext client says when the broker answers with TLS.
const SPEAKS_TLS: &str =
    "this listener speaks TLS: set security_protocol = SSL or SASL_SSL for this cluster";

/// Whether the first bytes of an answer are a TLS record (an alert or a handshake, TLS 1.x)
/// rather than a Kafka frame size: a plaintext client connected to a TLS listener.
pub(crate) fn looks_like_tls(first: [u8; 4]) -> bool {
    matches!(first[0], 0x15 | 0x16) && first[1] == 0x03 && first[2] <= 0x04
}

/// Reads one frame. The declared size is checked against the cap before anything is allocated.
async fn read_frame<R: AsyncRead + Unpin + ?Sized>(r: &mut R, max: usize) -> Result<Bytes, String> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "closed by the broker".to_string(),
        _ => e.to_string(),
    })?;
    if looks_like_tls(len) {
        return Err(SPEAKS_TLS.to_string());
    }
    let size = check_frame_size(i32::from_be_bytes(len), max).map_err(|e| e.to_string())?;
    let mut buf = BytesMut::with_capacity(if size <= PREALLOCATE_UP_TO {
        size
    } else {
        64 * 1024
    });
    while buf.len() < size {
        if buf.capacity() == buf.len() {
            let grow = (size - buf.len()).min(buf.capacity().max(64 * 1024));
            buf.reserve(grow);
        }
        let want = size - buf.len();
        let n = (&mut *r)
            .take(want as u64)
            .read_buf(&mut buf)
            .await
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!(
                "closed by the broker in the middle of a {size}-byte frame"
            ));
        }
    }
    Ok(buf.freeze())
}

#[cfg(test)]
mod tls_tests {
    use super::looks_like_tls;

    #[test]
    fn tls_records_are_recognised() {
        // A TLS alert a TLS listener sends to a plaintext ApiVersions request: read as a Kafka
        // frame size it would be 352518912.
        assert!(looks_like_tls([0x15, 0x03, 0x01, 0x00]));
        assert!(looks_like_tls([0x16, 0x03, 0x03, 0x00]));
        assert!(!looks_like_tls([0x00, 0x00, 0x01, 0x00]));
        assert!(!looks_like_tls(352u32.to_be_bytes()));
    }
}
