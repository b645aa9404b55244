//! What a flow writes into the target besides replicated records: its progress records (the
//! acknowledged offset map and writer identity of each partition that moved) and MirrorMaker 2
//! offset syncs.

use super::*;

impl Flow {
    /// Writes progress records for partitions that moved.
    pub async fn flush_progress(&mut self) -> Result<()> {
        let src = self.source.name().to_string();
        let mut records = Vec::new();
        for st in self.path.parts.values() {
            if st.flushed != Some(st.acked()) {
                let key = progress::key(&src, &st.source_topic, st.partition);
                records.push((
                    Bytes::from(key),
                    Some(Bytes::from(progress::encode(
                        &st.map,
                        Some(st.writer),
                        st.topic_id,
                    ))),
                ));
            }
        }
        if records.is_empty() {
            return Ok(());
        }
        if !self.may_write() {
            return Err(Error::invalid(
                "not writing progress: this instance's group membership lease ran out",
            ));
        }
        store::append_once(&self.target, PROGRESS_TOPIC, 0, &records).await?;
        for st in self.path.parts.values_mut() {
            st.flushed = Some(st.acked());
            let key = progress::key(&src, &st.source_topic, st.partition);
            self.stored_progress.insert(
                key,
                Stored {
                    map: st.map.clone(),
                    writer: Some(st.writer),
                    topic_id: st.topic_id,
                },
            );
        }
        Ok(())
    }

    /// MM2-format offset syncs for partitions whose source-to-target delta changed.
    pub(super) async fn offset_syncs(&mut self) -> Result<()> {
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
            return Ok(());
        }
        store::append_once(
            &self.target,
            &mm2::offset_syncs_topic(self.target.name()),
            0,
            &records,
        )
        .await?;
        for (k, d) in changed {
            if let Some(st) = self.path.parts.get_mut(&k) {
                st.synced_delta = Some(d);
            }
        }
        Ok(())
    }
}
