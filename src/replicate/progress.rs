//! Where each replicated partition has got to, and how a restart finds its place again.
//!
//! A progress record says "source offsets below `source_next` are on the target, and the target
//! partition's log end was `target_next` at that moment". It is written to the target cluster
//! after produce acknowledgements, so it may lag behind the data. On restart the target's log
//! end tells how many records landed after the last progress record; the source is walked from
//! `source_next` with the same deterministic planning until exactly that many records are
//! accounted for. The result: no lost and no duplicated record, even after `kill -9`.

/// The default name of the compacted topic on each target cluster that holds progress records
/// (a cluster's `progress_topic`: [`Cluster::progress_topic`](crate::client::Cluster::progress_topic)).
pub const PROGRESS_TOPIC: &str = crate::config::DEFAULT_PROGRESS_TOPIC;

use crate::offsets::OffsetMap;
use crate::records::batch::ATTR_CODEC_MASK;
use crate::records::{Compression, HeaderRewrite, RewrittenBatch};

/// One partition's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Every source offset below this one is on the target (or was dropped on purpose).
    pub source_next: i64,
    /// The target partition's log end offset when `source_next` was reached.
    pub target_next: i64,
}

/// The key of a progress record.
pub fn key(source_alias: &str, source_topic: &str, partition: i32) -> String {
    format!("{source_alias}|{source_topic}|{partition}")
}

/// The (source topic, partition) a progress record key names, if it is one for `source_alias`.
pub fn parse_key<'a>(key: &'a str, source_alias: &str) -> Option<(&'a str, i32)> {
    let rest = key.strip_prefix(source_alias)?.strip_prefix('|')?;
    let (topic, p) = rest.rsplit_once('|')?;
    Some((topic, p.parse().ok()?))
}

impl From<&OffsetMap> for Progress {
    fn from(m: &OffsetMap) -> Progress {
        Progress {
            source_next: m.source_next(),
            target_next: m.target_next(),
        }
    }
}

/// The producer identity a partition's batches are written under on the target, and the
/// sequence number its next batch gets there.
///
/// A partition keeps one identity for as long as its progress exists, whichever instance writes
/// it: whoever takes it up continues the same producer id, epoch and sequence from where the
/// target's log ends. A late request of an earlier owner then carries exactly the sequence
/// numbers the new owner uses for the same source records, so the broker's idempotence stores
/// each batch once (a repeat is answered as a duplicate) or refuses it as out of sequence;
/// it can never land a second copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer {
    /// Producer id handed out by the target's InitProducerId.
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i16,
    /// Sequence of the next batch (after everything at or below the record's `target_next`).
    pub next_sequence: i32,
}

/// A stored progress record: the exact offset map and, for records written by newer versions,
/// the writer identity at the map's end, the source topic's id and the source leader epoch of
/// the last record below the position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Source-to-target offsets; its end is the stored position.
    pub map: OffsetMap,
    /// The partition's writer identity (absent in records of older versions).
    pub writer: Option<Writer>,
    /// The source topic's id when the record was written (absent in records of older
    /// versions, or when the source broker gives no topic ids): a topic deleted and created
    /// again under the same name has another.
    pub topic_id: Option<[u8; 16]>,
    /// The source partition leader epoch of the batch holding the last offset below the
    /// position (absent in records of older versions, or before any batch was read). A restart
    /// sends it with its first Fetch, so a source log truncated while strait was stopped (an
    /// unclean leader election) is caught as it is while running (KIP-320).
    pub leader_epoch: Option<i32>,
}

/// Marks the writer section after the encoded offset map.
const WRITER_TAG: u8 = b'W';
/// Marks the source topic id section (after the writer section, if any).
const TOPIC_ID_TAG: u8 = b'T';
/// Marks the source leader epoch section (after the topic id section, if any).
const LEADER_EPOCH_TAG: u8 = b'E';

