//! Mirror flows' control (Cluster Linking parity): mirror records and commands in the control
//! topic, pausing, promotion and failover, foreign writes into mirror topics, and consumer
//! offset sync of mirror topics.

use super::*;

impl Flow {
    /// Stores a mirror record and keeps it in the view.
    pub(super) async fn mirror_write(&mut self, rec: MirrorRecord) -> Result<()> {
        mirrors::write_state(&self.target, &rec, self.replication_factor).await?;
        if let Some(m) = self.mirror.as_mut() {
            m.view.records.insert(rec.topic.clone(), rec);
        }
        Ok(())
    }

    /// Mirror upkeep, every [`MIRROR_TICK`]: picks up commands and link settings, advances
    /// promotions, checks for foreign writes, and syncs consumer offsets. Returns the
    /// partitions it looked at.
    pub(super) async fn mirror_tick(&mut self) -> Result<PathView> {
        self.mirror_read_control().await?;
        let view = self.pump.snapshot().await;
        self.advance_promotions(&view).await?;
        self.check_foreign_writes(&view).await?;
        let due = match &self.mirror {
            Some(m) => m.sync_enable && Instant::now() >= m.next_sync,
            None => false,
        };
        if due {
            if let Err(e) = self.mirror_offset_sync(None).await {
                tracing::warn!(flow = %self.name(), "consumer offset sync failed: {e}");
            }
            if let Some(m) = self.mirror.as_mut() {
                m.next_sync = Instant::now() + m.sync_every;
            }
        }
        Ok(view)
    }

    /// Re-reads the control topic if it changed, and applies new link settings and commands.
    pub(super) async fn mirror_read_control(&mut self) -> Result<()> {
        let Some(m) = &self.mirror else {
            return Ok(());
        };
        let end = mirrors::control_end(&self.target).await?;
        if end == m.control_seen {
            return Ok(());
        }
        let link = m.link.clone();
        let view = mirrors::read_view(&self.target, self.source.name(), &link).await?;
        // Link settings.
        let version = view.link.as_ref().map(|l| l.version).unwrap_or(0);
        if version > m.applied_version {
            let (enable, every, filters) = mirrors::effective(&self.cfg, view.link.as_ref());
            tracing::info!(flow = %self.name(), %link, consumer_offset_sync = enable, interval_ms = every.as_millis() as u64, group_filters = %filters.to_json(), "link settings changed");
            if let Some(m) = self.mirror.as_mut() {
                m.sync_enable = enable;
                m.sync_every = every;
                m.filters = filters;
                m.applied_version = version;
                m.next_sync = Instant::now().min(m.next_sync);
            }
            mirrors::write_applied(&self.target, &link, version, self.replication_factor).await?;
        }
        // Commands, applied in the order they were given.
        let mut pending: Vec<(String, crate::mirror::MirrorCommand)> = view
            .commands
            .iter()
            .filter(|(t, c)| view.records.get(*t).is_some_and(|r| r.is_pending(c)))
            .map(|(t, c)| (t.clone(), c.clone()))
            .collect();
        pending.sort_by_key(|(_, c)| c.at_ms);
        if let Some(m) = self.mirror.as_mut() {
            m.view = view;
        }
        for (topic, cmd) in pending {
            let Some(mut rec) = self
                .mirror
                .as_ref()
                .and_then(|m| m.view.records.get(&topic).cloned())
            else {
                continue;
            };
            if !rec.apply(&cmd, store::now_ms()) {
                continue;
            }
            if rec.state.is_stopped() {
                // Stopped before the record says so: `strait mirror failover` then knows that
                // nothing more is written.
                self.stop_topic(&topic).await?;
            }
            tracing::info!(flow = %self.name(), %topic, command = cmd.action.as_str(), state = rec.state.as_str(), "mirror command applied");
            self.mirror_write(rec).await?;
        }
        // A mirror stopped elsewhere (another instance, an earlier run) is never written either.
        let running = self.pump.snapshot().await;
        let stopped: Vec<String> = match &self.mirror {
            Some(m) => m
                .view
                .records
                .iter()
                .filter(|(t, r)| r.state.is_stopped() && running.has_topic(t))
                .map(|(t, _)| t.clone())
                .collect(),
            None => Vec::new(),
        };
        for topic in stopped {
            self.stop_topic(&topic).await?;
        }
        // Our own writes moved the end; read from there next time.
        let end = mirrors::control_end(&self.target).await?;
        if let Some(m) = self.mirror.as_mut() {
            m.control_seen = end;
        }
        Ok(())
    }

