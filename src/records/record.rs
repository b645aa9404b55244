//! The records inside a magic-2 batch: decoding them (zero-copy where the codec allows) and
//! encoding complete batches.
//!
//! Each record is (varints zigzag-encoded, as in Kafka's `DefaultRecord`):
//!
//! ```text
//! length          varint   bytes after this field
//! attributes      int8     unused, 0
//! timestampDelta  varlong  relative to the batch's baseTimestamp
//! offsetDelta     varint   relative to the batch's baseOffset
//! keyLength       varint   -1 for a null key
//! key             bytes
//! valueLength     varint   -1 for a null value
//! value           bytes
//! headersCount    varint
//!   headerKeyLength   varint (never null)
//!   headerKey         bytes (UTF-8 by the spec, kept raw here)
//!   headerValueLength varint  -1 for a null value
//!   headerValue       bytes
//! ```
//!
//! Decoding is stricter than Kafka's Java reader where Kafka's leniency would only hide a
//! corrupt batch: lengths below -1, varints longer than their type, records whose declared
//! length differs from what their fields use, and bytes left after `recordsCount` records are
//! all errors.

use bytes::Bytes;

use super::batch::{self, Compression, RecordBatch};
use super::codec;
use super::RecordsError;

/// One record of a v2 batch, as stored: offsets and timestamps are deltas against the batch
/// header. For a batch with LogAppendTime the record's timestamp is the batch's
/// `maxTimestamp`, whatever the delta says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Record attributes (unused by Kafka, normally 0).
    pub attributes: i8,
    /// Timestamp minus the batch's `baseTimestamp`.
    pub timestamp_delta: i64,
    /// Offset minus the batch's `baseOffset`.
    pub offset_delta: i32,
    /// The key, `None` when null.
    pub key: Option<Bytes>,
    /// The value, `None` when null (a tombstone on compacted topics).
    pub value: Option<Bytes>,
    /// Headers in wire order.
    pub headers: Vec<RecordHeader>,
}

/// One record header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    /// The header key: UTF-8 per the protocol, kept as raw bytes so nothing is lost.
    pub key: Bytes,
    /// The header value, `None` when null.
    pub value: Option<Bytes>,
}

impl Record {
    /// The record's absolute offset in a batch with `base_offset`.
    pub fn offset(&self, base_offset: i64) -> i64 {
        base_offset.wrapping_add(i64::from(self.offset_delta))
    }

    /// The record's create time in a batch with `base_timestamp` (ignores LogAppendTime).
    pub fn timestamp(&self, base_timestamp: i64) -> i64 {
        base_timestamp.wrapping_add(self.timestamp_delta)
    }
}

/// Smallest encoded record: length, attributes, timestampDelta, offsetDelta, keyLength,
/// valueLength and headersCount, one byte each.
const MIN_RECORD_LEN: usize = 7;

/// Decodes every record of `batch`, decompressing the records region first (output bounded by
/// `limit` bytes; the limit does not apply to uncompressed batches, already in memory).
///
/// Keys, values and headers are slices of the batch's buffer when it is uncompressed, and of
/// one decompressed buffer otherwise. Errors, never panics, on any malformed input; see
/// [`RecordIter`] for what is checked. The CRC is not checked here: see
/// [`RecordBatch::verify_crc`].
pub fn decode_records(batch: &RecordBatch, limit: usize) -> Result<Vec<Record>, RecordsError> {
    records(batch, limit)?.collect()
}

/// Prepares an iterator over the records of `batch` (decompressing the region up front, bounded
/// by `limit`); see [`decode_records`].
pub fn records(batch: &RecordBatch, limit: usize) -> Result<RecordIter, RecordsError> {
    let offset = batch.base_offset();
    let codec = batch
        .compression()
        .ok_or_else(|| RecordsError::UnknownCodec {
            offset,
            bits: batch.attributes() & batch::ATTR_CODEC_MASK,
        })?;
    let count = batch.records_count();
    if count < 0 {
        return Err(RecordsError::Corrupt {
            offset,
            reason: format!("negative records count {count}"),
        });
    }
    let region = batch.records_region();
    let data = if codec == Compression::None || (count == 0 && region.is_empty()) {
        // An empty batch (as compaction leaves them) has no compressed payload at all.
        region
    } else {
        let out = codec::decompress(codec, &region, limit).map_err(|e| RecordsError::Codec {
            codec: codec.name(),
            offset,
            reason: e.to_string(),
        })?;
        Bytes::from(out)
    };
    Ok(RecordIter::new(data, count as usize, offset))
}

