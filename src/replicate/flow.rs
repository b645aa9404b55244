//! One replication flow (`source -> target`): the shell around its data path.
//!
//! The data path itself ([`super::path::DataPath`]) is a state machine without I/O: it says
//! which Fetch and Produce requests to write and takes in their answers. This task writes those
//! requests, waits for whichever answer comes first, and feeds it back; lookups the data path
//! needs (leaders, connections, log starts) run beside it as tasks of their own, so a slow or
//! unreachable broker never holds up the answers of the others. The control plane of the flow
//! (topic selection and creation, taking partitions up, mirror commands, ownership, progress
//! records, offset syncs) runs between answers; heartbeats, checkpoints and group offset sync
//! run in the duties task ([`super::duties`]).

mod mirror_ctl;
mod ownership;
mod progress_out;
mod resume;
mod status;
mod topics;

use topics::recreated_message;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use super::duties::{Duties, PositionRequests, Positions, PositionsHandle};
use super::groups;
use super::lists::{self, ListKind, Lists};
use super::membership::Ownership;
use super::mirrors::{self, ControlView};
use super::path::timers::TimerTable;
use super::path::{
    first_source_offset, record_acked, DataPath, Event, FetchOrder, Missing, PartKey, PartStart,
    PartState, PathSettings, RequestId, Topology, MAX_IN_FLIGHT,
};
use super::progress::{self, Stored, PROGRESS_TOPIC};
use super::status::{FlowStatus, MemberStatus, MirrorStatus, PartitionStatus};
use super::store;
use crate::assignment::WorkItem;
use crate::client::{Cluster, PendingFetch, PendingProduce, EARLIEST, LATEST};
use crate::config::{FlowConfig, FlowMode, NamingPolicy};
use crate::error::{Error, Result};
use crate::filter::{topic_should_replicate, NameFilter, TopicDecision};
use crate::forward::ProducerIdentity;
use crate::mirror::{offsets_mode, GroupFilters, MirrorRecord, MirrorState, OffsetsMode};
use crate::mm2;
use crate::naming::ReplicationPolicy;
use crate::observe::{Observer, Side};
use crate::offsets::{OffsetMap, Translation};
use crate::protocol::error_code;
use crate::protocol::fetch::{FetchLimits, FetchPartitionSpec, FetchedPartition};
use crate::protocol::fetch_session::FetchSession;
use crate::protocol::produce::ProduceSettings;

/// Configs whose effective value is copied even when it is the source broker's default: what
/// records the remote topic keeps, how large they may be and whose timestamps they carry must
/// be the source topic's, whatever the target brokers' defaults are.
pub const EFFECTIVE_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "max.message.bytes",
    "message.timestamp.type",
];

/// Topic configs copied to a remote topic when the source topic sets them.
pub const REPLICABLE_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "max.message.bytes",
    "compression.type",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "min.cleanable.dirty.ratio",
    "message.timestamp.type",
    "message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms",
    "segment.bytes",
    "segment.ms",
];

