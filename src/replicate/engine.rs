//! Starting the enabled flows of a configuration: the checks made before anything starts, the
//! HTTP listener, one group membership per target cluster, one task per flow, and the task
//! that waits for them all.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::membership::{self, MembershipConfig, Ownership};
use super::status::FlowStatus;
use super::{check_supported, connect, connect_observed, flow, topic_sync};
use crate::config::{Config, ConfigError, FlowConfig, FlowMode};
use crate::embedding::ReplicatorError;
use crate::error::{Error, Result};
use crate::naming::MirrorHop;
use crate::observe::{self, Observer, Side};
use crate::secret::{Secret, SecretSource};
use crate::Shutdown;

/// Running flows: their status, and the task that ends when they all stopped.
pub struct Engine {
    /// Latest status of each flow, by flow name (`source->target`).
    pub status: BTreeMap<String, watch::Receiver<FlowStatus>>,
    /// Ends when every flow stopped; the first error, if any.
    pub done: tokio::task::JoinHandle<Result<()>>,
    /// Metrics and facts the flows report.
    pub observer: Arc<Observer>,
    /// Where the status page, `/metrics` and the REST API are served, when `http` is set.
    pub http: Option<SocketAddr>,
}

/// The HTTP listener, bound before any flow starts.
struct Listener {
    socket: TcpListener,
    local: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    token: Option<Secret>,
    write_token: Option<Secret>,
}

/// Starts every enabled flow of `config`; they run until `shutdown` turns true or its sender
/// is dropped. `shutdown` is a [`Shutdown`] or a `watch::Receiver<bool>`. Fails before
/// starting anything when there is no enabled flow, a cluster's TLS files cannot be read, or
/// the HTTP listener cannot be set up.
pub fn spawn(
    config: Config,
    shutdown: impl Into<Shutdown>,
) -> std::result::Result<Engine, ReplicatorError> {
    let shutdown: Shutdown = shutdown.into();
    let flows = enabled_flows(&config)?;
    for c in config.clusters.values() {
        check_supported(&config.origin, c).map_err(ReplicatorError::Cluster)?;
    }
    warn_literal_secrets(&config);
    let listener = bind_http(&config)?;
    let observer = Arc::new(Observer::new());
    let config = Arc::new(config);
    // Scale-out: one group membership per target cluster; its flows run only what it owns.
    let mut owners: BTreeMap<String, Arc<Ownership>> = BTreeMap::new();
    for flow in &flows {
        owners.entry(flow.target.clone()).or_default();
    }
    let members = spawn_memberships(&config, &flows, &owners, &shutdown);
    let mut tasks = JoinSet::new();
    let mut status = BTreeMap::new();
    for flow in flows {
        let task = FlowTask {
            own: owners.get(&flow.target).cloned(),
            reverse: config
                .flows
                .iter()
                .any(|f| f.enabled && f.source == flow.target && f.target == flow.source),
            flow,
            config: config.clone(),
            observer: observer.clone(),
            shutdown: shutdown.clone(),
        };
        let (name, rx) = task.spawn(&mut tasks);
        status.insert(name, rx);
    }
    let http = listener.map(|l| serve_http(l, &observer, &status, &config, &shutdown));
    let done = tokio::spawn(join_flows(tasks, members));
    Ok(Engine {
        status,
        done,
        observer,
        http,
    })
}

/// Runs every enabled flow of `config` until `shutdown` turns true (or its sender is dropped).
pub async fn run(config: Config, shutdown: impl Into<Shutdown>) -> Result<()> {
    let engine = spawn(config, shutdown).map_err(ReplicatorError::into_error)?;
    engine
        .done
        .await
        .map_err(|e| Error::invalid(format!("engine task failed: {e}")))?
}

/// The enabled flows, or a configuration error when there is none.
fn enabled_flows(config: &Config) -> std::result::Result<Vec<FlowConfig>, ConfigError> {
    let flows: Vec<FlowConfig> = config.flows.iter().filter(|f| f.enabled).cloned().collect();
    if flows.is_empty() {
        return Err(ConfigError {
            origin: config.origin.clone(),
            key: "flows".to_string(),
            problem: "no enabled flow".to_string(),
            allowed: None,
        });
    }
    Ok(flows)
}

