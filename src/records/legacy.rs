//! Legacy message sets (magic 0 and 1): decoding one entry and converting it to a v2 batch.
//!
//! An entry as cut by [`super::batch::split`] is one message (KIP-32 layout, big-endian):
//!
//! ```text
//! offset       int64
//! messageSize  int32    bytes after this field
//! crc          uint32   CRC-32 (IEEE) of magic..end
//! magic        int8     0 or 1
//! attributes   int8     bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 LogAppendTime (v1)
//! timestamp    int64    magic 1 only
//! key          int32 length (-1 null) + bytes
//! value        int32 length (-1 null) + bytes
//! ```
//!
//! A compressed message (a "wrapper") holds in its value a compressed message set of plain
//! messages. Following Kafka's `AbstractLegacyRecordBatch` deep iterator: under magic 1 inner
//! offsets are relative (absolute = wrapper offset - last inner offset + inner offset, and a
//! wrapper offset of 0, as some librdkafka versions produce, means the inner offsets are used as
//! they are); under magic 0 they are absolute. Inner magic-1 messages of a LogAppendTime wrapper
//! take the wrapper's timestamp (`LegacyRecord.timestamp()`). Wrappers do not nest.

use bytes::Bytes;

use super::batch::{self, Compression};
use super::codec;
use super::record::{self, BatchHeaderFields, Record};
use super::RecordsError;

/// Timestamp of records without one (magic 0), as Kafka's `RecordBatch.NO_TIMESTAMP`.
pub const NO_TIMESTAMP: i64 = -1;

/// Smallest message after `messageSize`: crc, magic, attributes, key and value lengths.
const MESSAGE_OVERHEAD_V0: usize = 14;
/// Same for magic 1, with the timestamp.
const MESSAGE_OVERHEAD_V1: usize = 22;
/// Attribute bits 0-2 of a legacy message.
const CODEC_MASK: u8 = 0x07;
/// Attribute bit 3 of a magic-1 message.
const LOG_APPEND_TIME: u8 = 0x08;

/// One record of a legacy entry, with its absolute offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyRecord {
    /// Absolute offset.
    pub offset: i64,
    /// Timestamp in milliseconds; [`NO_TIMESTAMP`] (-1) for magic 0.
    pub timestamp: i64,
    /// The timestamp is the broker's LogAppendTime (magic 1 only).
    pub log_append_time: bool,
    /// The key, `None` when null.
    pub key: Option<Bytes>,
    /// The value, `None` when null.
    pub value: Option<Bytes>,
}

/// Why one message failed to parse, before it is attributed to an entry.
enum MessageError {
    Truncated { needed: usize, available: usize },
    BadSize(i32),
    Crc { stored: u32, computed: u32 },
    Magic(i8),
    Corrupt(String),
}

impl MessageError {
    /// As the error of the entry at `offset` itself.
    fn outer(self, offset: i64) -> RecordsError {
        match self {
            MessageError::Truncated { needed, available } => {
                RecordsError::Truncated { needed, available }
            }
            MessageError::BadSize(declared) => RecordsError::BadLength {
                offset,
                declared: i64::from(declared),
            },
            MessageError::Crc { stored, computed } => RecordsError::CrcMismatch {
                offset,
                stored,
                computed,
            },
            MessageError::Magic(magic) => RecordsError::UnsupportedMagic { magic, offset },
            MessageError::Corrupt(reason) => RecordsError::Corrupt { offset, reason },
        }
    }

    /// As the error of the message at byte `at` inside the wrapper at `offset`.
    fn inner(self, offset: i64, at: usize) -> RecordsError {
        let what = match self {
            MessageError::Truncated { needed, available } => {
                format!("truncated: needed {needed} bytes, {available} available")
            }
            MessageError::BadSize(declared) => format!("impossible message size {declared}"),
            MessageError::Crc { stored, computed } => {
                format!("stored CRC {stored:#010x}, computed {computed:#010x}")
            }
            MessageError::Magic(magic) => format!("unsupported magic {magic}"),
            MessageError::Corrupt(reason) => reason,
        };
        RecordsError::Corrupt {
            offset,
            reason: format!("inner message at byte {at} of the compressed set: {what}"),
        }
    }
}