/// A running flow.
pub struct Flow {
    cfg: FlowConfig,
    source: Arc<Cluster>,
    target: Arc<Cluster>,
    /// Whether the reverse flow (target -> source) is configured; if not, this flow also emits
    /// the reverse pair's heartbeats into the source, as MirrorMaker 2 does for disabled flows.
    reverse_configured: bool,
    replication_factor: i16,
    policy: ReplicationPolicy,
    /// The data path: partitions, their queues and the requests in flight.
    path: DataPath,
    /// Produce requests written and not yet answered, oldest first.
    produces: VecDeque<(RequestId, PendingProduce)>,
    /// Fetch requests written and not yet answered (at most one per source leader).
    fetches: Vec<(RequestId, i32, PendingFetch)>,
    /// Fetch sessions (KIP-227) with the source brokers, by node id.
    fetch_sessions: HashMap<i32, FetchSession>,
    /// Answers of the lookups running beside the data path.
    background: (
        mpsc::UnboundedSender<Background>,
        mpsc::UnboundedReceiver<Background>,
    ),
    /// Whether a lookup of leaders and connections is running.
    looking_up: bool,
    /// Whether a background write of progress records, of offset syncs, is out.
    writing: (bool, bool),
    stored_progress: HashMap<String, Stored>,
    /// Partitions dropped to be taken up again and not yet back: topics are refreshed every
    /// [`RESYNC_DELAY`] until they are.
    retake: std::collections::BTreeSet<PartKey>,
    producer: Option<crate::forward::ProducerIdentity>,
    topic_lists: Lists,
    reported: HashMap<String, String>,
    status: watch::Sender<FlowStatus>,
    /// The duties task's requests for the acknowledged positions, answered between rounds.
    position_requests: Option<PositionRequests>,
    /// Mirror flows only: mirror states, commands and consumer offset sync.
    mirror: Option<MirrorCtl>,
    /// Scale-out: the units of work this instance owns (`None`: everything).
    ownership: Option<Arc<Ownership>>,
    /// Units of this flow owned, as last read from `ownership`.
    assigned: std::collections::BTreeSet<WorkItem>,
    /// `ownership`'s lost epoch last seen.
    lost_seen: u64,
    /// Units this flow found on the source at the last topic refresh.
    wanted_items: std::collections::BTreeSet<WorkItem>,
    /// When both clusters last answered, and the last problem reaching them.
    health: (Instant, Option<String>),
    next_health: Instant,
    /// Ownership version taken up, number of partitions and time of the last report.
    ownership_seen: (u64, usize, Instant),
    /// Membership version and the members as the status shows them.
    members_cache: (u64, Vec<MemberStatus>),
    /// Where metrics go.
    obs: Arc<Observer>,
    /// A partition was dropped to be taken up again: refresh topics at the next round.
    refresh_soon: bool,
    /// The control plane's deadlines.
    timers: TimerTable<Due>,
    /// `takeover_from = "mm2"`: MirrorMaker 2's committed offsets, read at the first take-over.
    takeover: Option<super::takeover::Mm2Offsets>,
}

/// The control plane's deadlines (the data path has its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// Look for new topics and partitions.
    Refresh,
    /// Write progress records.
    Flush,
    /// Write MirrorMaker 2 offset syncs.
    OffsetSync,
    /// Publish the status.
    Status,
}

/// What a task beside the data path reports.
enum Background {
    /// Leaders and connections were looked up; `gone` when a target topic was not found.
    LookedUp { gone: bool },
    /// The log start of a partition whose position was out of range.
    LogStart {
        key: PartKey,
        at: i64,
        start: std::result::Result<i64, String>,
    },
    /// A write of progress records or offset syncs landed or failed.
    Written {
        what: progress_out::Written,
        result: std::result::Result<(), String>,
    },
}

/// What ended the wait of a round.
enum Wake {
    Answer(Answer),
    Background(Background),
    Time,
}

/// Which answer [`Flow::next_answer`] saw first.
enum Answer {
    /// The oldest Produce request's.
    Produce,
    /// That of the outstanding Fetch at this index of `fetches`.
    Fetch(usize),
}

/// How often a running flow publishes its status (the REST API and status page read it).
const STATUS_EVERY: Duration = Duration::from_millis(100);

/// Longest the loop waits without an answer before it looks at the control plane again.
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// The mirror side of a flow (`mode = "mirror"`).
struct MirrorCtl {
    link: String,
    /// Last view of the control topic.
    view: ControlView,
    /// Control topic log end when `view` was read (-1: never read).
    control_seen: i64,
    next_tick: Instant,
    /// Settings version applied (0: the configuration file's).
    applied_version: i64,
    sync_enable: bool,
    sync_every: Duration,
    filters: GroupFilters,
    next_sync: Instant,
}

/// How often a mirror flow looks at the control topic and checks for foreign writes.
const MIRROR_TICK: Duration = Duration::from_millis(500);

/// How long a partition dropped for a fresh start waits: requests still on their way land
/// first, and a refusal the log does not explain is not retried in a tight loop.
const RESYNC_DELAY: Duration = Duration::from_secs(1);

/// The clients' caches as the data path's [`Topology`].
struct ClientView<'a> {
    source: &'a Cluster,
    target: &'a Cluster,
}

impl Topology for ClientView<'_> {
    fn source_leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        self.source.cached_leader(topic, partition)
    }
    fn source_topic_id(&self, topic: &str) -> Option<[u8; 16]> {
        self.source.cached_topic_id(topic)
    }
    fn source_connected(&self, node: i32) -> bool {
        self.source.open_data_connection(node).is_some()
    }
    fn target_leader(&self, topic: &str, partition: i32) -> Option<i32> {
        self.target.cached_leader(topic, partition).map(|l| l.0)
    }
    fn target_connection(&self, node: i32) -> Option<u64> {
        self.target.open_data_connection(node)
    }
}

