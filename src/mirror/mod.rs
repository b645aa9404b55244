//! Mirror topics (Cluster Linking style), sans-io: mirror states and the commands that change
//! them, consumer-offset group filters in Cluster Linking's JSON form, the per-link settings that
//! can change at runtime, whether a partition's offsets are identical to the source's, and the
//! rows of `strait mirror status`.
//!
//! A mirror flow (`mode = "mirror"`) copies each selected topic under the same name, after the
//! flow's `prefix` if it has one (Cluster Linking's `cluster.link.prefix`). When strait
//! created the destination topic while the source partition's log started at offset 0, every
//! record lands at the offset it has on the source ([`OffsetsMode::Identical`]). Where that cannot
//! hold (the source log had been truncated, the topic already existed, records had to be dropped
//! or renumbered) the partition is [`OffsetsMode::Mapped`]: consumer offsets are translated
//! through its exact offset map, and strait says so for that partition.
//!
//! State lives in the destination cluster's control topic, one compacted record per key:
//! - [`command_key`]: what an operator asked for (`strait mirror pause|resume|promote|failover`);
//! - [`state_key`]: what the running flow made of it ([`MirrorRecord`]);
//! - [`link_key`] / [`link_applied_key`]: runtime link settings ([`LinkSettings`]) and the
//!   version a running flow has applied.

use serde::{Deserialize, Serialize};

use crate::offsets::OffsetMap;

pub mod restore;

pub use restore::Restored;

/// Where a mirror topic stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MirrorState {
    /// Being mirrored.
    #[default]
    Active,
    /// Mirroring suspended by an operator; resumes where it stopped.
    Paused,
    /// Waiting to catch up and sync consumer offsets before it stops.
    Promoting,
    /// Stopped after catching up: an ordinary topic strait never writes again.
    Promoted,
    /// Stopped at once (source gone): an ordinary topic strait never writes again.
    FailedOver,
    /// Waiting to catch up and sync consumer offsets before the direction is reversed
    /// (`strait mirror reverse-and-start|reverse-and-pause`).
    Reversing,
    /// Mirrored the other way now: an ordinary writable topic here, whose source topic is a
    /// mirror of it. A reversal back (`reverse-and-start` on the other link) makes it a mirror
    /// again, from where the other side stopped.
    Reversed,
}

impl MirrorState {
    /// The spelling used in tables and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            MirrorState::Active => "active",
            MirrorState::Paused => "paused",
            MirrorState::Promoting => "promoting",
            MirrorState::Promoted => "promoted",
            MirrorState::FailedOver => "failed_over",
            MirrorState::Reversing => "reversing",
            MirrorState::Reversed => "reversed",
        }
    }

    /// Whether mirroring has ended (for good, but for a reversed mirror reversed back).
    pub fn is_stopped(self) -> bool {
        matches!(
            self,
            MirrorState::Promoted | MirrorState::FailedOver | MirrorState::Reversed
        )
    }

    /// Whether data is fetched and written in this state.
    pub fn moves_data(self) -> bool {
        matches!(
            self,
            MirrorState::Active | MirrorState::Promoting | MirrorState::Reversing
        )
    }

    /// Whether the topic is on its way to becoming writable (promoting or reversing): it
    /// stops once caught up with consumer offsets synced.
    pub fn is_finishing(self) -> bool {
        matches!(self, MirrorState::Promoting | MirrorState::Reversing)
    }
}

/// A mirror topic's status as Cluster Linking reports it (`kafka-mirrors --describe`, the REST
/// API's `mirror_status`): its [`MirrorState`] and what happened to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MirrorStatusKind {
    /// Being mirrored.
    Active,
    /// Paused by an operator.
    Paused,
    /// Promoting: stops once caught up.
    PendingStopped,
    /// Promoted or failed over: an ordinary topic.
    Stopped,
    /// Moves no data until someone acts (source topic deleted or created again, a partition
    /// stopped); recovers only by promotion or failover.
    Failed,
    /// The source cluster has not answered for `source_unavailable_after`; recovers by itself.
    SourceUnavailable,
}

