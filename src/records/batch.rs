//! Record batch v2 framing: splitting a fetched records blob into batches, a typed view of the
//! batch header, and header rewrites that keep the CRC right without reading the payload.
//!
//! This module and [`super::crc`] are the only places that touch header bytes of a batch on the
//! forwarding path. Layout (big-endian), with the byte offset of each field:
//!
//! ```text
//!  0 baseOffset int64            (not covered by the CRC)
//!  8 batchLength int32           (bytes after this field)
//! 12 partitionLeaderEpoch int32  (not covered)
//! 16 magic int8                  (not covered)
//! 17 crc uint32                  CRC-32C of bytes 21..end
//! 21 attributes int16
//! 23 lastOffsetDelta int32
//! 27 baseTimestamp int64
//! 35 maxTimestamp int64
//! 43 producerId int64
//! 51 producerEpoch int16
//! 53 baseSequence int32
//! 57 recordsCount int32
//! 61 records...
//! ```

use bytes::Bytes;

use super::crc;
use super::RecordsError;

/// Offset of `baseOffset`.
pub(crate) const BASE_OFFSET: usize = 0;
/// Offset of `batchLength`.
pub const BATCH_LENGTH: usize = 8;
/// Offset of `partitionLeaderEpoch`.
pub(crate) const PARTITION_LEADER_EPOCH: usize = 12;
/// Offset of `magic` (the same offset in legacy message sets).
pub(crate) const MAGIC: usize = 16;
/// Offset of the CRC-32C field.
pub const CRC: usize = 17;
/// Offset of `attributes`: the CRC covers everything from here to the end.
pub const ATTRIBUTES: usize = 21;
/// Offset of `lastOffsetDelta`.
pub(crate) const LAST_OFFSET_DELTA: usize = 23;
/// Offset of `baseTimestamp`.
pub(crate) const BASE_TIMESTAMP: usize = 27;
/// Offset of `maxTimestamp`.
pub(crate) const MAX_TIMESTAMP: usize = 35;
/// Offset of `producerId`.
pub(crate) const PRODUCER_ID: usize = 43;
/// Offset of `producerEpoch`.
pub(crate) const PRODUCER_EPOCH: usize = 51;
/// Offset of `baseSequence`.
pub(crate) const BASE_SEQUENCE: usize = 53;
/// Offset of `recordsCount`.
pub const RECORDS_COUNT: usize = 57;
/// Size of the v2 batch header; records start here.
pub const HEADER_LEN: usize = 61;
/// Bytes before the `batchLength`-counted part of any entry (baseOffset + batchLength).
pub(crate) const LOG_OVERHEAD: usize = 12;

/// Attribute bits 0-2: compression codec.
pub(crate) const ATTR_CODEC_MASK: i16 = 0x07;
/// Attribute bit 3: timestamps are LogAppendTime.
pub(crate) const ATTR_LOG_APPEND_TIME: i16 = 0x08;
/// Attribute bit 4: the batch belongs to a transaction.
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
/// Attribute bit 5: the batch is a control batch (transaction marker).
pub const ATTR_CONTROL: i16 = 0x20;
/// Attribute bit 6: the batch has a delete horizon (set by compaction).
pub const ATTR_DELETE_HORIZON: i16 = 0x40;

/// `producerId` value for batches written without idempotence.
pub(crate) const NO_PRODUCER_ID: i64 = -1;
/// `producerEpoch` value for batches written without idempotence.
pub(crate) const NO_PRODUCER_EPOCH: i16 = -1;
/// `baseSequence` value for batches written without idempotence.
pub(crate) const NO_SEQUENCE: i32 = -1;

/// Compression codec named by a batch's attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Uncompressed records.
    None,
    /// gzip (RFC 1952), possibly several members.
    Gzip,
    /// Snappy, xerial-framed as Kafka's Java client writes it, or raw.
    Snappy,
    /// LZ4 frame format.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl Compression {
    /// The codec for attribute bits 0-2, or `None` for values Kafka does not define.
    pub fn from_attributes(attributes: i16) -> Option<Compression> {
        match attributes & ATTR_CODEC_MASK {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The attribute bits 0-2 for this codec.
    pub fn attribute_bits(self) -> i16 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// Kafka's configuration name for the codec (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// All codecs, in attribute order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
}

impl std::str::FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown codec {s:?} (allowed: none, gzip, snappy, lz4, zstd)"))
    }
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// One entry of a records blob, as cut by [`BatchIter`]: a v2 batch or a legacy message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A magic-2 record batch.
    V2(RecordBatch),
    /// A magic 0 or 1 message (possibly a compressed wrapper holding several). Never forwarded
    /// as is: convert it with [`super::legacy`].
    Legacy(Bytes),
}

