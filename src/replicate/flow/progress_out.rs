//! What a flow writes into the target besides replicated records: its progress records (the
//! acknowledged offset map and writer identity of each partition that moved) and MirrorMaker 2
//! offset syncs. Both are written by the control actor from a copy of the pump's partitions,
//! one write at a time (so a newer position is never overwritten by an older one), and the
//! pump is told what landed.

use super::*;
use crate::replicate::pump::Flushed;

impl Flow {
    /// Writes progress records for the partitions whose acknowledged position moved since
    /// written.
    pub(super) async fn flush_progress(&mut self) -> Result<()> {
        let view = self.pump.snapshot().await;
        self.write_progress(&view).await
    }

    /// Writes progress records for the partitions of `view` whose acknowledged position is
    /// ahead of their last record, and tells the pump what landed.
    pub(super) async fn write_progress(&mut self, view: &PathView) -> Result<()> {
        let src = self.source.name().to_string();
        let mut records = Vec::new();
        let mut flushed = Vec::new();
        for (k, st) in view.parts.iter().filter(|(_, st)| st.unflushed()) {
            let key = progress::key(&src, &st.source_topic, st.partition);
            records.push((
                Bytes::from(key.clone()),
                Some(Bytes::from(progress::encode(&st.stored))),
            ));
            flushed.push((
                key,
                st.stored.clone(),
                Flushed {
                    key: k.clone(),
                    take_up: st.take_up,
                    at: st.acked(),
                },
            ));
        }
        if records.is_empty() {
            return Ok(());
        }
        if !self.may_write() {
            return Err(Error::invalid(
                "not writing progress: this instance's group membership lease ran out",
            ));
        }
        store::append_once(&self.target, self.target.progress_topic(), 0, &records).await?;
        let mut landed = Vec::with_capacity(flushed.len());
        for (key, stored, f) in flushed {
            self.stored_progress.insert(key, stored);
            landed.push(f);
        }
        self.pump.send(Command::Flushed(landed));
        Ok(())
    }

    /// Writes MM2-format offset syncs for partitions whose source-to-target delta changed.
    pub(super) async fn write_offset_syncs(&mut self) -> Result<()> {
        let view = self.pump.snapshot().await;
        let mut records = Vec::new();
        let mut changed = Vec::new();
        for (k, st) in &view.parts {
            if st.records == 0 && st.synced_delta.is_some() {
                continue;
            }
            let acked = st.acked();
            let delta = acked.target_next - acked.source_next;
            if st.synced_delta != Some(delta) && acked.target_next > 0 {
                let sync = mm2::OffsetSync {
                    topic: st.source_topic.clone(),
                    partition: st.partition,
                    upstream_offset: acked.source_next,
                    downstream_offset: acked.target_next,
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
            return Ok(());
        }
        let topic = self.mm2.offset_syncs(self.target.name());
        store::append_once(&self.target, &topic, 0, &records).await?;
        self.pump.send(Command::Synced(changed));
        Ok(())
    }
}
