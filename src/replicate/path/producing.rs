//! The target side of the data path: which batches go in which Produce request on which
//! connection, and what each partition's answer means.

use super::outcome::{classify, Outcome};
use super::*;
use crate::error::Context;
use crate::protocol::error_code;
use crate::protocol::produce::{ProducePartition, ProducedPartition};

/// One target leader's partitions with a batch ready to send, and how many of its partitions
/// have batches queued at all (sent or not).
#[derive(Default)]
struct LeaderBatches<'a> {
    ready: Vec<(&'a PartKey, &'a PartState)>,
    active: usize,
}

/// A Produce request decided on, before it is counted in flight.
struct Planned {
    leader: i32,
    connection: u64,
    topics: Vec<ProduceTopic>,
    members: Vec<(PartKey, u64)>,
    bytes: usize,
}

/// The request carrying the next unsent batch of each of `going`, and its members with
/// their epochs.
fn build_request(going: &[&(&PartKey, &PartState)]) -> (Vec<ProduceTopic>, Vec<(PartKey, u64)>) {
    let mut topics: Vec<ProduceTopic> = Vec::new();
    let mut members = Vec::with_capacity(going.len());
    for (k, st) in going {
        let Some(next) = st.queue.get(st.in_flight) else {
            continue;
        };
        let part = ProducePartition {
            partition: k.1,
            batch: next.batch.clone(),
        };
        match topics.iter_mut().find(|t| t.name == st.target_topic) {
            Some(t) => t.partitions.push(part),
            None => topics.push(ProduceTopic {
                name: st.target_topic.clone(),
                partitions: vec![part],
            }),
        }
        members.push(((*k).clone(), st.epoch));
    }
    (topics, members)
}

impl DataPath {
    /// Produce requests to write now: one per target leader, carrying the next unsent batch
    /// of every partition that has one (up to [`MAX_IN_FLIGHT`] per partition). They count as
    /// in flight at once; the shell reports each as sent ([`DataPath::handle_produce_sent`])
    /// or not ([`DataPath::handle_produce_unsent`]).
    ///
    /// Adaptive batching: while [`HOLD_BELOW_IN_FLIGHT`] requests are already in flight, a
    /// request that is not yet full (under [`PRODUCE_REQUEST_BYTES`] and not carrying every
    /// partition the leader could take) is held back; the broker is busy anyway, and the next
    /// answer brings another chance to send it fuller. An idle pipeline sends at once.
    pub fn poll_produce(&mut self, topo: &dyn Topology) -> Vec<ProduceOrder> {
        if !self.may_write || self.in_flight.len() >= MAX_IN_FLIGHT {
            return Vec::new();
        }
        let planned = self.plan_requests(topo);
        let mut orders = Vec::with_capacity(planned.len());
        for Planned {
            leader,
            connection,
            topics,
            members,
            bytes,
        } in planned
        {
            let id = self.request_id();
            self.traffic.produces += 1;
            self.traffic.produced_batches += members.len() as u64;
            self.traffic.produced_bytes += bytes as u64;
            for (k, _) in &members {
                if let Some(st) = self.parts.get_mut(k) {
                    st.in_flight += 1;
                    st.connection = connection;
                }
            }
            self.in_flight.push_back(InFlight { id, members });
            orders.push(ProduceOrder {
                id,
                leader,
                connection,
                topics,
            });
        }
        orders
    }

