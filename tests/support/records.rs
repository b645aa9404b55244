//! Record-batch (magic 2) helpers for tests: a header parser used by the proxy's checker and a
//! tiny independent batch builder for hand-made requests.
//!
//! CRC-32C is computed with the `crc` crate on purpose: the code under test uses `crc32c`,
//! so the harness never shares a checksum implementation with it.

use crc::{Crc, CRC_32_ISCSI};

/// CRC-32C (Castagnoli), as used by Kafka record batches.
pub const CRC32C: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);

/// Size of the fixed record-batch header (magic 2).
pub const BATCH_HEADER_LEN: usize = 61;

pub const OFF_BASE_OFFSET: usize = 0;
pub const OFF_BATCH_LENGTH: usize = 8;
pub const OFF_PARTITION_LEADER_EPOCH: usize = 12;
pub const OFF_MAGIC: usize = 16;
pub const OFF_CRC: usize = 17;
pub const OFF_ATTRIBUTES: usize = 21;
pub const OFF_LAST_OFFSET_DELTA: usize = 23;
pub const OFF_BASE_TIMESTAMP: usize = 27;
pub const OFF_MAX_TIMESTAMP: usize = 35;
pub const OFF_PRODUCER_ID: usize = 43;
pub const OFF_PRODUCER_EPOCH: usize = 51;
pub const OFF_BASE_SEQUENCE: usize = 53;
pub const OFF_RECORDS_COUNT: usize = 57;

pub const ATTR_COMPRESSION_MASK: i16 = 0x07;
pub const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
pub const ATTR_TRANSACTIONAL: i16 = 0x10;
pub const ATTR_CONTROL: i16 = 0x20;

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

/// The fixed header fields of one record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Parses the header of a batch. `batch` must be at least [`BATCH_HEADER_LEN`] bytes.
    pub fn parse(batch: &[u8]) -> Result<BatchHeader, String> {
        if batch.len() < BATCH_HEADER_LEN {
            return Err(format!(
                "record batch of {} bytes is shorter than the {BATCH_HEADER_LEN}-byte header",
                batch.len()
            ));
        }
        Ok(BatchHeader {
            base_offset: be_i64(batch, OFF_BASE_OFFSET),
            batch_length: be_i32(batch, OFF_BATCH_LENGTH),
            partition_leader_epoch: be_i32(batch, OFF_PARTITION_LEADER_EPOCH),
            magic: batch[OFF_MAGIC] as i8,
            crc: be_u32(batch, OFF_CRC),
            attributes: be_i16(batch, OFF_ATTRIBUTES),
            last_offset_delta: be_i32(batch, OFF_LAST_OFFSET_DELTA),
            base_timestamp: be_i64(batch, OFF_BASE_TIMESTAMP),
            max_timestamp: be_i64(batch, OFF_MAX_TIMESTAMP),
            producer_id: be_i64(batch, OFF_PRODUCER_ID),
            producer_epoch: be_i16(batch, OFF_PRODUCER_EPOCH),
            base_sequence: be_i32(batch, OFF_BASE_SEQUENCE),
            records_count: be_i32(batch, OFF_RECORDS_COUNT),
        })
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    pub fn compression(&self) -> i16 {
        self.attributes & ATTR_COMPRESSION_MASK
    }
}

/// CRC-32C over `batch[21..]` (attributes to the end), as stored at offset 17.
pub fn batch_crc(batch: &[u8]) -> u32 {
    CRC32C.checksum(&batch[OFF_ATTRIBUTES.min(batch.len())..])
}

