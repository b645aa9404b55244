//! The bench's records and batches (sans-io): text values of a given size, keys from a given
//! spread, encoded into batches of a target size in one codec.

use bytes::Bytes;

use crate::records::record::{encode_batch, BatchHeaderFields, Record};
use crate::records::{Compression, HeaderRewrite, RecordBatch, RecordsError, RewrittenBatch};

/// Bytes a record adds to a batch beyond its value, roughly (key, varints, attributes).
const RECORD_OVERHEAD: usize = 30;

const WORDS: [&str; 10] = [
    "kafka", "batch", "offset", "replica", "strait", "leader", "fetch", "produce", "sensor",
    "cluster",
];

/// What the bench writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataShape {
    /// Value bytes per record.
    pub record_bytes: usize,
    /// Distinct keys (at least 1).
    pub key_spread: u64,
    /// Codec of every batch.
    pub codec: Compression,
    /// Uncompressed batch size aimed at.
    pub batch_bytes: usize,
}

impl DataShape {
    /// Records in each batch: as many as fit `batch_bytes`, at least one.
    pub fn records_per_batch(&self) -> usize {
        (self.batch_bytes / (self.record_bytes + RECORD_OVERHEAD)).max(1)
    }

    /// The record with global index `index`: key `key-<index mod spread>`, a text value.
    pub fn record(&self, index: u64, offset_delta: i32) -> Record {
        let mut v = String::with_capacity(self.record_bytes + 8);
        let mut j = index as usize;
        while v.len() < self.record_bytes {
            v.push_str(WORDS[j % WORDS.len()]);
            v.push(' ');
            j = j.wrapping_mul(31).wrapping_add(7);
        }
        v.truncate(self.record_bytes);
        Record {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta,
            key: Some(Bytes::from(format!(
                "key-{:012}",
                index % self.key_spread.max(1)
            ))),
            value: Some(Bytes::from(v)),
            headers: Vec::new(),
        }
    }

    /// A batch of [`DataShape::records_per_batch`] records starting at global record `first`,
    /// every record stamped `timestamp_ms`, as a producer without idempotence sends it.
    pub fn batch(&self, first: u64, timestamp_ms: i64) -> Result<RewrittenBatch, RecordsError> {
        let n = self.records_per_batch();
        let records: Vec<Record> = (0..n)
            .map(|i| self.record(first + i as u64, i as i32))
            .collect();
        let fields = BatchHeaderFields {
            base_timestamp: timestamp_ms,
            ..Default::default()
        };
        let bytes = encode_batch(&fields, self.codec, &records)?;
        Ok(RecordBatch::new(bytes)?.rewrite(&HeaderRewrite::default()))
    }

    /// `count` distinct batches (record indexes running on from one batch to the next).
    pub fn pool(
        &self,
        count: usize,
        timestamp_ms: i64,
    ) -> Result<Vec<RewrittenBatch>, RecordsError> {
        let n = self.records_per_batch() as u64;
        (0..count as u64)
            .map(|b| self.batch(b * n, timestamp_ms))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::record::decode_records;

    #[test]
    fn batches_hold_the_shape() {
        for codec in [Compression::None, Compression::Zstd, Compression::Lz4] {
            let shape = DataShape {
                record_bytes: 1000,
                key_spread: 3,
                codec,
                batch_bytes: 64 * 1024,
            };
            assert_eq!(shape.records_per_batch(), 63);
            let b = shape.batch(0, 1_700_000_000_000).unwrap();
            let batch = RecordBatch::new(b.to_bytes()).unwrap();
            batch.verify_crc().unwrap();
            assert_eq!(batch.compression(), Some(codec));
            assert_eq!(batch.max_timestamp(), 1_700_000_000_000);
            assert_eq!(batch.producer_id(), -1);
            let recs = decode_records(&batch, 1 << 24).unwrap();
            assert_eq!(recs.len(), 63);
            let mut keys: Vec<_> = recs.iter().map(|r| r.key.clone().unwrap()).collect();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), 3);
            assert!(recs.iter().all(|r| r.value.as_ref().unwrap().len() == 1000));
            if codec == Compression::None {
                assert!(batch.len() > 63 * 1000);
            }
        }
    }

    #[test]
    fn pool_batches_differ_and_huge_records_make_single_record_batches() {
        let shape = DataShape {
            record_bytes: 100_000,
            key_spread: 1000,
            codec: Compression::None,
            batch_bytes: 64 * 1024,
        };
        assert_eq!(shape.records_per_batch(), 1);
        let pool = shape.pool(2, 5).unwrap();
        assert_eq!(pool.len(), 2);
        assert_ne!(pool[0].records, pool[1].records);
    }
}
