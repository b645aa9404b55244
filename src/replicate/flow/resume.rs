//! Taking up a partition: where writing continues on the target, under which producer
//! identity, and whether everything after the stored position was written by strait.
//!
//! The stored progress may lag the target (it is written after acknowledgements, and another
//! instance or an earlier run of this one may have written more since). Every batch that landed
//! after it is read back: each must carry the partition's producer id and sit end to end with
//! the previous one, and each must match the next batch strait plans from the source: record
//! count for record count, and by CRC where the broker kept the batch as sent. The first source
//! read carries the leader epoch stored with the position, so a source log truncated while
//! strait was stopped is caught as it is while running. Only then are those records counted as replicated and the producer
//! sequence continued after them. Anything else is a foreign write: the partition stops with a
//! report naming the offsets, and no source record is counted as copied.

use std::collections::VecDeque;

use std::time::Duration;

use bytes::Bytes;

use super::{record_acked, Flow, PartStart};
use crate::client::{EARLIEST, LATEST};
use crate::error::{Error, Result};
use crate::forward::plan::MAX_DECODED_BATCH;
use crate::forward::{Outgoing, PartitionPlanner};
use crate::mirror::{offsets_mode, OffsetsMode};
use crate::offsets::OffsetMap;
use crate::protocol::fetch::READ_UNCOMMITTED;
use crate::records::recompress::uncompressed_crc;
use crate::records::{split, Entry};
use crate::replicate::path::diverged_message;
use crate::replicate::progress::{
    self, check_landed, copy_matches, Landed, LandedBatch, OwnBatch, Stored, Writer,
};
use crate::replicate::takeover::{self, Outcome};

/// Where a partition taken up starts, settled.
struct Taken {
    map: OffsetMap,
    writer: Writer,
    /// Its progress record already says this.
    flushed: bool,
    /// Stopped from the start for this reason.
    failed: Option<String>,
    /// The source leader epoch of the last record below the map's end, when known.
    leader_epoch: Option<i32>,
}

/// How a partition is taken up.
enum Start {
    /// Writing continues at the map's end under `writer`; `flushed` when the stored record
    /// already says exactly this.
    Continue {
        map: OffsetMap,
        writer: Writer,
        flushed: bool,
        /// The source leader epoch of the last record below the map's end, when known.
        epoch: Option<i32>,
    },
    /// Something other than strait wrote into the partition: it stays stopped.
    Foreign {
        map: OffsetMap,
        writer: Writer,
        why: String,
    },
    /// The source changed under the stored position (`why`, counted as error `kind`): it
    /// stays stopped.
    Stopped {
        map: OffsetMap,
        writer: Writer,
        why: String,
        kind: &'static str,
    },
}

impl Flow {
    /// The identity for a partition that has never been written: this instance's producer id
    /// from InitProducerId, sequences from 0.
    fn fresh_writer(&self) -> Result<Writer> {
        let p = self
            .producer
            .ok_or_else(|| Error::invalid("no producer id from the target yet"))?;
        Ok(Writer {
            producer_id: p.id,
            producer_epoch: p.epoch,
            next_sequence: 0,
        })
    }

