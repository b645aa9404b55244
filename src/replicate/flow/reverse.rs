//! Reversing a mirror (`strait mirror reverse-and-start|reverse-and-pause`, Cluster Linking's
//! `reverse-and-start-mirror`): once the topic caught up and its consumer offsets are synced
//! (as for a promotion), it becomes writable here and its source topic becomes a mirror of it,
//! mirrored by the flow in the other direction from exactly where this one stopped.

use super::*;
use crate::mirror::mirrors_back;

impl Flow {
    /// Finishes the reversal of a topic that caught up and whose partitions were released
    /// (`last`: their final state). The mirror of the other direction is stored in the source
    /// cluster first, starting where this one stopped; then this one's record says reversed.
    /// The other direction's flow takes the topic up only once it does ([`mirrors_back`]), so
    /// the two never write at once; stopped between the two writes, the next run of this flow
    /// finds the topic still reversing and does both again.
    pub(super) async fn finish_reversal(
        &mut self,
        mut rec: MirrorRecord,
        last: &PathView,
    ) -> Result<()> {
        let Some(reversal) = rec.reversal.clone() else {
            return Ok(()); // a reversal without a link is never applied
        };
        let topic = rec.topic.clone();
        let (src, tgt) = (
            self.source.name().to_string(),
            self.target.name().to_string(),
        );
        let mut start_at = BTreeMap::new();
        let mut identical = true;
        for st in last.of_topic(&topic) {
            let map = st.map();
            // The other direction reads this target and writes this source.
            start_at.insert(st.partition, [map.target_next(), map.source_next()]);
            identical &= rec.offsets_mode(st.partition, map) == OffsetsMode::Identical;
        }
        let now = store::now_ms();
        // Commands stored for the other direction before now are history, not requests.
        let prior = mirrors::read_view(&self.source, &tgt, &reversal.link).await?;
        let mut back = MirrorRecord::reversed(&reversal, &tgt, &topic, start_at, identical, now);
        back.command_at_ms = prior.commands.get(&topic).map_or(0, |c| c.at_ms).max(now);
        // The source's control topic exists: `strait mirror reverse-*` created it.
        mirrors::write_state(&self.source, &back, -1).await?;
        let paused = if reversal.paused { ", paused" } else { "" };
        rec.state = MirrorState::Reversed;
        rec.reason = Some(format!(
            "reversed: link {} mirrors topic {topic} from cluster {tgt} into cluster {src}{paused}",
            reversal.link
        ));
        rec.updated_ms = now;
        self.mirror_write(rec).await?;
        tracing::info!(flow = %self.name(), %topic, link = %reversal.link, paused = reversal.paused, "mirror reversed: the topic is writable on cluster {tgt} and mirrored from there into cluster {src}");
        Ok(())
    }

    /// The mirror records the source cluster holds for topics mirrored from this flow's target
    /// (the flow in the other direction), read again when its control topic changed. Only
    /// with a mirror flow the other way configured (else there are none); a source that may not
    /// be read there keeps the last view (logged), it does not stop the topic refresh.
    pub(super) async fn read_upstream(&mut self) {
        let (src, dst) = (self.cfg.source.clone(), self.cfg.target.clone());
        let Some(m) = &self.mirror else {
            return;
        };
        if !m.hops.iter().any(|h| h.source == dst && h.target == src) {
            return;
        }
        if let Err(e) = self.read_upstream_records().await {
            tracing::warn!(flow = %self.name(), "cannot read the mirror records of cluster {src} (the loop check of mirrors both ways): {e}");
        }
    }

    async fn read_upstream_records(&mut self) -> Result<()> {
        let Some(m) = &self.mirror else {
            return Ok(());
        };
        let end = mirrors::control_end(&self.source).await?;
        if end == m.upstream_seen {
            return Ok(());
        }
        let records = if end == 0 {
            HashMap::new()
        } else {
            mirrors::read_view(&self.source, self.target.name(), "")
                .await?
                .records
        };
        if let Some(m) = self.mirror.as_mut() {
            m.upstream = records;
            m.upstream_seen = end;
        }
        Ok(())
    }

    /// A mirror a reversal handed to this flow waits until the other direction's record says
    /// reversed: looks again at every mirror upkeep, and takes it up at once when it does.
    pub(super) async fn await_handover(&mut self, view: &PathView) {
        let waiting = |m: &MirrorCtl| -> Vec<String> {
            m.view
                .records
                .iter()
                .filter(|(t, r)| r.handed_over() && !view.has_topic(t))
                .map(|(t, _)| t.clone())
                .collect()
        };
        if self.mirror.as_ref().is_none_or(|m| waiting(m).is_empty()) {
            return;
        }
        self.read_upstream().await;
        if self
            .mirror
            .as_ref()
            .is_some_and(|m| waiting(m).iter().any(|t| !self.mirrored_from_target(t)))
        {
            self.refresh_soon = true;
        }
    }

    /// The loop check of same-named mirrors both ways: whether source topic `topic` is the
    /// target's topic mirrored here, not to be mirrored back (see [`mirrors_back`]).
    pub(super) fn mirrored_from_target(&self, topic: &str) -> bool {
        self.mirror
            .as_ref()
            .is_some_and(|m| mirrors_back(m.upstream.get(topic), m.view.records.get(topic)))
    }
}
