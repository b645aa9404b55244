//! The data path of a flow as a state machine without I/O: which Fetch requests to send to
//! which source leader, what their answers become, which Produce requests to send to which
//! target leader on which connection, and what their answers mean for each partition (acknowledged,
//! resent with the same sequences, taken up again, stopped).
//!
//! Inputs are `handle_*` calls (answers, failures, the time), outputs are `poll_*` calls
//! (requests to write, events for the control plane, the next deadline). It never waits and
//! never touches a socket: leaders and connections come from a synchronous [`Topology`], and
//! what it does not know yet is listed in [`Missing`] for the shell to look up beside it. The
//! shell (`super::flow`) writes the requests and feeds the answers back; the tests in
//! `tests.rs` drive it through a simulated broker instead.

mod budget;
mod fetching;
mod outcome;
mod part;
mod producing;
mod stats;
#[cfg(test)]
mod tests;
pub mod timers;

pub use fetching::{diverged_message, recreated_message, topic_id_text};
pub use part::{first_source_offset, record_acked, PartKey, PartStart, PartState};
pub use stats::Stat;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use crate::observe::Side;
use crate::protocol::fetch::{FetchLimits, FetchPartitionSpec};
use crate::protocol::produce::ProduceTopic;
use crate::records::recompress::Recompress;
use crate::replicate::progress::{Progress, Stored};
use timers::TimerTable;

/// Produce requests in flight per flow, and batches in flight per partition (Kafka's limit for
/// an idempotent producer is 5).
pub const MAX_IN_FLIGHT: usize = 5;

/// The least a partition's share of the buffer is, however many partitions share it: a
/// typical batch (strait's bench writes 64 KiB batches; a partition whose batches are larger
/// is asked for its largest).
pub const MIN_PARTITION_SHARE: usize = 64 << 10;

/// Requests in flight from which a Produce request that is not full is held back.
pub const HOLD_BELOW_IN_FLIGHT: usize = 2;

/// Batch bytes at which a Produce request counts as full (librdkafka's default request size).
pub const PRODUCE_REQUEST_BYTES: usize = 1 << 20;

/// Fetch answers in a row that put a partition's position beyond the source log's end before
/// it stops (one could be a leader that has not caught up yet).
pub const BEYOND_END_STOP: u32 = 3;

/// Fresh starts of a partition in a row after a refused sequence, without an acknowledgement,
/// before it stops.
pub const MAX_RESYNCS: u32 = 3;

/// Fresh starts of a partition in a row after a failed request, without an acknowledgement,
/// before it stops.
pub const MAX_FAILED_RESYNCS: u32 = 10;

/// How long fetching pauses after a Fetch request could not be written or answered.
pub const FETCH_BACKOFF: Duration = Duration::from_millis(200);

/// Longest the Fetch right after an answer that brought data waits (see [`next_fetch_wait`]).
pub const FLOWING_FETCH_WAIT: Duration = Duration::from_millis(10);

/// What the data path needs to know of its flow.
#[derive(Debug, Clone)]
pub struct PathSettings {
    /// The flow's name (logs and metrics).
    pub flow: String,
    /// The source cluster's name.
    pub source: String,
    /// The target cluster's name.
    pub target: String,
    /// Most batch bytes queued for the target before fetching pauses.
    pub buffer_bytes: usize,
    /// `max_bytes` of a Fetch request.
    pub fetch_max_bytes: i32,
    /// `max_wait_ms` of a Fetch request of an idle flow.
    pub fetch_max_wait: Duration,
    /// A mirror flow: the destination is read-only and a foreign write stops the partition.
    pub mirrored: bool,
    /// The flow's bandwidth cap on fetched record bytes (`None`: unlimited).
    pub max_bytes_per_second: Option<u64>,
    /// What uncompressed batches become before they are queued for the target.
    pub recompress: Recompress,
}

/// Leaders and connections as the clients know them now, without asking any broker.
pub trait Topology {
    /// Leader node and leader epoch of a source partition.
    fn source_leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)>;
    /// The id of a source topic as the metadata has it.
    fn source_topic_id(&self, topic: &str) -> Option<[u8; 16]>;
    /// Whether the data connection to source broker `node` is open.
    fn source_connected(&self, node: i32) -> bool;
    /// Leader node of a target partition.
    fn target_leader(&self, topic: &str, partition: i32) -> Option<i32>;
    /// The id of the open data connection to target broker `node`.
    fn target_connection(&self, node: i32) -> Option<u64>;
}

