//! A real broker for integration tests: Apache Kafka (the reference, a one-node KRaft cluster
//! from [`strait::local_kafka`]) by default, or a `nisshi` process where a test needs what only
//! the harness's nisshi setup offers (TLS and SCRAM users set up by nisshi's CLI, chosen storage,
//! a fixed listen port) or asks for it (`Broker::start_nisshi`, or `STRAIT_TEST_BROKER=nisshi`
//! for every test).
//!
//! `Broker::start("src")` starts a broker on a free 127.0.0.1 port, waits until a real
//! ApiVersions request/response succeeds, and kills the process on drop. Its output goes to a
//! log file ([`Broker::log_path`]) that is kept after the test.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::proxy::{ProduceCheckProxy, ProxyConfig};
use crate::support::wire::{api_versions_probe, api_versions_probe_tls, ApiVersionRange};

/// How `nisshi` is installed when missing.
pub const NISSHI_INSTALL_HINT: &str = "cargo install nisshi@0.8.1 --locked --ignore-rust-version \
     --no-default-features --features dynostore,libsql";

/// How long to wait for a broker to answer ApiVersions.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

static LOG_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Finds the nisshi binary: `$NISSHI_BIN`, then `PATH`, then `~/.cargo/bin/nisshi`.
/// Panics with installation instructions if it is nowhere.
pub fn nisshi_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("NISSHI_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return p;
        }
        panic!(
            "NISSHI_BIN={} does not point at a file. Install nisshi with:\n    {NISSHI_INSTALL_HINT}",
            p.display()
        );
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("nisshi");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(cargo_home) = home {
        let candidate = cargo_home.join("bin").join("nisshi");
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "the `nisshi` broker binary was not found on PATH nor in ~/.cargo/bin (or $NISSHI_BIN). \
         Integration tests need it; install it with:\n    {NISSHI_INSTALL_HINT}"
    );
}

/// Picks a free TCP port on 127.0.0.1 (bind :0, read, drop).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0 to pick a free port");
    l.local_addr().expect("local_addr of probe listener").port()
}

fn sanitize(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() {
        "cluster".to_owned()
    } else {
        s
    }
}

/// Last `max_bytes` of a file, lossily decoded.
pub fn file_tail(path: &Path, max_bytes: usize) -> String {
    let mut buf = Vec::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_end(&mut buf);
    }
    let start = buf.len().saturating_sub(max_bytes);
    String::from_utf8_lossy(&buf[start..]).into_owned()
}

/// Options for [`Broker::start_with`].
#[derive(Debug, Clone)]
pub struct BrokerOptions {
    pub cluster_id: String,
    /// Port to listen on; `None` picks a free one (and retries with another if it was taken).
    pub listen_port: Option<u16>,
    /// Port advertised in Metadata; `None` means the listen port.
    pub advertised_port: Option<u16>,
    /// Extra command-line arguments appended after `broker ...`.
    pub extra_args: Vec<String>,
    /// Extra environment variables for the broker process (e.g. RUST_LOG).
    pub env: Vec<(String, String)>,
    pub ready_timeout: Duration,
    /// TLS listener (`--cert`/`--key`); the readiness probe trusts `ca`.
    pub tls: Option<BrokerTls>,
    /// `--authentication`: clients must authenticate (SCRAM users of the storage).
    pub authentication: bool,
    /// Storage engine URL; `None` = `memory://<cluster_id>/`.
    pub storage: Option<String>,
    /// Working directory of the broker (relative `sqlite://` paths resolve here); `None` = the
    /// temp directory.
    pub work_dir: Option<PathBuf>,
    /// Run nisshi even where Apache Kafka could serve.
    pub nisshi: bool,
}

/// Certificate files of a TLS broker.
#[derive(Debug, Clone)]
pub struct BrokerTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// CA that signed `cert` (for the readiness probe).
    pub ca: PathBuf,
}

impl BrokerOptions {
    /// Whether these options need nisshi: TLS, SCRAM users, a chosen storage or listen port,
    /// nisshi arguments, or `STRAIT_TEST_BROKER=nisshi`.
    pub fn wants_nisshi(&self) -> bool {
        self.nisshi
            || self.tls.is_some()
            || self.authentication
            || self.storage.is_some()
            || self.listen_port.is_some()
            || !self.extra_args.is_empty()
            || std::env::var("STRAIT_TEST_BROKER").is_ok_and(|v| v == "nisshi")
    }