/// Warns once about each secret written in clear in the configuration file.
fn warn_literal_secrets(config: &Config) {
    let mut literal: Vec<String> = Vec::new();
    for c in config.clusters.values() {
        literal.extend(c.literal_secrets());
    }
    if let Some(h) = &config.http {
        let http_secrets = [
            (h.token.as_ref(), "the HTTP token"),
            (h.write_token.as_ref(), "the HTTP write token"),
            (
                h.tls_keystore.as_ref().and_then(|k| k.password.as_ref()),
                "the HTTP key store password",
            ),
            (h.tls_key_password.as_ref(), "the HTTP key password"),
        ];
        for (secret, what) in http_secrets {
            if secret.is_some_and(|s| s.source() == &SecretSource::Literal) {
                literal.push(what.to_string());
            }
        }
    }
    for what in literal {
        tracing::warn!(
            "{}: {what} is written in clear in the configuration file; prefer {{ env = \"VAR\" }} or {{ file = \"PATH\" }} (mm2.properties: ${{env:VAR}} or ${{file:PATH:KEY}})",
            config.origin
        );
    }
}

/// Binds the HTTP listener and loads its TLS certificate, when `http` is set.
fn bind_http(config: &Config) -> std::result::Result<Option<Listener>, ReplicatorError> {
    let Some(h) = &config.http else {
        return Ok(None);
    };
    let failed = |problem: String| ReplicatorError::Http {
        origin: config.origin.clone(),
        addr: h.addr.clone(),
        problem,
    };
    let (socket, local) =
        observe::http::bind(&h.addr).map_err(|e| failed(format!("cannot listen: {e}")))?;
    let tls = match (&h.tls_keystore, &h.tls_cert, &h.tls_key) {
        (Some(store), _, _) => Some(
            crate::tls::server_config_from_store(
                store,
                h.tls_key_password.as_ref(),
                h.tls_keystore_alias.as_deref(),
            )
            .map_err(|e| failed(format!("TLS: {e}")))?,
        ),
        (None, Some(cert), Some(key)) => {
            Some(crate::tls::server_config(cert, key).map_err(|e| failed(format!("TLS: {e}")))?)
        }
        _ => None,
    };
    Ok(Some(Listener {
        socket,
        local,
        tls,
        token: h.token.clone(),
        write_token: h.write_token.clone(),
    }))
}

