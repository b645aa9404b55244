//! What a flow shows about itself: the members sharing its target as the status lists them,
//! and the status snapshot (partitions, positions, lag, mirrors) published to the status
//! channel that `/api/status`, the page and `strait status` read.

use super::*;

impl Flow {
    /// The members as the status shows them, rebuilt only when the membership changed.
    pub(super) fn member_statuses(&mut self) -> Vec<MemberStatus> {
        let Some(own) = &self.ownership else {
            return Vec::new();
        };
        let version = own.version();
        if self.members_cache.0 != version {
            let me = own.status();
            let (flow, duties) = (self.name(), self.duties_item());
            let members = me
                .members
                .iter()
                .map(|(id, (inst, items))| MemberStatus {
                    member_id: id.clone(),
                    instance: inst.clone(),
                    this_instance: *id == me.member_id,
                    partitions: items
                        .iter()
                        .filter(|i| i.flow() == flow && matches!(i, WorkItem::Partition { .. }))
                        .count(),
                    duties: items.contains(&duties),
                })
                .collect();
            self.members_cache = (version, members);
        }
        self.members_cache.1.clone()
    }

    pub(super) fn publish_status(&mut self) {
        let members = self.member_statuses();
        self.obs.buffered(
            &self.name(),
            self.path
                .parts
                .values()
                .map(|p| p.queued_bytes as u64)
                .sum(),
        );
        let parts = self
            .path
            .parts
            .values()
            .map(|st| PartitionStatus {
                source_topic: st.source_topic.clone(),
                target_topic: st.target_topic.clone(),
                partition: st.partition,
                source_next: st.acked().source_next,
                target_next: st.acked().target_next,
                source_end: st.source_end,
                records: st.records,
                bytes: st.bytes,
                lost_records: st.lost_records,
                failed: st.failed.clone(),
            })
            .collect();
        let mirrors = self
            .mirror
            .as_ref()
            .map(|m| {
                let mut v: Vec<MirrorStatus> = m
                    .view
                    .records
                    .values()
                    .map(|r| {
                        let mut ms = MirrorStatus {
                            topic: r.topic.clone(),
                            link: r.link.clone(),
                            state: r.state.as_str().to_string(),
                            stopped_partitions: r
                                .diverged
                                .iter()
                                .map(|(p, w)| (*p, w.clone()))
                                .collect(),
                            ..MirrorStatus::default()
                        };
                        for st in self
                            .path
                            .parts
                            .values()
                            .filter(|st| st.source_topic == r.topic)
                        {
                            match offsets_mode(&st.map, r.created_by_strait) {
                                OffsetsMode::Identical => {
                                    ms.identical_partitions.push(st.partition)
                                }
                                mode => ms.mapped_partitions.push((st.partition, mode.to_string())),
                            }
                        }
                        ms
                    })
                    .collect();
                v.sort_by(|a, b| a.topic.cmp(&b.topic));
                v
            })
            .unwrap_or_default();
        self.status.send_replace(FlowStatus {
            name: self.name(),
            partitions: parts,
            mirrors,
            members,
        });
    }
}
