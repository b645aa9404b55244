//! One replication flow (`source -> target`): its control actor.
//!
//! A flow is two tasks. The data pump ([`super::pump`]) owns the data path and only moves
//! records: it writes the Fetch and Produce requests the data path plans and feeds their
//! answers back. This module is the other one, the control actor: topic selection and
//! creation, taking partitions up, mirror commands and consumer offset sync, ownership in a
//! scale-out group, progress records and offset syncs, the members' and mirrors' status. It
//! waits on the clusters as long as it must; it changes the data path only through
//! [`Command`]s to the pump and learns from it through [`PumpEvent`]s and copies of its
//! partitions ([`PathView`]). Heartbeats, checkpoints and MirrorMaker 2 group offset sync run in
//! the duties task ([`super::duties`]).

mod mirror_ctl;
mod mirror_status;
mod ownership;
mod paused;
mod progress_out;
mod published_status;
mod resume;
mod reverse;
mod topics;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;

use super::duties::Duties;
use super::group_sync::{self, MirrorSync};
use super::lists::{self, ListKind, Lists};
use super::membership::Ownership;
use super::mirrors::{self, ControlView};
use super::path::timers::TimerTable;
use super::path::{
    first_source_offset, record_acked, recreated_message, PartKey, PartStart, PathSettings,
};
use super::positions::PositionsHandle;
use super::progress::{self, Stored};
use super::pump::{Command, PartView, PathView, Pump, PumpEnds, PumpEvent, PumpHandle, PumpParts};
use super::status::{FlowStatus, MemberStatus, MirrorStatus};
use super::store;
use crate::assignment::WorkItem;
use crate::client::{Cluster, FetchRead, LATEST};
use crate::config::{FlowConfig, FlowMode};
use crate::error::{Error, Result};
use crate::filter::{topic_should_replicate, NameFilter, TopicDecision};
use crate::forward::ProducerIdentity;
use crate::mirror::{MirrorRecord, MirrorState, OffsetsMode};
use crate::mm2;
use crate::naming::{MirrorHop, Mm2Topics, ReplicationPolicy};
use crate::observe::{Observer, Side};
use crate::protocol::error_code;
use crate::protocol::fetch::FetchedPartition;
use crate::Shutdown;

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

/// A running flow's control actor (see the module documentation).
pub struct Flow {
    cfg: FlowConfig,
    source: Arc<Cluster>,
    target: Arc<Cluster>,
    /// Whether the reverse flow (target -> source) is configured; if not, this flow also emits
    /// the reverse pair's heartbeats into the source, as MirrorMaker 2 does for disabled flows.
    reverse_configured: bool,
    replication_factor: i16,
    policy: ReplicationPolicy,
    /// The names of MirrorMaker 2's topics.
    mm2: Mm2Topics,
    /// The data pump's commands and events.
    pump: PumpHandle,
    /// The pump's ends, until [`Flow::run`] starts it.
    pump_ends: Option<PumpEnds>,
    stored_progress: HashMap<String, Stored>,
    /// Partitions dropped to be taken up again and not yet back: topics are refreshed every
    /// [`RESYNC_DELAY`] until they are.
    retake: BTreeSet<PartKey>,
    producer: Option<crate::forward::ProducerIdentity>,
    topic_lists: Lists,
    reported: HashMap<String, String>,
    /// Where the status goes (the pump publishes the partitions, this actor the rest).
    status: Arc<watch::Sender<FlowStatus>>,
    /// Mirror flows only: mirror states, commands and consumer offset sync.
    mirror: Option<MirrorCtl>,
    /// Topics held (paused mirrors) as last told to the pump.
    held: HashSet<String>,
    /// The operator's pause record while the flow is paused, as last told to the pump.
    paused: Option<super::pause::PauseRecord>,
    /// Control topic log end when the pause record was last read (-1: never read).
    pause_seen: i64,
    /// Since when the source has not answered the health check, and its last error.
    source_down: Option<(Instant, String)>,
    /// Scale-out: the units of work this instance owns (`None`: everything).
    ownership: Option<Arc<Ownership>>,
    /// Scale-out: what this flow took up of the ownership and reported to the group.
    scale: ScaleView,
    /// Where metrics go.
    obs: Arc<Observer>,
    /// A partition was dropped to be taken up again: refresh topics at the next round.
    refresh_soon: bool,
    /// The control actor's deadlines (the data path has its own).
    timers: TimerTable<Due>,
    /// `takeover_from = "mm2"`: MirrorMaker 2's committed offsets, read at the first take-over.
    takeover: Option<super::takeover::Mm2Offsets>,
}

