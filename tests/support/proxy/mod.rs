//! `ProduceCheckProxy`: a TCP proxy in front of a broker that forwards bytes unchanged in both
//! directions while checking every Produce request against Apache Kafka's broker-side rules.
//!
//! The proxy runs on its own OS thread with its own current-thread tokio runtime, so it works
//! the same from `#[test]` and `#[tokio::test]` (any flavour).
//!
//! Frames are forwarded whole: the proxy reads until a complete size-prefixed frame is buffered,
//! inspects it, then writes it on. That guarantees an InitProducerId response is recorded before
//! the client can see it (and so before the client can use the producer id).

pub mod check;
pub mod fault;

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};

pub use check::{check_produce_request, FrameOutcome, ProduceChecker, INIT_PRODUCER_ID, PRODUCE};
pub use fault::{FaultAction, FaultPlan, KeyTrigger};

use crate::support::wire::MAX_FRAME_BYTES;

/// Proxy settings.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Require acks=-1 on every Produce request (turn off for rdkafka test producers that use
    /// other acks settings). Can also be changed later with
    /// [`ProduceCheckProxy::set_require_acks_all`].
    pub require_acks_all: bool,
    /// Largest frame the proxy will buffer; a larger declared size is a violation and the rest
    /// of that connection is forwarded unparsed.
    pub max_frame_bytes: usize,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            require_acks_all: true,
            max_frame_bytes: MAX_FRAME_BYTES,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type InFlight = Mutex<HashMap<i32, (i16, i16)>>;

struct Shared {
    upstream: Mutex<SocketAddr>,
    checker: Mutex<ProduceChecker>,
    fault: Arc<Mutex<FaultPlan>>,
    kill_tx: watch::Sender<u64>,
    max_frame_bytes: usize,
    connections_accepted: AtomicU64,
    /// Produce requests delivered late because of [`FaultPlan::hold`].
    held_produce: AtomicU64,
    notes: Mutex<Vec<String>>,
}

impl Shared {
    fn violation(&self, v: String) {
        lock(&self.checker).violations.push(v);
    }

    fn note(&self, n: String) {
        let mut notes = lock(&self.notes);
        if notes.len() < 10_000 {
            notes.push(n);
        }
    }

    fn on_request_frame(&self, payload: &[u8], inflight: &InFlight) -> FaultAction {
        let outcome = {
            let mut c = lock(&self.checker);
            let o = c.check_request_payload(payload);
            c.violations.extend(o.violations.iter().cloned());
            o
        };
        let (key, version) = match &outcome.info {
            Some(info) => {
                let no_response = info.api_key == PRODUCE && outcome.produce_acks == Some(0);
                if !no_response {
                    let mut m = lock(inflight);
                    if m.len() > 100_000 {
                        m.clear();
                    }
                    m.insert(info.correlation_id, (info.api_key, info.api_version));
                }
                (Some(info.api_key), Some(info.api_version))
            }
            None => (None, None),
        };
        lock(&self.fault).on_request(key, version)
    }

    fn on_response_frame(&self, payload: &[u8], inflight: &InFlight) -> FaultAction {
        let key = if payload.len() >= 4 {
            let corr = i32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
            lock(inflight).remove(&corr)
        } else {
            self.note(format!(
                "broker->client frame of {} bytes has no correlation id",
                payload.len()
            ));
            None
        };
        if let Some((api_key, api_version)) = key {
            let note = lock(&self.checker).observe_response(api_key, api_version, payload);
            if let Some(n) = note {
                self.note(n);
            }
        }
        lock(&self.fault).on_response(key.map(|(k, _)| k))
    }
}

/// Direction of a pump, for messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    ClientToBroker,
    BrokerToClient,
}