impl MirrorStatusKind {
    /// Every status, in metric order.
    pub const ALL: [MirrorStatusKind; 6] = [
        MirrorStatusKind::Active,
        MirrorStatusKind::Paused,
        MirrorStatusKind::PendingStopped,
        MirrorStatusKind::Stopped,
        MirrorStatusKind::Failed,
        MirrorStatusKind::SourceUnavailable,
    ];

    /// Cluster Linking's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MirrorStatusKind::Active => "ACTIVE",
            MirrorStatusKind::Paused => "PAUSED",
            MirrorStatusKind::PendingStopped => "PENDING_STOPPED",
            MirrorStatusKind::Stopped => "STOPPED",
            MirrorStatusKind::Failed => "FAILED",
            MirrorStatusKind::SourceUnavailable => "SOURCE_UNAVAILABLE",
        }
    }
}

/// The status of a mirror in `state` whose failure is `failure` (see
/// [`MirrorRecord::failure`]) while the source cluster has been unreachable long enough for
/// `source_problem` (the last error), with the reason to show. An ended mirror is stopped
/// whatever happens at the source; a failure outranks an unreachable source (it does not end
/// when the source comes back).
pub fn mirror_status(
    state: MirrorState,
    failure: Option<&str>,
    source_problem: Option<&str>,
) -> (MirrorStatusKind, Option<String>) {
    use MirrorStatusKind as K;
    match state {
        MirrorState::Promoted => (K::Stopped, Some("promoted".into())),
        MirrorState::FailedOver => (K::Stopped, Some("failed over".into())),
        MirrorState::Reversed => (K::Stopped, Some("reversed".into())),
        MirrorState::Promoting | MirrorState::Reversing => {
            (K::PendingStopped, failure.map(str::to_string))
        }
        _ if failure.is_some() => (K::Failed, failure.map(str::to_string)),
        _ if source_problem.is_some() => (
            K::SourceUnavailable,
            source_problem.map(|p| format!("source cluster unreachable: {p}")),
        ),
        MirrorState::Paused => (K::Paused, None),
        MirrorState::Active => (K::Active, None),
    }
}

/// What an operator can ask of a mirror topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MirrorAction {
    /// Suspend mirroring.
    Pause,
    /// Continue mirroring.
    Resume,
    /// Catch up, sync consumer offsets, then stop for good.
    Promote,
    /// Stop for good at once.
    Failover,
    /// Catch up and sync consumer offsets, then reverse: this topic becomes writable and its
    /// source topic a mirror of it, mirroring at once (Cluster Linking's
    /// `reverse-and-start-mirror`).
    ReverseAndStart,
    /// As [`MirrorAction::ReverseAndStart`], the new mirror paused (`reverse-and-pause-mirror`).
    ReverseAndPause,
}

impl MirrorAction {
    /// The state this action leads to once applied (for promote: once finished).
    pub fn final_state(self) -> MirrorState {
        match self {
            MirrorAction::Pause => MirrorState::Paused,
            MirrorAction::Resume => MirrorState::Active,
            MirrorAction::Promote => MirrorState::Promoted,
            MirrorAction::Failover => MirrorState::FailedOver,
            MirrorAction::ReverseAndStart | MirrorAction::ReverseAndPause => MirrorState::Reversed,
        }
    }

    /// The command's name.
    pub fn as_str(self) -> &'static str {
        match self {
            MirrorAction::Pause => "pause",
            MirrorAction::Resume => "resume",
            MirrorAction::Promote => "promote",
            MirrorAction::Failover => "failover",
            MirrorAction::ReverseAndStart => "reverse-and-start",
            MirrorAction::ReverseAndPause => "reverse-and-pause",
        }
    }

    /// Whether this action reverses the mirror's direction.
    pub fn is_reverse(self) -> bool {
        matches!(
            self,
            MirrorAction::ReverseAndStart | MirrorAction::ReverseAndPause
        )
    }
}

