//! Produce (key 0), versions 3..=12, framed by hand so record bytes are never copied: the
//! request is a list of chunks (small header pieces written into one buffer, and each batch's
//! records region shared with the fetched response) sent with one vectored write.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;

use super::frame::{put_request_header, RequestFrame, RequestMeta};
use super::wire::{
    put_array_len, put_bytes_len, put_empty_tags, put_nullable_string, put_string, Reader,
    WireError,
};
use crate::records::RewrittenBatch;

/// One partition's batch in a Produce request. Apache Kafka takes exactly one batch per
/// partition per request.
#[derive(Debug, Clone)]
pub struct ProducePartition {
    /// Partition index.
    pub partition: i32,
    /// The batch: rewritten header plus the shared records region.
    pub batch: RewrittenBatch,
}

/// One topic's partitions in a Produce request.
#[derive(Debug, Clone)]
pub struct ProduceTopic {
    /// Topic name on the target.
    pub name: String,
    /// Its partitions, each with one batch.
    pub partitions: Vec<ProducePartition>,
}

/// Request-level settings.
#[derive(Debug, Clone, Copy)]
pub struct ProduceSettings<'a> {
    /// Transactional id (None outside transactions).
    pub transactional_id: Option<&'a str>,
    /// -1 for all in-sync replicas (strait always uses -1).
    pub acks: i16,
    /// How long the broker may take to replicate.
    pub timeout_ms: i32,
}

/// Frames a Produce request. Only the size prefix, header, field prefixes and the 61-byte batch
/// headers are written; the records regions go out as they came in.
pub fn encode_request(
    meta: &RequestMeta<'_>,
    settings: &ProduceSettings<'_>,
    topics: &[ProduceTopic],
) -> RequestFrame {
    debug_assert_eq!(meta.api_key, ApiKey::Produce);
    let c = meta.version >= 9;
    let parts: usize = topics.iter().map(|t| t.partitions.len()).sum();
    let mut small = BytesMut::with_capacity(64 + topics.len() * 32 + parts * 80);
    // Where each records region goes, as an offset into `small`.
    let mut cuts: Vec<(usize, Bytes)> = Vec::with_capacity(parts);
    small.put_i32(0);
    put_request_header(&mut small, meta);
    put_nullable_string(&mut small, settings.transactional_id, c);
    small.put_i16(settings.acks);
    small.put_i32(settings.timeout_ms);
    put_array_len(&mut small, topics.len(), c);
    let mut total = 0usize;
    for t in topics {
        put_string(&mut small, &t.name, c);
        put_array_len(&mut small, t.partitions.len(), c);
        for p in &t.partitions {
            small.put_i32(p.partition);
            put_bytes_len(&mut small, p.batch.len(), c);
            small.put_slice(&p.batch.header);
            cuts.push((small.len(), p.batch.records.clone()));
            total += p.batch.records.len();
            if c {
                put_empty_tags(&mut small);
            }
        }
        if c {
            put_empty_tags(&mut small);
        }
    }
    if c {
        put_empty_tags(&mut small);
    }
    let size = (small.len() - 4 + total) as i32;
    small[0..4].copy_from_slice(&size.to_be_bytes());
    let small = small.freeze();
    let mut chunks = Vec::with_capacity(cuts.len() * 2 + 1);
    let mut from = 0;
    for (at, records) in cuts {
        chunks.push(small.slice(from..at));
        if !records.is_empty() {
            chunks.push(records);
        }
        from = at;
    }
    if from < small.len() {
        chunks.push(small.slice(from..));
    }
    RequestFrame { chunks }
}

/// The result for one partition of a Produce request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducedPartition {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Error code.
    pub error_code: i16,
    /// Offset the broker gave the first record of the batch.
    pub base_offset: i64,
    /// Broker time when the log uses LogAppendTime, else -1.
    pub log_append_time_ms: i64,
    /// Log start offset (v5+).
    pub log_start_offset: i64,
    /// Broker's error message (v8+).
    pub error_message: Option<String>,
}

/// Decodes a Produce response body at `version` (3..=12).
pub fn decode_response(mut r: Reader, version: i16) -> Result<Vec<ProducedPartition>, WireError> {
    let c = version >= 9;
    let nt = r.array(c, 5, "responses")?;
    let mut out = Vec::new();
    for _ in 0..nt {
        let topic = r.string(c, "topic")?;
        let np = r.array(c, 22, "partition responses")?;
        out.reserve(np);
        for _ in 0..np {
            let partition = r.i32("partition index")?;
            let error_code = r.i16("error code")?;
            let base_offset = r.i64("base offset")?;
            let log_append_time_ms = r.i64("log append time")?;
            let log_start_offset = if version >= 5 {
                r.i64("log start offset")?
            } else {
                -1
            };
            let mut error_message = None;
            if version >= 8 {
                let ne = r.array(c, 5, "record errors")?;
                for _ in 0..ne {
                    r.i32("batch index")?;
                    r.nullable_string(c, "batch index error message")?;
                    if c {
                        r.skip_tagged_fields()?;
                    }
                }
                error_message = r.nullable_string(c, "error message")?;
            }
            if c {
                r.skip_tagged_fields()?;
            }
            out.push(ProducedPartition {
                topic: topic.clone(),
                partition,
                error_code,
                base_offset,
                log_append_time_ms,
                log_start_offset,
                error_message,
            });
        }
        if c {
            r.skip_tagged_fields()?;
        }
    }
    r.i32("throttle time")?;
    if c {
        r.skip_tagged_fields()?;
    }
    Ok(out)
}