async fn pump(
    dir: Dir,
    mut rd: OwnedReadHalf,
    mut out: Forward,
    shared: &Shared,
    inflight: &InFlight,
) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        while buf.len() >= 4 {
            let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if size < 0 || size as usize > shared.max_frame_bytes {
                let msg = format!(
                    "[bad-frame] {} frame declares {size} bytes (cap {}); rest of this connection forwarded unparsed",
                    if dir == Dir::ClientToBroker { "client->broker" } else { "broker->client" },
                    shared.max_frame_bytes
                );
                if dir == Dir::ClientToBroker {
                    shared.violation(msg);
                } else {
                    shared.note(msg);
                }
                out.send(buf.split().freeze(), FaultAction::Forward).await?;
                loop {
                    let mut chunk = BytesMut::with_capacity(64 * 1024);
                    if rd.read_buf(&mut chunk).await? == 0 {
                        return Ok(());
                    }
                    out.send(chunk.freeze(), FaultAction::Forward).await?;
                }
            }
            let total = 4 + size as usize;
            if buf.len() < total {
                break;
            }
            let frame = buf.split_to(total).freeze();
            let action = match dir {
                Dir::ClientToBroker => shared.on_request_frame(&frame[4..], inflight),
                Dir::BrokerToClient => shared.on_response_frame(&frame[4..], inflight),
            };
            match action {
                FaultAction::Close => return Ok(()),
                FaultAction::ForwardThenClose => {
                    out.send(frame, action).await?;
                    return Ok(());
                }
                _ => out.send(frame, action).await?,
            }
        }
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        if rd.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

/// Where a pump's frames go: written at once (broker->client), or handed to a task that owns
/// the broker connection and can hold them (client->broker, see [`FaultPlan::hold`]).
enum Forward {
    Direct(OwnedWriteHalf),
    Queued(tokio::sync::mpsc::UnboundedSender<(bytes::Bytes, FaultAction, std::time::Instant)>),
}

impl Forward {
    async fn send(&mut self, frame: bytes::Bytes, action: FaultAction) -> io::Result<()> {
        match self {
            Forward::Direct(wr) => write_frame(wr, &frame, action).await,
            Forward::Queued(tx) => tx
                .send((frame, action, std::time::Instant::now()))
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "broker side closed")),
        }
    }
}

async fn write_frame(wr: &mut OwnedWriteHalf, frame: &[u8], action: FaultAction) -> io::Result<()> {
    if let FaultAction::Delay(d) = action {
        tokio::time::sleep(d).await;
    }
    wr.write_all(frame).await?;
    if action == FaultAction::ForwardThenClose {
        wr.flush().await?;
        return Err(io::Error::new(
            io::ErrorKind::ConnectionAborted,
            "closed by fault plan",
        ));
    }
    Ok(())
}

/// Writes a connection's requests to the broker, holding them while the fault plan says so.
/// Outlives the client: what it has read is delivered even after the client went away.
async fn deliver_requests(
    conn: u64,
    mut wr: OwnedWriteHalf,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(bytes::Bytes, FaultAction, std::time::Instant)>,
    shared: Arc<Shared>,
    closed: oneshot::Sender<()>,
) {
    let mut held_any = false;
    while let Some((frame, action, received)) = rx.recv().await {
        // Held: read from a held connection before the hold ends.
        let until = lock(&shared.fault).held_until_for(conn, received);
        if let Some(until) = until {
            held_any = true;
            if frame.len() >= 6 && i16::from_be_bytes([frame[4], frame[5]]) == PRODUCE {
                shared.held_produce.fetch_add(1, Ordering::Relaxed);
            }
            tokio::time::sleep_until(tokio::time::Instant::from_std(until)).await;
        }
        if write_frame(&mut wr, &frame, action).await.is_err() {
            break;
        }
    }
    let _ = closed.send(());
    if held_any {
        // Late requests are handled by the broker even though nobody reads the answers.
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    }
}