/// Where a reversed mirror goes: the link of the mirror flow in the other direction, which
/// mirrors the topic from this destination back into its source once reversed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reversal {
    /// The link (mirror flow) from this flow's target to its source.
    pub link: String,
    /// Whether the new mirror starts paused (`reverse-and-pause`).
    pub paused: bool,
}

/// An operator's request, stored under [`command_key`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorCommand {
    /// What to do.
    pub action: MirrorAction,
    /// When it was asked (ms since the epoch); identifies the request.
    pub at_ms: i64,
    /// Reversals only: the link that mirrors the other way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<Reversal>,
}

/// The state of one mirror topic as the flow keeps it, stored under [`state_key`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorRecord {
    /// Link name.
    pub link: String,
    /// Source cluster alias.
    pub source_cluster: String,
    /// The source topic's name (on the destination: the flow's prefix, then this).
    pub topic: String,
    /// Current state.
    pub state: MirrorState,
    /// Whether strait created the destination topic (a precondition of identical offsets).
    pub created_by_strait: bool,
    /// `at_ms` of the last command applied (0 if none).
    #[serde(default)]
    pub command_at_ms: i64,
    /// When the state last changed (ms since the epoch).
    pub updated_ms: i64,
    /// Why the state is what it is, when there is more to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Partitions stopped until someone acts (something else wrote into the mirror topic, the
    /// source topic was created again or truncated), and why.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub diverged: std::collections::BTreeMap<i32, String>,
    /// Why the whole mirror failed (its source topic was deleted), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// A reversing or reversed mirror: where it goes (see [`Reversal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reversal: Option<Reversal>,
    /// A mirror started by a reversal: per partition, the source and destination offsets at
    /// which it starts, where the other direction stopped. Below them both sides hold the same
    /// records.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub start_at: std::collections::BTreeMap<i32, [i64; 2]>,
    /// A mirror started by truncate-and-restore (see [`restore`]): which restore, and what was
    /// cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<Restored>,
}

impl MirrorRecord {
    /// A new active mirror.
    pub fn new(
        link: &str,
        source: &str,
        topic: &str,
        created_by_strait: bool,
        now_ms: i64,
    ) -> Self {
        MirrorRecord {
            link: link.to_string(),
            source_cluster: source.to_string(),
            topic: topic.to_string(),
            state: MirrorState::Active,
            created_by_strait,
            command_at_ms: 0,
            updated_ms: now_ms,
            reason: None,
            diverged: Default::default(),
            failed: None,
            reversal: None,
            start_at: Default::default(),
            restored: None,
        }
    }

    /// The record of the mirror a reversal starts in the other direction: `topic` mirrored from
    /// `source` (this mirror's destination) by `reversal.link`, from the offsets `start_at`
    /// where this mirror stopped; `identical` when this mirror's offsets were the source's.
    pub fn reversed(
        reversal: &Reversal,
        source: &str,
        topic: &str,
        start_at: std::collections::BTreeMap<i32, [i64; 2]>,
        identical: bool,
        now_ms: i64,
    ) -> Self {
        let mut r = MirrorRecord::new(&reversal.link, source, topic, identical, now_ms);
        if reversal.paused {
            r.state = MirrorState::Paused;
        }
        r.reason = Some(format!("started by a reversal from cluster {source}"));
        r.start_at = start_at;
        r
    }

    /// Whether this is a live mirror a reversal or truncate-and-restore started (the other
    /// direction handed it over).
    pub fn handed_over(&self) -> bool {
        !self.state.is_stopped() && (!self.start_at.is_empty() || self.restored.is_some())
    }

    /// Where partition `p` of a mirror started by a reversal starts (source offset,
    /// destination offset), if it is one.
    pub fn start_of(&self, p: i32) -> Option<(i64, i64)> {
        self.start_at.get(&p).map(|[s, t]| (*s, *t))
    }

