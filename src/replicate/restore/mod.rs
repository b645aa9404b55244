//! `strait mirror truncate-and-restore` (Cluster Linking's `kafka-mirrors
//! --truncate-and-restore`): after a mirror W -> E was failed over (or promoted), W's topic
//! becomes a mirror of E's, mirrored by the mirror flow E -> W (`--link`).
//!
//! Apache Kafka cannot cut a log's tail, so W's topic is deleted and the flow E -> W creates it
//! again and copies E's log into it (same offsets when E's log starts at 0, mapped otherwise).
//! In order, each step durable before the next, so a run stopped anywhere is finished by the
//! next run of the command:
//! 1. the plan ([`plan_cuts`]: W's offsets where the mirror stopped, W's log ends, W's groups on
//!    E's records) is made and the records W holds past the cut points are saved to files
//!    ([`save`]);
//! 2. the plan is stored in W's control topic ([`mirrors::write_plan`]);
//! 3. W's topic is deleted, once its log ends are still those saved;
//! 4. once Kafka dropped W's groups' offsets of the deleted topic, the E -> W flow's old
//!    positions of the topic are removed, then its mirror record is written, marked
//!    [`Restored`]: the running flow takes the topic up from E's log start;
//! 5. W's groups get their offsets back (Kafka drops them with the topic) once the new mirror
//!    copied that far, where the group has none yet ([`group_commits`]).

pub mod save;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::admin::{self, AdminError};
use super::{groups, mirrors, store};
use crate::client::{Cluster, EARLIEST, LATEST};
use crate::config::{Config, FlowConfig, FlowMode};
use crate::mirror::restore::{
    group_commits, groups_on_new_source, plan_cuts, CutPoint, RestorePlan, Restored,
};
use crate::mirror::{MirrorRecord, MirrorState};
use crate::offsets::OffsetMap;

/// What the operator asked.
#[derive(Debug, Clone, Default)]
pub struct RestoreOptions {
    /// Only say what would be cut; change nothing.
    pub dry_run: bool,
    /// Where to save the cut records (default `truncated-<topic>-<ms>` in the working directory).
    pub save_to: Option<PathBuf>,
    /// How long to wait for the new mirror to copy far enough to restore the groups.
    pub timeout: Duration,
}

/// What truncate-and-restore did.
#[derive(Debug, Clone)]
pub struct RestoreOutcome {
    /// The plan carried out (or that would be, with `dry_run`).
    pub plan: RestorePlan,
    /// The old source (where the topic was cut) and the new source.
    pub clusters: (String, String),
    /// Nothing was changed.
    pub dry_run: bool,
    /// The topic had been restored by an earlier run (only groups were looked at).
    pub earlier: bool,
    /// Group offsets committed on the old source: (group, partition, offset).
    pub committed: Vec<(String, i32, i64)>,
    /// Group offsets still waiting for the new mirror to copy far enough.
    pub waiting: usize,
    /// Groups left alone because they have active members on the old source.
    pub busy: Vec<String>,
}

/// The two mirror flows: `back` (E -> W, the link named) and `forward` (W -> E, stopped).
struct Flows<'a> {
    back: &'a FlowConfig,
    forward: &'a FlowConfig,
}

fn flows<'a>(config: &'a Config, link: Option<&str>, topic: &str) -> Result<Flows<'a>, AdminError> {
    let found = admin::mirror_flows(config, link)?;
    let [back] = found.as_slice() else {
        return Err(AdminError::BadInput {
            field: "link",
            message: format!(
                "name the mirror link that mirrors topic {topic} back into the cluster it was failed over from"
            ),
        });
    };
    let conflict = |why: String| {
        AdminError::Conflict(format!("cannot truncate-and-restore topic {topic}: {why}"))
    };
    if !back.enabled {
        return Err(conflict(format!(
            "the mirror flow {} is disabled (enabled = false), so nothing would mirror the topic back",
            back.name()
        )));
    }
    if !back.prefix.is_empty() {
        return Err(conflict(format!(
            "the mirror flow {} names mirror topics with prefix {:?}, so it never mirrors into the topic of the same name",
            back.name(),
            back.prefix
        )));
    }
    let forward = config
        .flows
        .iter()
        .find(|f| {
            f.mode == FlowMode::Mirror
                && f.source == back.target
                && f.target == back.source
                && f.prefix.is_empty()
        })
        .ok_or_else(|| {
            conflict(format!(
                "{}: no mirror flow from {} to {} without a prefix (the mirror that was failed over)",
                config.origin, back.target, back.source
            ))
        })?;
    Ok(Flows { back, forward })
}