/// One group membership per target cluster, each ended after its flows.
fn spawn_memberships(
    config: &Arc<Config>,
    flows: &[FlowConfig],
    owners: &BTreeMap<String, Arc<Ownership>>,
    shutdown: &Shutdown,
) -> JoinSet<Result<()>> {
    let mut members = JoinSet::new();
    for (target, own) in owners {
        let cfg = MembershipConfig {
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
        let shutdown = shutdown.clone();
        let span = tracing::info_span!("membership", cluster = %target, group = %cfg.group);
        members.spawn(
            async move {
                // Connect only once the flows reached their clusters (a refused password or
                // certificate is then reported once, by the flow).
                if !own.wait_reported(&cfg.flows, &shutdown).await {
                    return Ok(());
                }
                let Some(cluster) = connect(&config, &target, &shutdown).await? else {
                    return Ok(());
                };
                membership::run(cluster, cfg, own, shutdown).await;
                Ok(())
            }
            .instrument(span),
        );
    }
    members
}

/// What one flow's task needs.
struct FlowTask {
    flow: FlowConfig,
    own: Option<Arc<Ownership>>,
    /// Whether the configuration also has the flow the other way (`target->source`).
    reverse: bool,
    config: Arc<Config>,
    observer: Arc<Observer>,
    shutdown: Shutdown,
}

impl FlowTask {
    /// Registers the flow and spawns its task into `tasks`; returns its name and status.
    fn spawn(self, tasks: &mut JoinSet<Result<()>>) -> (String, watch::Receiver<FlowStatus>) {
        let name = self.flow.name();
        let (tx, rx) = watch::channel(FlowStatus {
            name: name.clone(),
            ..FlowStatus::default()
        });
        let (obs, own) = (self.observer.clone(), self.own.clone());
        obs.register_flow(&name, &self.flow.source, &self.flow.target);
        let task_name = name.clone();
        let span = tracing::info_span!(
            "flow",
            flow = %name,
            source = %self.flow.source,
            target = %self.flow.target
        );
        tasks.spawn(
            async move {
                let result = self.run(tx).await;
                obs.stopped(&task_name, result.as_ref().err().map(|e| e.to_string()));
                if let Some(own) = &own {
                    own.flow_done(&task_name);
                }
                result
            }
            .instrument(span),
        );
        (name, rx)
    }

    /// Connects to both clusters (retrying until they answer or shutdown), then runs the flow
    /// with its topic config and ACL sync beside it.
    async fn run(self, tx: watch::Sender<FlowStatus>) -> Result<()> {
        let FlowTask {
            flow,
            own,
            reverse,
            config,
            observer: obs,
            shutdown,
        } = self;
        let name = flow.name();
        let o = Some(obs.clone());
        let end = Some((name.as_str(), Side::Source));
        let Some(source) = connect_observed(&config, &flow.source, &shutdown, o, end).await? else {
            return Ok(());
        };
        obs.connected(&name, Side::Source, true);
        let o = Some(obs.clone());
        let end = Some((name.as_str(), Side::Target));
        let Some(target) = connect_observed(&config, &flow.target, &shutdown, o, end).await? else {
            return Ok(());
        };
        obs.connected(&name, Side::Target, true);
        let rf = config
            .clusters
            .get(&flow.target)
            .map(|c| c.replication_factor)
            .unwrap_or(-1);
        // Topic configs and ACLs: a control task beside the flow, ended with it.
        let sync = topic_sync::TopicSync::new(
            flow.clone(),
            source.clone(),
            target.clone(),
            own.clone(),
            obs.clone(),
        )
        .map(|s| tokio::spawn(s.run(shutdown.clone()).in_current_span()));
        let mut f = flow::Flow::new(flow, source, target, reverse, rf, tx)
            .with_observer(obs.clone())
            .with_mirror_hops(mirror_hops(&config));
        if let Some(own) = &own {
            f = f.with_ownership(own.clone());
        }
        // The flow's loop takes a receiver: one that also turns true on a closed channel.
        let result = f.run(shutdown.clone()).await;
        if let Some(sync) = sync {
            sync.abort();
            let _ = sync.await;
        }
        result
    }
}

/// Every mirror flow of `config` as the mirror loop check sees it, disabled ones too (the mirror
/// topics they created are still there).
fn mirror_hops(config: &Config) -> Vec<MirrorHop> {
    config
        .flows
        .iter()
        .filter(|f| f.mode == FlowMode::Mirror)
        .map(|f| MirrorHop {
            source: f.source.clone(),
            target: f.target.clone(),
            prefix: f.prefix.clone(),
        })
        .collect()
}

/// Serves the status page, `/metrics` and the REST API until shutdown; returns the address.
fn serve_http(
    listener: Listener,
    observer: &Arc<Observer>,
    status: &BTreeMap<String, watch::Receiver<FlowStatus>>,
    config: &Arc<Config>,
    shutdown: &Shutdown,
) -> SocketAddr {
    let mut server = observe::http::Server::new(observer.clone(), status.clone());
    if let Some(token) = listener.token {
        server = server.with_authorize(observe::http::token_gate(token));
    }
    let writes = listener.write_token.is_some();
    if let Some(token) = listener.write_token {
        server = server.with_write_api(observe::write_api::WriteApi::new(token, config.clone()));
    }
    let scheme = if listener.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let tls = listener.tls.map(tokio_rustls::TlsAcceptor::from);
    tokio::spawn(Arc::new(server).run(listener.socket, tls, shutdown.clone()));
    tracing::info!(
        "status page, /metrics and the REST API at {scheme}://{}/ (write API {})",
        listener.local,
        if writes { "on" } else { "off" }
    );
    listener.local
}

/// Waits for every flow, then for the group memberships (they leave once their flows
/// stopped); the first flow error, if any.
async fn join_flows(
    mut tasks: JoinSet<Result<()>>,
    mut members: JoinSet<Result<()>>,
) -> Result<()> {
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
}