/// Iterator over the records of an (uncompressed or already decompressed) records region.
///
/// Yields exactly `count` records, then, if bytes remain, one error. After an error it yields
/// nothing more. Checks: every length fits in the bytes left; lengths are -1 (null) or
/// non-negative, and header keys are never null; each record's declared length equals the bytes
/// its fields use; varints have at most 5 bytes (varlongs 10) and do not overflow.
#[derive(Debug, Clone)]
pub struct RecordIter {
    data: Bytes,
    pos: usize,
    remaining: usize,
    index: usize,
    offset: i64,
    done: bool,
}

impl RecordIter {
    /// Iterates over `count` records in `data`; `base_offset` only labels errors.
    pub fn new(data: Bytes, count: usize, base_offset: i64) -> RecordIter {
        RecordIter {
            data,
            pos: 0,
            remaining: count,
            index: 0,
            offset: base_offset,
            done: false,
        }
    }

    fn corrupt(&self, reason: String) -> RecordsError {
        RecordsError::Corrupt {
            offset: self.offset,
            reason,
        }
    }

    fn next_record(&mut self) -> Result<Record, RecordsError> {
        let mut outer = Cursor::new(&self.data, self.pos);
        let len = outer
            .varint()
            .map_err(|e| self.corrupt(format!("record length: {e}")))?;
        let len = usize::try_from(len)
            .map_err(|_| self.corrupt(format!("negative record length {len}")))?;
        let body_start = outer.pos;
        if len > self.data.len() - body_start {
            return Err(self.corrupt(format!(
                "record length {len} exceeds the {} bytes left",
                self.data.len() - body_start
            )));
        }
        let body = self.data.slice(body_start..body_start + len);
        let record = parse_body(&body).map_err(|e| {
            self.corrupt(format!(
                "record {} (at byte {} of the records): {e}",
                self.index, self.pos
            ))
        })?;
        self.pos = body_start + len;
        Ok(record)
    }
}

impl Iterator for RecordIter {
    type Item = Result<Record, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.remaining == 0 {
            self.done = true;
            let left = self.data.len() - self.pos;
            if left == 0 {
                return None;
            }
            return Some(Err(self.corrupt(format!(
                "{left} bytes left after the declared records count"
            ))));
        }
        if self.pos == self.data.len() {
            self.done = true;
            return Some(Err(self.corrupt(format!(
                "records end {} records short of the declared count",
                self.remaining
            ))));
        }
        match self.next_record() {
            Ok(r) => {
                self.remaining -= 1;
                self.index += 1;
                Some(Ok(r))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        // At most `remaining` records, plus a possible trailing error; no more than the bytes
        // could hold.
        let cap = self
            .remaining
            .min((self.data.len() - self.pos) / MIN_RECORD_LEN + 1);
        (0, Some(cap + 1))
    }
}

/// Parses a record body (everything after the length varint), which must be used exactly.
fn parse_body(body: &Bytes) -> Result<Record, String> {
    let mut c = Cursor::new(body, 0);
    let attributes = c.byte().map_err(|e| format!("attributes: {e}"))? as i8;
    let timestamp_delta = c.varlong().map_err(|e| format!("timestamp delta: {e}"))?;
    let offset_delta = c.varint().map_err(|e| format!("offset delta: {e}"))?;
    let key = c.nullable_bytes().map_err(|e| format!("key: {e}"))?;
    let value = c.nullable_bytes().map_err(|e| format!("value: {e}"))?;
    let count = c.varint().map_err(|e| format!("headers count: {e}"))?;
    let count = usize::try_from(count).map_err(|_| format!("negative headers count {count}"))?;
    // Every header takes at least two bytes (two length varints).
    if count > c.left() / 2 {
        return Err(format!(
            "headers count {count} does not fit in the {} bytes left",
            c.left()
        ));
    }
    let mut headers = Vec::with_capacity(count);
    for i in 0..count {
        let key = match c
            .nullable_bytes()
            .map_err(|e| format!("header {i} key: {e}"))?
        {
            Some(k) => k,
            None => return Err(format!("header {i} has a null key")),
        };
        let value = c
            .nullable_bytes()
            .map_err(|e| format!("header {i} value: {e}"))?;
        headers.push(RecordHeader { key, value });
    }
    if c.left() != 0 {
        return Err(format!(
            "record length {} but its fields use {}",
            body.len(),
            c.pos
        ));
    }
    Ok(Record {
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        value,
        headers,
    })
}

/// A bounds-checked reader over a `Bytes` buffer.
struct Cursor<'a> {
    buf: &'a Bytes,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a Bytes, pos: usize) -> Cursor<'a> {
        Cursor { buf, pos }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| "truncated".to_string())?;
        self.pos += 1;
        Ok(b)
    }

    /// An unsigned LEB128 value of at most `max_bits` bits.
    fn unsigned(&mut self, max_bits: u32) -> Result<u64, String> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift + 7 > max_bits && (bits >> (max_bits - shift)) != 0 {
                return Err(format!("varint overflows {max_bits} bits"));
            }
            value |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
            if shift >= max_bits {
                return Err(format!("varint longer than {max_bits} bits"));
            }
        }
    }

    /// A zigzag varint (`int32`).
    fn varint(&mut self) -> Result<i32, String> {
        let u = self.unsigned(32)? as u32;
        Ok((u >> 1) as i32 ^ -((u & 1) as i32))
    }

    /// A zigzag varlong (`int64`).
    fn varlong(&mut self) -> Result<i64, String> {
        let u = self.unsigned(64)?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    /// Varint length then that many bytes; -1 is null.
    fn nullable_bytes(&mut self) -> Result<Option<Bytes>, String> {
        let len = self.varint()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| format!("invalid length {len}"))?;
        if len > self.left() {
            return Err(format!(
                "length {len} exceeds the {} bytes left",
                self.left()
            ));
        }
        let out = self.buf.slice(self.pos..self.pos + len);
        self.pos += len;
        Ok(Some(out))
    }
}

