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

    /// Publishes the status when it changed: the partitions' entries are updated in place
    /// (an idle flow of 1 000 partitions copies no topic names ten times a second), and the
    /// readers are woken only when a value moved.
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
        let name = self.name();
        let parts = &self.path.parts;
        self.status.send_if_modified(|status| {
            let mut moved = update_partitions(&mut status.partitions, parts.values());
            if status.name != name {
                status.name = name;
                moved = true;
            }
            if status.mirrors != mirrors {
                status.mirrors = mirrors;
                moved = true;
            }
            if status.members != members {
                status.members = members;
                moved = true;
            }
            moved
        });
    }
}

/// Brings `shown` up to date with `parts` (in the data path's order); returns whether
/// anything changed. Entries of the same partitions are updated in place; another set of
/// partitions is copied anew.
fn update_partitions<'a>(
    shown: &mut Vec<PartitionStatus>,
    parts: impl ExactSizeIterator<Item = &'a PartState> + Clone,
) -> bool {
    let same_set = shown.len() == parts.len()
        && shown.iter().zip(parts.clone()).all(|(s, st)| {
            s.partition == st.partition
                && s.source_topic == st.source_topic
                && s.target_topic == st.target_topic
        });
    if !same_set {
        *shown = parts.map(partition_status).collect();
        return true;
    }
    let mut moved = false;
    for (s, st) in shown.iter_mut().zip(parts) {
        if s.failed != st.failed {
            *s = partition_status(st);
            moved = true;
            continue;
        }
        let now = partition_status_numbers(st);
        if partition_status_numbers_of(s) != now {
            (
                s.source_next,
                s.target_next,
                s.source_end,
                s.records,
                s.bytes,
                s.lost_records,
            ) = now;
            moved = true;
        }
    }
    moved
}

/// The numbers of a partition's status: source next, target next, source end, records,
/// bytes, lost records.
type Numbers = (i64, i64, i64, u64, u64, u64);

fn partition_status_numbers(st: &PartState) -> Numbers {
    let acked = st.acked();
    (
        acked.source_next,
        acked.target_next,
        st.source_end,
        st.records,
        st.bytes,
        st.lost_records,
    )
}

fn partition_status_numbers_of(s: &PartitionStatus) -> Numbers {
    (
        s.source_next,
        s.target_next,
        s.source_end,
        s.records,
        s.bytes,
        s.lost_records,
    )
}

/// One partition as the status shows it.
fn partition_status(st: &PartState) -> PartitionStatus {
    let (source_next, target_next, source_end, records, bytes, lost_records) =
        partition_status_numbers(st);
    PartitionStatus {
        source_topic: st.source_topic.clone(),
        target_topic: st.target_topic.clone(),
        partition: st.partition,
        source_next,
        target_next,
        source_end,
        records,
        bytes,
        lost_records,
        failed: st.failed.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicate::progress::Writer;

    fn part(topic: &str, partition: i32) -> PartState {
        let writer = Writer {
            producer_id: 1,
            producer_epoch: 0,
            next_sequence: 0,
        };
        let start = PartStart {
            flushed: true,
            ..PartStart::new(
                topic,
                &format!("a.{topic}"),
                partition,
                OffsetMap::new(0, 0),
                writer,
            )
        };
        PartState::new(start, 0)
    }

    fn fresh(parts: &[PartState]) -> Vec<PartitionStatus> {
        parts.iter().map(partition_status).collect()
    }

    #[test]
    fn the_status_moves_only_when_a_partition_does_and_is_updated_in_place() {
        let mut parts = vec![part("t", 0), part("t", 1)];
        let mut shown = Vec::new();
        assert!(update_partitions(&mut shown, parts.iter()));
        assert_eq!(shown, fresh(&parts));
        let name = shown[1].source_topic.as_ptr();
        assert!(
            !update_partitions(&mut shown, parts.iter()),
            "nothing moved"
        );

        parts[1].source_end = 42;
        parts[1].records = 7;
        assert!(update_partitions(&mut shown, parts.iter()));
        assert_eq!(shown, fresh(&parts));
        assert_eq!(shown[1].source_topic.as_ptr(), name, "not copied again");
        assert!(!update_partitions(&mut shown, parts.iter()));

        parts[0].failed = Some("stopped".into());
        assert!(update_partitions(&mut shown, parts.iter()));
        assert_eq!(shown, fresh(&parts));

        // Another set of partitions: a partition added, then one removed.
        parts.push(part("u", 0));
        assert!(update_partitions(&mut shown, parts.iter()));
        assert_eq!(shown, fresh(&parts));
        parts.remove(0);
        assert!(update_partitions(&mut shown, parts.iter()));
        assert_eq!(shown, fresh(&parts));
        assert!(!update_partitions(&mut shown, parts.iter()));
    }
}