    /// `takeover_from = "mm2"`, a partition with no progress record: it starts where
    /// MirrorMaker 2 stopped (see [`takeover`]), or at the source's log start if MirrorMaker 2
    /// copied nothing of it. Where that cannot be proven it is not taken up (an error naming why).
    async fn take_over(
        &mut self,
        topic: &str,
        remote: &str,
        partition: i32,
        target_end: i64,
    ) -> Result<Start> {
        let key = (topic.to_string(), partition);
        let committed = match self.mm2_offsets().await? {
            Some(offsets) => offsets.get(&key).copied(),
            // Nothing on the target to continue after: the partition starts as any would.
            None if target_end == 0 => None,
            None => {
                return Err(Error::invalid(format!(
                    "takeover_from = \"mm2\": no MirrorMaker 2 offsets topic {} to take source {topic}/{partition} over from (set takeover_offsets_topic to its offset.storage.topic); the partition is not replicated",
                    self.cfg.takeover_offsets_topic()
                )))
            }
        };
        let p = takeover::Partition {
            topic,
            remote,
            partition,
            committed,
            target_end,
            map_records: self.cfg.takeover_map_records,
            fetch_max_bytes: self.cfg.fetch_max_bytes,
            offset_syncs_topic: &self.mm2.offset_syncs(self.target.name()),
        };
        let map = match takeover::take_over(&self.source, &self.target, p).await? {
            Outcome::Fresh => {
                let from = self
                    .source
                    .list_offsets(topic, &[partition], EARLIEST)
                    .await?[0]
                    .1;
                tracing::info!(flow = %self.name(), %topic, partition, beyond = 0, from, "taking over from MirrorMaker 2: it copied nothing of this partition; starting at the source's log start");
                OffsetMap::new(from, 0)
            }
            Outcome::Continue {
                map,
                committed,
                beyond,
            } => {
                tracing::info!(flow = %self.name(), %topic, partition, committed, beyond, from = map.source_next(), target_offset = map.target_next(), mapped_from = map.source_start(), "taking over from MirrorMaker 2: it replicated up to source offset {} (committed {committed}, {beyond} records beyond)", map.source_next() - 1);
                map
            }
            Outcome::Unproven(why) => {
                self.obs.error(&self.name(), "takeover_unproven");
                return Err(Error::invalid(format!(
                    "cannot take over from MirrorMaker 2 (source {topic}/{partition}): {why}; the partition is not replicated"
                )));
            }
        };
        Ok(Start::Continue {
            map,
            writer: self.fresh_writer()?,
            flushed: false,
            epoch: None,
        })
    }

    /// MirrorMaker 2's committed offsets, read from its offsets topic on the target once;
    /// `None` while that topic does not exist.
    async fn mm2_offsets(&mut self) -> Result<Option<&takeover::Mm2Offsets>> {
        if self.takeover.is_none() {
            let topic = self.cfg.takeover_offsets_topic();
            let read = takeover::read_mm2_offsets(&self.target, &topic, self.source.name()).await?;
            let Some(offsets) = read else {
                return Ok(None);
            };
            tracing::info!(flow = %self.name(), %topic, partitions = offsets.len(), "read MirrorMaker 2's committed offsets");
            self.takeover = Some(offsets);
        }
        Ok(self.takeover.as_ref())
    }

    /// Works out where a partition resumes, from the stored progress and the target itself.
    pub(super) async fn resume_partition(
        &mut self,
        topic: &str,
        remote: &str,
        partition: i32,
        topic_id: Option<[u8; 16]>,
    ) -> Result<PartStart> {
        let key = progress::key(self.source.name(), topic, partition);
        let stored = self.stored_progress.get(&key).cloned();
        let stored_epoch = stored.as_ref().and_then(|s| s.leader_epoch);
        // The position belongs to the topic it was taken on: a topic deleted and created again
        // under the same name (another id) must not be read from it.
        let current = topic_id;
        let recreated = match (stored.as_ref().and_then(|s| s.topic_id), current) {
            (Some(was), Some(now)) if was != now => Some((was, now)),
            _ => None,
        };
        let topic_id = recreated.map(|r| r.0).or(current);
        let start = self
            .decide_start(topic, remote, partition, stored, recreated)
            .await?;
        let taken = self
            .settle_start(topic, remote, partition, start, stored_epoch)
            .await;
        let identical = self.mirror_identical(topic, remote, partition, &taken)?;
        Ok(self.part_start(PartStart {
            flushed: taken.flushed,
            failed: taken.failed,
            identical,
            topic_id,
            leader_epoch: taken.leader_epoch,
            ..PartStart::new(topic, remote, partition, taken.map, taken.writer)
        }))
    }

