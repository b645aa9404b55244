//! Consumer group offset sync: one rule for both flow kinds, run by the duties task.
//!
//! A group's offsets on the target are changed only while the group has no active members
//! there: a consumer running on the target owns its position. For each partition the group
//! committed on the source whose offset translates exactly through the partition's offset map,
//! the translated offset is committed on the target when
//! - the group has no offset there for the partition yet, or
//! - the target's offset is the one strait last translated and the new one is ahead of it
//!   (the group moved forward on the source), or
//! - the flow [`Rewind::Follow`]s (mirror flows) and the offsets differ in either direction.
//!
//! Replicate flows use [`Rewind::Never`], MirrorMaker 2's rule: a group never moves backwards
//! on the target, and an offset the group committed there itself is left alone. Mirror flows
//! use [`Rewind::Follow`], Cluster Linking's: a mirror topic's groups are copies of the
//! source's until failover, so a group reset backwards on the source (to re-read) is reset on
//! the target too, and a failover lands where the source group is.

use std::collections::HashMap;
use std::time::Instant;

use super::groups;
use super::positions::Positions;
use crate::client::Cluster;
use crate::error::Result;
use crate::mirror::GroupFilters;
use crate::offsets::Translation;

/// Whether a group follows the source backwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewind {
    /// Never moves backwards; offsets committed on the target itself are left alone
    /// (replicate flows, as MirrorMaker 2).
    Never,
    /// Follows the source in both directions (mirror flows, as Cluster Linking).
    Follow,
}

/// A translated offset for one partition of the target: (topic, partition, offset).
pub type Wanted = (String, i32, i64);

/// The commits the rule makes for one group: `wanted` are the translated offsets, `current`
/// the group's offsets on the target, `last` what strait last translated for a partition.
pub fn commits(
    wanted: &[Wanted],
    current: &HashMap<(String, i32), i64>,
    last: impl Fn(&str, i32) -> Option<i64>,
    rewind: Rewind,
) -> Vec<Wanted> {
    wanted
        .iter()
        .filter(|(topic, partition, offset)| {
            match current.get(&(topic.clone(), *partition)).copied() {
                None => true,
                Some(now) => match rewind {
                    Rewind::Follow => now != *offset,
                    Rewind::Never => last(topic, *partition) == Some(now) && *offset > now,
                },
            }
        })
        .cloned()
        .collect()
}

/// Syncs one group on the target by the rule; returns the offsets committed (none while the
/// group has members on the target).
pub async fn sync_group(
    target: &Cluster,
    flow: &str,
    group: &str,
    wanted: &[Wanted],
    last: impl Fn(&str, i32) -> Option<i64>,
    rewind: Rewind,
) -> Result<Vec<Wanted>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let members = groups::active_members(target, group).await?;
    if members > 0 {
        tracing::debug!(%flow, %group, members, "group active on the target; offsets not synced");
        return Ok(Vec::new());
    }
    let current: HashMap<(String, i32), i64> = groups::committed(target, group)
        .await?
        .into_iter()
        .map(|c| ((c.topic, c.partition), c.offset))
        .collect();
    let commits = commits(wanted, &current, last, rewind);
    if !commits.is_empty() {
        groups::commit(target, group, &commits).await?;
        tracing::info!(%flow, %group, partitions = commits.len(), "synced group offsets to the target");
    }
    Ok(commits)
}

/// A mirror flow's consumer offset sync settings (the link's, changeable at run time).
#[derive(Debug, Clone, PartialEq)]
pub struct MirrorSync {
    /// Whether offsets are synced.
    pub enable: bool,
    /// How often.
    pub every: std::time::Duration,
    /// Which groups.
    pub filters: GroupFilters,
}

/// One pass of a mirror flow's consumer offset sync: every group passing `filters` is synced
/// through the maps of `live` with [`Rewind::Follow`]; `only` limits it to one source topic
/// (a promotion's last sync). Groups that cannot be read are skipped (logged).
pub async fn mirror_pass(
    source: &Cluster,
    target: &Cluster,
    flow: &str,
    filters: &GroupFilters,
    live: &Positions,
    only: Option<&str>,
) -> Result<()> {
    let started = Instant::now();
    let all = source.list_groups().await?;
    let mut synced = 0;
    for group in all.iter().filter(|g| filters.includes(g)) {
        let committed = match groups::committed(source, group).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(%flow, %group, "cannot read committed offsets: {e}");
                continue;
            }
        };
        let wanted: Vec<Wanted> = committed
            .into_iter()
            .filter(|c| only.is_none_or(|t| t == c.topic))
            .filter_map(|c| {
                let (target_topic, map) = live.get(&(c.topic.clone(), c.partition))?;
                match map.to_target(c.offset) {
                    Translation::Exact(t) => Some((target_topic.clone(), c.partition, t)),
                    _ => None,
                }
            })
            .collect();
        match sync_group(target, flow, group, &wanted, |_, _| None, Rewind::Follow).await {
            Ok(c) => synced += usize::from(!c.is_empty()),
            Err(e) => tracing::warn!(%flow, %group, "consumer offset sync failed: {e}"),
        }
    }
    tracing::debug!(%flow, groups = all.len(), synced, elapsed_ms = started.elapsed().as_millis() as u64, "consumer offset sync pass done");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current(v: &[(&str, i32, i64)]) -> HashMap<(String, i32), i64> {
        v.iter()
            .map(|(t, p, o)| ((t.to_string(), *p), *o))
            .collect()
    }

    fn w(t: &str, p: i32, o: i64) -> Wanted {
        (t.to_string(), p, o)
    }

    #[test]
    fn a_group_with_no_offset_on_the_target_gets_one_in_both_kinds() {
        for rewind in [Rewind::Never, Rewind::Follow] {
            let c = commits(&[w("t", 0, 5)], &current(&[]), |_, _| None, rewind);
            assert_eq!(c, vec![w("t", 0, 5)], "{rewind:?}");
        }
    }

    #[test]
    fn replicate_flows_move_a_group_forward_only_from_where_strait_left_it() {
        let now = current(&[("t", 0, 10), ("t", 1, 10), ("t", 2, 10)]);
        let last = |_: &str, p: i32| if p == 2 { Some(7) } else { Some(10) };
        let c = commits(
            &[w("t", 0, 12), w("t", 1, 4), w("t", 2, 12)],
            &now,
            last,
            Rewind::Never,
        );
        // Forward from our own offset: yes. Backwards: never. Over the group's own commit
        // on the target (10, not the 7 strait wrote): left alone.
        assert_eq!(c, vec![w("t", 0, 12)]);
    }

    #[test]
    fn mirror_flows_follow_a_group_that_rewinds_on_the_source() {
        let now = current(&[("t", 0, 10), ("t", 1, 10)]);
        let c = commits(
            &[w("t", 0, 4), w("t", 1, 10)],
            &now,
            |_, _| None,
            Rewind::Follow,
        );
        assert_eq!(
            c,
            vec![w("t", 0, 4)],
            "rewound; the unchanged one is not committed"
        );
    }
}