    /// Partition `p`'s [`OffsetsMode`] with offset map `map`: from 0, or from where a reversal
    /// started it when the map starts there.
    pub fn offsets_mode(&self, p: i32, map: &OffsetMap) -> OffsetsMode {
        let from = self
            .start_of(p)
            .filter(|(s, t)| s == t && map.source_start() == *s && map.target_start() == *t)
            .map_or(0, |(s, _)| s);
        offsets_mode_from(map, self.created_by_strait, from)
    }

    /// Why the mirror moves no data until someone acts: the topic's failure, or the first
    /// stopped partition's.
    pub fn failure(&self) -> Option<String> {
        self.failed.clone().or_else(|| {
            self.diverged
                .iter()
                .next()
                .map(|(p, why)| format!("partition {p} stopped: {why}"))
        })
    }

    /// This mirror's status and the reason to show (a reversed one says where it goes now, a
    /// restored one what was cut),
    /// the source cluster unreachable long enough for `source_problem` (see [`mirror_status`]).
    pub fn status(&self, source_problem: Option<&str>) -> (MirrorStatusKind, Option<String>) {
        let (kind, why) = mirror_status(self.state, self.failure().as_deref(), source_problem);
        match self.state {
            MirrorState::Reversed => (kind, self.reason.clone().or(why)),
            // A restored mirror says what was cut until something else has to be said.
            _ if why.is_none() && self.restored.is_some() => (kind, self.reason.clone()),
            _ => (kind, why),
        }
    }

    /// Whether `cmd` is newer than the last command applied.
    pub fn is_pending(&self, cmd: &MirrorCommand) -> bool {
        cmd.at_ms > self.command_at_ms
    }

    /// Whether `cmd` has been carried out to its end.
    pub fn has_done(&self, cmd: &MirrorCommand) -> bool {
        self.command_at_ms >= cmd.at_ms && self.state == cmd.action.final_state()
    }

    /// Applies a command to the record. Stopped mirrors never change again; a second promote
    /// while promoting is a no-op. Returns whether the record changed.
    pub fn apply(&mut self, cmd: &MirrorCommand, now_ms: i64) -> bool {
        if self.state.is_stopped()
            || !self.is_pending(cmd)
            || (cmd.action.is_reverse() && cmd.reverse.is_none())
        {
            return false;
        }
        self.command_at_ms = cmd.at_ms;
        self.state = match cmd.action {
            MirrorAction::Pause => MirrorState::Paused,
            MirrorAction::Resume => MirrorState::Active,
            MirrorAction::Promote => MirrorState::Promoting,
            MirrorAction::Failover => MirrorState::FailedOver,
            MirrorAction::ReverseAndStart | MirrorAction::ReverseAndPause => {
                self.reversal = cmd.reverse.clone();
                MirrorState::Reversing
            }
        };
        self.reason = None;
        self.updated_ms = now_ms;
        true
    }
}

/// The loop check of mirror flows in both directions between two clusters under the same topic
/// names: whether a flow from S to T must leave S's topic alone because it is T's topic
/// mirrored into S. `upstream` is the mirror record S holds for the topic from T (the topic on
/// S is, or was, a mirror of T's); `own` is the flow's own record for it on T.
///
/// A live mirror from T is never mirrored back. Once that mirror ended (promoted, failed over,
/// reversed) the topic is S's own, but T's topic of the same name still holds what it was
/// mirrored from: only a reversal, which leaves the flow a live record of its own with the
/// offsets to start from, makes the flow mirror it into T.
pub fn mirrors_back(upstream: Option<&MirrorRecord>, own: Option<&MirrorRecord>) -> bool {
    match upstream {
        None => false,
        Some(u) if !u.state.is_stopped() => true,
        Some(_) => !own.is_some_and(MirrorRecord::handed_over),
    }
}

/// Control-topic key of the operator's command for a mirror topic.
pub fn command_key(source: &str, topic: &str) -> String {
    format!("mirror-command|{source}|{topic}")
}