impl Flow {
    /// A flow between two connected clusters.
    pub fn new(
        cfg: FlowConfig,
        source: Arc<Cluster>,
        target: Arc<Cluster>,
        reverse_configured: bool,
        replication_factor: i16,
        status: watch::Sender<FlowStatus>,
    ) -> Flow {
        let policy = match &cfg.naming {
            NamingPolicy::Default { separator } => ReplicationPolicy::Default {
                separator: separator.clone(),
            },
            NamingPolicy::Identity => ReplicationPolicy::Identity,
        };
        let topic_lists = Lists {
            include: cfg.topics.clone(),
            exclude: cfg.topics_exclude.clone(),
        };
        let mirror = (cfg.mode == FlowMode::Mirror).then(|| MirrorCtl {
            link: cfg.link_name(),
            view: ControlView::default(),
            control_seen: -1,
            next_tick: Instant::now(),
            applied_version: 0,
            sync_enable: cfg.consumer_offset_sync,
            sync_every: cfg.consumer_offset_sync_interval,
            filters: cfg.consumer_offset_group_filters.clone(),
            next_sync: Instant::now() + cfg.consumer_offset_sync_interval,
        });
        let obs = Arc::new(Observer::new());
        let path = DataPath::new(Self::path_settings(&cfg, &source, &target), obs.clone());
        Flow {
            cfg,
            source,
            target,
            reverse_configured,
            replication_factor,
            policy,
            path,
            produces: VecDeque::new(),
            fetches: Vec::new(),
            fetch_sessions: HashMap::new(),
            background: mpsc::unbounded_channel(),
            looking_up: false,
            writing: (false, false),
            stored_progress: HashMap::new(),
            retake: Default::default(),
            producer: None,
            topic_lists,
            reported: HashMap::new(),
            status,
            position_requests: None,
            mirror,
            ownership: None,
            assigned: Default::default(),
            lost_seen: 0,
            wanted_items: Default::default(),
            health: (Instant::now(), None),
            next_health: Instant::now(),
            members_cache: (0, Vec::new()),
            ownership_seen: (u64::MAX, 0, Instant::now()),
            obs,
            refresh_soon: false,
            timers: TimerTable::default(),
            takeover: None,
        }
    }

    fn path_settings(cfg: &FlowConfig, source: &Cluster, target: &Cluster) -> PathSettings {
        PathSettings {
            flow: cfg.name(),
            source: source.name().to_string(),
            target: target.name().to_string(),
            buffer_bytes: cfg.buffer_bytes,
            fetch_max_bytes: cfg.fetch_max_bytes,
            fetch_max_wait: cfg.fetch_max_wait,
            mirrored: cfg.mode == FlowMode::Mirror,
            max_bytes_per_second: cfg.max_bytes_per_second,
            recompress: cfg.recompress,
        }
    }

    /// Shares the work with other instances: only units `ownership` assigns are run.
    pub fn with_ownership(mut self, ownership: Arc<Ownership>) -> Flow {
        self.ownership = Some(ownership);
        self
    }

    fn partition_item(&self, topic: &str, partition: i32) -> WorkItem {
        if self.mirror.is_some() {
            WorkItem::Flow { flow: self.name() }
        } else {
            WorkItem::Partition {
                flow: self.name(),
                topic: topic.to_string(),
                partition,
            }
        }
    }

    fn duties_item(&self) -> WorkItem {
        if self.mirror.is_some() {
            WorkItem::Flow { flow: self.name() }
        } else {
            WorkItem::Duties { flow: self.name() }
        }
    }

    /// Whether this instance runs the partition.
    fn owns_partition(&self, topic: &str, partition: i32) -> bool {
        self.ownership.is_none()
            || self
                .assigned
                .contains(&self.partition_item(topic, partition))
    }

    /// Whether this instance does the flow-wide duties.
    fn owns_duties(&self) -> bool {
        self.ownership.is_none() || self.assigned.contains(&self.duties_item())
    }

    /// Whether writing into the target is allowed now (the membership lease is valid).
    fn may_write(&self) -> bool {
        self.ownership.as_ref().is_none_or(|o| o.may_write())
    }

    /// Whether this flow writes MirrorMaker 2's heartbeats, checkpoints and offset syncs
    /// (replicate flows; mirror flows keep consumer offsets in sync directly).
    fn mm2_records(&self) -> bool {
        self.mirror.is_none()
    }