impl Entry {
    /// The whole entry's bytes.
    pub fn bytes(&self) -> &Bytes {
        match self {
            Entry::V2(b) => b.bytes(),
            Entry::Legacy(b) => b,
        }
    }
    /// The offset field at the start of the entry (a v2 batch's base offset; for a legacy
    /// compressed wrapper, the offset of its last inner message).
    pub fn offset_field(&self) -> i64 {
        be_i64(self.bytes(), BASE_OFFSET)
    }
}

/// Splits a records blob (a Fetch response partition's `records`) into entries, slicing the
/// shared buffer without copying. A truncated last entry, as a broker leaves when it cuts at
/// `max_bytes`, ends the iteration without an error; [`BatchIter::truncated_tail`] reports it.
#[derive(Debug, Clone)]
pub struct BatchIter {
    blob: Bytes,
    pos: usize,
    failed: bool,
}

/// The bytes of `blob`'s complete entries, read from their length fields only: what is left
/// after them is the partial last batch a broker leaves when it cuts an answer at `max_bytes`
/// (fetched again by the next request). A blob that cannot be split counts as complete.
pub(crate) fn complete_len(blob: &[u8]) -> usize {
    let mut pos = 0;
    while let Some(rest) = blob.get(pos..).filter(|r| r.len() >= LOG_OVERHEAD) {
        let Ok(len) = usize::try_from(be_i32(rest, BATCH_LENGTH)) else {
            return blob.len(); // not a length: the planner reports the blob's error
        };
        if rest.len() < LOG_OVERHEAD + len {
            break;
        }
        pos += LOG_OVERHEAD + len;
    }
    pos
}

/// Splits `blob` into entries; see [`BatchIter`].
pub fn split(blob: Bytes) -> BatchIter {
    BatchIter {
        blob,
        pos: 0,
        failed: false,
    }
}

impl BatchIter {
    /// Bytes left after the last complete entry (non-zero when the blob ends in a partial batch).
    pub fn truncated_tail(&self) -> usize {
        self.blob.len() - self.pos
    }

    /// Position (in bytes) of the next entry within the blob.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl Iterator for BatchIter {
    type Item = Result<Entry, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = &self.blob[self.pos..];
        if rest.len() < LOG_OVERHEAD + 5 {
            // Not even a header: a truncated tail (or the end).
            return None;
        }
        let declared = be_i32(rest, BATCH_LENGTH);
        let magic = rest[MAGIC] as i8;
        let min_len = match magic {
            2 => (HEADER_LEN - LOG_OVERHEAD) as i32,
            // crc(4) magic(1) attributes(1) [timestamp(8)] key(4) value(4)
            0 => 14,
            1 => 22,
            other => {
                self.failed = true;
                return Some(Err(RecordsError::UnsupportedMagic {
                    magic: other,
                    offset: be_i64(rest, BASE_OFFSET),
                }));
            }
        };
        if declared < min_len {
            self.failed = true;
            return Some(Err(RecordsError::BadLength {
                offset: be_i64(rest, BASE_OFFSET),
                declared: i64::from(declared),
            }));
        }
        let total = LOG_OVERHEAD + declared as usize;
        if rest.len() < total {
            return None; // truncated last batch: refetch from its offset
        }
        let bytes = self.blob.slice(self.pos..self.pos + total);
        self.pos += total;
        Some(Ok(if magic == 2 {
            Entry::V2(RecordBatch { bytes })
        } else {
            Entry::Legacy(bytes)
        }))
    }
}

/// A complete magic-2 record batch held as a slice of the fetched buffer, with typed getters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    bytes: Bytes,
}

impl RecordBatch {
    /// Wraps bytes that hold exactly one v2 batch, checking only the framing (length and magic).
    pub fn new(bytes: Bytes) -> Result<RecordBatch, RecordsError> {
        if bytes.len() < HEADER_LEN {
            return Err(RecordsError::Truncated {
                needed: HEADER_LEN,
                available: bytes.len(),
            });
        }
        let declared = be_i32(&bytes, BATCH_LENGTH);
        if declared < 0 || LOG_OVERHEAD + declared as usize != bytes.len() {
            return Err(RecordsError::BadLength {
                offset: be_i64(&bytes, BASE_OFFSET),
                declared: i64::from(declared),
            });
        }
        let magic = bytes[MAGIC] as i8;
        if magic != 2 {
            return Err(RecordsError::UnsupportedMagic {
                magic,
                offset: be_i64(&bytes, BASE_OFFSET),
            });
        }
        Ok(RecordBatch { bytes })
    }

