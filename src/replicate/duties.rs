//! A flow's flow-wide duties, as a task beside the data pump and the control actor: for
//! replicate flows MirrorMaker 2 heartbeats, checkpoints (consumer-group offsets translated to
//! the target) and group offset sync; for mirror flows the link's consumer offset sync. Both
//! syncs follow the one rule of [`super::group_sync`]. None of it can delay a Fetch or a
//! Produce: the task has its own connections (the cluster's control lane) and reads the data
//! path's acknowledged positions through [`PositionsHandle`], which the pump answers between
//! two of its rounds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tracing::Instrument;

use super::group_sync::{self, MirrorSync, Rewind};
use super::groups;
use super::lists::{self, ListKind, Lists};
use super::membership::Ownership;
use super::positions::{Positions, PositionsHandle};
use super::progress::{self, Stored};
use super::store;
use crate::client::Cluster;
use crate::config::FlowConfig;
use crate::error::{Error, Result};
use crate::filter::{group_should_sync, NameFilter};
use crate::mm2;
use crate::naming::{Mm2Topics, ReplicationPolicy};
use crate::observe::{Observer, Side};
use crate::offsets::{OffsetMap, Translation};
use crate::Shutdown;

/// The duties of one replicate flow.
pub struct Duties {
    cfg: FlowConfig,
    source: Arc<Cluster>,
    target: Arc<Cluster>,
    /// Whether the reverse flow is configured (if not, this flow also writes the reverse
    /// pair's heartbeats into the source, as MirrorMaker 2 does).
    reverse_configured: bool,
    replication_factor: i16,
    policy: ReplicationPolicy,
    /// The names of MirrorMaker 2's topics.
    mm2: Mm2Topics,
    ownership: Option<Arc<Ownership>>,
    obs: Arc<Observer>,
    positions: PositionsHandle,
    /// Last checkpoint written per (group, target topic, partition): (upstream, downstream).
    checkpointed: HashMap<(String, String, i32), (i64, i64)>,
    /// Stored progress of every partition (scale-out: those other instances run).
    stored: HashMap<String, Stored>,
    /// Mirror flows: the link's consumer offset sync settings (changed at run time).
    mirror: Option<watch::Receiver<MirrorSync>>,
}

