//! Operator changes shared by the CLI (`strait topics|groups|pause|resume|failover`, `strait
//! mirror ...`) and the write API:
//! they return data (and say what kind of failure stopped them); the callers print or answer.
//! Every change goes through the durable records running instances read, so every instance of
//! a scale-out group applies it.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::groups;
use super::lists::{self, ListKind, Lists};
use super::mirrors::{self, ControlView};
use super::pause::{self, PauseRecord};
use crate::config::{Config, FlowConfig};
use crate::error::Error;
use crate::mirror::{
    GroupFilters, LinkSettings, MirrorAction, MirrorCommand, MirrorRecord, Reversal,
};

/// Why an operator change was refused or failed.
#[derive(Debug)]
pub enum AdminError {
    /// Bad input: `field` names what was wrong.
    BadInput {
        /// The input field (e.g. `add`, `group`).
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// An unknown flow, group or topic.
    NotFound(String),
    /// The change conflicts with the current state (nothing was changed).
    Conflict(String),
    /// The clusters could not be read or written.
    Failed(Error),
}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdminError::BadInput { field, message } => write!(f, "{field}: {message}"),
            AdminError::NotFound(m) | AdminError::Conflict(m) => f.write_str(m),
            AdminError::Failed(e) => write!(f, "{e}"),
        }
    }
}

impl From<Error> for AdminError {
    fn from(e: Error) -> AdminError {
        AdminError::Failed(e)
    }
}

impl AdminError {
    /// As a plain [`Error`] (for the CLI's exit code and message).
    pub fn into_error(self) -> Error {
        match self {
            AdminError::Failed(e) => e,
            other => Error::invalid(other.to_string()),
        }
    }
}

/// The configured flow `source->target`.
pub fn find_flow<'a>(
    config: &'a Config,
    source: &str,
    target: &str,
) -> Result<&'a FlowConfig, AdminError> {
    config
        .flows
        .iter()
        .find(|f| f.source == source && f.target == target)
        .ok_or_else(|| {
            let known: Vec<String> = config.flows.iter().map(|f| f.name()).collect();
            AdminError::NotFound(format!(
                "{}: no flow {source}->{target} (flows: {})",
                config.origin,
                known.join(", ")
            ))
        })
}

/// A change of an allow list and a deny list: regexes to add and to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListChange {
    /// Regexes added to the allow list.
    #[serde(default)]
    pub add: Vec<String>,
    /// Regexes removed from the allow list.
    #[serde(default)]
    pub remove: Vec<String>,
    /// Regexes added to the deny list.
    #[serde(default)]
    pub add_exclude: Vec<String>,
    /// Regexes removed from the deny list.
    #[serde(default)]
    pub remove_exclude: Vec<String>,
}

impl ListChange {
    /// Checks the regexes to add before anything is changed.
    pub fn check(&self) -> Result<(), AdminError> {
        for (field, list) in [("add", &self.add), ("add_exclude", &self.add_exclude)] {
            for re in list {
                regex::Regex::new(&format!("^(?:{re})$")).map_err(|e| AdminError::BadInput {
                    field,
                    message: format!("bad regex {re:?}: {e}"),
                })?;
            }
        }
        Ok(())
    }

    /// `lists` with this change applied.
    pub fn apply(&self, lists: &Lists) -> Lists {
        let mut current = lists.clone();
        for re in &self.add {
            if !current.include.contains(re) {
                current.include.push(re.clone());
            }
        }
        current.include.retain(|r| !self.remove.contains(r));
        for re in &self.add_exclude {
            if !current.exclude.contains(re) {
                current.exclude.push(re.clone());
            }
        }
        current.exclude.retain(|r| !self.remove_exclude.contains(r));
        current
    }
}

/// The lists of a flow after a change, and whether they changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListsOutcome {
    /// The lists now in force.
    pub lists: Lists,
    /// Whether the change altered (and stored) them.
    pub changed: bool,
}

