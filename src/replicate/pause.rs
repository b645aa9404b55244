//! Pausing a whole flow (`strait pause|resume`, `POST /api/flows/{flow}/pause|resume`), as
//! Kafka Connect pauses a connector: one record in the control topic of the flow's target
//! cluster that every instance running the flow applies, including instances started later.
//!
//! A paused flow fetches nothing and writes nothing into the target: answers to requests
//! already in flight are applied, batches already fetched stay queued, positions, progress
//! records, ownership and consumer group checkpoints stay as they are. Resumed, it continues
//! from where it stopped, so nothing is lost or copied twice.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::store;
use crate::client::Cluster;
use crate::error::Result;

/// The stored pause state of a flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PauseRecord {
    /// Whether the flow is paused.
    pub paused: bool,
    /// When it was paused or resumed (ms since the epoch).
    pub changed_ms: i64,
    /// What the operator gave as the reason, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl PauseRecord {
    /// A record pausing (`paused`) or resuming a flow now, for `reason`.
    pub fn now(paused: bool, reason: Option<String>) -> PauseRecord {
        PauseRecord {
            paused,
            changed_ms: store::now_ms(),
            reason,
        }
    }

    /// Reads a stored value; `None` for one this version cannot read (treated as no record).
    pub fn decode(value: &[u8]) -> Option<PauseRecord> {
        serde_json::from_slice(value).ok()
    }
}

/// The key of flow `source->target`'s pause record.
pub fn key(source: &str, target: &str) -> String {
    format!("pause|{source}->{target}")
}

/// The stored pause record of a flow, if it was ever paused.
pub async fn read(
    target: &Cluster,
    source: &str,
    target_alias: &str,
) -> Result<Option<PauseRecord>> {
    let map = store::read_latest(target, target.control_topic()).await?;
    Ok(map
        .get(key(source, target_alias).as_bytes())
        .and_then(|v| PauseRecord::decode(v)))
}

/// Stores the pause record of a flow.
pub async fn write(
    target: &Cluster,
    source: &str,
    target_alias: &str,
    record: &PauseRecord,
    replication_factor: i16,
) -> Result<()> {
    store::ensure_compacted_topic(target, target.control_topic(), replication_factor).await?;
    let value = serde_json::to_vec(record).unwrap_or_default();
    store::append(
        target,
        target.control_topic(),
        0,
        &[(
            Bytes::from(key(source, target_alias)),
            Some(Bytes::from(value)),
        )],
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_unknown_values_are_ignored() {
        let r = PauseRecord::now(true, Some("maintenance".into()));
        let bytes = serde_json::to_vec(&r).unwrap();
        assert_eq!(PauseRecord::decode(&bytes), Some(r));
        let plain = br#"{"paused":false,"changed_ms":5}"#;
        assert_eq!(
            PauseRecord::decode(plain),
            Some(PauseRecord {
                paused: false,
                changed_ms: 5,
                reason: None
            })
        );
        assert_eq!(PauseRecord::decode(b"{"), None);
        assert_eq!(key("a", "b"), "pause|a->b");
    }
}
