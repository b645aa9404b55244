//! Which source topics a flow replicates and their remote topics: the topic refresh (lists,
//! selection, creation with the source topic's own settings, added partitions), and what
//! happens when a topic changes under the flow: a source topic deleted and created again (its
//! topic id changed), a position beyond the source log's end, a remote topic deleted.

use super::*;
use crate::naming::mirror_would_cycle;

impl Flow {
    pub(super) async fn refresh_topics(&mut self) -> Result<()> {
        let (src, dst) = (
            self.source.name().to_string(),
            self.target.name().to_string(),
        );
        if self.mirror.is_some() && self.owns_duties() {
            // The mirror records as they are now, before any partition is taken up: an
            // instance taking over a mirror flow (its runner died) holds a paused mirror and
            // skips an ended one from the start, whatever its last look said.
            self.mirror_read_control().await?;
            self.send_held();
        }
        if let Some(l) = lists::read(&self.target, ListKind::Topics, &src, &dst).await? {
            if l != self.topic_lists {
                tracing::info!(flow = %self.name(), include = ?l.include, exclude = ?l.exclude, "topic lists changed");
                self.topic_lists = l;
            }
        }
        let filter = NameFilter::new(&self.topic_lists.include, &self.topic_lists.exclude)
            .map_err(|e| {
                Error::invalid(format!(
                    "bad topic regex in the lists of {}: {e}",
                    self.name()
                ))
            })?;
        let meta = self.source.metadata(None).await?;
        self.read_upstream().await;
        if self.mirror.is_some() && self.owns_duties() && self.may_write() {
            let present: HashSet<String> = meta.topics.iter().map(|t| t.name.clone()).collect();
            let view = self.pump.snapshot().await;
            self.record_failures(&view, Some(&present)).await?;
        }
        let mut wanted: BTreeMap<String, (usize, Option<[u8; 16]>)> = BTreeMap::new();
        for t in &meta.topics {
            if t.error_code != error_code::NONE || t.is_internal {
                continue;
            }
            let decision = topic_should_replicate(&filter, &self.policy, &self.mm2, &t.name, &dst);
            let mirror_ok = match &self.mirror {
                None => true,
                // Mirror flows copy only the selected topics, never one whose mirror ended, and
                // never the target's own topic mirrored here (unless a reversal handed it over).
                Some(m) => {
                    decision != TopicDecision::Heartbeats
                        && !m
                            .view
                            .records
                            .get(&t.name)
                            .is_some_and(|r| r.state.is_stopped())
                        && !self.mirrored_from_target(&t.name)
                        && !self.mirror_loops(m, &t.name)
                }
            };
            if decision.replicate() && mirror_ok {
                let id = (t.topic_id != [0; 16]).then_some(t.topic_id);
                wanted.insert(t.name.clone(), (t.partitions.len(), id));
            }
        }
        if self.ownership.is_some() {
            let mut items = std::collections::BTreeSet::new();
            for (topic, (count, _)) in &wanted {
                for p in 0..*count as i32 {
                    items.insert(self.partition_item(topic, p));
                }
            }
            items.insert(self.duties_item());
            self.scale.wanted_items = items;
            // Positions of partitions taken over from other instances are read fresh.
            self.reload_progress().await?;
        }
        // Stop partitions of topics no longer selected.
        let view = self.pump.snapshot().await;
        let dropped: Vec<PartKey> = view
            .parts
            .keys()
            .filter(|(t, _)| !wanted.contains_key(&**t))
            .cloned()
            .collect();
        if !dropped.is_empty() {
            let last = self.pump.release(dropped).await;
            self.write_progress(&last).await?;
            for k in last.parts.keys() {
                tracing::info!(flow = %self.name(), topic = %k.0, partition = k.1, "no longer selected; stopped");
            }
        }
        let view = self.pump.snapshot().await;
        self.stop_recreated_topics(&wanted, &view);
        for (topic, (count, topic_id)) in wanted {
            if !(0..count as i32).any(|p| self.owns_partition(&topic, p)) {
                continue; // another instance runs it
            }
            if let Err(e) = self.ensure_topic(&topic, count, topic_id, &view).await {
                self.report(&format!("topic {topic}"), format!("{e}"));
            }
        }
        // A partition's starting point is durable before anything is written for it, so a
        // crash at any later moment leaves a progress record to resume from.
        self.flush_progress().await
    }

