//! One replication flow (`source -> target`): topic selection and creation, the shared
//! fetch/produce data path, progress, heartbeats and offset syncs.
//!
//! The flow runs as one task. Each round it fetches, with one Fetch request per source broker,
//! every partition whose queue has room; plans what the batches become; then sends, with one
//! Produce request per target broker, the next batch of every partition that has one. Progress
//! only moves past batches the target acknowledged.

mod mirror_ctl;
mod outcome;
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
use tokio::sync::watch;

use super::duties::{Duties, PositionRequests, Positions, PositionsHandle};
use super::groups;
use super::lists::{self, ListKind, Lists};
use super::membership::Ownership;
use super::mirrors::{self, ControlView};
use super::progress::{self, Progress, Stored, Writer, PROGRESS_TOPIC};
use super::status::{FlowStatus, MemberStatus, MirrorStatus, PartitionStatus};
use super::store;
use crate::assignment::WorkItem;
use crate::client::{Cluster, PendingFetch, PendingProduce, EARLIEST, LATEST};
use crate::config::{FlowConfig, FlowMode, NamingPolicy};
use crate::error::{Error, Result};
use crate::filter::{topic_should_replicate, NameFilter, TopicDecision};
use crate::forward::{Outgoing, PartitionPlanner, ProducerIdentity, SourceOffsets};
use crate::mirror::{offsets_mode, GroupFilters, MirrorRecord, MirrorState, OffsetsMode};
use crate::mm2;
use crate::naming::ReplicationPolicy;
use crate::observe::{Observer, Side};
use crate::offsets::{OffsetMap, Translation};
use crate::protocol::error_code;
use crate::protocol::fetch::{FetchLimits, FetchPartitionSpec, FetchedPartition};
use crate::protocol::fetch_session::FetchSession;
use crate::protocol::produce::{ProducePartition, ProduceSettings, ProduceTopic};
use outcome::{classify, Outcome};

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

/// A source partition: its topic name (shared, so the per-round lookups by the names in Fetch
/// answers clone no string) and index.
type PartKey = (Arc<str>, i32);

#[derive(Debug)]
struct PartState {
    source_topic: String,
    target_topic: String,
    partition: i32,
    planner: PartitionPlanner,
    queue: VecDeque<Outgoing>,
    queued_bytes: usize,
    /// Batches at the head of `queue` sent and not yet acknowledged.
    in_flight: usize,
    /// Bumped on every rewind; answers to requests sent before it are ignored.
    epoch: u64,
    /// What is on the target: the exact source-to-target offset map, whose end is the
    /// acknowledged position.
    map: OffsetMap,
    /// Last position written to the progress topic.
    flushed: Option<Progress>,
    /// target - source of the last offset sync emitted.
    synced_delta: Option<i64>,
    records: u64,
    bytes: u64,
    source_end: i64,
    failed: Option<String>,
    /// Mirror flows: destination offsets still equal source offsets.
    identical: bool,
    /// Consecutive OutOfOrderSequenceNumber answers resent (see `receive_one`).
    sequence_retries: u32,
    /// The producer identity this partition is written under on the target, with the
    /// sequence after the last acknowledged batch (see [`progress::Writer`]).
    writer: Writer,
    /// The source topic is a heartbeats topic (its batches give the heartbeat latency).
    heartbeats: bool,
    /// The connection carrying the batches in flight (while `in_flight > 0`): more are sent
    /// only on the same one, since a broker orders requests per connection only.
    connection: u64,
    /// The source topic's id the position belongs to (`None`: not known).
    topic_id: Option<[u8; 16]>,
    /// Source records deleted by retention before they could be replicated.
    lost_records: u64,
    /// Fetch answers in a row saying the position lies beyond the source log's end.
    beyond_end: u32,
}

impl PartState {
    /// The acknowledged position.
    fn acked(&self) -> Progress {
        Progress::from(&self.map)
    }

    /// The identity the planner writes batches under.
    fn producer(&self) -> Option<ProducerIdentity> {
        Some(ProducerIdentity {
            id: self.writer.producer_id,
            epoch: self.writer.producer_epoch,
        })
    }
}

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
    parts: BTreeMap<PartKey, PartState>,
    stored_progress: HashMap<String, Stored>,
    /// Partitions dropped to be taken up again, and how often in a row without an
    /// acknowledgement: (sequence refused, request failed).
    resyncs: HashMap<PartKey, (u32, u32)>,
    /// Partitions dropped to be taken up again and not yet back: topics are refreshed every
    /// [`RESYNC_DELAY`] until they are.
    retake: std::collections::BTreeSet<PartKey>,
    producer: Option<ProducerIdentity>,
    topic_lists: Lists,
    reported: HashMap<String, String>,
    status: watch::Sender<FlowStatus>,
    in_flight: VecDeque<InFlight>,
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
    /// Fetch sessions (KIP-227) with the source brokers, by node id.
    fetch_sessions: HashMap<i32, FetchSession>,
    /// Requests and bytes of the data path, logged when the flow stops.
    traffic: Traffic,
    /// The Fetch requests outstanding (at most one per source leader) and the offsets they
    /// asked for. Each is taken in as soon as its own answer arrives.
    fetching: Vec<StartedFetch>,
    /// Something changed that can give a leader with no Fetch outstanding partitions to fetch
    /// (a Fetch answer taken in, queues drained by a Produce answer, partitions started, a
    /// leader that could not be fetched from): the next round plans fetches again.
    fetch_replan: bool,
    /// When a Fetch last brought data: while data flows, fetches wait briefly (see
    /// [`fetch_wait`]).
    last_data: Option<Instant>,
    /// A partition was dropped to be taken up again: refresh topics at the next round.
    refresh_soon: bool,
    /// Where the rewind counter of the next partition taken up starts, so an answer to a
    /// request sent for an earlier take-up of the same partition never matches it.
    epoch_base: u64,
    /// `takeover_from = "mm2"`: MirrorMaker 2's committed offsets, read at the first take-over.
    takeover: Option<super::takeover::Mm2Offsets>,
}