/// Carries out (or goes on with) truncate-and-restore of `topic` for the mirror flow `link`.
pub async fn truncate_and_restore(
    config: &Config,
    link: Option<&str>,
    topic: &str,
    opts: &RestoreOptions,
) -> Result<RestoreOutcome, AdminError> {
    let f = flows(config, link, topic)?;
    let (old, new) = (f.back.target.as_str(), f.back.source.as_str());
    let old_c = super::connect_once(config, old).await?;
    let new_c = super::connect_once(config, new).await?;
    let rf = super::cluster_settings(config, old)?.replication_factor;
    let back_view = mirrors::read_view(&old_c, new, &f.back.link_name()).await?;
    let plan = mirrors::read_plan(&old_c, new, topic).await?;
    let own = back_view.records.get(topic);
    if let Some(r) = own.filter(|r| !r.state.is_stopped()) {
        return restored_earlier(&old_c, &f, r, plan, opts).await;
    }
    let forward_rec = stopped_forward(&new_c, &f, topic).await?;
    check_back_not_ended(&f, own, &forward_rec, topic)?;
    admin::check_selects(&old_c, f.back, topic, "truncate-and-restore").await?;
    let meta = fresh_topic(&old_c, topic).await?;
    // A plan stored by an earlier run for this failover that got as far as deleting the topic
    // is finished as it is: the records it names are gone from the topic.
    let unfinished =
        plan.filter(|p| !restored_by(own, p) && p.forward_updated_ms == forward_rec.updated_ms);
    let deleted = |p: &&RestorePlan| meta.as_ref().is_none_or(|(id, _)| *id != p.topic_id);
    if let Some(p) = unfinished.as_ref().filter(deleted) {
        let mut out = RestoreOutcome::new(p.clone(), &f, opts.dry_run, false);
        if !opts.dry_run {
            finish(&old_c, &f, &mut out, &back_view, rf, opts.timeout).await?;
        }
        return Ok(out);
    }
    let mut plan = make_plan(&old_c, &new_c, &f, topic, meta, opts).await?;
    plan.forward_updated_ms = forward_rec.updated_ms;
    if let Some(earlier) = unfinished {
        keep_earlier_offsets(&mut plan, earlier);
    }
    let mut out = RestoreOutcome::new(plan, &f, opts.dry_run, false);
    if opts.dry_run {
        return Ok(out);
    }
    save_tail(&old_c, &mut out.plan).await?;
    mirrors::write_plan(&old_c, &out.plan, rf).await?;
    delete_old(&old_c, &out.plan).await?;
    finish(&old_c, &f, &mut out, &back_view, rf, opts.timeout).await?;
    Ok(out)
}

impl RestoreOutcome {
    fn new(plan: RestorePlan, f: &Flows<'_>, dry_run: bool, earlier: bool) -> RestoreOutcome {
        RestoreOutcome {
            plan,
            clusters: (f.back.target.clone(), f.back.source.clone()),
            dry_run,
            earlier,
            committed: Vec::new(),
            waiting: 0,
            busy: Vec::new(),
        }
    }
}

/// Whether the mirror record `own` (the flow back's) was written by the run that carried out
/// `plan`.
fn restored_by(own: Option<&MirrorRecord>, plan: &RestorePlan) -> bool {
    own.and_then(|r| r.restored.as_ref())
        .is_some_and(|r| r.at_ms == plan.at_ms)
}