/// What [`Topology`] did not know when the data path asked: the shell looks it up (metadata,
/// connecting) beside the data path and calls [`DataPath::replan`] when done.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Missing {
    /// Source partitions without a known leader.
    pub source_partitions: BTreeSet<(String, i32)>,
    /// Source brokers without an open data connection.
    pub source_nodes: BTreeSet<i32>,
    /// Target partitions without a known leader.
    pub target_partitions: BTreeSet<(String, i32)>,
    /// Target brokers without an open data connection.
    pub target_nodes: BTreeSet<i32>,
}

impl Missing {
    /// Whether nothing is missing.
    pub fn is_empty(&self) -> bool {
        self.source_partitions.is_empty()
            && self.source_nodes.is_empty()
            && self.target_partitions.is_empty()
            && self.target_nodes.is_empty()
    }
}

/// Names a request the data path asked the shell to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// A Fetch request to write to a source leader.
#[derive(Debug, Clone)]
pub struct FetchOrder {
    /// Its id, for [`DataPath::handle_fetch`].
    pub id: RequestId,
    /// The source broker.
    pub leader: i32,
    /// Its partitions, with the offsets asked for.
    pub specs: Vec<FetchPartitionSpec>,
    /// Its limits.
    pub limits: FetchLimits,
}

/// A Produce request to write to a target leader.
#[derive(Debug, Clone)]
pub struct ProduceOrder {
    /// Its id, for [`DataPath::handle_produce`].
    pub id: RequestId,
    /// The target broker.
    pub leader: i32,
    /// The connection the data path planned it for (the partitions' earlier batches are on it).
    pub connection: u64,
    /// Its batches.
    pub topics: Vec<ProduceTopic>,
}

/// What the data path tells the control plane.
#[derive(Debug, Clone)]
pub enum Event {
    /// A partition's position is out of range: the shell reads the log start and answers with
    /// [`DataPath::handle_log_start`].
    LogStartWanted {
        /// The partition.
        key: PartKey,
        /// Its position.
        at: i64,
    },
    /// A partition's position lies beyond the source log's end, answer after answer: the
    /// shell finds out why and stops it.
    BeyondEnd(PartKey),
    /// A source topic's id changed under a running partition (deleted and created again).
    Recreated {
        /// The partition.
        key: PartKey,
        /// The id its position belongs to.
        was: [u8; 16],
        /// The id the metadata has now.
        now: [u8; 16],
    },
    /// A mirror partition stopped for good (a foreign write, identical offsets broken).
    Diverged {
        /// Source topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Why.
        why: String,
    },
    /// A partition was dropped to be taken up again from what the target holds, from this
    /// acknowledged position.
    Retake {
        /// The partition.
        key: PartKey,
        /// Its acknowledged position and writer.
        stored: Stored,
    },
    /// Topics should be looked at again soon (one may be gone).
    RefreshTopics,
    /// Cached metadata of this source topic is stale.
    InvalidateSource(String),
    /// Cached metadata of this target topic is stale.
    InvalidateTarget(String),
}

/// Counts of the data path's requests, logged when a flow stops: how full its requests were.
#[derive(Debug, Default, Clone, Copy)]
pub struct Traffic {
    /// Fetch plannings.
    pub rounds: u64,
    /// Fetch requests.
    pub fetches: u64,
    /// Fetch requests sent in an open fetch session (KIP-227): incremental ones.
    pub incremental_fetches: u64,
    /// Batches fetched.
    pub fetched_batches: u64,
    /// Bytes of those.
    pub fetched_bytes: u64,
    /// Bytes of batches cut off at the end of Fetch answers (at `max_bytes`), fetched again.
    pub cut_bytes: u64,
    /// Produce requests.
    pub produces: u64,
    /// Batches produced.
    pub produced_batches: u64,
    /// Bytes of those.
    pub produced_bytes: u64,
    /// Batches re-compressed (`recompress`) before they were queued.
    pub recompressed_batches: u64,
    /// Bytes those batches had as fetched, and have re-compressed.
    pub recompressed_bytes: (u64, u64),
}

/// The data path's deadlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// No Fetch is planned before it (after a failed one).
    FetchBackoff,
    /// The bandwidth budget has refilled enough for a Fetch.
    BudgetRefill,
}

/// A Fetch request outstanding, with the offset asked for each partition: an answer for a
/// partition that has moved on since (reassigned, resumed) is ignored.
#[derive(Debug)]
struct Fetching {
    id: RequestId,
    leader: i32,
    /// Its `max_wait`.
    wait: Duration,
    offsets: HashMap<PartKey, i64>,
}

/// A Produce request in flight and the partitions it carries (with their epoch at send time).
#[derive(Debug)]
struct InFlight {
    id: RequestId,
    members: Vec<(PartKey, u64)>,
}