    /// The whole batch.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
    /// Size of the whole batch in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    /// Always false: a batch has at least a header.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// The records section (after the 61-byte header): compressed when the codec is not none.
    pub fn records_region(&self) -> Bytes {
        self.bytes.slice(HEADER_LEN..)
    }
    /// `baseOffset`.
    pub fn base_offset(&self) -> i64 {
        be_i64(&self.bytes, BASE_OFFSET)
    }
    /// `batchLength`.
    pub fn batch_length(&self) -> i32 {
        be_i32(&self.bytes, BATCH_LENGTH)
    }
    /// `partitionLeaderEpoch`.
    pub fn partition_leader_epoch(&self) -> i32 {
        be_i32(&self.bytes, PARTITION_LEADER_EPOCH)
    }
    /// `magic` (always 2 here).
    pub fn magic(&self) -> i8 {
        self.bytes[MAGIC] as i8
    }
    /// The stored CRC-32C.
    pub fn crc(&self) -> u32 {
        be_u32(&self.bytes, CRC)
    }
    /// `attributes`.
    pub fn attributes(&self) -> i16 {
        be_i16(&self.bytes, ATTRIBUTES)
    }
    /// The codec, or `None` when the attribute bits name no codec Kafka knows.
    pub fn compression(&self) -> Option<Compression> {
        Compression::from_attributes(self.attributes())
    }
    /// Timestamps are LogAppendTime (set by the broker that wrote the batch).
    pub fn is_log_append_time(&self) -> bool {
        self.attributes() & ATTR_LOG_APPEND_TIME != 0
    }
    /// The batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes() & ATTR_TRANSACTIONAL != 0
    }
    /// The batch is a transaction marker.
    pub fn is_control(&self) -> bool {
        self.attributes() & ATTR_CONTROL != 0
    }
    /// `lastOffsetDelta`.
    pub fn last_offset_delta(&self) -> i32 {
        be_i32(&self.bytes, LAST_OFFSET_DELTA)
    }
    /// Offset of the last record: `baseOffset + lastOffsetDelta`.
    pub fn last_offset(&self) -> i64 {
        self.base_offset() + i64::from(self.last_offset_delta())
    }
    /// The offset after this batch: `last_offset() + 1`.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }
    /// `baseTimestamp`.
    pub fn base_timestamp(&self) -> i64 {
        be_i64(&self.bytes, BASE_TIMESTAMP)
    }
    /// `maxTimestamp`.
    pub fn max_timestamp(&self) -> i64 {
        be_i64(&self.bytes, MAX_TIMESTAMP)
    }
    /// `producerId`.
    pub fn producer_id(&self) -> i64 {
        be_i64(&self.bytes, PRODUCER_ID)
    }
    /// `producerEpoch`.
    pub fn producer_epoch(&self) -> i16 {
        be_i16(&self.bytes, PRODUCER_EPOCH)
    }
    /// `baseSequence`.
    pub fn base_sequence(&self) -> i32 {
        be_i32(&self.bytes, BASE_SEQUENCE)
    }
    /// `recordsCount`.
    pub fn records_count(&self) -> i32 {
        be_i32(&self.bytes, RECORDS_COUNT)
    }
    /// Offsets inside the batch are contiguous (`lastOffsetDelta + 1 == recordsCount`), as
    /// Apache Kafka requires of produced batches. Compacted batches can have gaps.
    pub fn has_contiguous_offsets(&self) -> bool {
        i64::from(self.last_offset_delta()) + 1 == i64::from(self.records_count())
    }

    /// Recomputes the CRC-32C over bytes 21..end and compares it with the stored one.
    pub fn verify_crc(&self) -> Result<(), RecordsError> {
        let actual = crc32c::crc32c(&self.bytes[ATTRIBUTES..]);
        let stored = self.crc();
        if actual == stored {
            Ok(())
        } else {
            Err(RecordsError::CrcMismatch {
                offset: self.base_offset(),
                stored,
                computed: actual,
            })
        }
    }

    /// Applies `rewrite` to the header and returns the rewritten batch as a new 61-byte header
    /// plus the untouched records region (a slice of the same buffer). The CRC is brought up to
    /// date from the old CRC and the changed header bytes alone: the records are never read.
    pub fn rewrite(&self, rewrite: &HeaderRewrite) -> RewrittenBatch {
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&self.bytes[..HEADER_LEN]);
        rewrite_header(&mut header, self.bytes.len() - HEADER_LEN, rewrite);
        RewrittenBatch {
            header,
            records: self.records_region(),
        }
    }
}