/// Header fields for [`encode_batch`]. `batchLength`, `crc`, `lastOffsetDelta` and
/// `recordsCount` are computed; the codec bits of `attributes` come from the `compression`
/// argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeaderFields {
    /// `baseOffset` (producers send 0; the broker assigns offsets).
    pub base_offset: i64,
    /// `partitionLeaderEpoch` (producers send -1).
    pub partition_leader_epoch: i32,
    /// `attributes`: timestamp type, transactional, control bits. Bits 0-2 are overwritten.
    pub attributes: i16,
    /// `baseTimestamp`: record timestamps are stored relative to it.
    pub base_timestamp: i64,
    /// `maxTimestamp`; `None` computes the largest record timestamp. Pass the append time for
    /// a LogAppendTime batch.
    pub max_timestamp: Option<i64>,
    /// `producerId`, -1 without idempotence.
    pub producer_id: i64,
    /// `producerEpoch`, -1 without idempotence.
    pub producer_epoch: i16,
    /// `baseSequence`, -1 without idempotence.
    pub base_sequence: i32,
}

impl Default for BatchHeaderFields {
    /// Offset 0, no leader epoch, CreateTime, timestamps 0 (max computed), no producer id,
    /// epoch or sequence.
    fn default() -> Self {
        BatchHeaderFields {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes: 0,
            base_timestamp: 0,
            max_timestamp: None,
            producer_id: batch::NO_PRODUCER_ID,
            producer_epoch: batch::NO_PRODUCER_EPOCH,
            base_sequence: batch::NO_SEQUENCE,
        }
    }
}

/// Sets each record's `offset_delta` to its index, making the batch's offsets contiguous as
/// Apache Kafka requires of produced batches. Use it to re-encode a compacted batch (whose
/// deltas have gaps); keep the source offsets beforehand if an offset map needs them.
pub fn renumber_contiguous(records: &mut [Record]) {
    for (i, r) in records.iter_mut().enumerate() {
        r.offset_delta = i32::try_from(i).unwrap_or(i32::MAX);
    }
}

/// Encodes a complete magic-2 batch: header from `fields`, records compressed with
/// `compression`, `batchLength` and CRC-32C filled in. The result passes [`RecordBatch::new`]
/// and [`RecordBatch::verify_crc`].
///
/// `lastOffsetDelta` is the largest `offset_delta`. Offset deltas must be non-negative and
/// strictly increasing; gaps are allowed (a compacted batch re-encoded as is), but Apache
/// Kafka accepts a produced batch only with deltas `0..n-1`: the caller decides, using
/// [`renumber_contiguous`] when producing. An empty `records` slice is an error (a v2 batch
/// cannot express an empty offset range).
pub fn encode_batch(
    fields: &BatchHeaderFields,
    compression: Compression,
    records: &[Record],
) -> Result<Bytes, RecordsError> {
    let last = records.last().map_or(0, |r| r.offset_delta);
    encode_batch_spanning(fields, compression, records, last)
}