/// Parses a progress record value: the offset map, then optionally the writer section, the
/// topic id section and the leader epoch section, in that order. Anything else makes the record
/// unreadable (`None`).
pub fn decode(value: &[u8]) -> Option<Stored> {
    let (map, used) = OffsetMap::decode_prefix(value).ok()?;
    let mut rest = &value[used..];
    let mut stored = Stored {
        map,
        writer: None,
        topic_id: None,
        leader_epoch: None,
    };
    if let Some((&WRITER_TAG, tail)) = rest.split_first() {
        rest = tail;
        let producer_id = take_varint(&mut rest)?;
        let producer_epoch = i16::try_from(take_varint(&mut rest)?).ok()?;
        let next_sequence = i32::try_from(take_varint(&mut rest)?).ok()?;
        stored.writer = Some(Writer {
            producer_id,
            producer_epoch,
            next_sequence,
        });
    }
    if let Some((&TOPIC_ID_TAG, tail)) = rest.split_first() {
        let id: [u8; 16] = tail.get(..16)?.try_into().ok()?;
        stored.topic_id = Some(id);
        rest = &tail[16..];
    }
    if let Some((&LEADER_EPOCH_TAG, tail)) = rest.split_first() {
        rest = tail;
        let epoch = i32::try_from(take_varint(&mut rest)?).ok()?;
        stored.leader_epoch = Some(epoch);
    }
    rest.is_empty().then_some(stored)
}

/// Encodes a progress record value.
pub fn encode(stored: &Stored) -> Vec<u8> {
    let mut out = stored.map.encode();
    if let Some(w) = stored.writer {
        out.push(WRITER_TAG);
        crate::offsets::put_varint(&mut out, w.producer_id);
        crate::offsets::put_varint(&mut out, i64::from(w.producer_epoch));
        crate::offsets::put_varint(&mut out, i64::from(w.next_sequence));
    }
    if let Some(id) = stored.topic_id {
        out.push(TOPIC_ID_TAG);
        out.extend_from_slice(&id);
    }
    // Leader epochs are never negative; -1 means none was read, and is not stored.
    if let Some(e) = stored.leader_epoch.filter(|e| *e >= 0) {
        out.push(LEADER_EPOCH_TAG);
        crate::offsets::put_varint(&mut out, i64::from(e));
    }
    out
}

fn take_varint(bytes: &mut &[u8]) -> Option<i64> {
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return i64::try_from(value).ok();
        }
    }
    None
}

/// The header of a batch found on the target partition at or after the stored position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LandedBatch {
    /// First offset of the batch.
    pub base_offset: i64,
    /// Last offset of the batch.
    pub last_offset: i64,
    /// Producer id in the batch header (-1: not idempotent).
    pub producer_id: i64,
    /// Producer epoch in the batch header.
    pub producer_epoch: i16,
    /// First sequence in the batch header.
    pub base_sequence: i32,
    /// A transaction marker.
    pub control: bool,
    /// The batch's CRC (covers everything from the attributes on: not the base offset or
    /// leader epoch the broker assigns).
    pub crc: u32,
    /// The batch's attributes.
    pub attributes: i16,
    /// For a batch strait re-compressed (`recompress`): the CRC it had uncompressed, over its
    /// records decompressed ([`crate::records::recompress::uncompressed_crc`]).
    pub uncompressed_crc: Option<u32>,
}

/// One of strait's own batches found after the stored position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnBatch {
    /// Its first offset on the target.
    pub base_offset: i64,
    /// How many offsets it spans.
    pub span: i64,
    /// A second copy of a batch already counted (its sequence is below the expected one: the
    /// broker had forgotten the producer and took a resend or a late request again). It stands
    /// for no further source records.
    pub repeat: bool,
    /// Its first sequence.
    pub base_sequence: i32,
    /// Its CRC, as on the target.
    pub crc: u32,
    /// Its attributes, as on the target.
    pub attributes: i16,
    /// Its CRC before strait re-compressed it, when it did ([`LandedBatch::uncompressed_crc`]).
    pub uncompressed_crc: Option<u32>,
}

