//! A real broker for integration tests: a one-node Apache Kafka cluster (KRaft, from
//! [`strait::local_kafka`]) with one PLAINTEXT listener, optionally advertising a proxy's port.
//! Secured listeners (TLS, SASL) are set up with [`crate::support::kafka::start_kafka_with`] and
//! [`strait::local_kafka::KafkaSecurity`].
//!
//! `Broker::start("src")` starts a node on a free 127.0.0.1 port, waits until a real ApiVersions
//! request/response succeeds, and kills the process on drop. Its output goes to a log file
//! ([`Broker::log_path`]) that is kept after the test.

use std::fs::File;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use strait::local_kafka::{KafkaCluster, KafkaOptions};

use crate::support::proxy::{ProduceCheckProxy, ProxyConfig};
use crate::support::wire::{api_versions_probe, ApiVersionRange};

/// Picks a free TCP port on 127.0.0.1 (bind :0, read, drop).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0 to pick a free port");
    l.local_addr().expect("local_addr of probe listener").port()
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
    /// A label for the cluster's folder and log (Kafka's cluster id itself is random).
    pub name: String,
    /// Port to listen on; `None` picks a free one (and starts over on another if it was taken
    /// meanwhile). A given port that is taken fails the start with the node's log.
    pub listen_port: Option<u16>,
    /// Port advertised in Metadata; `None` means the listen port.
    pub advertised_port: Option<u16>,
}

impl BrokerOptions {
    pub fn new(name: &str) -> Self {
        BrokerOptions {
            name: name.to_owned(),
            listen_port: None,
            advertised_port: None,
        }
    }
}

/// A running (or stopped) one-node Apache Kafka cluster. Killed on drop.
pub struct Broker {
    opts: BrokerOptions,
    kafka: KafkaCluster,
    listen_port: u16,
    advertised_port: u16,
    api_versions: Vec<ApiVersionRange>,
    starts: u32,
}

impl Broker {
    /// Starts a broker on a free port.
    pub fn start(name: &str) -> Broker {
        Broker::start_with(BrokerOptions::new(name))
    }

    /// Starts a broker with explicit options; panics with the reason (the node's log included)
    /// if it does not come up.
    pub fn start_with(opts: BrokerOptions) -> Broker {
        let mut k = KafkaOptions::new(&opts.name);
        k.ports = vec![opts.listen_port];
        k.advertised_ports = vec![opts.advertised_port];
        let kafka =
            KafkaCluster::start(k).unwrap_or_else(|e| panic!("cannot start Apache Kafka: {e}"));
        let node = &kafka.nodes()[0];
        let (listen_port, advertised_port) = (node.port(), node.advertised_port());
        let mut broker = Broker {
            opts,
            kafka,
            listen_port,
            advertised_port,
            api_versions: Vec::new(),
            starts: 1,
        };
        broker.probe();
        if broker.opts.advertised_port.is_none() {
            crate::support::data::warm_up_group_coordinator(&broker.bootstrap());
        }
        broker
    }

    /// Asks the node's own listener for its API versions (a real ApiVersions exchange).
    fn probe(&mut self) {
        let addr = self.listen_addr();
        self.api_versions = api_versions_probe(addr, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("Apache Kafka on {addr} does not answer ApiVersions: {e}"));
    }

    /// Starts a broker behind a [`ProduceCheckProxy`]: the broker listens on P1 but advertises
    /// the proxy's port P2, so every client (including rdkafka, which follows Metadata) talks
    /// through the proxy. `Broker::bootstrap()` returns the proxy address.
    pub fn start_behind_proxy(name: &str) -> (Broker, ProduceCheckProxy) {
        Broker::start_behind_proxy_with(BrokerOptions::new(name), ProxyConfig::default())
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
        crate::support::data::warm_up_group_coordinator(&broker.bootstrap());
        (broker, proxy)
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

    /// The cluster id Kafka's storage was formatted with (random): what Metadata answers.
    pub fn cluster_id(&self) -> &str {
        self.kafka.cluster_id()
    }

    /// The options the broker was started with.
    pub fn options(&self) -> &BrokerOptions {
        &self.opts
    }

    /// The node's log file (kept after the test).
    pub fn log_path(&self) -> &Path {
        self.kafka.nodes()[0].log_path()
    }

    /// Last `max_bytes` of the broker log.
    pub fn log_tail(&self, max_bytes: usize) -> String {
        file_tail(self.log_path(), max_bytes)
    }

    /// API version ranges from the latest ApiVersions exchange (at each start).
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

    /// Whether the node's process is alive.
    pub fn is_running(&mut self) -> bool {
        self.kafka.node_mut(0).is_some_and(|n| n.is_running())
    }

    /// Kills the node (SIGKILL), as a crash would, and waits for it. Idempotent.
    pub fn stop(&mut self) {
        self.kafka.kill_node(0);
    }

    /// Starts the node again on the same ports and storage after [`Broker::stop`] (what was
    /// written and flushed is still there), and asks it for its API versions again. Panics if
    /// it does not come up.
    pub fn start_again(&mut self) {
        if let Err(e) = self.kafka.start_node(0) {
            panic!("{e}");
        }
        self.starts += 1;
        self.probe();
    }

    /// `stop()` then `start_again()`.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// How many times the node was started.
    pub fn start_count(&self) -> u32 {
        self.starts
    }
}