    /// Ends mirroring of `topic`: answers to requests in flight are applied, progress is
    /// stored, and its partitions are dropped for good.
    pub(super) async fn stop_topic(&mut self, topic: &str) -> Result<()> {
        let view = self.pump.snapshot().await;
        let keys: Vec<PartKey> = view
            .parts
            .keys()
            .filter(|(t, _)| **t == *topic)
            .cloned()
            .collect();
        let last = self.pump.release(keys).await;
        self.write_progress(&last).await?;
        tracing::info!(flow = %self.name(), %topic, "mirror stopped: the topic is an ordinary writable topic and strait no longer writes to it");
        Ok(())
    }

    /// Finishes promotions whose topic caught up: every partition has all source records
    /// (checked against the source's log end now), nothing in flight, and consumer offsets synced.
    pub(super) async fn advance_promotions(&mut self, view: &PathView) -> Result<()> {
        let promoting: Vec<String> = match &self.mirror {
            Some(m) => m
                .view
                .records
                .iter()
                .filter(|(_, r)| r.state == MirrorState::Promoting)
                .map(|(t, _)| t.clone())
                .collect(),
            None => return Ok(()),
        };
        for topic in promoting {
            let parts: Vec<&PartView> = view.of_topic(&topic).collect();
            let expected = self
                .source
                .topic(&topic)
                .await?
                .map(|t| t.partitions.len())
                .unwrap_or(0);
            if parts.is_empty() || parts.len() != expected {
                continue;
            }
            if let Some(failed) = parts.iter().find_map(|st| st.failed.clone()) {
                let reason = format!("cannot promote until this is resolved: {failed}");
                if let Some(mut rec) = self
                    .mirror
                    .as_ref()
                    .and_then(|m| m.view.records.get(&topic).cloned())
                {
                    if rec.reason.as_deref() != Some(reason.as_str()) {
                        rec.reason = Some(reason);
                        self.mirror_write(rec).await?;
                    }
                }
                continue;
            }
            if parts.iter().any(|st| !st.idle) {
                continue;
            }
            let ps: Vec<i32> = parts.iter().map(|st| st.partition).collect();
            let next: HashMap<i32, i64> = parts
                .iter()
                .map(|st| (st.partition, st.map.source_next()))
                .collect();
            let ends = self.source.list_offsets(&topic, &ps, LATEST).await?;
            if ends.iter().any(|(p, end)| next.get(p) != Some(end)) {
                continue;
            }
            if self.mirror.as_ref().is_some_and(|m| m.sync_enable) {
                self.mirror_offset_sync(Some(&topic)).await?;
            }
            self.stop_topic(&topic).await?;
            if let Some(mut rec) = self
                .mirror
                .as_ref()
                .and_then(|m| m.view.records.get(&topic).cloned())
            {
                rec.state = MirrorState::Promoted;
                rec.reason = None;
                rec.updated_ms = store::now_ms();
                self.mirror_write(rec).await?;
            }
            tracing::info!(flow = %self.name(), %topic, "mirror promoted");
        }
        Ok(())
    }