    pub fn new(cluster_id: &str) -> Self {
        BrokerOptions {
            cluster_id: cluster_id.to_owned(),
            listen_port: None,
            advertised_port: None,
            extra_args: Vec::new(),
            env: Vec::new(),
            ready_timeout: READY_TIMEOUT,
            tls: None,
            authentication: false,
            storage: None,
            work_dir: None,
            nisshi: false,
        }
    }
}

/// A SCRAM user to create before a broker starts with `--authentication`.
#[derive(Debug, Clone)]
pub struct ScramUser {
    /// `scram256` or `scram512` (nisshi's `--mechanism`).
    pub mechanism: &'static str,
    pub name: String,
    pub password: String,
}

/// Options of [`Broker::start_secure`].
#[derive(Debug, Clone, Default)]
pub struct SecureOptions {
    /// TLS listener.
    pub tls: Option<BrokerTls>,
    /// Users to create; when non-empty the broker requires authentication.
    pub users: Vec<ScramUser>,
}

/// A running (or stopped) nisshi broker. Killed on drop.
pub struct Broker {
    opts: BrokerOptions,
    binary: PathBuf,
    listen_port: u16,
    advertised_port: u16,
    log_path: PathBuf,
    child: Option<Child>,
    /// The Apache Kafka cluster, when this broker is one.
    kafka: Option<strait::local_kafka::KafkaCluster>,
    api_versions: Vec<ApiVersionRange>,
    starts: u32,
}

impl Broker {
    /// Starts a broker on a free port with in-memory storage `memory://<cluster_id>/`.
    pub fn start(cluster_id: &str) -> Broker {
        Broker::start_with(BrokerOptions::new(cluster_id))
    }

    /// Starts a broker with explicit options.
    pub fn start_with(opts: BrokerOptions) -> Broker {
        if !opts.wants_nisshi() {
            return Broker::start_kafka(opts);
        }
        let binary = nisshi_binary();
        let n = LOG_COUNTER.fetch_add(1, Ordering::Relaxed);
        let log_path = std::env::temp_dir().join(format!(
            "strait-nisshi-{}-{}-{n}.log",
            sanitize(&opts.cluster_id),
            std::process::id()
        ));
        let pick_port = opts.listen_port.is_none();
        let listen_port = opts.listen_port.unwrap_or_else(free_port);
        let mut broker = Broker {
            advertised_port: opts.advertised_port.unwrap_or(listen_port),
            listen_port,
            opts,
            binary,
            log_path,
            child: None,
            kafka: None,
            api_versions: Vec::new(),
            starts: 0,
        };
        // A freshly picked port can be stolen between probe and bind: retry with a new one.
        let attempts = if pick_port { 3 } else { 1 };
        let mut last_err = String::new();
        for attempt in 0..attempts {
            if attempt > 0 {
                broker.listen_port = free_port();
                if broker.opts.advertised_port.is_none() {
                    broker.advertised_port = broker.listen_port;
                }
            }
            match broker.try_start() {
                Ok(()) => return broker,
                Err(e) => last_err = e,
            }
        }
        panic!("{last_err}");
    }

    /// Starts a nisshi broker whatever the default.
    pub fn start_nisshi(cluster_id: &str) -> Broker {
        let mut opts = BrokerOptions::new(cluster_id);
        opts.nisshi = true;
        Broker::start_with(opts)
    }

    /// An Apache Kafka node advertising `opts.advertised_port` (a proxy's) if set.
    fn start_kafka(opts: BrokerOptions) -> Broker {
        let mut k = strait::local_kafka::KafkaOptions::new(&opts.cluster_id);
        k.advertised_ports = vec![opts.advertised_port];
        let cluster = strait::local_kafka::KafkaCluster::start(k)
            .unwrap_or_else(|e| panic!("cannot start Apache Kafka: {e}"));
        let node = &cluster.nodes()[0];
        let (listen_port, advertised_port) = (node.port(), node.advertised_port());
        let log_path = node.log_path().to_path_buf();
        let addr = SocketAddr::from(([127, 0, 0, 1], listen_port));
        let api_versions = api_versions_probe(addr, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("Apache Kafka on {addr} does not answer ApiVersions: {e}"));
        if opts.advertised_port.is_none() {
            crate::support::data::warm_up_group_coordinator(&format!("127.0.0.1:{listen_port}"));
        }
        Broker {
            opts,
            binary: PathBuf::from("java"),
            listen_port,
            advertised_port,
            log_path,
            child: None,
            kafka: Some(cluster),
            api_versions,
            starts: 1,
        }
    }

