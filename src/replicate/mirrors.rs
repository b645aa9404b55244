//! Mirror-topic state kept in the destination cluster's control topic: states written by running
//! flows, commands written by `strait mirror ...`, and runtime link settings. The pure rules are
//! in [`crate::mirror`]; this module only reads and writes the records.

use std::collections::HashMap;

use bytes::Bytes;

use super::store;
use crate::client::{Cluster, LATEST};
use crate::error::Result;
use crate::mirror::restore::{plan_key, RestorePlan};
use crate::mirror::{
    command_key, link_applied_key, link_key, state_key, topic_of_key, LinkSettings, MirrorCommand,
    MirrorRecord,
};

/// What the control topic says about one link's mirror topics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControlView {
    /// Mirror states by topic.
    pub records: HashMap<String, MirrorRecord>,
    /// Latest operator command by topic.
    pub commands: HashMap<String, MirrorCommand>,
    /// Runtime link settings, if any were stored.
    pub link: Option<LinkSettings>,
    /// Settings version a running flow applied last.
    pub applied: Option<i64>,
}

/// Reads the mirror records of flows from `source` and the settings of `link`.
pub async fn read_view(target: &Cluster, source: &str, link: &str) -> Result<ControlView> {
    let mut view = ControlView::default();
    for (k, v) in store::read_latest(target, target.control_topic()).await? {
        let Ok(k) = std::str::from_utf8(&k) else {
            continue;
        };
        if let Some(topic) = topic_of_key(k, "mirror", source) {
            if let Ok(r) = serde_json::from_slice::<MirrorRecord>(&v) {
                view.records.insert(topic.to_string(), r);
            }
        } else if let Some(topic) = topic_of_key(k, "mirror-command", source) {
            if let Ok(c) = serde_json::from_slice::<MirrorCommand>(&v) {
                view.commands.insert(topic.to_string(), c);
            }
        } else if k == link_key(link) {
            view.link = serde_json::from_slice(&v).ok();
        } else if k == link_applied_key(link) {
            view.applied = std::str::from_utf8(&v).ok().and_then(|s| s.parse().ok());
        }
    }
    Ok(view)
}

/// The control topic's log end (0 if it does not exist): cheap change detection.
pub async fn control_end(target: &Cluster) -> Result<i64> {
    if target.topic(target.control_topic()).await?.is_none() {
        return Ok(0);
    }
    target
        .partition(target.control_topic(), 0)
        .list_offset(LATEST)
        .await
}

async fn put(target: &Cluster, key: String, value: Vec<u8>, replication_factor: i16) -> Result<()> {
    store::ensure_compacted_topic(target, target.control_topic(), replication_factor).await?;
    store::append(
        target,
        target.control_topic(),
        0,
        &[(Bytes::from(key), Some(Bytes::from(value)))],
    )
    .await?;
    Ok(())
}

/// Stores a mirror topic's state.
pub async fn write_state(
    target: &Cluster,
    record: &MirrorRecord,
    replication_factor: i16,
) -> Result<()> {
    let value = serde_json::to_vec(record).unwrap_or_default();
    put(
        target,
        state_key(&record.source_cluster, &record.topic),
        value,
        replication_factor,
    )
    .await
}

/// Stores an operator's command for a mirror topic.
pub async fn write_command(
    target: &Cluster,
    source: &str,
    topic: &str,
    command: &MirrorCommand,
    replication_factor: i16,
) -> Result<()> {
    let value = serde_json::to_vec(command).unwrap_or_default();
    put(
        target,
        command_key(source, topic),
        value,
        replication_factor,
    )
    .await
}

/// Stores a truncate-and-restore plan (in the old source's control topic, before its topic is
/// deleted).
pub async fn write_plan(
    target: &Cluster,
    plan: &RestorePlan,
    replication_factor: i16,
) -> Result<()> {
    let value = serde_json::to_vec(plan).unwrap_or_default();
    put(
        target,
        plan_key(&plan.source_cluster, &plan.topic),
        value,
        replication_factor,
    )
    .await
}

/// The truncate-and-restore plan stored for `topic` mirrored from `source`, if any.
pub async fn read_plan(target: &Cluster, source: &str, topic: &str) -> Result<Option<RestorePlan>> {
    let key = plan_key(source, topic);
    let latest = store::read_latest(target, target.control_topic()).await?;
    let Some(value) = latest.get(key.as_bytes()) else {
        return Ok(None);
    };
    serde_json::from_slice(value).map(Some).map_err(|e| {
        crate::error::Error::invalid(format!(
            "cluster {}, topic {}: the record {key} cannot be read: {e}",
            target.name(),
            target.control_topic()
        ))
    })
}

/// Stores runtime link settings.
pub async fn write_link(
    target: &Cluster,
    link: &str,
    settings: &LinkSettings,
    replication_factor: i16,
) -> Result<()> {
    let value = serde_json::to_vec(settings).unwrap_or_default();
    put(target, link_key(link), value, replication_factor).await
}

/// Records that a running flow applied settings `version`.
pub async fn write_applied(
    target: &Cluster,
    link: &str,
    version: i64,
    replication_factor: i16,
) -> Result<()> {
    put(
        target,
        link_applied_key(link),
        version.to_string().into_bytes(),
        replication_factor,
    )
    .await
}

/// Applies `settings` over the configured values (absent fields keep them).
pub fn effective(
    cfg: &crate::config::FlowConfig,
    settings: Option<&LinkSettings>,
) -> (bool, std::time::Duration, crate::mirror::GroupFilters) {
    let mut enable = cfg.consumer_offset_sync;
    let mut every = cfg.consumer_offset_sync_interval;
    let mut filters = cfg.consumer_offset_group_filters.clone();
    if let Some(s) = settings {
        if let Some(e) = s.consumer_offset_sync_enable {
            enable = e;
        }
        if let Some(ms) = s.consumer_offset_sync_ms {
            every = std::time::Duration::from_millis(ms.max(100));
        }
        if let Some(f) = &s.consumer_offset_group_filters {
            filters = f.clone();
        }
    }
    (enable, every, filters)
}