/// Applies `rewrite` to a 61-byte batch header whose records region is `records_len` bytes,
/// updating its CRC from the old CRC and the changed header bytes alone. The one place where
/// header fields of a forwarded batch are written.
fn rewrite_header(header: &mut [u8; HEADER_LEN], records_len: usize, rewrite: &HeaderRewrite) {
    let old_header = *header;
    let mut put = |at: usize, v: &[u8]| header[at..at + v.len()].copy_from_slice(v);
    if let Some(v) = rewrite.base_offset {
        put(BASE_OFFSET, &v.to_be_bytes());
    }
    if let Some(v) = rewrite.partition_leader_epoch {
        put(PARTITION_LEADER_EPOCH, &v.to_be_bytes());
    }
    if let Some(v) = rewrite.attributes {
        put(ATTRIBUTES, &v.to_be_bytes());
    }
    if let Some(v) = rewrite.producer_id {
        put(PRODUCER_ID, &v.to_be_bytes());
    }
    if let Some(v) = rewrite.producer_epoch {
        put(PRODUCER_EPOCH, &v.to_be_bytes());
    }
    if let Some(v) = rewrite.base_sequence {
        put(BASE_SEQUENCE, &v.to_be_bytes());
    }
    let old = &old_header[ATTRIBUTES..HEADER_LEN];
    let new = &header[ATTRIBUTES..HEADER_LEN];
    if old != new {
        let old_crc = u32::from_be_bytes([
            old_header[CRC],
            old_header[CRC + 1],
            old_header[CRC + 2],
            old_header[CRC + 3],
        ]);
        let updated = crc::update_prefix(old_crc, old, new, records_len);
        header[CRC..CRC + 4].copy_from_slice(&updated.to_be_bytes());
    }
}

/// Header fields to overwrite; `None` keeps the source's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeaderRewrite {
    /// New `baseOffset` (producers send 0; the broker assigns the real one).
    pub base_offset: Option<i64>,
    /// New `partitionLeaderEpoch` (producers send -1).
    pub partition_leader_epoch: Option<i32>,
    /// New `attributes` (for example with the transactional bit cleared).
    pub attributes: Option<i16>,
    /// New `producerId`: the target's own id from InitProducerId, or -1.
    pub producer_id: Option<i64>,
    /// New `producerEpoch`.
    pub producer_epoch: Option<i16>,
    /// New `baseSequence`.
    pub base_sequence: Option<i32>,
}

/// A batch after a header rewrite: a fresh header and the source's records region, ready for a
/// vectored write. Its bytes in order are `header` then `records`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewrittenBatch {
    /// The 61-byte rewritten header, CRC included.
    pub header: [u8; HEADER_LEN],
    /// The records region, shared with the fetched buffer.
    pub records: Bytes,
}

impl RewrittenBatch {
    /// The same batch with `rewrite` applied to its header (CRC updated, records untouched).
    pub fn rewrite(&self, rewrite: &HeaderRewrite) -> RewrittenBatch {
        let mut header = self.header;
        rewrite_header(&mut header, self.records.len(), rewrite);
        RewrittenBatch {
            header,
            records: self.records.clone(),
        }
    }

