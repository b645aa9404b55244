//! The partitions' part of a flow's status: published by the pump at most every
//! [`super::STATUS_EVERY`], updated in place (an idle flow of 1 000 partitions copies no topic
//! names ten times a second), and the readers woken only when a value moved. The control actor
//! publishes the rest (mirrors, members) into the same channel.

use super::Pump;
use crate::replicate::path::PartState;
use crate::replicate::status::PartitionStatus;

impl Pump {
    /// Publishes the partitions' status when it changed, and the bytes buffered.
    pub(super) fn publish_status(&mut self) {
        self.obs.buffered(
            &self.flow,
            self.path.parts().map(|(_, p)| p.queued_bytes as u64).sum(),
        );
        let name = &self.flow;
        let path = &self.path;
        self.status.send_if_modified(|status| {
            let mut moved = update_partitions(&mut status.partitions, path.parts().map(|(_, p)| p));
            if status.name != *name {
                status.name = name.clone();
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
    use crate::offsets::OffsetMap;
    use crate::replicate::path::PartStart;
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