async fn handle_connection(client: TcpStream, peer: SocketAddr, conn: u64, shared: Arc<Shared>) {
    if !lock(&shared.fault).on_connect() {
        return;
    }
    let mut kill = shared.kill_tx.subscribe();
    let upstream_addr = *lock(&shared.upstream);
    let upstream = match TcpStream::connect(upstream_addr).await {
        Ok(s) => s,
        Err(e) => {
            shared.note(format!(
                "connection from {peer}: cannot connect to upstream {upstream_addr}: {e}"
            ));
            return;
        }
    };
    client.set_nodelay(true).ok();
    upstream.set_nodelay(true).ok();
    let (cr, cw) = client.into_split();
    let (ur, uw) = upstream.into_split();
    let inflight: InFlight = Mutex::new(HashMap::new());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (closed_tx, closed_rx) = oneshot::channel();
    tokio::spawn(deliver_requests(conn, uw, rx, shared.clone(), closed_tx));
    tokio::select! {
        r = pump(Dir::ClientToBroker, cr, Forward::Queued(tx), &shared, &inflight) => {
            if let Err(e) = r {
                shared.note(format!("connection from {peer}: client->broker: {e}"));
            }
        }
        r = pump(Dir::BrokerToClient, ur, Forward::Direct(cw), &shared, &inflight) => {
            if let Err(e) = r {
                shared.note(format!("connection from {peer}: broker->client: {e}"));
            }
        }
        _ = closed_rx => {}
        _ = kill.changed() => {}
    }
    // Dropping the halves closes the client socket; the delivery task closes the broker's.
}

async fn accept_loop(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            shared.note(format!("proxy listener unusable: {e}"));
            return;
        }
    };
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((sock, peer)) => {
                    let conn = shared.connections_accepted.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(handle_connection(sock, peer, conn, shared.clone()));
                }
                Err(e) => {
                    shared.note(format!("accept failed: {e}"));
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
    }
}

/// A checking TCP proxy. See the module docs.
///
/// Dropping it with unreported violations panics (unless the thread is already panicking), so
/// a test cannot forget to look; call [`ProduceCheckProxy::assert_clean`] for a clearer message,
/// or [`ProduceCheckProxy::take_violations`] when a test provokes violations on purpose.
pub struct ProduceCheckProxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
    /// Violations already reported by a passing `assert_clean` (or taken).
    reported: AtomicUsize,
}

impl ProduceCheckProxy {
    /// Starts a proxy on 127.0.0.1:<free port> forwarding to `upstream`, default config.
    pub fn start(upstream: SocketAddr) -> Self {
        Self::start_with(upstream, ProxyConfig::default())
    }

