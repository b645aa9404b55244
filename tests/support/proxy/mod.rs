//! `ProduceCheckProxy`: a TCP proxy in front of a broker that forwards bytes unchanged in both
//! directions while checking every Produce request against Apache Kafka's broker-side rules.
//!
//! The proxy runs on its own OS thread with its own current-thread tokio runtime, so it works
//! the same from `#[test]` and `#[tokio::test]` (any flavour).
//!
//! Frames are forwarded whole: the proxy reads until a complete size-prefixed frame is buffered,
//! inspects it, then writes it on. That guarantees an InitProducerId response is recorded before
//! the client can see it (and so before the client can use the producer id).
//!
//! Per connection and direction, a reader (`pump`) parses and checks whole frames and queues
//! them with the [`FaultPlan`]'s verdict; a writer (`deliver`) writes them in order, applying
//! what the plan says about time and the link: holds, delays, latency with jitter, blackholes,
//! the bandwidth limit, closes and resets. Faults on offer (see [`FaultPlan`]): delays (all
//! requests, all responses, responses of one API), latency with seeded jitter, a bandwidth
//! limit, a blackhole, refused connections, closes before/after a request or instead of a
//! response, a reset in the middle of a response, held requests delivered late, and
//! [`ProduceCheckProxy::drop_connections_now`] (an RST on every current connection).

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
pub use fault::{FaultAction, FaultPlan, KeyTrigger, Latency, SplitMix64, ANY_API_KEY};

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
    /// Responses cut in the middle ([`FaultPlan::reset_mid_response`]).
    resets_mid_response: AtomicU64,
    /// [`FaultPlan::bandwidth`]'s token buckets: client->broker, broker->client.
    buckets: [Mutex<Bucket>; 2],
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

    /// `frame`: size prefix included.
    fn on_response_frame(&self, frame: &[u8], inflight: &InFlight) -> FaultAction {
        let payload = &frame[4..];
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
        lock(&self.fault).on_response(key.map(|(k, _)| k), frame.len())
    }
}

/// Direction of a pump, for messages.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    ClientToBroker,
    BrokerToClient,
}

impl Dir {
    fn index(self) -> usize {
        match self {
            Dir::ClientToBroker => 0,
            Dir::BrokerToClient => 1,
        }
    }
}

/// A token bucket of [`FaultPlan::bandwidth`] (one per direction, shared by all connections).
#[derive(Default)]
struct Bucket {
    /// The rate the bucket was filled for (0: no limit seen yet); a new rate starts it afresh.
    rate: u64,
    tokens: f64,
    at: Option<std::time::Instant>,
}

impl Bucket {
    /// Takes `n` bytes' worth of tokens at `rate` bytes/s (going into debt if needed) and says
    /// how long to wait before writing them: until the debt is paid back.
    fn take(&mut self, rate: u64, n: usize, now: std::time::Instant) -> std::time::Duration {
        let r = rate as f64;
        if self.rate != rate {
            self.rate = rate;
            self.tokens = r;
            self.at = Some(now);
        }
        let elapsed = self
            .at
            .map_or(0.0, |at| now.saturating_duration_since(at).as_secs_f64());
        self.tokens = (self.tokens + elapsed * r).min(r);
        self.at = Some(now);
        self.tokens -= n as f64;
        if self.tokens >= 0.0 {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_secs_f64(-self.tokens / r)
        }
    }
}

/// One frame on its way to the other side.
struct Outgoing {
    frame: bytes::Bytes,
    action: FaultAction,
    /// When the proxy had read all of it.
    received: std::time::Instant,
    /// Not written before this ([`FaultPlan::latency`]).
    due: Option<std::time::Instant>,
}

type Queue = tokio::sync::mpsc::UnboundedSender<Outgoing>;

