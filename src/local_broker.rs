//! Local brokers started as child processes for `strait demo` and `strait bench`: an Apache
//! Kafka one-node KRaft cluster ([`crate::local_kafka`], the default), or a nisshi broker with
//! in-memory storage. On a free loopback port, stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::{Cluster, ClusterConfig};
use crate::error::{Error, Result};

/// Which broker to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerKind {
    /// Apache Kafka (see [`crate::local_kafka`]); for the bench, sized for throughput.
    Kafka {
        /// Tuned for throughput (bigger heap, full JIT) rather than a quick start.
        throughput: bool,
    },
    /// nisshi, from this binary.
    Nisshi(PathBuf),
}

/// A broker this process started; killed on drop.
#[derive(Debug)]
pub struct LocalBroker {
    name: String,
    addr: String,
    backend: Backend,
}

#[derive(Debug)]
enum Backend {
    Nisshi(Child),
    Kafka(Box<crate::local_kafka::KafkaCluster>),
}

impl Drop for LocalBroker {
    fn drop(&mut self) {
        if let Backend::Nisshi(child) = &mut self.backend {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The nisshi binary: `explicit` if given, else `nisshi` on PATH, else `~/.cargo/bin/nisshi`.
pub fn nisshi_path(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("nisshi"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cargo/bin/nisshi"));
    }
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        Error::invalid(
            "nisshi not found (scripts/setup.sh does not install it): install it with `cargo install \
             nisshi@0.8.1 --locked --ignore-rust-version --no-default-features --features \
             dynostore,libsql`, or pass its path",
        )
    })
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(Error::from)?;
    Ok(l.local_addr().map_err(Error::from)?.port())
}

impl LocalBroker {
    /// Starts a broker of `kind` named `name` and waits until it answers.
    pub async fn start_kind(kind: &BrokerKind, name: &str) -> Result<LocalBroker> {
        LocalBroker::start_kind_at(kind, name, None).await
    }

    /// [`LocalBroker::start_kind`], with `ports` = (the port it listens on, the port it
    /// advertises to clients, where something relays to the first): Apache Kafka only. It is
    /// waited for through the advertised port.
    pub async fn start_kind_at(
        kind: &BrokerKind,
        name: &str,
        ports: Option<(u16, u16)>,
    ) -> Result<LocalBroker> {
        match kind {
            BrokerKind::Nisshi(_) if ports.is_some() => Err(Error::invalid(
                "a broker behind a relay needs Apache Kafka (not nisshi)",
            )),
            BrokerKind::Nisshi(path) => LocalBroker::start(path, name).await,
            BrokerKind::Kafka { throughput } => {
                let mut opts = crate::local_kafka::KafkaOptions::new(name);
                if *throughput {
                    opts.heap = "1g".to_string();
                    opts.quick_start = false;
                }
                if let Some((listen, advertised)) = ports {
                    opts.ports = vec![Some(listen)];
                    opts.advertised_ports = vec![Some(advertised)];
                }
                let cluster = tokio::task::spawn_blocking(move || {
                    crate::local_kafka::KafkaCluster::start(opts)
                })
                .await
                .map_err(|e| Error::invalid(format!("Kafka start-up task failed: {e}")))??;
                let broker = LocalBroker {
                    name: name.to_string(),
                    addr: cluster.bootstrap(),
                    backend: Backend::Kafka(Box::new(cluster)),
                };
                broker.wait_answering(Duration::from_secs(60)).await?;
                Ok(broker)
            }
        }
    }

    async fn wait_answering(&self, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        loop {
            let mut cfg = ClusterConfig::new(&self.name, &self.addr);
            cfg.retries = 0;
            cfg.connection.connect_timeout = Duration::from_secs(1);
            if Cluster::connect(cfg).await.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::invalid(format!(
                    "cluster {} did not come up on {}",
                    self.name, self.addr
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts `nisshi broker` with cluster id `name` on a free 127.0.0.1 port and waits until
    /// it answers ApiVersions (30 s at most).
    pub async fn start(nisshi: &Path, name: &str) -> Result<LocalBroker> {
        let port = free_port()?;
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(nisshi)
            .args([
                "broker",
                "--cluster-id",
                name,
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .arg("--storage-engine")
            .arg(format!("memory://{name}/"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                Error::invalid(format!("cannot start nisshi ({}): {e}", nisshi.display()))
            })?;
        let broker = LocalBroker {
            name: name.to_string(),
            addr: format!("127.0.0.1:{port}"),
            backend: Backend::Nisshi(child),
        };
        broker.wait_answering(Duration::from_secs(30)).await?;
        Ok(broker)
    }

    /// The cluster id it was started with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The directory an Apache Kafka broker keeps its files in (its log directories are
    /// below it); `None` for nisshi (in memory).
    pub fn data_dir(&self) -> Option<PathBuf> {
        match &self.backend {
            Backend::Kafka(c) => Some(c.dir().to_path_buf()),
            Backend::Nisshi(_) => None,
        }
    }

    /// Its `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Its process id (the bench reads its CPU time).
    pub fn pid(&self) -> u32 {
        match &self.backend {
            Backend::Nisshi(child) => child.id(),
            Backend::Kafka(c) => c.pids().first().copied().unwrap_or(0),
        }
    }

    /// Which broker it is, for reports.
    pub fn kind_name(&self) -> &'static str {
        match &self.backend {
            Backend::Nisshi(_) => "nisshi",
            Backend::Kafka(_) => "Apache Kafka",
        }
    }
}