/// One parsed message.
struct Message {
    /// The offset field.
    offset: i64,
    magic: i8,
    attributes: u8,
    /// The timestamp field, [`NO_TIMESTAMP`] for magic 0.
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// Parses the message (with its offset and size) at `pos` of `buf`, verifying its CRC; returns
/// it and the position after it.
fn parse_message(buf: &Bytes, pos: usize) -> Result<(Message, usize), MessageError> {
    let available = buf.len() - pos;
    if available < batch::LOG_OVERHEAD {
        return Err(MessageError::Truncated {
            needed: batch::LOG_OVERHEAD,
            available,
        });
    }
    let offset = be_i64(buf, pos);
    let declared = be_i32(buf, pos + 8);
    let size = match usize::try_from(declared) {
        Ok(s) if s >= MESSAGE_OVERHEAD_V0 => s,
        _ => return Err(MessageError::BadSize(declared)),
    };
    if size > available - batch::LOG_OVERHEAD {
        return Err(MessageError::Truncated {
            needed: batch::LOG_OVERHEAD + size,
            available,
        });
    }
    let start = pos + batch::LOG_OVERHEAD;
    let msg = buf.slice(start..start + size);
    let stored = u32::from_be_bytes([msg[0], msg[1], msg[2], msg[3]]);
    let computed = crc32(&msg[4..]);
    if stored != computed {
        return Err(MessageError::Crc { stored, computed });
    }
    let magic = msg[4] as i8;
    let attributes = msg[5];
    let (timestamp, mut p) = match magic {
        0 => (NO_TIMESTAMP, 6),
        1 if size >= MESSAGE_OVERHEAD_V1 => (be_i64(&msg, 6), 14),
        1 => return Err(MessageError::BadSize(declared)),
        other => return Err(MessageError::Magic(other)),
    };
    let key = sized_bytes(&msg, &mut p).map_err(|e| MessageError::Corrupt(format!("key: {e}")))?;
    let value =
        sized_bytes(&msg, &mut p).map_err(|e| MessageError::Corrupt(format!("value: {e}")))?;
    if p != size {
        return Err(MessageError::Corrupt(format!(
            "message size {size} but its fields use {p}"
        )));
    }
    Ok((
        Message {
            offset,
            magic,
            attributes,
            timestamp,
            key,
            value,
        },
        start + size,
    ))
}

/// An `int32` length (-1 null) and that many bytes at `*p` of `msg`.
fn sized_bytes(msg: &Bytes, p: &mut usize) -> Result<Option<Bytes>, String> {
    if msg.len() - *p < 4 {
        return Err("length truncated".into());
    }
    let len = be_i32(msg, *p);
    *p += 4;
    if len == -1 {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| format!("invalid length {len}"))?;
    if len > msg.len() - *p {
        return Err(format!(
            "length {len} exceeds the {} bytes left",
            msg.len() - *p
        ));
    }
    let out = msg.slice(*p..*p + len);
    *p += len;
    Ok(Some(out))
}

/// The codec of a legacy entry's outer message, without verifying anything else: lets a caller
/// keep the source's codec when converting. `None` when too short or the bits name no codec.
pub fn legacy_compression(entry: &[u8]) -> Option<Compression> {
    let attributes = *entry.get(batch::LOG_OVERHEAD + 5)?;
    Compression::from_attributes(i16::from(attributes & CODEC_MASK))
}

/// Decodes one legacy entry (a single message, as cut by [`super::batch::split`], possibly a
/// compressed wrapper) into its records with absolute offsets. Verifies the CRC-32 of the
/// message and of every inner message; decompression output is bounded by `limit` bytes.
///
/// Errors (never panics) on: a bad CRC, magic other than 0/1, sizes that do not add up, bytes
/// after the message, a wrapper that is zstd-compressed, has a null value, holds no messages,
/// holds compressed messages, ends in a partial message, or (magic 1) has an offset below its
/// last inner offset.
pub fn decode_legacy(entry: &Bytes, limit: usize) -> Result<Vec<LegacyRecord>, RecordsError> {
    let entry_offset = if entry.len() >= 8 {
        be_i64(entry, 0)
    } else {
        -1
    };
    let (outer, end) = parse_message(entry, 0).map_err(|e| e.outer(entry_offset))?;
    let offset = outer.offset;
    let corrupt = |reason: String| RecordsError::Corrupt { offset, reason };
    if end != entry.len() {
        return Err(corrupt(format!(
            "{} bytes after the message",
            entry.len() - end
        )));
    }
    let codec = match outer.attributes & CODEC_MASK {
        0 => {
            let log_append_time = outer.magic == 1 && outer.attributes & LOG_APPEND_TIME != 0;
            return Ok(vec![LegacyRecord {
                offset,
                timestamp: outer.timestamp,
                log_append_time,
                key: outer.key,
                value: outer.value,
            }]);
        }
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        4 => {
            return Err(corrupt(
                "zstd is not allowed in magic 0/1 messages".to_string(),
            ))
        }
        bits => {
            return Err(RecordsError::UnknownCodec {
                offset,
                bits: i16::from(bits),
            })
        }
    };
    let Some(compressed) = outer.value else {
        return Err(corrupt("compressed message with a null value".into()));
    };
    let inner = codec::decompress_legacy(codec, outer.magic, &compressed, limit).map_err(|e| {
        RecordsError::Codec {
            codec: codec.name(),
            offset,
            reason: e.to_string(),
        }
    })?;
    let inner = Bytes::from(inner);

    let mut messages = Vec::new();
    let mut pos = 0;
    while pos < inner.len() {
        let (m, next) = parse_message(&inner, pos).map_err(|e| e.inner(offset, pos))?;
        if m.attributes & CODEC_MASK != 0 {
            return Err(MessageError::Corrupt(
                "compressed message inside a compressed message".into(),
            )
            .inner(offset, pos));
        }
        messages.push(m);
        pos = next;
    }
    let Some(last) = messages.last() else {
        return Err(corrupt("compressed message set holds no messages".into()));
    };

    // Inner offsets of magic 1 are relative to the wrapper's (its offset is the last one's).
    let base = if outer.magic == 1 {
        if offset == 0 {
            0
        } else if offset < last.offset {
            return Err(corrupt(format!(
                "wrapper offset {offset} is below its last inner offset {}",
                last.offset
            )));
        } else {
            offset - last.offset
        }
    } else {
        0
    };
    let wrapper_log_append_time = outer.magic == 1 && outer.attributes & LOG_APPEND_TIME != 0;
    messages
        .into_iter()
        .map(|m| {
            let abs = base
                .checked_add(m.offset)
                .ok_or_else(|| corrupt(format!("inner offset {} overflows", m.offset)))?;
            let (timestamp, log_append_time) = match m.magic {
                0 => (NO_TIMESTAMP, false),
                _ if wrapper_log_append_time => (outer.timestamp, true),
                _ => (m.timestamp, false),
            };
            Ok(LegacyRecord {
                offset: abs,
                timestamp,
                log_append_time,
                key: m.key,
                value: m.value,
            })
        })
        .collect()
}

/// Converts one legacy entry into ONE v2 batch compressed with `compression`: base offset is
/// the first record's offset and offset deltas keep every record's offset (gaps possible, from
/// compaction); timestamps are kept (-1 for magic 0, as Kafka's up-conversion keeps
/// `NO_TIMESTAMP`), `baseTimestamp` is the first record's and `maxTimestamp` the largest; the
/// LogAppendTime flag is carried over; leader epoch and producer fields are -1. Records have no
/// headers.
///
/// The batch's offsets are contiguous only when the source's were; renumber (see
/// [`record::renumber_contiguous`]) before producing one with gaps to Apache Kafka.
pub fn legacy_to_v2(
    entry: &Bytes,
    compression: Compression,
    limit: usize,
) -> Result<Bytes, RecordsError> {
    let records = decode_legacy(entry, limit)?;
    let Some(first) = records.first() else {
        // decode_legacy never returns an empty list; be safe anyway.
        return Err(RecordsError::Corrupt {
            offset: -1,
            reason: "legacy entry without records".into(),
        });
    };
    let (base_offset, base_timestamp) = (first.offset, first.timestamp);
    let corrupt = |reason: String| RecordsError::Corrupt {
        offset: base_offset,
        reason,
    };
    let log_append_time = records.iter().any(|r| r.log_append_time);
    let v2: Vec<Record> = records
        .into_iter()
        .map(|r| {
            let offset_delta = r
                .offset
                .checked_sub(base_offset)
                .and_then(|d| i32::try_from(d).ok())
                .ok_or_else(|| {
                    corrupt(format!(
                        "offset {} is too far from base offset {base_offset}",
                        r.offset
                    ))
                })?;
            let timestamp_delta = r
                .timestamp
                .checked_sub(base_timestamp)
                .ok_or_else(|| corrupt(format!("timestamp {} overflows the delta", r.timestamp)))?;
            Ok(Record {
                attributes: 0,
                timestamp_delta,
                offset_delta,
                key: r.key,
                value: r.value,
                headers: Vec::new(),
            })
        })
        .collect::<Result<_, RecordsError>>()?;
    let fields = BatchHeaderFields {
        base_offset,
        partition_leader_epoch: -1,
        attributes: if log_append_time {
            batch::ATTR_LOG_APPEND_TIME
        } else {
            0
        },
        base_timestamp,
        max_timestamp: None,
        producer_id: batch::NO_PRODUCER_ID,
        producer_epoch: batch::NO_PRODUCER_EPOCH,
        base_sequence: batch::NO_SEQUENCE,
    };
    record::encode_batch(&fields, compression, &v2)
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) lookup table.
const CRC32_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// CRC-32 (IEEE), the checksum of legacy messages (Kafka's `Crc32`).
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = CRC32_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::RecordBatch;
    use std::io::Write;

