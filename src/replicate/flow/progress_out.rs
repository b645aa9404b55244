//! What a flow writes into the target besides replicated records: its progress records (the
//! acknowledged offset map and writer identity of each partition that moved) and MirrorMaker 2
//! offset syncs.

use super::*;
use crate::replicate::progress::Progress;

/// A progress record ready to write, and what it says of its partition.
pub(super) struct Flushed {
    key: PartKey,
    /// The take-up it belongs to (the high half of the partition's rewind counter).
    take_up: u64,
    at: Progress,
    stored: Stored,
}

/// What a background write was.
pub(super) enum Written {
    /// Progress records.
    Progress(Vec<Flushed>),
    /// Offset syncs, with the delta each recorded.
    OffsetSyncs(Vec<(PartKey, i64)>),
}

impl Flow {
    /// Progress records for the partitions whose acknowledged position moved since written.
    fn progress_records(&self) -> (Vec<(Bytes, Option<Bytes>)>, Vec<Flushed>) {
        let src = self.source.name();
        let mut records = Vec::new();
        let mut flushed = Vec::new();
        for (k, st) in &self.path.parts {
            if st.flushed == Some(st.acked()) {
                continue;
            }
            let key = progress::key(src, &st.source_topic, st.partition);
            let stored = st.stored();
            records.push((
                Bytes::from(key),
                Some(Bytes::from(progress::encode(&stored))),
            ));
            flushed.push(Flushed {
                key: k.clone(),
                take_up: st.epoch >> 32,
                at: st.acked(),
                stored,
            });
        }
        (records, flushed)
    }

    /// Writes progress records for partitions that moved, after any background write of
    /// them has landed (so a newer position is never overwritten by an older one).
    pub async fn flush_progress(&mut self) -> Result<()> {
        self.wait_for_writes().await;
        let (records, flushed) = self.progress_records();
        if records.is_empty() {
            return Ok(());
        }
        if !self.may_write() {
            return Err(Error::invalid(
                "not writing progress: this instance's group membership lease ran out",
            ));
        }
        store::append_once(&self.target, PROGRESS_TOPIC, 0, &records).await?;
        self.note_written(Written::Progress(flushed));
        Ok(())
    }

    /// Starts writing progress records beside the data path (one write at a time).
    pub(super) fn start_flush_progress(&mut self) {
        if self.writing.0 || !self.may_write() {
            return;
        }
        let (records, flushed) = self.progress_records();
        if records.is_empty() {
            return;
        }
        self.writing.0 = true;
        let target = self.target.clone();
        let done = self.background.0.clone();
        tokio::spawn(async move {
            let result = store::append_once(&target, PROGRESS_TOPIC, 0, &records)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string());
            let _ = done.send(Background::Written {
                what: Written::Progress(flushed),
                result,
            });
        });
    }

    /// Waits until no background write of progress or offset syncs is out.
    pub(super) async fn wait_for_writes(&mut self) {
        while self.writing.0 || self.writing.1 {
            match self.background.1.recv().await {
                Some(b) => self.take_background(b),
                None => return,
            }
        }
    }

    /// A background write landed (`Ok`) or failed.
    pub(super) fn take_written(&mut self, what: Written, result: std::result::Result<(), String>) {
        let name = self.name();
        match (&what, &result) {
            (Written::Progress(_), _) => self.writing.0 = false,
            (Written::OffsetSyncs(_), _) => self.writing.1 = false,
        }
        match result {
            Ok(()) => self.note_written(what),
            Err(e) => match what {
                Written::Progress(_) => {
                    tracing::warn!(flow = %name, "progress write failed: {e}");
                    self.obs.error(&name, "progress");
                }
                Written::OffsetSyncs(_) => {
                    tracing::warn!(flow = %name, "offset syncs failed: {e}");
                    self.obs.error(&name, "offset_sync");
                }
            },
        }
    }

    /// Records what landed: the partitions' written positions (if they are still the same
    /// take-up) or offset sync deltas.
    fn note_written(&mut self, what: Written) {
        match what {
            Written::Progress(flushed) => {
                let src = self.source.name().to_string();
                for f in flushed {
                    let Some(st) = self.path.parts.get_mut(&f.key) else {
                        continue;
                    };
                    if st.epoch >> 32 != f.take_up {
                        continue;
                    }
                    st.flushed = Some(f.at);
                    let key = progress::key(&src, &f.key.0, f.key.1);
                    self.stored_progress.insert(key, f.stored);
                }
            }
            Written::OffsetSyncs(changed) => {
                for (k, d) in changed {
                    if let Some(st) = self.path.parts.get_mut(&k) {
                        st.synced_delta = Some(d);
                    }
                }
            }
        }
    }

    /// Starts writing MM2-format offset syncs beside the data path for partitions whose
    /// source-to-target delta changed (one write at a time).
    pub(super) fn start_offset_syncs(&mut self) {
        if self.writing.1 {
            return;
        }
        let mut records = Vec::new();
        let mut changed = Vec::new();
        for (k, st) in &self.path.parts {
            if st.records == 0 && st.synced_delta.is_some() {
                continue;
            }
            let delta = st.acked().target_next - st.acked().source_next;
            if st.synced_delta != Some(delta) && st.acked().target_next > 0 {
                let sync = mm2::OffsetSync {
                    topic: st.source_topic.clone(),
                    partition: st.partition,
                    upstream_offset: st.acked().source_next,
                    downstream_offset: st.acked().target_next,
                };
                match sync.encode_key() {
                    Ok(k) => records.push((Bytes::from(k), Some(Bytes::from(sync.encode_value())))),
                    Err(e) => {
                        tracing::warn!(flow = %self.name(), topic = %st.source_topic, partition = st.partition, "cannot encode offset sync: {e}")
                    }
                }
                changed.push((k.clone(), delta));
            }
        }
        if records.is_empty() {
            return;
        }
        self.writing.1 = true;
        let target = self.target.clone();
        let topic = mm2::offset_syncs_topic(self.target.name());
        let done = self.background.0.clone();
        tokio::spawn(async move {
            let result = store::append_once(&target, &topic, 0, &records)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string());
            let _ = done.send(Background::Written {
                what: Written::OffsetSyncs(changed),
                result,
            });
        });
    }
}