    /// Total size in bytes.
    pub fn len(&self) -> usize {
        HEADER_LEN + self.records.len()
    }
    /// Always false: a batch has a header.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Copies header and records into one buffer (for tests and inspection, not the hot path).
    pub fn to_bytes(&self) -> Bytes {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.header);
        v.extend_from_slice(&self.records);
        Bytes::from(v)
    }
    /// The rewritten `recordsCount`.
    pub fn records_count(&self) -> i32 {
        be_i32(&self.header, RECORDS_COUNT)
    }
    /// The CRC-32C over attributes to the end, kept up to date by rewrites.
    pub fn crc(&self) -> u32 {
        be_u32(&self.header, CRC)
    }
    /// The rewritten `attributes`.
    pub fn attributes(&self) -> i16 {
        be_i16(&self.header, ATTRIBUTES)
    }
    /// The rewritten `baseSequence`.
    pub fn base_sequence(&self) -> i32 {
        be_i32(&self.header, BASE_SEQUENCE)
    }
    /// The `maxTimestamp` (unchanged by rewrites): the newest record's timestamp, or the
    /// broker's append time for LogAppendTime batches.
    pub fn max_timestamp(&self) -> i64 {
        be_i64(&self.header, MAX_TIMESTAMP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal uncompressed batch with `n` empty records, built by hand.
    pub(crate) fn tiny_batch(base_offset: i64, n: i32) -> Bytes {
        let mut records = Vec::new();
        for i in 0..n {
            // length, attributes, tsDelta, offsetDelta, keyLen(-1), valueLen(-1), headers(0)
            let body = [0u8, 0, (i as u8) << 1, 1, 1, 0];
            records.push((body.len() as u8) << 1);
            records.extend_from_slice(&body);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&base_offset.to_be_bytes());
        b.extend_from_slice(&((HEADER_LEN - LOG_OVERHEAD + records.len()) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.push(2);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(n - 1).to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.extend_from_slice(&(-1i64).to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes());
        b.extend_from_slice(&n.to_be_bytes());
        b.extend_from_slice(&records);
        let crc = crc32c::crc32c(&b[ATTRIBUTES..]);
        b[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
        Bytes::from(b)
    }

    #[test]
    fn complete_len_leaves_out_a_cut_last_batch() {
        let a = tiny_batch(0, 3);
        let b = tiny_batch(3, 2);
        let whole = [a.as_ref(), b.as_ref()].concat();
        assert_eq!(complete_len(&whole), whole.len());
        assert_eq!(complete_len(&[]), 0);
        for cut in [
            1,
            LOG_OVERHEAD - 1,
            LOG_OVERHEAD,
            LOG_OVERHEAD + 1,
            b.len() - 1,
        ] {
            let blob = [a.as_ref(), &b[..cut]].concat();
            assert_eq!(complete_len(&blob), a.len(), "cut at {cut}");
            assert_eq!(complete_len(&b[..cut]), 0, "cut at {cut}");
        }
        // Not a length: left to the planner, which names the error.
        let mut bad = whole.clone();
        bad[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(complete_len(&bad), bad.len());
    }

    #[test]
    fn split_handles_truncated_tail() {
        let a = tiny_batch(0, 3);
        let b = tiny_batch(3, 2);
        let mut blob = Vec::new();
        blob.extend_from_slice(&a);
        blob.extend_from_slice(&b);
        blob.extend_from_slice(&b[..20]);
        let mut it = split(Bytes::from(blob));
        let got: Vec<_> = it.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(it.truncated_tail(), 20);
        match &got[1] {
            Entry::V2(batch) => {
                assert_eq!(batch.base_offset(), 3);
                assert_eq!(batch.records_count(), 2);
                assert!(batch.verify_crc().is_ok());
            }
            Entry::Legacy(_) => panic!("expected v2"),
        }
    }

    #[test]
    fn rewrite_updates_crc_without_touching_records() {
        let raw = tiny_batch(42, 5);
        let batch = RecordBatch::new(raw.clone()).unwrap();
        let out = batch.rewrite(&HeaderRewrite {
            base_offset: Some(0),
            partition_leader_epoch: Some(-1),
            producer_id: Some(9),
            producer_epoch: Some(0),
            base_sequence: Some(100),
            attributes: None,
        });
        let rebuilt = RecordBatch::new(out.to_bytes()).unwrap();
        assert!(rebuilt.verify_crc().is_ok());
        assert_eq!(rebuilt.producer_id(), 9);
        assert_eq!(rebuilt.base_sequence(), 100);
        assert_eq!(rebuilt.base_offset(), 0);
        assert_eq!(out.max_timestamp(), 1_700_000_000_000);
        assert_eq!(out.records, batch.records_region());
    }

    #[test]
    fn rewriting_a_rewritten_batch_keeps_the_crc_valid() {
        let batch = RecordBatch::new(tiny_batch(42, 5)).unwrap();
        let once = batch.rewrite(&HeaderRewrite {
            base_offset: Some(0),
            ..HeaderRewrite::default()
        });
        let twice = once.rewrite(&HeaderRewrite {
            producer_id: Some(7),
            producer_epoch: Some(1),
            base_sequence: Some(40),
            ..HeaderRewrite::default()
        });
        let rebuilt = RecordBatch::new(twice.to_bytes()).unwrap();
        assert!(rebuilt.verify_crc().is_ok());
        assert_eq!(rebuilt.base_offset(), 0);
        assert_eq!(rebuilt.producer_id(), 7);
        assert_eq!(rebuilt.base_sequence(), 40);
        assert_eq!(twice.records, batch.records_region());
        // A rewrite that changes nothing gives the same bytes.
        assert_eq!(
            once.rewrite(&HeaderRewrite::default()).to_bytes(),
            once.to_bytes()
        );
    }

    #[test]
    fn bad_length_is_an_error_not_a_panic() {
        let mut raw = tiny_batch(0, 1).to_vec();
        raw[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&3i32.to_be_bytes());
        let r: Vec<_> = split(Bytes::from(raw)).collect();
        assert!(matches!(r[0], Err(RecordsError::BadLength { .. })));
    }
}
