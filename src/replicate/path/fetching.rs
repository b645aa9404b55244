//! The source side of the data path: which Fetch requests go to which leader, and what their
//! answers become (batches queued for the target, errors, positions out of range).

use super::*;
use crate::error::Context;
use crate::forward::plan::Outgoing;
use crate::forward::PartitionPlanner;
use crate::offsets::OffsetMap;
use crate::protocol::error_code;
use crate::protocol::fetch::{EpochEndOffset, FetchedPartition, READ_COMMITTED};
use crate::records::batch::complete_len;
use crate::records::codec::CodecError;
use crate::records::recompress::recompress;

impl DataPath {
    /// Fetch requests to write now: one to every source leader that has none outstanding, for
    /// its partitions with room in the buffer. Nothing while fetching backs off after a
    /// failure, and nothing unless something changed since the last plan or no Fetch is
    /// outstanding.
    ///
    /// A partition whose leader moved can be in an outstanding request to its old leader and
    /// in a new one to its new leader: whichever answer is taken in first moves its offset on,
    /// and [`DataPath::handle_fetch`] ignores the other (it asked for an offset no longer next).
    pub fn poll_fetch(&mut self, now: Instant, topo: &dyn Topology) -> Vec<FetchOrder> {
        if !(self.fetching.is_empty() || self.replan)
            || self.timers.pending(Timer::FetchBackoff, now)
        {
            return Vec::new();
        }
        let Some(budget) = self.fetch_budget(now) else {
            return Vec::new(); // the bandwidth cap: planned again once the budget refills
        };
        self.replan = false;
        self.traffic.rounds += 1;
        let cap = self.per_partition_cap();
        let total: usize = self.parts.values().map(|p| p.queued_bytes).sum();
        if total >= self.cfg.buffer_bytes {
            return Vec::new(); // backpressure: the target is slower
        }
        let busy: Vec<i32> = self.fetching.iter().map(|f| f.leader).collect();
        let share = i32::try_from(cap)
            .unwrap_or(i32::MAX)
            .min(self.cfg.fetch_max_bytes);
        // The broker fills a response in request order until `fetch_max_bytes`: partitions with
        // the least queued go first (ties rotate each round), so every partition has a batch
        // for the next Produce request instead of a few partitions taking every response.
        let mut wanted: Vec<(&PartKey, &PartState)> = self
            .parts
            .iter()
            .filter(|(k, st)| {
                st.failed.is_none()
                    && !st.awaiting_log_start
                    && st.queued_bytes < cap
                    && !self.holds(&k.0)
            })
            .collect();
        if !wanted.is_empty() {
            let turn = (self.traffic.rounds as usize) % wanted.len();
            wanted.rotate_left(turn);
        }
        wanted.sort_by_key(|(_, st)| st.queued_bytes);
        let mut by_leader: BTreeMap<i32, Vec<FetchPartitionSpec>> = BTreeMap::new();
        let mut connected: Vec<(i32, bool)> = Vec::new();
        for (k, st) in wanted {
            // Metadata refreshed after an error shows a topic created again under the same
            // name before the next Fetch could read the new topic at the old position.
            if let (Some(was), Some(now)) = (st.topic_id, topo.source_topic_id(&k.0)) {
                if was != now {
                    self.events.push_back(Event::Recreated {
                        key: k.clone(),
                        was,
                        now,
                    });
                    continue;
                }
            }
            let Some((leader, epoch)) = topo.source_leader(&k.0, k.1) else {
                self.missing
                    .source_partitions
                    .insert((k.0.to_string(), k.1));
                continue;
            };
            if busy.contains(&leader) {
                continue;
            }
            // One look per leader, not per partition (a lock each).
            let connected = match connected.iter().find(|c| c.0 == leader) {
                Some(c) => c.1,
                None => {
                    let c = topo.source_connected(leader);
                    connected.push((leader, c));
                    c
                }
            };
            if !connected {
                self.missing.source_nodes.insert(leader);
                continue;
            }
            by_leader
                .entry(leader)
                .or_default()
                .push(FetchPartitionSpec {
                    topic: k.0.clone(),
                    // By id when known: a broker refuses the id of a topic deleted since.
                    topic_id: st.topic_id,
                    partition: k.1,
                    offset: st.planner.next_offset(),
                    current_leader_epoch: epoch,
                    last_fetched_epoch: st.planner.last_fetched_epoch(),
                    max_bytes: share.max(i32::try_from(st.largest_batch).unwrap_or(i32::MAX)),
                });
        }
        let max_bytes = self.budget_share(budget, by_leader.len());
        let mut orders = Vec::with_capacity(by_leader.len());
        for (leader, specs) in by_leader {
            let wait = self.wait_for(leader);
            let limits = FetchLimits {
                max_wait_ms: i32::try_from(wait.as_millis()).unwrap_or(i32::MAX),
                min_bytes: 1,
                max_bytes,
                isolation_level: READ_COMMITTED,
            };
            let id = self.request_id();
            let offsets = specs
                .iter()
                .map(|s| ((s.topic.clone(), s.partition), s.offset))
                .collect();
            self.fetching.push(Fetching {
                id,
                leader,
                wait,
                offsets,
            });
            self.traffic.fetches += 1;
            self.reserve_budget(id, limits.max_bytes);
            orders.push(FetchOrder {
                id,
                leader,
                specs,
                limits,
            });
        }
        orders
    }