    /// Whether this broker is Apache Kafka (else nisshi).
    pub fn is_kafka(&self) -> bool {
        self.kafka.is_some()
    }

    /// Starts a TLS and/or SASL (SCRAM) broker. With users, they are created first through a
    /// plain broker on the same `sqlite://` storage (nisshi keeps SCRAM credentials there),
    /// which is then stopped; the returned broker runs with `--authentication` on that storage.
    pub fn start_secure(cluster_id: &str, secure: SecureOptions) -> Broker {
        let work_dir = std::env::temp_dir().join(format!(
            "strait-secure-{}-{}-{}",
            sanitize(cluster_id),
            std::process::id(),
            LOG_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&work_dir).expect("create broker work dir");
        let mut opts = BrokerOptions::new(cluster_id);
        opts.work_dir = Some(work_dir);
        opts.storage = Some("sqlite://broker.db".to_string());
        if !secure.users.is_empty() {
            let mut setup = Broker::start_with(opts.clone());
            for u in &secure.users {
                setup.create_scram_user(u);
            }
            setup.stop();
            opts.authentication = true;
        }
        opts.tls = secure.tls;
        Broker::start_with(opts)
    }

    /// Creates a SCRAM user with `nisshi user create` through this (unauthenticated,
    /// plaintext) broker.
    pub fn create_scram_user(&self, user: &ScramUser) {
        let out = Command::new(&self.binary)
            .arg("user")
            .arg("create")
            .arg("--broker")
            .arg(format!("tcp://127.0.0.1:{}", self.listen_port))
            .arg("--mechanism")
            .arg(user.mechanism)
            .arg(&user.name)
            .arg(&user.password)
            .current_dir(
                self.opts
                    .work_dir
                    .clone()
                    .unwrap_or_else(std::env::temp_dir),
            )
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run nisshi user create");
        assert!(
            out.status.success(),
            "nisshi user create {} failed: {}{}",
            user.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts a broker behind a [`ProduceCheckProxy`]: the broker listens on P1 but advertises
    /// the proxy's port P2, so every client (including rdkafka, which follows Metadata) talks
    /// through the proxy. `Broker::bootstrap()` returns the proxy address.
    pub fn start_behind_proxy(cluster_id: &str) -> (Broker, ProduceCheckProxy) {
        Broker::start_behind_proxy_with(BrokerOptions::new(cluster_id), ProxyConfig::default())
    }

    /// [`Broker::start_behind_proxy`] with explicit broker and proxy options
    /// (`opts.advertised_port` is overwritten with the proxy port).
    pub fn start_behind_proxy_with(
        mut opts: BrokerOptions,
        config: ProxyConfig,
    ) -> (Broker, ProduceCheckProxy) {
        let proxy_listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy listener");
        let proxy_port = proxy_listener
            .local_addr()
            .expect("proxy listener local_addr")
            .port();
        opts.advertised_port = Some(proxy_port);
        let broker = Broker::start_with(opts);
        let proxy = ProduceCheckProxy::from_listener(proxy_listener, broker.listen_addr(), config);
        if broker.is_kafka() {
            crate::support::data::warm_up_group_coordinator(&broker.bootstrap());
        }
        (broker, proxy)
    }

    fn spawn(&mut self) -> Result<Child, String> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(|e| format!("open broker log {}: {e}", self.log_path.display()))?;
        let log_err = log
            .try_clone()
            .map_err(|e| format!("clone broker log handle: {e}"))?;
        let id = &self.opts.cluster_id;
        let storage = self
            .opts
            .storage
            .clone()
            .unwrap_or_else(|| format!("memory://{}/", sanitize(id)));
        let mut cmd = Command::new(&self.binary);
        cmd.arg("broker")
            .arg("--cluster-id")
            .arg(id)
            .arg("--listener-url")
            .arg(format!("tcp://127.0.0.1:{}", self.listen_port))
            .arg("--advertised-listener-url")
            .arg(format!("tcp://127.0.0.1:{}", self.advertised_port))
            .arg("--storage-engine")
            .arg(storage);
        if let Some(tls) = &self.opts.tls {
            cmd.arg("--cert").arg(&tls.cert).arg("--key").arg(&tls.key);
        }
        if self.opts.authentication {
            cmd.arg("--authentication");
        }
        cmd.args(&self.opts.extra_args)
            // Keep the developer's environment from reconfiguring the test broker.
            .env_remove("SCHEMA_REGISTRY")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("DATA_LAKE")
            .env("NO_COLOR", "1")
            // nisshi loads `.env` from its working directory (and parents): run it somewhere
            // neutral so a developer's `.env` cannot reconfigure the test broker.
            .current_dir(
                self.opts
                    .work_dir
                    .clone()
                    .unwrap_or_else(std::env::temp_dir),
            )
            .envs(self.opts.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        cmd.spawn()
            .map_err(|e| format!("spawn {}: {e}", self.binary.display()))
    }

    fn try_start(&mut self) -> Result<(), String> {
        self.starts += 1;
        let log_start = std::fs::metadata(&self.log_path)
            .map(|m| m.len())
            .unwrap_or(0);
        let mut child = self.spawn()?;
        let deadline = Instant::now() + self.opts.ready_timeout;
        let addr = self.listen_addr();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "nisshi broker (cluster {}) exited with {status} before becoming ready on {addr}.\n\
                     log {}:\n{}",
                    self.opts.cluster_id,
                    self.log_path.display(),
                    self.log_since(log_start)
                ));
            }
            let probe = match &self.opts.tls {
                Some(tls) => api_versions_probe_tls(addr, Duration::from_secs(2), &tls.ca),
                None => api_versions_probe(addr, Duration::from_secs(2)),
            };
            let last = match probe {
                Ok(v) => {
                    self.api_versions = v;
                    self.child = Some(child);
                    return Ok(());
                }
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "nisshi broker (cluster {}) did not answer ApiVersions on {addr} within {:?} \
                     (last error: {last}).\nlog {}:\n{}",
                    self.opts.cluster_id,
                    self.opts.ready_timeout,
                    self.log_path.display(),
                    self.log_since(log_start)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_since(&self, offset: u64) -> String {
        let all = file_tail(&self.log_path, usize::MAX);
        let start = (offset as usize).min(all.len());
        let part = all.get(start..).unwrap_or(&all);
        let tail_start = part.len().saturating_sub(8 * 1024);
        part.get(tail_start..).unwrap_or(part).to_owned()
    }

    /// "127.0.0.1:PORT" clients should bootstrap from: the advertised address (the proxy's,
    /// for a broker started behind a proxy).
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.advertised_port)
    }