/// The configured lists of `flow`.
fn config_lists(flow: &FlowConfig, kind: ListKind) -> Lists {
    match kind {
        ListKind::Topics => Lists {
            include: flow.topics.clone(),
            exclude: flow.topics_exclude.clone(),
        },
        ListKind::Groups => Lists {
            include: flow.groups.clone(),
            exclude: flow.groups_exclude.clone(),
        },
    }
}

/// Applies `change` to the `kind` lists of the flow `source->target` and stores them in the
/// target cluster (only when they changed); running instances pick them up.
pub async fn change_lists(
    config: &Config,
    kind: ListKind,
    source: &str,
    target: &str,
    change: &ListChange,
) -> Result<ListsOutcome, AdminError> {
    let flow = find_flow(config, source, target)?;
    change.check()?;
    let initial = config_lists(flow, kind);
    let replication_factor = super::cluster_settings(config, target)?.replication_factor;
    let cluster = super::connect_once(config, target).await?;
    let before = lists::read(&cluster, kind, source, target)
        .await?
        .unwrap_or(initial);
    let current = change.apply(&before);
    let changed = current != before;
    if changed {
        lists::write(&cluster, kind, source, target, &current, replication_factor).await?;
    }
    Ok(ListsOutcome {
        lists: current,
        changed,
    })
}

/// What pausing or resuming a flow did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PauseOutcome {
    /// The flow's pause record now (`paused: false, changed_ms: 0` if it was never paused).
    pub record: PauseRecord,
    /// Whether a record was stored (`false`: it already was in that state).
    pub changed: bool,
}

/// Longest reason a pause may carry.
pub const MAX_PAUSE_REASON: usize = 200;

/// Pauses (`paused`) or resumes the flow `source->target` for every instance running it, by
/// storing its pause record in the target cluster; stores nothing when it already is in that
/// state.
pub async fn pause_flow(
    config: &Config,
    source: &str,
    target: &str,
    paused: bool,
    reason: Option<String>,
) -> Result<PauseOutcome, AdminError> {
    find_flow(config, source, target)?;
    if let Some(r) = &reason {
        if r.chars().count() > MAX_PAUSE_REASON || r.chars().any(char::is_control) {
            return Err(AdminError::BadInput {
                field: "reason",
                message: format!(
                    "at most {MAX_PAUSE_REASON} characters on one line, no control characters"
                ),
            });
        }
    }
    let replication_factor = super::cluster_settings(config, target)?.replication_factor;
    let cluster = super::connect_once(config, target).await?;
    let before = pause::read(&cluster, source, target)
        .await?
        .unwrap_or_default();
    if before.paused == paused {
        return Ok(PauseOutcome {
            record: before,
            changed: false,
        });
    }
    let record = PauseRecord::now(paused, reason);
    pause::write(&cluster, source, target, &record, replication_factor).await?;
    Ok(PauseOutcome {
        record,
        changed: true,
    })
}

/// One partition's translated offset of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupOffset {
    /// Topic on the target.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset on the target.
    pub offset: i64,
}

/// The translated offsets of `group` on the target (from the checkpoints stored there, in the
/// checkpoints topic the flow `source->target` names, MirrorMaker 2's name without such a flow;
/// reads only the target cluster).
pub async fn translated_offsets(
    config: &Config,
    source: &str,
    target: &str,
    group: &str,
) -> Result<(crate::client::Cluster, Vec<GroupOffset>), AdminError> {
    super::cluster_settings(config, source).map_err(|e| AdminError::NotFound(e.to_string()))?;
    super::cluster_settings(config, target).map_err(|e| AdminError::NotFound(e.to_string()))?;
    let cluster = super::connect_once(config, target).await?;
    let topic = config
        .flows
        .iter()
        .find(|f| f.source == source && f.target == target)
        .map(|f| f.mm2_topic_names())
        .unwrap_or_default()
        .checkpoints(source);
    let offsets: Vec<GroupOffset> = groups::read_checkpoints(&cluster, &topic)
        .await?
        .into_values()
        .filter(|c| c.consumer_group_id == group)
        .map(|c| GroupOffset {
            topic: c.topic,
            partition: c.partition,
            offset: c.downstream_offset,
        })
        .collect();
    if offsets.is_empty() {
        return Err(AdminError::NotFound(format!(
            "no checkpoint for group {group:?} from cluster {source} (is the flow {source}->{target} running with the group in its lists?)"
        )));
    }
    Ok((cluster, offsets))
}