    /// How the partition starts, from its stored position (`None`: never replicated) and
    /// what the target holds; `recreated`: the source topic's id changed (was, now).
    async fn decide_start(
        &mut self,
        topic: &str,
        remote: &str,
        partition: i32,
        stored: Option<Stored>,
        recreated: Option<([u8; 16], [u8; 16])>,
    ) -> Result<Start> {
        let target_end = self
            .target
            .list_offsets(remote, &[partition], LATEST)
            .await?[0]
            .1;
        let tgt = self.target.name().to_string();
        let ctx = |e: Error| e.cluster(&tgt).partition(remote, partition);
        let writer_of = |s: &Stored| s.writer.map_or_else(|| self.fresh_writer(), Ok);
        // A mirror started by a reversal starts where the other direction stopped, unless this
        // flow copied past that since (a position below it is from before the reversal).
        if let Some((from, at)) = self.reversal_start(topic, partition) {
            if stored.as_ref().is_none_or(|s| s.map.target_next() < at) {
                // The producer sequence goes on from this flow's last write to the partition,
                // if it wrote there before (a reversal back): the broker still counts it.
                let writer = stored.and_then(|s| s.writer);
                return self.start_reversed(remote, partition, (from, at), target_end, writer);
            }
        }
        Ok(match stored {
            Some(s) if recreated.is_some() => {
                let (was, now) = recreated.unwrap_or_default();
                Start::Stopped {
                    why: super::recreated_message(
                        self.source.name(),
                        topic,
                        partition,
                        &s.map,
                        was,
                        now,
                    ),
                    writer: writer_of(&s)?,
                    map: s.map,
                    kind: "source_topic_recreated",
                }
            }
            None if self.cfg.takeover_from.is_some() => self
                .take_over(topic, remote, partition, target_end)
                .await
                .map_err(ctx)?,
            None if target_end == 0 => {
                let from = self
                    .source
                    .list_offsets(topic, &[partition], EARLIEST)
                    .await?[0]
                    .1;
                Start::Continue {
                    map: OffsetMap::new(from, 0),
                    writer: self.fresh_writer()?,
                    flushed: false,
                    epoch: None,
                }
            }
            None => {
                return Err(ctx(Error::invalid(format!(
                    "refusing to replicate into it: the remote partition already holds {target_end} records that this flow did not write"
                ))));
            }
            Some(s) if target_end < s.map.target_next() => Start::Stopped {
                why: format!(
                    "cluster {tgt}, topic {remote}, partition {partition}: the remote partition ends at offset {target_end}, before the {} records strait had written there (the remote topic was deleted and created again, or records were deleted from it); partition stopped so that nothing lands at offsets its offset map does not say (replicate into a fresh remote topic to start over)",
                    s.map.target_next()
                ),
                writer: writer_of(&s)?,
                map: s.map,
                kind: "remote_topic_changed",
            },
            Some(s) => match s.writer {
                Some(writer) if target_end == s.map.target_next() => Start::Continue {
                    map: s.map,
                    writer,
                    flushed: true,
                    epoch: s.leader_epoch,
                },
                Some(writer) => self
                    .take_up_landed(topic, remote, partition, s, writer, target_end)
                    .await
                    .map_err(ctx)?,
                None => self
                    .take_up_counted(topic, partition, s.map, target_end)
                    .await
                    .map_err(ctx)?,
            },
        })
    }

    /// Where partition `partition` of mirror topic `topic` starts if a reversal started its
    /// mirror: (source offset, destination offset).
    fn reversal_start(&self, topic: &str, partition: i32) -> Option<(i64, i64)> {
        self.mirror
            .as_ref()?
            .view
            .records
            .get(topic)?
            .start_of(partition)
    }