/// The data path of one flow (see the module documentation).
pub struct DataPath {
    cfg: PathSettings,
    /// The partitions it moves.
    parts: BTreeMap<PartKey, PartState>,
    /// Produce requests in flight, oldest first.
    in_flight: VecDeque<InFlight>,
    /// Fetch requests outstanding (at most one per source leader).
    fetching: Vec<Fetching>,
    /// Partitions dropped to be taken up again, and how often in a row without an
    /// acknowledgement: (sequence refused, request failed).
    resyncs: HashMap<PartKey, (u32, u32)>,
    /// Topics whose partitions move no data now (paused mirrors).
    held: HashSet<String>,
    /// The whole flow is paused: no partition moves data.
    paused: bool,
    /// Whether writing into the target is allowed (the membership lease is valid).
    may_write: bool,
    /// Something changed that can give a leader with no Fetch outstanding partitions to fetch.
    replan: bool,
    /// `max_wait` of the next Fetch to each source leader (see [`next_fetch_wait`]; a leader
    /// not listed: the configured wait).
    waits: HashMap<i32, Duration>,
    /// Where the rewind counter of the next partition taken up starts.
    epoch_base: u64,
    next_id: u64,
    /// Requests and bytes moved.
    pub traffic: Traffic,
    timers: TimerTable<Timer>,
    /// The bandwidth cap's token bucket (made at the first plan when capped).
    budget: Option<budget::Budget>,
    events: VecDeque<Event>,
    missing: Missing,
    /// Source records lost to retention per partition since start: a partition taken up again
    /// keeps showing its losses.
    lost: HashMap<PartKey, u64>,
    /// What was counted and not yet handed out.
    stats: VecDeque<Stat>,
}

impl DataPath {
    /// A data path with no partitions.
    pub fn new(cfg: PathSettings) -> DataPath {
        DataPath {
            cfg,
            parts: BTreeMap::new(),
            in_flight: VecDeque::new(),
            fetching: Vec::new(),
            resyncs: HashMap::new(),
            held: HashSet::new(),
            paused: false,
            may_write: true,
            replan: true,
            waits: HashMap::new(),
            epoch_base: 0,
            next_id: 0,
            traffic: Traffic::default(),
            timers: TimerTable::default(),
            budget: None,
            events: VecDeque::new(),
            missing: Missing::default(),
            lost: HashMap::new(),
            stats: VecDeque::new(),
        }
    }

    /// The rewind counter a partition taken up now starts at: an answer to a request sent for
    /// an earlier take-up of the same partition never matches it.
    pub fn next_epoch(&mut self) -> u64 {
        self.epoch_base += 1 << 32;
        self.epoch_base
    }

    /// Starts moving a partition.
    pub fn add(&mut self, key: PartKey, mut state: PartState) {
        state.lost_records = self.lost.get(&key).copied().unwrap_or(0);
        self.parts.insert(key, state);
        self.replan = true;
    }

    /// Stops moving a partition; answers still on their way for it are ignored.
    pub fn remove(&mut self, key: &PartKey) -> Option<PartState> {
        self.resyncs.remove(key);
        self.parts.remove(key)
    }

    /// Drops every partition and forgets the requests in flight (the membership was lost:
    /// nothing more is written, and their answers are not applied).
    pub fn clear(&mut self) {
        self.parts.clear();
        self.in_flight.clear();
        self.resyncs.clear();
    }

    /// Stops partition `key` for `why` (logged once, counted as error `kind`). Returns false
    /// when it is not running.
    pub fn stop_partition(&mut self, key: &PartKey, why: String, kind: &'static str) -> bool {
        let Some(st) = self.parts.get_mut(key) else {
            return false;
        };
        if !st.stop(why.clone()) {
            return false;
        }
        tracing::error!(flow = %self.cfg.flow, "{why}");
        self.stats.push_back(Stat::Error { kind });
        true
    }

    /// Topics whose partitions move no data (paused mirrors).
    pub fn set_held(&mut self, held: HashSet<String>) {
        if held != self.held {
            self.held = held;
            self.replan = true;
        }
    }

    /// Pauses (`true`) or resumes the whole flow: while paused nothing is fetched or
    /// written; what is queued stays queued and answers in flight are still applied.
    pub fn set_paused(&mut self, paused: bool) {
        if paused != self.paused {
            self.paused = paused;
            self.replan = true;
        }
    }

    /// Whether `topic`'s partitions move no data now (the flow or its mirror is paused).
    fn holds(&self, topic: &str) -> bool {
        self.paused || self.held.contains(topic)
    }

