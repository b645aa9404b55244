//! Saving the records truncate-and-restore cuts: one JSON line per record, in offset order, in
//! one file per partition, so an operator can read them or produce them again (`kcat -P -K`,
//! a small script). Keys, values and header values are base64 (records are bytes); transaction
//! markers are left out; a legacy (magic 0/1) entry is kept whole, base64 under `legacy`.

use std::io::Write;
use std::path::Path;

use base64::Engine;
use serde::Serialize;

use crate::client::{Cluster, FetchRead};
use crate::error::{Error, Result};
use crate::forward::plan::MAX_DECODED_BATCH;
use crate::records::batch::{split, Entry};
use crate::records::record::decode_records;

/// One saved record.
#[derive(Serialize)]
struct SavedRecord<'a> {
    partition: i32,
    offset: i64,
    timestamp: i64,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(&'a str, Option<String>)>,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Writes every record of `topic`/`partition` at offsets `from..to` (as the log holds them,
/// aborted transactions' records too) into `file`, one JSON line each. Returns how many records
/// it wrote. A Fetch error names the cluster, topic, partition and offset.
pub async fn save_partition(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    (from, to): (i64, i64),
    file: &Path,
) -> Result<i64> {
    let io = |e: std::io::Error| Error::invalid(format!("cannot write {}: {e}", file.display()));
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).map_err(io)?);
    let part = cluster.partition(topic, partition);
    let mut offset = from;
    let mut saved = 0;
    while offset < to {
        let fetched = part
            .fetch_once(FetchRead::at(offset).max_bytes(4 << 20))
            .await?;
        let before = offset;
        for entry in split(fetched.records) {
            let at = |e: Error| {
                e.cluster(cluster.name())
                    .partition(topic, partition)
                    .offset(offset)
            };
            let entry = entry.map_err(|e| at(e.into()))?;
            let lines = entry_lines(partition, &entry, offset, to).map_err(at)?;
            offset = match &entry {
                Entry::V2(b) => b.next_offset(),
                Entry::Legacy(_) => entry.offset_field().saturating_add(1),
            }
            .max(offset);
            for line in lines {
                writeln!(out, "{line}").map_err(io)?;
                saved += 1;
            }
            if offset >= to {
                break;
            }
        }
        if offset == before {
            return Err(Error::invalid(format!(
                "cluster {}, topic {topic}, partition {partition}, offset {offset}: the log ends before offset {to}, where it ended when the tail was measured",
                cluster.name()
            )));
        }
    }
    out.flush().map_err(io)?;
    Ok(saved)
}

/// The JSON lines of the records of `entry` at offsets `from..to`.
fn entry_lines(partition: i32, entry: &Entry, from: i64, to: i64) -> Result<Vec<String>> {
    match entry {
        Entry::V2(b) if b.is_control() => Ok(Vec::new()),
        Entry::V2(b) => {
            let mut lines = Vec::new();
            for r in decode_records(b, MAX_DECODED_BATCH)? {
                let offset = r.offset(b.base_offset());
                if offset < from || offset >= to {
                    continue;
                }
                let headers: Vec<(String, Option<String>)> = r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            String::from_utf8_lossy(&h.key).into_owned(),
                            h.value.as_deref().map(b64),
                        )
                    })
                    .collect();
                let rec = SavedRecord {
                    partition,
                    offset,
                    timestamp: r.timestamp(b.base_timestamp()),
                    key: r.key.as_deref().map(b64),
                    value: r.value.as_deref().map(b64),
                    headers: headers
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.clone()))
                        .collect(),
                };
                lines.push(serde_json::to_string(&rec).map_err(|e| Error::invalid(e.to_string()))?);
            }
            Ok(lines)
        }
        Entry::Legacy(bytes) => {
            let offset = entry.offset_field();
            if offset < from || offset >= to {
                return Ok(Vec::new());
            }
            let line = serde_json::json!({
                "partition": partition,
                "offset": offset,
                "legacy": b64(bytes),
            });
            Ok(vec![line.to_string()])
        }
    }
}
