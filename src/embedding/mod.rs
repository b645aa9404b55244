//! Embedding strait: replication flows running inside the caller's own tokio program.
//!
//! [`Replicator::builder`] takes a validated [`Config`] (loaded from a file with
//! [`ReplicatorBuilder::from_file`], or built in code and checked with
//! [`crate::config::validate`]); [`ReplicatorBuilder::start`] starts the flows on the current
//! tokio runtime and returns a [`Replicator`]: its [`status`](Replicator::status) is the same
//! document as the REST API's `/api/status`, [`subscribe`](Replicator::subscribe) follows its
//! changes, [`metrics`](Replicator::metrics) reads the series `/metrics` serves (without a
//! listener), and [`shutdown`](Replicator::shutdown) stops every flow after persisting what
//! the target acknowledged.
//!
//! Every fallible step returns a [`ReplicatorError`], whose variants tell apart an invalid
//! configuration (with the key), an unknown flow name, an HTTP listener that cannot be set up,
//! a cluster that refused strait's credentials, a cluster's error that stopped a flow, and a
//! failed shutdown.
//!
//! ```no_run
//! # async fn gateway() -> Result<(), strait::ReplicatorError> {
//! let replicator = strait::Replicator::builder_from_file("strait.toml")?
//!     .only_flow("edge->central")
//!     .start()?;
//! let mut changes = replicator.subscribe();
//! changes.changed().await.ok();
//! let status = replicator.status();
//! println!("ready: {}, flows: {}", status.ready, status.flows.len());
//! replicator.shutdown().await?;
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

mod error;
mod metrics;

pub use error::ReplicatorError;
pub use metrics::{Metrics, MetricsSnapshot};

use crate::config::{self, Config};
use crate::observe::api::StatusDoc;
use crate::observe::Observer;
use crate::replicate::status::FlowStatus;
use crate::Shutdown;

/// How often the status is rebuilt when no flow reported a change (connections coming and
/// going are noticed this late at most).
const STATUS_TICK: Duration = Duration::from_secs(1);

/// Builds a [`Replicator`] from a configuration.
#[derive(Debug, Clone)]
#[must_use]
pub struct ReplicatorBuilder {
    config: Config,
    only: Vec<String>,
}

impl ReplicatorBuilder {
    /// A builder for `config` (every enabled flow, unless [`only_flow`](Self::only_flow)
    /// narrows it).
    pub fn new(config: Config) -> ReplicatorBuilder {
        ReplicatorBuilder {
            config,
            only: Vec::new(),
        }
    }

    /// A builder for the configuration file at `path` (TOML or MirrorMaker 2's
    /// `mm2.properties`), loaded and validated.
    pub fn from_file(path: impl AsRef<Path>) -> Result<ReplicatorBuilder, ReplicatorError> {
        let config = config::load(path.as_ref())?;
        Ok(ReplicatorBuilder::new(config))
    }

    /// Runs only the flow named `name` (`source->target`); call again to add more.
    pub fn only_flow(mut self, name: &str) -> ReplicatorBuilder {
        self.only.push(name.to_string());
        self
    }

    /// Serves the status page, `/metrics` and the REST API on `addr` (for example
    /// `127.0.0.1:0`; [`Replicator::http_addr`] tells the port chosen).
    pub fn http(mut self, addr: &str) -> ReplicatorBuilder {
        self.config.http = Some(config::HttpSettings::new(addr));
        self
    }

    /// Starts the flows on the current tokio runtime. Fails at once, starting nothing, if the
    /// configuration does not validate, names an unknown flow, or the HTTP address cannot be
    /// bound; clusters that cannot be reached yet are retried in the background (the status
    /// shows them as not connected).
    pub fn start(self) -> Result<Replicator, ReplicatorError> {
        let mut config = self.config;
        if !self.only.is_empty() {
            for name in &self.only {
                if !config.flows.iter().any(|f| &f.name() == name) {
                    return Err(ReplicatorError::UnknownFlow {
                        origin: config.origin.clone(),
                        name: name.clone(),
                        known: config.flows.iter().map(|f| f.name()).collect(),
                    });
                }
            }
            for f in &mut config.flows {
                f.enabled = f.enabled && self.only.contains(&f.name());
            }
        }
        config::validate(&config)?;
        let (stop, stop_rx) = Shutdown::channel();
        let engine = crate::replicate::spawn(config, stop_rx.clone())?;
        let flows: Vec<watch::Receiver<FlowStatus>> = engine.status.values().cloned().collect();
        let observer = engine.observer.clone();
        let first = observer.status_doc(&current(&flows), crate::replicate::store::now_ms(), false);
        let (status_tx, status) = watch::channel(first);
        let metrics = Metrics::new(observer.clone(), flows.clone());
        tokio::spawn(follow_status(flows, observer, status_tx, stop_rx));
        Ok(Replicator {
            stop,
            metrics,
            done: Some(engine.done),
            status,
            http: engine.http,
        })
    }
}

