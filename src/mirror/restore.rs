//! Truncate-and-restore (Cluster Linking's `kafka-mirrors --truncate-and-restore`), sans-io:
//! after a failover from cluster W to cluster E, W's topic becomes a mirror of E's again. Apache
//! Kafka has no request that cuts a log's tail, so W's topic is deleted and mirrored anew from
//! E; what W held after the failover point (the divergent tail) is saved for the operator first,
//! and W's consumer groups are restored from what they had committed, never past that point.
//!
//! The rules here: where each partition is cut ([`plan_cuts`]), where W's groups resume on E's
//! records ([`groups_on_new_source`]), and what is committed on W once the new mirror copied
//! far enough ([`group_commits`]). The plan is stored in W's control topic under
//! [`plan_key`] before the topic is deleted, so a run stopped at any step is finished by the
//! next one.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::offsets::{OffsetMap, Translation};

/// Where one partition of the old source's topic is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutPoint {
    /// The old source's offset where the mirror stopped at the failover: records from here on
    /// are cut.
    pub at: i64,
    /// The same point on the new source (where the mirror wrote its last record, plus one).
    pub source_at: i64,
    /// The old source's log end when the tail was saved: `at..end` is what is cut.
    pub end: i64,
}

impl CutPoint {
    /// How many offsets are cut (records, and transaction markers among them).
    pub fn offsets_cut(&self) -> i64 {
        (self.end - self.at).max(0)
    }
}

/// What truncate-and-restore does to one topic, stored in the old source's control topic
/// before the topic is deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestorePlan {
    /// When the plan was made (ms since the epoch); identifies the restore.
    pub at_ms: i64,
    /// The link that mirrors the topic back into the old source.
    pub link: String,
    /// The new source cluster's alias (where the topic was failed over to).
    pub source_cluster: String,
    /// The topic.
    pub topic: String,
    /// The old source topic's id, hex (the one to delete; another id means it is gone).
    pub topic_id: String,
    /// Cut points by partition.
    pub partitions: BTreeMap<i32, CutPoint>,
    /// Consumer groups' offsets to restore on the old source: group, partition, offset on the
    /// new source (translated from what the group had committed, at most the cut point).
    pub groups: BTreeMap<String, BTreeMap<i32, i64>>,
    /// Where the cut records were saved.
    pub saved_to: String,
    /// How many records were saved (transaction markers are not records).
    pub records_saved: i64,
    /// `updated_ms` of the failed-over mirror's record when the plan was made: which failover
    /// the plan is for.
    #[serde(default)]
    pub forward_updated_ms: i64,
}

impl RestorePlan {
    /// Offsets cut over all partitions.
    pub fn offsets_cut(&self) -> i64 {
        self.partitions.values().map(CutPoint::offsets_cut).sum()
    }
}

/// The mark a restored mirror's record carries: which restore started it (the flow forgets
/// any earlier position of the topic, whose log was deleted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// The plan's `at_ms`.
    pub at_ms: i64,
    /// Where the cut records were saved.
    pub saved_to: String,
    /// How many records were cut and saved.
    pub records_saved: i64,
}

/// Control-topic key of the restore plan of `topic` mirrored from `source`.
pub fn plan_key(source: &str, topic: &str) -> String {
    format!("restore|{source}|{topic}")
}

/// Where each partition of the old source's topic is cut: `stopped` holds the stopped mirror's
/// offset map per partition (old source to new source), `logs` the old source's log start and
/// end per partition. A partition the mirror never copied (added after the failover) is cut
/// whole, from its log start. A log must not end before its map does (records lost on the
/// old source).
pub fn plan_cuts(
    cluster: &str,
    topic: &str,
    stopped: &BTreeMap<i32, OffsetMap>,
    logs: &BTreeMap<i32, (i64, i64)>,
) -> Result<BTreeMap<i32, CutPoint>, String> {
    let mut out = BTreeMap::new();
    for (&p, &(start, end)) in logs {
        let Some(map) = stopped.get(&p) else {
            out.insert(
                p,
                CutPoint {
                    at: start,
                    source_at: 0,
                    end,
                },
            );
            continue;
        };
        let at = map.source_next();
        if end < at {
            return Err(format!(
                "cluster {cluster}, topic {topic}, partition {p}: the log ends at offset {end}, before offset {at} where the mirror stopped (records were lost there)"
            ));
        }
        out.insert(
            p,
            CutPoint {
                at,
                source_at: map.target_next(),
                end,
            },
        );
    }
    Ok(out)
}

