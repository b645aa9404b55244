//! One TCP connection to one broker: pipelined requests matched by correlation id, response
//! frames read under a size cap, request frames written with vectored writes.

use std::collections::HashMap;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::error::{Error, ErrorKind, Result};
use crate::protocol::api_versions::{self, ApiVersionsResponse};
use crate::protocol::frame::{check_frame_size, peek_correlation_id, RequestFrame, RequestMeta};
use crate::protocol::wire::Reader;
use crate::protocol::{error_code, supported_versions};

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
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            client_id: "strait".to_string(),
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_frame: crate::protocol::frame::DEFAULT_MAX_FRAME,
        }
    }
}

type Pending = Arc<Mutex<PendingMap>>;

#[derive(Default, Debug)]
struct PendingMap {
    waiting: HashMap<i32, oneshot::Sender<Result<Bytes, String>>>,
    /// Set once the reader stopped: new requests fail at once with this reason.
    closed: Option<String>,
}

/// A live connection to one broker. Cheap to share behind an `Arc`; requests from many tasks
/// are pipelined on it.
pub struct Connection {
    addr: String,
    config: ConnectionConfig,
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    pending: Pending,
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
    /// Connects to `addr` and negotiates API versions (ApiVersions v3, falling back to the
    /// broker's v0 answer).
    pub async fn connect(addr: &str, config: &ConnectionConfig) -> Result<Connection> {
        let stream = tokio::time::timeout(config.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| Error::new(ErrorKind::Timeout(config.connect_timeout, "connect")))?
            .map_err(Error::from)?;
        stream.set_nodelay(true).map_err(Error::from)?;
        let (read, write) = stream.into_split();
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
            versions: ApiVersionsResponse::default(),
            broken,
            reader,
        };
        conn.versions = conn.handshake().await.map_err(|e| e.broker_addr(addr))?;
        Ok(conn)
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
        let (tx, rx) = oneshot::channel();
        {
            let mut p = lock(&self.pending);
            if let Some(reason) = &p.closed {
                return Err(Error::new(ErrorKind::Closed(reason.clone())).broker_addr(&self.addr));
            }
            p.waiting.insert(correlation_id, tx);
        }
        let written = {
            let mut w = self.writer.lock().await;
            write_chunks(&mut w, &frame.chunks).await
        };
        if let Err(e) = written {
            lock(&self.pending).waiting.remove(&correlation_id);
            self.broken.store(true, Ordering::Relaxed);
            return Err(Error::from(e).broker_addr(&self.addr));
        }
        Ok(PendingResponse {
            rx,
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
    correlation_id: i32,
    pending: Pending,
    addr: String,
}

impl PendingResponse {
    /// Waits for the response frame (the bytes after the size prefix).
    pub async fn wait(self, timeout: Duration) -> Result<Bytes> {
        match tokio::time::timeout(timeout, self.rx).await {
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

fn lock(p: &Pending) -> std::sync::MutexGuard<'_, PendingMap> {
    // A poisoned lock only means another task panicked while holding it; the map is still
    // consistent (single inserts and removes).
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes all chunks with vectored writes, resuming after partial writes.
async fn write_chunks(w: &mut OwnedWriteHalf, chunks: &[Bytes]) -> std::io::Result<()> {
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

async fn read_loop(mut r: OwnedReadHalf, pending: Pending, broken: Arc<AtomicBool>, max: usize) {
    let reason = loop {
        match read_frame(&mut r, max).await {
            Ok(frame) => {
                let Some(id) = peek_correlation_id(&frame) else {
                    break "response shorter than a correlation id".to_string();
                };
                let tx = lock(&pending).waiting.remove(&id);
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
}

/// Frames up to this size get their whole buffer at once (no reallocation, so record bytes are
/// read into place once); larger ones, up to the cap, grow with the bytes that actually arrive.
const PREALLOCATE_UP_TO: usize = 64 * 1024 * 1024;

/// Reads one frame. The declared size is checked against the cap before anything is allocated.
async fn read_frame(r: &mut OwnedReadHalf, max: usize) -> Result<Bytes, String> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "closed by the broker".to_string(),
        _ => e.to_string(),
    })?;
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
