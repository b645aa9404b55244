//! Local Apache Kafka clusters started as child processes, for `strait demo`, `strait bench`
//! and the tests: KRaft mode, each node a combined broker and controller, storage formatted
//! with a fresh cluster id in a folder of its own, free loopback ports, a small heap. Stopped
//! (and killed if need be) when dropped.
//!
//! Kafka itself comes from `scripts/setup.sh` (a pinned release fetched with Maven into
//! `~/.cache/strait/kafka-<version>/libs`), or from an existing distribution named by
//! `KAFKA_HOME` (its `libs` folder). Java is `$JAVA_HOME/bin/java` or `java` on PATH.

use std::fs::{self, File};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The Apache Kafka release `scripts/setup.sh` installs.
pub const KAFKA_VERSION: &str = "4.1.1";

/// How long a node may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(90);

static CLUSTERS: AtomicU64 = AtomicU64::new(0);

/// Where Kafka's jars are: `$KAFKA_HOME/libs`, else the folder `scripts/setup.sh` fills.
pub fn kafka_libs() -> Result<PathBuf> {
    let mut tried = Vec::new();
    if let Some(home) = std::env::var_os("KAFKA_HOME") {
        let libs = PathBuf::from(home).join("libs");
        if has_kafka_jar(&libs) {
            return Ok(libs);
        }
        tried.push(libs);
    }
    if let Some(home) = std::env::var_os("HOME") {
        let libs = PathBuf::from(home)
            .join(".cache/strait")
            .join(format!("kafka-{KAFKA_VERSION}"))
            .join("libs");
        if has_kafka_jar(&libs) {
            return Ok(libs);
        }
        tried.push(libs);
    }
    Err(Error::invalid(format!(
        "Apache Kafka not found (looked in {}): run `bash scripts/setup.sh`, or set KAFKA_HOME to a Kafka distribution",
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

fn has_kafka_jar(libs: &Path) -> bool {
    fs::read_dir(libs).is_ok_and(|d| {
        d.flatten().any(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            // Kafka 4 (KRaft only, log4j 2): what the launcher configures.
            n.starts_with("kafka_2.13-4.") && n.ends_with(".jar")
        })
    })
}

/// The java binary: `$JAVA_HOME/bin/java`, else `java` on PATH.
pub(crate) fn java() -> PathBuf {
    std::env::var_os("JAVA_HOME")
        .map(|h| PathBuf::from(h).join("bin/java"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("java"))
}

/// A fresh, empty folder `strait-{kind}-{name}-{pid}-{n}` under `parent` (the system's temp
/// folder by default) for one local process's files; a leftover of that name is removed.
pub(crate) fn fresh_dir(parent: Option<&Path>, kind: &str, name: &str, n: u64) -> Result<PathBuf> {
    let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let dir = parent.join(format!(
        "strait-{kind}-{}-{}-{n}",
        sanitize(name),
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(Error::from)?;
    Ok(dir)
}

/// `java` with a `heap` limit, headless, logging as `log4j` says, and Apache Kafka's jars in
/// `libs` on the class path: the caller adds its own options and the main class.
pub(crate) fn jvm(heap: &str, log4j: &Path, libs: &Path) -> Command {
    jvm_with(heap, log4j, libs, &[])
}

/// [`jvm`] with `extra` class path entries after Kafka's jars.
fn jvm_with(heap: &str, log4j: &Path, libs: &Path, extra: &[PathBuf]) -> Command {
    let mut cp = format!("{}/*", libs.display());
    for e in extra {
        cp.push(':');
        cp.push_str(&e.display().to_string());
    }
    let mut c = Command::new(java());
    c.arg(format!("-Xmx{heap}"))
        .arg("-Djava.awt.headless=true")
        .arg(format!("-Dlog4j2.configurationFile={}", log4j.display()))
        .arg("-cp")
        .arg(cp);
    c
}

/// A free TCP port on 127.0.0.1, below Linux's ephemeral range (so outgoing connections do
/// not take it between now and the moment a broker binds it). A port is handed out once per
/// process: two listeners of one node asked for ports before either is bound never get the
/// same one (Kafka refuses such a config).
pub fn free_port() -> Result<u16> {
    use ring::rand::SecureRandom;
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let rng = ring::rand::SystemRandom::new();
    for _ in 0..64 {
        let mut b = [0u8; 2];
        if rng.fill(&mut b).is_err() {
            break;
        }
        let port = 20_000 + u16::from_le_bytes(b) % 12_000;
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.push(port);
            return Ok(port);
        }
    }
    let l = TcpListener::bind("127.0.0.1:0").map_err(Error::from)?;
    Ok(l.local_addr().map_err(Error::from)?.port())
}

/// Start attempts of a cluster whose node could not bind its ports.
const START_ATTEMPTS: usize = 3;

/// What to start.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    /// A label for folders and logs.
    pub name: String,
    /// Nodes (each broker and controller); 3 where leadership has to move.
    pub nodes: usize,
    /// Per node, the client port to listen on; a free one where `None` or missing. A start that
    /// cannot bind a port given here fails with the node's log (no new attempt on other ports).
    pub ports: Vec<Option<u16>>,
    /// Per node, the port advertised to clients instead of its own (a proxy in front of it).
    pub advertised_ports: Vec<Option<u16>>,
    /// Extra `server.properties` lines.
    pub properties: Vec<(String, String)>,
    /// Maximum heap, as java's `-Xmx` takes it.
    pub heap: String,
    /// Optimise for start-up (tests) rather than throughput (bench).
    pub quick_start: bool,
    /// Parent folder of the cluster's folder (the system temp folder when `None`).
    pub dir: Option<PathBuf>,
    /// Secured listeners besides PLAINTEXT (one node only).
    pub security: Option<KafkaSecurity>,
    /// How many of the nodes (the first ones) are also controllers; the others are brokers
    /// only, so a test can stop brokers without losing the controller quorum. 0: all.
    pub controllers: usize,
    /// Extra JVM arguments (system properties) of every node.
    pub jvm_args: Vec<String>,
    /// Extra class path entries (folders or jars) of every node.
    pub classpath: Vec<PathBuf>,
}

/// Secured listeners of a one-node cluster: `SSL` (client certificates required),
/// `SASL_PLAINTEXT` and `SASL_SSL`, with SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
#[derive(Debug, Clone, Default)]
pub struct KafkaSecurity {
    /// PEM certificate chain of the node.
    pub server_cert: PathBuf,
    /// Its PEM (PKCS#8) private key.
    pub server_key: PathBuf,
    /// PEM CA certificate that client certificates must chain to.
    pub client_ca: PathBuf,
    /// SCRAM users created when the storage is formatted: (mechanism, e.g. `SCRAM-SHA-512`,
    /// name, password).
    pub scram_users: Vec<(String, String, String)>,
    /// PLAIN users: (name, password).
    pub plain_users: Vec<(String, String)>,
    /// `connections.max.reauth.ms` of the SASL listeners (KIP-368), if set.
    pub reauth_ms: Option<u64>,
    /// OAUTHBEARER on the SASL listeners, with tokens validated against a JWKS endpoint.
    pub oauth: Option<KafkaOAuth>,
    /// A `KERBEROS` listener (SASL_PLAINTEXT, GSSAPI only), if set.
    pub kerberos: Option<KafkaKerberos>,
}

/// OAUTHBEARER validation of the SASL listeners (KIP-768): Kafka's
/// `OAuthBearerValidatorCallbackHandler` (or a class given here) checks each token's RS256
/// signature against the keys at `jwks_url`, its audience and its issuer.
#[derive(Debug, Clone, Default)]
pub struct KafkaOAuth {
    /// `sasl.oauthbearer.jwks.endpoint.url` (also the only URL the broker may open).
    pub jwks_url: String,
    /// `sasl.oauthbearer.expected.audience`.
    pub audience: String,
    /// `sasl.oauthbearer.expected.issuer`.
    pub issuer: String,
    /// `sasl.server.callback.handler.class` of OAUTHBEARER, if not Kafka's validator; its class
    /// folder goes in [`KafkaOptions::classpath`].
    pub validator_class: Option<String>,
}

/// The `KERBEROS` listener of [`KafkaSecurity`]: `SASL_PLAINTEXT` with SASL/GSSAPI only,
/// advertised as `localhost` (the host of the broker's service principal
/// `<service>/localhost@REALM`), service name `kafka`.
#[derive(Debug, Clone)]
pub struct KafkaKerberos {
    /// The krb5.conf of the realm (the JVM's `java.security.krb5.conf`).
    pub krb5_conf: PathBuf,
    /// Keytab holding the broker's service principal.
    pub keytab: PathBuf,
    /// The broker's principal, e.g. `kafka/localhost@EXAMPLE.TEST`.
    pub principal: String,
}

/// The name of the [`KafkaKerberos`] listener.
pub const KERBEROS_LISTENER: &str = "KERBEROS";

/// The listeners [`KafkaSecurity`] adds.
pub const SECURE_LISTENERS: [&str; 3] = ["SSL", "SASL_PLAINTEXT", "SASL_SSL"];

impl KafkaOptions {
    /// One node, settings for tests on a small machine.
    pub fn new(name: &str) -> KafkaOptions {
        KafkaOptions {
            name: name.to_string(),
            nodes: 1,
            ports: Vec::new(),
            advertised_ports: Vec::new(),
            properties: Vec::new(),
            heap: "384m".to_string(),
            quick_start: true,
            dir: None,
            security: None,
            controllers: 0,
            jvm_args: Vec::new(),
            classpath: Vec::new(),
        }
    }
}

/// One node of a [`KafkaCluster`].
#[derive(Debug)]
pub struct KafkaNode {
    id: usize,
    port: u16,
    controller_port: u16,
    advertised_port: u16,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// "started" lines in its log before its latest start.
    started_before: usize,
    /// Ports of the secured listeners, by name.
    secure_ports: Vec<(&'static str, u16)>,
}

impl KafkaNode {
    /// Node id.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The port the node listens on for clients.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port clients are told to use (a proxy's, if one is in front).
    pub fn advertised_port(&self) -> u16 {
        self.advertised_port
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Whether its process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }
}

/// A local Apache Kafka cluster; every node is killed when this is dropped.
#[derive(Debug)]
pub struct KafkaCluster {
    name: String,
    /// The id its storage was formatted with (random, as Kafka's own tools make them).
    cluster_id: String,
    dir: PathBuf,
    libs: PathBuf,
    opts: KafkaOptions,
    nodes: Vec<KafkaNode>,
}

impl KafkaCluster {
    /// Formats and starts a cluster, and waits until every node serves clients. A node that
    /// could not bind a port it picked (taken meanwhile) makes it start over on other ports.
    pub fn start(opts: KafkaOptions) -> Result<KafkaCluster> {
        let mut attempt = 1;
        let ports_given = opts.ports.iter().any(Option::is_some);
        loop {
            match KafkaCluster::start_once(opts.clone()) {
                Err(e)
                    if attempt < START_ATTEMPTS
                        && !ports_given
                        && e.to_string().contains("Address already in use") =>
                {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn start_once(opts: KafkaOptions) -> Result<KafkaCluster> {
        let libs = kafka_libs()?;
        let n = CLUSTERS.fetch_add(1, Ordering::Relaxed);
        let dir = fresh_dir(opts.dir.as_deref(), "kafka", &opts.name, n)?;
        let mut nodes = Vec::new();
        for i in 0..opts.nodes.max(1) {
            let port = match opts.ports.get(i).copied().flatten() {
                Some(port) => port,
                None => free_port()?,
            };
            nodes.push(KafkaNode {
                id: i + 1,
                port,
                controller_port: free_port()?,
                advertised_port: opts
                    .advertised_ports
                    .get(i)
                    .copied()
                    .flatten()
                    .unwrap_or(port),
                config: dir.join(format!("node{}.properties", i + 1)),
                log: dir.join(format!("node{}.log", i + 1)),
                child: None,
                started_before: 0,
                secure_ports: Vec::new(),
            });
        }
        if opts.security.is_some() {
            if opts.nodes > 1 {
                return Err(Error::invalid(
                    "secured listeners are for one-node clusters",
                ));
            }
            for listener in SECURE_LISTENERS {
                let port = free_port()?;
                nodes[0].secure_ports.push((listener, port));
            }
            if opts.security.as_ref().is_some_and(|s| s.kerberos.is_some()) {
                let port = free_port()?;
                nodes[0].secure_ports.push((KERBEROS_LISTENER, port));
            }
        }
        let mut cluster = KafkaCluster {
            name: opts.name.clone(),
            cluster_id: random_cluster_id(),
            dir,
            libs,
            opts,
            nodes,
        };
        cluster.write_configs()?;
        cluster.format()?;
        for i in 0..cluster.nodes.len() {
            cluster.spawn(i)?;
        }
        for i in 0..cluster.nodes.len() {
            cluster.wait_ready(i)?;
        }
        Ok(cluster)
    }

    /// "host:port,..." of every node, as advertised.
    pub fn bootstrap(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.advertised_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// "host:port,..." of every node's own listener (bypassing any proxy for bootstrapping).
    pub fn direct_bootstrap(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// "host:port" of a secured listener (`SSL`, `SASL_PLAINTEXT`, `SASL_SSL`, `KERBEROS`) of
    /// node 1, as advertised (`localhost` for `KERBEROS`).
    pub fn listener_bootstrap(&self, listener: &str) -> Option<String> {
        self.nodes
            .first()?
            .secure_ports
            .iter()
            .find(|(name, _)| *name == listener)
            .map(|(name, port)| format!("{}:{port}", advertised_host(name)))
    }

    /// The cluster's label.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster id its storage was formatted with: what Metadata and DescribeCluster answer.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// Its folder (configs, data, logs).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its nodes.
    pub fn nodes(&self) -> &[KafkaNode] {
        &self.nodes
    }

    /// Node `i` (0-based).
    pub fn node_mut(&mut self, i: usize) -> Option<&mut KafkaNode> {
        self.nodes.get_mut(i)
    }

    /// The process ids of the running nodes.
    pub fn pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter_map(|n| n.child.as_ref().map(Child::id))
            .collect()
    }

    /// Kills node `i` at once (SIGKILL), as a crash would.
    pub fn kill_node(&mut self, i: usize) {
        if let Some(mut c) = self.nodes.get_mut(i).and_then(|n| n.child.take()) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops node `i` cleanly (SIGTERM, then SIGKILL after 20 s).
    pub fn stop_node(&mut self, i: usize) {
        if let Some(mut c) = self.nodes.get_mut(i).and_then(|n| n.child.take()) {
            terminate(&mut c, Duration::from_secs(20));
        }
    }

    /// Starts node `i` again on the same ports and storage, and waits until it serves.
    pub fn start_node(&mut self, i: usize) -> Result<()> {
        self.spawn(i)?;
        self.wait_ready(i)
    }

    /// The last `max` bytes of every node's log.
    pub fn log_tail(&self, max: usize) -> String {
        self.nodes
            .iter()
            .map(|n| {
                format!(
                    "--- {} node {} ---\n{}",
                    self.name,
                    n.id,
                    file_tail(&n.log, max)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn write_configs(&self) -> Result<()> {
        let controllers = match self.opts.controllers {
            0 => self.nodes.len(),
            n => n.min(self.nodes.len()),
        };
        let voters = self
            .nodes
            .iter()
            .take(controllers)
            .map(|n| format!("{}@127.0.0.1:{}", n.id, n.controller_port))
            .collect::<Vec<_>>()
            .join(",");
        let rf = self.nodes.len().min(3);
        let log4j = self.dir.join("log4j2.yaml");
        fs::write(&log4j, LOG4J).map_err(Error::from)?;
        for n in &self.nodes {
            let mut props = vec![
                ("process.roles".to_string(), "broker,controller".to_string()),
                ("node.id".into(), n.id.to_string()),
                ("controller.quorum.voters".into(), voters.clone()),
                (
                    "listeners".into(),
                    format!(
                        "PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
                        n.port, n.controller_port
                    ),
                ),
                (
                    "advertised.listeners".into(),
                    format!("PLAINTEXT://127.0.0.1:{}", n.advertised_port),
                ),
                ("controller.listener.names".into(), "CONTROLLER".into()),
                ("inter.broker.listener.name".into(), "PLAINTEXT".into()),
                (
                    "listener.security.protocol.map".into(),
                    "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
                ),
                (
                    "log.dirs".into(),
                    self.dir.join(format!("data{}", n.id)).display().to_string(),
                ),
                ("num.partitions".into(), "1".into()),
                ("default.replication.factor".into(), rf.to_string()),
                ("min.insync.replicas".into(), "1".into()),
                ("offsets.topic.replication.factor".into(), rf.to_string()),
                ("offsets.topic.num.partitions".into(), "4".into()),
                (
                    "transaction.state.log.replication.factor".into(),
                    rf.to_string(),
                ),
                ("transaction.state.log.min.isr".into(), "1".into()),
                ("transaction.state.log.num.partitions".into(), "4".into()),
                (
                    "share.coordinator.state.topic.replication.factor".into(),
                    rf.to_string(),
                ),
                ("share.coordinator.state.topic.min.isr".into(), "1".into()),
                ("group.initial.rebalance.delay.ms".into(), "0".into()),
                ("num.network.threads".into(), "2".into()),
                ("num.io.threads".into(), "2".into()),
                ("background.threads".into(), "2".into()),
                ("log.cleaner.threads".into(), "1".into()),
                ("num.recovery.threads.per.data.dir".into(), "1".into()),
                ("num.replica.fetchers".into(), "1".into()),
                ("log.segment.bytes".into(), (64 << 20).to_string()),
                // Nothing expires by age: tests write records with fixed old timestamps, which
                // the default 7-day retention would delete 30 s after start (a slow run then
                // sees strait rightly report them lost).
                ("log.retention.ms".into(), "-1".into()),
                ("controlled.shutdown.enable".into(), "true".into()),
            ];
            if n.id > controllers {
                let set = |props: &mut Vec<(String, String)>, k: &str, v: String| {
                    props.retain(|(pk, _)| pk != k);
                    props.push((k.to_string(), v));
                };
                set(&mut props, "process.roles", "broker".into());
                set(
                    &mut props,
                    "listeners",
                    format!("PLAINTEXT://127.0.0.1:{}", n.port),
                );
            }
            if let Some(sec) = &self.opts.security {
                self.secure_properties(n, sec, &mut props)?;
            }
            for (k, v) in &self.opts.properties {
                props.retain(|(pk, _)| pk != k);
                props.push((k.clone(), v.clone()));
            }
            let text: String = props.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
            fs::write(&n.config, text).map_err(Error::from)?;
        }
        Ok(())
    }

    /// Listeners, TLS stores and SASL settings for [`KafkaSecurity`].
    fn secure_properties(
        &self,
        n: &KafkaNode,
        sec: &KafkaSecurity,
        props: &mut Vec<(String, String)>,
    ) -> Result<()> {
        // Kafka's PEM key store: the private key and the certificate chain in one file.
        let keystore = self.dir.join("keystore.pem");
        let key = fs::read_to_string(&sec.server_key).map_err(Error::from)?;
        let chain = fs::read_to_string(&sec.server_cert).map_err(Error::from)?;
        fs::write(&keystore, format!("{key}\n{chain}")).map_err(Error::from)?;
        let mut listeners = format!(
            "PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
            n.port, n.controller_port
        );
        let mut advertised = format!("PLAINTEXT://127.0.0.1:{}", n.advertised_port);
        let mut map = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".to_string();
        for (name, port) in &n.secure_ports {
            listeners.push_str(&format!(",{name}://127.0.0.1:{port}"));
            let host = advertised_host(name);
            advertised.push_str(&format!(",{name}://{host}:{port}"));
            let protocol = if *name == KERBEROS_LISTENER {
                "SASL_PLAINTEXT"
            } else {
                name
            };
            map.push_str(&format!(",{name}:{protocol}"));
        }
        let set = |props: &mut Vec<(String, String)>, k: &str, v: String| {
            props.retain(|(pk, _)| pk != k);
            props.push((k.to_string(), v));
        };
        set(props, "listeners", listeners);
        set(props, "advertised.listeners", advertised);
        set(props, "listener.security.protocol.map", map);
        set(props, "ssl.keystore.type", "PEM".into());
        set(
            props,
            "ssl.keystore.location",
            keystore.display().to_string(),
        );
        set(props, "ssl.truststore.type", "PEM".into());
        set(
            props,
            "ssl.truststore.location",
            sec.client_ca.display().to_string(),
        );
        set(
            props,
            "listener.name.ssl.ssl.client.auth",
            "required".into(),
        );
        let mechanisms = if sec.oauth.is_some() {
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
        } else {
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
        };
        set(props, "sasl.enabled.mechanisms", mechanisms.into());
        if let Some(o) = &sec.oauth {
            set(
                props,
                "sasl.oauthbearer.jwks.endpoint.url",
                o.jwks_url.clone(),
            );
            set(
                props,
                "sasl.oauthbearer.expected.audience",
                o.audience.clone(),
            );
            set(props, "sasl.oauthbearer.expected.issuer", o.issuer.clone());
            let validator = o.validator_class.clone().unwrap_or_else(|| {
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
                    .to_string()
            });
            for listener in ["sasl_plaintext", "sasl_ssl"] {
                set(
                    props,
                    &format!("listener.name.{listener}.oauthbearer.sasl.jaas.config"),
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
                        .into(),
                );
                set(
                    props,
                    &format!(
                        "listener.name.{listener}.oauthbearer.sasl.server.callback.handler.class"
                    ),
                    validator.clone(),
                );
            }
        }
        let plain_users: String = sec
            .plain_users
            .iter()
            .map(|(u, p)| format!(" user_{u}=\"{p}\""))
            .collect();
        for listener in ["sasl_plaintext", "sasl_ssl"] {
            set(
                props,
                &format!("listener.name.{listener}.plain.sasl.jaas.config"),
                format!("org.apache.kafka.common.security.plain.PlainLoginModule required{plain_users};"),
            );
            for m in ["scram-sha-256", "scram-sha-512"] {
                set(
                    props,
                    &format!("listener.name.{listener}.{m}.sasl.jaas.config"),
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;".into(),
                );
            }
            if let Some(ms) = sec.reauth_ms {
                set(
                    props,
                    &format!("listener.name.{listener}.connections.max.reauth.ms"),
                    ms.to_string(),
                );
            }
        }
        if let Some(k) = &sec.kerberos {
            kerberos_properties(k, sec.reauth_ms, props);
        }
        Ok(())
    }

    fn java_command(&self) -> Command {
        let log4j = self.dir.join("log4j2.yaml");
        let mut c = jvm_with(&self.opts.heap, &log4j, &self.libs, &self.opts.classpath);
        if let Some(o) = self.opts.security.as_ref().and_then(|s| s.oauth.as_ref()) {
            // Kafka 4 opens only the URLs this property allows.
            c.arg(format!(
                "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={}",
                o.jwks_url
            ));
        }
        c.args(&self.opts.jvm_args);
        c.arg("-Xms64m")
            .arg("-XX:+UseSerialGC")
            .arg("-XX:CICompilerCount=2");
        if self.opts.quick_start {
            c.arg("-XX:TieredStopAtLevel=1");
        }
        if let Some(k) = self
            .opts
            .security
            .as_ref()
            .and_then(|s| s.kerberos.as_ref())
        {
            c.arg(format!(
                "-Djava.security.krb5.conf={}",
                k.krb5_conf.display()
            ));
        }
        c
    }

    fn format(&self) -> Result<()> {
        let id = &self.cluster_id;
        let scram: Vec<String> = self
            .opts
            .security
            .iter()
            .flat_map(|s| &s.scram_users)
            .flat_map(|(m, u, p)| {
                [
                    "--add-scram".to_string(),
                    format!("{m}=[name={u},password={p}]"),
                ]
            })
            .collect();
        for n in &self.nodes {
            let out = self
                .java_command()
                .args(["kafka.tools.StorageTool", "format"])
                .arg(format!("--cluster-id={id}"))
                .args(&scram)
                .arg("-c")
                .arg(&n.config)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| {
                    Error::invalid(format!("cannot run java for Kafka's storage tool: {e}"))
                })?;
            if !out.status.success() {
                return Err(Error::invalid(format!(
                    "Kafka cluster {}: formatting node {} failed: {}{}",
                    self.name,
                    n.id,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )));
            }
        }
        Ok(())
    }

    fn spawn(&mut self, i: usize) -> Result<()> {
        let mut cmd = self.java_command();
        self.nodes[i].started_before = count_started(&self.nodes[i].log);
        let n = &self.nodes[i];
        let log = File::options()
            .create(true)
            .append(true)
            .open(&n.log)
            .map_err(Error::from)?;
        let err = log.try_clone().map_err(Error::from)?;
        let child = cmd
            .arg("kafka.Kafka")
            .arg(&n.config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::invalid(format!("cannot start Kafka (java): {e}")))?;
        self.nodes[i].child = Some(child);
        Ok(())
    }

    fn wait_ready(&mut self, i: usize) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let started_before = self.nodes[i].started_before;
        loop {
            // Any node that died takes the cluster down (no quorum without it): say which.
            let dead = self
                .nodes
                .iter_mut()
                .position(|n| n.child.is_some() && !n.is_running());
            if let Some(dead) = dead.map(|d| &self.nodes[d]) {
                return Err(Error::invalid(format!(
                    "Kafka cluster {}, node {} exited while starting:\n{}",
                    self.name,
                    dead.id,
                    file_tail(&dead.log, 4000)
                )));
            }
            let n = &mut self.nodes[i];
            if count_started(&n.log) > started_before
                && TcpStream::connect(("127.0.0.1", n.port)).is_ok()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::invalid(format!(
                    "Kafka cluster {}, node {} did not start within {:?}:\n{}",
                    self.name,
                    n.id,
                    START_TIMEOUT,
                    file_tail(&n.log, 4000)
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for KafkaCluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        if std::env::var_os("STRAIT_KEEP_KAFKA").is_none() {
            // Data goes; logs stay for a failed test to show.
            for n in &self.nodes {
                let _ = fs::remove_dir_all(self.dir.join(format!("data{}", n.id)));
            }
        }
    }
}

/// The host a secured listener advertises: `localhost` for Kerberos (the instance of the
/// service principal), the loopback address otherwise.
fn advertised_host(listener: &str) -> &'static str {
    if listener == KERBEROS_LISTENER {
        "localhost"
    } else {
        "127.0.0.1"
    }
}

/// The `KERBEROS` listener's SASL settings: GSSAPI only, the broker's keytab and principal.
fn kerberos_properties(
    k: &KafkaKerberos,
    reauth_ms: Option<u64>,
    props: &mut Vec<(String, String)>,
) {
    let l = KERBEROS_LISTENER.to_ascii_lowercase();
    let mut set = |k: String, v: String| {
        props.retain(|(pk, _)| *pk != k);
        props.push((k, v));
    };
    set(
        format!("listener.name.{l}.sasl.enabled.mechanisms"),
        "GSSAPI".into(),
    );
    set("sasl.kerberos.service.name".into(), "kafka".into());
    set(
        format!("listener.name.{l}.gssapi.sasl.jaas.config"),
        format!(
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab=\"{}\" principal=\"{}\";",
            k.keytab.display(),
            k.principal
        ),
    );
    if let Some(ms) = reauth_ms {
        set(
            format!("listener.name.{l}.connections.max.reauth.ms"),
            ms.to_string(),
        );
    }
}

/// SIGTERM, then SIGKILL if the process has not exited within `timeout`.
pub(crate) fn terminate(c: &mut Child, timeout: Duration) {
    if let Ok(pid) = i32::try_from(c.id()) {
        // SAFETY: sending a signal to a child process we own.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = c.kill();
    let _ = c.wait();
}

const STARTED: &str = "Kafka Server started";

fn count_started(log: &Path) -> usize {
    let mut text = String::new();
    if let Ok(mut f) = File::open(log) {
        let _ = f.read_to_string(&mut text);
    }
    text.matches(STARTED).count()
}

/// The last `max` bytes of a file, lossily decoded.
pub fn file_tail(path: &Path, max: usize) -> String {
    let mut buf = Vec::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_end(&mut buf);
    }
    let start = buf.len().saturating_sub(max);
    String::from_utf8_lossy(&buf[start..]).into_owned()
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A Kafka cluster id: 16 random bytes in URL-safe base64 without padding, never starting with
/// `-` (Kafka's own ids never do; the storage tool would read it as an option).
fn random_cluster_id() -> String {
    use base64::Engine;
    use ring::rand::SecureRandom;
    let rng = ring::rand::SystemRandom::new();
    let mut b = [0u8; 16];
    loop {
        if rng.fill(&mut b).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            b = t.to_le_bytes();
        }
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        if !id.starts_with('-') {
            return id;
        }
    }
}

/// Logging: warnings, plus the line that says a node is up.
const LOG4J: &str = "Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: \"[%d] %p %m (%c)%n\"
  Loggers:
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
      - name: kafka.server.BrokerServer
        level: INFO
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
";

#[cfg(test)]
mod tests {
    use super::free_port;

    #[test]
    fn free_port_never_hands_out_a_port_twice() {
        // 300 draws from 12 000 ports repeat one with a probability of about 98 % when drawn
        // independently (the birthday bound): a node's listeners once got the same port.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..300 {
            let port = free_port().unwrap();
            assert!(seen.insert(port), "port {port} handed out twice");
        }
    }
}
