//! One source partition as the data path sees it: its planner, the batches queued for the
//! target, what the target acknowledged (the offset map) and the producer identity it is
//! written under.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::forward::{Outgoing, PartitionPlanner, ProducerIdentity, SourceOffsets};
use crate::mirror::{offsets_mode_from, OffsetsMode};
use crate::offsets::OffsetMap;
use crate::replicate::progress::{Progress, Stored, Writer};

/// A source partition: its topic name (shared, so the per-round lookups by the names in Fetch
/// answers clone no string) and index.
pub type PartKey = (Arc<str>, i32);

/// The data path's state of one source partition.
#[derive(Debug)]
pub struct PartState {
    /// Source topic.
    pub source_topic: String,
    /// Remote topic on the target.
    pub target_topic: String,
    /// Partition index (the same on both sides).
    pub partition: i32,
    /// Turns fetched batches into batches for the target.
    pub planner: PartitionPlanner,
    /// Batches planned and not yet acknowledged, oldest first.
    pub queue: VecDeque<Outgoing>,
    /// Bytes of `queue`.
    pub queued_bytes: usize,
    /// Batches at the head of `queue` sent and not yet acknowledged.
    pub in_flight: usize,
    /// Bumped on every rewind; answers to requests sent before it are ignored.
    pub epoch: u64,
    /// What is on the target: the exact source-to-target offset map, whose end is the
    /// acknowledged position.
    pub map: OffsetMap,
    /// Last position written to the progress topic (`None`: the start is not durable yet,
    /// and nothing is written for the partition until it is).
    pub flushed: Option<Progress>,
    /// target - source of the last offset sync emitted.
    pub synced_delta: Option<i64>,
    /// Records acknowledged since the partition was taken up.
    pub records: u64,
    /// Batch bytes acknowledged since the partition was taken up.
    pub bytes: u64,
    /// The source's high watermark at the last Fetch answer.
    pub source_end: i64,
    /// Why the partition stopped (`None`: running).
    pub failed: Option<String>,
    /// Mirror flows: destination offsets still equal source offsets.
    pub identical: bool,
    /// Consecutive OutOfOrderSequenceNumber answers resent.
    pub sequence_retries: u32,
    /// The producer identity this partition is written under on the target, with the
    /// sequence after the last acknowledged batch.
    pub writer: Writer,
    /// The source topic is a heartbeats topic (its batches give the heartbeat latency).
    pub heartbeats: bool,
    /// The connection carrying the batches in flight (while `in_flight > 0`): more are sent
    /// only on the same one, since a broker orders requests per connection only.
    pub connection: u64,
    /// The source topic's id the position belongs to (`None`: not known).
    pub topic_id: Option<[u8; 16]>,
    /// Source records deleted by retention before they could be replicated.
    pub lost_records: u64,
    /// Fetch answers in a row saying the position lies beyond the source log's end.
    pub beyond_end: u32,
    /// The position is out of range and the log start was asked for: not fetched until the
    /// answer is in (see [`super::DataPath::handle_log_start`]).
    pub awaiting_log_start: bool,
    /// The source leader epoch of the batch holding the last offset below the acknowledged
    /// position (-1: none read yet).
    pub acked_epoch: i32,
    /// The largest batch fetched so far (bytes): a Fetch asks the partition for at least this
    /// much, so a batch above the partition's share of the buffer still comes whole.
    pub largest_batch: usize,
}

/// What a new [`PartState`] starts from.
#[derive(Debug, Clone)]
pub struct PartStart {
    /// Source topic.
    pub topic: String,
    /// Remote topic on the target.
    pub remote: String,
    /// Partition index.
    pub partition: i32,
    /// What is on the target; its end is where the partition continues.
    pub map: OffsetMap,
    /// The producer identity and next sequence the partition is written under.
    pub writer: Writer,
    /// Whether `map`'s end is already durable in the progress topic.
    pub flushed: bool,
    /// Stopped from the start for this reason.
    pub failed: Option<String>,
    /// Mirror flows: offsets are still identical to the source's.
    pub identical: bool,
    /// The source topic's id.
    pub topic_id: Option<[u8; 16]>,
    /// The source topic is a heartbeats topic.
    pub heartbeats: bool,
    /// The source leader epoch of the last record below `map`'s end, when known.
    pub leader_epoch: Option<i32>,
}

impl PartStart {
    /// A running partition continuing at `map`'s end under `writer`: not durable yet, not a
    /// mirror with identical offsets, with no topic id or leader epoch known.
    pub fn new(topic: &str, remote: &str, partition: i32, map: OffsetMap, writer: Writer) -> Self {
        PartStart {
            topic: topic.to_string(),
            remote: remote.to_string(),
            partition,
            map,
            writer,
            flushed: false,
            failed: None,
            identical: false,
            topic_id: None,
            heartbeats: false,
            leader_epoch: None,
        }
    }
}