    /// The Fetch request `id` could not be written (its fetch session starts over): fetching
    /// pauses for [`FETCH_BACKOFF`] unless other answers are awaited.
    pub fn handle_fetch_unsent(&mut self, now: Instant, id: RequestId) {
        self.fetching.retain(|f| f.id != id);
        self.back_off(now);
    }

    fn back_off(&mut self, now: Instant) {
        self.replan = true;
        if self.fetching.is_empty() {
            self.timers.set(Timer::FetchBackoff, now + FETCH_BACKOFF);
        }
    }

    /// The answer to Fetch request `id` (`Err`: it failed as a whole, and fetching pauses for
    /// [`FETCH_BACKOFF`]). Returns the batches planned from it.
    pub fn handle_fetch(
        &mut self,
        now: Instant,
        id: RequestId,
        answer: Result<Vec<FetchedPartition>, String>,
    ) -> usize {
        let Some(i) = self.fetching.iter().position(|f| f.id == id) else {
            return 0;
        };
        let asked = self.fetching.remove(i);
        self.replan = true; // this leader has no Fetch outstanding now
        let partitions = match answer {
            Ok(p) => {
                // A batch cut off at the end of an answer is fetched again: it is charged
                // when it comes whole, once.
                let whole: usize = p.iter().map(|p| complete_len(&p.records)).sum();
                let sent: usize = p.iter().map(|p| p.records.len()).sum();
                self.traffic.cut_bytes += (sent - whole) as u64;
                self.settle_budget(id, whole);
                p
            }
            Err(e) => {
                tracing::warn!(flow = %self.cfg.flow, "fetch round failed: {e}");
                self.timers.set(Timer::FetchBackoff, now + FETCH_BACKOFF);
                return 0;
            }
        };
        let (mut planned, mut moving) = (0, false);
        for p in partitions {
            let key = (p.topic.clone(), p.partition);
            let Some(st) = self.parts.get(&key) else {
                continue;
            };
            if asked.offsets.get(&key) != Some(&st.planner.next_offset()) {
                continue; // resumed elsewhere while the request was out: fetched again
            }
            let heartbeats = st.heartbeats;
            let n = self.take_in(key, &p);
            planned += n;
            // A heartbeat record a second is no data flow to poll for every 10 ms.
            moving |= n > 0 && !heartbeats;
        }
        let next = next_fetch_wait(asked.wait, moving, self.cfg.fetch_max_wait);
        self.waits.insert(asked.leader, next);
        planned
    }

    /// The `max_wait` of the next Fetch to `leader`; for a leader not asked yet (new, or
    /// leadership moved), the shortest of the others' (data flowing elsewhere probably flows
    /// there too), or the configured wait.
    fn wait_for(&self, leader: i32) -> Duration {
        match self.waits.get(&leader) {
            Some(w) => *w,
            None => self
                .waits
                .values()
                .min()
                .copied()
                .unwrap_or(self.cfg.fetch_max_wait),
        }
    }