    /// A partition of a mirror started by a reversal, at source offset `from` and destination
    /// offset `at`, where the other direction stopped: the destination must end exactly there.
    /// Records after it were written after the reversal began (producers still writing to
    /// the old source); nothing is written after them. `writer`: this flow's last producer
    /// identity on the partition, if it wrote there before.
    fn start_reversed(
        &self,
        remote: &str,
        partition: i32,
        (from, at): (i64, i64),
        target_end: i64,
        writer: Option<Writer>,
    ) -> Result<Start> {
        let map = OffsetMap::new(from, at);
        let writer = writer.map_or_else(|| self.fresh_writer(), Ok)?;
        let tgt = self.target.name();
        let why = match target_end.cmp(&at) {
            std::cmp::Ordering::Equal => {
                return Ok(Start::Continue {
                    map,
                    writer,
                    flushed: false,
                    epoch: None,
                })
            }
            std::cmp::Ordering::Greater => format!(
                "cluster {tgt}, topic {remote}, partition {partition}: {} records at offsets {at}..{target_end} were written after the mirror was reversed at offset {at}; partition stopped (the other side does not have them; fail the mirror over to keep writing here)",
                target_end - at
            ),
            std::cmp::Ordering::Less => format!(
                "cluster {tgt}, topic {remote}, partition {partition}: the log ends at offset {target_end}, before offset {at} where the mirror was reversed (records were deleted); partition stopped"
            ),
        };
        Ok(Start::Stopped {
            map,
            writer,
            why,
            kind: "written_after_reversal",
        })
    }

    /// What a partition starts with: a stopped one is logged, counted and (mirror flows)
    /// recorded in its mirror.
    async fn settle_start(
        &mut self,
        topic: &str,
        remote: &str,
        partition: i32,
        start: Start,
        stored_epoch: Option<i32>,
    ) -> Taken {
        let tgt = self.target.name().to_string();
        match start {
            Start::Continue {
                map,
                writer,
                flushed,
                epoch,
            } => Taken {
                map,
                writer,
                flushed,
                failed: None,
                leader_epoch: epoch,
            },
            Start::Foreign { map, writer, why } => {
                let msg = format!(
                    "cluster {tgt}, topic {remote}, partition {partition}: {why}; partition stopped (strait cannot tell which source records those are; move or delete them, or replicate into a fresh topic)"
                );
                tracing::error!(flow = %self.name(), "{msg}");
                self.obs.error(&self.name(), "foreign_write");
                if self.mirror.is_some() {
                    if let Err(e) = self.mark_diverged(topic, partition, msg.clone()).await {
                        tracing::warn!(flow = %self.name(), %topic, partition, "cannot record the stop in the control topic: {e}");
                    }
                }
                Taken {
                    map,
                    writer,
                    flushed: true,
                    failed: Some(msg),
                    leader_epoch: stored_epoch,
                }
            }
            Start::Stopped {
                map,
                writer,
                why,
                kind,
            } => {
                tracing::error!(flow = %self.name(), "{why}");
                self.obs.error(&self.name(), kind);
                Taken {
                    map,
                    writer,
                    flushed: true,
                    failed: Some(why),
                    leader_epoch: stored_epoch,
                }
            }
        }
    }

    /// Mirror flows: whether the partition's offsets are still identical to the source's
    /// (logged when not); an error if its mirror stopped it earlier and it is not stopped now.
    fn mirror_identical(
        &self,
        topic: &str,
        remote: &str,
        partition: i32,
        taken: &Taken,
    ) -> Result<bool> {
        let Some(m) = &self.mirror else {
            return Ok(false);
        };
        let tgt = self.target.name();
        let rec = m.view.records.get(topic);
        if taken.failed.is_none() {
            if let Some(why) = rec.and_then(|r| r.diverged.get(&partition)) {
                return Err(Error::invalid(format!("mirror stopped earlier: {why}"))
                    .cluster(tgt)
                    .partition(remote, partition));
            }
        }
        let mode = match rec {
            Some(r) => r.offsets_mode(partition, &taken.map),
            None => offsets_mode(&taken.map, false),
        };
        if mode != OffsetsMode::Identical {
            tracing::warn!(flow = %self.name(), %topic, partition, "cluster {tgt}, topic {topic}, partition {partition}: offsets are {mode}; consumer offsets are translated through the offset map");
        }
        Ok(mode == OffsetsMode::Identical)
    }