    /// Reports metrics and facts to `obs` (by default to an observer nobody reads).
    pub fn with_observer(mut self, obs: Arc<Observer>) -> Flow {
        self.path = DataPath::new(
            Self::path_settings(&self.cfg, &self.source, &self.target),
            obs.clone(),
        );
        self.obs = obs;
        self
    }

    fn name(&self) -> String {
        self.cfg.name()
    }

    /// Logs a problem once per key until it changes.
    fn report(&mut self, key: &str, msg: String) {
        if self.reported.get(key) != Some(&msg) {
            tracing::error!(flow = %self.name(), "{msg}");
            self.reported.insert(key.to_string(), msg);
        }
    }

    /// Runs until `shutdown` turns true, then persists progress and returns.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<()> {
        let name = self.name();
        tracing::info!(flow = %name, "starting");
        // Setup, retried until it works or we are told to stop.
        loop {
            match self.setup().await {
                Ok(()) => break,
                Err(e) => {
                    tracing::error!(flow = %name, "setup failed, retrying: {e}");
                    self.obs.error(&name, "setup");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                        _ = shutdown.changed() => return Ok(()),
                    }
                }
            }
        }
        let duties = self.start_duties(&shutdown);
        let now = Instant::now();
        self.timers.set(Due::Refresh, now);
        self.timers.set(Due::Flush, now + Duration::from_secs(1));
        self.timers.set(Due::Status, now);
        self.timers.set(
            Due::OffsetSync,
            now + self.cfg.offset_sync_interval.min(Duration::from_secs(5)),
        );
        while !*shutdown.borrow() {
            self.control_round().await;
            tracing::trace!(flow = %name, "round");
            let now = Instant::now();
            self.path.handle_timeout(now);
            self.write_fetches(now).await;
            self.write_produces().await;
            self.look_up_missing();
            self.take_events().await;
            // Then whichever comes first: the oldest Produce answer, any Fetch answer, a
            // lookup done beside the data path, a deadline. Neither side waits for the other,
            // so the target always has the next request queued. A stop does not wait for a
            // long poll: outstanding Fetch answers are simply not taken in.
            let wake = [self.path.poll_timeout(), self.timers.next()]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(now + IDLE_WAIT)
                .min(now + IDLE_WAIT);
            let woke = tokio::select! {
                biased;
                a = Self::next_answer(&mut self.produces, &mut self.fetches) => Wake::Answer(a),
                Some(b) = self.background.1.recv() => Wake::Background(b),
                _ = tokio::time::sleep_until(wake.into()) => Wake::Time,
                Ok(()) = shutdown.changed() => continue,
            };
            match woke {
                Wake::Answer(a) => self.take_answer(a).await,
                Wake::Background(b) => self.take_background(b),
                Wake::Time => {}
            }
            self.control_after_round();
        }
        self.publish_status();
        // Stop: answers to requests in flight are awaited and applied; queued batches are
        // abandoned without advancing progress; the acknowledged position is persisted.
        self.drain_produces().await;
        let mut attempt = 0;
        while let Err(e) = self.flush_progress().await {
            if !self.may_write() {
                break;
            }
            attempt += 1;
            if attempt == 5 {
                return Err(e);
            }
            tracing::warn!(flow = %name, "progress write failed, retrying: {e}");
            tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
        }
        self.position_requests = None; // the duties task sees the data path has stopped
        if let Some(d) = duties {
            let _ = d.await;
        }
        let t = self.path.traffic;
        tracing::info!(
            flow = %name,
            rounds = t.rounds,
            fetches = t.fetches,
            incremental_fetches = t.incremental_fetches,
            fetched_batches = t.fetched_batches,
            fetched_bytes = t.fetched_bytes,
            cut_bytes = t.cut_bytes,
            produces = t.produces,
            produced_batches = t.produced_batches,
            produced_bytes = t.produced_bytes,
            recompressed_batches = t.recompressed_batches,
            recompressed_from_bytes = t.recompressed_bytes.0,
            recompressed_to_bytes = t.recompressed_bytes.1,
            "stopped"
        );
        Ok(())
    }

    /// The control plane's work before the data path's: ownership, topic refresh, mirror
    /// upkeep, the duties task's position requests.
    async fn control_round(&mut self) {
        let name = self.name();
        if self.ownership.is_some() {
            self.check_health().await;
            if self.sync_ownership().await {
                self.timers.set(Due::Refresh, Instant::now()); // take up new units now
            }
        }
        let now = Instant::now();
        if std::mem::take(&mut self.refresh_soon) {
            self.timers.set_earliest(Due::Refresh, now + RESYNC_DELAY);
        }
        if self.timers.get(Due::Refresh).is_some_and(|at| at <= now) {
            tracing::debug!(flow = %name, "refreshing topics");
            match self.refresh_topics().await {
                Ok(()) => {
                    self.obs.connected(&name, Side::Source, true);
                    self.obs.connected(&name, Side::Target, true);
                }
                Err(e) => {
                    tracing::error!(flow = %name, "topic refresh failed: {e}");
                    self.obs.error(&name, "topic_refresh");
                    self.report_unreachable(&e);
                }
            }
            self.timers
                .set(Due::Refresh, now + self.cfg.refresh_topics_interval);
            // Partitions dropped for a fresh start that could not be taken up yet (the
            // target or the source not answering) are tried again soon, not at the next
            // regular refresh.
            let retake: std::collections::BTreeSet<PartKey> = self
                .retake
                .iter()
                .filter(|k| !self.path.parts.contains_key(*k) && self.owns_partition(&k.0, k.1))
                .cloned()
                .collect();
            self.retake = retake;
            if !self.retake.is_empty() {
                self.timers.set(Due::Refresh, now + RESYNC_DELAY * 2);
            }
            // Partitions may have started or stopped: show it at the end of this round.
            self.timers.set(Due::Status, now);
            self.path.replan();
        }
        if self.mirror.is_some() && self.owns_duties() && self.may_write() {
            if let Err(e) = self.mirror_tick().await {
                tracing::warn!(flow = %name, "mirror upkeep failed: {e}");
            }
        }
        self.path.set_held(self.held_topics());
        self.path.set_may_write(self.may_write());
        self.answer_position_requests();
    }

    /// The control plane's work after an answer: progress records, offset syncs, status.
    fn control_after_round(&mut self) {
        let now = Instant::now();
        // Progress records and offset syncs are written beside the data path.
        if self.timers.get(Due::Flush).is_some_and(|at| at <= now) {
            self.start_flush_progress();
            self.timers.set(Due::Flush, now + Duration::from_secs(1));
        }
        if self.timers.get(Due::OffsetSync).is_some_and(|at| at <= now) {
            if self.cfg.emit_offset_syncs && self.mm2_records() && self.may_write() {
                self.start_offset_syncs();
            }
            self.timers
                .set(Due::OffsetSync, now + self.cfg.offset_sync_interval);
        }
        // The status copies every partition's state: at most every STATUS_EVERY, not every
        // round (a round can be a few hundred microseconds).
        if self
            .timers
            .get(Due::Status)
            .is_some_and(|at| at <= Instant::now())
        {
            self.publish_status();
            self.timers.set(Due::Status, Instant::now() + STATUS_EVERY);
        }
    }

    /// Writes the Fetch requests the data path plans. A leader whose request cannot be written
    /// is told to the data path (its fetch session starts over); the others still go.
    async fn write_fetches(&mut self, now: Instant) {
        let name = self.name();
        let view = ClientView {
            source: &self.source,
            target: &self.target,
        };
        let orders = self.path.poll_fetch(now, &view);
        let mut failed = None;
        let mut sent = false;
        for FetchOrder {
            id,
            leader,
            specs,
            limits,
        } in orders
        {
            let session = self.fetch_sessions.entry(leader).or_default();
            let incremental = session.id() != 0;
            match self
                .source
                .fetch_start(leader, session, &specs, &limits)
                .await
            {
                Ok(p) => {
                    sent = true;
                    self.fetches.push((id, leader, p));
                    self.path.traffic.incremental_fetches += u64::from(incremental);
                }
                Err(e) => {
                    tracing::warn!(flow = %name, "fetch round failed: {e}");
                    self.path.handle_fetch_unsent(now, id);
                    failed = Some(e.to_string());
                }
            }
        }
        match failed {
            Some(problem) => {
                self.obs.error(&name, "fetch");
                self.obs.disconnected(&name, Side::Source, problem);
            }
            // Only a request that went out says the source answers (with no partition to
            // fetch, the control plane's checks speak for it).
            None if sent => self.obs.connected(&name, Side::Source, true),
            None => {}
        }
    }

    /// Writes the Produce requests the data path plans, up to [`MAX_IN_FLIGHT`].
    async fn write_produces(&mut self) {
        let name = self.name();
        let settings = ProduceSettings {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
        };
        while self.path.in_flight_len() < MAX_IN_FLIGHT {
            let view = ClientView {
                source: &self.source,
                target: &self.target,
            };
            let orders = self.path.poll_produce(&view);
            if orders.is_empty() {
                return;
            }
            let mut failed = None;
            for order in orders {
                match self
                    .target
                    .produce_start(order.leader, &settings, &order.topics)
                    .await
                {
                    Ok(pending) => {
                        self.path
                            .handle_produce_sent(order.id, pending.connection());
                        self.produces.push_back((order.id, pending));
                    }
                    Err(e) => {
                        tracing::warn!(flow = %name, "produce failed: {e}");
                        self.path.handle_produce_unsent(order.id);
                        failed = Some(e.to_string());
                    }
                }
            }
            if let Some(problem) = failed {
                self.obs.error(&name, "produce");
                self.obs.disconnected(&name, Side::Target, problem);
                return;
            }
            self.obs.connected(&name, Side::Target, true);
        }
    }

    /// Looks up, beside the data path, the leaders and connections it did not find.
    fn look_up_missing(&mut self) {
        if self.looking_up {
            return;
        }
        let missing = self.path.take_missing();
        if missing.is_empty() {
            return;
        }
        self.looking_up = true;
        let (source, target) = (self.source.clone(), self.target.clone());
        let done = self.background.0.clone();
        let name = self.name();
        tokio::spawn(async move {
            let gone = look_up(&name, &source, &target, missing).await;
            let _ = done.send(Background::LookedUp { gone });
        });
    }

    /// Acts on what the data path reported.
    async fn take_events(&mut self) {
        while let Some(event) = self.path.poll_event() {
            match event {
                Event::LogStartWanted { key, at } => {
                    let source = self.source.clone();
                    let done = self.background.0.clone();
                    tokio::spawn(async move {
                        let start = match source.list_offsets(&key.0, &[key.1], EARLIEST).await {
                            Ok(v) => v
                                .first()
                                .map(|x| x.1)
                                .ok_or_else(|| "ListOffsets returned no log start".to_string()),
                            Err(e) => Err(e.to_string()),
                        };
                        let _ = done.send(Background::LogStart { key, at, start });
                    });
                }
                Event::BeyondEnd(k) => self.stop_beyond_end(&k).await,
                Event::Recreated { key, was, now } => self.stop_recreated(&key, was, now),
                Event::Diverged {
                    topic,
                    partition,
                    why,
                } => {
                    if let Err(e) = self.mark_diverged(&topic, partition, why).await {
                        tracing::warn!(flow = %self.name(), %topic, partition, "cannot record the stop in the control topic: {e}");
                    }
                }
                Event::Retake { key, stored } => {
                    let pk = progress::key(self.source.name(), &key.0, key.1);
                    self.stored_progress.insert(pk, stored);
                    self.retake.insert(key);
                    self.refresh_soon = true;
                }
                Event::RefreshTopics => self.refresh_soon = true,
                Event::InvalidateSource(t) => self.source.invalidate(&t),
                Event::InvalidateTarget(t) => self.target.invalidate(&t),
            }
        }
    }

    /// Takes in an answer [`Flow::next_answer`] saw.
    async fn take_answer(&mut self, answer: Answer) {
        match answer {
            Answer::Produce => self.receive_one().await,
            Answer::Fetch(i) => {
                let (id, leader, pending) = self.fetches.remove(i);
                let session = self.fetch_sessions.entry(leader).or_default();
                let answer = pending
                    .finish(session)
                    .await
                    .map(|r| r.partitions)
                    .map_err(|e| e.to_string());
                self.path.handle_fetch(Instant::now(), id, answer);
            }
        }
    }

    /// Takes in what a task beside the data path found.
    fn take_background(&mut self, b: Background) {
        match b {
            Background::LookedUp { gone } => {
                self.looking_up = false;
                self.refresh_soon |= gone;
                self.path.replan();
            }
            Background::LogStart { key, at, start } => self.path.handle_log_start(&key, at, start),
            Background::Written { what, result } => self.take_written(what, result),
        }
    }

    /// Waits for the oldest Produce answer and applies it.
    async fn receive_one(&mut self) {
        let Some((id, pending)) = self.produces.pop_front() else {
            return;
        };
        let answer = pending.finish().await.map_err(|e| e.to_string());
        self.path.handle_produce(id, answer);
        self.take_events().await;
    }

    /// Waits for every Produce answer and applies them.
    async fn drain_produces(&mut self) {
        while !self.produces.is_empty() {
            self.receive_one().await;
        }
    }

    /// Drops every partition and the requests in flight, applying no answer (the membership
    /// was lost).
    fn drop_everything(&mut self) {
        self.path.clear();
        self.produces.clear();
        self.retake.clear();
    }

    /// Waits for the first of: the oldest Produce answer, any outstanding Fetch answer (for
    /// ever when nothing is outstanding). Takes nothing in (the caller does), so it is
    /// cancel-safe.
    async fn next_answer(
        produces: &mut VecDeque<(RequestId, PendingProduce)>,
        fetches: &mut [(RequestId, i32, PendingFetch)],
    ) -> Answer {
        let produce = async {
            match produces.front_mut() {
                Some(oldest) => oldest.1.ready().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = produce => Answer::Produce,
            i = any_ready(fetches) => Answer::Fetch(i),
        }
    }
    /// Starts the flow's duties (heartbeats, checkpoints, group offset sync) as a task of
    /// their own, for replicate flows that write MirrorMaker 2 records.
    fn start_duties(
        &mut self,
        shutdown: &watch::Receiver<bool>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let wanted =
            self.cfg.emit_heartbeats || self.cfg.emit_checkpoints || self.cfg.sync_group_offsets;
        if !self.mm2_records() || !wanted {
            return None;
        }
        let (handle, requests) = PositionsHandle::channel();
        self.position_requests = Some(requests);
        let duties = Duties::new(
            self.cfg.clone(),
            self.source.clone(),
            self.target.clone(),
            self.reverse_configured,
            self.replication_factor,
            self.policy.clone(),
            self.ownership.clone(),
            self.obs.clone(),
            handle,
        );
        Some(tokio::spawn(duties.run(shutdown.clone())))
    }

    /// Answers the duties task's requests for the acknowledged positions (a copy of each
    /// running partition's offset map), without waiting.
    fn answer_position_requests(&mut self) {
        let Some(rx) = self.position_requests.as_mut() else {
            return;
        };
        while let Ok(reply) = rx.try_recv() {
            let positions: Positions = self
                .path
                .parts
                .values()
                .map(|st| {
                    (
                        (st.source_topic.to_string(), st.partition),
                        (st.target_topic.clone(), st.map.clone()),
                    )
                })
                .collect();
            let _ = reply.send(positions);
        }
    }

    /// Reads the stored positions of this flow's partitions.
    async fn reload_progress(&mut self) -> Result<()> {
        let src = self.source.name();
        for ((topic, p), stored) in store::read_progress_records(&self.target, src).await? {
            self.stored_progress
                .insert(progress::key(src, &topic, p), stored);
        }
        Ok(())
    }

    async fn setup(&mut self) -> Result<()> {
        store::ensure_compacted_topic(&self.target, PROGRESS_TOPIC, self.replication_factor)
            .await?;
        self.reload_progress().await?;
        let (id, epoch) = self.target.init_producer_id().await?;
        self.producer = Some(ProducerIdentity { id, epoch });
        if self.mirror.is_some() {
            // Commands stored while no instance ran are applied before anything is written.
            self.mirror_read_control().await?;
        }
        if self.cfg.emit_heartbeats && self.mm2_records() {
            store::ensure_compacted_topic(
                &self.target,
                mm2::HEARTBEATS_TOPIC,
                self.replication_factor,
            )
            .await?;
            if !self.reverse_configured {
                store::ensure_compacted_topic(
                    &self.source,
                    mm2::HEARTBEATS_TOPIC,
                    self.replication_factor,
                )
                .await?;
            }
        }
        if self.cfg.emit_offset_syncs && self.mm2_records() {
            let t = mm2::offset_syncs_topic(self.target.name());
            store::ensure_compacted_topic(&self.target, &t, self.replication_factor).await?;
        }
        Ok(())
    }

    /// One partition of the source at `offset`, read as the data path reads
    /// (READ_COMMITTED), so a take-up plans exactly the batches the data path planned.
    async fn fetch_one(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        last_fetched_epoch: i32,
    ) -> Result<FetchedPartition> {
        let isolation = crate::protocol::fetch::READ_COMMITTED;
        let read = FetchRead {
            offset,
            last_fetched_epoch,
            max_bytes: self.cfg.fetch_max_bytes,
            isolation,
        };
        fetch_partition(&self.source, topic, partition, read).await
    }

    /// Whether a Produce request carrying the partition is still awaited: it is not taken up
    /// again before (what it wrote must be visible to the read-back, or refused).
    fn awaits_answer(&self, topic: &str, partition: i32) -> bool {
        self.path.awaits_answer(topic, partition)
    }

    /// Topics whose partitions move no data now (paused mirrors).
    fn held_topics(&self) -> std::collections::HashSet<String> {
        match &self.mirror {
            None => Default::default(),
            Some(m) => m
                .view
                .records
                .iter()
                .filter(|(_, r)| !r.state.moves_data())
                .map(|(t, _)| t.clone())
                .collect(),
        }
    }
}