/// Whether `found`, one of strait's batches on the target, is the copy of `planned`, the batch
/// strait plans now from the same source offsets, written under `writer`'s identity.
///
/// A broker keeps a producer's batch as sent except for its base offset and leader epoch,
/// which the CRC does not cover, so the same source batch gives the same CRC. Another CRC means
/// other source records (a source log truncated by an unclean leader election while strait was
/// stopped, with other records written at the same offsets since). Where the broker rewrote the
/// batch itself (re-compressed it for the topic's `compression.type`, or stamped
/// LogAppendTime) the attributes differ and nothing can be told from the CRC: `None`. A batch
/// strait re-compressed itself is compared by the CRC it had uncompressed.
pub fn copy_matches(found: &OwnBatch, planned: &RewrittenBatch, writer: Writer) -> Option<bool> {
    let as_written = planned.rewrite(&HeaderRewrite {
        producer_id: Some(writer.producer_id),
        producer_epoch: Some(writer.producer_epoch),
        base_sequence: Some(found.base_sequence),
        ..HeaderRewrite::default()
    });
    if as_written.attributes() == found.attributes {
        return Some(as_written.crc() == found.crc);
    }
    let codec_none = Compression::None.attribute_bits();
    let only_the_codec = as_written.attributes() & ATTR_CODEC_MASK == codec_none
        && as_written.attributes() == (found.attributes & !ATTR_CODEC_MASK) | codec_none;
    match found.uncompressed_crc {
        Some(crc) if only_the_codec => Some(as_written.crc() == crc),
        _ => None,
    }
}

/// What landed on the target after the stored position, checked against the writer identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landed {
    /// Every batch was written under the partition's identity, in sequence (or a repeat of an
    /// earlier one): in order, and the identity continued after the last of them.
    Own {
        /// The batches, in offset order.
        batches: Vec<OwnBatch>,
        /// Where writing continues.
        writer: Writer,
    },
    /// Something else wrote into the partition, or strait's batches are missing: why, naming
    /// the offsets and the producer.
    Foreign(String),
}

/// How far behind the expected sequence a repeat may start: a second copy is one of the last
/// few batches (five in flight, and Kafka remembers five). Anything else that is not the
/// expected sequence means the stored identity or the log is not what strait wrote.
const REPEAT_WINDOW: i64 = 1 << 24;

/// Checks that the batches at and after `target_next` on the target were all written under
/// `writer`'s producer id and epoch, end to end with no gap, each with the next sequence (or
/// a repeat of an earlier one), and continues the sequence after them. Anything else (another
/// producer, a non-idempotent write, a transaction marker, a missing batch) is reported: strait
/// cannot tell which source records it stands for.
pub fn check_landed(writer: Writer, target_next: i64, landed: &[LandedBatch]) -> Landed {
    let mut expected = target_next;
    let mut out = Vec::new();
    let mut w = writer;
    for b in landed {
        if b.last_offset < target_next {
            continue;
        }
        let from = b.base_offset.max(expected);
        let count = b.last_offset.saturating_sub(from).saturating_add(1);
        if b.control {
            return Landed::Foreign(format!(
                "a transaction marker of producer id {} at offset {} was written by something other than strait",
                b.producer_id, b.base_offset
            ));
        }
        if b.producer_id != writer.producer_id {
            return Landed::Foreign(format!(
                "{count} records at offsets {from}..{} were written by {} while strait's writes there carry producer id {}",
                b.last_offset.saturating_add(1),
                if b.producer_id < 0 {
                    "a non-idempotent producer".to_string()
                } else {
                    format!("producer id {}", b.producer_id)
                },
                writer.producer_id
            ));
        }
        if b.producer_epoch != writer.producer_epoch {
            return Landed::Foreign(format!(
                "{count} records at offsets {from}..{} carry strait's producer id {} under epoch {}, not strait's epoch {}",
                b.last_offset.saturating_add(1),
                b.producer_id,
                b.producer_epoch,
                writer.producer_epoch
            ));
        }
        if b.base_offset != expected {
            return Landed::Foreign(format!(
                "strait's batch at offset {} does not start where its previous write ended ({expected}): offsets in between are missing (deleted, or compacted away on the target)",
                b.base_offset
            ));
        }
        let span = b
            .last_offset
            .saturating_sub(b.base_offset)
            .saturating_add(1);
        let behind = (i64::from(w.next_sequence) - i64::from(b.base_sequence))
            .rem_euclid(i64::from(i32::MAX) + 1);
        let repeat = match behind {
            0 => false,
            // All of it before the expected sequence: records already counted.
            d if d >= span && d <= REPEAT_WINDOW => true,
            _ => {
                return Landed::Foreign(format!(
                    "strait's batch at offset {} has sequence {} where {} was next: batches are missing, or the partition was written under strait's producer id by something else",
                    b.base_offset, b.base_sequence, w.next_sequence
                ))
            }
        };
        out.push(OwnBatch {
            base_offset: b.base_offset,
            span,
            repeat,
            base_sequence: b.base_sequence,
            crc: b.crc,
            attributes: b.attributes,
            uncompressed_crc: b.uncompressed_crc,
        });
        if !repeat {
            w.next_sequence = crate::forward::plan::next_sequence(
                b.base_sequence,
                i32::try_from(span).unwrap_or(i32::MAX),
            );
        }
        expected = b.last_offset.saturating_add(1);
    }
    Landed::Own {
        batches: out,
        writer: w,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        let k = key("a", "t|x.y", 3);
        assert_eq!(parse_key(&k, "a"), Some(("t|x.y", 3)));
        assert_eq!(parse_key(&k, "b"), None);
        assert_eq!(parse_key("ab|t|3", "a"), None);
        assert_eq!(parse_key("a|t|x", "a"), None);
    }

    #[test]
    fn progress_of_a_stored_map() {
        let mut m = OffsetMap::new(10, 0);
        m.record_batch(
            &crate::forward::SourceOffsets::Contiguous {
                first: 10,
                count: 90,
            },
            0,
        )
        .unwrap();
        let stored = Stored {
            map: m,
            writer: None,
            topic_id: None,
            leader_epoch: None,
        };
        let back = decode(&encode(&stored)).unwrap().map;
        assert_eq!(
            Progress::from(&back),
            Progress {
                source_next: 100,
                target_next: 90
            }
        );
    }
}