/// Where the old source's groups resume on the new source's records: each committed offset
/// (group, partition, offset on the old source) is cut back to the cut point (records after it
/// are gone) and translated through the stopped mirror's map. An offset below what the map
/// covers stays as it is when the map starts at the same offset on both sides (the records
/// below are the same: a mirror a reversal handed over), else resumes at the map's start (the
/// records below were never mirrored). Partitions without a cut point are left out.
pub fn groups_on_new_source(
    committed: &BTreeMap<String, BTreeMap<i32, i64>>,
    stopped: &BTreeMap<i32, OffsetMap>,
    cuts: &BTreeMap<i32, CutPoint>,
) -> BTreeMap<String, BTreeMap<i32, i64>> {
    let mut out: BTreeMap<String, BTreeMap<i32, i64>> = BTreeMap::new();
    for (group, parts) in committed {
        for (&p, &offset) in parts {
            let (Some(cut), Some(map)) = (cuts.get(&p), stopped.get(&p)) else {
                continue;
            };
            let offset = offset.min(cut.at);
            let on_new = match map.to_target(offset) {
                Translation::Exact(o) => o,
                // Below a map that starts at the same offset on both sides (a mirror a
                // reversal handed over, or one from offset 0) both hold the same records.
                Translation::BeforeMap if map.source_start() == map.target_start() => offset,
                Translation::BeforeMap => map.target_start(),
                Translation::BeyondMap => cut.source_at,
            };
            out.entry(group.clone()).or_default().insert(p, on_new);
        }
    }
    out
}