/// A Fetch request written to a source leader, with the offset asked for each partition: an
/// answer for a partition that has moved on since (reassigned, resumed) is ignored.
struct StartedFetch {
    leader: i32,
    pending: PendingFetch,
    offsets: HashMap<PartKey, i64>,
}

/// Which answer [`Flow::next_answer`] saw first.
enum Answer {
    /// The oldest Produce request's.
    Produce,
    /// That of the outstanding Fetch at this index of `fetching`.
    Fetch(usize),
}

/// How often a running flow publishes its status (the REST API and status page read it).
const STATUS_EVERY: Duration = Duration::from_millis(100);

/// How long the loop sleeps when it has nothing to send and nothing to wait for.
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// Longest a Fetch waits for data while data is flowing.
const FLOWING_FETCH_WAIT: Duration = Duration::from_millis(10);

/// How long after the last fetched data the flow still counts as flowing.
const FLOWING_FOR: Duration = Duration::from_secs(2);

/// The `max_wait_ms` of the next Fetch. While data flows (some fetched within [`FLOWING_FOR`]),
/// a short wait: the next records are due any moment, and a broker that holds a long poll until
/// `max_wait_ms` runs out (rather than answering once `min_bytes` are there, as Apache Kafka
/// does) would otherwise add the whole wait to the replication latency. Idle flows long-poll with
/// the configured wait. Never zero: an outstanding Fetch holds nothing else up, and an empty
/// answer in one round trip would only send the next one at once (a busy loop while a Produce
/// answer or a paused partition is waited for).
fn fetch_wait(since_data: Option<Duration>, configured: Duration) -> Duration {
    if since_data.is_some_and(|d| d < FLOWING_FOR) {
        configured.min(FLOWING_FETCH_WAIT)
    } else {
        configured
    }
}

/// Counts of the data path's requests, logged when a flow stops: how full its requests were.
#[derive(Debug, Default, Clone, Copy)]
struct Traffic {
    rounds: u64,
    fetches: u64,
    /// Fetch requests sent in an open fetch session (KIP-227): incremental ones.
    incremental_fetches: u64,
    fetched_batches: u64,
    fetched_bytes: u64,
    produces: u64,
    produced_batches: u64,
    produced_bytes: u64,
}

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

/// A Produce request in flight and the partitions it carries (with their epoch at send time).
struct InFlight {
    pending: PendingProduce,
    members: Vec<(PartKey, u64)>,
}

/// A Produce request [`Flow::send_round`] wrote: the answer to wait for, its partitions (with
/// their epoch) and batch bytes.
struct ProduceRequest {
    pending: PendingProduce,
    members: Vec<(PartKey, u64)>,
    bytes: usize,
}

/// One target leader's partitions with a batch ready to send, and how many of its partitions
/// have batches queued at all (sent or not).
#[derive(Default)]
struct LeaderBatches<'a> {
    ready: Vec<(&'a PartKey, &'a PartState)>,
    active: usize,
}

/// Produce requests in flight per flow, and batches in flight per partition (Kafka's limit for
/// an idempotent producer is 5).
const MAX_IN_FLIGHT: usize = 5;

/// Requests in flight from which a Produce request that is not full is held back.
const HOLD_BELOW_IN_FLIGHT: usize = 2;

/// Fetch answers in a row that put a partition's position beyond the source log's end before
/// it stops (one could be a leader that has not caught up yet).
const BEYOND_END_STOP: u32 = 3;

/// Batch bytes at which a Produce request counts as full (librdkafka's default request size).
const PRODUCE_REQUEST_BYTES: usize = 1 << 20;

/// Fresh starts of a partition in a row after a refused sequence, without an acknowledgement,
/// before it stops.
const MAX_RESYNCS: u32 = 3;

/// Fresh starts of a partition in a row after a failed request, without an acknowledgement,
/// before it stops.
const MAX_FAILED_RESYNCS: u32 = 10;