    /// One partition of a Fetch answer.
    fn take_in(&mut self, key: PartKey, p: &FetchedPartition) -> usize {
        let (flow, src) = (&self.cfg.flow, &self.cfg.source);
        let Some(st) = self.parts.get_mut(&key) else {
            return 0;
        };
        st.source_end = p.high_watermark;
        let at = st.planner.next_offset();
        match p.error_code {
            error_code::NONE => {}
            error_code::OFFSET_OUT_OF_RANGE => {
                st.awaiting_log_start = true;
                self.events.push_back(Event::LogStartWanted { key, at });
                return 0;
            }
            code => {
                if error_code::needs_metadata_refresh(code) {
                    self.events
                        .push_back(Event::InvalidateSource(key.0.to_string()));
                }
                if code == error_code::UNKNOWN_TOPIC_OR_PARTITION
                    || error_code::is_topic_id_stale(code)
                {
                    // The source topic may have been deleted, or deleted and created again
                    // (a Fetch by topic id, v13+, is refused then): the refresh finds out soon
                    // and stops the partition if the topic's id changed. Nothing was read.
                    self.events.push_back(Event::RefreshTopics);
                }
                tracing::warn!(flow = %flow, cluster = %src, topic = %key.0, partition = key.1, offset = at, "fetch error {}", error_code::name(code));
                self.stats.push_back(Stat::Retry {
                    side: Side::Source,
                    kind: "fetch_partition",
                });
                return 0;
            }
        }
        st.beyond_end = 0;
        if let Some(d) = p.diverging_epoch {
            // The leader's log no longer holds what was read (an unclean leader election
            // truncated it): the records copied from the divergence point on are not the
            // source's any more, and its records at those offsets are other ones.
            let read_epoch = st.planner.last_fetched_epoch();
            let why = diverged_message(src, (&key.0, key.1, at), &d, read_epoch);
            self.stop_partition(&key, why, "source_truncated");
            return 0;
        }
        match st.planner.plan(p) {
            Ok(plan) => {
                let n = plan.outgoing.len();
                for mut out in plan.outgoing {
                    self.stats.push_back(Stat::Fetched {
                        topic: key.0.clone(),
                        max_timestamp: out.batch.max_timestamp(),
                    });
                    // As fetched (before any re-compression): what a Fetch must ask for.
                    st.largest_batch = st.largest_batch.max(out.batch.len());
                    self.traffic.fetched_batches += 1;
                    self.traffic.fetched_bytes += out.batch.len() as u64;
                    if self.cfg.recompress != Recompress::None {
                        match recompress_queued(&mut out, self.cfg.recompress, &mut self.traffic) {
                            Ok(Some((before, after))) => {
                                self.stats.push_back(Stat::Recompressed { before, after })
                            }
                            Ok(None) => {}
                            Err(e) => {
                                let first = first_source_offset(&out);
                                tracing::warn!(flow = %flow, cluster = %src, topic = %key.0, partition = key.1, offset = first, "re-compression failed ({e}); the batch goes as it came");
                            }
                        }
                    }
                    st.queued_bytes += out.batch.len();
                    st.queue.push_back(out);
                }
                if st.queue.is_empty() && st.planner.next_offset() > st.map.source_next() {
                    // Only dropped offsets (control batches, aborted data, records deleted
                    // by compaction): nothing to wait for on the target.
                    st.account_dropped_tail();
                    st.note_offsets_mode(flow, &self.cfg.target);
                }
                n
            }
            Err(e) => {
                let msg = Context::of_partition(src, &key.0, key.1)
                    .at(at)
                    .line(format_args!("{e}; partition stopped"));
                tracing::error!(flow = %flow, "{msg}");
                self.stats.push_back(Stat::Error { kind: "plan" });
                st.failed = Some(msg);
                0
            }
        }
    }

    /// The log start of a partition whose position `at` was out of range (`Err`: it could not
    /// be read; the next Fetch tries again). Records deleted below it before they were
    /// replicated are counted as lost and the partition continues at the log start; a position
    /// beyond the log's end, confirmed [`BEYOND_END_STOP`] times in a row, is reported as
    /// [`Event::BeyondEnd`].
    pub fn handle_log_start(&mut self, key: &PartKey, at: i64, start: Result<i64, String>) {
        let (flow, src) = (&self.cfg.flow, &self.cfg.source);
        let Some(st) = self.parts.get_mut(key) else {
            return;
        };
        if !st.awaiting_log_start || st.planner.next_offset() != at {
            return;
        }
        st.awaiting_log_start = false;
        self.replan = true;
        let start = match start {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(flow = %flow, cluster = %src, topic = %key.0, partition = key.1, offset = at, "offset out of range, and the log start cannot be read: {e}");
                return;
            }
        };
        if start > at {
            tracing::error!(flow = %flow, cluster = %src, topic = %key.0, partition = key.1, offset = at, "records {at}..{start} were deleted by retention before they could be replicated; continuing at {start}");
            st.lost_records += (start - at) as u64;
            *self.lost.entry(key.clone()).or_default() += (start - at) as u64;
            self.stats.push_back(Stat::Lost {
                topic: key.0.clone(),
                records: (start - at) as u64,
            });
            st.beyond_end = 0;
            // Batches planned before `at` and not yet acknowledged stay queued; the planner
            // continues at the log start.
            st.planner = PartitionPlanner::new(start, st.producer(), st.planner.next_sequence());
        } else {
            // Beyond the log's end: the log was truncated below the position (an unclean
            // leader election), or the topic was deleted and created again. Confirmed by a
            // few answers in a row, the partition stops.
            st.beyond_end += 1;
            tracing::warn!(flow = %flow, cluster = %src, topic = %key.0, partition = key.1, offset = at, "beyond the end of the source log (log start {start}, answer {} in a row)", st.beyond_end);
            if st.beyond_end >= BEYOND_END_STOP {
                self.events.push_back(Event::BeyondEnd(key.clone()));
            }
        }
    }
}