impl Duties {
    /// The duties of the flow `cfg`, asking `positions` for the data path's maps.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: FlowConfig,
        source: Arc<Cluster>,
        target: Arc<Cluster>,
        reverse_configured: bool,
        replication_factor: i16,
        policy: ReplicationPolicy,
        ownership: Option<Arc<Ownership>>,
        obs: Arc<Observer>,
        positions: PositionsHandle,
    ) -> Duties {
        let mm2 = cfg.mm2_topic_names();
        Duties {
            cfg,
            source,
            target,
            reverse_configured,
            replication_factor,
            policy,
            mm2,
            ownership,
            obs,
            positions,
            checkpointed: HashMap::new(),
            stored: HashMap::new(),
            mirror: None,
        }
    }

    /// A mirror flow's duties: its consumer offset sync as `settings` say, and nothing of
    /// MirrorMaker 2's (no heartbeats, checkpoints or MirrorMaker 2 group sync).
    pub fn for_mirror(mut self, settings: watch::Receiver<MirrorSync>) -> Duties {
        self.cfg.emit_heartbeats = false;
        self.cfg.emit_checkpoints = false;
        self.cfg.sync_group_offsets = false;
        self.mirror = Some(settings);
        self
    }

    fn name(&self) -> String {
        self.cfg.name()
    }

    /// Whether this instance does the flow's duties and may write now (scale-out: it owns the
    /// duties unit, or the whole flow for a mirror flow, and its membership lease is valid).
    fn active(&self) -> bool {
        Ownership::does_duties(
            self.ownership.as_deref(),
            &self.name(),
            self.mirror.is_some(),
        )
    }

    /// Runs until `shutdown` turns true. The checkpoints written before are read first, so a
    /// restart does not write them again. `shutdown` is a [`Shutdown`] or the flow's
    /// `watch::Receiver<bool>`; a closed channel stops it too. Logs in a `duties` span naming
    /// the flow and its clusters.
    pub async fn run(self, shutdown: impl Into<Shutdown>) {
        let span = tracing::info_span!(
            "duties",
            flow = %self.name(),
            source = %self.cfg.source,
            target = %self.cfg.target
        );
        self.run_until(shutdown.into()).instrument(span).await
    }

    async fn run_until(mut self, shutdown: Shutdown) {
        let name = self.name();
        let checkpoints = self.cfg.emit_checkpoints || self.cfg.sync_group_offsets;
        let every = if self.cfg.emit_checkpoints {
            self.cfg.checkpoint_interval
        } else {
            self.cfg.sync_group_offsets_interval
        };
        let mut loaded = !checkpoints;
        let mut next_heartbeat = Instant::now();
        let mut next_checkpoint = Instant::now() + Duration::from_secs(1);
        let mut next_mirror_sync = self
            .mirror
            .as_ref()
            .map(|m| Instant::now() + m.borrow().every);
        while !shutdown.is_stopped() {
            let now = Instant::now();
            if let Some(next) = next_mirror_sync.as_mut() {
                *next = self.mirror_sync(now, *next).await;
            }
            if self.cfg.emit_heartbeats && now >= next_heartbeat {
                if self.active() {
                    let beat = self.heartbeat().await;
                    match &beat {
                        Ok(_) => self.obs.connected(&name, Side::Target, true),
                        Err(e) => self.obs.disconnected(&name, Side::Target, e.to_string()),
                    }
                    if let Err(e) = beat {
                        tracing::warn!(flow = %name, "heartbeat failed: {e}");
                        self.obs.error(&name, "heartbeat");
                    }
                }
                next_heartbeat = now + self.cfg.heartbeat_interval;
            }
            if checkpoints && now >= next_checkpoint {
                if self.active() {
                    if !loaded {
                        loaded = self.load_checkpoints().await;
                    }
                    if loaded {
                        if let Err(e) = self.checkpoints().await {
                            tracing::warn!(flow = %name, "checkpoints failed: {e}");
                            self.obs.error(&name, "checkpoint");
                        }
                    }
                }
                next_checkpoint = Instant::now() + every;
            }
            let mut wake = next_checkpoint;
            if self.cfg.emit_heartbeats {
                wake = wake.min(next_heartbeat);
            }
            if !checkpoints && !self.cfg.emit_heartbeats {
                wake = Instant::now() + Duration::from_secs(3600);
            }
            if let Some(next) = next_mirror_sync {
                wake = wake.min(next);
            }
            let settings_changed = async {
                match self.mirror.as_mut() {
                    Some(m) => m.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = shutdown.stopped() => {}
                true = settings_changed => next_mirror_sync = Some(Instant::now()),
            }
        }
    }

    /// A mirror flow's consumer offset sync pass if due at `now` (`next`); when the next one is.
    async fn mirror_sync(&mut self, now: Instant, next: Instant) -> Instant {
        let Some(settings) = self.mirror.as_ref().map(|m| m.borrow().clone()) else {
            return next;
        };
        if now < next {
            return next;
        }
        if settings.enable && self.active() {
            let name = self.name();
            match self.positions.get().await {
                Some(live) => {
                    let pass = group_sync::mirror_pass(
                        &self.source,
                        &self.target,
                        &name,
                        &settings.filters,
                        &live,
                        None,
                    )
                    .await;
                    if let Err(e) = pass {
                        tracing::warn!(flow = %name, "consumer offset sync failed: {e}");
                        self.obs.error(&name, "offset_sync");
                    }
                }
                None => return now + settings.every, // the data path has stopped
            }
        }
        Instant::now() + settings.every
    }

    /// Reads the checkpoints written before; `false` (logged) if the target did not answer.
    async fn load_checkpoints(&mut self) -> bool {
        let topic = self.mm2.checkpoints(self.source.name());
        match groups::read_checkpoints(&self.target, &topic).await {
            Ok(all) => {
                for ((g, t, p), c) in all {
                    self.checkpointed
                        .insert((g, t, p), (c.upstream_offset, c.downstream_offset));
                }
                true
            }
            Err(e) => {
                tracing::warn!(flow = %self.name(), "cannot read the checkpoints written before: {e}");
                self.obs.error(&self.name(), "checkpoint");
                false
            }
        }
    }

    async fn heartbeat(&self) -> Result<()> {
        let topic = self.mm2.heartbeats();
        write_heartbeat(&self.target, topic, self.source.name(), self.target.name()).await?;
        if !self.reverse_configured {
            write_heartbeat(&self.source, topic, self.target.name(), self.source.name()).await?;
        }
        Ok(())
    }

    /// One checkpoint pass: the selected groups' committed offsets on the source, translated
    /// through the acknowledged maps, written as MirrorMaker 2 checkpoints and synced to the
    /// target's groups as configured.
    async fn checkpoints(&mut self) -> Result<()> {
        let started = Instant::now();
        let (src, dst) = (
            self.source.name().to_string(),
            self.target.name().to_string(),
        );
        let lists = lists::read(&self.target, ListKind::Groups, &src, &dst)
            .await?
            .unwrap_or_else(|| Lists {
                include: self.cfg.groups.clone(),
                exclude: self.cfg.groups_exclude.clone(),
            });
        let filter = NameFilter::new(&lists.include, &lists.exclude).map_err(|e| {
            Error::invalid(format!(
                "bad group regex in the lists of {}: {e}",
                self.name()
            ))
        })?;
        let all = self.source.list_groups().await?;
        let groups: Vec<String> = all
            .iter()
            .filter(|g| group_should_sync(&filter, g))
            .cloned()
            .collect();
        tracing::debug!(flow = %self.name(), listed = all.len(), selected = groups.len(), "checkpoint pass");
        if groups.is_empty() {
            return Ok(());
        }
        if self.ownership.is_some() {
            for ((topic, p), stored) in store::read_progress_records(&self.target, &src).await? {
                self.stored.insert(progress::key(&src, &topic, p), stored);
            }
        }
        // Maps of the reverse flow (dst -> src), stored in the source cluster.
        let reverse = store::read_progress(&self.source, &dst).await?;
        let Some(live) = self.positions.get().await else {
            return Ok(()); // the data path has stopped
        };
        let mut checkpoints = Vec::new();
        for group in &groups {
            let committed = match groups::committed(&self.source, group).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(flow = %self.name(), %group, "cannot read committed offsets: {e}");
                    continue;
                }
            };
            for c in committed {
                let translated = self.translate(&live, &reverse, &c.topic, c.partition, c.offset);
                tracing::debug!(flow = %self.name(), %group, topic = %c.topic, partition = c.partition, committed = c.offset, ?translated, "translating");
                let Some((topic, Translation::Exact(downstream))) = translated else {
                    continue;
                };
                let key = (group.clone(), topic.clone(), c.partition);
                if self.checkpointed.get(&key) == Some(&(c.offset, downstream)) {
                    continue;
                }
                checkpoints.push(mm2::Checkpoint {
                    consumer_group_id: group.clone(),
                    topic,
                    partition: c.partition,
                    upstream_offset: c.offset,
                    downstream_offset: downstream,
                    metadata: c.metadata,
                });
            }
        }
        if !self.active() {
            return Ok(()); // the lease ran out or the duties moved during the pass
        }
        if self.cfg.emit_checkpoints {
            let topic = self.mm2.checkpoints(&src);
            groups::write_checkpoints(&self.target, &topic, &checkpoints, self.replication_factor)
                .await?;
        }
        if self.cfg.sync_group_offsets {
            self.sync_group_offsets(&checkpoints).await;
        }
        for c in checkpoints {
            self.checkpointed.insert(
                (c.consumer_group_id, c.topic, c.partition),
                (c.upstream_offset, c.downstream_offset),
            );
        }
        tracing::debug!(flow = %self.name(), elapsed_ms = started.elapsed().as_millis() as u64, "checkpoint pass done");
        self.obs.checkpoint_pass(
            &self.name(),
            started.elapsed(),
            &self.checkpointed,
            store::now_ms(),
        );
        Ok(())
    }

    /// Where `offset` of a source partition committed by a group lands: through the data
    /// path's live map, a stored map (scale-out: a partition another instance runs), or, for a
    /// topic that came from the target, the reverse flow's map back to its original.
    fn translate(
        &self,
        live: &Positions,
        reverse: &HashMap<(String, i32), OffsetMap>,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Option<(String, Translation)> {
        let src = self.source.name();
        let dst = self.target.name();
        if let Some((target_topic, map)) = live.get(&(topic.to_string(), partition)) {
            return Some((target_topic.clone(), map.to_target(offset)));
        }
        let stored = self.stored.get(&progress::key(src, topic, partition));
        if let (Some(s), true) = (stored, self.ownership.is_some()) {
            return Some((
                self.policy.remote_topic(src, topic),
                s.map.to_target(offset),
            ));
        }
        if self.policy.topic_source(topic).as_deref() == Some(dst) {
            let original = self.policy.upstream_topic(topic).unwrap_or_default();
            return reverse
                .get(&(original.clone(), partition))
                .map(|m| (original, m.to_source(offset)));
        }
        None
    }

    /// Commits translated offsets on the target by [`Rewind::Never`] (see
    /// [`super::group_sync`]): a group is never moved backwards, and offsets it committed on
    /// the target itself (anything other than what strait last translated) are left alone.
    async fn sync_group_offsets(&self, checkpoints: &[mm2::Checkpoint]) {
        let mut by_group: BTreeMap<&str, Vec<group_sync::Wanted>> = BTreeMap::new();
        for c in checkpoints {
            by_group
                .entry(c.consumer_group_id.as_str())
                .or_default()
                .push((c.topic.clone(), c.partition, c.downstream_offset));
        }
        let name = self.name();
        for (group, wanted) in by_group {
            let last = |topic: &str, partition: i32| {
                self.checkpointed
                    .get(&(group.to_string(), topic.to_string(), partition))
                    .map(|x| x.1)
            };
            let synced =
                group_sync::sync_group(&self.target, &name, group, &wanted, last, Rewind::Never);
            if let Err(e) = synced.await {
                tracing::warn!(flow = %name, %group, "group offset sync failed: {e}");
            }
        }
    }
}

/// Writes one MirrorMaker 2 heartbeat `source -> target` into `cluster`'s heartbeats topic
/// `topic`.
async fn write_heartbeat(cluster: &Cluster, topic: &str, source: &str, target: &str) -> Result<()> {
    let hb = mm2::Heartbeat {
        source_cluster_alias: source.to_string(),
        target_cluster_alias: target.to_string(),
        timestamp_ms: store::now_ms(),
    };
    let key = bytes::Bytes::from(
        hb.encode_key()
            .map_err(|e| Error::invalid(format!("MirrorMaker 2 record: {e}")))?,
    );
    store::append_once(
        cluster,
        topic,
        0,
        &[(key, Some(bytes::Bytes::from(hb.encode_value())))],
    )
    .await?;
    Ok(())
}
