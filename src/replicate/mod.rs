//! Replication flows: `strait run`'s engine.
//!
//! - [`flow`]: one `source -> target` flow (topic selection, data path, progress, heartbeats).
//! - [`progress`]: the stored position of each partition and exactly-once resume (sans-io).
//! - [`lists`]: allow/deny lists changed at runtime, stored in the target cluster.
//! - [`store`]: small compacted internal topics used as durable stores.
//! - [`status`]: what flows report.
//! - [`takeover`]: partitions taken over from MirrorMaker 2 (`takeover_from = "mm2"`).

pub mod duties;
pub mod flow;
pub mod groups;
pub mod lists;
pub mod membership;
pub mod mirrors;
pub mod progress;
pub mod status;
pub mod store;
pub mod takeover;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::{Cluster, ClusterConfig, ConnectionConfig, TlsClient};
use crate::config::{ClusterSettings, Config};
use crate::error::{Error, Result};
use crate::observe::{self, Observer, Side};
use status::FlowStatus;

/// Client settings for a configured cluster. With TLS, reads the CA, certificate and key files
/// now, so a bad file stops start-up with a message naming the cluster.
pub fn cluster_config(c: &ClusterSettings) -> Result<ClusterConfig> {
    let mut cfg = ClusterConfig::new(&c.alias, &c.bootstrap_servers.join(","));
    let tls = if c.security_protocol.uses_tls() {
        let config = crate::tls::client_config(&c.tls)
            .map_err(|e| Error::invalid(format!("TLS settings: {e}")).cluster(&c.alias))?;
        Some(TlsClient {
            config,
            server_name: c.tls.server_name.clone(),
        })
    } else {
        None
    };
    cfg.connection = ConnectionConfig {
        client_id: c.client_id.clone(),
        connect_timeout: c.connect_timeout,
        request_timeout: c.request_timeout,
        tls,
        sasl: c.sasl.clone().filter(|_| c.security_protocol.uses_sasl()),
        ..ConnectionConfig::default()
    };
    Ok(cfg)
}

/// Checks a cluster's settings can be turned into a client configuration (TLS files readable).
pub fn check_supported(_origin: &str, c: &ClusterSettings) -> Result<()> {
    cluster_config(c).map(|_| ())
}

/// The settings of a configured cluster, refusing unknown aliases.
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
    Ok(settings)
}

/// Connects once to a configured cluster by alias (for commands).
pub async fn connect_once(config: &Config, alias: &str) -> Result<Cluster> {
    Cluster::connect(cluster_config(cluster_settings(config, alias)?)?).await
}