    /// "127.0.0.1:PORT" of the broker's own listener (bypasses any proxy for the bootstrap
    /// connection; Metadata still advertises [`Broker::bootstrap`]).
    pub fn direct_bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.listen_port)
    }

    pub fn listen_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.listen_port))
    }

    pub fn port(&self) -> u16 {
        self.listen_port
    }

    pub fn advertised_port(&self) -> u16 {
        self.advertised_port
    }

    pub fn cluster_id(&self) -> &str {
        &self.opts.cluster_id
    }

    /// The options the broker was started with.
    pub fn options(&self) -> &BrokerOptions {
        &self.opts
    }

    /// The broker's combined stdout/stderr log file (kept after the test).
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Last `max_bytes` of the broker log.
    pub fn log_tail(&self, max_bytes: usize) -> String {
        file_tail(&self.log_path, max_bytes)
    }

    /// API version ranges from the readiness ApiVersions exchange (latest start).
    pub fn api_versions(&self) -> &[ApiVersionRange] {
        &self.api_versions
    }

    /// Advertised range for one API key.
    pub fn api_version(&self, api_key: i16) -> Option<ApiVersionRange> {
        self.api_versions
            .iter()
            .copied()
            .find(|r| r.api_key == api_key)
    }

    /// Whether the process is alive.
    pub fn is_running(&mut self) -> bool {
        if let Some(k) = self.kafka.as_mut() {
            return k.node_mut(0).is_some_and(|n| n.is_running());
        }
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kills the broker process (SIGKILL) and waits for it. In-memory data is lost.
    /// Idempotent.
    pub fn stop(&mut self) {
        if let Some(k) = self.kafka.as_mut() {
            k.kill_node(0);
            return;
        }
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the broker again on the same ports (same advertised address) after
    /// [`Broker::stop`]. Storage is in memory, so it comes back empty. Panics if it does not
    /// become ready.
    pub fn start_again(&mut self) {
        if let Some(k) = self.kafka.as_mut() {
            if let Err(e) = k.start_node(0) {
                panic!("{e}");
            }
            return;
        }
        assert!(self.child.is_none(), "start_again: broker is still running");
        if let Err(e) = self.try_start() {
            panic!("{e}");
        }
    }

    /// `stop()` then `start_again()`.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// How many times the process was started (including retries on port clashes).
    pub fn start_count(&self) -> u32 {
        self.starts
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}
