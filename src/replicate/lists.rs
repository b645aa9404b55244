//! Allow/deny lists changed at runtime (`strait topics` / `strait groups`, like `srm-control`),
//! stored durably in the target cluster and picked up by running flows.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::store;
use crate::client::Cluster;
use crate::error::Result;

/// The default name of the compacted topic on each target cluster that holds runtime lists
/// (a cluster's `control_topic`: [`Cluster::control_topic`]).
pub const CONTROL_TOPIC: &str = crate::config::DEFAULT_CONTROL_TOPIC;

/// Which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// Topic allow/deny lists.
    Topics,
    /// Consumer group allow/deny lists.
    Groups,
}

/// An allow list and a deny list of regexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Lists {
    /// Names matching one of these are included.
    pub include: Vec<String>,
    /// Names matching one of these are excluded.
    pub exclude: Vec<String>,
}

fn key(kind: ListKind, source: &str, target: &str) -> String {
    let k = match kind {
        ListKind::Topics => "topics",
        ListKind::Groups => "groups",
    };
    format!("{k}|{source}->{target}")
}

/// The stored lists of a flow, if any were set at runtime.
pub async fn read(
    target: &Cluster,
    kind: ListKind,
    source: &str,
    target_alias: &str,
) -> Result<Option<Lists>> {
    let map = store::read_latest(target, target.control_topic()).await?;
    Ok(map
        .get(key(kind, source, target_alias).as_bytes())
        .and_then(|v| serde_json::from_slice(v).ok()))
}

/// Stores the lists of a flow.
pub async fn write(
    target: &Cluster,
    kind: ListKind,
    source: &str,
    target_alias: &str,
    lists: &Lists,
    replication_factor: i16,
) -> Result<()> {
    store::ensure_compacted_topic(target, target.control_topic(), replication_factor).await?;
    let value = serde_json::to_vec(lists).unwrap_or_default();
    store::append(
        target,
        target.control_topic(),
        0,
        &[(
            Bytes::from(key(kind, source, target_alias)),
            Some(Bytes::from(value)),
        )],
    )
    .await?;
    Ok(())
}