#[cfg(test)]
mod writer_tests {
    use super::*;
    use crate::records::RecordBatch;
    use proptest::prelude::*;

    fn w(id: i64, seq: i32) -> Writer {
        Writer {
            producer_id: id,
            producer_epoch: 0,
            next_sequence: seq,
        }
    }

    fn enc(m: &OffsetMap, writer: Option<Writer>, topic_id: Option<[u8; 16]>) -> Vec<u8> {
        encode(&Stored {
            map: m.clone(),
            writer,
            topic_id,
            leader_epoch: None,
        })
    }

    fn batch(base: i64, last: i64, pid: i64, seq: i32) -> LandedBatch {
        LandedBatch {
            base_offset: base,
            last_offset: last,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: seq,
            control: false,
            crc: 0,
            attributes: 0,
            uncompressed_crc: None,
        }
    }

    #[test]
    fn old_records_decode_without_a_writer() {
        let m = OffsetMap::new(5, 0);
        let old = m.encode();
        assert_eq!(
            decode(&old),
            Some(Stored {
                map: m.clone(),
                writer: None,
                topic_id: None,
                leader_epoch: None,
            })
        );
        let new = enc(&m, Some(w(77, 12)), None);
        assert_eq!(decode(&new).unwrap().writer, Some(w(77, 12)));
        let mut bad = new.clone();
        bad.push(0);
        assert_eq!(decode(&bad), None);
        assert_eq!(decode(&new[..new.len() - 1]), None);
        let with_id = enc(&m, Some(w(77, 12)), Some([9; 16]));
        assert_eq!(decode(&with_id).unwrap().topic_id, Some([9; 16]));
        assert_eq!(decode(&with_id[..with_id.len() - 1]), None);
        // The leader epoch section comes last; -1 (none read) is not stored.
        let mut with_epoch = Stored {
            map: m.clone(),
            writer: Some(w(77, 12)),
            topic_id: Some([9; 16]),
            leader_epoch: Some(300),
        };
        assert_eq!(decode(&encode(&with_epoch)), Some(with_epoch.clone()));
        let only_epoch = Stored {
            writer: None,
            topic_id: None,
            ..with_epoch.clone()
        };
        assert_eq!(decode(&encode(&only_epoch)), Some(only_epoch));
        with_epoch.leader_epoch = Some(-1);
        assert_eq!(encode(&with_epoch), with_id);
        // Sections out of order are not a progress record.
        let mut swapped = m.encode();
        swapped.extend_from_slice(&[b'E', 4, b'W', 1, 0, 0]);
        assert_eq!(decode(&swapped), None);
    }