/// Splits a records blob into whole batches using each batch's length field.
/// Returns the batches found and, if the blob does not end on a batch boundary,
/// a description of the leftover bytes.
pub fn split_batches(blob: &[u8]) -> (Vec<&[u8]>, Option<String>) {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < blob.len() {
        let left = blob.len() - pos;
        if left < 12 {
            return (
                out,
                Some(format!(
                    "{left} trailing bytes at blob offset {pos} (too short for a batch length)"
                )),
            );
        }
        let batch_length = be_i32(blob, pos + OFF_BATCH_LENGTH);
        if batch_length < (BATCH_HEADER_LEN - 12) as i32 {
            return (
                out,
                Some(format!(
                    "batchLength {batch_length} at blob offset {pos} is smaller than a batch header"
                )),
            );
        }
        let size = 12usize + batch_length as usize;
        if left < size {
            return (
                out,
                Some(format!(
                    "partial batch at blob offset {pos}: declares {size} bytes, only {left} present"
                )),
            );
        }
        out.push(&blob[pos..pos + size]);
        pos += size;
    }
    (out, None)
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    // zig-zag
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        if z < 0x80 {
            out.push(z as u8);
            return;
        }
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
}

fn put_varbytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// One record for [`BatchBuilder`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

impl SimpleRecord {
    pub fn kv(key: &str, value: &str) -> Self {
        SimpleRecord {
            key: Some(key.as_bytes().to_vec()),
            value: Some(value.as_bytes().to_vec()),
            headers: Vec::new(),
        }
    }
}

/// Builds an uncompressed magic-2 record batch with a valid CRC (unless told otherwise).
/// Fields are public so tests can craft invalid batches deliberately.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub attributes: i16,
    pub base_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    /// Overrides the computed lastOffsetDelta when set.
    pub last_offset_delta_override: Option<i32>,
    /// Overrides the computed recordsCount when set.
    pub records_count_override: Option<i32>,
    pub records: Vec<SimpleRecord>,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        BatchBuilder {
            base_offset: 0,
            partition_leader_epoch: -1,
            magic: 2,
            attributes: 0,
            base_timestamp: 1_700_000_000_000,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            last_offset_delta_override: None,
            records_count_override: None,
            records: Vec::new(),
        }
    }
}

impl BatchBuilder {
    pub fn new(records: Vec<SimpleRecord>) -> Self {
        BatchBuilder {
            records,
            ..Default::default()
        }
    }

    /// Sets idempotent-producer fields.
    pub fn idempotent(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    pub fn build(&self) -> Vec<u8> {
        let mut recs = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            let mut body = Vec::new();
            body.push(0u8); // record attributes
            put_varint(&mut body, 0); // timestamp delta
            put_varint(&mut body, i as i64); // offset delta
            put_varbytes(&mut body, r.key.as_deref());
            put_varbytes(&mut body, r.value.as_deref());
            put_varint(&mut body, r.headers.len() as i64);
            for (k, v) in &r.headers {
                put_varbytes(&mut body, Some(k.as_bytes()));
                put_varbytes(&mut body, v.as_deref());
            }
            put_varint(&mut recs, body.len() as i64);
            recs.extend_from_slice(&body);
        }
        let n = self.records.len() as i32;
        let mut b = Vec::with_capacity(BATCH_HEADER_LEN + recs.len());
        b.extend_from_slice(&self.base_offset.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // batch length, patched below
        b.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        b.push(self.magic as u8);
        b.extend_from_slice(&0u32.to_be_bytes()); // crc, patched below
        b.extend_from_slice(&self.attributes.to_be_bytes());
        b.extend_from_slice(
            &self
                .last_offset_delta_override
                .unwrap_or((n - 1).max(0))
                .to_be_bytes(),
        );
        b.extend_from_slice(&self.base_timestamp.to_be_bytes());
        b.extend_from_slice(&self.base_timestamp.to_be_bytes());
        b.extend_from_slice(&self.producer_id.to_be_bytes());
        b.extend_from_slice(&self.producer_epoch.to_be_bytes());
        b.extend_from_slice(&self.base_sequence.to_be_bytes());
        b.extend_from_slice(&self.records_count_override.unwrap_or(n).to_be_bytes());
        b.extend_from_slice(&recs);
        let batch_length = (b.len() - 12) as i32;
        b[OFF_BATCH_LENGTH..OFF_BATCH_LENGTH + 4].copy_from_slice(&batch_length.to_be_bytes());
        let crc = batch_crc(&b);
        b[OFF_CRC..OFF_CRC + 4].copy_from_slice(&crc.to_be_bytes());
        b
    }
}