    /// One request per target leader with batches ready (see [`DataPath::poll_produce`]),
    /// noting in [`Missing`] the leaders and connections not known.
    fn plan_requests(&mut self, topo: &dyn Topology) -> Vec<Planned> {
        let mut planned = Vec::new();
        let mut by_leader: BTreeMap<i32, LeaderBatches> = BTreeMap::new();
        for (k, s) in &self.parts {
            // Paused mirrors keep what they queued and send nothing. Nothing is written for
            // a partition before its starting position is durable: a crash then always
            // leaves a progress record to resume from.
            if s.queue.is_empty() || self.holds(&k.0) || s.failed.is_some() || s.flushed.is_none() {
                continue;
            }
            let Some(leader) = topo.target_leader(&s.target_topic, k.1) else {
                self.missing
                    .target_partitions
                    .insert((s.target_topic.clone(), k.1));
                continue;
            };
            let entry = by_leader.entry(leader).or_default();
            entry.active += 1;
            if s.has_unsent(MAX_IN_FLIGHT) {
                entry.ready.push((k, s));
            }
        }
        let hold = self.in_flight.len() >= HOLD_BELOW_IN_FLIGHT;
        for (leader, LeaderBatches { ready, active }) in by_leader {
            if ready.is_empty() {
                continue;
            }
            let Some(conn) = topo.target_connection(leader) else {
                self.missing.target_nodes.insert(leader);
                continue;
            };
            // A partition whose earlier batches are on another connection waits for them:
            // a broker orders requests per connection only.
            let going: Vec<&(&PartKey, &PartState)> = ready
                .iter()
                .filter(|(_, st)| st.in_flight == 0 || st.connection == conn)
                .collect();
            if going.is_empty() {
                continue;
            }
            let bytes: usize = going
                .iter()
                .filter_map(|(_, st)| st.queue.get(st.in_flight))
                .map(|o| o.batch.len())
                .sum();
            if hold && bytes < PRODUCE_REQUEST_BYTES && going.len() < active {
                continue; // not full, and the broker has work: wait for an answer first
            }
            let (topics, members) = build_request(&going);
            planned.push(Planned {
                leader,
                connection: conn,
                topics,
                members,
                bytes,
            });
        }
        planned
    }

    /// Produce request `id` was written on connection `connection` (which may differ from the
    /// one planned when the old one broke in between: the batches in flight there fail and
    /// are read back).
    pub fn handle_produce_sent(&mut self, id: RequestId, connection: u64) {
        let Some(f) = self.in_flight.iter().find(|f| f.id == id) else {
            return;
        };
        for (k, epoch) in &f.members {
            if let Some(st) = self.parts.get_mut(k) {
                if st.epoch == *epoch {
                    st.connection = connection;
                }
            }
        }
    }

    /// Produce request `id` could not be written (the broker could not be reached): its
    /// batches are unsent again.
    pub fn handle_produce_unsent(&mut self, id: RequestId) {
        let Some(i) = self.in_flight.iter().position(|f| f.id == id) else {
            return;
        };
        let Some(f) = self.in_flight.remove(i) else {
            return;
        };
        for (k, epoch) in &f.members {
            if let Some(st) = self.parts.get_mut(k) {
                if st.epoch == *epoch {
                    st.in_flight = st.in_flight.saturating_sub(1);
                }
            }
        }
    }

