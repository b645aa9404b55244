//! Apache Kafka clusters for integration tests (the reference broker), through the library's
//! launcher ([`strait::local_kafka`]), optionally behind a [`ProduceCheckProxy`] per node.

use std::net::{SocketAddr, TcpListener};

pub use strait::local_kafka::{KafkaCluster, KafkaOptions};

use crate::support::proxy::{ProduceCheckProxy, ProxyConfig};

/// Starts one cluster per name at once with `start` (each takes a few seconds); in name order.
pub fn start_each<const N: usize>(
    names: [&str; N],
    start: impl Fn(&str) -> KafkaCluster + Sync,
) -> [KafkaCluster; N] {
    std::thread::scope(|s| {
        let started = names.map(|n| {
            let start = &start;
            s.spawn(move || start(n))
        });
        started.map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    })
}

/// Starts a one-node Kafka cluster; panics with its log if it does not come up.
pub fn start_kafka(name: &str) -> KafkaCluster {
    start_kafka_with(KafkaOptions::new(name))
}

/// Starts a Kafka cluster with explicit options; panics with the reason if it cannot.
pub fn start_kafka_with(opts: KafkaOptions) -> KafkaCluster {
    let proxied = opts.advertised_ports.iter().any(Option::is_some);
    let cluster = match KafkaCluster::start(opts) {
        Ok(c) => c,
        Err(e) => panic!("cannot start Apache Kafka: {e}"),
    };
    if !proxied {
        crate::support::data::warm_up_group_coordinator(&cluster.bootstrap());
    }
    cluster
}

/// A one-node Kafka cluster whose clients all go through a checking proxy: the node advertises
/// the proxy's port, so every client (rdkafka too) follows Metadata to the proxy.
pub fn start_kafka_behind_proxy(name: &str) -> (KafkaCluster, ProduceCheckProxy) {
    start_kafka_behind_proxy_with(KafkaOptions::new(name), ProxyConfig::default())
}

/// [`start_kafka_behind_proxy`] with explicit options (one node).
pub fn start_kafka_behind_proxy_with(
    mut opts: KafkaOptions,
    config: ProxyConfig,
) -> (KafkaCluster, ProduceCheckProxy) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy listener");
    let port = listener.local_addr().expect("proxy address").port();
    opts.nodes = 1;
    opts.advertised_ports = vec![Some(port)];
    let cluster = start_kafka_with(opts);
    let upstream: SocketAddr = format!("127.0.0.1:{}", cluster.nodes()[0].port())
        .parse()
        .expect("node address");
    let proxy = ProduceCheckProxy::from_listener(listener, upstream, config);
    crate::support::data::warm_up_group_coordinator(&cluster.bootstrap());
    (cluster, proxy)
}

/// A Kafka cluster of `nodes` nodes, each behind a checking proxy of its own (every node
/// advertises its proxy's port, so clients and replication between the nodes go through them).
pub fn start_kafka_nodes_behind_proxies(
    name: &str,
    nodes: usize,
) -> (KafkaCluster, Vec<ProduceCheckProxy>) {
    let listeners: Vec<TcpListener> = (0..nodes)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind proxy listener"))
        .collect();
    let mut opts = KafkaOptions::new(name);
    opts.nodes = nodes;
    opts.heap = "320m".to_string();
    opts.advertised_ports = listeners
        .iter()
        .map(|l| Some(l.local_addr().expect("proxy address").port()))
        .collect();
    let proxies_for = |cluster: &KafkaCluster, listeners: Vec<TcpListener>| {
        listeners
            .into_iter()
            .zip(cluster.nodes())
            .map(|(l, n)| {
                let upstream: SocketAddr = format!("127.0.0.1:{}", n.port())
                    .parse()
                    .expect("node address");
                ProduceCheckProxy::from_listener(l, upstream, ProxyConfig::default())
            })
            .collect::<Vec<_>>()
    };
    // The listeners are bound first (connections wait in their backlog until the proxies run),
    // so the nodes can advertise the proxies' ports from the start.
    let cluster = start_kafka_with(opts);
    let proxies = proxies_for(&cluster, listeners);
    crate::support::data::warm_up_group_coordinator(&cluster.bootstrap());
    (cluster, proxies)
}