    /// A mirror partition with nothing queued or in flight must end on the target exactly where
    /// strait's last write ended; anything else means something else wrote into it.
    pub(super) async fn check_foreign_writes(&mut self, view: &PathView) -> Result<()> {
        let mut by_topic: BTreeMap<String, Vec<(PartKey, i64)>> = BTreeMap::new();
        for (k, st) in &view.parts {
            if st.failed.is_none() && st.idle && st.flushed.is_some() {
                by_topic
                    .entry(st.target_topic.clone())
                    .or_default()
                    .push((k.clone(), st.map.target_next()));
            }
        }
        let tgt = self.target.name().to_string();
        for (topic, parts) in by_topic {
            let ps: Vec<i32> = parts.iter().map(|(k, _)| k.1).collect();
            let ends = self.target.list_offsets(&topic, &ps, LATEST).await?;
            for ((key, ours), (_, end)) in parts.into_iter().zip(ends) {
                if end == ours {
                    continue;
                }
                let p = key.1;
                let msg = if end > ours {
                    format!("cluster {tgt}, topic {topic}, partition {p}: {} records at offsets {ours}..{end} were written by something other than strait while the topic is mirrored; partition stopped (promote or fail over the mirror to make the topic writable)", end - ours)
                } else {
                    format!("cluster {tgt}, topic {topic}, partition {p}: the log ends at {end}, before the {ours} records strait mirrored there (deleted or truncated); partition stopped")
                };
                // The pump checks again under the same conditions: the partition may have
                // moved meanwhile.
                let (reply, stopped) = tokio::sync::oneshot::channel();
                self.pump.send(Command::StopIfIdleAt {
                    key: key.clone(),
                    target_next: ours,
                    why: msg.clone(),
                    reply,
                });
                if stopped.await.unwrap_or(false) {
                    self.mark_diverged(&key.0, p, msg).await?;
                }
            }
        }
        Ok(())
    }

    /// Makes a stopped partition durable in the topic's mirror record.
    pub(super) async fn mark_diverged(
        &mut self,
        topic: &str,
        partition: i32,
        why: String,
    ) -> Result<()> {
        let Some(mut rec) = self
            .mirror
            .as_ref()
            .and_then(|m| m.view.records.get(topic).cloned())
        else {
            return Ok(());
        };
        rec.diverged.insert(partition, why);
        rec.updated_ms = store::now_ms();
        self.mirror_write(rec).await
    }

    /// Cluster Linking's consumer offset sync: for groups passing the link's group filters and
    /// with no active members on the target, makes the target's committed offsets of mirrored
    /// partitions equal to the source's, translated through their offset maps (identical offsets
    /// translate to themselves). `only` limits it to one topic (promotion).
    pub(super) async fn mirror_offset_sync(&mut self, only: Option<&str>) -> Result<()> {
        let Some(m) = &self.mirror else {
            return Ok(());
        };
        let filters = m.filters.clone();
        let view = self.pump.snapshot().await;
        let all = self.source.list_groups().await?;
        for group in all.iter().filter(|g| filters.includes(g)) {
            let committed = match groups::committed(&self.source, group).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(flow = %self.name(), %group, "cannot read committed offsets: {e}");
                    continue;
                }
            };
            let mut wanted = Vec::new();
            for c in committed {
                if only.is_some_and(|t| t != c.topic) {
                    continue;
                }
                let Some(st) = view.parts.get(&(Arc::from(c.topic.as_str()), c.partition)) else {
                    continue;
                };
                if let Translation::Exact(t) = st.map.to_target(c.offset) {
                    wanted.push((st.target_topic.clone(), c.partition, t));
                }
            }
            let changed = wanted;
            if changed.is_empty() {
                continue;
            }
            match groups::active_members(&self.target, group).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::debug!(flow = %self.name(), %group, members = n, "group active on the target; offsets not synced");
                    continue;
                }
                Err(e) => {
                    tracing::warn!(flow = %self.name(), %group, "cannot describe group on the target: {e}");
                    continue;
                }
            }
            let current: HashMap<(String, i32), i64> = groups::committed(&self.target, group)
                .await?
                .into_iter()
                .map(|c| ((c.topic, c.partition), c.offset))
                .collect();
            let commits: Vec<(String, i32, i64)> = changed
                .iter()
                .filter(|(t, p, o)| current.get(&(t.clone(), *p)) != Some(o))
                .cloned()
                .collect();
            if !commits.is_empty() {
                groups::commit(&self.target, group, &commits).await?;
                tracing::info!(flow = %self.name(), %group, partitions = commits.len(), "synced consumer offsets");
            }
        }
        Ok(())
    }
}