    /// Mirror flows: whether the source topic `topic` came from this flow's target, so that
    /// mirroring it would bring it home (by the mirror topic prefixes of `m`'s hops, see
    /// [`mirror_would_cycle`]). The one place a mirror flow decides that a topic loops.
    fn mirror_loops(&self, m: &MirrorCtl, topic: &str) -> bool {
        let (src, dst) = (self.cfg.source.as_str(), self.cfg.target.as_str());
        let looped = mirror_would_cycle(&m.hops, src, dst, topic);
        if looped {
            tracing::debug!(flow = %self.name(), %topic, "not mirrored: the topic came from cluster {dst} (its name starts with mirror topic prefixes leading back there)");
        }
        looped
    }

    /// Stops the running partitions of source topics that were deleted and created again
    /// under the same name since their position was taken (their topic id changed): the
    /// positions now point at other records.
    pub(super) fn stop_recreated_topics(
        &mut self,
        wanted: &BTreeMap<String, (usize, Option<[u8; 16]>)>,
        view: &PathView,
    ) {
        let changed: Vec<(&PartKey, &PartView, [u8; 16], [u8; 16])> = view
            .parts
            .iter()
            .filter_map(|(k, st)| {
                let now = wanted.get(&*k.0).and_then(|w| w.1)?;
                let was = st.topic_id()?;
                (was != now).then_some((k, st, was, now))
            })
            .collect();
        for (k, st, was, now) in changed {
            let why = recreated_message(self.source.name(), &k.0, k.1, st.map(), was, now);
            self.stop_partition(k, why, "source_topic_recreated");
        }
    }

    /// Stops partition `k` for `why` (logged once, counted as error `kind`, shown in the status
    /// and `/ready`): nothing more is fetched or written for it; what was acknowledged stays.
    pub(super) fn stop_partition(&self, k: &PartKey, why: String, kind: &'static str) {
        self.pump.send(Command::Stop {
            key: k.clone(),
            why,
            kind,
        });
    }

    /// Stops a partition whose position lies beyond the end of the source log: the topic was
    /// deleted and created again (its id changed), or its log was truncated below the position.
    /// Nothing is read from it again until an operator acts.
    pub(super) async fn stop_beyond_end(&mut self, k: &PartKey) {
        let name = self.name();
        let src = self.source.name().to_string();
        self.source.invalidate(&k.0);
        let now = match self.source.topic(&k.0).await {
            Ok(t) => t.map(|t| t.topic_id).filter(|id| *id != [0; 16]),
            Err(e) => {
                tracing::warn!(flow = %name, topic = %k.0, "cannot read the source topic's id: {e}");
                return; // decided at a later answer
            }
        };
        let end = self
            .source
            .list_offsets(&k.0, &[k.1], LATEST)
            .await
            .ok()
            .and_then(|v| v.first().map(|x| x.1));
        let view = self.pump.snapshot().await;
        let Some(st) = view.parts.get(k) else {
            return;
        };
        let msg = match (st.topic_id(), now) {
            (Some(was), Some(now)) if was != now => {
                recreated_message(&src, &k.0, k.1, st.map(), was, now)
            }
            _ => format!(
                "cluster {src}, topic {}, partition {}, offset {}: the source log now ends at {}, below the position strait replicated up to; records were removed from the source log after they were copied (an unclean leader election truncates a log this way); replication stopped so that no offset is read twice with another meaning (the {} records copied stay on the target)",
                k.0,
                k.1,
                st.next_offset,
                end.map_or_else(|| "an unknown offset".to_string(), |e| e.to_string()),
                st.map().target_next()
            ),
        };
        self.stop_partition(k, msg, "source_truncated");
    }

    /// Records strait wrote into the remote topic of `topic` (its `partitions` partitions), by
    /// the running partitions' maps and the stored progress.
    pub(super) fn written_before(&self, topic: &str, partitions: usize, view: &PathView) -> i64 {
        (0..partitions as i32)
            .map(|p| self.written_into(topic, p, view))
            .sum()
    }