/// Replaces `out`'s batch by its re-compressed form when [`recompress`] makes it smaller, and
/// counts it in `traffic`; returns its sizes before and after (`Err`: the codec failed, and
/// the batch is left as it came).
fn recompress_queued(
    out: &mut Outgoing,
    to: Recompress,
    traffic: &mut Traffic,
) -> Result<Option<(u64, u64)>, CodecError> {
    let Some(smaller) = recompress(&out.batch, to)? else {
        return Ok(None);
    };
    let sizes = (out.batch.len() as u64, smaller.len() as u64);
    traffic.recompressed_batches += 1;
    traffic.recompressed_bytes.0 += sizes.0;
    traffic.recompressed_bytes.1 += sizes.1;
    out.batch = smaller;
    Ok(Some(sizes))
}

/// The one line saying that the source log of `at` (topic, partition, position read up to)
/// diverged from what strait read under leader epoch `read_epoch`, as the leader's diverging
/// epoch `d` says (KIP-320), and that the partition stops.
pub fn diverged_message(
    src: &str,
    at: (&str, i32, i64),
    d: &EpochEndOffset,
    read_epoch: i32,
) -> String {
    let (topic, partition, offset) = at;
    let from = d.end_offset.min(offset);
    Context::of_partition(src, topic, partition).at(offset).line(format_args!(
        "the source log diverged at offset {from} from what strait read (leader epoch {} ends there on the leader; strait read up to epoch {read_epoch}): an unclean leader election truncated the log; the {} records strait read from offset {from} on are no longer in the source, and its records at those offsets are other ones; partition stopped so that no offset is copied twice with another meaning",
        d.epoch,
        offset - from,
    ))
}

/// Why a partition of a source topic that was deleted and created again stops.
pub fn recreated_message(
    cluster: &str,
    topic: &str,
    partition: i32,
    map: &OffsetMap,
    was: [u8; 16],
    now: [u8; 16],
) -> String {
    format!(
        "cluster {cluster}, topic {topic}, partition {partition}, offset {}: the topic was deleted and created again (topic id {} is now {}); its offsets now name other records, so replication stopped at the {} records copied from the old topic (to replicate the new topic, replicate it into a fresh remote topic)",
        map.source_next(),
        topic_id_text(was),
        topic_id_text(now),
        map.target_next()
    )
}