    /// The answer to Produce request `id` (`Err`: no answer; the broker may or may not have
    /// appended the batches). Batches are acknowledged in order; a retriable error rewinds
    /// the partition so its batches go again with the same sequence numbers (the broker drops
    /// any it already has as duplicates).
    pub fn handle_produce(
        &mut self,
        id: RequestId,
        answer: Result<Vec<ProducedPartition>, String>,
    ) {
        let Some(i) = self.in_flight.iter().position(|f| f.id == id) else {
            return;
        };
        let Some(f) = self.in_flight.remove(i) else {
            return;
        };
        self.replan = true; // queues drained: a leader may have room again
        let results = match answer {
            Ok(r) => r,
            Err(e) => {
                // A blind resend relies on the broker's duplicate detection, which it loses
                // when it expires the producer (by the records' own timestamps, so at once for
                // old data): the partitions are read back from the target instead and continue
                // after what landed.
                tracing::warn!(flow = %self.cfg.flow, "produce request failed; reading its partitions back before writing again: {e}");
                self.stats.push_back(Stat::Retry {
                    side: Side::Target,
                    kind: "produce_request",
                });
                let uncertain: Vec<PartKey> = f
                    .members
                    .iter()
                    .filter(|(k, epoch)| {
                        self.parts
                            .get(k)
                            .is_some_and(|st| st.epoch == *epoch && st.failed.is_none())
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in uncertain {
                    self.resync(k, false);
                }
                return;
            }
        };
        let by_partition: HashMap<(&str, i32), &ProducedPartition> = results
            .iter()
            .map(|r| ((r.topic.as_str(), r.partition), r))
            .collect();
        let mut resync: Vec<(PartKey, bool)> = Vec::new();
        for (k, epoch) in &f.members {
            let answer = match self.parts.get(k) {
                Some(st) if st.epoch == *epoch => by_partition
                    .get(&(st.target_topic.as_str(), k.1))
                    .map(|r| (r.error_code, r.base_offset, r.error_message.clone())),
                _ => continue, // gone, or sent before a rewind: it goes again
            };
            if let Some(again) = self.apply_answer(k, answer) {
                resync.push((k.clone(), again));
            }
        }
        for (k, refused) in resync {
            self.resync(k, refused);
        }
    }

    /// One partition's part of a Produce answer: `(error, base offset, message)`, `None` when
    /// the answer lacks it. Returns `Some(refused)` when the partition is to be taken up again.
    fn apply_answer(
        &mut self,
        k: &PartKey,
        answer: Option<(i16, i64, Option<String>)>,
    ) -> Option<bool> {
        let (flow, tgt) = (&self.cfg.flow, &self.cfg.target);
        let st = self.parts.get_mut(k)?;
        let (error, base, message) = match answer {
            Some((e, b, m)) => (Some(e), b, m),
            None => (None, -1, None),
        };
        match classify(error, st.sequence_retries) {
            Outcome::Acked => {
                self.acknowledge(k, base);
                None
            }
            // A broker that handles pipelined requests out of order can refuse a batch whose
            // predecessor it has not appended yet. Like Kafka's producer, resend from the
            // oldest unacknowledged batch with the same sequences; a gap that persists stops
            // the partition.
            Outcome::ResendFromOldest => {
                st.sequence_retries += 1;
                tracing::warn!(flow = %flow, cluster = %tgt, topic = %st.target_topic, partition = k.1, "OutOfOrderSequenceNumber, resending from the oldest unacknowledged batch (attempt {})", st.sequence_retries);
                st.rewind();
                None
            }
            // The target's producer state for this partition is not what this instance
            // thinks (another writer's late batches landed, or the broker forgot the
            // producer): take the partition up again from what the target holds. Timed out
            // on the broker (`refused` false): the batch may have been appended.
            Outcome::TakeUpAgain { refused } => Some(refused),
            Outcome::Stop => {
                let code = error.unwrap_or(-1);
                let offset = st.queue.front().map(first_source_offset).unwrap_or(-1);
                let msg = Context::of_partition(tgt, &st.target_topic, k.1).line(format_args!(
                    "broker refused the batch of source offset {offset}: {}{}; partition stopped",
                    error_code::name(code),
                    message.map(|m| format!(" ({m})")).unwrap_or_default()
                ));
                tracing::error!(flow = %flow, "{msg}");
                self.stats.push_back(Stat::Error {
                    kind: "produce_refused",
                });
                st.failed = Some(msg);
                st.rewind();
                None
            }
            Outcome::Resend { refresh_metadata } => {
                let code = error.unwrap_or(error_code::UNKNOWN_TOPIC_OR_PARTITION);
                if refresh_metadata {
                    self.events
                        .push_back(Event::InvalidateTarget(st.target_topic.clone()));
                }
                if code == error_code::UNKNOWN_TOPIC_OR_PARTITION {
                    // The remote topic may be gone: the topic refresh finds out soon.
                    self.events.push_back(Event::RefreshTopics);
                }
                tracing::warn!(flow = %flow, cluster = %tgt, topic = %st.target_topic, partition = k.1, "produce error {}, resending", error_code::name(code));
                self.stats.push_back(Stat::Retry {
                    side: Side::Target,
                    kind: "produce_partition",
                });
                st.rewind();
                None
            }
        }
    }

    /// The oldest batch of partition `k` landed at target offset `base` (-1: the broker did
    /// not say).
    fn acknowledge(&mut self, k: &PartKey, base: i64) {
        let (flow, tgt, mirrored) = (&self.cfg.flow, &self.cfg.target, self.cfg.mirrored);
        let Some(st) = self.parts.get_mut(k) else {
            return;
        };
        let Some(out) = st.queue.pop_front() else {
            return;
        };
        st.in_flight = st.in_flight.saturating_sub(1);
        st.queued_bytes -= out.batch.len();
        let n = out.source.count();
        let expected = st.map.target_next();
        let base = if base >= 0 { base } else { expected };
        if base > expected && !mirrored {
            tracing::warn!(flow = %flow, cluster = %tgt, topic = %st.target_topic, partition = k.1, "{} records at target offsets {expected}..{base} were written by someone else", base - expected);
        }
        // Mirror topics are read-only: a foreign write stops the partition, and an identical
        // mirror must land every batch at its source offset.
        let first = first_source_offset(&out);
        let broken = if !mirrored {
            None
        } else if base != expected {
            Some(Context::of_partition(tgt, &st.target_topic, k.1).line(format_args!(
                "{} records at offsets {expected}..{base} were written by something other than strait while the topic is mirrored; partition stopped (promote or fail over the mirror to make the topic writable)",
                base - expected
            )))
        } else if st.identical && base != first {
            Some(Context::of_partition(tgt, &st.target_topic, k.1).line(format_args!(
                "the batch of source offset {first} landed at offset {base}; identical offsets broken; partition stopped"
            )))
        } else {
            None
        };
        if let Err(e) = record_acked(&mut st.map, &out, base) {
            let msg = Context::of_partition(tgt, &st.target_topic, k.1)
                .at(base)
                .line(format_args!(
                    "the acknowledged batch does not fit the offset map ({e}); partition stopped"
                ));
            tracing::error!(flow = %flow, "{msg}");
            st.failed = Some(msg);
            st.rewind();
            return;
        }
        st.acked_epoch = st.acked_epoch.max(out.source_epoch);
        st.records += n as u64;
        st.bytes += out.batch.len() as u64;
        st.sequence_retries = 0;
        st.writer.next_sequence = crate::forward::plan::next_sequence(
            out.batch.base_sequence(),
            out.batch.records_count(),
        );
        // Offsets planned after this batch that became no target record (a transaction marker
        // closing the source log): everything below the next fetch is accounted for, so a
        // group committed there translates.
        st.account_dropped_tail();
        self.resyncs.remove(k);
        self.stats.push_back(Stat::Acked {
            topic: k.0.clone(),
            partition: k.1,
            records: n as u64,
            bytes: out.batch.len() as u64,
            max_timestamp: out.batch.max_timestamp(),
            heartbeat: st.heartbeats,
        });
        if let Some(msg) = broken {
            tracing::error!(flow = %flow, "{msg}");
            st.failed = Some(msg.clone());
            st.rewind();
            self.events.push_back(Event::Diverged {
                topic: k.0.to_string(),
                partition: k.1,
                why: msg,
            });
        } else if mirrored {
            st.note_offsets_mode(flow, tgt);
        }
    }

    /// Drops a partition whose producer sequence the target refused (`refused`), or whose
    /// last request may or may not have landed, to be taken up again from what the target
    /// holds ([`Event::Retake`]). Refused [`MAX_RESYNCS`] times (or failed
    /// [`MAX_FAILED_RESYNCS`] times) in a row without an acknowledgement, it stops.
    fn resync(&mut self, k: PartKey, refused: bool) {
        let (flow, tgt) = (&self.cfg.flow, &self.cfg.target);
        if self.parts.get(&k).is_none_or(|st| st.failed.is_some()) {
            return;
        }
        let (refusals, failures) = {
            let c = self.resyncs.entry(k.clone()).or_default();
            if refused {
                c.0 += 1;
            } else {
                c.1 += 1;
            }
            *c
        };
        let Some(st) = self.parts.get_mut(&k) else {
            return;
        };
        if refusals > MAX_RESYNCS || failures > MAX_FAILED_RESYNCS {
            let what = if refusals > MAX_RESYNCS {
                format!("the broker keeps refusing the producer sequence after {MAX_RESYNCS} fresh starts")
            } else {
                format!("{MAX_FAILED_RESYNCS} Produce requests in a row failed")
            };
            let msg = Context::of_partition(tgt, &st.target_topic, k.1)
                .at(st.map.target_next())
                .line(format_args!("{what}; partition stopped"));
            tracing::error!(flow = %flow, "{msg}");
            self.stats.push_back(Stat::Error {
                kind: "produce_refused",
            });
            st.failed = Some(msg);
            st.rewind();
            return;
        }
        if refused {
            tracing::warn!(flow = %flow, cluster = %tgt, topic = %st.target_topic, partition = k.1, offset = st.map.target_next(), "the broker refused the producer sequence; reading the partition back to continue after what it holds");
        }
        self.stats.push_back(Stat::Retry {
            side: Side::Target,
            kind: "produce_resync",
        });
        let stored = st.stored();
        self.parts.remove(&k);
        self.events.push_back(Event::Retake { key: k, stored });
    }
}