/// Looks up what the data path missed: leaders (loading metadata) and data connections
/// (connecting). Returns whether a target partition was not found (its topic may be gone).
/// The first failure on a side ends that side's lookups (the cluster is probably down), and
/// any failure makes it pause [`LOOKUP_BACKOFF`] before it reports: a cluster that cannot be
/// reached is asked a few times a second, not in a tight loop.
async fn look_up(name: &str, source: &Cluster, target: &Cluster, missing: Missing) -> bool {
    let mut failed = false;
    for (topic, p) in &missing.source_partitions {
        if let Err(e) = source.leader(topic, *p).await {
            tracing::warn!(flow = %name, %topic, partition = p, "no source leader: {e}");
            failed = true;
            break;
        }
    }
    for node in &missing.source_nodes {
        if let Err(e) = source.connection_id(*node).await {
            tracing::warn!(flow = %name, node, "cannot connect to source broker: {e}");
            source.forget_leaders_on(*node); // looked up again: leadership may have moved
            failed = true;
        }
    }
    let mut gone = false;
    for (topic, p) in &missing.target_partitions {
        if let Err(e) = target.leader(topic, *p).await {
            tracing::warn!(flow = %name, %topic, partition = p, "no target leader: {e}");
            gone = true;
            failed = true;
            break;
        }
    }
    for node in &missing.target_nodes {
        if let Err(e) = target.connection_id(*node).await {
            tracing::warn!(flow = %name, node, "cannot connect to target broker: {e}");
            target.forget_leaders_on(*node); // looked up again: leadership may have moved
            failed = true;
        }
    }
    if failed {
        tokio::time::sleep(LOOKUP_BACKOFF).await;
    }
    gone
}

