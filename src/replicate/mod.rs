//! Replication flows: `strait run`'s engine.
//!
//! - [`flow`]: one `source -> target` flow's control actor (topic selection and creation,
//!   take-up, mirror commands, ownership, progress), talking to its pump by commands.
//! - [`pump`]: the task that owns a flow's data path and only moves records.
//! - [`path`]: the data path as a state machine without I/O (fetch, plan, produce, acknowledge).
//! - [`duties`]: heartbeats, checkpoints and group offset sync, in a task of their own.
//! - [`progress`]: the stored position of each partition and exactly-once resume (sans-io).
//! - [`lists`]: allow/deny lists changed at runtime, stored in the target cluster.
//! - [`pause`]: a whole flow paused and resumed at runtime, stored in the target cluster.
//! - [`store`]: small compacted internal topics used as durable stores.
//! - [`status`]: what flows report.
//! - `engine`: [`spawn`] starts the enabled flows of a configuration, their group
//!   memberships and the HTTP listener.
//! - [`takeover`]: partitions taken over from MirrorMaker 2 (`takeover_from = "mm2"`).

pub mod admin;
pub mod duties;
mod engine;
pub mod flow;
pub mod group_sync;
pub mod groups;
pub mod lists;
pub mod membership;
pub mod mirrors;
pub mod path;
pub mod pause;
pub mod positions;
pub mod progress;
pub mod pump;
pub mod restore;
pub mod status;
pub mod store;
pub mod takeover;
pub mod topic_sync;

use std::sync::Arc;
use std::time::Duration;

use crate::client::{Cluster, ClusterConfig, ConnectionConfig, TlsClient};
use crate::config::{ClusterSettings, Config};
use crate::error::{Error, Result};
use crate::observe::{Observer, Side};
use crate::Shutdown;

pub use engine::{run, spawn, Engine};

/// Client settings for a configured cluster. With TLS, reads the CA, certificate and key files
/// now, so a bad file stops start-up with a message naming the cluster.
pub fn cluster_config(c: &ClusterSettings) -> Result<ClusterConfig> {
    let mut cfg = ClusterConfig::new(&c.alias, &c.bootstrap_servers.join(","));
    cfg.internal_topics = c.internal_topics.clone();
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
    shutdown: &Shutdown,
) -> Result<Option<Arc<Cluster>>> {
    connect_observed(config, alias, shutdown, None, None).await
}

/// [`connect`], reporting the cluster's requests to `observer`, and each failed attempt as
/// the problem of `flow`'s end (a flow name and its side) until it connects.
pub async fn connect_observed(
    config: &Config,
    alias: &str,
    shutdown: &Shutdown,
    observer: Option<Arc<Observer>>,
    flow: Option<(&str, Side)>,
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
                let e = e.cluster(alias);
                if let (Some(o), Some((flow, side))) = (&observer, flow) {
                    o.disconnected(flow, side, e.to_string());
                }
                tracing::error!(cluster = %alias, "cannot reach the cluster, retrying in {backoff:?}: {e}");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.stopped() => return Ok(None),
                }
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}