/// [`encode_batch`] with an explicit `lastOffsetDelta`, at least the last record's
/// `offset_delta`. Compaction keeps a batch's original `lastOffsetDelta` when it removes the
/// batch's last records (so the batch still covers its whole offset range); this re-encodes
/// such a batch with the same span. Apache Kafka does not accept such a batch in a Produce.
pub(crate) fn encode_batch_spanning(
    fields: &BatchHeaderFields,
    compression: Compression,
    records: &[Record],
    last_offset_delta: i32,
) -> Result<Bytes, RecordsError> {
    let offset = fields.base_offset;
    let err = |reason: String| RecordsError::Corrupt { offset, reason };
    let Some(last) = records.last() else {
        return Err(err("cannot encode a batch without records".into()));
    };
    if last_offset_delta < last.offset_delta {
        return Err(err(format!(
            "lastOffsetDelta {last_offset_delta} is below the last record's offset delta {}",
            last.offset_delta
        )));
    }
    let count = i32::try_from(records.len())
        .map_err(|_| err(format!("{} records do not fit one batch", records.len())))?;
    let mut previous: Option<i32> = None;
    let mut max_ts = i64::MIN;
    for r in records {
        if r.offset_delta < 0 || previous.is_some_and(|p| r.offset_delta <= p) {
            return Err(err(format!(
                "offset deltas must be non-negative and increasing, got {} after {:?}",
                r.offset_delta, previous
            )));
        }
        previous = Some(r.offset_delta);
        let ts = fields
            .base_timestamp
            .checked_add(r.timestamp_delta)
            .ok_or_else(|| err("record timestamp overflows".into()))?;
        max_ts = max_ts.max(ts);
    }
    let max_timestamp = fields.max_timestamp.unwrap_or(max_ts);
    let attributes = (fields.attributes & !batch::ATTR_CODEC_MASK) | compression.attribute_bits();

    let mut body = Vec::with_capacity(records.iter().map(approx_len).sum());
    for r in records {
        encode_record(r, &mut body).map_err(err)?;
    }
    let payload = if compression == Compression::None {
        body
    } else {
        codec::compress(compression, &body).map_err(|e| RecordsError::Codec {
            codec: compression.name(),
            offset,
            reason: e.to_string(),
        })?
    };

    let total = batch::HEADER_LEN + payload.len();
    let batch_length = i32::try_from(total - batch::LOG_OVERHEAD)
        .map_err(|_| err(format!("batch of {total} bytes is too large")))?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&fields.base_offset.to_be_bytes());
    out.extend_from_slice(&batch_length.to_be_bytes());
    out.extend_from_slice(&fields.partition_leader_epoch.to_be_bytes());
    out.push(2);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&last_offset_delta.to_be_bytes());
    out.extend_from_slice(&fields.base_timestamp.to_be_bytes());
    out.extend_from_slice(&max_timestamp.to_be_bytes());
    out.extend_from_slice(&fields.producer_id.to_be_bytes());
    out.extend_from_slice(&fields.producer_epoch.to_be_bytes());
    out.extend_from_slice(&fields.base_sequence.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    debug_assert_eq!(out.len(), batch::HEADER_LEN);
    out.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&out[batch::ATTRIBUTES..]);
    out[batch::CRC..batch::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(Bytes::from(out))
}

fn approx_len(r: &Record) -> usize {
    let opt = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
    24 + opt(&r.key)
        + opt(&r.value)
        + r.headers
            .iter()
            .map(|h| 10 + h.key.len() + opt(&h.value))
            .sum::<usize>()
}

fn zigzag32(v: i32) -> u64 {
    u64::from(((v << 1) ^ (v >> 31)) as u32)
}

fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unsigned_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn length_of(b: &[u8]) -> Result<i32, String> {
    i32::try_from(b.len()).map_err(|_| format!("field of {} bytes is too long", b.len()))
}

/// Encoded size of a nullable byte field (length varint + bytes).
fn nullable_len(b: Option<&Bytes>) -> Result<usize, String> {
    Ok(match b {
        None => 1,
        Some(b) => unsigned_len(zigzag32(length_of(b)?)) + b.len(),
    })
}

fn put_nullable(out: &mut Vec<u8>, b: Option<&Bytes>) {
    match b {
        None => put_unsigned(out, zigzag32(-1)),
        Some(b) => {
            // Lengths were checked by `nullable_len`.
            put_unsigned(out, zigzag32(b.len() as i32));
            out.extend_from_slice(b);
        }
    }
}

