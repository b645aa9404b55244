//! Small internal topics on a cluster, used as durable key/value stores: progress, runtime
//! allow/deny lists, heartbeats, offset syncs. Written with acks=all, read back whole (they are
//! compacted and small), latest value per key.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::client::{Cluster, FetchRead, EARLIEST, LATEST};
use crate::error::Result;
use crate::records::record::{decode_records, encode_batch, BatchHeaderFields, Record};
use crate::records::{split, Compression, Entry, HeaderRewrite, RecordBatch};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Creates a one-partition compacted topic if it does not exist.
pub async fn ensure_compacted_topic(
    cluster: &Cluster,
    topic: &str,
    replication_factor: i16,
) -> Result<()> {
    if cluster.topic(topic).await?.is_some() {
        return Ok(());
    }
    cluster
        .create_topic(
            topic,
            1,
            replication_factor,
            &[("cleanup.policy".to_string(), "compact".to_string())],
        )
        .await?;
    Ok(())
}

/// Appends `records` to partition `partition` of `topic` in one batch, retrying retriable
/// errors with backoff (for commands; a running flow uses [`append_once`]).
pub async fn append(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    records: &[(Bytes, Option<Bytes>)],
) -> Result<i64> {
    append_with(cluster, topic, partition, records, true).await
}

/// Appends in one attempt: a running flow retries on its next pass instead of stalling its
/// data path in backoff.
pub async fn append_once(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    records: &[(Bytes, Option<Bytes>)],
) -> Result<i64> {
    append_with(cluster, topic, partition, records, false).await
}

async fn append_with(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    records: &[(Bytes, Option<Bytes>)],
    retry: bool,
) -> Result<i64> {
    if records.is_empty() {
        return Ok(-1);
    }
    let now = now_ms();
    let recs: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: i as i32,
            key: Some(k.clone()),
            value: v.clone(),
            headers: Vec::new(),
        })
        .collect();
    let fields = BatchHeaderFields {
        base_timestamp: now,
        ..BatchHeaderFields::default()
    };
    let batch = RecordBatch::new(encode_batch(&fields, Compression::None, &recs)?)?
        .rewrite(&HeaderRewrite::default());
    let attempt = || cluster.produce_batch(topic, partition, &batch);
    if retry {
        cluster.retry("append", attempt).await
    } else {
        attempt().await.map_err(|e| e.cluster(cluster.name()))
    }
}

/// Every record of one partition, in offset order, as (offset, timestamp, key, value).
pub async fn read_all(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
) -> Result<Vec<(i64, i64, Option<Bytes>, Option<Bytes>)>> {
    let (start, entries) = read_entries(cluster, topic, partition).await?;
    let mut out = Vec::new();
    for entry in entries {
        let Entry::V2(b) = entry else { continue };
        if b.is_control() {
            continue;
        }
        for r in decode_records(&b, 64 << 20)? {
            let o = r.offset(b.base_offset());
            if o >= start {
                out.push((o, r.timestamp(b.base_timestamp()), r.key, r.value));
            }
        }
    }
    Ok(out)
}

/// Every entry of one partition from its log start to its end, in offset order, each once
/// (record batches, transaction markers among them, and legacy messages as the broker keeps
/// them), with the log start. A Fetch error names the cluster, topic, partition and offset.
pub async fn read_entries(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
) -> Result<(i64, Vec<Entry>)> {
    let part = cluster.partition(topic, partition);
    let start = part.list_offset(EARLIEST).await?;
    let end = part.list_offset(LATEST).await?;
    let mut out = Vec::new();
    let mut offset = start;
    while offset < end {
        let p = part
            .fetch_once(FetchRead::at(offset).max_bytes(4 << 20))
            .await?;
        let before = offset;
        for entry in split(p.records) {
            let entry = entry?;
            let next = match &entry {
                Entry::V2(b) => b.next_offset(),
                Entry::Legacy(_) => entry.offset_field().saturating_add(1),
            };
            if next > offset {
                offset = next;
                out.push(entry);
            }
        }
        if offset == before {
            break; // nothing more readable now
        }
    }
    Ok((start, out))
}

/// The stored offset maps of every partition a flow from `source_alias` replicated into
/// `cluster`, by (source topic, partition); empty if there is no progress topic.
pub async fn read_progress(
    cluster: &Cluster,
    source_alias: &str,
) -> Result<HashMap<(String, i32), crate::offsets::OffsetMap>> {
    Ok(read_progress_records(cluster, source_alias)
        .await?
        .into_iter()
        .map(|(k, v)| (k, v.map))
        .collect())
}

/// The stored progress records (offset map and writer identity) of every partition a flow
/// from `source_alias` replicated into `cluster`, by (source topic, partition).
pub async fn read_progress_records(
    cluster: &Cluster,
    source_alias: &str,
) -> Result<HashMap<(String, i32), super::progress::Stored>> {
    use super::progress;
    let mut out = HashMap::new();
    for (k, v) in read_latest(cluster, cluster.progress_topic()).await? {
        let Ok(k) = std::str::from_utf8(&k) else {
            continue;
        };
        if let (Some((topic, p)), Some(stored)) =
            (progress::parse_key(k, source_alias), progress::decode(&v))
        {
            out.insert((topic.to_string(), p), stored);
        }
    }
    Ok(out)
}

/// The latest value per key of a one-partition compacted topic (tombstones remove the key).
pub async fn read_latest(cluster: &Cluster, topic: &str) -> Result<HashMap<Bytes, Bytes>> {
    let mut map = HashMap::new();
    if cluster.topic(topic).await?.is_none() {
        return Ok(map);
    }
    for (_, _, k, v) in read_all(cluster, topic, 0).await? {
        let Some(k) = k else { continue };
        match v {
            Some(v) => {
                map.insert(k, v);
            }
            None => {
                map.remove(&k);
            }
        }
    }
    Ok(map)
}