    /// Records strait wrote into the remote partition of `topic`/`partition`: the running
    /// partition's map, else its stored progress.
    fn written_into(&self, topic: &str, partition: i32, view: &PathView) -> i64 {
        match view.parts.get(&(Arc::from(topic), partition)) {
            Some(st) => st.map().target_next(),
            None => self
                .stored_progress
                .get(&progress::key(self.source.name(), topic, partition))
                .map_or(0, |s| s.map.target_next()),
        }
    }

    /// The remote topic of `topic` is gone although strait wrote into it: it is not created
    /// again (the rest would land at offsets the offset maps do not say, and groups translated
    /// through them would point at the wrong records). Every partition this instance owns stops.
    pub(super) fn stop_deleted_remote(
        &mut self,
        topic: &str,
        remote: &str,
        partitions: usize,
        topic_id: Option<[u8; 16]>,
        view: &PathView,
    ) {
        let tgt = self.target.name().to_string();
        let src = self.source.name().to_string();
        for p in 0..partitions as i32 {
            if !self.owns_partition(topic, p) {
                continue;
            }
            let key: PartKey = (Arc::from(topic), p);
            let written = self.written_into(topic, p, view);
            let why = format!(
                "cluster {tgt}, topic {remote}, partition {p}: the remote topic was deleted while strait replicates into it (the {written} records strait wrote there are gone); it is not created again, so nothing lands at offsets the offset map does not say; partition stopped (replicate into a fresh remote topic to start over)"
            );
            if view.parts.contains_key(&key) {
                self.stop_partition(&key, why, "remote_topic_deleted");
                continue;
            }
            let Some(stored) = self
                .stored_progress
                .get(&progress::key(&src, topic, p))
                .cloned()
            else {
                continue;
            };
            let Some(writer) = stored.writer else {
                self.report(&format!("resume {topic}/{p}"), why);
                continue;
            };
            tracing::error!(flow = %self.name(), "{why}");
            self.obs.error(&self.name(), "remote_topic_deleted");
            let id = stored.topic_id.or(topic_id);
            let start = self.part_start(PartStart {
                flushed: true,
                failed: Some(why),
                topic_id: id,
                leader_epoch: stored.leader_epoch,
                ..PartStart::new(topic, remote, p, stored.map, writer)
            });
            self.pump.send(Command::Add {
                key,
                start: Box::new(start),
            });
        }
    }

    pub(super) async fn ensure_topic(
        &mut self,
        topic: &str,
        partitions: usize,
        topic_id: Option<[u8; 16]>,
        view: &PathView,
    ) -> Result<()> {
        let remote = match &self.mirror {
            Some(_) => self.cfg.mirror_topic(topic),
            None => self.policy.remote_topic(self.source.name(), topic),
        };
        let existing = self.target.topic(&remote).await?;
        if let Some(m) = &self.mirror {
            if !m.view.records.contains_key(topic) {
                // The record says whether strait created the topic, which identical offsets need;
                // it is written before the topic is created.
                let created = existing.is_none();
                if !created {
                    tracing::warn!(flow = %self.name(), %topic, "cluster {}, topic {remote}: the destination topic already existed; its offsets are mapped through the offset map, not guaranteed identical to the source's", self.target.name());
                }
                let rec =
                    MirrorRecord::new(&m.link, self.source.name(), topic, created, store::now_ms());
                self.mirror_write(rec).await?;
            }
        }
        let remote_partitions = match existing {
            Some(t) => {
                if !view.has_topic(topic) {
                    if let Err(e) = self.check_compatible(topic, &remote).await {
                        // The cached metadata may be of a topic deleted since: look again.
                        self.target.invalidate(&remote);
                        return Err(e);
                    }
                }
                t.partitions.len()
            }
            None if self.written_before(topic, partitions, view) > 0 => {
                self.stop_deleted_remote(topic, &remote, partitions, topic_id, view);
                return Ok(());
            }
            None => self.create_remote(topic, &remote, partitions).await?,
        };
        let remote_partitions = self
            .add_remote_partitions(topic, &remote, partitions, remote_partitions)
            .await;
        let name: Arc<str> = Arc::from(topic);
        for p in 0..partitions.min(remote_partitions) as i32 {
            let key = (Arc::clone(&name), p);
            if view.parts.contains_key(&key) || !self.owns_partition(topic, p) {
                continue;
            }
            if view.awaiting.contains(&key) {
                self.refresh_soon = true;
                continue;
            }
            match self.resume_partition(topic, &remote, p, topic_id).await {
                Ok(start) => {
                    tracing::info!(flow = %self.name(), topic = %topic, partition = p, from = start.map.source_next(), target_offset = start.map.target_next(), "replicating partition");
                    self.pump.send(Command::Add {
                        key,
                        start: Box::new(start),
                    });
                }
                Err(e) => self.report(&format!("resume {topic}/{p}"), e.to_string()),
            }
        }
        Ok(())
    }