/// A topic id as Kafka's tools print it (URL-safe base64 without padding).
pub fn topic_id_text(id: [u8; 16]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(22);
    let mut bits = 0u32;
    let mut n = 0;
    for b in id {
        bits = (bits << 8) | u32::from(b);
        n += 8;
        while n >= 6 {
            n -= 6;
            out.push(char::from(ALPHABET[((bits >> n) & 63) as usize]));
        }
    }
    if n > 0 {
        out.push(char::from(ALPHABET[((bits << (6 - n)) & 63) as usize]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicate::progress::Writer;
    use bytes::Bytes;
    use std::sync::Arc;

    /// A source whose metadata gives every topic the id in the cell.
    struct OneTopic(std::cell::Cell<[u8; 16]>);

    impl Topology for OneTopic {
        fn source_leader(&self, _topic: &str, _partition: i32) -> Option<(i32, i32)> {
            Some((1, 0))
        }
        fn source_topic_id(&self, _topic: &str) -> Option<[u8; 16]> {
            Some(self.0.get())
        }
        fn source_connected(&self, _node: i32) -> bool {
            true
        }
        fn target_leader(&self, _topic: &str, _partition: i32) -> Option<i32> {
            Some(2)
        }
        fn target_connection(&self, _node: i32) -> Option<u64> {
            Some(1)
        }
    }

    fn path_of(topic_id: Option<[u8; 16]>) -> DataPath {
        let mut path = DataPath::new(PathSettings {
            flow: "a->b".into(),
            source: "a".into(),
            target: "b".into(),
            buffer_bytes: 1 << 20,
            fetch_max_bytes: 1 << 16,
            fetch_max_wait: Duration::from_millis(500),
            mirrored: false,
            max_bytes_per_second: None,
            recompress: Recompress::None,
        });
        let writer = Writer {
            producer_id: 7,
            producer_epoch: 0,
            next_sequence: 0,
        };
        let start = PartStart {
            topic_id,
            ..PartStart::new("t", "a.t", 0, OffsetMap::new(40, 40), writer)
        };
        let st = PartState::new(start, path.next_epoch());
        path.add((Arc::from("t"), 0), st);
        path
    }

    fn refused(code: i16) -> FetchedPartition {
        FetchedPartition {
            topic: "t".into(),
            topic_id: Some([1; 16]),
            partition: 0,
            error_code: code,
            high_watermark: 300,
            last_stable_offset: 300,
            log_start_offset: 0,
            aborted_transactions: Vec::new(),
            // What a broker reading the new topic would have sent: never planned on an error.
            records: Bytes::from_static(&[0; 64]),
            diverging_epoch: None,
        }
    }

    #[test]
    fn a_refused_topic_id_writes_nothing_and_a_new_id_stops_the_partition_as_recreated() {
        let (old, new) = ([1; 16], [2; 16]);
        for code in [
            error_code::UNKNOWN_TOPIC_ID,
            error_code::INCONSISTENT_TOPIC_ID,
        ] {
            let mut path = path_of(Some(old));
            let topo = OneTopic(std::cell::Cell::new(old));
            let now = Instant::now();
            let orders = path.poll_fetch(now, &topo);
            assert_eq!(orders.len(), 1);
            assert_eq!(orders[0].specs[0].topic_id, Some(old), "fetched by id");
            let planned = path.handle_fetch(now, orders[0].id, Ok(vec![refused(code)]));
            assert_eq!(planned, 0);
            let k: PartKey = (Arc::from("t"), 0);
            let st = path.part(&k).expect("partition");
            assert_eq!(st.planner.next_offset(), 40, "position not advanced");
            assert!(st.queue.is_empty() && st.failed.is_none());
            let events: Vec<Event> = std::iter::from_fn(|| path.poll_event()).collect();
            assert!(events
                .iter()
                .any(|e| matches!(e, Event::InvalidateSource(t) if t == "t")));
            assert!(events.iter().any(|e| matches!(e, Event::RefreshTopics)));
            // The refreshed metadata shows the topic's new id: the partition is reported as
            // re-created, and not fetched.
            topo.0.set(new);
            assert!(path.poll_fetch(now, &topo).is_empty());
            let events: Vec<Event> = std::iter::from_fn(|| path.poll_event()).collect();
            assert!(
                events.iter().any(
                    |e| matches!(e, Event::Recreated { was, now, .. } if *was == old && *now == new)
                ),
                "{events:?}"
            );
        }
    }

    #[test]
    fn a_partition_without_a_topic_id_is_fetched_by_name() {
        let mut path = path_of(None);
        let topo = OneTopic(std::cell::Cell::new([3; 16]));
        let orders = path.poll_fetch(Instant::now(), &topo);
        assert_eq!(orders[0].specs[0].topic_id, None);
        assert_eq!(
            crate::protocol::fetch::version_for(17, &orders[0].specs),
            12
        );
    }

    #[test]
    fn topic_ids_print_as_kafka_prints_them() {
        assert_eq!(topic_id_text([0; 16]), "AAAAAAAAAAAAAAAAAAAAAA");
        // Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding.
        let id = [
            0x30, 0x82, 0x1b, 0xdb, 0xe1, 0x22, 0x4a, 0x94, 0xa7, 0x41, 0x69, 0xba, 0xc5, 0xd6,
            0x60, 0x59,
        ];
        assert_eq!(topic_id_text(id), "MIIb2-EiSpSnQWm6xdZgWQ");
        assert_eq!(topic_id_text([0xff; 16]), "_____________________w");
    }
}