    #[test]
    fn own_batches_continue_the_sequence() {
        let own = |base, span, seq| OwnBatch {
            base_offset: base,
            span,
            repeat: false,
            base_sequence: seq,
            crc: 0,
            attributes: 0,
            uncompressed_crc: None,
        };
        let l = [batch(10, 14, 7, 20), batch(15, 15, 7, 25)];
        assert_eq!(
            check_landed(w(7, 20), 10, &l),
            Landed::Own {
                batches: vec![own(10, 5, 20), own(15, 1, 25)],
                writer: w(7, 26)
            }
        );
        // Batches before the stored position (fetched because they share its batch) are skipped.
        assert_eq!(
            check_landed(w(7, 25), 15, &l),
            Landed::Own {
                batches: vec![own(15, 1, 25)],
                writer: w(7, 26)
            }
        );
        // A second copy of the batch with sequence 20 (the broker had forgotten the producer):
        // a repeat, standing for no source record; the sequence goes on after the first copy.
        let again = [
            batch(10, 14, 7, 20),
            batch(15, 19, 7, 20),
            batch(20, 20, 7, 25),
        ];
        let mut repeat = own(15, 5, 20);
        repeat.repeat = true;
        assert_eq!(
            check_landed(w(7, 20), 10, &again),
            Landed::Own {
                batches: vec![own(10, 5, 20), repeat, own(20, 1, 25)],
                writer: w(7, 26)
            }
        );
        // A sequence ahead of the expected one: batches are missing.
        assert!(matches!(
            check_landed(w(7, 20), 10, &[batch(10, 10, 7, 30)]),
            Landed::Foreign(m) if m.contains("missing")
        ));
        // Behind, but reaching past the expected sequence: not a second copy.
        assert!(matches!(
            check_landed(w(7, 20), 10, &[batch(10, 19, 7, 15)]),
            Landed::Foreign(_)
        ));
        // Another epoch of strait's producer id is not strait's writing either.
        let mut other_epoch = batch(10, 10, 7, 20);
        other_epoch.producer_epoch = 3;
        assert!(matches!(
            check_landed(w(7, 20), 10, &[other_epoch]),
            Landed::Foreign(_)
        ));
        assert_eq!(
            check_landed(w(7, 3), 16, &l),
            Landed::Own {
                batches: vec![],
                writer: w(7, 3)
            }
        );
    }