    /// `start` with whether its source topic is a heartbeats topic filled in.
    pub(super) fn part_start(&self, mut start: PartStart) -> PartStart {
        start.heartbeats = self.mm2.is_heartbeats_topic(&self.policy, &start.topic);
        start
    }

    /// Reads back what landed after the stored position and continues after it if strait
    /// wrote it (see the module documentation).
    async fn take_up_landed(
        &self,
        topic: &str,
        remote: &str,
        partition: i32,
        stored: Stored,
        writer: Writer,
        target_end: i64,
    ) -> Result<Start> {
        let map = stored.map;
        let from = map.target_next();
        let landed = self
            .landed_batches(remote, partition, from, target_end)
            .await?;
        let (batches, next) = match check_landed(writer, from, &landed) {
            Landed::Own { batches, writer } => (batches, writer),
            Landed::Foreign(why) => return Ok(Start::Foreign { map, writer, why }),
        };
        // Paired on a copy: a partition that stops keeps the map it had.
        let mut paired = map.clone();
        let read = (writer, stored.leader_epoch);
        let epoch = match self
            .pair_with_source(topic, partition, &mut paired, &batches, read)
            .await?
        {
            Ok(epoch) => epoch,
            Err(why) => return Ok(Start::Foreign { map, writer, why }),
        };
        let repeats: Vec<&OwnBatch> = batches.iter().filter(|b| b.repeat).collect();
        if let (Some(first), true) = (repeats.first(), self.mirror.is_some()) {
            // A mirror topic holds each source record once, at its offset: a second copy
            // cannot be left out there.
            let why = format!(
                "{} records from offset {} are second copies of batches strait had written (the broker had forgotten strait's producer state, see producer.id.expiration.ms)",
                repeats.iter().map(|b| b.span).sum::<i64>(),
                first.base_offset
            );
            return Ok(Start::Foreign { map, writer, why });
        }
        if let Some(first) = repeats.first() {
            let records: i64 = repeats.iter().map(|b| b.span).sum();
            tracing::warn!(flow = %self.name(), "cluster {}, topic {remote}, partition {partition}: {records} records in {} batches from target offset {} are second copies of batches strait had written (the broker had forgotten strait's producer state, see producer.id.expiration.ms); they are left out of the offset map", self.target.name(), repeats.len(), first.base_offset);
            self.obs.error(&self.name(), "repeated_batches");
        }
        tracing::info!(flow = %self.name(), %topic, partition, from = map.source_next(), to = paired.source_next(), batches = batches.len(), "found strait's own batches after the last progress record; continuing after them");
        Ok(Start::Continue {
            map: paired,
            writer: next,
            flushed: false,
            epoch,
        })
    }

    /// A progress record of an older version (no writer identity): the records after it are
    /// counted as strait's, and writing continues under a fresh identity.
    async fn take_up_counted(
        &self,
        topic: &str,
        partition: i32,
        mut map: OffsetMap,
        target_end: i64,
    ) -> Result<Start> {
        let extra = target_end - map.target_next();
        if extra > 0 {
            // Counted as one run: the planned batches must fill exactly `extra` offsets.
            let span = (map.target_next(), extra);
            if let Err(why) = self.pair_counted(topic, partition, &mut map, span).await? {
                return Ok(Start::Foreign {
                    writer: self.fresh_writer()?,
                    map,
                    why,
                });
            }
        }
        // Not flushed: the new identity is stored before anything is written under it.
        Ok(Start::Continue {
            map,
            writer: self.fresh_writer()?,
            flushed: false,
            epoch: None,
        })
    }

