//! Mirror flows' control (Cluster Linking parity): mirror records and commands in the control
//! topic, pausing, promotion and failover, foreign writes into mirror topics. Consumer offset
//! sync runs in the duties task ([`crate::replicate::group_sync`]).

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
    /// promotions and checks for foreign writes (consumer offsets are synced by the duties
    /// task). Returns the partitions it looked at.
    pub(super) async fn mirror_tick(&mut self) -> Result<PathView> {
        self.mirror_read_control().await?;
        let view = self.pump.snapshot().await;
        self.advance_promotions(&view).await?;
        self.await_handover(&view).await;
        self.check_foreign_writes(&view).await?;
        self.record_failures(&view, None).await?;
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
                m.sync.send_replace(MirrorSync {
                    enable,
                    every,
                    filters,
                });
                m.applied_version = version;
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
        self.forget_restored(&view).await?;
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
        // Read again from the end seen before this read: a record another writer stored
        // meanwhile is read next time (our own writes cost one more read).
        if let Some(m) = self.mirror.as_mut() {
            m.control_seen = end;
        }
        Ok(())
    }

    /// Topics `view` shows restored anew (truncate-and-restore deleted the destination topic
    /// and started the mirror over; on the first read, every restored one): their positions
    /// are read again from the progress topic, where the restore removed those of the deleted
    /// log before it wrote the record, and their cached metadata is dropped.
    async fn forget_restored(&mut self, view: &mirrors::ControlView) -> Result<()> {
        let Some(m) = self.mirror.as_ref() else {
            return Ok(());
        };
        let first = m.control_seen < 0;
        let restored: Vec<String> = view
            .records
            .iter()
            .filter(|(t, r)| {
                r.restored.is_some()
                    && (first
                        || m.view.records.get(*t).map(|old| &old.restored) != Some(&r.restored))
            })
            .map(|(t, _)| t.clone())
            .collect();
        if restored.is_empty() {
            return Ok(());
        }
        let src = self.source.name().to_string();
        let stored = store::read_progress_records(&self.target, &src).await?;
        for topic in restored {
            self.target.invalidate(&self.cfg.mirror_topic(&topic));
            self.stored_progress
                .retain(|k, _| progress::parse_key(k, &src).is_none_or(|(t, _)| t != topic));
            for ((t, p), s) in stored.iter().filter(|((t, _), _)| *t == topic) {
                self.stored_progress
                    .insert(progress::key(&src, t, *p), s.clone());
            }
        }
        Ok(())
    }

    /// Ends mirroring of `topic`: answers to requests in flight are applied, progress is
    /// stored, and its partitions are dropped for good. Returns their last state.
    pub(super) async fn stop_topic(&mut self, topic: &str) -> Result<PathView> {
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
        Ok(last)
    }

    /// Finishes promotions and reversals whose topic caught up: every partition has all source
    /// records (checked against the source's log end now), nothing in flight, and consumer
    /// offsets synced.
    pub(super) async fn advance_promotions(&mut self, view: &PathView) -> Result<()> {
        let promoting: Vec<String> = match &self.mirror {
            Some(m) => m
                .view
                .records
                .iter()
                .filter(|(_, r)| r.state.is_finishing())
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
                .map(|st| (st.partition, st.map().source_next()))
                .collect();
            let ends = self.source.list_offsets(&topic, &ps, LATEST).await?;
            if ends.iter().any(|(p, end)| next.get(p) != Some(end)) {
                continue;
            }
            let sync = self.mirror.as_ref().map(|m| m.sync.borrow().clone());
            if let Some(sync) = sync.filter(|s| s.enable) {
                // The last sync of the topic's groups, by the duties task's rule, before the
                // topic becomes writable.
                let live = view
                    .of_topic(&topic)
                    .map(|st| {
                        (
                            (st.source_topic.clone(), st.partition),
                            (st.target_topic.clone(), st.map().clone()),
                        )
                    })
                    .collect();
                group_sync::mirror_pass(
                    &self.source,
                    &self.target,
                    &self.name(),
                    &sync.filters,
                    &live,
                    Some(&topic),
                )
                .await?;
            }
            let last = self.stop_topic(&topic).await?;
            if let Some(mut rec) = self
                .mirror
                .as_ref()
                .and_then(|m| m.view.records.get(&topic).cloned())
            {
                if rec.state == MirrorState::Reversing {
                    self.finish_reversal(rec, &last).await?;
                    continue;
                }
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
                    .push((k.clone(), st.map().target_next()));
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
}