    /// Whether writing into the target is allowed now.
    pub fn set_may_write(&mut self, may: bool) {
        self.may_write = may;
    }

    /// Leaders or connections may have changed (looked up, refreshed): plan fetches again.
    pub fn replan(&mut self) {
        self.replan = true;
    }

    /// The partitions it moves (running and stopped), in key order.
    pub fn parts(&self) -> impl ExactSizeIterator<Item = (&PartKey, &PartState)> + Clone + '_ {
        self.parts.iter()
    }

    /// One partition.
    pub fn part(&self, key: &PartKey) -> Option<&PartState> {
        self.parts.get(key)
    }

    /// Partitions a Produce request still awaited carries (running or not).
    pub fn awaiting(&self) -> BTreeSet<PartKey> {
        self.in_flight
            .iter()
            .flat_map(|f| f.members.iter().map(|(k, _)| k.clone()))
            .collect()
    }

    /// A progress record saying `at` landed for take-up `take_up` of a partition (ignored
    /// when the partition was taken up again since).
    pub fn note_flushed(&mut self, key: &PartKey, take_up: u64, at: Progress) {
        if let Some(st) = self.parts.get_mut(key) {
            if st.epoch >> 32 == take_up {
                st.flushed = Some(at);
            }
        }
    }

    /// An offset sync with source-to-target `delta` landed for a partition.
    pub fn note_synced(&mut self, key: &PartKey, delta: i64) {
        if let Some(st) = self.parts.get_mut(key) {
            st.synced_delta = Some(delta);
        }
    }

    /// Produce requests in flight.
    pub fn in_flight_len(&self) -> usize {
        self.in_flight.len()
    }

    /// Fetch requests outstanding.
    pub fn fetching_len(&self) -> usize {
        self.fetching.len()
    }

    /// Whether a Produce request carrying the partition is still awaited.
    pub fn awaits_answer(&self, topic: &str, partition: i32) -> bool {
        self.in_flight.iter().any(|f| {
            f.members
                .iter()
                .any(|((t, p), _)| **t == *topic && *p == partition)
        })
    }

    /// The time has come to `now`: deadlines due are acted on.
    pub fn handle_timeout(&mut self, now: Instant) {
        for t in self.timers.expire(now) {
            match t {
                Timer::FetchBackoff | Timer::BudgetRefill => self.replan = true,
            }
        }
    }

    /// The next deadline (call [`DataPath::handle_timeout`] then).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// The next thing counted, for the metrics.
    pub fn poll_stat(&mut self) -> Option<Stat> {
        self.stats.pop_front()
    }

    /// The next event for the control plane.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// What [`Topology`] did not know since the last call.
    pub fn take_missing(&mut self) -> Missing {
        std::mem::take(&mut self.missing)
    }

    fn request_id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId(self.next_id)
    }

    /// Per-partition share of the buffer (at least [`MIN_PARTITION_SHARE`]): a partition is
    /// fetched from while it has less than this queued, and a Fetch asks each partition for
    /// this much (or its largest batch, if larger).
    ///
    /// So the buffer holds batches of every partition, not a few partitions' worth of whole
    /// Fetch answers, and each Produce request (one batch per partition) carries a batch of
    /// every partition: over a link with a long round trip, what is on its way is bounded by
    /// [`MAX_IN_FLIGHT`] requests, so their size is what fills the link.
    fn per_partition_cap(&self) -> usize {
        (self.cfg.buffer_bytes / self.parts.len().max(1)).max(MIN_PARTITION_SHARE)
    }
}

/// The `max_wait` of the next Fetch to a leader, after an answer to one that waited `asked`:
/// [`FLOWING_FETCH_WAIT`] right after an answer that brought data (records of a heartbeats
/// topic do not count: the flow's own heartbeat every second is no flow of data), then twice
/// the last wait after each empty answer, up to the configured wait (an idle flow long-polls
/// with it).
///
/// Right after data, the next records are due any moment, and a broker that holds a long poll
/// until `max_wait_ms` runs out (rather than answering once `min_bytes` are there, as Apache
/// Kafka does) would otherwise add the whole wait to the replication latency; doubling keeps
/// that added wait below about twice the time since the last data. A sparse trickle costs a
/// few empty answers per record, not a 10 ms poll of every partition while it lasts. Never
/// zero unless configured so: an outstanding Fetch holds nothing else up, and an empty answer
/// in one round trip would only send the next one at once.
pub fn next_fetch_wait(asked: Duration, brought_data: bool, configured: Duration) -> Duration {
    if brought_data {
        configured.min(FLOWING_FETCH_WAIT)
    } else {
        asked.saturating_mul(2).min(configured)
    }
}