/// Commits `group`'s translated offsets on the target (with `dry_run`, only says what it
/// would commit). Refused while the group has active members on the target.
pub async fn failover_group(
    config: &Config,
    source: &str,
    target: &str,
    group: &str,
    dry_run: bool,
) -> Result<Vec<GroupOffset>, AdminError> {
    let (cluster, offsets) = translated_offsets(config, source, target, group).await?;
    let active = groups::active_members(&cluster, group).await?;
    if active > 0 {
        return Err(AdminError::Conflict(format!(
            "group {group:?} has {active} active member(s); stop its consumers on {target} before failing over"
        )));
    }
    if !dry_run {
        let triples: Vec<(String, i32, i64)> = offsets
            .iter()
            .map(|o| (o.topic.clone(), o.partition, o.offset))
            .collect();
        groups::commit(&cluster, group, &triples).await?;
    }
    Ok(offsets)
}

/// The mirror flows `link` selects (a flow's `link`, or its `source->target` name), or all of
/// them when `link` is `None`.
pub fn mirror_flows<'a>(
    config: &'a Config,
    link: Option<&str>,
) -> Result<Vec<&'a FlowConfig>, AdminError> {
    let all: Vec<&FlowConfig> = config
        .flows
        .iter()
        .filter(|f| f.mode == crate::config::FlowMode::Mirror)
        .collect();
    if all.is_empty() {
        return Err(AdminError::NotFound(format!(
            "{}: no mirror flow (a flow with mode = \"mirror\")",
            config.origin
        )));
    }
    let Some(l) = link else {
        return Ok(all);
    };
    let found: Vec<&FlowConfig> = all
        .iter()
        .copied()
        .filter(|f| f.link_name() == l || f.name() == l)
        .collect();
    if found.is_empty() {
        let known: Vec<String> = all.iter().map(|f| f.link_name()).collect();
        return Err(AdminError::NotFound(format!(
            "{}: no mirror link {l:?} (links: {})",
            config.origin,
            known.join(", ")
        )));
    }
    Ok(found)
}

/// The one mirror flow that mirrors `topic`, with its target, its view and the source topic
/// (the key of its records). `topic` is the mirror topic's name on the destination (Cluster
/// Linking's `kafka-mirrors --topics west.trades`) or its source topic's name; the first is
/// looked for first. Of mirror flows both ways, the one whose mirror is live (not ended or
/// reversed) is taken.
pub async fn flow_of_topic<'a>(
    config: &'a Config,
    link: Option<&str>,
    topic: &str,
) -> Result<(&'a FlowConfig, crate::client::Cluster, ControlView, String), AdminError> {
    let mut names = Vec::new();
    let mut ended = None;
    for f in mirror_flows(config, link)? {
        let target = super::connect_once(config, &f.target).await?;
        let view = mirrors::read_view(&target, &f.source, &f.link_name()).await?;
        let source = [f.mirror_source(topic), Some(topic)]
            .into_iter()
            .flatten()
            .find(|t| view.records.contains_key(*t))
            .map(str::to_string);
        match source {
            Some(source)
                if view
                    .records
                    .get(&source)
                    .is_some_and(|r| !r.state.is_stopped()) =>
            {
                return Ok((f, target, view, source));
            }
            Some(source) => {
                ended.get_or_insert((f, target, view, source));
            }
            None => names.extend(view.records.keys().map(|t| f.mirror_topic(t))),
        }
    }
    if let Some(found) = ended {
        return Ok(found);
    }
    names.sort();
    Err(AdminError::NotFound(format!(
        "topic {topic:?} is not a mirror topic of {} (mirror topics: {})",
        link.unwrap_or("any mirror link"),
        if names.is_empty() {
            "none yet; `strait run` creates them".to_string()
        } else {
            names.join(", ")
        }
    )))
}