fn encode_record(r: &Record, out: &mut Vec<u8>) -> Result<(), String> {
    let headers_count =
        i32::try_from(r.headers.len()).map_err(|_| "too many headers".to_string())?;
    let mut body_len = 1
        + unsigned_len(zigzag64(r.timestamp_delta))
        + unsigned_len(zigzag32(r.offset_delta))
        + nullable_len(r.key.as_ref())?
        + nullable_len(r.value.as_ref())?
        + unsigned_len(zigzag32(headers_count));
    for h in &r.headers {
        body_len += nullable_len(Some(&h.key))? + nullable_len(h.value.as_ref())?;
    }
    let body_len =
        i32::try_from(body_len).map_err(|_| format!("record of {body_len} bytes is too large"))?;
    put_unsigned(out, zigzag32(body_len));
    let body_start = out.len();
    out.push(r.attributes as u8);
    put_unsigned(out, zigzag64(r.timestamp_delta));
    put_unsigned(out, zigzag32(r.offset_delta));
    put_nullable(out, r.key.as_ref());
    put_nullable(out, r.value.as_ref());
    put_unsigned(out, zigzag32(headers_count));
    for h in &r.headers {
        put_nullable(out, Some(&h.key));
        put_nullable(out, h.value.as_ref());
    }
    debug_assert_eq!(out.len() - body_start, body_len as usize);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rec(offset_delta: i32, key: Option<&[u8]>, value: Option<&[u8]>) -> Record {
        Record {
            attributes: 0,
            timestamp_delta: i64::from(offset_delta) * 10,
            offset_delta,
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
            headers: vec![],
        }
    }

    fn sample() -> Vec<Record> {
        let mut a = rec(0, Some(b"k0"), Some(b"v0"));
        a.headers = vec![
            RecordHeader {
                key: Bytes::from_static(b"trace"),
                value: Some(Bytes::from_static(b"abc")),
            },
            RecordHeader {
                key: Bytes::from_static(b""),
                value: None,
            },
        ];
        vec![a, rec(1, None, Some(b"")), rec(2, Some(b""), None)]
    }

    fn batch_of(bytes: Bytes) -> RecordBatch {
        let b = RecordBatch::new(bytes).unwrap();
        b.verify_crc().unwrap();
        b
    }

    /// Rewrites the CRC of a hand-edited batch so decoding, not the CRC, catches the damage.
    fn recrc(mut raw: Vec<u8>) -> RecordBatch {
        let crc = crc32c::crc32c(&raw[batch::ATTRIBUTES..]);
        raw[batch::CRC..batch::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        batch_of(Bytes::from(raw))
    }

    #[test]
    fn header_fields_are_written() {
        let fields = BatchHeaderFields {
            base_offset: 1000,
            partition_leader_epoch: 5,
            attributes: batch::ATTR_TRANSACTIONAL | 0x07,
            base_timestamp: 1_700_000_000_000,
            max_timestamp: None,
            producer_id: 42,
            producer_epoch: 3,
            base_sequence: 17,
        };
        for codec in Compression::ALL {
            let b = batch_of(encode_batch(&fields, codec, &sample()).unwrap());
            assert_eq!(b.base_offset(), 1000);
            assert_eq!(b.partition_leader_epoch(), 5);
            assert_eq!(b.compression(), Some(codec));
            assert!(b.is_transactional());
            assert_eq!(b.last_offset_delta(), 2);
            assert_eq!(b.records_count(), 3);
            assert!(b.has_contiguous_offsets());
            assert_eq!(b.base_timestamp(), 1_700_000_000_000);
            assert_eq!(b.max_timestamp(), 1_700_000_000_020);
            assert_eq!(b.producer_id(), 42);
            assert_eq!(b.producer_epoch(), 3);
            assert_eq!(b.base_sequence(), 17);
            assert_eq!(decode_records(&b, 1 << 20).unwrap(), sample());
        }
    }

    #[test]
    fn uncompressed_decoding_is_zero_copy() {
        let raw =
            encode_batch(&BatchHeaderFields::default(), Compression::None, &sample()).unwrap();
        let b = batch_of(raw.clone());
        let recs = decode_records(&b, 0).unwrap();
        let key = recs[0].key.as_ref().unwrap();
        let range = raw.as_ptr() as usize..raw.as_ptr() as usize + raw.len();
        assert!(range.contains(&(key.as_ptr() as usize)));
        assert!(range.contains(&(recs[0].headers[0].key.as_ptr() as usize)));
    }

    #[test]
    fn default_fields_and_computed_max_timestamp() {
        let d = BatchHeaderFields::default();
        assert_eq!(
            (
                d.partition_leader_epoch,
                d.producer_id,
                d.producer_epoch,
                d.base_sequence
            ),
            (-1, -1, -1, -1)
        );
        let mut recs = sample();
        recs[1].timestamp_delta = -500;
        recs[2].timestamp_delta = 7;
        let f = BatchHeaderFields {
            base_timestamp: 1000,
            ..d
        };
        let b = batch_of(encode_batch(&f, Compression::None, &recs).unwrap());
        assert_eq!(b.max_timestamp(), 1007);
        let f = BatchHeaderFields {
            max_timestamp: Some(99),
            attributes: batch::ATTR_LOG_APPEND_TIME,
            ..f
        };
        let b = batch_of(encode_batch(&f, Compression::Gzip, &recs).unwrap());
        assert_eq!(b.max_timestamp(), 99);
        assert!(b.is_log_append_time());
    }

    #[test]
    fn gaps_and_renumbering() {
        let mut recs = vec![
            rec(0, None, Some(b"a")),
            rec(3, None, Some(b"b")),
            rec(9, None, None),
        ];
        let b = batch_of(
            encode_batch(&BatchHeaderFields::default(), Compression::Zstd, &recs).unwrap(),
        );
        assert_eq!(b.last_offset_delta(), 9);
        assert!(!b.has_contiguous_offsets());
        assert_eq!(decode_records(&b, 1 << 20).unwrap(), recs);
        renumber_contiguous(&mut recs);
        assert_eq!(
            recs.iter().map(|r| r.offset_delta).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        let b = batch_of(
            encode_batch(&BatchHeaderFields::default(), Compression::Zstd, &recs).unwrap(),
        );
        assert!(b.has_contiguous_offsets());
    }

    #[test]
    fn explicit_last_offset_delta_for_compacted_batches() {
        let recs = vec![rec(1, None, Some(b"a")), rec(5, None, Some(b"b"))];
        let f = BatchHeaderFields::default();
        let b = batch_of(encode_batch_spanning(&f, Compression::Gzip, &recs, 9).unwrap());
        assert_eq!(b.last_offset_delta(), 9);
        assert_eq!(b.next_offset(), 10);
        assert_eq!(decode_records(&b, 1 << 20).unwrap(), recs);
        assert!(encode_batch_spanning(&f, Compression::None, &recs, 4).is_err());
    }

    #[test]
    fn encode_rejects_empty_and_unordered() {
        let f = BatchHeaderFields::default();
        assert!(encode_batch(&f, Compression::None, &[]).is_err());
        let recs = vec![rec(1, None, None), rec(1, None, None)];
        assert!(encode_batch(&f, Compression::None, &recs).is_err());
        assert!(encode_batch(&f, Compression::None, &[rec(-1, None, None)]).is_err());
    }

    #[test]
    fn matches_the_hand_built_batch_in_batch_rs() {
        // Same record bytes as batch.rs's test helper: null key and value, no headers.
        let recs: Vec<Record> = (0..3)
            .map(|i| Record {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: i,
                key: None,
                value: None,
                headers: vec![],
            })
            .collect();
        let f = BatchHeaderFields {
            base_offset: 7,
            partition_leader_epoch: 0,
            base_timestamp: 1_700_000_000_000,
            ..Default::default()
        };
        let ours = encode_batch(&f, Compression::None, &recs).unwrap();
        // length 6, attr 0, tsDelta 0, offsetDelta i, key -1, value -1, headers 0
        let mut expected_records = Vec::new();
        for i in 0..3u8 {
            expected_records.extend_from_slice(&[12, 0, 0, i << 1, 1, 1, 0]);
        }
        assert_eq!(&ours[batch::HEADER_LEN..], &expected_records[..]);
    }

    /// A batch holding one record whose body is `body` (the length varint is written here), with
    /// `count` in the header.
    fn raw_batch(body: &[u8], count: i32) -> Vec<u8> {
        let good = encode_batch(
            &BatchHeaderFields::default(),
            Compression::None,
            &[rec(0, None, None)],
        )
        .unwrap();
        let mut raw = good[..batch::HEADER_LEN].to_vec();
        raw.push(zigzag32(body.len() as i32) as u8);
        raw.extend_from_slice(body);
        let len = (raw.len() - batch::LOG_OVERHEAD) as i32;
        raw[batch::BATCH_LENGTH..batch::BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
        raw[batch::RECORDS_COUNT..batch::RECORDS_COUNT + 4].copy_from_slice(&count.to_be_bytes());
        raw
    }

    fn decode_err(raw: Vec<u8>) -> String {
        match decode_records(&recrc(raw), 1 << 20) {
            Err(RecordsError::Corrupt { reason, .. }) => reason,
            other => panic!("expected a Corrupt error, got {other:?}"),
        }
    }

    #[test]
    fn corrupt_batches_are_errors() {
        // attr, ts 0, offset 0, key null, value "ab", headers 0
        let ok = [0u8, 0, 0, 1, 4, b'a', b'b', 0];
        assert_eq!(
            decode_records(&recrc(raw_batch(&ok, 1)), 0).unwrap().len(),
            1
        );

        // Record length larger than the bytes left.
        let mut raw = raw_batch(&ok, 1);
        raw[batch::HEADER_LEN] = zigzag32(40) as u8;
        assert!(decode_err(raw).contains("exceeds"));

        // Record length smaller than its fields.
        let mut raw = raw_batch(&ok, 1);
        raw[batch::HEADER_LEN] = zigzag32(7) as u8;
        let reason = decode_err(raw);
        assert!(
            reason.contains("truncated") || reason.contains("exceeds"),
            "{reason}"
        );

        // Record length larger than its fields (an extra byte inside the record).
        let mut body = ok.to_vec();
        body.push(0);
        assert!(decode_err(raw_batch(&body, 1)).contains("fields use"));

        // Negative header count.
        let mut body = ok.to_vec();
        *body.last_mut().unwrap() = zigzag32(-1) as u8;
        assert!(decode_err(raw_batch(&body, 1)).contains("negative headers count"));

        // Header count larger than the bytes could hold: 5 headers in 0 bytes.
        let mut body = ok.to_vec();
        *body.last_mut().unwrap() = zigzag32(5) as u8;
        assert!(decode_err(raw_batch(&body, 1)).contains("does not fit"));

        // Null header key.
        let mut body = ok[..7].to_vec();
        body.extend_from_slice(&[2, 1, 1]);
        assert!(decode_err(raw_batch(&body, 1)).contains("null key"));

        // Key length -2.
        let mut body = ok.to_vec();
        body[3] = zigzag32(-2) as u8;
        assert!(decode_err(raw_batch(&body, 1)).contains("invalid length -2"));

        // Records count larger than the records.
        assert!(decode_err(raw_batch(&ok, 2)).contains("short of the declared count"));
        // Huge records count: no allocation from it, just an error.
        assert!(decode_err(raw_batch(&ok, i32::MAX)).contains("short"));
        // Negative records count.
        assert!(decode_err(raw_batch(&ok, -1)).contains("negative records count"));
        // Count smaller than the records: trailing bytes.
        assert!(decode_err(raw_batch(&ok, 0)).contains("bytes left after"));

        // Varint overflow in the timestamp delta (11 continuation bytes).
        let mut body = vec![0u8];
        body.extend_from_slice(&[0xff; 10]);
        body.push(0x01);
        body.extend_from_slice(&ok[2..]);
        assert!(decode_err(raw_batch(&body, 1)).contains("varint"));
        // Varint overflow in a 32-bit field: 5th byte with bits beyond 32.
        let mut body = ok[..2].to_vec();
        body.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x1f]);
        body.extend_from_slice(&ok[3..]);
        assert!(decode_err(raw_batch(&body, 1)).contains("overflows"));
    }

    #[test]
    fn corrupt_compressed_payload_is_a_codec_error() {
        let mut raw = encode_batch(&BatchHeaderFields::default(), Compression::Lz4, &sample())
            .unwrap()
            .to_vec();
        let n = raw.len();
        raw[n - 10..].fill(0xAA);
        assert!(matches!(
            decode_records(&recrc(raw), 1 << 20),
            Err(RecordsError::Codec { codec: "lz4", .. })
        ));
        // The limit applies to the decompressed records.
        let big = vec![rec(0, None, Some(&[7u8; 10_000]))];
        let b =
            batch_of(encode_batch(&BatchHeaderFields::default(), Compression::Gzip, &big).unwrap());
        assert!(matches!(
            decode_records(&b, 5000),
            Err(RecordsError::Codec { codec: "gzip", .. })
        ));
        assert!(decode_records(&b, 20_000).is_ok());
    }

    #[test]
    fn empty_batch_decodes_to_nothing() {
        // As compaction leaves them: header only, count 0, codec bits possibly set.
        let mut raw = raw_batch(&[], 0);
        raw.truncate(batch::HEADER_LEN);
        let len = (raw.len() - batch::LOG_OVERHEAD) as i32;
        raw[batch::BATCH_LENGTH..batch::BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
        raw[batch::ATTRIBUTES + 1] = 4; // zstd
        assert_eq!(decode_records(&recrc(raw), 100).unwrap(), vec![]);
    }

    #[test]
    fn unknown_codec_is_an_error() {
        let mut raw = encode_batch(&BatchHeaderFields::default(), Compression::None, &sample())
            .unwrap()
            .to_vec();
        raw[batch::ATTRIBUTES + 1] = 6;
        assert!(matches!(
            decode_records(&recrc(raw), 100),
            Err(RecordsError::UnknownCodec { bits: 6, .. })
        ));
    }

    #[test]
    fn varint_edges_round_trip() {
        for v in [0i32, 1, -1, 63, -64, 64, i32::MAX, i32::MIN] {
            let mut out = Vec::new();
            put_unsigned(&mut out, zigzag32(v));
            let b = Bytes::from(out);
            assert_eq!(Cursor::new(&b, 0).varint().unwrap(), v);
        }
        for v in [0i64, -1, i64::MAX, i64::MIN, 1 << 40] {
            let mut out = Vec::new();
            put_unsigned(&mut out, zigzag64(v));
            assert_eq!(out.len(), unsigned_len(zigzag64(v)));
            let b = Bytes::from(out);
            assert_eq!(Cursor::new(&b, 0).varlong().unwrap(), v);
        }
    }

    fn arb_bytes() -> impl Strategy<Value = Option<Bytes>> {
        prop_oneof![
            Just(None),
            Just(Some(Bytes::new())),
            proptest::collection::vec(any::<u8>(), 1..200).prop_map(|v| Some(Bytes::from(v))),
        ]
    }

    fn arb_header() -> impl Strategy<Value = RecordHeader> {
        (proptest::collection::vec(any::<u8>(), 0..20), arb_bytes()).prop_map(|(k, value)| {
            RecordHeader {
                key: Bytes::from(k),
                value,
            }
        })
    }

    fn arb_records() -> impl Strategy<Value = Vec<Record>> {
        proptest::collection::vec(
            (
                any::<i8>(),
                prop_oneof![any::<i64>().prop_map(|v| v >> 20), -1000i64..1000],
                1i32..5,
                arb_bytes(),
                arb_bytes(),
                proptest::collection::vec(arb_header(), 0..4),
            ),
            1..30,
        )
        .prop_map(|rows| {
            let mut next = 0i32;
            rows.into_iter()
                .map(|(attributes, timestamp_delta, gap, key, value, headers)| {
                    let offset_delta = next;
                    next += gap;
                    Record {
                        attributes,
                        timestamp_delta,
                        offset_delta,
                        key,
                        value,
                        headers,
                    }
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(
            records in arb_records(),
            codec_index in 0usize..5,
            base_ts in 0i64..2_000_000_000_000,
            base_offset in 0i64..1 << 40,
        ) {
            let codec = Compression::ALL[codec_index];
            let fields = BatchHeaderFields { base_offset, base_timestamp: base_ts, ..Default::default() };
            let raw = encode_batch(&fields, codec, &records).unwrap();
            let b = RecordBatch::new(raw).unwrap();
            prop_assert!(b.verify_crc().is_ok());
            prop_assert_eq!(b.compression(), Some(codec));
            prop_assert_eq!(b.records_count() as usize, records.len());
            prop_assert_eq!(b.last_offset_delta(), records.last().unwrap().offset_delta);
            let max = records.iter().map(|r| base_ts + r.timestamp_delta).max().unwrap();
            prop_assert_eq!(b.max_timestamp(), max);
            let decoded = decode_records(&b, 64 << 20).unwrap();
            prop_assert_eq!(decoded, records);
        }

        #[test]
        fn mangled_batches_never_panic(
            records in arb_records(),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            let raw = encode_batch(&BatchHeaderFields::default(), Compression::None, &records).unwrap();
            let mut raw = raw.to_vec();
            for (at, byte) in flips {
                let i = batch::HEADER_LEN + at % (raw.len() - batch::HEADER_LEN);
                raw[i] = byte;
            }
            let _ = decode_records(&recrc(raw), 1 << 20);
        }
    }
}