/// Control-topic key of a mirror topic's state.
pub fn state_key(source: &str, topic: &str) -> String {
    format!("mirror|{source}|{topic}")
}

/// The topic a [`state_key`] or [`command_key`] names, if `key` is one for `source`.
pub(crate) fn topic_of_key<'a>(key: &'a str, prefix: &str, source: &str) -> Option<&'a str> {
    key.strip_prefix(prefix)?
        .strip_prefix('|')?
        .strip_prefix(source)?
        .strip_prefix('|')
}

/// Control-topic key of a link's runtime settings.
pub fn link_key(link: &str) -> String {
    format!("link|{link}")
}

/// Control-topic key of the settings version a running flow applied.
pub fn link_applied_key(link: &str) -> String {
    format!("link-applied|{link}")
}

/// How group names are matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PatternType {
    /// The whole name; `*` matches every group.
    Literal,
    /// A name prefix.
    Prefixed,
}

/// Whether matching groups are synced or left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FilterType {
    /// Sync matching groups.
    Include,
    /// Never sync matching groups (beats any include).
    Exclude,
}

/// One entry of Cluster Linking's `consumer.offset.group.filters`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupFilter {
    /// Group name, prefix, or `*`.
    pub name: String,
    /// How `name` matches (default LITERAL).
    #[serde(default = "literal")]
    pub pattern_type: PatternType,
    /// Include or exclude (default INCLUDE).
    #[serde(default = "include")]
    pub filter_type: FilterType,
}

fn literal() -> PatternType {
    PatternType::Literal
}

fn include() -> FilterType {
    FilterType::Include
}

impl GroupFilter {
    fn matches(&self, group: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.name == "*" || self.name == group,
            PatternType::Prefixed => group.starts_with(&self.name),
        }
    }
}

/// Cluster Linking's consumer-offset group filters:
/// `{"groupFilters":[{"name":"*","patternType":"LITERAL","filterType":"INCLUDE"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GroupFilters {
    /// The filters, in any order (excludes win).
    pub group_filters: Vec<GroupFilter>,
}

impl GroupFilters {
    /// Every group.
    pub fn all() -> GroupFilters {
        GroupFilters {
            group_filters: vec![GroupFilter {
                name: "*".to_string(),
                pattern_type: PatternType::Literal,
                filter_type: FilterType::Include,
            }],
        }
    }

    /// Parses the JSON form, with an error that says what is wrong and what is allowed.
    pub fn parse(json: &str) -> Result<GroupFilters, String> {
        let f: GroupFilters = serde_json::from_str(json).map_err(|e| {
            format!(
                "{e}; expected {{\"groupFilters\":[{{\"name\":\"*\",\"patternType\":\"LITERAL|PREFIXED\",\"filterType\":\"INCLUDE|EXCLUDE\"}}]}}"
            )
        })?;
        if let Some(bad) = f.group_filters.iter().find(|g| g.name.is_empty()) {
            return Err(format!("a group filter has an empty name: {bad:?}"));
        }
        Ok(f)
    }

    /// The JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether `group`'s offsets are synced: it matches an include and no exclude.
    pub fn includes(&self, group: &str) -> bool {
        let mut included = false;
        for f in &self.group_filters {
            if f.matches(group) {
                match f.filter_type {
                    FilterType::Exclude => return false,
                    FilterType::Include => included = true,
                }
            }
        }
        included
    }
}

/// A link's settings that can change while it runs (`strait mirror configure`), stored under
/// [`link_key`]. Absent fields keep the configuration file's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LinkSettings {
    /// Identifies this version (ms since the epoch when it was stored).
    pub version: i64,
    /// Consumer-offset group filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_offset_group_filters: Option<GroupFilters>,
    /// Consumer-offset sync interval in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_offset_sync_ms: Option<u64>,
    /// Whether consumer offsets are synced at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_offset_sync_enable: Option<bool>,
}