/// Replication flows running in this process. Dropping it stops the flows as
/// [`shutdown`](Replicator::shutdown) does (requests in flight answered, progress persisted,
/// the group left), without waiting for them or reporting their errors: call `shutdown` to
/// wait and to know how they ended.
#[derive(Debug)]
#[must_use = "dropping a Replicator stops its flows"]
pub struct Replicator {
    stop: watch::Sender<bool>,
    /// The engine's task; taken by `shutdown`.
    done: Option<tokio::task::JoinHandle<crate::error::Result<()>>>,
    status: watch::Receiver<StatusDoc>,
    metrics: Metrics,
    http: Option<SocketAddr>,
}

impl Replicator {
    /// A builder for `config`.
    pub fn builder(config: Config) -> ReplicatorBuilder {
        ReplicatorBuilder::new(config)
    }

    /// A builder for the configuration file at `path`.
    pub fn builder_from_file(path: impl AsRef<Path>) -> Result<ReplicatorBuilder, ReplicatorError> {
        ReplicatorBuilder::from_file(path)
    }

    /// The status now: every flow, its partitions, positions, lag and health, and whether
    /// everything is ready (what `/ready` answers).
    pub fn status(&self) -> StatusDoc {
        self.status.borrow().clone()
    }

    /// Follows the status: the receiver wakes when a flow's partitions, positions, health or
    /// connections change.
    pub fn subscribe(&self) -> watch::Receiver<StatusDoc> {
        self.status.clone()
    }

    /// The series strait records, as `/metrics` serves them, without an HTTP listener:
    /// [`Metrics::render_prometheus`] for the text, [`Metrics::snapshot`] for typed values.
    pub fn metrics(&self) -> Metrics {
        self.metrics.clone()
    }

    /// Where the status page, `/metrics` and the REST API are served, if asked for.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http
    }

    /// Whether every flow has ended by itself (for example a refused password).
    pub fn is_finished(&self) -> bool {
        self.done.as_ref().is_none_or(|d| d.is_finished())
    }

    /// Stops every flow: requests in flight are answered, what the target acknowledged is
    /// persisted, and the instance leaves its group. Returns the first flow's error, if any
    /// ([`ReplicatorError::Auth`] or [`ReplicatorError::Cluster`]), or
    /// [`ReplicatorError::Shutdown`] if the task running the flows failed.
    pub async fn shutdown(mut self) -> Result<(), ReplicatorError> {
        let _ = self.stop.send(true);
        let Some(done) = self.done.take() else {
            return Ok(());
        };
        match done.await {
            Ok(result) => result.map_err(ReplicatorError::from_flow),
            Err(e) => Err(ReplicatorError::Shutdown(format!(
                "engine task failed: {e}"
            ))),
        }
    }
}

impl Drop for Replicator {
    /// Tells every flow to stop. Without this, the tasks would see the stop channel closed
    /// with its value still `false`: flows would go on replicating and loops waiting on the
    /// channel would wake at once, again and again.
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn current(flows: &[watch::Receiver<FlowStatus>]) -> Vec<FlowStatus> {
    flows.iter().map(|r| r.borrow().clone()).collect()
}

/// Rebuilds the status document when a flow reports a change (and every [`STATUS_TICK`]),
/// publishing it only when something other than the clock moved.
async fn follow_status(
    flows: Vec<watch::Receiver<FlowStatus>>,
    observer: Arc<Observer>,
    tx: watch::Sender<StatusDoc>,
    stop: Shutdown,
) {
    let changed = Arc::new(Notify::new());
    for mut rx in flows.iter().cloned() {
        let changed = changed.clone();
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                changed.notify_one();
            }
        });
    }
    loop {
        let stopping = stop.is_stopped();
        let doc = observer.status_doc(&current(&flows), crate::replicate::store::now_ms(), false);
        tx.send_if_modified(|old| {
            let moved = old.ready != doc.ready || old.flows != doc.flows;
            *old = doc;
            moved
        });
        if stopping || tx.is_closed() {
            return;
        }
        tokio::select! {
            _ = changed.notified() => {}
            _ = tokio::time::sleep(STATUS_TICK) => {}
            _ = stop.stopped() => {}
        }
    }
}