/// How long a partition dropped for a fresh start waits: requests still on their way land
/// first, and a refusal the log does not explain is not retried in a tight loop.
const RESYNC_DELAY: Duration = Duration::from_secs(1);

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
        Flow {
            cfg,
            source,
            target,
            reverse_configured,
            replication_factor,
            policy,
            parts: BTreeMap::new(),
            stored_progress: HashMap::new(),
            resyncs: HashMap::new(),
            retake: Default::default(),
            producer: None,
            topic_lists,
            reported: HashMap::new(),
            status,
            in_flight: VecDeque::new(),
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
            obs: Arc::new(Observer::new()),
            fetch_sessions: HashMap::new(),
            last_data: None,
            traffic: Traffic::default(),
            fetching: Vec::new(),
            fetch_replan: true,
            refresh_soon: false,
            epoch_base: 0,
            takeover: None,
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
        let mut next_refresh = Instant::now();
        let mut next_flush = Instant::now() + Duration::from_secs(1);
        let mut next_status = Instant::now();
        let mut next_sync =
            Instant::now() + self.cfg.offset_sync_interval.min(Duration::from_secs(5));
        while !*shutdown.borrow() {
            if self.ownership.is_some() {
                self.check_health().await;
                if self.sync_ownership().await {
                    next_refresh = Instant::now(); // resume newly assigned partitions now
                }
            }
            let now = Instant::now();
            if std::mem::take(&mut self.refresh_soon) {
                next_refresh = next_refresh.min(now + RESYNC_DELAY);
            }
            if now >= next_refresh {
                tracing::debug!(flow = %name, "refreshing topics");
                if let Err(e) = self.refresh_topics().await {
                    tracing::error!(flow = %name, "topic refresh failed: {e}");
                    self.obs.error(&name, "topic_refresh");
                }
                next_refresh = now + self.cfg.refresh_topics_interval;
                // Partitions dropped for a fresh start that could not be taken up yet (the
                // target or the source not answering) are tried again soon, not at the next
                // regular refresh.
                let retake: std::collections::BTreeSet<PartKey> = self
                    .retake
                    .iter()
                    .filter(|k| !self.parts.contains_key(*k) && self.owns_partition(&k.0, k.1))
                    .cloned()
                    .collect();
                self.retake = retake;
                if !self.retake.is_empty() {
                    next_refresh = now + RESYNC_DELAY * 2;
                }
                // Partitions may have started or stopped: show it at the end of this round
                // rather than up to STATUS_EVERY later, and plan fetches for them.
                next_status = now;
                self.fetch_replan = true;
            }
            if self.mirror.is_some() && self.owns_duties() && self.may_write() {
                if let Err(e) = self.mirror_tick().await {
                    tracing::warn!(flow = %name, "mirror upkeep failed: {e}");
                }
            }
            self.answer_position_requests();
            tracing::trace!(flow = %name, "round");
            self.traffic.rounds += 1;
            // One Fetch is outstanding per source leader; a leader gets the next as soon as its
            // last answer is taken in and the buffer has room, while Produce requests are in
            // flight.
            if self.fetching.is_empty() || self.fetch_replan {
                self.fetch_replan = false;
                match self.fetch_start().await {
                    Ok(()) => self.obs.connected(&name, Side::Source, true),
                    Err(e) => {
                        tracing::warn!(flow = %name, "fetch round failed: {e}");
                        self.obs.error(&name, "fetch");
                        self.obs.connected(&name, Side::Source, false);
                        self.fetch_replan = true;
                        // Other leaders' answers, if any are out, pace the retries.
                        if self.fetching.is_empty() {
                            tokio::select! {
                                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                                _ = shutdown.changed() => {}
                            }
                        }
                    }
                }
            }
            tracing::trace!(flow = %name, in_flight = self.in_flight.len(), "produce");
            while self.in_flight.len() < MAX_IN_FLIGHT {
                match self.send_round().await {
                    Ok(0) => break,
                    Ok(_) => self.obs.connected(&name, Side::Target, true),
                    Err(e) => {
                        tracing::warn!(flow = %name, "produce failed: {e}");
                        self.obs.error(&name, "produce");
                        self.obs.connected(&name, Side::Target, false);
                        break;
                    }
                }
            }
            // Then whichever answer comes first: the oldest Produce or any Fetch. Neither side
            // waits for the other, so the target always has the next request queued. A stop
            // does not wait for a long poll: outstanding Fetch answers are simply not taken in.
            let answer = tokio::select! {
                biased;
                a = self.next_answer() => a,
                Ok(()) = shutdown.changed() => continue,
            };
            match answer {
                Some(Answer::Produce) => {
                    self.receive_one().await;
                    self.fetch_replan = true; // queues drained: a leader may have room again
                }
                Some(Answer::Fetch(i)) => {
                    let started = self.fetching.remove(i);
                    self.fetch_replan = true; // this leader has no Fetch outstanding now
                    if let Err(e) = self.fetch_finish(started).await {
                        tracing::warn!(flow = %name, "fetch round failed: {e}");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                            _ = shutdown.changed() => {}
                        }
                    }
                }
                None => {
                    // Nothing to fetch and nothing in flight: no partitions, a full buffer
                    // waiting for a durable start or a lease, or paused mirrors.
                    tokio::select! {
                        _ = tokio::time::sleep(IDLE_WAIT) => {}
                        _ = shutdown.changed() => {}
                    }
                }
            }
            if Instant::now() >= next_flush {
                if let Err(e) = self.flush_progress().await {
                    tracing::warn!(flow = %name, "progress write failed: {e}");
                    self.obs.error(&name, "progress");
                }
                next_flush = Instant::now() + Duration::from_secs(1);
            }
            if self.cfg.emit_offset_syncs
                && self.mm2_records()
                && self.may_write()
                && Instant::now() >= next_sync
            {
                if let Err(e) = self.offset_syncs().await {
                    tracing::warn!(flow = %name, "offset syncs failed: {e}");
                    self.obs.error(&name, "offset_sync");
                }
                next_sync = Instant::now() + self.cfg.offset_sync_interval;
            }
            // The status copies every partition's state: at most every STATUS_EVERY, not
            // every round (a round can be a few hundred microseconds).
            if Instant::now() >= next_status {
                self.publish_status();
                next_status = Instant::now() + STATUS_EVERY;
            }
        }
        self.publish_status();
        // Stop: answers to requests in flight are awaited and applied; queued batches are
        // abandoned without advancing progress; the acknowledged position is persisted.
        while !self.in_flight.is_empty() {
            self.receive_one().await;
        }
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
        let t = self.traffic;
        tracing::info!(
            flow = %name,
            rounds = t.rounds,
            fetches = t.fetches,
            incremental_fetches = t.incremental_fetches,
            fetched_batches = t.fetched_batches,
            fetched_bytes = t.fetched_bytes,
            produces = t.produces,
            produced_batches = t.produced_batches,
            produced_bytes = t.produced_bytes,
            "stopped"
        );
        Ok(())
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
    ) -> Result<FetchedPartition> {
        let isolation = crate::protocol::fetch::READ_COMMITTED;
        fetch_partition(
            &self.source,
            topic,
            partition,
            offset,
            self.cfg.fetch_max_bytes,
            isolation,
        )
        .await
    }

    fn per_partition_cap(&self) -> usize {
        (self.cfg.buffer_bytes / self.parts.len().max(1)).max(1 << 20)
    }

    /// Waits for the first of: the oldest Produce answer, any outstanding Fetch answer. `None`
    /// when nothing is outstanding. Takes nothing in (the caller does), so it is cancel-safe.
    async fn next_answer(&mut self) -> Option<Answer> {
        if self.in_flight.is_empty() && self.fetching.is_empty() {
            return None;
        }
        let fetching = &mut self.fetching;
        let produce = async {
            match self.in_flight.front_mut() {
                Some(oldest) => oldest.pending.ready().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = produce => Some(Answer::Produce),
            i = any_ready(fetching) => Some(Answer::Fetch(i)),
        }
    }

    /// Writes one Fetch request to every source leader that has none outstanding, for its
    /// partitions with room, without waiting for the answers ([`Flow::fetch_finish`] takes
    /// them in). A leader whose request cannot be written is left out (its fetch session
    /// starts over); the others still go, and the first error is returned.
    ///
    /// A partition whose leader moved can be in an outstanding request to its old leader and
    /// in a new one to its new leader: whichever answer is taken in first moves its offset on,
    /// and [`Flow::fetch_finish`] ignores the other (it asked for an offset no longer next).
    async fn fetch_start(&mut self) -> Result<()> {
        let cap = self.per_partition_cap();
        let total: usize = self.parts.values().map(|p| p.queued_bytes).sum();
        if total >= self.cfg.buffer_bytes {
            return Ok(()); // backpressure: the target is slower
        }
        let busy: Vec<i32> = self.fetching.iter().map(|f| f.leader).collect();
        let mut by_leader: BTreeMap<i32, Vec<FetchPartitionSpec>> = BTreeMap::new();
        let max_bytes = self.cfg.fetch_max_bytes.min(cap as i32).max(1 << 16);
        let held = self.held_topics();
        // The broker fills a response in request order until `fetch_max_bytes`: partitions with
        // the least queued go first (ties rotate each round), so every partition has a batch
        // for the next Produce request instead of a few partitions taking every response.
        let mut wanted: Vec<(&PartKey, &PartState)> = self
            .parts
            .iter()
            .filter(|(k, st)| st.failed.is_none() && st.queued_bytes < cap && !held.contains(&*k.0))
            .collect();
        if !wanted.is_empty() {
            let turn = (self.traffic.rounds as usize) % wanted.len();
            wanted.rotate_left(turn);
        }
        wanted.sort_by_key(|(_, st)| st.queued_bytes);
        let mut recreated: Vec<(PartKey, [u8; 16], [u8; 16])> = Vec::new();
        for (k, st) in wanted {
            // Metadata refreshed after an error shows a topic created again under the same
            // name before the next Fetch could read the new topic at the old position.
            if let (Some(was), Some(now)) = (st.topic_id, self.source.cached_topic_id(&k.0)) {
                if was != now {
                    recreated.push((k.clone(), was, now));
                    continue;
                }
            }
            let (leader, epoch) = match self.source.leader(&k.0, k.1).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(flow = %self.name(), topic = %k.0, partition = k.1, "no source leader: {e}");
                    continue;
                }
            };
            if busy.contains(&leader) {
                continue;
            }
            by_leader
                .entry(leader)
                .or_default()
                .push(FetchPartitionSpec {
                    topic: k.0.clone(),
                    partition: k.1,
                    offset: st.planner.next_offset(),
                    current_leader_epoch: epoch,
                    max_bytes,
                });
        }
        for (k, was, now) in recreated {
            self.stop_recreated(&k, was, now);
        }
        let since_data = self.last_data.map(|t| t.elapsed());
        let wait = fetch_wait(since_data, self.cfg.fetch_max_wait);
        let limits = FetchLimits {
            max_wait_ms: i32::try_from(wait.as_millis()).unwrap_or(i32::MAX),
            min_bytes: 1,
            max_bytes: self.cfg.fetch_max_bytes,
            isolation_level: crate::protocol::fetch::READ_COMMITTED,
        };
        let mut first_error = None;
        for (leader, specs) in by_leader {
            let session = self.fetch_sessions.entry(leader).or_default();
            let incremental = session.id() != 0;
            let pending = match self
                .source
                .fetch_start(leader, session, &specs, &limits)
                .await
            {
                Ok(p) => p,
                Err(e) => {
                    // `fetch_start` started the session over (whether the broker saw the
                    // request is unknown).
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            let offsets = specs
                .into_iter()
                .map(|s| ((s.topic, s.partition), s.offset))
                .collect();
            self.fetching.push(StartedFetch {
                leader,
                pending,
                offsets,
            });
            self.traffic.fetches += 1;
            self.traffic.incremental_fetches += u64::from(incremental);
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Takes in the answer to one Fetch request [`Flow::fetch_start`] wrote and plans what the
    /// batches become; returns batches planned.
    async fn fetch_finish(&mut self, started: StartedFetch) -> Result<usize> {
        let mut planned = 0;
        let name = self.name();
        let src_name = self.source.name().to_string();
        let StartedFetch {
            leader,
            pending,
            offsets,
        } = started;
        let session = self.fetch_sessions.entry(leader).or_default();
        let resp = pending.finish(session).await?;
        let mut beyond_end: Vec<PartKey> = Vec::new();
        for p in resp.partitions {
            let key = (p.topic.clone(), p.partition);
            let Some(st) = self.parts.get_mut(&key) else {
                continue;
            };
            if offsets.get(&key) != Some(&st.planner.next_offset()) {
                continue; // resumed elsewhere while the request was out: fetched again
            }
            st.source_end = p.high_watermark;
            match p.error_code {
                error_code::NONE => {}
                error_code::OFFSET_OUT_OF_RANGE => {
                    // On failure the partition stays where it is and the next Fetch tries
                    // again; the other partitions of this answer are still taken in.
                    let start = match self.source.list_offsets(&key.0, &[key.1], EARLIEST).await {
                        Ok(v) => match v.first() {
                            Some(&(_, start)) => start,
                            None => {
                                tracing::warn!(flow = %name, "cluster {src_name}, topic {}, partition {}, offset {}: offset out of range, and ListOffsets returned no log start", key.0, key.1, st.planner.next_offset());
                                continue;
                            }
                        },
                        Err(e) => {
                            tracing::warn!(flow = %name, "cluster {src_name}, topic {}, partition {}, offset {}: offset out of range, and the log start cannot be read: {e}", key.0, key.1, st.planner.next_offset());
                            continue;
                        }
                    };
                    let at = st.planner.next_offset();
                    if start > at {
                        tracing::error!(flow = %name, "cluster {src_name}, topic {}, partition {}, offset {at}: records {at}..{start} were deleted by retention before they could be replicated; continuing at {start}", key.0, key.1);
                        st.lost_records += (start - at) as u64;
                        self.obs.records_lost(&name, &key.0, (start - at) as u64);
                        st.planner =
                            PartitionPlanner::new(start, st.producer(), st.planner.next_sequence());
                    } else {
                        // Beyond the log's end: the log was truncated below the position (an
                        // unclean leader election), or the topic was deleted and created
                        // again. Confirmed by a few answers in a row, the partition stops.
                        st.beyond_end += 1;
                        tracing::warn!(flow = %name, "cluster {src_name}, topic {}, partition {}, offset {at}: beyond the end of the source log (log start {start}, answer {} in a row)", key.0, key.1, st.beyond_end);
                        if st.beyond_end >= BEYOND_END_STOP {
                            beyond_end.push(key.clone());
                        }
                    }
                    continue;
                }
                code => {
                    if error_code::needs_metadata_refresh(code) {
                        self.source.invalidate(&key.0);
                    }
                    if code == error_code::UNKNOWN_TOPIC_OR_PARTITION {
                        // The source topic may have been deleted: the refresh finds out soon.
                        self.refresh_soon = true;
                    }
                    tracing::warn!(flow = %name, "cluster {src_name}, topic {}, partition {}, offset {}: fetch error {}", key.0, key.1, st.planner.next_offset(), error_code::name(code));
                    self.obs.retry(&src_name, "fetch_partition");
                    continue;
                }
            }
            st.beyond_end = 0;
            let at = st.planner.next_offset();
            match st.planner.plan(&p) {
                Ok(plan) => {
                    let now = store::now_ms();
                    for out in plan.outgoing {
                        self.obs
                            .batch_fetched(&name, &key.0, out.batch.max_timestamp(), now);
                        st.queued_bytes += out.batch.len();
                        self.traffic.fetched_batches += 1;
                        self.traffic.fetched_bytes += out.batch.len() as u64;
                        st.queue.push_back(out);
                        planned += 1;
                    }
                    if st.queue.is_empty() && st.planner.next_offset() > st.map.source_next() {
                        // Only dropped offsets (control batches, aborted data, records
                        // deleted by retention): nothing to wait for on the target.
                        let from = st.map.source_next();
                        st.map.record_dropped(from, st.planner.next_offset());
                        note_offsets_mode(st, &name, self.target.name());
                    }
                }
                Err(e) => {
                    let msg = format!("cluster {src_name}, topic {}, partition {}, offset {at}: {e}; partition stopped", key.0, key.1);
                    tracing::error!(flow = %name, "{msg}");
                    self.obs.error(&name, "plan");
                    st.failed = Some(msg);
                }
            }
        }
        for k in beyond_end {
            self.stop_beyond_end(&k).await;
        }
        if planned > 0 {
            self.last_data = Some(Instant::now());
        }
        Ok(planned)
    }

    /// Starts one Produce request per target leader carrying the next unsent batch of every
    /// partition that has one (up to [`MAX_IN_FLIGHT`] per partition). Returns requests sent,
    /// or the first error if a leader could not be reached or written to (the requests to the
    /// other leaders are sent and in flight all the same).
    ///
    /// Adaptive batching: while [`HOLD_BELOW_IN_FLIGHT`] requests are already in flight, a
    /// request that is not yet full (under [`PRODUCE_REQUEST_BYTES`] and not carrying every
    /// partition the leader could take) is held back; the broker is busy anyway, and the next
    /// answer brings another chance to send it fuller. An idle pipeline sends at once.
    async fn send_round(&mut self) -> Result<usize> {
        if !self.may_write() {
            return Ok(0);
        }
        let held = self.held_topics();
        let settings = ProduceSettings {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
        };
        // Decide and write while borrowing the partitions; clone keys and batches only for
        // requests that go (a held request costs no allocation), and count them in after.
        let mut requests: Vec<ProduceRequest> = Vec::new();
        let mut failed = None;
        let mut no_leader = false;
        {
            // Per leader: the partitions with a batch to send, and how many have batches
            // queued (sent or not); a request carrying all of those is as full as it can be.
            let mut by_leader: BTreeMap<i32, LeaderBatches> = BTreeMap::new();
            for (k, s) in &self.parts {
                // Paused mirrors keep what they queued and send nothing. Nothing is written for
                // a partition before its starting position is durable: a crash then always
                // leaves a progress record to resume from.
                if s.queue.is_empty()
                    || held.contains(&*k.0)
                    || s.failed.is_some()
                    || s.flushed.is_none()
                {
                    continue;
                }
                let ready = s.queue.len() > s.in_flight && s.in_flight < MAX_IN_FLIGHT;
                match self.target.leader(&s.target_topic, k.1).await {
                    Ok((leader, _)) => {
                        let entry = by_leader.entry(leader).or_default();
                        entry.active += 1;
                        if ready {
                            entry.ready.push((k, s));
                        }
                    }
                    Err(e) => {
                        // A remote topic that is gone: the topic refresh finds out soon.
                        no_leader = true;
                        if ready {
                            tracing::warn!(flow = %self.name(), topic = %s.target_topic, partition = k.1, "no target leader: {e}")
                        }
                    }
                }
            }
            let hold = self.in_flight.len() >= HOLD_BELOW_IN_FLIGHT;
            for (leader, LeaderBatches { ready, active }) in by_leader {
                if ready.is_empty() {
                    continue;
                }
                let conn = match self.target.connection_id(leader).await {
                    Ok(c) => c,
                    Err(e) => {
                        failed.get_or_insert(e);
                        continue;
                    }
                };
                // A partition whose earlier batches are on another connection waits for them:
                // a broker orders requests per connection only.
                let going: Vec<&(&PartKey, &PartState)> = ready
                    .iter()
                    .filter(|(_, st)| st.in_flight == 0 || st.connection == conn)
                    .collect();
                let bytes: usize = going
                    .iter()
                    .filter_map(|(_, st)| st.queue.get(st.in_flight))
                    .map(|o| o.batch.len())
                    .sum();
                if going.is_empty() {
                    continue;
                }
                if hold && bytes < PRODUCE_REQUEST_BYTES && going.len() < active {
                    continue; // not full, and the broker has work: wait for an answer first
                }
                let mut topics: Vec<ProduceTopic> = Vec::new();
                let mut members = Vec::with_capacity(going.len());
                for (k, st) in going {
                    let Some(next) = st.queue.get(st.in_flight) else {
                        continue;
                    };
                    let part = ProducePartition {
                        partition: k.1,
                        batch: next.batch.clone(),
                    };
                    match topics.iter_mut().find(|t| t.name == st.target_topic) {
                        Some(t) => t.partitions.push(part),
                        None => topics.push(ProduceTopic {
                            name: st.target_topic.clone(),
                            partitions: vec![part],
                        }),
                    }
                    members.push(((*k).clone(), st.epoch));
                }
                // Written at once, right after the connection was chosen, so the partitions'
                // batches in flight stay on one connection.
                match self.target.produce_start(leader, &settings, &topics).await {
                    Ok(pending) => requests.push(ProduceRequest {
                        pending,
                        members,
                        bytes,
                    }),
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
        }
        self.refresh_soon |= no_leader;
        let sent = requests.len();
        for ProduceRequest {
            pending,
            members,
            bytes,
        } in requests
        {
            self.traffic.produced_batches += members.len() as u64;
            self.traffic.produced_bytes += bytes as u64;
            for (k, _) in &members {
                if let Some(st) = self.parts.get_mut(k) {
                    st.in_flight += 1;
                    st.connection = pending.connection();
                }
            }
            self.in_flight.push_back(InFlight { pending, members });
            self.traffic.produces += 1;
        }
        // The requests that went are in flight; a leader that could not be reached is reported
        // (and not tried again by the caller until the next round).
        match failed {
            Some(e) => Err(e),
            None => Ok(sent),
        }
    }

    /// Waits for the oldest request in flight and applies its results. Batches are acknowledged
    /// in order; a retriable error rewinds the partition so its batches go again with the same
    /// sequence numbers (the broker drops any it already has as duplicates).
    async fn receive_one(&mut self) {
        let Some(f) = self.in_flight.pop_front() else {
            return;
        };
        let name = self.name();
        let tgt = self.target.name().to_string();
        let mirrored = self.mirror.is_some();
        let mut diverged: Vec<(String, i32, String)> = Vec::new();
        let mut resync: Vec<(PartKey, bool)> = Vec::new();
        let results = match f.pending.finish().await {
            Ok(r) => r,
            Err(e) => {
                // The broker may or may not have appended the batches. A blind resend relies on
                // its duplicate detection, which it loses when it expires the producer (by the
                // records' own timestamps, so at once for old data): the partitions are read
                // back from the target instead and continue after what landed.
                tracing::warn!(flow = %name, "produce request failed; reading its partitions back before writing again: {e}");
                self.obs.retry(&tgt, "produce_request");
                let uncertain: Vec<PartKey> = f
                    .members
                    .iter()
                    .filter(|(k, epoch)| {
                        self.parts
                            .get(k)
                            .is_some_and(|st| st.epoch == *epoch && st.failed.is_none())
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in uncertain {
                    self.resync_partition(k, false);
                }
                return;
            }
        };
        let by_partition: HashMap<(&str, i32), &crate::protocol::produce::ProducedPartition> =
            results
                .iter()
                .map(|r| ((r.topic.as_str(), r.partition), r))
                .collect();
        let now = store::now_ms();
        for (k, epoch) in &f.members {
            let Some(st) = self.parts.get_mut(k) else {
                continue;
            };
            if st.epoch != *epoch {
                continue; // sent before a rewind: it goes again
            }
            let code = by_partition
                .get(&(st.target_topic.as_str(), k.1))
                .map(|r| (r.error_code, r.base_offset, r.error_message.clone()));
            let (error, base, message) = match code {
                Some((e, b, m)) => (Some(e), b, m),
                None => (None, -1, None),
            };
            match classify(error, st.sequence_retries) {
                Outcome::Acked => {
                    let Some(out) = st.queue.pop_front() else {
                        continue;
                    };
                    st.in_flight = st.in_flight.saturating_sub(1);
                    st.queued_bytes -= out.batch.len();
                    let n = out.source.count();
                    let expected = st.map.target_next();
                    let base = if base >= 0 { base } else { expected };
                    if base > expected && !mirrored {
                        tracing::warn!(flow = %name, "cluster {tgt}, topic {}, partition {}: {} records at target offsets {expected}..{base} were written by someone else", st.target_topic, k.1, base - expected);
                    }
                    // Mirror topics are read-only: a foreign write stops the partition, and an
                    // identical mirror must land every batch at its source offset.
                    let first = first_source_offset(&out);
                    let broken = if !mirrored {
                        None
                    } else if base != expected {
                        Some(format!(
                            "cluster {tgt}, topic {}, partition {}: {} records at offsets {expected}..{base} were written by something other than strait while the topic is mirrored; partition stopped (promote or fail over the mirror to make the topic writable)",
                            st.target_topic, k.1, base - expected
                        ))
                    } else if st.identical && base != first {
                        Some(format!(
                            "cluster {tgt}, topic {}, partition {}: the batch of source offset {first} landed at offset {base}; identical offsets broken; partition stopped",
                            st.target_topic, k.1
                        ))
                    } else {
                        None
                    };
                    if let Err(e) = record_acked(&mut st.map, &out, base) {
                        let msg = format!(
                            "cluster {tgt}, topic {}, partition {}, target offset {base}: the acknowledged batch does not fit the offset map ({e}); partition stopped",
                            st.target_topic, k.1
                        );
                        tracing::error!(flow = %name, "{msg}");
                        st.failed = Some(msg);
                        st.in_flight = 0;
                        st.epoch += 1;
                        continue;
                    }
                    st.records += n as u64;
                    st.bytes += out.batch.len() as u64;
                    st.sequence_retries = 0;
                    st.writer.next_sequence = crate::forward::plan::next_sequence(
                        out.batch.base_sequence(),
                        out.batch.records_count(),
                    );
                    if st.queue.is_empty() && st.planner.next_offset() > st.map.source_next() {
                        // Offsets planned after this batch that became no target record (a
                        // transaction marker closing the source log): everything below the
                        // next fetch is accounted for, so a group committed there translates.
                        let from = st.map.source_next();
                        st.map.record_dropped(from, st.planner.next_offset());
                    }
                    if !self.resyncs.is_empty() {
                        self.resyncs.remove(k);
                    }
                    self.obs.batch_acked(
                        &name,
                        &st.source_topic,
                        k.1,
                        n as u64,
                        out.batch.len() as u64,
                        out.batch.max_timestamp(),
                        st.heartbeats,
                        now,
                    );
                    if let Some(msg) = broken {
                        tracing::error!(flow = %name, "{msg}");
                        st.failed = Some(msg.clone());
                        st.in_flight = 0;
                        st.epoch += 1;
                        diverged.push((k.0.to_string(), k.1, msg));
                    } else if mirrored {
                        note_offsets_mode(st, &name, &tgt);
                    }
                }
                // A broker that handles pipelined requests out of order (nisshi does) can refuse a
                // batch whose predecessor it has not appended yet. Like Kafka's producer, resend
                // from the oldest unacknowledged batch with the same sequences; a gap that
                // persists stops the partition.
                Outcome::ResendFromOldest => {
                    st.sequence_retries += 1;
                    tracing::warn!(flow = %name, "cluster {tgt}, topic {}, partition {}: OutOfOrderSequenceNumber, resending from the oldest unacknowledged batch (attempt {})", st.target_topic, k.1, st.sequence_retries);
                    st.in_flight = 0;
                    st.epoch += 1;
                }
                // The target's producer state for this partition is not what this instance
                // thinks (another writer's late batches landed, or the broker forgot the
                // producer): take the partition up again from what the target holds.
                // Timed out on the broker (`refused` false): the batch may have been appended
                // (see above).
                Outcome::TakeUpAgain { refused } => {
                    resync.push((k.clone(), refused));
                }
                Outcome::Stop => {
                    let code = error.unwrap_or(-1);
                    let offset = st.queue.front().map(first_source_offset).unwrap_or(-1);
                    let msg = format!(
                        "cluster {tgt}, topic {}, partition {}, source offset {offset}: broker refused the batch: {}{}; partition stopped",
                        st.target_topic,
                        k.1,
                        error_code::name(code),
                        message.map(|m| format!(" ({m})")).unwrap_or_default()
                    );
                    tracing::error!(flow = %name, "{msg}");
                    self.obs.error(&name, "produce_refused");
                    st.failed = Some(msg);
                    st.in_flight = 0;
                    st.epoch += 1;
                }
                Outcome::Resend { refresh_metadata } => {
                    let code = error.unwrap_or(error_code::UNKNOWN_TOPIC_OR_PARTITION);
                    if refresh_metadata {
                        self.target.invalidate(&st.target_topic);
                    }
                    if code == error_code::UNKNOWN_TOPIC_OR_PARTITION {
                        // The remote topic may be gone: the topic refresh finds out soon.
                        self.refresh_soon = true;
                    }
                    tracing::warn!(flow = %name, "cluster {tgt}, topic {}, partition {}: produce error {}, resending", st.target_topic, k.1, error_code::name(code));
                    self.obs.retry(&tgt, "produce_partition");
                    st.in_flight = 0;
                    st.epoch += 1;
                }
            }
        }
        for (topic, partition, why) in diverged {
            if let Err(e) = self.mark_diverged(&topic, partition, why).await {
                tracing::warn!(flow = %name, %topic, partition, "cannot record the stop in the control topic: {e}");
            }
        }
        for (k, refused) in resync {
            self.resync_partition(k, refused);
        }
    }

    /// Drops a partition whose producer sequence the target refused (`refused`), or whose
    /// last request may or may not have landed, to be taken up again a second later from what
    /// the target holds (its own batches are found and counted there). Refused three times in
    /// a row without an acknowledgement, it stops.
    fn resync_partition(&mut self, k: PartKey, refused: bool) {
        let name = self.name();
        let tgt = self.target.name().to_string();
        if self.parts.get(&k).is_none_or(|st| st.failed.is_some()) {
            return;
        }
        let (refusals, failures) = {
            let c = self.resyncs.entry(k.clone()).or_default();
            if refused {
                c.0 += 1;
            } else {
                c.1 += 1;
            }
            *c
        };
        let Some(st) = self.parts.get_mut(&k) else {
            return;
        };
        if refusals > MAX_RESYNCS || failures > MAX_FAILED_RESYNCS {
            let what = if refusals > MAX_RESYNCS {
                format!("the broker keeps refusing the producer sequence after {MAX_RESYNCS} fresh starts")
            } else {
                format!("{MAX_FAILED_RESYNCS} Produce requests in a row failed")
            };
            let msg = format!(
                "cluster {tgt}, topic {}, partition {}, target offset {}: {what}; partition stopped",
                st.target_topic,
                k.1,
                st.map.target_next()
            );
            tracing::error!(flow = %name, "{msg}");
            self.obs.error(&name, "produce_refused");
            st.failed = Some(msg);
            st.in_flight = 0;
            st.epoch += 1;
            return;
        }
        if refused {
            tracing::warn!(flow = %name, "cluster {tgt}, topic {}, partition {}, target offset {}: the broker refused the producer sequence; reading the partition back to continue after what it holds", st.target_topic, k.1, st.map.target_next());
        }
        self.obs.retry(&tgt, "produce_resync");
        let key = progress::key(self.source.name(), &st.source_topic, st.partition);
        self.stored_progress.insert(
            key,
            Stored {
                map: st.map.clone(),
                writer: Some(st.writer),
                topic_id: st.topic_id,
            },
        );
        self.parts.remove(&k);
        self.retake.insert(k);
        self.refresh_soon = true;
    }

    /// Whether a Produce request carrying the partition is still awaited: it is not taken up
    /// again before (what it wrote must be visible to the read-back, or refused).
    fn awaits_answer(&self, topic: &str, partition: i32) -> bool {
        self.in_flight.iter().any(|f| {
            f.members
                .iter()
                .any(|((t, p), _)| **t == *topic && *p == partition)
        })
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

/// Waits until any of `fetching` has its answer (or timed out); returns its index. Cancel-safe:
/// each request keeps what arrived.
async fn any_ready(fetching: &mut [StartedFetch]) -> usize {
    if let [only] = fetching {
        only.pending.ready().await;
        return 0;
    }
    if fetching.is_empty() {
        return std::future::pending().await;
    }
    let mut waits: Vec<_> = fetching
        .iter_mut()
        .map(|f| Box::pin(f.pending.ready()))
        .collect();
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

/// Records an acknowledged batch whose first record landed at target offset `base`, and any
/// source offsets it covers without a record (a dropped tail).
fn record_acked(map: &mut OffsetMap, out: &Outgoing, base: i64) -> std::result::Result<(), String> {
    map.record_batch(&out.source, base)
        .map_err(|e| e.to_string())?;
    if out.source_next > map.source_next() {
        let from = map.source_next();
        map.record_dropped(from, out.source_next);
    }
    Ok(())
}

/// After the map of a mirror partition changed: if its offsets stopped being identical to the
/// source's, says so once, naming the partition.
fn note_offsets_mode(st: &mut PartState, flow: &str, target: &str) {
    if !st.identical {
        return;
    }
    let mode = offsets_mode(&st.map, true);
    if mode != OffsetsMode::Identical {
        st.identical = false;
        tracing::warn!(flow = %flow, topic = %st.target_topic, partition = st.partition, "cluster {target}, topic {}, partition {}: offsets are now {mode}; consumer offsets are translated through the offset map", st.target_topic, st.partition);
    }
}

/// One partition of `cluster` at `offset` (no wait), `max_bytes` at most, at `isolation`. A
/// partition error names the cluster, topic, partition and offset.
async fn fetch_partition(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: i32,
    isolation: i8,
) -> Result<FetchedPartition> {
    let (leader, epoch) = cluster.leader(topic, partition).await?;
    let spec = FetchPartitionSpec {
        topic: topic.into(),
        partition,
        offset,
        current_leader_epoch: epoch,
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

fn first_source_offset(out: &Outgoing) -> i64 {
    match &out.source {
        SourceOffsets::Contiguous { first, .. } => *first,
        SourceOffsets::Listed(v) => v.first().copied().unwrap_or(-1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_wait_follows_the_data() {
        let configured = Duration::from_millis(500);
        assert_eq!(
            fetch_wait(Some(Duration::ZERO), configured),
            FLOWING_FETCH_WAIT
        );
        assert_eq!(
            fetch_wait(Some(Duration::from_millis(100)), configured),
            FLOWING_FETCH_WAIT
        );
        assert_eq!(
            fetch_wait(Some(Duration::from_millis(5)), Duration::from_millis(3)),
            Duration::from_millis(3)
        );
        assert_eq!(fetch_wait(Some(FLOWING_FOR), configured), configured);
        assert_eq!(fetch_wait(None, configured), configured);
    }
}