/// Whether a mirror partition's destination offsets equal its source offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffsetsMode {
    /// Every record is at its source offset.
    Identical,
    /// Offsets differ; consumer offsets are translated through the offset map.
    Mapped(MappedReason),
}

/// Why a mirror partition's offsets differ from the source's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MappedReason {
    /// The destination topic existed before strait mirrored into it.
    TopicExisted,
    /// The source log started at this offset when mirroring began.
    SourceStartedAt(i64),
    /// From this source offset on, records were dropped or renumbered (control batches,
    /// aborted transactions, compacted gaps, retention).
    DivergedAt(i64),
}

impl std::fmt::Display for OffsetsMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OffsetsMode::Identical => f.write_str("identical"),
            OffsetsMode::Mapped(MappedReason::TopicExisted) => {
                f.write_str("mapped (the destination topic already existed)")
            }
            OffsetsMode::Mapped(MappedReason::SourceStartedAt(s)) => write!(
                f,
                "mapped (the source log started at offset {s} when mirroring began)"
            ),
            OffsetsMode::Mapped(MappedReason::DivergedAt(s)) => write!(
                f,
                "mapped (from source offset {s} records were dropped or renumbered: control batches, aborted transactions, compacted gaps or retention)"
            ),
        }
    }
}

/// Works out a partition's [`OffsetsMode`] from its offset map and whether strait created the
/// destination topic.
pub fn offsets_mode(map: &OffsetMap, created_by_strait: bool) -> OffsetsMode {
    offsets_mode_from(map, created_by_strait, 0)
}

/// As [`offsets_mode`] for a map that must start at `from`, below which the records are known
/// to be the same on both sides (0, or where a mirror started by a reversal starts).
pub fn offsets_mode_from(map: &OffsetMap, created_by_strait: bool, from: i64) -> OffsetsMode {
    if !created_by_strait {
        return OffsetsMode::Mapped(MappedReason::TopicExisted);
    }
    if map.source_start() != from || map.target_start() != from {
        return OffsetsMode::Mapped(MappedReason::SourceStartedAt(map.source_start()));
    }
    // The first source offset from which target != source: a run that is shifted, a hole
    // between runs, or a dropped tail.
    let mut next = from;
    for r in map.runs() {
        if r.source_start != next {
            return OffsetsMode::Mapped(MappedReason::DivergedAt(next));
        }
        if r.delta() != 0 {
            return OffsetsMode::Mapped(MappedReason::DivergedAt(r.source_start));
        }
        next = r.source_end();
    }
    if map.source_next() != next || map.target_next() != next {
        return OffsetsMode::Mapped(MappedReason::DivergedAt(next));
    }
    OffsetsMode::Identical
}

/// One row of `strait mirror status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MirrorPartitionStatus {
    /// The mirror topic's name on the destination.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Link name.
    pub link: String,
    /// Mirror state.
    pub state: MirrorState,
    /// Source log start offset.
    pub source_log_start: i64,
    /// Source log end offset.
    pub source_log_end: i64,
    /// Destination log end offset.
    pub dest_log_end: i64,
    /// Source records not yet on the destination.
    pub lag: i64,
    /// How far behind in time the destination is: newest source record timestamp minus the
    /// timestamp of the oldest source record not yet on the destination (0 when caught up;
    /// -1 unknown, or the partition is stopped: its position may name other records now).
    pub fetch_lag_ms: i64,
    /// Whether the destination has every source record.
    pub caught_up: bool,
    /// Identical or mapped offsets.
    pub offsets: String,
    /// The topic's status as Cluster Linking spells it (see [`MirrorStatusKind`]).
    pub status: String,
}

/// Lag in records of a mirror partition: source records at or after `source_next` (the next
/// source offset to mirror) up to the source log end.
pub fn lag(source_log_end: i64, source_next: i64) -> i64 {
    (source_log_end - source_next).max(0)
}

#[cfg(test)]
mod tests;
