//! What the control actor tells the pump ([`Command`]), what the pump tells it back
//! ([`PumpEvent`]), and the copy of the partitions the pump hands out ([`PathView`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use tokio::sync::oneshot;

use crate::offsets::OffsetMap;
use crate::replicate::path::{PartKey, PartStart, PartState, Traffic};
use crate::replicate::progress::{Progress, Stored};

/// An order from the control actor. The pump applies every queued command between two rounds
/// of its loop, in the order they were sent, without waiting for anything.
#[derive(Debug)]
pub enum Command {
    /// Start moving a partition from `start`. Ignored when it already runs; refused (and
    /// [`PumpEvent::RefreshTopics`] sent) while a Produce request that carried it is still
    /// awaited, since what that wrote must be visible to the take-up's read-back first.
    Add {
        /// The partition.
        key: PartKey,
        /// Where it continues and under which writer.
        start: Box<PartStart>,
    },
    /// Stop a partition for `why`, counted as error `kind`: nothing more is fetched or
    /// written for it, what was acknowledged stays.
    Stop {
        /// The partition.
        key: PartKey,
        /// Why (logged once, shown in the status).
        why: String,
        /// The error counter.
        kind: &'static str,
    },
    /// Stop a partition found written by something else, but only if it still ends at
    /// `target_next` on the target with nothing queued or in flight; replies whether it did.
    StopIfIdleAt {
        /// The partition.
        key: PartKey,
        /// The target position the check saw.
        target_next: i64,
        /// Why.
        why: String,
        /// Whether the partition stopped.
        reply: oneshot::Sender<bool>,
    },
    /// Drop partitions once every Produce request in flight is answered (no new one is
    /// written meanwhile); replies with their last state, to store their progress.
    Release {
        /// The partitions.
        keys: Vec<PartKey>,
        /// Their last state.
        reply: oneshot::Sender<PathView>,
    },
    /// Drop every partition without applying answers still on their way (the group
    /// membership was lost: nothing more may be written).
    Clear,
    /// Topics whose partitions move no data now (paused mirrors).
    Hold(HashSet<String>),
    /// The whole flow paused (`true`) or resumed: nothing is fetched or written while paused.
    Pause(bool),
    /// Leaders may have moved: plan fetches again.
    Replan,
    /// Progress records landed: these partitions' positions are durable.
    Flushed(Vec<Flushed>),
    /// Offset syncs landed, with the source-to-target delta each recorded.
    Synced(Vec<(PartKey, i64)>),
    /// A copy of the partitions, answered between two rounds.
    Snapshot(oneshot::Sender<PathView>),
    /// Stop: answers to Produce requests in flight are awaited and applied, queued batches
    /// are abandoned; replies with the last state and the traffic counters, then the pump ends.
    Drain(oneshot::Sender<(PathView, Traffic)>),
}

/// A progress record that landed, and what it says of its partition.
#[derive(Debug, Clone)]
pub struct Flushed {
    /// The partition.
    pub key: PartKey,
    /// The take-up it belongs to: a partition taken up again since ignores it.
    pub take_up: u64,
    /// The position written.
    pub at: Progress,
}

/// What the pump tells the control actor.
#[derive(Debug)]
pub enum PumpEvent {
    /// A partition's position lies beyond the source log's end, answer after answer: the
    /// control actor finds out why and stops it.
    BeyondEnd(PartKey),
    /// A mirror partition stopped for good (a foreign write, identical offsets broken).
    Diverged {
        /// Source topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// Why.
        why: String,
    },
    /// A partition was dropped to be taken up again from what the target holds.
    Retake {
        /// The partition.
        key: PartKey,
        /// Its acknowledged position and writer.
        stored: Stored,
    },
    /// Topics should be looked at again soon (one may be gone, or a take-up was refused).
    RefreshTopics,
}

/// A copy of the pump's partitions at one moment.
#[derive(Debug, Default, Clone)]
pub struct PathView {
    /// The running (and stopped) partitions.
    pub parts: BTreeMap<PartKey, PartView>,
    /// Partitions a Produce request still awaited carries (running or not).
    pub awaiting: BTreeSet<PartKey>,
}

impl PathView {
    /// The partitions of source topic `topic`.
    pub fn of_topic<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = &'a PartView> + 'a {
        self.parts
            .iter()
            .filter(move |(k, _)| *k.0 == *topic)
            .map(|(_, v)| v)
    }

    /// Whether a partition of source topic `topic` runs.
    pub fn has_topic(&self, topic: &str) -> bool {
        self.of_topic(topic).next().is_some()
    }
}

/// One partition as the control actor sees it.
#[derive(Debug, Clone)]
pub struct PartView {
    /// Source topic.
    pub source_topic: String,
    /// Remote topic on the target.
    pub target_topic: String,
    /// Partition index.
    pub partition: i32,
    /// The next source offset planned.
    pub next_offset: i64,
    /// Why it stopped (`None`: running).
    pub failed: Option<String>,
    /// Nothing queued and nothing in flight.
    pub idle: bool,
    /// What its progress record says now: the offset map (what is on the target, its end the
    /// acknowledged position), the writer, the topic id and the leader epoch.
    pub stored: Stored,
    /// Last position written to the progress topic.
    pub flushed: Option<Progress>,
    /// The take-up it belongs to.
    pub take_up: u64,
    /// Source-to-target delta of the last offset sync.
    pub synced_delta: Option<i64>,
    /// Records acknowledged since the take-up.
    pub records: u64,
    /// Batch bytes acknowledged since the take-up.
    pub bytes: u64,
}

impl PartView {
    /// The view of `st`.
    pub fn of(st: &PartState) -> PartView {
        PartView {
            source_topic: st.source_topic.clone(),
            target_topic: st.target_topic.clone(),
            partition: st.partition,
            next_offset: st.planner.next_offset(),
            failed: st.failed.clone(),
            idle: st.queue.is_empty() && st.in_flight == 0,
            stored: st.stored(),
            flushed: st.flushed,
            take_up: st.epoch >> 32,
            synced_delta: st.synced_delta,
            records: st.records,
            bytes: st.bytes,
        }
    }

    /// What is on the target; its end is the acknowledged position.
    pub fn map(&self) -> &OffsetMap {
        &self.stored.map
    }

    /// The acknowledged position.
    pub fn acked(&self) -> Progress {
        Progress::from(&self.stored.map)
    }

    /// The source topic's id the position belongs to.
    pub fn topic_id(&self) -> Option<[u8; 16]> {
        self.stored.topic_id
    }

    /// Whether its progress record is behind the acknowledged position.
    pub fn unflushed(&self) -> bool {
        self.flushed != Some(self.acked())
    }
}