/// How long lookups pause after one failed (see [`look_up`]).
const LOOKUP_BACKOFF: Duration = Duration::from_millis(250);

/// Waits until any of `fetches` has its answer (or timed out); returns its index. Cancel-safe:
/// each request keeps what arrived.
async fn any_ready(fetches: &mut [(RequestId, i32, PendingFetch)]) -> usize {
    if let [only] = fetches {
        only.2.ready().await;
        return 0;
    }
    if fetches.is_empty() {
        return std::future::pending().await;
    }
    let mut waits: Vec<_> = fetches.iter_mut().map(|f| Box::pin(f.2.ready())).collect();
    std::future::poll_fn(|cx| {
        for (i, w) in waits.iter_mut().enumerate() {
            if std::future::Future::poll(w.as_mut(), cx).is_ready() {
                return std::task::Poll::Ready(i);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// What [`fetch_partition`] reads.
struct FetchRead {
    /// Where.
    offset: i64,
    /// The leader epoch of the batch read before `offset` (-1: none).
    last_fetched_epoch: i32,
    /// How much at most.
    max_bytes: i32,
    /// READ_COMMITTED or READ_UNCOMMITTED.
    isolation: i8,
}

/// One partition of `cluster` as `read` says (no wait). A partition error names the cluster,
/// topic, partition and offset; a diverging epoch is left in the answer.
async fn fetch_partition(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    read: FetchRead,
) -> Result<FetchedPartition> {
    let FetchRead {
        offset,
        last_fetched_epoch,
        max_bytes,
        isolation,
    } = read;
    let (leader, epoch) = cluster.leader(topic, partition).await?;
    let spec = FetchPartitionSpec {
        topic: topic.into(),
        partition,
        offset,
        current_leader_epoch: epoch,
        last_fetched_epoch,
        max_bytes,
    };
    let limits = FetchLimits {
        max_wait_ms: 0,
        max_bytes,
        isolation_level: isolation,
        ..FetchLimits::default()
    };
    let resp = cluster.fetch(leader, &[spec], &limits).await?;
    let p = resp
        .partitions
        .into_iter()
        .next()
        .ok_or_else(|| Error::invalid("empty fetch response"))?;
    if p.error_code != error_code::NONE {
        return Err(Error::broker(p.error_code, None)
            .cluster(cluster.name())
            .partition(topic, partition)
            .offset(offset));
    }
    Ok(p)
}