/// A mirror command stored for running instances to carry out.
pub struct MirrorSent<'a> {
    /// The mirror flow.
    pub flow: &'a FlowConfig,
    /// Its target cluster.
    pub target: crate::client::Cluster,
    /// The command as stored.
    pub command: MirrorCommand,
    /// The mirror's state when the command was stored.
    pub record: MirrorRecord,
}

/// Stores `action` for mirror topic `topic` (like `strait mirror pause|resume|promote|failover|
/// reverse-and-start|reverse-and-pause`; its destination or source name, see [`flow_of_topic`]);
/// a running instance carries it out within a second. Refused (409) once the mirror ended, and
/// for a reversal without a mirror flow in the other direction that selects the topic.
pub async fn mirror_command<'a>(
    config: &'a Config,
    link: Option<&str>,
    topic: &str,
    action: MirrorAction,
) -> Result<MirrorSent<'a>, AdminError> {
    // From here on `topic` is the source topic, the key of the mirror's records.
    let (flow, target, view, topic) = flow_of_topic(config, link, topic).await?;
    let topic = topic.as_str();
    let Some(record) = view.records.get(topic).cloned() else {
        return Err(AdminError::NotFound(format!(
            "topic {topic:?} is not a mirror topic"
        )));
    };
    if record.state.is_stopped() {
        return Err(AdminError::Conflict(format!(
            "topic {}: the mirror already ended ({}); it is an ordinary topic now",
            flow.mirror_topic(topic),
            record.state.as_str()
        )));
    }
    let rf = super::cluster_settings(config, &flow.target)?.replication_factor;
    let reverse = match action.is_reverse() {
        true => Some(reversal(config, flow, topic, action).await?),
        false => None,
    };
    let command = MirrorCommand {
        action,
        at_ms: super::store::now_ms().max(record.command_at_ms + 1),
        reverse,
    };
    mirrors::write_command(&target, &flow.source, topic, &command, rf).await?;
    Ok(MirrorSent {
        flow,
        target,
        command,
        record,
    })
}

/// Where a reversal of `flow`'s mirror topic `topic` goes: the mirror flow in the other
/// direction, which must select the topic (its lists as running instances read them). Its
/// control topic on `flow`'s source is created here, where the replication factor is known.
async fn reversal(
    config: &Config,
    flow: &FlowConfig,
    topic: &str,
    action: MirrorAction,
) -> Result<Reversal, AdminError> {
    let (src, dst) = (&flow.source, &flow.target);
    if !flow.prefix.is_empty() {
        return Err(AdminError::Conflict(format!(
            "cannot {} topic {topic}: the mirror flow {} names mirror topics with prefix {:?}, so the mirror and its source are different topics; promote the mirror instead",
            action.as_str(),
            flow.name(),
            flow.prefix
        )));
    }
    let back = config
        .flows
        .iter()
        .find(|f| {
            f.mode == crate::config::FlowMode::Mirror
                && &f.source == dst
                && &f.target == src
                && f.prefix.is_empty()
                && f.enabled
        })
        .ok_or_else(|| {
            AdminError::Conflict(format!(
                "{}: cannot {} topic {topic}: no enabled mirror flow from {dst} to {src} without a prefix to mirror it back (add one with mode = \"mirror\")",
                config.origin,
                action.as_str()
            ))
        })?;
    let source = super::connect_once(config, src).await?;
    check_selects(&source, back, topic, action.as_str()).await?;
    let rf = super::cluster_settings(config, src)?.replication_factor;
    super::store::ensure_compacted_topic(&source, source.control_topic(), rf).await?;
    Ok(Reversal {
        link: back.link_name(),
        paused: action == MirrorAction::ReverseAndPause,
    })
}