/// Connects to a configured cluster by alias, retrying until it answers or `shutdown` fires.
/// TLS and authentication failures are not retried: they end the flow with one error.
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
    let client = cluster_config(settings)?;
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut cfg = client.clone();
        cfg.observer = observer.clone();
        match Cluster::connect(cfg).await {
            Ok(c) => return Ok(Some(Arc::new(c))),
            Err(e) if e.is_security() => return Err(e.cluster(alias)),
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
    // Group memberships, ended after the flows (they leave once their flows stopped).
    let mut members: tokio::task::JoinSet<Result<()>> = tokio::task::JoinSet::new();
    let mut status = BTreeMap::new();
    let flows: Vec<_> = config.flows.iter().filter(|f| f.enabled).cloned().collect();
    if flows.is_empty() {
        return Err(Error::invalid(format!(
            "{}: no enabled flow",
            config.origin
        )));
    }
    let mut literal: Vec<String> = Vec::new();
    for c in config.clusters.values() {
        check_supported(&config.origin, c)?;
        literal.extend(c.literal_secrets());
    }
    if let Some(token) = config.http.as_ref().and_then(|h| h.token.as_ref()) {
        if token.source() == &crate::secret::SecretSource::Literal {
            literal.push("the HTTP token".to_string());
        }
    }
    for what in literal {
        tracing::warn!(
            "{}: {what} is written in clear in the configuration file; prefer {{ env = \"VAR\" }} or {{ file = \"PATH\" }} (mm2.properties: ${{env:VAR}} or ${{file:PATH:KEY}})",
            config.origin
        );
    }
    let listener = match &config.http {
        Some(h) => {
            let bound = observe::http::bind(&h.addr).map_err(|e| {
                Error::invalid(format!(
                    "{}: http = {:?}: cannot listen: {e}",
                    config.origin, h.addr
                ))
            })?;
            let tls = match (&h.tls_cert, &h.tls_key) {
                (Some(cert), Some(key)) => Some(
                    crate::tls::server_config(cert, key)
                        .map_err(|e| Error::invalid(format!("{}: http TLS: {e}", config.origin)))?,
                ),
                _ => None,
            };
            Some((bound, tls, h.token.clone()))
        }
        None => None,
    };
    let observer = Arc::new(Observer::new());
    let config = Arc::new(config);
    // Scale-out: one group membership per target cluster; its flows run only what it owns.
    let mut owners: BTreeMap<String, Arc<membership::Ownership>> = BTreeMap::new();
    for flow in &flows {
        owners.entry(flow.target.clone()).or_default();
    }
    for (target, own) in &owners {
        let cfg = membership::MembershipConfig {
            group: membership::group_id(&config.instance_group, target),
            flows: flows
                .iter()
                .filter(|f| f.target == *target)
                .map(|f| f.name())
                .collect(),
            timings: crate::client::group::GroupTimings {
                session_timeout: Duration::from_secs(10),
                rebalance_timeout: Duration::from_secs(30),
            },
            instance: membership::instance_name(),
        };
        let (own, config, target) = (own.clone(), config.clone(), target.clone());
        let mut shutdown = shutdown.clone();
        members.spawn(async move {
            // Connect only once the flows reached their clusters (a refused password or
            // certificate is then reported once, by the flow).
            if !own.wait_reported(&cfg.flows, &mut shutdown).await {
                return Ok(());
            }
            let Some(cluster) = connect(&config, &target, &mut shutdown).await? else {
                return Ok(());
            };
            membership::run(cluster, cfg, own, shutdown).await;
            Ok(())
        });
    }
    for flow in flows {
        let own = owners.get(&flow.target).cloned();
        let reverse = config
            .flows
            .iter()
            .any(|f| f.enabled && f.source == flow.target && f.target == flow.source);
        let (tx, rx) = watch::channel(FlowStatus {
            name: flow.name(),
            ..FlowStatus::default()
        });
        status.insert(flow.name(), rx);
        observer.register_flow(&flow.name(), &flow.source, &flow.target);
        let mut shutdown = shutdown.clone();
        let config = config.clone();
        let obs = observer.clone();
        tasks.spawn(async move {
            let name = flow.name();
            let result = async {
                let o = Some(obs.clone());
                let Some(source) =
                    connect_observed(&config, &flow.source, &mut shutdown, o).await?
                else {
                    return Ok(());
                };
                obs.connected(&name, Side::Source, true);
                let o = Some(obs.clone());
                let Some(target) =
                    connect_observed(&config, &flow.target, &mut shutdown, o).await?
                else {
                    return Ok(());
                };
                obs.connected(&name, Side::Target, true);
                let rf = config
                    .clusters
                    .get(&flow.target)
                    .map(|c| c.replication_factor)
                    .unwrap_or(-1);
                let mut f = flow::Flow::new(flow, source, target, reverse, rf, tx)
                    .with_observer(obs.clone());
                if let Some(own) = &own {
                    f = f.with_ownership(own.clone());
                }
                f.run(shutdown).await
            }
            .await;
            obs.stopped(&name, result.as_ref().err().map(|e| e.to_string()));
            if let Some(own) = &own {
                own.flow_done(&name);
            }
            result
        });
    }
    let http = match listener {
        Some(((listener, local), tls, token)) => {
            let mut server = observe::http::Server::new(observer.clone(), status.clone());
            if let Some(token) = token {
                server = server.with_authorize(observe::http::token_gate(token));
            }
            let server = Arc::new(server);
            let scheme = match tls {
                Some(cfg) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
                    tokio::spawn(server.run_with(listener, shutdown.clone(), move |s| {
                        let acceptor = acceptor.clone();
                        async move { acceptor.accept(s).await }
                    }));
                    "https"
                }
                None => {
                    tokio::spawn(server.run(listener, shutdown.clone()));
                    "http"
                }
            };
            tracing::info!("status page, /metrics and the REST API at {scheme}://{local}/");
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
                    // The first error is returned (and reported by the caller); log it now only
                    // if other flows keep running, so a lone failure reads as one line.
                    if !tasks.is_empty() || first_error.is_some() {
                        tracing::error!("flow ended with an error: {e}");
                    }
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    first_error.get_or_insert(Error::invalid(format!("flow task failed: {e}")));
                }
            }
        }
        while let Some(r) = members.join_next().await {
            if let Ok(Err(e)) = r {
                tracing::warn!("group membership ended with an error: {e}");
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
