//! Where each replicated partition has got to, and how a restart finds its place again.
//!
//! A progress record says "source offsets below `source_next` are on the target, and the target
//! partition's log end was `target_next` at that moment". It is written to the target cluster
//! after produce acknowledgements, so it may lag behind the data. On restart the target's log
//! end tells how many records landed after the last progress record; the source is walked from
//! `source_next` with the same deterministic planning until exactly that many records are
//! accounted for. The result: no lost and no duplicated record, even after `kill -9`.

/// The compacted topic on each target cluster that holds progress records.
pub const PROGRESS_TOPIC: &str = "strait-progress.internal";

use crate::offsets::OffsetMap;

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

/// A stored progress record: the exact offset map and, for records written by this version on,
/// the writer identity at the map's end and the source topic's id.
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
}

/// Marks the writer section after the encoded offset map.
const WRITER_TAG: u8 = b'W';
/// Marks the source topic id section (after the writer section, if any).
const TOPIC_ID_TAG: u8 = b'T';

/// Parses a progress record value: the offset map, then optionally the writer section, then
/// optionally the topic id section. Anything else makes the record unreadable (`None`).
pub fn decode(value: &[u8]) -> Option<Stored> {
    let (map, used) = OffsetMap::decode_prefix(value).ok()?;
    let mut rest = &value[used..];
    let mut stored = Stored {
        map,
        writer: None,
        topic_id: None,
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
    rest.is_empty().then_some(stored)
}

/// Encodes a progress record value.
pub fn encode(map: &OffsetMap, writer: Option<Writer>, topic_id: Option<[u8; 16]>) -> Vec<u8> {
    let mut out = map.encode();
    if let Some(w) = writer {
        out.push(WRITER_TAG);
        crate::offsets::put_varint(&mut out, w.producer_id);
        crate::offsets::put_varint(&mut out, i64::from(w.producer_epoch));
        crate::offsets::put_varint(&mut out, i64::from(w.next_sequence));
    }
    if let Some(id) = topic_id {
        out.push(TOPIC_ID_TAG);
        out.extend_from_slice(&id);
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
        let back = decode(&encode(&m, None, None)).unwrap().map;
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
    use proptest::prelude::*;

    fn w(id: i64, seq: i32) -> Writer {
        Writer {
            producer_id: id,
            producer_epoch: 0,
            next_sequence: seq,
        }
    }

    fn batch(base: i64, last: i64, pid: i64, seq: i32) -> LandedBatch {
        LandedBatch {
            base_offset: base,
            last_offset: last,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: seq,
            control: false,
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
            })
        );
        let new = encode(&m, Some(w(77, 12)), None);
        assert_eq!(decode(&new).unwrap().writer, Some(w(77, 12)));
        let mut bad = new.clone();
        bad.push(0);
        assert_eq!(decode(&bad), None);
        assert_eq!(decode(&new[..new.len() - 1]), None);
        let with_id = encode(&m, Some(w(77, 12)), Some([9; 16]));
        assert_eq!(decode(&with_id).unwrap().topic_id, Some([9; 16]));
        assert_eq!(decode(&with_id[..with_id.len() - 1]), None);
    }

    #[test]
    fn own_batches_continue_the_sequence() {
        let own = |base, span| OwnBatch {
            base_offset: base,
            span,
            repeat: false,
        };
        let l = [batch(10, 14, 7, 20), batch(15, 15, 7, 25)];
        assert_eq!(
            check_landed(w(7, 20), 10, &l),
            Landed::Own {
                batches: vec![own(10, 5), own(15, 1)],
                writer: w(7, 26)
            }
        );
        // Batches before the stored position (fetched because they share its batch) are skipped.
        assert_eq!(
            check_landed(w(7, 25), 15, &l),
            Landed::Own {
                batches: vec![own(15, 1)],
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
        let mut repeat = own(15, 5);
        repeat.repeat = true;
        assert_eq!(
            check_landed(w(7, 20), 10, &again),
            Landed::Own {
                batches: vec![own(10, 5), repeat, own(20, 1)],
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

    proptest! {
        #[test]
        fn records_round_trip(id in 0i64..i64::MAX, epoch in 0i16..i16::MAX, seq in 0i32..i32::MAX, start in 0i64..1_000_000) {
            let m = OffsetMap::new(start, start / 2);
            let writer = Some(Writer { producer_id: id, producer_epoch: epoch, next_sequence: seq });
            prop_assert_eq!(decode(&encode(&m, writer, None)), Some(Stored { map: m.clone(), writer, topic_id: None }));
            let topic_id = Some([epoch as u8; 16]);
            prop_assert_eq!(decode(&encode(&m, writer, topic_id)), Some(Stored { map: m.clone(), writer, topic_id }));
            prop_assert_eq!(decode(&encode(&m, None, topic_id)), Some(Stored { map: m, writer: None, topic_id }));
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes);
        }
    }
}