/// Reads whole frames from `rd`, checks them, and queues them (with the fault plan's verdict)
/// for the writer of the other side.
async fn pump(
    dir: Dir,
    mut rd: OwnedReadHalf,
    out: Queue,
    shared: &Shared,
    inflight: &InFlight,
) -> io::Result<()> {
    let send = |frame: bytes::Bytes, action: FaultAction, due: Option<std::time::Instant>| {
        out.send(Outgoing {
            frame,
            action,
            received: std::time::Instant::now(),
            due,
        })
        .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "other side closed"))
    };
    // Latency keeps frames in order: none is due before the one read before it.
    let mut last_due: Option<std::time::Instant> = None;
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
                send(buf.split().freeze(), FaultAction::Forward, last_due)?;
                loop {
                    let mut chunk = BytesMut::with_capacity(64 * 1024);
                    if rd.read_buf(&mut chunk).await? == 0 {
                        return Ok(());
                    }
                    send(chunk.freeze(), FaultAction::Forward, last_due)?;
                }
            }
            let total = 4 + size as usize;
            if buf.len() < total {
                break;
            }
            let frame = buf.split_to(total).freeze();
            let action = match dir {
                Dir::ClientToBroker => shared.on_request_frame(&frame[4..], inflight),
                Dir::BrokerToClient => shared.on_response_frame(&frame, inflight),
            };
            if let Some(extra) = lock(&shared.fault).latency_sample() {
                let due = std::time::Instant::now() + extra;
                last_due = Some(last_due.map_or(due, |last| last.max(due)));
            }
            match action {
                // A request refused: the connection ends here (what was queued still goes).
                FaultAction::Close if dir == Dir::ClientToBroker => return Ok(()),
                // The writer ends the connection after the frames queued before this one.
                FaultAction::Close | FaultAction::ForwardThenClose | FaultAction::ResetAfter(_) => {
                    send(frame, action, last_due)?;
                    return Ok(());
                }
                _ => send(frame, action, last_due)?,
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

/// How a writer ([`deliver`]) ended.
#[derive(Debug)]
enum Ended {
    /// Its queue ended, or a fault closed the connection after some frame: close normally.
    Closed,
    /// Writing failed (the peer went away).
    Failed(io::Error),
    /// The connection is to be reset abruptly (RST both ways).
    Reset,
}

/// Waits while [`FaultPlan::blackhole_until`] is on (looking again every 50 ms, so a cleared
/// plan ends the wait at once).
async fn wait_out_blackhole(shared: &Shared) {
    loop {
        let now = std::time::Instant::now();
        let Some(until) = lock(&shared.fault).blackholed_at(now) else {
            return;
        };
        let nap = (until - now).min(std::time::Duration::from_millis(50));
        tokio::time::sleep(nap).await;
    }
}

/// Writes `bytes` to `wr` through the blackhole and the bandwidth limit of the plan: in chunks
/// paid for from the direction's token bucket when there is a limit, at once otherwise.
async fn write_through_faults(
    dir: Dir,
    wr: &mut OwnedWriteHalf,
    mut bytes: &[u8],
    shared: &Shared,
) -> io::Result<()> {
    while !bytes.is_empty() {
        wait_out_blackhole(shared).await;
        let rate = lock(&shared.fault).bandwidth;
        let n = match rate {
            // Chunks of about an eighth of a second's worth.
            Some(rate) => bytes.len().min((rate / 8).clamp(256, 16 * 1024) as usize),
            None => bytes.len(),
        };
        if let Some(rate) = rate {
            let wait = lock(&shared.buckets[dir.index()]).take(rate, n, std::time::Instant::now());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
        }
        wr.write_all(&bytes[..n]).await?;
        bytes = &bytes[n..];
    }
    Ok(())
}

/// Writes the frames `pump` queued for one side, in order, applying the plan's per-frame
/// verdicts, the hold (requests only), the latency, the blackhole and the bandwidth limit.
async fn deliver(
    dir: Dir,
    conn: u64,
    wr: &mut OwnedWriteHalf,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Outgoing>,
    shared: &Shared,
    held_any: &mut bool,
) -> Ended {
    while let Some(out) = rx.recv().await {
        if dir == Dir::ClientToBroker {
            // Held: read from a held connection before the hold ends.
            let until = lock(&shared.fault).held_until_for(conn, out.received);
            if let Some(until) = until {
                *held_any = true;
                let frame = &out.frame;
                if frame.len() >= 6 && i16::from_be_bytes([frame[4], frame[5]]) == PRODUCE {
                    shared.held_produce.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep_until(tokio::time::Instant::from_std(until)).await;
            }
        }
        if let Some(due) = out.due {
            tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
        }
        let len = match out.action {
            FaultAction::Close => return Ended::Closed,
            FaultAction::Delay(d) => {
                tokio::time::sleep(d).await;
                out.frame.len()
            }
            FaultAction::ResetAfter(n) => n.min(out.frame.len()),
            FaultAction::Forward | FaultAction::ForwardThenClose => out.frame.len(),
        };
        if let Err(e) = write_through_faults(dir, wr, &out.frame[..len], shared).await {
            return Ended::Failed(e);
        }
        match out.action {
            FaultAction::ForwardThenClose => {
                let _ = wr.flush().await;
                return Ended::Closed;
            }
            FaultAction::ResetAfter(_) => {
                shared.resets_mid_response.fetch_add(1, Ordering::Relaxed);
                // Let the part reach the client before the RST does.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                return Ended::Reset;
            }
            _ => {}
        }
    }
    Ended::Closed
}

/// Ends a socket abruptly: SO_LINGER 0 and no FIN (the write half is forgotten, not shut down),
/// so closing it sends an RST and discards whatever was not sent yet. The socket closes when
/// its read half is dropped too.
fn reset(wr: OwnedWriteHalf) {
    let _ = wr.as_ref().set_zero_linger();
    wr.forget();
}

/// Writes a connection's requests to the broker, holding them while the fault plan says so.
/// Outlives the client: what it has read is delivered even after the client went away, unless
/// the connection is reset (`drop_connections_now`, a reset in the middle of a response).
async fn deliver_requests(
    conn: u64,
    mut wr: OwnedWriteHalf,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Outgoing>,
    shared: Arc<Shared>,
    closed: oneshot::Sender<bool>,
    mut kill: watch::Receiver<u64>,
    mut reset_conn: watch::Receiver<bool>,
) {
    let mut held_any = false;
    // Biased: a reset wins over the end of the queue it causes.
    let ended = tokio::select! {
        biased;
        _ = kill.changed() => Ended::Reset,
        _ = reset_conn.wait_for(|r| *r) => Ended::Reset,
        e = deliver(Dir::ClientToBroker, conn, &mut wr, &mut rx, &shared, &mut held_any) => e,
    };
    let was_reset = matches!(ended, Ended::Reset);
    let _ = closed.send(was_reset);
    if was_reset {
        reset(wr);
        return;
    }
    if held_any {
        // Late requests are handled by the broker even though nobody reads the answers.
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
            _ = kill.changed() => reset(wr),
        }
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
    let (cr, mut cw) = client.into_split();
    let (ur, uw) = upstream.into_split();
    let inflight: InFlight = Mutex::new(HashMap::new());
    let (req_tx, req_rx) = tokio::sync::mpsc::unbounded_channel();
    let (resp_tx, mut resp_rx) = tokio::sync::mpsc::unbounded_channel();
    let (closed_tx, closed_rx) = oneshot::channel();
    let (reset_tx, reset_rx) = watch::channel(false);
    tokio::spawn(deliver_requests(
        conn,
        uw,
        req_rx,
        shared.clone(),
        closed_tx,
        kill.clone(),
        reset_rx,
    ));
    // Responses: read from the broker and written to the client; ends when the writer does
    // (after the reader ended and the queue ran out, or on a fault or an error).
    let responses = async {
        let read = pump(Dir::BrokerToClient, ur, resp_tx, &shared, &inflight);
        let mut held_any = false;
        let write = deliver(
            Dir::BrokerToClient,
            conn,
            &mut cw,
            &mut resp_rx,
            &shared,
            &mut held_any,
        );
        tokio::pin!(read, write);
        tokio::select! {
            ended = &mut write => ended,
            r = &mut read => {
                if let Err(e) = r {
                    shared.note(format!("connection from {peer}: broker->client: {e}"));
                }
                write.await
            }
        }
    };
    let ended = tokio::select! {
        biased;
        _ = kill.changed() => Ended::Reset,
        r = pump(Dir::ClientToBroker, cr, req_tx, &shared, &inflight) => {
            if let Err(e) = r {
                shared.note(format!("connection from {peer}: client->broker: {e}"));
            }
            Ended::Closed
        }
        ended = responses => ended,
        r = closed_rx => if r == Ok(true) { Ended::Reset } else { Ended::Closed },
    };
    match ended {
        Ended::Reset => {
            let _ = reset_tx.send(true);
            reset(cw);
        }
        Ended::Failed(e) => {
            shared.note(format!(
                "connection from {peer}: writing to the client: {e}"
            ));
        }
        // Dropping the write half closes the client socket; the request writer closes the
        // broker's after what it has queued.
        Ended::Closed => {}
    }
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
            resets_mid_response: AtomicU64::new(0),
            buckets: Default::default(),
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

    /// Responses cut in the middle by [`FaultPlan::reset_mid_response`] so far.
    pub fn responses_cut(&self) -> u64 {
        self.shared.resets_mid_response.load(Ordering::Relaxed)
    }

    /// Cuts every currently proxied connection abruptly, both sides: each socket is closed
    /// with an RST (SO_LINGER 0, no FIN), and what the proxy had read but not yet written
    /// (held requests too) is discarded, as a failed network path would. New connections still
    /// work.
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
