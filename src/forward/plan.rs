//! Sans-io forwarding decisions for one partition: given what a Fetch returned, which batches go
//! to the target untouched (only the header rewritten), which must be re-encoded, and which
//! source offsets are dropped. Also numbers the batches for the target's idempotent producer.

use bytes::Bytes;

use crate::protocol::fetch::{AbortedTransaction, FetchedPartition};
use crate::records::batch::{
    ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE,
};
use crate::records::record::{self, BatchHeaderFields, Record};
use crate::records::{
    legacy, split, Compression, Entry, HeaderRewrite, RecordBatch, RecordsError, RewrittenBatch,
};

/// Upper bound on the decompressed size of one batch we re-encode.
pub(crate) const MAX_DECODED_BATCH: usize = 128 * 1024 * 1024;

/// The target producer identity used for idempotent writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdentity {
    /// Producer id from the target's InitProducerId.
    pub id: i64,
    /// Its epoch.
    pub epoch: i16,
}

/// Why a batch was re-encoded rather than forwarded as it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reencode {
    /// Offsets inside the batch had gaps (a compacted topic).
    OffsetGaps,
    /// Records before the fetch offset had to be left out.
    PartialBatch,
    /// A magic 0/1 message set, converted to v2.
    Legacy,
    /// LogAppendTime, turned into CreateTime carrying the append time.
    LogAppendTime,
    /// Aborted records of a READ_COMMITTED fetch were removed from the batch.
    AbortedRecords,
}

/// Source offsets of the records in one outgoing batch, in target order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceOffsets {
    /// `count` records at source offsets `first..first + count`.
    Contiguous {
        /// First source offset.
        first: i64,
        /// Number of records.
        count: i64,
    },
    /// Each record's source offset (after re-encoding a batch with gaps).
    Listed(Vec<i64>),
}

impl SourceOffsets {
    /// Number of records.
    pub fn count(&self) -> i64 {
        match self {
            SourceOffsets::Contiguous { count, .. } => *count,
            SourceOffsets::Listed(v) => v.len() as i64,
        }
    }
}

/// One batch to produce.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The batch: a rewritten header and records region (shared with the fetched buffer unless
    /// re-encoded).
    pub batch: RewrittenBatch,
    /// Where its records came from.
    pub source: SourceOffsets,
    /// Source offset after the last record this batch covers (includes dropped tail offsets).
    pub source_next: i64,
    /// Set when the batch had to be re-encoded.
    pub reencoded: Option<Reencode>,
    /// The source batch's partition leader epoch (-1: not known, a legacy message set).
    pub source_epoch: i32,
}

/// What one fetched blob becomes.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Batches to produce, in order.
    pub outgoing: Vec<Outgoing>,
    /// Source offset ranges `[from, to)` with no target record (control batches, aborted data).
    pub dropped: Vec<(i64, i64)>,
    /// Where the next fetch starts.
    pub next_offset: i64,
}

/// Forwarding state of one partition.
#[derive(Debug, Clone)]
pub struct PartitionPlanner {
    next_offset: i64,
    producer: Option<ProducerIdentity>,
    next_sequence: i32,
    /// Producers whose transactions are currently aborted (from the fetch's aborted list).
    aborted_open: Vec<i64>,
    /// The partition leader epoch of the last batch passed (-1: none yet): a Fetch sends it so
    /// the leader can say where its log diverged from what was read (KIP-320).
    last_epoch: i32,
}

impl PartitionPlanner {
    /// Starts at source offset `from`; with `producer`, batches are numbered from sequence
    /// `first_sequence` for the target's idempotent producer.
    pub fn new(from: i64, producer: Option<ProducerIdentity>, first_sequence: i32) -> Self {
        PartitionPlanner {
            next_offset: from,
            producer,
            next_sequence: first_sequence,
            aborted_open: Vec::new(),
            last_epoch: -1,
        }
    }

    /// Continues after a batch of source leader epoch `epoch` read before (a stored position):
    /// the first Fetch then lets the leader say whether its log still holds what was read.
    pub fn after_epoch(mut self, epoch: Option<i32>) -> Self {
        self.last_epoch = epoch.unwrap_or(-1);
        self
    }

    /// The leader epoch of the last batch planned or dropped (-1: none since the start).
    pub fn last_fetched_epoch(&self) -> i32 {
        self.last_epoch
    }

    /// The next source offset to fetch.
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// The sequence the next batch will get.
    pub fn next_sequence(&self) -> i32 {
        self.next_sequence
    }

    /// Plans the batches of one Fetch response partition. Never reads a records payload that is
    /// forwarded unchanged. On error nothing was consumed: the same blob can be planned again.
    pub fn plan(&mut self, fetched: &FetchedPartition) -> Result<Plan, RecordsError> {
        let mut work = self.clone();
        let plan = work.plan_inner(&fetched.records, &fetched.aborted_transactions)?;
        *self = work;
        Ok(plan)
    }