/// What to commit on the old source now, as (group, partition, offset), and how many offsets
/// wait for the new mirror to copy further. `new_maps`: the new mirror's offset map per
/// partition (new source to old source); `present`: (group, partition) that have an offset on
/// the old source already (the consumer offset sync of the new mirror wrote it, or the group
/// committed since): those are left alone.
pub fn group_commits(
    plan: &RestorePlan,
    new_maps: &HashMap<i32, OffsetMap>,
    present: &std::collections::HashSet<(String, i32)>,
) -> (Vec<(String, i32, i64)>, usize) {
    let mut commits = Vec::new();
    let mut waiting = 0;
    for (group, parts) in &plan.groups {
        for (&p, &offset) in parts {
            if present.contains(&(group.clone(), p)) {
                continue;
            }
            let Some(map) = new_maps.get(&p) else {
                waiting += 1;
                continue;
            };
            match map.to_target(offset) {
                Translation::Exact(o) => commits.push((group.clone(), p, o)),
                Translation::BeforeMap => commits.push((group.clone(), p, map.target_start())),
                Translation::BeyondMap => waiting += 1,
            }
        }
    }
    (commits, waiting)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(source_start: i64, target_start: i64, records: i64) -> OffsetMap {
        let mut m = OffsetMap::new(source_start, target_start);
        if records > 0 {
            let batch = crate::forward::SourceOffsets::Contiguous {
                first: source_start,
                count: records,
            };
            m.record_batch(&batch, target_start).unwrap();
        }
        m
    }

    fn ends(list: &[(i32, i64)]) -> BTreeMap<i32, (i64, i64)> {
        list.iter().map(|(p, end)| (*p, (0, *end))).collect()
    }

    #[test]
    fn cuts_where_the_mirror_stopped() {
        let stopped = BTreeMap::from([(0, map(0, 0, 100)), (1, map(0, 0, 40))]);
        let cuts = plan_cuts("west", "t", &stopped, &ends(&[(0, 130), (1, 40)])).unwrap();
        assert_eq!(
            cuts[&0],
            CutPoint {
                at: 100,
                source_at: 100,
                end: 130
            }
        );
        assert_eq!(cuts[&0].offsets_cut(), 30);
        assert_eq!(cuts[&1].offsets_cut(), 0);
    }

    #[test]
    fn cuts_a_partition_never_mirrored_whole_and_refuses_a_shortened_one() {
        let stopped = BTreeMap::from([(0, map(0, 0, 100))]);
        let logs = BTreeMap::from([(0, (0, 100)), (1, (3, 5))]);
        let cuts = plan_cuts("west", "t", &stopped, &logs).unwrap();
        assert_eq!((cuts[&1].at, cuts[&1].offsets_cut()), (3, 2));
        let e = plan_cuts("west", "t", &stopped, &ends(&[(0, 90)])).unwrap_err();
        assert!(e.contains("ends at offset 90, before offset 100"), "{e}");
    }

    #[test]
    fn groups_are_cut_back_and_translated() {
        // A mapped mirror: old source 10.. landed at 0.. on the new source.
        let stopped = BTreeMap::from([(0, map(10, 0, 90))]);
        let cuts = plan_cuts("west", "t", &stopped, &ends(&[(0, 120)])).unwrap();
        let committed = BTreeMap::from([
            ("before".to_string(), BTreeMap::from([(0, 4)])),
            ("inside".to_string(), BTreeMap::from([(0, 50)])),
            ("tail".to_string(), BTreeMap::from([(0, 115)])),
            ("other".to_string(), BTreeMap::from([(7, 3)])),
        ]);
        let g = groups_on_new_source(&committed, &stopped, &cuts);
        assert_eq!(g["before"][&0], 0);
        assert_eq!(g["inside"][&0], 40);
        assert_eq!(g["tail"][&0], 90, "read the new source from the cut on");
        assert!(!g.contains_key("other"));
        // A mirror handed over by a reversal at offset 60: both sides hold 0..60 alike.
        let stopped = BTreeMap::from([(0, map(60, 60, 30))]);
        let cuts = plan_cuts("west", "t", &stopped, &ends(&[(0, 95)])).unwrap();
        let committed = BTreeMap::from([("slow".to_string(), BTreeMap::from([(0, 3)]))]);
        assert_eq!(
            groups_on_new_source(&committed, &stopped, &cuts)["slow"][&0],
            3
        );
    }

    #[test]
    fn commits_wait_for_the_new_mirror_and_leave_present_offsets() {
        let plan = RestorePlan {
            at_ms: 1,
            link: "east-link".into(),
            source_cluster: "east".into(),
            topic: "t".into(),
            topic_id: String::new(),
            partitions: BTreeMap::new(),
            groups: BTreeMap::from([
                ("a".to_string(), BTreeMap::from([(0, 50), (1, 10)])),
                ("b".to_string(), BTreeMap::from([(0, 80)])),
                ("c".to_string(), BTreeMap::from([(0, 20)])),
            ]),
            saved_to: String::new(),
            records_saved: 0,
            forward_updated_ms: 0,
        };
        // The new mirror copied 0..60 of partition 0 and started partition 1 at 5 (retention).
        let maps = HashMap::from([(0, map(0, 0, 60)), (1, map(15, 0, 10))]);
        let present = std::collections::HashSet::from([("c".to_string(), 0)]);
        let (commits, waiting) = group_commits(&plan, &maps, &present);
        assert_eq!(
            commits,
            vec![("a".to_string(), 0, 50), ("a".to_string(), 1, 0)]
        );
        assert_eq!(waiting, 1, "b waits for offset 80");
    }
}