/// The topic is mirrored back already (`own` is live): by this command's earlier run, whose
/// groups are looked at again, or else it is refused.
async fn restored_earlier(
    old_c: &Cluster,
    f: &Flows<'_>,
    own: &MirrorRecord,
    plan: Option<RestorePlan>,
    opts: &RestoreOptions,
) -> Result<RestoreOutcome, AdminError> {
    if let Some(p) = plan.filter(|p| restored_by(Some(own), p)) {
        let mut out = RestoreOutcome::new(p, f, opts.dry_run, true);
        if !opts.dry_run {
            restore_groups(old_c, &mut out, opts.timeout).await?;
        }
        return Ok(out);
    }
    Err(AdminError::Conflict(format!(
        "cannot truncate-and-restore topic {}: it is a mirror of cluster {} on cluster {} already (link {}, {})",
        own.topic,
        f.back.source,
        f.back.target,
        own.link,
        own.state.as_str()
    )))
}

/// Refuses when the mirror back ran after that failover and ended since: that failover's cut
/// points are history.
fn check_back_not_ended(
    f: &Flows<'_>,
    own: Option<&MirrorRecord>,
    forward_rec: &MirrorRecord,
    topic: &str,
) -> Result<(), AdminError> {
    let (old, new) = (&f.back.target, &f.back.source);
    match own.filter(|r| r.updated_ms > forward_rec.updated_ms) {
        None => Ok(()),
        Some(r) => Err(AdminError::Conflict(format!(
            "cannot truncate-and-restore topic {topic} with link {}: its mirror from {new} into {old} ended after the failover ({}); to make {new}'s topic a mirror of {old}'s, use the link from {old} to {new}",
            f.back.link_name(),
            r.state.as_str()
        ))),
    }
}

/// Killed right after asking for the deletion, the topic may still be listed while Kafka
/// already dropped its groups' offsets: the earlier plan's offsets stand in where the new plan
/// has none.
fn keep_earlier_offsets(plan: &mut RestorePlan, earlier: RestorePlan) {
    for (group, parts) in earlier.groups {
        let now = plan.groups.entry(group).or_default();
        for (p, o) in parts {
            now.entry(p).or_insert(o);
        }
    }
}

/// The record of the mirror that was failed over, which must have ended (failed over or
/// promoted): the topic is writable on the new source, and nothing mirrors it from the old.
async fn stopped_forward(
    new_c: &Cluster,
    f: &Flows<'_>,
    topic: &str,
) -> Result<MirrorRecord, AdminError> {
    let view = mirrors::read_view(new_c, &f.forward.source, &f.forward.link_name()).await?;
    let why = match view.records.get(topic) {
        Some(r) if matches!(r.state, MirrorState::FailedOver | MirrorState::Promoted) => {
            return Ok(r.clone())
        }
        Some(r) if r.state == MirrorState::Reversed => format!(
            "the mirror from {} to {} was reversed, so the topic is mirrored back already",
            f.forward.source, f.forward.target
        ),
        Some(r) => format!(
            "the mirror of link {} from {} to {} is still {}; fail it over first (strait mirror failover --link {} --topic {topic}), or reverse it while both clusters are up (reverse-and-start)",
            f.forward.link_name(),
            f.forward.source,
            f.forward.target,
            r.state.as_str(),
            f.forward.link_name()
        ),
        None => format!(
            "link {} never mirrored it from {} to {}",
            f.forward.link_name(),
            f.forward.source,
            f.forward.target
        ),
    };
    Err(AdminError::Conflict(format!(
        "cannot truncate-and-restore topic {topic}: {why}"
    )))
}

/// The topic's id (hex) and partition count on `cluster` as its metadata says now (not
/// cached), or `None` if there is no such topic.
async fn fresh_topic(
    cluster: &Cluster,
    topic: &str,
) -> Result<Option<(String, usize)>, AdminError> {
    use crate::protocol::error_code;
    let resp = cluster.metadata(Some(&[topic.to_string()])).await?;
    match resp.topics.into_iter().find(|t| t.name == topic) {
        None => Ok(None),
        Some(t) if t.error_code == error_code::UNKNOWN_TOPIC_OR_PARTITION => Ok(None),
        Some(t) if t.error_code == error_code::NONE => {
            Ok(Some((hex(&t.topic_id), t.partitions.len())))
        }
        Some(t) => Err(AdminError::Failed(
            crate::Error::broker(t.error_code, None)
                .topic(topic)
                .cluster(cluster.name()),
        )),
    }
}