    /// Creates the remote topic of `topic` with `partitions` partitions and the source
    /// topic's own settings; returns its partition count.
    async fn create_remote(&self, topic: &str, remote: &str, partitions: usize) -> Result<usize> {
        // The source topic's own settings, not the source broker's defaults: the
        // target's brokers apply their own.
        let configs: Vec<(String, String)> = match self.source.describe_topic_overrides(topic).await
        {
            Ok(c) => c
                .into_iter()
                .filter(|(k, _, own)| {
                    (*own && REPLICABLE_CONFIGS.contains(&k.as_str()))
                        || EFFECTIVE_CONFIGS.contains(&k.as_str())
                })
                .map(|(k, v, _)| (k, v))
                .collect(),
            Err(e) => {
                tracing::warn!(flow = %self.name(), %topic, "cannot read topic configs, creating with defaults: {e}");
                Vec::new()
            }
        };
        let created = self
            .target
            .create_topic(remote, partitions as i32, self.replication_factor, &configs)
            .await
            .map_err(|e| e.topic(remote))?;
        if created {
            tracing::info!(flow = %self.name(), %topic, %remote, partitions, "created remote topic");
        }
        Ok(partitions)
    }

    /// Adds partitions to the remote topic up to the source's `partitions` (it has
    /// `remote_partitions`); returns how many it has now (reported when still fewer).
    async fn add_remote_partitions(
        &mut self,
        topic: &str,
        remote: &str,
        partitions: usize,
        remote_partitions: usize,
    ) -> usize {
        let mut remote_partitions = remote_partitions;
        if remote_partitions < partitions {
            match self
                .target
                .create_partitions(remote, partitions as i32)
                .await
            {
                Ok(()) => {
                    tracing::info!(flow = %self.name(), %topic, %remote, from = remote_partitions, to = partitions, "added partitions to the remote topic");
                    remote_partitions = partitions;
                }
                Err(e) => {
                    tracing::debug!(flow = %self.name(), %remote, "cannot add partitions: {e}")
                }
            }
        }
        if remote_partitions < partitions {
            self.report(
                &format!("partitions {topic}"),
                format!(
                    "cluster {}, topic {remote}: has {remote_partitions} partitions but source topic {topic} on cluster {} has {partitions}; partitions {remote_partitions}..{partitions} are not replicated until the remote topic has them",
                    self.target.name(),
                    self.source.name()
                ),
            );
        }
        remote_partitions
    }

    /// An existing remote topic must keep records the way the source does: a compacted source
    /// into a deleting remote (or the reverse) would silently change what consumers see.
    pub(super) async fn check_compatible(&self, topic: &str, remote: &str) -> Result<()> {
        let policy = |configs: Vec<(String, Option<String>)>| {
            configs
                .into_iter()
                .find(|(k, _)| k == "cleanup.policy")
                .and_then(|(_, v)| v)
                .unwrap_or_else(|| "delete".to_string())
        };
        let src = policy(self.source.describe_topic_configs(topic).await?);
        let dst = policy(self.target.describe_topic_configs(remote).await?);
        if src != dst {
            return Err(Error::invalid(format!(
                "cluster {}, topic {remote}: cleanup.policy is {dst} but source topic {topic} on cluster {} has {src}; not replicating into it",
                self.target.name(),
                self.source.name()
            )));
        }
        Ok(())
    }
}