/// Refuses to `verb` topic `topic` unless mirror flow `flow` selects it (its topic lists as
/// running instances read them from `target`, its target cluster).
pub(super) async fn check_selects(
    target: &crate::client::Cluster,
    flow: &FlowConfig,
    topic: &str,
    verb: &str,
) -> Result<(), AdminError> {
    let lists = lists::read(target, ListKind::Topics, &flow.source, &flow.target)
        .await?
        .unwrap_or_else(|| config_lists(flow, ListKind::Topics));
    let selects = crate::filter::NameFilter::new(&lists.include, &lists.exclude)
        .is_ok_and(|f| f.matches(topic));
    if !selects {
        return Err(AdminError::Conflict(format!(
            "cannot {verb} topic {topic}: the mirror flow {} does not select it (its topics: {:?}, excluded: {:?})",
            flow.name(),
            lists.include,
            lists.exclude
        )));
    }
    Ok(())
}

/// A change of a link's consumer offset sync (like `strait mirror configure`); absent fields
/// keep their values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkChange {
    /// Cluster Linking group filters JSON.
    pub group_filters: Option<String>,
    /// Sync interval in milliseconds (not 0).
    pub sync_ms: Option<u64>,
    /// Sync on or off.
    pub enable: Option<bool>,
}

/// Link settings stored for running instances to apply.
pub struct LinkSent<'a> {
    /// The mirror flow.
    pub flow: &'a FlowConfig,
    /// Its target cluster.
    pub target: crate::client::Cluster,
    /// The settings as stored.
    pub settings: LinkSettings,
}

/// Stores `change` over the link's current settings (the one mirror flow `link` selects); a
/// running instance applies them within a second.
pub async fn configure_link<'a>(
    config: &'a Config,
    link: Option<&str>,
    change: &LinkChange,
) -> Result<LinkSent<'a>, AdminError> {
    let flows = mirror_flows(config, link)?;
    let [f] = flows.as_slice() else {
        let known: Vec<String> = flows.iter().map(|f| f.link_name()).collect();
        return Err(AdminError::BadInput {
            field: "link",
            message: format!(
                "several mirror links ({}); name one with --link",
                known.join(", ")
            ),
        });
    };
    let filters = match &change.group_filters {
        Some(j) => Some(GroupFilters::parse(j).map_err(|e| AdminError::BadInput {
            field: "consumer_offset_group_filters",
            message: e.to_string(),
        })?),
        None => None,
    };
    if filters.is_none() && change.sync_ms.is_none() && change.enable.is_none() {
        return Err(AdminError::BadInput {
            field: "consumer_offset_sync_enable",
            message: "nothing to change: give consumer_offset_group_filters, consumer_offset_sync_ms or consumer_offset_sync_enable".into(),
        });
    }
    if change.sync_ms == Some(0) {
        return Err(AdminError::BadInput {
            field: "consumer_offset_sync_ms",
            message: "an interval of zero is not allowed".into(),
        });
    }
    let link = f.link_name();
    let target = super::connect_once(config, &f.target).await?;
    let view = mirrors::read_view(&target, &f.source, &link).await?;
    let mut settings: LinkSettings = view.link.clone().unwrap_or_default();
    settings.version = super::store::now_ms().max(settings.version + 1);
    if let Some(fl) = filters {
        settings.consumer_offset_group_filters = Some(fl);
    }
    if let Some(ms) = change.sync_ms {
        settings.consumer_offset_sync_ms = Some(ms);
    }
    if let Some(e) = change.enable {
        settings.consumer_offset_sync_enable = Some(e);
    }
    let rf = super::cluster_settings(config, &f.target)?.replication_factor;
    mirrors::write_link(&target, &link, &settings, rf).await?;
    Ok(LinkSent {
        flow: f,
        target,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_changes_apply_and_check() {
        let l = Lists {
            include: vec!["a".into()],
            exclude: vec![],
        };
        let c = ListChange {
            add: vec!["b".into(), "a".into()],
            remove: vec!["a".into()],
            add_exclude: vec!["x".into()],
            remove_exclude: vec![],
        };
        let out = c.apply(&l);
        assert_eq!(out.include, vec!["b".to_string()]);
        assert_eq!(out.exclude, vec!["x".to_string()]);
        let bad = ListChange {
            add_exclude: vec!["(".into()],
            ..Default::default()
        };
        match bad.check() {
            Err(AdminError::BadInput { field, .. }) => assert_eq!(field, "add_exclude"),
            other => panic!("{other:?}"),
        }
    }
}