/// What a flow took up of its instance group's ownership and reported to it.
struct ScaleView {
    /// Units of this flow owned, as last read from the ownership.
    assigned: BTreeSet<WorkItem>,
    /// The ownership's lost epoch last seen.
    lost_seen: u64,
    /// Units this flow found on the source at the last topic refresh.
    wanted_items: BTreeSet<WorkItem>,
    /// When both clusters last answered, and the last problem reaching them.
    health: (Instant, Option<String>),
    /// When both clusters are asked next.
    next_health: Instant,
    /// Ownership version taken up, and time of the last report.
    ownership_seen: (u64, Instant),
    /// Membership version and the members as the status shows them.
    members_cache: (u64, Vec<MemberStatus>),
}

impl Default for ScaleView {
    fn default() -> Self {
        ScaleView {
            assigned: BTreeSet::new(),
            lost_seen: 0,
            wanted_items: BTreeSet::new(),
            health: (Instant::now(), None),
            next_health: Instant::now(),
            ownership_seen: (u64::MAX, Instant::now()),
            members_cache: (0, Vec::new()),
        }
    }
}

/// The control actor's deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// Look for new topics and partitions.
    Refresh,
    /// Write progress records.
    Flush,
    /// Write MirrorMaker 2 offset syncs.
    OffsetSync,
    /// Publish the members' status.
    Status,
    /// Mirror upkeep.
    Mirror,
    /// Look for a changed pause record.
    Pause,
}

/// How often the control actor publishes the members' status.
const STATUS_EVERY: Duration = Duration::from_millis(100);

/// Longest the control actor waits without an event: ownership changes and the membership
/// lease are looked at this often.
const CONTROL_TICK: Duration = Duration::from_millis(50);

/// The mirror side of a flow (`mode = "mirror"`).
struct MirrorCtl {
    link: String,
    /// Last view of the control topic.
    view: ControlView,
    /// Control topic log end when `view` was read (-1: never read).
    control_seen: i64,
    /// Settings version applied (0: the configuration file's).
    applied_version: i64,
    /// The consumer offset sync settings in force, watched by the duties task.
    sync: watch::Sender<MirrorSync>,
    /// Mirror records in the source cluster of topics mirrored from the target, by topic (the
    /// loop check of mirrors both ways).
    upstream: HashMap<String, MirrorRecord>,
    /// Source control topic log end when `upstream` was read (-1: never read).
    upstream_seen: i64,
    /// Every mirror flow of the configuration, for the mirror loop check.
    hops: Vec<MirrorHop>,
}