    /// Starts a proxy on 127.0.0.1:<free port> forwarding to `upstream`.
    pub fn start_with(upstream: SocketAddr, config: ProxyConfig) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("ProduceCheckProxy: bind 127.0.0.1:0");
        Self::from_listener(listener, upstream, config)
    }

    /// Starts a proxy on an already-bound listener (lets a caller learn the port before the
    /// upstream exists, e.g. to advertise it from the broker).
    pub fn from_listener(
        listener: std::net::TcpListener,
        upstream: SocketAddr,
        config: ProxyConfig,
    ) -> Self {
        let addr = listener
            .local_addr()
            .expect("ProduceCheckProxy: listener local_addr");
        listener
            .set_nonblocking(true)
            .expect("ProduceCheckProxy: set_nonblocking");
        let (kill_tx, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            checker: Mutex::new(ProduceChecker::new(config.require_acks_all)),
            fault: Arc::new(Mutex::new(FaultPlan::default())),
            kill_tx,
            max_frame_bytes: config.max_frame_bytes,
            connections_accepted: AtomicU64::new(0),
            held_produce: AtomicU64::new(0),
            notes: Mutex::new(Vec::new()),
        });
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let thread_shared = shared.clone();
        let thread = thread::Builder::new()
            .name(format!("produce-check-proxy-{}", addr.port()))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("ProduceCheckProxy: build tokio runtime");
                rt.block_on(accept_loop(listener, thread_shared, shutdown_rx));
            })
            .expect("ProduceCheckProxy: spawn thread");
        ProduceCheckProxy {
            shared,
            addr,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
            reported: AtomicUsize::new(0),
        }
    }

    /// Address the proxy listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// "127.0.0.1:PORT" of the proxy.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    pub fn upstream(&self) -> SocketAddr {
        *lock(&self.shared.upstream)
    }

    /// Points new connections at another upstream (existing ones are unaffected).
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *lock(&self.shared.upstream) = upstream;
    }

    pub fn set_require_acks_all(&self, require: bool) {
        lock(&self.shared.checker).require_acks_all = require;
    }

    /// All violations recorded so far.
    pub fn violations(&self) -> Vec<String> {
        lock(&self.shared.checker).violations.clone()
    }

    /// Removes and returns all violations (for tests that provoke them on purpose).
    pub fn take_violations(&self) -> Vec<String> {
        self.reported.store(0, Ordering::SeqCst);
        std::mem::take(&mut lock(&self.shared.checker).violations)
    }

    /// Panics listing every violation, if there is any.
    pub fn assert_clean(&self) {
        let v = self.violations();
        self.reported.store(v.len(), Ordering::SeqCst);
        if !v.is_empty() {
            panic!(
                "ProduceCheckProxy on {} saw {} produce-rule violation(s):\n  {}",
                self.addr,
                v.len(),
                v.join("\n  ")
            );
        }
    }

    /// Number of Produce requests seen.
    pub fn produce_requests(&self) -> u64 {
        lock(&self.shared.checker).produce_requests
    }

    /// Number of record batches seen inside Produce requests.
    pub fn produce_batches(&self) -> u64 {
        lock(&self.shared.checker).produce_batches
    }

    /// Number of requests seen with `api_key`.
    pub fn requests_seen(&self, api_key: i16) -> u64 {
        lock(&self.shared.checker)
            .requests_by_api_key
            .get(&api_key)
            .copied()
            .unwrap_or(0)
    }

    /// Requests seen per API key.
    pub fn request_counts(&self) -> BTreeMap<i16, u64> {
        lock(&self.shared.checker).requests_by_api_key.clone()
    }

    /// (producerId, epoch) pairs handed out by InitProducerId responses seen by the proxy.
    pub fn known_producer_ids(&self) -> Vec<(i64, i16)> {
        lock(&self.shared.checker).known_producer_ids()
    }

    /// Non-violation diagnostics (connect failures, undecodable responses...).
    pub fn notes(&self) -> Vec<String> {
        lock(&self.shared.notes).clone()
    }

    pub fn connections_accepted(&self) -> u64 {
        self.shared.connections_accepted.load(Ordering::Relaxed)
    }

    /// Runs `f` with the checker locked (advanced inspection or seeding).
    pub fn with_checker<R>(&self, f: impl FnOnce(&mut ProduceChecker) -> R) -> R {
        f(&mut lock(&self.shared.checker))
    }

    /// The fault plan the forwarding loops consult on every frame.
    pub fn fault_plan(&self) -> Arc<Mutex<FaultPlan>> {
        self.shared.fault.clone()
    }

    /// Changes the fault plan under its lock.
    pub fn update_faults(&self, f: impl FnOnce(&mut FaultPlan)) {
        f(&mut lock(&self.shared.fault));
    }

    /// Produce requests that a hold ([`FaultPlan::hold`]) delivered late.
    pub fn held_produce_requests(&self) -> u64 {
        self.shared.held_produce.load(Ordering::Relaxed)
    }

    /// Closes every currently proxied connection (both sides). New connections still work.
    pub fn drop_connections_now(&self) {
        self.shared.kill_tx.send_modify(|g| *g += 1);
    }
}

impl Drop for ProduceCheckProxy {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if thread::panicking() {
            return;
        }
        let v = self.violations();
        let reported = self.reported.load(Ordering::SeqCst);
        if v.len() > reported {
            panic!(
                "ProduceCheckProxy on {} dropped with {} unreported produce-rule violation(s) \
                 (call assert_clean() or take_violations()):\n  {}",
                self.addr,
                v.len() - reported,
                v[reported..].join("\n  ")
            );
        }
    }
}