fn hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Works out the plan: cut points from the stopped mirror's positions on the new source,
/// the old source's log ends, and its groups' offsets (translated to the new source's records).
async fn make_plan(
    old_c: &Cluster,
    new_c: &Cluster,
    f: &Flows<'_>,
    topic: &str,
    meta: Option<(String, usize)>,
    opts: &RestoreOptions,
) -> Result<RestorePlan, AdminError> {
    let at_ms = store::now_ms();
    let (topic_id, count) = meta.unwrap_or_default();
    let stopped: BTreeMap<i32, OffsetMap> = store::read_progress(new_c, &f.forward.source)
        .await?
        .into_iter()
        .filter(|((t, _), _)| t == topic)
        .map(|((_, p), m)| (p, m))
        .collect();
    let parts: Vec<i32> = (0..count as i32).collect();
    let mut logs: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
    if !parts.is_empty() {
        let starts = old_c.list_offsets(topic, &parts, EARLIEST).await?;
        let ends = old_c.list_offsets(topic, &parts, LATEST).await?;
        for ((p, start), (_, end)) in starts.into_iter().zip(ends) {
            logs.insert(p, (start, end));
        }
    }
    let cuts = plan_cuts(old_c.name(), topic, &stopped, &logs).map_err(|e| {
        AdminError::Conflict(format!("cannot truncate-and-restore topic {topic}: {e}"))
    })?;
    let committed = committed_on(old_c, topic).await?;
    for group in committed.keys() {
        let active = groups::active_members(old_c, group).await?;
        if active > 0 {
            return Err(AdminError::Conflict(format!(
                "cannot truncate-and-restore topic {topic}: group {group:?} has {active} active member(s) on cluster {}; stop its consumers there first",
                old_c.name()
            )));
        }
    }
    let groups = groups_on_new_source(&committed, &stopped, &cuts);
    let saved_to = opts
        .save_to
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("truncated-{topic}-{at_ms}")));
    Ok(RestorePlan {
        at_ms,
        link: f.back.link_name(),
        source_cluster: f.back.source.clone(),
        topic: topic.to_string(),
        topic_id,
        partitions: cuts,
        groups,
        saved_to: saved_to.display().to_string(),
        records_saved: 0,
        forward_updated_ms: 0,
    })
}

/// Every group's committed offsets of `topic` on `cluster`: group, partition, offset.
async fn committed_on(
    cluster: &Cluster,
    topic: &str,
) -> Result<BTreeMap<String, BTreeMap<i32, i64>>, AdminError> {
    let mut out: BTreeMap<String, BTreeMap<i32, i64>> = BTreeMap::new();
    for group in cluster.list_groups().await? {
        for c in groups::committed(cluster, &group).await? {
            if c.topic == topic {
                out.entry(group.clone())
                    .or_default()
                    .insert(c.partition, c.offset);
            }
        }
    }
    Ok(out)
}