    /// A complete legacy message (offset, size, crc, ...), built by hand.
    fn message(
        offset: i64,
        magic: i8,
        attributes: u8,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut body = vec![magic as u8, attributes];
        if magic == 1 {
            body.extend_from_slice(&timestamp.to_be_bytes());
        }
        for field in [key, value] {
            match field {
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    body.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    body.extend_from_slice(b);
                }
            }
        }
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&body);
        let mut out = offset.to_be_bytes().to_vec();
        out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        out.extend_from_slice(&crc.to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A wrapper holding `inner` (concatenated messages) compressed with `codec` bits.
    fn wrapper(offset: i64, magic: i8, attrs: u8, ts: i64, compressed: &[u8]) -> Bytes {
        Bytes::from(message(offset, magic, attrs, ts, None, Some(compressed)))
    }

    fn v1_inner(rel: &[i64]) -> Vec<u8> {
        rel.iter()
            .enumerate()
            .flat_map(|(i, &o)| {
                message(
                    o,
                    1,
                    0,
                    1_700_000_000_000 + i as i64 * 1000,
                    Some(format!("k{i}").as_bytes()),
                    Some(format!("value {i}").as_bytes()),
                )
            })
            .collect()
    }

    #[test]
    fn crc32_matches_reference() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 3) as u8).collect();
        let mut h = flate2::Crc::new();
        h.update(&data);
        assert_eq!(crc32(&data), h.sum());
    }

    #[test]
    fn v0_uncompressed() {
        let e = Bytes::from(message(42, 0, 0, 0, Some(b"key"), Some(b"value")));
        let recs = decode_legacy(&e, 1 << 20).unwrap();
        assert_eq!(
            recs,
            vec![LegacyRecord {
                offset: 42,
                timestamp: -1,
                log_append_time: false,
                key: Some(Bytes::from_static(b"key")),
                value: Some(Bytes::from_static(b"value")),
            }]
        );
        let e = Bytes::from(message(7, 0, 0, 0, None, None));
        let recs = decode_legacy(&e, 1 << 20).unwrap();
        assert_eq!((recs[0].key.clone(), recs[0].value.clone()), (None, None));
        let v2 = RecordBatch::new(legacy_to_v2(&e, Compression::None, 1 << 20).unwrap()).unwrap();
        v2.verify_crc().unwrap();
        assert_eq!(v2.base_offset(), 7);
        assert_eq!((v2.base_timestamp(), v2.max_timestamp()), (-1, -1));
        assert_eq!(v2.partition_leader_epoch(), -1);
        assert_eq!(v2.producer_id(), -1);
        assert_eq!(v2.producer_epoch(), -1);
        assert_eq!(v2.base_sequence(), -1);
        let r = record::decode_records(&v2, 1 << 20).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].key.clone(), r[0].value.clone()), (None, None));
        assert_eq!(r[0].timestamp_delta, 0);
    }

    #[test]
    fn v1_uncompressed_with_log_append_time() {
        let e = Bytes::from(message(9, 1, LOG_APPEND_TIME, 1234, None, Some(b"v")));
        let recs = decode_legacy(&e, 1 << 20).unwrap();
        assert_eq!(recs[0].timestamp, 1234);
        assert!(recs[0].log_append_time);
        let v2 = RecordBatch::new(legacy_to_v2(&e, Compression::Lz4, 1 << 20).unwrap()).unwrap();
        assert!(v2.is_log_append_time());
        assert_eq!(v2.compression(), Some(Compression::Lz4));
        assert_eq!((v2.base_timestamp(), v2.max_timestamp()), (1234, 1234));
    }

    #[test]
    fn v1_gzip_wrapper_relative_offsets() {
        // Inner relative offsets 0, 1, 2; the wrapper carries the last absolute offset.
        let e = wrapper(102, 1, 1, 1_700_000_002_000, &gzip(&v1_inner(&[0, 1, 2])));
        let recs = decode_legacy(&e, 1 << 20).unwrap();
        assert_eq!(
            recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
            vec![100, 101, 102]
        );
        assert_eq!(
            recs.iter().map(|r| r.timestamp).collect::<Vec<_>>(),
            vec![1_700_000_000_000, 1_700_000_001_000, 1_700_000_002_000]
        );
        assert_eq!(recs[1].key.as_deref(), Some(&b"k1"[..]));
        assert_eq!(recs[2].value.as_deref(), Some(&b"value 2"[..]));
        assert!(recs.iter().all(|r| !r.log_append_time));

        let raw = legacy_to_v2(&e, Compression::Gzip, 1 << 20).unwrap();
        let v2 = RecordBatch::new(raw).unwrap();
        v2.verify_crc().unwrap();
        assert_eq!(v2.base_offset(), 100);
        assert_eq!(v2.last_offset(), 102);
        assert_eq!(v2.records_count(), 3);
        assert_eq!(v2.base_timestamp(), 1_700_000_000_000);
        assert_eq!(v2.max_timestamp(), 1_700_000_002_000);
        assert!(!v2.is_log_append_time());
        let r = record::decode_records(&v2, 1 << 20).unwrap();
        assert_eq!(r[2].offset(v2.base_offset()), 102);
        assert_eq!(r[1].timestamp(v2.base_timestamp()), 1_700_000_001_000);
        assert_eq!(r[1].key.as_deref(), Some(&b"k1"[..]));
    }

    #[test]
    fn v1_log_append_time_wrapper_overrides_inner_timestamps() {
        let e = wrapper(2, 1, 1 | LOG_APPEND_TIME, 999, &gzip(&v1_inner(&[0, 1, 2])));
        let recs = decode_legacy(&e, 1 << 20).unwrap();
        assert!(recs.iter().all(|r| r.timestamp == 999 && r.log_append_time));
        let v2 = RecordBatch::new(legacy_to_v2(&e, Compression::None, 1 << 20).unwrap()).unwrap();
        assert!(v2.is_log_append_time());
        assert_eq!(v2.max_timestamp(), 999);
    }

    #[test]
    fn v1_wrapper_offset_zero_and_bad_wrapper_offset() {
        // librdkafka quirk: wrapper offset 0 keeps the inner offsets.
        let e = wrapper(0, 1, 1, 5, &gzip(&v1_inner(&[0, 1])));
        let offsets: Vec<i64> = decode_legacy(&e, 1 << 20)
            .unwrap()
            .iter()
            .map(|r| r.offset)
            .collect();
        assert_eq!(offsets, vec![0, 1]);
        // A non-zero wrapper offset below the last inner offset is invalid.
        let e = wrapper(1, 1, 1, 5, &gzip(&v1_inner(&[0, 1, 2])));
        assert!(matches!(
            decode_legacy(&e, 1 << 20),
            Err(RecordsError::Corrupt { .. })
        ));
    }

    #[test]
    fn v0_gzip_wrapper_absolute_offsets_with_gaps() {
        let inner: Vec<u8> = [100i64, 102, 105]
            .iter()
            .flat_map(|&o| message(o, 0, 0, 0, None, Some(format!("m{o}").as_bytes())))
            .collect();
        let e = wrapper(105, 0, 1, 0, &gzip(&inner));
        let recs = decode_legacy(&e, 1 << 20).unwrap();
        assert_eq!(
            recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
            vec![100, 102, 105]
        );
        assert!(recs.iter().all(|r| r.timestamp == -1));
        let v2 = RecordBatch::new(legacy_to_v2(&e, Compression::Snappy, 1 << 20).unwrap()).unwrap();
        assert_eq!(v2.base_offset(), 100);
        assert_eq!(v2.last_offset_delta(), 5);
        assert_eq!(v2.records_count(), 3);
        assert!(!v2.has_contiguous_offsets());
        let r = record::decode_records(&v2, 1 << 20).unwrap();
        assert_eq!(
            r.iter().map(|r| r.offset_delta).collect::<Vec<_>>(),
            vec![0, 2, 5]
        );
        assert_eq!(r[1].value.as_deref(), Some(&b"m102"[..]));
    }

    #[test]
    fn v0_snappy_and_broken_lz4_wrappers() {
        let inner: Vec<u8> = (0..3i64)
            .flat_map(|o| message(10 + o, 0, 0, 0, Some(b"k"), Some(b"v")))
            .collect();
        let snappy = codec::compress(Compression::Snappy, &inner).unwrap();
        let recs = decode_legacy(&wrapper(12, 0, 2, 0, &snappy), 1 << 20).unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2].offset, 12);

        // Magic-0 LZ4 as Kafka 0.8/0.9 wrote it: header checksum over the magic number too.
        let mut lz4 = codec::compress(Compression::Lz4, &inner).unwrap();
        lz4[6] = lz4[6].wrapping_add(1);
        assert!(codec::decompress(Compression::Lz4, &lz4, 1 << 20).is_err());
        let recs = decode_legacy(&wrapper(12, 0, 3, 0, &lz4), 1 << 20).unwrap();
        assert_eq!(recs.len(), 3);
        // Under magic 1 the same frame is refused.
        let inner_v1 = v1_inner(&[0, 1]);
        let mut lz4 = codec::compress(Compression::Lz4, &inner_v1).unwrap();
        lz4[6] = lz4[6].wrapping_add(1);
        assert!(matches!(
            decode_legacy(&wrapper(1, 1, 3, 0, &lz4), 1 << 20),
            Err(RecordsError::Codec { codec: "lz4", .. })
        ));
    }

    #[test]
    fn bad_crc_is_an_error() {
        let mut raw = message(5, 1, 0, 10, Some(b"k"), Some(b"v"));
        let n = raw.len();
        raw[n - 1] ^= 1;
        assert!(matches!(
            decode_legacy(&Bytes::from(raw), 1 << 20),
            Err(RecordsError::CrcMismatch { offset: 5, .. })
        ));
        // A bad CRC on an inner message.
        let mut inner = v1_inner(&[0, 1]);
        let n = inner.len();
        inner[n - 1] ^= 1;
        let e = wrapper(1, 1, 1, 0, &gzip(&inner));
        match decode_legacy(&e, 1 << 20) {
            Err(RecordsError::Corrupt { reason, .. }) => {
                assert!(reason.contains("CRC"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_entries_are_errors() {
        let check = |raw: Vec<u8>| {
            assert!(decode_legacy(&Bytes::from(raw), 1 << 20).is_err());
        };
        // Nested compression.
        let nested = message(0, 1, 1, 0, None, Some(&gzip(&v1_inner(&[0]))));
        check(wrapper(0, 1, 1, 0, &gzip(&nested)).to_vec());
        // Empty compressed set, null wrapper value, zstd, unknown codec.
        check(wrapper(0, 1, 1, 0, &gzip(b"")).to_vec());
        check(message(0, 1, 1, 0, None, None));
        check(
            wrapper(
                0,
                1,
                4,
                0,
                &codec::compress(Compression::Zstd, &v1_inner(&[0])).unwrap(),
            )
            .to_vec(),
        );
        check(wrapper(0, 1, 6, 0, b"xx").to_vec());
        // Partial inner message at the end.
        let mut inner = v1_inner(&[0, 1]);
        inner.truncate(inner.len() - 3);
        check(wrapper(1, 1, 1, 0, &gzip(&inner)).to_vec());
        // Magic 2 / 3, short entry, trailing bytes, key length beyond the message.
        let mut m = message(0, 1, 0, 0, None, None);
        m[16] = 3;
        check(m);
        check(vec![0; 11]);
        let mut m = message(0, 0, 0, 0, None, None);
        m.push(0);
        check(m);
        // Key length -2 (fix the CRC so the length check is what fails).
        let mut m = message(0, 0, 0, 0, None, None);
        m[18..22].copy_from_slice(&(-2i32).to_be_bytes());
        let crc = crc32(&m[16..]);
        m[12..16].copy_from_slice(&crc.to_be_bytes());
        check(m);
        // Decompression limit.
        let e = wrapper(2, 1, 1, 0, &gzip(&v1_inner(&[0, 1, 2])));
        assert!(matches!(
            decode_legacy(&e, 10),
            Err(RecordsError::Codec { codec: "gzip", .. })
        ));
    }

    #[test]
    fn codec_of_an_entry() {
        let e = wrapper(2, 1, 2, 0, b"");
        assert_eq!(legacy_compression(&e), Some(Compression::Snappy));
        assert_eq!(legacy_compression(&[0u8; 5]), None);
    }
}