    #[test]
    fn foreign_writes_are_named() {
        let foreign = [batch(10, 10, 9, 0)];
        match check_landed(w(7, 0), 10, &foreign) {
            Landed::Foreign(why) => {
                assert!(why.contains("offsets 10..11"), "{why}");
                assert!(why.contains("producer id 9"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        let plain = [batch(10, 11, -1, -1)];
        assert!(
            matches!(check_landed(w(7, 0), 10, &plain), Landed::Foreign(m) if m.contains("non-idempotent"))
        );
        let mut marker = batch(10, 10, 7, -1);
        marker.control = true;
        assert!(matches!(
            check_landed(w(7, 0), 10, &[marker]),
            Landed::Foreign(_)
        ));
        let gap = [batch(12, 13, 7, 0)];
        assert!(matches!(
            check_landed(w(7, 0), 10, &gap),
            Landed::Foreign(_)
        ));
        // Own batches, then a foreign one: still foreign.
        let mixed = [batch(10, 11, 7, 0), batch(12, 12, 8, 2)];
        assert!(matches!(
            check_landed(w(7, 0), 10, &mixed),
            Landed::Foreign(_)
        ));
    }

    /// The batch a planner with `producer` makes of one source batch holding `values`.
    fn planned(values: &[&str], producer: Option<Writer>) -> RewrittenBatch {
        use crate::forward::{PartitionPlanner, ProducerIdentity};
        use crate::records::record::{encode_batch, BatchHeaderFields, Record};
        use crate::records::Compression;
        let records: Vec<Record> = values
            .iter()
            .enumerate()
            .map(|(i, v)| Record {
                attributes: 0,
                timestamp_delta: i as i64,
                offset_delta: i as i32,
                key: None,
                value: Some(bytes::Bytes::from(v.to_string())),
                headers: Vec::new(),
            })
            .collect();
        let fields = BatchHeaderFields {
            base_offset: 40,
            partition_leader_epoch: 3,
            attributes: 0,
            base_timestamp: 1_700_000_000_000,
            max_timestamp: None,
            producer_id: 5,
            producer_epoch: 0,
            base_sequence: 0,
        };
        let blob = encode_batch(&fields, Compression::None, &records).unwrap();
        let fetched = crate::protocol::fetch::FetchedPartition {
            topic: "t".into(),
            topic_id: None,
            partition: 0,
            error_code: 0,
            high_watermark: 43,
            last_stable_offset: 43,
            log_start_offset: 0,
            aborted_transactions: Vec::new(),
            records: blob,
            diverging_epoch: None,
        };
        let identity = producer.map(|w| ProducerIdentity {
            id: w.producer_id,
            epoch: w.producer_epoch,
        });
        let seq = producer.map_or(0, |w| w.next_sequence);
        let mut planner = PartitionPlanner::new(40, identity, seq);
        let plan = planner.plan(&fetched).unwrap();
        assert_eq!(plan.outgoing[0].source_epoch, 3);
        plan.outgoing[0].batch.clone()
    }

    #[test]
    fn a_copy_on_the_target_is_recognised_by_its_crc() {
        let writer = w(77, 120);
        let sent = planned(&["a", "b", "c"], Some(writer));
        // As the broker stores it: another base offset and leader epoch, nothing else.
        let stored = sent.rewrite(&HeaderRewrite {
            base_offset: Some(900),
            partition_leader_epoch: Some(12),
            ..HeaderRewrite::default()
        });
        let found = OwnBatch {
            base_offset: 900,
            span: 3,
            repeat: false,
            base_sequence: 120,
            crc: stored.crc(),
            attributes: stored.attributes(),
            uncompressed_crc: None,
        };
        // Planned again later, without the identity: the same records are recognised...
        assert_eq!(
            copy_matches(&found, &planned(&["a", "b", "c"], None), writer),
            Some(true)
        );
        // ...other records at the same offsets are not, nor is another identity...
        assert_eq!(
            copy_matches(&found, &planned(&["a", "b", "x"], None), writer),
            Some(false)
        );
        assert_eq!(
            copy_matches(&found, &planned(&["a", "b", "c"], None), w(78, 120)),
            Some(false)
        );
        // ...and a batch the broker re-compressed cannot be told by its CRC.
        let recompressed = OwnBatch {
            attributes: crate::records::Compression::Zstd.attribute_bits(),
            ..found
        };
        assert_eq!(
            copy_matches(&recompressed, &planned(&["a", "b", "x"], None), writer),
            None
        );
    }

    /// `sent` (planned under the writer, sequence 120) as strait re-compressed it and the
    /// broker stored it at offset 900, and as the take-up finds it there; `None` when zstd does
    /// not make it smaller.
    fn found_recompressed(sent: &RewrittenBatch) -> Option<(OwnBatch, RecordBatch)> {
        use crate::forward::plan::MAX_DECODED_BATCH;
        use crate::records::recompress::{recompress, uncompressed_crc, Recompress};
        let zstd = recompress(sent, Recompress::Zstd).expect("zstd")?;
        // As the broker stores it: another base offset and leader epoch, nothing else.
        let stored = zstd.rewrite(&HeaderRewrite {
            base_offset: Some(900),
            partition_leader_epoch: Some(12),
            ..HeaderRewrite::default()
        });
        let read = RecordBatch::new(stored.to_bytes()).expect("a batch");
        let found = OwnBatch {
            base_offset: 900,
            span: i64::from(read.records_count()),
            repeat: false,
            base_sequence: sent.base_sequence(),
            crc: stored.crc(),
            attributes: stored.attributes(),
            uncompressed_crc: uncompressed_crc(&read, Recompress::Zstd, MAX_DECODED_BATCH)
                .expect("decompresses"),
        };
        Some((found, read))
    }

    #[test]
    fn a_batch_strait_recompressed_is_compared_by_its_crc_uncompressed() {
        use crate::forward::plan::MAX_DECODED_BATCH;
        use crate::records::recompress::{uncompressed_crc, Recompress};
        let writer = w(77, 120);
        let values: Vec<String> = (0..40)
            .map(|i| format!("reading {i} of sensor 7"))
            .collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let sent = planned(&values, Some(writer));
        let (found, read) = found_recompressed(&sent).expect("text shrinks");
        assert_eq!(found.span, 40);
        assert_eq!(found.uncompressed_crc, Some(sent.crc()));
        // The take-up plans the source without re-compressing: the CRCs on the wire differ,
        // and the one it had uncompressed tells the same records...
        let again = planned(&values, None);
        assert_ne!(again.crc(), found.crc);
        assert_eq!(copy_matches(&found, &again, writer), Some(true));
        // ...from other records at the same offsets, with the same count...
        let mut other = values.clone();
        other[3] = "x";
        assert_eq!(
            copy_matches(&found, &planned(&other, None), writer),
            Some(false)
        );
        // ...and from another identity.
        assert_eq!(copy_matches(&found, &again, w(78, 120)), Some(false));
        // Without `recompress` (or for another codec) the take-up does not decompress: a batch
        // the broker re-compressed cannot be told by its CRC.
        assert_eq!(
            uncompressed_crc(&read, Recompress::None, MAX_DECODED_BATCH),
            Ok(None)
        );
        let unknown = OwnBatch {
            uncompressed_crc: None,
            ..found
        };
        assert_eq!(copy_matches(&unknown, &planned(&other, None), writer), None);
        // A batch forwarded as it came (zstd did not make it smaller) keeps the CRC check.
        let kept = OwnBatch {
            crc: sent.crc(),
            attributes: sent.attributes(),
            ..unknown
        };
        assert_eq!(copy_matches(&kept, &again, writer), Some(true));
        assert_eq!(
            copy_matches(&kept, &planned(&other, None), writer),
            Some(false)
        );
    }

    proptest! {
        /// Whatever the records: a batch strait re-compressed is recognised as the copy of the
        /// same records planned again, and not of records that differ in one byte.
        #[test]
        fn recompressed_copies_are_told_from_other_records(
            values in proptest::collection::vec("[ab ]{20,60}", 1..30),
            at in any::<prop::sample::Index>(),
            byte in any::<prop::sample::Index>(),
        ) {
            let writer = w(77, 120);
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            let found = found_recompressed(&planned(&values, Some(writer)));
            prop_assume!(found.is_some());
            let (found, _) = found.expect("assumed");
            prop_assert_eq!(copy_matches(&found, &planned(&values, None), writer), Some(true));
            let mut other: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            let i = at.index(other.len());
            let j = byte.index(other[i].len());
            let flipped = if other[i].as_bytes()[j] == b'a' { "b" } else { "a" };
            other[i].replace_range(j..=j, flipped);
            let other: Vec<&str> = other.iter().map(String::as_str).collect();
            prop_assert_eq!(copy_matches(&found, &planned(&other, None), writer), Some(false));
        }

        #[test]
        fn records_round_trip(id in 0i64..i64::MAX, epoch in 0i16..i16::MAX, seq in 0i32..i32::MAX, start in 0i64..1_000_000) {
            let m = OffsetMap::new(start, start / 2);
            let writer = Some(Writer { producer_id: id, producer_epoch: epoch, next_sequence: seq });
            prop_assert_eq!(decode(&enc(&m, writer, None)), Some(Stored { map: m.clone(), writer, topic_id: None, leader_epoch: None }));
            let topic_id = Some([epoch as u8; 16]);
            prop_assert_eq!(decode(&enc(&m, writer, topic_id)), Some(Stored { map: m.clone(), writer, topic_id, leader_epoch: None }));
            let all = Stored { map: m.clone(), writer, topic_id, leader_epoch: Some(i32::from(epoch)) };
            prop_assert_eq!(decode(&encode(&all)), Some(all));
            prop_assert_eq!(decode(&enc(&m, None, topic_id)), Some(Stored { map: m, writer: None, topic_id, leader_epoch: None }));
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }
    }
}