    fn plan_inner(
        &mut self,
        blob: &Bytes,
        aborted: &[AbortedTransaction],
    ) -> Result<Plan, RecordsError> {
        let mut plan = Plan::default();
        // As Kafka's consumer does: aborted transactions are taken in first-offset order, each
        // once, as the batches reach them; an abort marker ends its producer's.
        let mut pending: Vec<&AbortedTransaction> = aborted.iter().collect();
        pending.sort_by_key(|a| a.first_offset);
        let mut pending = pending.into_iter().peekable();
        for entry in split(blob.clone()) {
            let batch = match entry? {
                Entry::V2(b) => b,
                Entry::Legacy(raw) => {
                    let converted =
                        legacy::legacy_to_v2(&raw, Compression::None, MAX_DECODED_BATCH)?;
                    let b = RecordBatch::new(converted)?;
                    if b.next_offset() <= self.next_offset {
                        continue;
                    }
                    let records = record::decode_records(&b, MAX_DECODED_BATCH)?;
                    self.push_reencoded(&mut plan, &b, records, Reencode::Legacy)?;
                    continue;
                }
            };
            if batch.producer_id() >= 0 {
                while let Some(a) = pending.next_if(|a| a.first_offset <= batch.last_offset()) {
                    if !self.aborted_open.contains(&a.producer_id) {
                        self.aborted_open.push(a.producer_id);
                    }
                }
                if batch.is_control() {
                    self.aborted_open.retain(|&p| p != batch.producer_id());
                }
            }
            if batch.next_offset() <= self.next_offset {
                continue; // already forwarded
            }
            self.last_epoch = batch.partition_leader_epoch();
            if batch.is_control() {
                self.drop_range(
                    &mut plan,
                    batch.base_offset().max(self.next_offset),
                    batch.next_offset(),
                );
                continue;
            }
            if batch.is_transactional() && self.aborted_open.contains(&batch.producer_id()) {
                self.drop_range(
                    &mut plan,
                    batch.base_offset().max(self.next_offset),
                    batch.next_offset(),
                );
                continue;
            }
            let reason = if batch.base_offset() < self.next_offset {
                Some(Reencode::PartialBatch)
            } else if !batch.has_contiguous_offsets() {
                Some(Reencode::OffsetGaps)
            } else if batch.is_log_append_time() {
                Some(Reencode::LogAppendTime)
            } else {
                None
            };
            match reason {
                None => self.push_forwarded(&mut plan, &batch),
                Some(why) => {
                    let records = record::decode_records(&batch, MAX_DECODED_BATCH)?;
                    self.push_reencoded(&mut plan, &batch, records, why)?;
                }
            }
        }
        plan.next_offset = self.next_offset;
        Ok(plan)
    }

    fn drop_range(&mut self, plan: &mut Plan, from: i64, to: i64) {
        if to > from {
            match plan.dropped.last_mut() {
                Some(last) if last.1 == from => last.1 = to,
                _ => plan.dropped.push((from, to)),
            }
        }
        self.next_offset = self.next_offset.max(to);
    }

    fn header_rewrite(&mut self, attributes: i16, count: i32) -> HeaderRewrite {
        let (pid, epoch, seq) = match self.producer {
            Some(p) => {
                let seq = self.next_sequence;
                self.next_sequence = next_sequence(seq, count);
                (p.id, p.epoch, seq)
            }
            None => (NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE),
        };
        HeaderRewrite {
            base_offset: Some(0),
            partition_leader_epoch: Some(-1),
            // A transaction on the source is not one on the target: its committed records are
            // written as plain idempotent data.
            attributes: Some(attributes & !ATTR_TRANSACTIONAL),
            producer_id: Some(pid),
            producer_epoch: Some(epoch),
            base_sequence: Some(seq),
        }
    }

    fn push_forwarded(&mut self, plan: &mut Plan, batch: &RecordBatch) {
        let rw = self.header_rewrite(batch.attributes(), batch.records_count());
        plan.outgoing.push(Outgoing {
            batch: batch.rewrite(&rw),
            source: SourceOffsets::Contiguous {
                first: batch.base_offset(),
                count: i64::from(batch.records_count()),
            },
            source_next: batch.next_offset(),
            reencoded: None,
            source_epoch: self.last_epoch,
        });
        self.next_offset = batch.next_offset();
    }