    /// Headers of the batches of a target partition from offset `from` to `end`, read with
    /// READ_UNCOMMITTED so that nothing written there is hidden.
    async fn landed_batches(
        &self,
        topic: &str,
        partition: i32,
        from: i64,
        end: i64,
    ) -> Result<Vec<LandedBatch>> {
        let mut out = Vec::new();
        let mut offset = from;
        while offset < end {
            let read = crate::client::FetchRead {
                offset,
                last_fetched_epoch: -1,
                max_bytes: self.cfg.fetch_max_bytes,
                isolation: READ_UNCOMMITTED,
                topic_id: None,
            };
            let p = self
                .target
                .partition(topic, partition)
                .fetch_once(read)
                .await?;
            let before = offset;
            for entry in split(p.records.clone()) {
                match entry {
                    Ok(Entry::V2(b)) => {
                        offset = offset.max(b.next_offset());
                        let recompress = self.cfg.recompress;
                        let uncompressed_crc = match uncompressed_crc(
                            &b,
                            recompress,
                            MAX_DECODED_BATCH,
                        ) {
                            Ok(crc) => crc,
                            Err(e) => {
                                tracing::warn!(flow = %self.name(), "cluster {}, topic {topic}, partition {partition}, offset {}: strait's {} batch does not decompress ({e}); it is paired with the source by record count only", self.target.name(), b.base_offset(), recompress.name());
                                None
                            }
                        };
                        out.push(LandedBatch {
                            base_offset: b.base_offset(),
                            last_offset: b.last_offset(),
                            producer_id: b.producer_id(),
                            producer_epoch: b.producer_epoch(),
                            base_sequence: b.base_sequence(),
                            control: b.is_control(),
                            crc: b.crc(),
                            attributes: b.attributes(),
                            uncompressed_crc,
                        });
                    }
                    Ok(Entry::Legacy(raw)) => {
                        let base = legacy_offset(&raw).unwrap_or(offset);
                        out.push(LandedBatch {
                            base_offset: base,
                            last_offset: base,
                            producer_id: -1,
                            producer_epoch: -1,
                            base_sequence: -1,
                            control: false,
                            crc: 0,
                            attributes: -1,
                            uncompressed_crc: None,
                        });
                        offset = offset.max(base + 1);
                    }
                    Err(e) => {
                        return Err(
                            Error::invalid(format!("unreadable batch on the target: {e}"))
                                .offset(offset),
                        )
                    }
                }
            }
            if offset == before {
                return Err(Error::invalid(format!(
                    "the target's log ends at {end} but a read at {offset} returned no batch"
                )));
            }
        }
        Ok(out)
    }

    /// Plans the source from the map's end (without producing) and pairs each landed batch
    /// that is not a repeat with the next planned one: the same number of offsets and, where
    /// the broker kept the batch as sent, the same CRC (the same records), recorded in `map` at
    /// the landed batch's offset. `read` is the writer identity and the source leader epoch
    /// stored with the map: the first Fetch carries the epoch, so a source log truncated below
    /// the map's end is caught too. `Ok(Ok(epoch))` with the leader epoch of the last paired
    /// source batch; `Ok(Err(why))` when they do not pair up.
    async fn pair_with_source(
        &self,
        topic: &str,
        partition: i32,
        map: &mut OffsetMap,
        landed: &[OwnBatch],
        read: (Writer, Option<i32>),
    ) -> Result<std::result::Result<Option<i32>, String>> {
        let (writer, mut epoch) = read;
        let mut source = PlannedSource::new(map.source_next(), epoch);
        for b in landed.iter().filter(|b| !b.repeat) {
            let (base, span) = (b.base_offset, b.span);
            let out = match source.next(self, topic, partition).await? {
                Planned::Batch(out) => out,
                Planned::Diverged(why) => return Ok(Err(why)),
            };
            let n = out.source.count();
            let first = super::first_source_offset(&out);
            if n != span {
                return Ok(Err(format!(
                    "the batch at target offsets {base}..{} ({span} records) does not match the source batch from offset {first} ({n} records; was the source compacted since?)",
                    base.saturating_add(span),
                )));
            }
            if copy_matches(b, &out.batch, writer) == Some(false) {
                return Ok(Err(format!(
                    "the batch at target offsets {base}..{} is not a copy of the source records now at offsets {first}..{} of cluster {}, topic {topic} (another CRC): the source log was truncated by an unclean leader election while strait was not reading it, and other records were written at those offsets since",
                    base.saturating_add(span),
                    out.source_next,
                    self.source.name()
                )));
            }
            if let Err(e) = record_acked(map, &out, base) {
                return Ok(Err(format!(
                    "the batch at target offset {base} does not fit the offset map ({e})"
                )));
            }
            epoch = Some(epoch.unwrap_or(-1).max(out.source_epoch)).filter(|e| *e >= 0);
        }
        Ok(Ok(epoch))
    }

