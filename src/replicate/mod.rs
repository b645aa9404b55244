//! Replication flows: `strait run`'s engine.
//!
//! - [`flow`]: one `source -> target` flow (topic selection, data path, progress, heartbeats).
//! - [`progress`]: the stored position of each partition and exactly-once resume (sans-io).
//! - [`lists`]: allow/deny lists changed at runtime, stored in the target cluster.
//! - [`store`]: small compacted internal topics used as durable stores.
//! - [`status`]: what flows report.

pub mod flow;
pub mod groups;
pub mod lists;
pub mod progress;
pub mod status;
pub mod store;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::{Cluster, ClusterConfig, ConnectionConfig};
use crate::config::{ClusterSettings, Config, SecurityProtocol};
use crate::error::{Error, Result};
use crate::observe::{self, Observer, Side};
use status::FlowStatus;

/// Client settings for a configured cluster.
pub fn cluster_config(c: &ClusterSettings) -> ClusterConfig {
    let mut cfg = ClusterConfig::new(&c.alias, &c.bootstrap_servers.join(","));
    cfg.connection = ConnectionConfig {
        client_id: c.client_id.clone(),
        connect_timeout: c.connect_timeout,
        request_timeout: c.request_timeout,
        ..ConnectionConfig::default()
    };
    cfg
}

/// Refuses settings this version cannot honour, naming the cluster and the key.
pub fn check_supported(origin: &str, c: &ClusterSettings) -> Result<()> {
    if c.security_protocol != SecurityProtocol::Plaintext {
        return Err(Error::invalid(format!(
            "{origin}: clusters.{}.security_protocol: {} is not supported by this version of strait (only PLAINTEXT)",
            c.alias,
            c.security_protocol.as_str()
        )));
    }
    Ok(())
}

/// The settings of a configured cluster, refusing unknown aliases and settings this version
/// cannot honour.
pub fn cluster_settings<'a>(config: &'a Config, alias: &str) -> Result<&'a ClusterSettings> {
    let settings = config.clusters.get(alias).ok_or_else(|| {
        Error::invalid(format!(
            "{}: unknown cluster alias {alias:?} (known: {})",
            config.origin,
            config
                .clusters
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    check_supported(&config.origin, settings)?;
    Ok(settings)
}

/// Connects once to a configured cluster by alias (for commands).
pub async fn connect_once(config: &Config, alias: &str) -> Result<Cluster> {
    Cluster::connect(cluster_config(cluster_settings(config, alias)?)).await
}

/// Connects to a configured cluster by alias, retrying until it answers or `shutdown` fires.
pub async fn connect(
    config: &Config,
    alias: &str,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Option<Arc<Cluster>>> {
    connect_observed(config, alias, shutdown, None).await
}

/// [`connect`], reporting the cluster's requests to `observer`.
pub async fn connect_observed(
    config: &Config,
    alias: &str,
    shutdown: &mut watch::Receiver<bool>,
    observer: Option<Arc<Observer>>,
) -> Result<Option<Arc<Cluster>>> {
    let settings = cluster_settings(config, alias)?;
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut cfg = cluster_config(settings);
        cfg.observer = observer.clone();
        match Cluster::connect(cfg).await {
            Ok(c) => return Ok(Some(Arc::new(c))),
            Err(e) => {
                tracing::error!(cluster = %alias, "cannot reach the cluster, retrying in {backoff:?}: {e}");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => return Ok(None),
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// Running flows: their status, and the task that ends when they all stopped.
pub struct Engine {
    /// Latest status of each flow, by flow name (`source->target`).
    pub status: BTreeMap<String, watch::Receiver<FlowStatus>>,
    /// Ends when every flow stopped; the first error, if any.
    pub done: tokio::task::JoinHandle<Result<()>>,
    /// Metrics and facts the flows report.
    pub observer: Arc<Observer>,
    /// Where the status page, `/metrics` and the REST API are served, when `http` is set.
    pub http: Option<std::net::SocketAddr>,
}

/// Starts every enabled flow of `config`; they run until `shutdown` turns true.
pub fn spawn(config: Config, shutdown: watch::Receiver<bool>) -> Result<Engine> {
    let mut tasks = tokio::task::JoinSet::new();
    let mut status = BTreeMap::new();
    let flows: Vec<_> = config.flows.iter().filter(|f| f.enabled).cloned().collect();
    if flows.is_empty() {
        return Err(Error::invalid(format!(
            "{}: no enabled flow",
            config.origin
        )));
    }
    for c in config.clusters.values() {
        check_supported(&config.origin, c)?;
    }
    let listener = match &config.http {
        Some(addr) => Some(observe::http::bind(addr).map_err(|e| {
            Error::invalid(format!(
                "{}: http = {addr:?}: cannot listen: {e}",
                config.origin
            ))
        })?),
        None => None,
    };
    let observer = Arc::new(Observer::new());
    let config = Arc::new(config);
    for flow in flows {
        let reverse = config
            .flows
            .iter()
            .any(|f| f.enabled && f.source == flow.target && f.target == flow.source);
        let (tx, rx) = watch::channel(FlowStatus {
            name: flow.name(),
            partitions: Vec::new(),
        });
        status.insert(flow.name(), rx);
        observer.register_flow(&flow.name(), &flow.source, &flow.target);
        let mut shutdown = shutdown.clone();
        let config = config.clone();
        let obs = observer.clone();
        tasks.spawn(async move {
            let name = flow.name();
            let o = Some(obs.clone());
            let Some(source) = connect_observed(&config, &flow.source, &mut shutdown, o).await?
            else {
                return Ok(());
            };
            obs.connected(&name, Side::Source, true);
            let o = Some(obs.clone());
            let Some(target) = connect_observed(&config, &flow.target, &mut shutdown, o).await?
            else {
                return Ok(());
            };
            obs.connected(&name, Side::Target, true);
            let rf = config
                .clusters
                .get(&flow.target)
                .map(|c| c.replication_factor)
                .unwrap_or(-1);
            let result = flow::Flow::new(flow, source, target, reverse, rf, tx)
                .with_observer(obs.clone())
                .run(shutdown)
                .await;
            obs.stopped(&name, result.as_ref().err().map(|e| e.to_string()));
            result
        });
    }
    let http = match listener {
        Some((listener, local)) => {
            let server = observe::http::Server::new(observer.clone(), status.clone());
            tokio::spawn(Arc::new(server).run(listener, shutdown.clone()));
            tracing::info!("status page, /metrics and the REST API at http://{local}/");
            Some(local)
        }
        None => None,
    };
    let done = tokio::spawn(async move {
        let mut first_error = None;
        while let Some(r) = tasks.join_next().await {
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::error!("flow ended with an error: {e}");
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    first_error.get_or_insert(Error::invalid(format!("flow task failed: {e}")));
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    });
    Ok(Engine {
        status,
        done,
        observer,
        http,
    })
}

/// Runs every enabled flow of `config` until `shutdown` turns true.
pub async fn run(config: Config, shutdown: watch::Receiver<bool>) -> Result<()> {
    let engine = spawn(config, shutdown)?;
    engine
        .done
        .await
        .map_err(|e| Error::invalid(format!("engine task failed: {e}")))?
}