    fn push_reencoded(
        &mut self,
        plan: &mut Plan,
        batch: &RecordBatch,
        mut records: Vec<Record>,
        why: Reencode,
    ) -> Result<(), RecordsError> {
        let base = batch.base_offset();
        let from = self.next_offset;
        records.retain(|r| base + i64::from(r.offset_delta) >= from);
        let end = batch.next_offset();
        if records.is_empty() {
            self.drop_range(plan, from.max(base), end);
            return Ok(());
        }
        let sources: Vec<i64> = records
            .iter()
            .map(|r| base + i64::from(r.offset_delta))
            .collect();
        let mut base_timestamp = batch.base_timestamp();
        let mut attributes = batch.attributes();
        if batch.is_log_append_time() {
            // Consumers of the source saw the append time on every record: keep that as
            // CreateTime on the target.
            let t = batch.max_timestamp();
            for r in records.iter_mut() {
                r.timestamp_delta = 0;
            }
            base_timestamp = t;
            attributes &= !ATTR_LOG_APPEND_TIME;
        }
        let first_ts = records
            .first()
            .map(|r| base_timestamp + r.timestamp_delta)
            .unwrap_or(base_timestamp);
        for r in records.iter_mut() {
            r.timestamp_delta = base_timestamp + r.timestamp_delta - first_ts;
        }
        record::renumber_contiguous(&mut records);
        let codec = batch.compression().unwrap_or(Compression::None);
        let fields = BatchHeaderFields {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes: attributes & !ATTR_TRANSACTIONAL,
            base_timestamp: first_ts,
            max_timestamp: None,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
        };
        let encoded = RecordBatch::new(record::encode_batch(&fields, codec, &records)?)?;
        let rw = self.header_rewrite(encoded.attributes(), encoded.records_count());
        let contiguous = sources.windows(2).all(|w| w[1] == w[0] + 1);
        let source = if contiguous {
            SourceOffsets::Contiguous {
                first: sources[0],
                count: sources.len() as i64,
            }
        } else {
            SourceOffsets::Listed(sources)
        };
        plan.outgoing.push(Outgoing {
            batch: encoded.rewrite(&rw),
            source,
            source_next: end,
            reencoded: Some(why),
            source_epoch: self.last_epoch,
        });
        self.next_offset = end;
        Ok(())
    }
}

/// The sequence after a batch of `count` records starting at `seq` (wraps at i32::MAX as
/// Kafka's producer does).
pub fn next_sequence(seq: i32, count: i32) -> i32 {
    ((i64::from(seq) + i64::from(count)) % (i64::from(i32::MAX) + 1)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::batch::ATTR_CONTROL;
    use bytes::BytesMut;

    /// A batch of producer `pid` at `base` with `n` records (a control marker when `control`).
    fn batch(base: i64, n: i32, pid: i64, control: bool) -> Bytes {
        let records: Vec<Record> = (0..n)
            .map(|i| Record {
                attributes: 0,
                timestamp_delta: 0,
                offset_delta: i,
                key: Some(Bytes::from_static(if control {
                    b"\x00\x00\x00\x00"
                } else {
                    b"k"
                })),
                value: Some(Bytes::from(format!("v{}", base + i64::from(i)))),
                headers: Vec::new(),
            })
            .collect();
        let fields = BatchHeaderFields {
            base_offset: base,
            partition_leader_epoch: 0,
            attributes: ATTR_TRANSACTIONAL | if control { ATTR_CONTROL } else { 0 },
            base_timestamp: 1_700_000_000_000,
            max_timestamp: None,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: 0,
        };
        record::encode_batch(&fields, Compression::None, &records).unwrap()
    }

    fn fetched(blob: Bytes, aborted: Vec<AbortedTransaction>) -> FetchedPartition {
        FetchedPartition {
            topic: "t".into(),
            topic_id: None,
            partition: 0,
            error_code: 0,
            high_watermark: 100,
            last_stable_offset: 100,
            log_start_offset: 0,
            aborted_transactions: aborted,
            records: blob,
            diverging_epoch: None,
        }
    }

    /// An aborted transaction, its marker, then a committed transaction of the same producer:
    /// the committed records go, the aborted ones do not (each aborted entry is used once).
    #[test]
    fn a_committed_transaction_after_an_aborted_one_of_the_same_producer_goes() {
        let mut blob = BytesMut::new();
        blob.extend_from_slice(&batch(0, 4, 7, false));
        blob.extend_from_slice(&batch(4, 1, 7, true));
        blob.extend_from_slice(&batch(5, 4, 7, false));
        blob.extend_from_slice(&batch(9, 1, 7, true));
        let aborted = vec![AbortedTransaction {
            producer_id: 7,
            first_offset: 0,
        }];
        let mut planner = PartitionPlanner::new(0, None, 0);
        let plan = planner.plan(&fetched(blob.freeze(), aborted)).unwrap();
        assert_eq!(plan.outgoing.len(), 1, "{plan:?}");
        assert_eq!(
            plan.outgoing[0].source,
            SourceOffsets::Contiguous { first: 5, count: 4 }
        );
        assert_eq!(plan.next_offset, 10);
    }
}