/// How often a mirror flow looks at the control topic and checks for foreign writes.
const MIRROR_TICK: Duration = Duration::from_millis(500);

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
        let policy = cfg.replication_policy();
        let mm2 = cfg.mm2_topic_names();
        let topic_lists = Lists {
            include: cfg.topics.clone(),
            exclude: cfg.topics_exclude.clone(),
        };
        let mirror = (cfg.mode == FlowMode::Mirror).then(|| MirrorCtl {
            link: cfg.link_name(),
            view: ControlView::default(),
            control_seen: -1,
            applied_version: 0,
            sync: watch::Sender::new(MirrorSync {
                enable: cfg.consumer_offset_sync,
                every: cfg.consumer_offset_sync_interval,
                filters: cfg.consumer_offset_group_filters.clone(),
            }),
            upstream: HashMap::new(),
            upstream_seen: -1,
            hops: Vec::new(),
        });
        let (pump, pump_ends) = Pump::channels();
        Flow {
            cfg,
            source,
            target,
            reverse_configured,
            replication_factor,
            policy,
            mm2,
            pump,
            pump_ends: Some(pump_ends),
            stored_progress: HashMap::new(),
            retake: Default::default(),
            producer: None,
            topic_lists,
            reported: HashMap::new(),
            status: Arc::new(status),
            mirror,
            held: HashSet::new(),
            paused: None,
            pause_seen: -1,
            source_down: None,
            ownership: None,
            scale: ScaleView::default(),
            obs: Arc::new(Observer::new()),
            refresh_soon: false,
            timers: TimerTable::default(),
            takeover: None,
        }
    }

    fn path_settings(&self) -> PathSettings {
        PathSettings {
            flow: self.cfg.name(),
            source: self.source.name().to_string(),
            target: self.target.name().to_string(),
            buffer_bytes: self.cfg.buffer_bytes,
            fetch_max_bytes: self.cfg.fetch_max_bytes,
            fetch_max_wait: self.cfg.fetch_max_wait,
            mirrored: self.cfg.mode == FlowMode::Mirror,
            max_bytes_per_second: self.cfg.max_bytes_per_second,
            recompress: self.cfg.recompress,
        }
    }

    /// Shares the work with other instances: only units `ownership` assigns are run.
    pub fn with_ownership(mut self, ownership: Arc<Ownership>) -> Flow {
        self.ownership = Some(ownership);
        self
    }

    /// Reports metrics and facts to `obs` (by default to an observer nobody reads).
    pub fn with_observer(mut self, obs: Arc<Observer>) -> Flow {
        self.obs = obs;
        self
    }

    /// Mirror flows: every mirror flow of the configuration (this one too), so that a topic
    /// that came from this flow's target over prefixed mirror topics is not mirrored back.
    pub fn with_mirror_hops(mut self, hops: Vec<MirrorHop>) -> Flow {
        if let Some(m) = self.mirror.as_mut() {
            m.hops = hops;
        }
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
                .scale
                .assigned
                .contains(&self.partition_item(topic, partition))
    }

    /// Whether this instance does the flow-wide duties.
    fn owns_duties(&self) -> bool {
        self.ownership.is_none() || self.scale.assigned.contains(&self.duties_item())
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

    /// Runs until `shutdown` turns true (or its sender is gone), then stops the pump after
    /// the answers in flight, persists progress and returns.
    pub async fn run(mut self, shutdown: impl Into<Shutdown>) -> Result<()> {
        let shutdown: Shutdown = shutdown.into();
        let name = self.name();
        tracing::info!(flow = %name, "starting");
        let (positions, position_requests) = PositionsHandle::channel();
        if let Some(ends) = self.pump_ends.take() {
            Pump::spawn(
                PumpParts {
                    settings: self.path_settings(),
                    source: self.source.clone(),
                    target: self.target.clone(),
                    ownership: self.ownership.clone(),
                    positions: Some(position_requests),
                    status: self.status.clone(),
                    obs: self.obs.clone(),
                },
                ends,
            );
        }
        // Setup, retried until it works or we are told to stop.
        loop {
            match self.setup().await {
                Ok(()) => break,
                Err(e) => {
                    tracing::error!(flow = %name, "setup failed, retrying: {e}");
                    self.obs.error(&name, "setup");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                        _ = shutdown.stopped() => {
                            self.pump.drain().await;
                            return Ok(());
                        }
                    }
                }
            }
        }
        let duties = self.start_duties(&shutdown, positions);
        let now = Instant::now();
        self.timers.set(Due::Refresh, now);
        self.timers.set(Due::Flush, now + Duration::from_secs(1));
        self.timers.set(Due::Status, now);
        self.timers.set(Due::Pause, now + paused::PAUSE_CHECK);
        if self.mirror.is_some() {
            self.timers.set(Due::Mirror, now);
        }
        self.timers.set(
            Due::OffsetSync,
            now + self.cfg.offset_sync_interval.min(Duration::from_secs(5)),
        );
        while !shutdown.is_stopped() {
            self.control_round().await;
            let now = Instant::now();
            let wake = self
                .timers
                .next()
                .unwrap_or(now + CONTROL_TICK)
                .min(now + CONTROL_TICK);
            let event = tokio::select! {
                e = self.pump.events.recv() => e,
                _ = tokio::time::sleep_until(wake.into()) => None,
                _ = shutdown.stopped() => None,
            };
            if let Some(e) = event {
                self.take_event(e).await;
            }
            while let Ok(e) = self.pump.events.try_recv() {
                self.take_event(e).await;
            }
        }
        // Stop: answers to requests in flight are awaited and applied; queued batches are
        // abandoned without advancing progress; the acknowledged position is persisted.
        let (last, t) = self.pump.drain().await;
        self.publish_status(None);
        let mut attempt = 0;
        while let Err(e) = self.write_progress(&last).await {
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
        if let Some(d) = duties {
            let _ = d.await;
        }
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

    /// One round of the control plane: ownership, topic refresh, mirror upkeep, progress
    /// records, offset syncs, status. It may wait on the clusters: the pump runs beside it.
    async fn control_round(&mut self) {
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
        if self.due(Due::Refresh, now) {
            self.refresh_round(now).await;
        }
        if self.due(Due::Pause, now) {
            self.timers.set(Due::Pause, now + paused::PAUSE_CHECK);
            if let Err(e) = self.check_pause().await {
                tracing::warn!(flow = %self.name(), "cannot read the pause record: {e}");
            }
        }
        if self.mirror.is_some() && self.due(Due::Mirror, now) {
            self.timers.set(Due::Mirror, now + MIRROR_TICK);
            if self.owns_duties() && self.may_write() {
                match self.mirror_tick().await {
                    Ok(view) => self.publish_status(Some(&view)),
                    Err(e) => tracing::warn!(flow = %self.name(), "mirror upkeep failed: {e}"),
                }
            }
        }
        self.send_held();
        if self.due(Due::Flush, now) {
            self.timers.set(Due::Flush, now + Duration::from_secs(1));
            if self.may_write() {
                if let Err(e) = self.flush_progress().await {
                    tracing::warn!(flow = %self.name(), "progress write failed: {e}");
                    self.obs.error(&self.name(), "progress");
                }
            }
        }
        if self.due(Due::OffsetSync, now) {
            self.timers
                .set(Due::OffsetSync, now + self.cfg.offset_sync_interval);
            if self.cfg.emit_offset_syncs && self.mm2_records() && self.may_write() {
                if let Err(e) = self.write_offset_syncs().await {
                    tracing::warn!(flow = %self.name(), "offset syncs failed: {e}");
                    self.obs.error(&self.name(), "offset_sync");
                }
            }
        }
        if self.due(Due::Status, Instant::now()) {
            self.publish_status(None);
            self.timers.set(Due::Status, Instant::now() + STATUS_EVERY);
        }
    }

    /// Whether deadline `d` has come.
    fn due(&self, d: Due, now: Instant) -> bool {
        self.timers.get(d).is_some_and(|at| at <= now)
    }

    /// Refreshes topics, and schedules the next refresh (soon while partitions dropped for a
    /// fresh start are not back).
    async fn refresh_round(&mut self, now: Instant) {
        let name = self.name();
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
        // Partitions dropped for a fresh start that could not be taken up yet (the target or
        // the source not answering) are tried again soon, not at the next regular refresh.
        let view = self.pump.snapshot().await;
        let retake: BTreeSet<PartKey> = self
            .retake
            .iter()
            .filter(|k| !view.parts.contains_key(*k) && self.owns_partition(&k.0, k.1))
            .cloned()
            .collect();
        self.retake = retake;
        if !self.retake.is_empty() {
            self.timers.set(Due::Refresh, now + RESYNC_DELAY * 2);
        }
        if self.ownership.is_some() {
            self.report_ownership(&view);
        }
        self.pump.send(Command::Replan);
    }

    /// Acts on what the pump reported.
    async fn take_event(&mut self, event: PumpEvent) {
        match event {
            PumpEvent::BeyondEnd(k) => self.stop_beyond_end(&k).await,
            PumpEvent::Diverged {
                topic,
                partition,
                why,
            } => {
                if let Err(e) = self.mark_diverged(&topic, partition, why).await {
                    tracing::warn!(flow = %self.name(), %topic, partition, "cannot record the stop in the control topic: {e}");
                }
            }
            PumpEvent::Retake { key, stored } => {
                let pk = progress::key(self.source.name(), &key.0, key.1);
                self.stored_progress.insert(pk, stored);
                self.retake.insert(key);
                self.refresh_soon = true;
            }
            PumpEvent::RefreshTopics => self.refresh_soon = true,
        }
    }

    /// Starts the flow's duties as a task of their own: heartbeats, checkpoints and group offset
    /// sync for replicate flows that write MirrorMaker 2 records, consumer offset sync for
    /// mirror flows.
    fn start_duties(
        &mut self,
        shutdown: &Shutdown,
        positions: PositionsHandle,
    ) -> Option<tokio::task::JoinHandle<()>> {
        if let Some(m) = &self.mirror {
            let duties = self.duties(positions).for_mirror(m.sync.subscribe());
            return Some(tokio::spawn(duties.run(shutdown.clone())));
        }
        let wanted =
            self.cfg.emit_heartbeats || self.cfg.emit_checkpoints || self.cfg.sync_group_offsets;
        if !wanted {
            return None;
        }
        Some(tokio::spawn(self.duties(positions).run(shutdown.clone())))
    }

    /// The flow's duties task, asking `positions` for the pump's maps.
    fn duties(&self, positions: PositionsHandle) -> Duties {
        Duties::new(
            self.cfg.clone(),
            self.source.clone(),
            self.target.clone(),
            self.reverse_configured,
            self.replication_factor,
            self.policy.clone(),
            self.ownership.clone(),
            self.obs.clone(),
            positions,
        )
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
        store::ensure_compacted_topic(
            &self.target,
            self.target.progress_topic(),
            self.replication_factor,
        )
        .await?;
        self.reload_progress().await?;
        let (id, epoch) = self.target.init_producer_id().await?;
        self.producer = Some(ProducerIdentity { id, epoch });
        // A flow paused while no instance ran stays paused: nothing is taken up before this.
        self.check_pause().await?;
        if self.mirror.is_some() {
            // Commands stored while no instance ran are applied before anything is written.
            self.mirror_read_control().await?;
        }
        if self.cfg.emit_heartbeats && self.mm2_records() {
            let heartbeats = self.mm2.heartbeats();
            store::ensure_compacted_topic(&self.target, heartbeats, self.replication_factor)
                .await?;
            if !self.reverse_configured {
                store::ensure_compacted_topic(&self.source, heartbeats, self.replication_factor)
                    .await?;
            }
        }
        if self.cfg.emit_offset_syncs && self.mm2_records() {
            let t = self.mm2.offset_syncs(self.target.name());
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
            topic_id: None,
        };
        self.source
            .partition(topic, partition)
            .fetch_once(read)
            .await
    }

    /// Tells the pump which topics are held, if that changed.
    fn send_held(&mut self) {
        let held = self.held_topics();
        if held != self.held {
            self.held = held.clone();
            self.pump.send(Command::Hold(held));
        }
    }

    /// Topics whose partitions move no data now (paused mirrors).
    fn held_topics(&self) -> HashSet<String> {
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