/// Saves the records past the cut points, with the plan and the groups' own offsets beside
/// them, into the plan's directory.
async fn save_tail(old_c: &Cluster, plan: &mut RestorePlan) -> Result<(), AdminError> {
    let dir = PathBuf::from(&plan.saved_to);
    let io = |e: std::io::Error| {
        AdminError::Failed(crate::Error::invalid(format!(
            "cannot write {}: {e}",
            dir.display()
        )))
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let mut saved = 0;
    for (&p, cut) in &plan.partitions {
        let file = dir.join(format!("{}-{p}.jsonl", plan.topic));
        saved += save::save_partition(old_c, &plan.topic, p, (cut.at, cut.end), &file).await?;
    }
    plan.records_saved = saved;
    let committed = committed_on(old_c, &plan.topic).await?;
    let json = serde_json::json!({ "plan": &*plan, "committed_on_old_source": committed });
    let text = serde_json::to_string_pretty(&json)
        .map_err(|e| AdminError::Failed(crate::Error::invalid(e.to_string())))?;
    std::fs::write(dir.join("restore-plan.json"), text).map_err(io)?;
    // On disk before the topic is deleted: they are the only copy of the tail then.
    for entry in std::fs::read_dir(&dir).map_err(io)? {
        std::fs::File::open(entry.map_err(io)?.path())
            .and_then(|f| f.sync_all())
            .map_err(io)?;
    }
    std::fs::File::open(&dir)
        .and_then(|f| f.sync_all())
        .map_err(io)?;
    Ok(())
}

/// Deletes the old source's topic once its logs still end where the plan saw them, and waits
/// until it is gone (or already created again, by the new mirror).
async fn delete_old(old_c: &Cluster, plan: &RestorePlan) -> Result<(), AdminError> {
    let topic = plan.topic.as_str();
    if plan.partitions.is_empty() {
        return Ok(()); // no such topic
    }
    let count = fresh_topic(old_c, topic).await?.map_or(0, |(_, n)| n);
    if count != plan.partitions.len() {
        return Err(AdminError::Conflict(format!(
            "cluster {}, topic {topic}: it has {count} partitions now, {} when the tail was saved; nothing was deleted; run the command again",
            old_c.name(),
            plan.partitions.len()
        )));
    }
    let parts: Vec<i32> = plan.partitions.keys().copied().collect();
    for (p, end) in old_c.list_offsets(topic, &parts, LATEST).await? {
        let saved = plan.partitions.get(&p).map_or(end, |c| c.end);
        if end != saved {
            return Err(AdminError::Conflict(format!(
                "cluster {}, topic {topic}, partition {p}: records were written while the tail was saved (the log ended at offset {saved}, now at {end}); nothing was deleted; stop its producers and run the command again",
                old_c.name()
            )));
        }
    }
    old_c.delete_topic(topic).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while fresh_topic(old_c, topic)
        .await?
        .is_some_and(|(id, _)| id == plan.topic_id)
    {
        if Instant::now() > deadline {
            return Err(AdminError::Failed(crate::Error::invalid(format!(
                "cluster {}, topic {topic}: still listed a minute after it was deleted; run the command again",
                old_c.name()
            ))));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Steps 4 and 5: the new mirror's old positions are removed and its record written, then the
/// groups restored.
async fn finish(
    old_c: &Cluster,
    f: &Flows<'_>,
    out: &mut RestoreOutcome,
    back_view: &mirrors::ControlView,
    rf: i16,
    timeout: Duration,
) -> Result<(), AdminError> {
    let (topic, new) = (out.plan.topic.clone(), f.back.source.as_str());
    if fresh_topic(old_c, &topic).await?.is_some() {
        return Err(AdminError::Conflict(format!(
            "cluster {}, topic {topic}: created again since it was deleted, by something other than strait (a producer or consumer with auto.create.topics.enable?); its tail is saved in {}: delete the topic and run the command again",
            old_c.name(),
            out.plan.saved_to
        )));
    }
    offsets_dropped(old_c, &out.plan).await?;
    let stale: Vec<(Bytes, Option<Bytes>)> = store::read_progress_records(old_c, new)
        .await?
        .into_keys()
        .filter(|(t, _)| *t == topic)
        .map(|(t, p)| (Bytes::from(super::progress::key(new, &t, p)), None))
        .collect();
    if !stale.is_empty() {
        store::append(old_c, old_c.progress_topic(), 0, &stale).await?;
    }
    let now = store::now_ms();
    let mut rec = MirrorRecord::new(&f.back.link_name(), new, &topic, true, now);
    // Commands stored for this link before now are history, not requests.
    rec.command_at_ms = back_view
        .commands
        .get(&topic)
        .map_or(0, |c| c.at_ms)
        .max(now);
    rec.restored = Some(Restored {
        at_ms: out.plan.at_ms,
        saved_to: out.plan.saved_to.clone(),
        records_saved: out.plan.records_saved,
    });
    rec.reason = Some(format!(
        "restored from cluster {new}: {} records cut on cluster {} and saved to {}",
        out.plan.records_saved,
        old_c.name(),
        out.plan.saved_to
    ));
    mirrors::write_state(old_c, &rec, rf).await?;
    restore_groups(old_c, out, timeout).await
}

/// Waits until the old source dropped its groups' committed offsets of the deleted topic
/// (Apache Kafka does so shortly after a deletion, asynchronously): the new mirror is started
/// only then, so that every offset of the topic found afterwards was written after the restore.
async fn offsets_dropped(old_c: &Cluster, plan: &RestorePlan) -> Result<(), AdminError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    for group in plan.groups.keys() {
        loop {
            let left = groups::committed(old_c, group)
                .await?
                .iter()
                .any(|c| c.topic == plan.topic);
            if !left {
                break;
            }
            if Instant::now() > deadline {
                return Err(AdminError::Failed(crate::Error::invalid(format!(
                    "cluster {}, topic {}: group {group:?} still has offsets of the deleted topic a minute after its deletion; run the command again",
                    old_c.name(),
                    plan.topic
                ))));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// Commits the plan's group offsets on the old source as the new mirror copies far enough
/// ([`group_commits`]), for up to `timeout`; groups with active members there are left alone.
async fn restore_groups(
    old_c: &Cluster,
    out: &mut RestoreOutcome,
    timeout: Duration,
) -> Result<(), AdminError> {
    let plan = out.plan.clone();
    let deadline = Instant::now() + timeout;
    loop {
        let maps: HashMap<i32, OffsetMap> = store::read_progress(old_c, &plan.source_cluster)
            .await?
            .into_iter()
            .filter(|((t, _), _)| *t == plan.topic)
            .map(|((_, p), m)| (p, m))
            .collect();
        let mut present = HashSet::new();
        for group in plan.groups.keys() {
            for c in groups::committed(old_c, group).await? {
                if c.topic == plan.topic {
                    present.insert((group.clone(), c.partition));
                }
            }
        }
        let (commits, waiting) = group_commits(&plan, &maps, &present);
        let mut by_group: BTreeMap<String, Vec<(String, i32, i64)>> = BTreeMap::new();
        for (g, p, o) in commits {
            by_group
                .entry(g)
                .or_default()
                .push((plan.topic.clone(), p, o));
        }
        for (group, offsets) in by_group {
            if groups::active_members(old_c, &group).await? > 0 {
                if !out.busy.contains(&group) {
                    out.busy.push(group);
                }
                continue;
            }
            groups::commit(old_c, &group, &offsets).await?;
            out.committed
                .extend(offsets.into_iter().map(|(_, p, o)| (group.clone(), p, o)));
        }
        out.waiting = waiting;
        if waiting == 0 || Instant::now() >= deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The cut point of every partition, for reports.
pub fn cut_rows(plan: &RestorePlan) -> Vec<(i32, CutPoint)> {
    plan.partitions.iter().map(|(p, c)| (*p, *c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_earlier_plans_offsets_fill_in_only_where_the_new_plan_has_none() {
        let groups = |g: &[(&str, i32, i64)]| {
            let mut m: BTreeMap<String, BTreeMap<i32, i64>> = BTreeMap::new();
            for (name, p, o) in g {
                m.entry(name.to_string()).or_default().insert(*p, *o);
            }
            m
        };
        let mut plan = RestorePlan {
            groups: groups(&[("app", 0, 10)]),
            ..RestorePlan::default()
        };
        let earlier = RestorePlan {
            groups: groups(&[("app", 0, 7), ("app", 1, 4), ("gone", 2, 9)]),
            ..RestorePlan::default()
        };
        keep_earlier_offsets(&mut plan, earlier);
        assert_eq!(
            plan.groups,
            groups(&[("app", 0, 10), ("app", 1, 4), ("gone", 2, 9)])
        );
    }
}