impl PartState {
    /// A partition continuing at `start.map`'s end, under rewind counter `epoch`.
    pub fn new(start: PartStart, epoch: u64) -> PartState {
        let source_next = start.map.source_next();
        let producer = Some(ProducerIdentity {
            id: start.writer.producer_id,
            epoch: start.writer.producer_epoch,
        });
        PartState {
            source_topic: start.topic,
            target_topic: start.remote,
            partition: start.partition,
            planner: PartitionPlanner::new(source_next, producer, start.writer.next_sequence)
                .after_epoch(start.leader_epoch),
            queue: VecDeque::new(),
            queued_bytes: 0,
            in_flight: 0,
            epoch,
            flushed: start.flushed.then(|| Progress::from(&start.map)),
            map: start.map,
            synced_delta: None,
            records: 0,
            bytes: 0,
            source_end: source_next,
            failed: start.failed,
            identical: start.identical,
            sequence_retries: 0,
            writer: start.writer,
            heartbeats: start.heartbeats,
            connection: 0,
            topic_id: start.topic_id,
            lost_records: 0,
            beyond_end: 0,
            awaiting_log_start: false,
            acked_epoch: start.leader_epoch.unwrap_or(-1),
            largest_batch: 0,
        }
    }

    /// What a progress record stores for the acknowledged position.
    pub fn stored(&self) -> Stored {
        Stored {
            map: self.map.clone(),
            writer: Some(self.writer),
            topic_id: self.topic_id,
            leader_epoch: (self.acked_epoch >= 0).then_some(self.acked_epoch),
        }
    }

    /// The acknowledged position.
    pub fn acked(&self) -> Progress {
        Progress::from(&self.map)
    }

    /// The identity the planner writes batches under.
    pub fn producer(&self) -> Option<ProducerIdentity> {
        Some(ProducerIdentity {
            id: self.writer.producer_id,
            epoch: self.writer.producer_epoch,
        })
    }

    /// Whether a batch waits to be sent: queued beyond those in flight, fewer than `max` in
    /// flight.
    pub fn has_unsent(&self, max_in_flight: usize) -> bool {
        self.queue.len() > self.in_flight && self.in_flight < max_in_flight
    }

    /// Forgets the batches in flight: they go again (same sequences) from the oldest
    /// unacknowledged one, and answers to the requests carrying them are ignored.
    pub fn rewind(&mut self) {
        self.in_flight = 0;
        self.epoch += 1;
    }

    /// Stops the partition for `why`: nothing more is fetched or written for it; what was
    /// acknowledged stays. Returns false if it had stopped already.
    pub fn stop(&mut self, why: String) -> bool {
        if self.failed.is_some() {
            return false;
        }
        self.failed = Some(why);
        self.queue.clear();
        self.queued_bytes = 0;
        self.rewind();
        true
    }

    /// After the map of a mirror partition changed: if its offsets stopped being identical to
    /// the source's, says so once, naming the partition.
    pub fn note_offsets_mode(&mut self, flow: &str, target: &str) {
        if !self.identical {
            return;
        }
        // Identical when it started (checked at take-up): it must stay so from its start.
        let mode = offsets_mode_from(&self.map, true, self.map.source_start());
        if mode != OffsetsMode::Identical {
            self.identical = false;
            tracing::warn!(flow = %flow, cluster = %target, topic = %self.target_topic, partition = self.partition, "offsets are now {mode}; consumer offsets are translated through the offset map");
        }
    }

    /// When nothing is queued and the planner has moved past the map's end (control batches,
    /// aborted data, records deleted by compaction): those offsets became no target record,
    /// so they are accounted for at once.
    pub fn account_dropped_tail(&mut self) {
        if self.queue.is_empty() && self.planner.next_offset() > self.map.source_next() {
            let from = self.map.source_next();
            self.map.record_dropped(from, self.planner.next_offset());
            self.acked_epoch = self.acked_epoch.max(self.planner.last_fetched_epoch());
        }
    }
}

/// Records an acknowledged batch whose first record landed at target offset `base`, and any
/// source offsets it covers without a record (a dropped tail).
pub fn record_acked(map: &mut OffsetMap, out: &Outgoing, base: i64) -> Result<(), String> {
    map.record_batch(&out.source, base)
        .map_err(|e| e.to_string())?;
    if out.source_next > map.source_next() {
        let from = map.source_next();
        map.record_dropped(from, out.source_next);
    }
    Ok(())
}

/// The source offset of a batch's first record (-1 when it lists none).
pub fn first_source_offset(out: &Outgoing) -> i64 {
    match &out.source {
        SourceOffsets::Contiguous { first, .. } => *first,
        SourceOffsets::Listed(v) => v.first().copied().unwrap_or(-1),
    }
}