    /// Older progress records: plans source batches until `span.1` records are accounted for
    /// from target offset `span.0`, end to end.
    async fn pair_counted(
        &self,
        topic: &str,
        partition: i32,
        map: &mut OffsetMap,
        span: (i64, i64),
    ) -> Result<std::result::Result<(), String>> {
        let mut source = PlannedSource::new(map.source_next(), None);
        let mut left = span.1;
        while left > 0 {
            let out = match source.next(self, topic, partition).await? {
                Planned::Batch(out) => out,
                Planned::Diverged(why) => return Ok(Err(why)),
            };
            left -= out.source.count();
            if left < 0 {
                return Ok(Err(format!(
                    "the target's extra records end inside the batch for source offsets {}..{}; it was not written by this flow",
                    super::first_source_offset(&out),
                    out.source_next
                )));
            }
            let base = map.target_next();
            if let Err(e) = record_acked(map, &out, base) {
                return Ok(Err(format!(
                    "the batch at target offset {base} does not fit the offset map ({e})"
                )));
            }
        }
        Ok(Ok(()))
    }
}

/// The batches strait would write for a source partition from an offset, fetched as needed.
struct PlannedSource {
    planner: PartitionPlanner,
    ready: VecDeque<Outgoing>,
}

/// What [`PlannedSource::next`] found.
enum Planned {
    /// The next batch strait would write.
    Batch(Outgoing),
    /// The source leader says its log diverged from what was read before (why).
    Diverged(String),
}

impl PlannedSource {
    /// Plans from source offset `from`, after a batch of leader epoch `epoch` if known.
    fn new(from: i64, epoch: Option<i32>) -> PlannedSource {
        PlannedSource {
            planner: PartitionPlanner::new(from, None, 0).after_epoch(epoch),
            ready: VecDeque::new(),
        }
    }

    /// The next planned batch. A source that has nothing at the offset yet (a new leader whose
    /// high watermark still lags, a broker restarting) is asked again a few times; then it is
    /// an error, and the take-up is tried again at the next topic refresh.
    async fn next(&mut self, flow: &Flow, topic: &str, partition: i32) -> Result<Planned> {
        let mut empty = 0;
        while self.ready.is_empty() {
            let before = self.planner.next_offset();
            let read_epoch = self.planner.last_fetched_epoch();
            let p = flow.fetch_one(topic, partition, before, read_epoch).await?;
            if let Some(d) = &p.diverging_epoch {
                let src = flow.source.name();
                let at = (topic, partition, before);
                return Ok(Planned::Diverged(diverged_message(src, at, d, read_epoch)));
            }
            let plan = self
                .planner
                .plan(&p)
                .map_err(|e| Error::from(e).partition(topic, partition).offset(before))?;
            self.ready.extend(plan.outgoing);
            if self.ready.is_empty() && plan.next_offset == before {
                empty += 1;
                if empty >= EMPTY_READS {
                    return Err(Error::invalid(format!(
                        "the source has no records at offset {before} (high watermark {}) while the target holds strait's copies of them; trying again later",
                        p.high_watermark
                    ))
                    .partition(topic, partition)
                    .offset(before));
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        self.ready
            .pop_front()
            .map(Planned::Batch)
            .ok_or_else(|| Error::invalid("no planned batch"))
    }
}

/// Empty source reads in a row before a take-up gives up for now.
const EMPTY_READS: u32 = 3;

/// The offset of a legacy (magic 0/1) message set entry.
fn legacy_offset(raw: &Bytes) -> Option<i64> {
    let b: [u8; 8] = raw.get(..8)?.try_into().ok()?;
    Some(i64::from_be_bytes(b))
}
