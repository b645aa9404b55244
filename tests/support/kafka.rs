//! Apache Kafka clusters for integration tests (the reference broker), through the library's
//! launcher ([`strait::local_kafka`]), optionally behind a [`ProduceCheckProxy`] per node.

use std::net::{SocketAddr, TcpListener};

pub use strait::local_kafka::{KafkaCluster, KafkaOptions};

use crate::support::proxy::{ProduceCheckProxy, ProxyConfig};

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
