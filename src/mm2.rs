//! MirrorMaker 2's internal record formats, sans-io, so strait can read and write the heartbeats,
//! checkpoints and offset syncs that MM2 tooling (`RemoteClusterUtils`, `MirrorClient`,
//! `kafka-console-consumer` formatters) understands.
//!
//! MM2 writes these records with Kafka's "Struct" encoding: fields back to back, no tags, no
//! lengths except for strings. `INT16`/`INT32`/`INT64` are big-endian two's complement and a
//! `STRING` is an `INT16` byte length (0..=32767) followed by that many bytes of UTF-8.
//!
//! | record | key | value |
//! | --- | --- | --- |
//! | [`Heartbeat`] | source alias, target alias | version `INT16` 0, timestamp `INT64` |
//! | [`Checkpoint`] | group, topic, partition `INT32` | version `INT16` 0, upstream offset, downstream offset, metadata |
//! | [`OffsetSync`] | topic, partition `INT32` | upstream offset `INT64`, downstream offset `INT64` (no version) |
//!
//! Decoding is stricter than MM2's Java reader: it rejects invalid UTF-8 (Java substitutes
//! U+FFFD), value versions other than 0 (Java only `assert`s) and bytes left over after the last
//! field (Java ignores them). Encoding fails, as MM2's does, on a string longer than 32767 bytes.

use thiserror::Error;

/// Default name of the heartbeats topic MM2's heartbeat connector writes to on the target
/// cluster (renamed per flow: [`crate::naming::Mm2Topics`]).
///
/// Replicated heartbeats topics carry the usual remote-topic prefix (`A.heartbeats`); see
/// [`crate::naming::Mm2Topics::is_heartbeats_topic`].
pub const HEARTBEATS_TOPIC: &str = "heartbeats";

/// The value version MM2 writes in heartbeat and checkpoint values, the only one it defines.
pub(crate) const VALUE_VERSION: i16 = 0;

/// Largest byte length a Kafka `STRING` can have.
pub(crate) const MAX_STRING_LEN: usize = i16::MAX as usize;

/// Why an MM2 internal record could not be decoded or encoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Mm2FormatError {
    /// The input ended inside a field.
    #[error(
        "{record} {part} truncated in field `{field}`: needs {needed} bytes, {available} left"
    )]
    Truncated {
        /// Record type (`heartbeat`, `checkpoint`, `offset sync`).
        record: &'static str,
        /// `key` or `value`.
        part: &'static str,
        /// The field being read.
        field: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A string field declared a negative length (Kafka's `STRING` is not nullable).
    #[error("{record} {part} field `{field}` has negative string length {length}")]
    NegativeLength {
        /// Record type.
        record: &'static str,
        /// `key` or `value`.
        part: &'static str,
        /// The string field.
        field: &'static str,
        /// The declared length.
        length: i16,
    },
    /// A string field is not valid UTF-8.
    #[error("{record} {part} field `{field}` is not valid UTF-8")]
    InvalidUtf8 {
        /// Record type.
        record: &'static str,
        /// `key` or `value`.
        part: &'static str,
        /// The string field.
        field: &'static str,
    },
    /// The value's version header is not one this module knows (only 0 exists).
    #[error("{record} value has unknown version {version} (only {VALUE_VERSION} is defined)")]
    UnknownVersion {
        /// Record type.
        record: &'static str,
        /// The version read.
        version: i16,
    },
    /// Bytes remain after the last field.
    #[error("{record} {part} has {count} trailing bytes after its last field")]
    TrailingBytes {
        /// Record type.
        record: &'static str,
        /// `key` or `value`.
        part: &'static str,
        /// How many bytes were left over.
        count: usize,
    },
    /// A string to encode is longer than a Kafka `STRING` can hold.
    #[error("{record} field `{field}` is {length} bytes of UTF-8, over the {MAX_STRING_LEN}-byte string limit")]
    StringTooLong {
        /// Record type.
        record: &'static str,
        /// The string field.
        field: &'static str,
        /// Its UTF-8 length.
        length: usize,
    },
}

const HEARTBEAT: &str = "heartbeat";
const CHECKPOINT: &str = "checkpoint";
const OFFSET_SYNC: &str = "offset sync";
const KEY: &str = "key";
const VALUE: &str = "value";

/// A heartbeat: MM2's heartbeat connector writes one per interval to [`HEARTBEATS_TOPIC`] on the
/// target cluster, and replication carries it onwards, so its presence downstream proves a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Heartbeat {
    /// Alias of the cluster the heartbeat describes replication from.
    pub source_cluster_alias: String,
    /// Alias of the cluster the heartbeat was first written to.
    pub target_cluster_alias: String,
    /// Wall-clock time of emission, milliseconds since the Unix epoch.
    pub timestamp_ms: i64,
}

impl Heartbeat {
    /// The record key: `{sourceClusterAlias STRING, targetClusterAlias STRING}`.
    pub fn encode_key(&self) -> Result<Vec<u8>, Mm2FormatError> {
        let mut w = Writer::new(HEARTBEAT);
        w.string("sourceClusterAlias", &self.source_cluster_alias)?;
        w.string("targetClusterAlias", &self.target_cluster_alias)?;
        Ok(w.finish())
    }

    /// The record value: `{version INT16 = 0}{timestamp INT64}`.
    pub fn encode_value(&self) -> Vec<u8> {
        let mut w = Writer::new(HEARTBEAT);
        w.i16(VALUE_VERSION);
        w.i64(self.timestamp_ms);
        w.finish()
    }

    /// Decodes a heartbeat record from its key and value bytes.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Heartbeat, Mm2FormatError> {
        let mut k = Reader::new(HEARTBEAT, KEY, key);
        let source_cluster_alias = k.string("sourceClusterAlias")?;
        let target_cluster_alias = k.string("targetClusterAlias")?;
        k.finish()?;

        let mut v = Reader::new(HEARTBEAT, VALUE, value);
        v.version()?;
        let timestamp_ms = v.i64("timestamp")?;
        v.finish()?;

        Ok(Heartbeat {
            source_cluster_alias,
            target_cluster_alias,
            timestamp_ms,
        })
    }
}

/// A checkpoint: a consumer group's committed offset on the source cluster and its translation
/// to the target cluster, written by MM2's checkpoint connector to
/// [`checkpoints`](crate::naming::Mm2Topics::checkpoints)`(source)` on the target cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Checkpoint {
    /// The consumer group.
    pub consumer_group_id: String,
    /// The topic as named on the target cluster (MM2's `MirrorCheckpointTask` renames the
    /// source topic before writing: `topic1` from `A` becomes `A.topic1`, and a topic that came
    /// from the target itself gets its original name back; see
    /// [`crate::naming::ReplicationPolicy::checkpoint_target_topic`]).
    pub topic: String,
    /// The partition (same number on both clusters).
    pub partition: i32,
    /// The group's committed offset on the source cluster.
    pub upstream_offset: i64,
    /// The translated offset on the target cluster.
    pub downstream_offset: i64,
    /// The commit metadata carried over from the source commit (often empty).
    pub metadata: String,
}

impl Checkpoint {
    /// The record key: `{group STRING, topic STRING, partition INT32}`.
    pub fn encode_key(&self) -> Result<Vec<u8>, Mm2FormatError> {
        let mut w = Writer::new(CHECKPOINT);
        w.string("group", &self.consumer_group_id)?;
        w.string("topic", &self.topic)?;
        w.i32(self.partition);
        Ok(w.finish())
    }

    /// The record value: `{version INT16 = 0}{upstreamOffset INT64, offset INT64, metadata STRING}`.
    pub fn encode_value(&self) -> Result<Vec<u8>, Mm2FormatError> {
        let mut w = Writer::new(CHECKPOINT);
        w.i16(VALUE_VERSION);
        w.i64(self.upstream_offset);
        w.i64(self.downstream_offset);
        w.string("metadata", &self.metadata)?;
        Ok(w.finish())
    }

    /// Decodes a checkpoint record from its key and value bytes.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<Checkpoint, Mm2FormatError> {
        let mut k = Reader::new(CHECKPOINT, KEY, key);
        let consumer_group_id = k.string("group")?;
        let topic = k.string("topic")?;
        let partition = k.i32("partition")?;
        k.finish()?;

        let mut v = Reader::new(CHECKPOINT, VALUE, value);
        v.version()?;
        let upstream_offset = v.i64("upstreamOffset")?;
        let downstream_offset = v.i64("offset")?;
        let metadata = v.string("metadata")?;
        v.finish()?;

        Ok(Checkpoint {
            consumer_group_id,
            topic,
            partition,
            upstream_offset,
            downstream_offset,
            metadata,
        })
    }
}

/// An offset sync: a pair of offsets known to hold the same record on the source and target
/// partitions, written by MM2's source connector to [`offset_syncs`](crate::naming::Mm2Topics::offset_syncs)`(target)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OffsetSync {
    /// The topic as named on the source cluster.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// Offset of the record on the source partition.
    pub upstream_offset: i64,
    /// Offset of the same record on the target partition.
    pub downstream_offset: i64,
}

impl OffsetSync {
    /// The record key: `{topic STRING, partition INT32}`.
    pub fn encode_key(&self) -> Result<Vec<u8>, Mm2FormatError> {
        let mut w = Writer::new(OFFSET_SYNC);
        w.string("topic", &self.topic)?;
        w.i32(self.partition);
        Ok(w.finish())
    }

    /// The record value: `{upstreamOffset INT64, offset INT64}`, with no version header.
    pub fn encode_value(&self) -> Vec<u8> {
        let mut w = Writer::new(OFFSET_SYNC);
        w.i64(self.upstream_offset);
        w.i64(self.downstream_offset);
        w.finish()
    }

    /// Decodes an offset-sync record from its key and value bytes.
    pub fn decode(key: &[u8], value: &[u8]) -> Result<OffsetSync, Mm2FormatError> {
        let mut k = Reader::new(OFFSET_SYNC, KEY, key);
        let topic = k.string("topic")?;
        let partition = k.i32("partition")?;
        k.finish()?;

        let mut v = Reader::new(OFFSET_SYNC, VALUE, value);
        let upstream_offset = v.i64("upstreamOffset")?;
        let downstream_offset = v.i64("offset")?;
        v.finish()?;

        Ok(OffsetSync {
            topic,
            partition,
            upstream_offset,
            downstream_offset,
        })
    }
}

/// Appends Struct-encoded fields.
struct Writer {
    record: &'static str,
    buf: Vec<u8>,
}

impl Writer {
    fn new(record: &'static str) -> Self {
        Writer {
            record,
            buf: Vec::with_capacity(64),
        }
    }

    fn i16(&mut self, v: i16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn string(&mut self, field: &'static str, s: &str) -> Result<(), Mm2FormatError> {
        let len = i16::try_from(s.len()).map_err(|_| Mm2FormatError::StringTooLong {
            record: self.record,
            field,
            length: s.len(),
        })?;
        self.i16(len);
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }

    fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// Reads Struct-encoded fields from one key or value, never past its end.
struct Reader<'a> {
    record: &'static str,
    part: &'static str,
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(record: &'static str, part: &'static str, bytes: &'a [u8]) -> Self {
        Reader {
            record,
            part,
            rest: bytes,
        }
    }

    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], Mm2FormatError> {
        if self.rest.len() < n {
            return Err(Mm2FormatError::Truncated {
                record: self.record,
                part: self.part,
                field,
                needed: n,
                available: self.rest.len(),
            });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], Mm2FormatError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(field, N)?);
        Ok(out)
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, Mm2FormatError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, Mm2FormatError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, Mm2FormatError> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    fn string(&mut self, field: &'static str) -> Result<String, Mm2FormatError> {
        let length = self.i16(field)?;
        let len = usize::try_from(length).map_err(|_| Mm2FormatError::NegativeLength {
            record: self.record,
            part: self.part,
            field,
            length,
        })?;
        let bytes = self.take(field, len)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(Mm2FormatError::InvalidUtf8 {
                record: self.record,
                part: self.part,
                field,
            }),
        }
    }

    fn version(&mut self) -> Result<(), Mm2FormatError> {
        let version = self.i16("version")?;
        if version == VALUE_VERSION {
            Ok(())
        } else {
            Err(Mm2FormatError::UnknownVersion {
                record: self.record,
                version,
            })
        }
    }

    fn finish(self) -> Result<(), Mm2FormatError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Mm2FormatError::TrailingBytes {
                record: self.record,
                part: self.part,
                count: self.rest.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn heartbeat() -> Heartbeat {
        Heartbeat {
            source_cluster_alias: "A".into(),
            target_cluster_alias: "B".into(),
            timestamp_ms: 0x0102_0304_0506_0708,
        }
    }

    fn checkpoint() -> Checkpoint {
        Checkpoint {
            consumer_group_id: "g".into(),
            topic: "A.t".into(),
            partition: 2,
            upstream_offset: 5,
            downstream_offset: 3,
            metadata: "m".into(),
        }
    }

    fn offset_sync() -> OffsetSync {
        OffsetSync {
            topic: "t".into(),
            partition: 1,
            upstream_offset: 256,
            downstream_offset: -1,
        }
    }

    #[test]
    fn topic_names() {
        assert_eq!(HEARTBEATS_TOPIC, "heartbeats");
        let names = crate::naming::Mm2Topics::default();
        assert_eq!(names.checkpoints("us-west"), "us-west.checkpoints.internal");
        assert_eq!(
            names.offset_syncs("us-east"),
            "mm2-offset-syncs.us-east.internal"
        );
    }

    #[test]
    fn heartbeat_golden_bytes() {
        let hb = heartbeat();
        assert_eq!(hb.encode_key(), Ok(vec![0, 1, b'A', 0, 1, b'B']));
        assert_eq!(hb.encode_value(), vec![0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            Heartbeat::decode(&[0, 1, b'A', 0, 1, b'B'], &[0, 0, 1, 2, 3, 4, 5, 6, 7, 8]),
            Ok(hb)
        );
    }

    #[test]
    fn checkpoint_golden_bytes() {
        let cp = checkpoint();
        let key = vec![0, 1, b'g', 0, 3, b'A', b'.', b't', 0, 0, 0, 2];
        #[rustfmt::skip]
        let value = vec![
            0, 0,                   // version
            0, 0, 0, 0, 0, 0, 0, 5, // upstreamOffset
            0, 0, 0, 0, 0, 0, 0, 3, // offset
            0, 1, b'm',             // metadata
        ];
        assert_eq!(cp.encode_key(), Ok(key.clone()));
        assert_eq!(cp.encode_value(), Ok(value.clone()));
        assert_eq!(Checkpoint::decode(&key, &value), Ok(cp));
    }

    #[test]
    fn offset_sync_golden_bytes() {
        let os = offset_sync();
        let key = vec![0, 1, b't', 0, 0, 0, 1];
        #[rustfmt::skip]
        let value = vec![
            0, 0, 0, 0, 0, 0, 1, 0,                         // upstreamOffset 256
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // offset -1
        ];
        assert_eq!(os.encode_key(), Ok(key.clone()));
        assert_eq!(os.encode_value(), value);
        assert_eq!(OffsetSync::decode(&key, &value), Ok(os));
    }

    #[test]
    fn empty_strings_encode_as_zero_length() {
        let cp = Checkpoint {
            metadata: String::new(),
            ..checkpoint()
        };
        let value = cp.encode_value().unwrap();
        assert_eq!(&value[value.len() - 2..], &[0, 0]);
        assert_eq!(
            Checkpoint::decode(&cp.encode_key().unwrap(), &value),
            Ok(cp)
        );
    }

    #[test]
    fn truncation_is_reported_per_field() {
        let key = heartbeat().encode_key().unwrap();
        let value = heartbeat().encode_value();
        assert_eq!(
            Heartbeat::decode(&key[..5], &value),
            Err(Mm2FormatError::Truncated {
                record: "heartbeat",
                part: "key",
                field: "targetClusterAlias",
                needed: 1,
                available: 0,
            })
        );
        assert_eq!(
            Heartbeat::decode(&key, &value[..9]),
            Err(Mm2FormatError::Truncated {
                record: "heartbeat",
                part: "value",
                field: "timestamp",
                needed: 8,
                available: 7,
            })
        );
        assert!(matches!(
            OffsetSync::decode(&[], &[]),
            Err(Mm2FormatError::Truncated { field: "topic", .. })
        ));
    }

    #[test]
    fn unknown_version_is_rejected() {
        let mut value = heartbeat().encode_value();
        value[1] = 1;
        assert_eq!(
            Heartbeat::decode(&heartbeat().encode_key().unwrap(), &value),
            Err(Mm2FormatError::UnknownVersion {
                record: "heartbeat",
                version: 1
            })
        );
        let cp = checkpoint();
        let mut value = cp.encode_value().unwrap();
        value[0] = 0xff;
        assert!(matches!(
            Checkpoint::decode(&cp.encode_key().unwrap(), &value),
            Err(Mm2FormatError::UnknownVersion { version, .. }) if version < 0
        ));
    }

    #[test]
    fn trailing_bytes_are_rejected() {
        let os = offset_sync();
        let mut key = os.encode_key().unwrap();
        key.push(0);
        assert_eq!(
            OffsetSync::decode(&key, &os.encode_value()),
            Err(Mm2FormatError::TrailingBytes {
                record: "offset sync",
                part: "key",
                count: 1
            })
        );
        let mut value = os.encode_value();
        value.extend_from_slice(&[1, 2]);
        assert_eq!(
            OffsetSync::decode(&os.encode_key().unwrap(), &value),
            Err(Mm2FormatError::TrailingBytes {
                record: "offset sync",
                part: "value",
                count: 2
            })
        );
    }

    #[test]
    fn bad_strings_are_rejected() {
        let value = heartbeat().encode_value();
        assert!(matches!(
            Heartbeat::decode(&[0xff, 0xfe, b'A'], &value),
            Err(Mm2FormatError::NegativeLength { length: -2, .. })
        ));
        assert!(matches!(
            Heartbeat::decode(&[0, 1, 0xc3, 0, 1, b'B'], &value),
            Err(Mm2FormatError::InvalidUtf8 {
                field: "sourceClusterAlias",
                ..
            })
        ));
        assert!(matches!(
            Heartbeat::decode(&[0, 9, b'A'], &value),
            Err(Mm2FormatError::Truncated {
                needed: 9,
                available: 1,
                ..
            })
        ));
    }

    #[test]
    fn string_length_limit_matches_kafka() {
        let at_limit = Checkpoint {
            metadata: "x".repeat(MAX_STRING_LEN),
            ..checkpoint()
        };
        let value = at_limit.encode_value().unwrap();
        assert_eq!(&value[18..20], &[0x7f, 0xff]);
        assert_eq!(
            Checkpoint::decode(&at_limit.encode_key().unwrap(), &value),
            Ok(at_limit)
        );
        let over = Checkpoint {
            metadata: "x".repeat(MAX_STRING_LEN + 1),
            ..checkpoint()
        };
        assert_eq!(
            over.encode_value(),
            Err(Mm2FormatError::StringTooLong {
                record: "checkpoint",
                field: "metadata",
                length: MAX_STRING_LEN + 1
            })
        );
    }

    #[test]
    fn errors_render_one_line() {
        let err = Heartbeat::decode(&[], &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            "heartbeat key truncated in field `sourceClusterAlias`: needs 2 bytes, 0 left"
        );
    }

    fn short_string() -> impl Strategy<Value = String> {
        proptest::string::string_regex(".{0,40}").unwrap()
    }

    proptest! {
        #[test]
        fn heartbeat_round_trips(s in short_string(), t in short_string(), ts in any::<i64>()) {
            let hb = Heartbeat { source_cluster_alias: s, target_cluster_alias: t, timestamp_ms: ts };
            let key = hb.encode_key().unwrap();
            prop_assert_eq!(Heartbeat::decode(&key, &hb.encode_value()), Ok(hb));
        }

        #[test]
        fn checkpoint_round_trips(
            g in short_string(), t in short_string(), p in any::<i32>(),
            up in any::<i64>(), down in any::<i64>(), m in short_string(),
        ) {
            let cp = Checkpoint {
                consumer_group_id: g, topic: t, partition: p,
                upstream_offset: up, downstream_offset: down, metadata: m,
            };
            let (key, value) = (cp.encode_key().unwrap(), cp.encode_value().unwrap());
            prop_assert_eq!(Checkpoint::decode(&key, &value), Ok(cp));
        }

        #[test]
        fn offset_sync_round_trips(t in short_string(), p in any::<i32>(), up in any::<i64>(), down in any::<i64>()) {
            let os = OffsetSync { topic: t, partition: p, upstream_offset: up, downstream_offset: down };
            let key = os.encode_key().unwrap();
            prop_assert_eq!(OffsetSync::decode(&key, &os.encode_value()), Ok(os));
        }

        #[test]
        fn decoding_random_bytes_never_panics(
            key in proptest::collection::vec(any::<u8>(), 0..64),
            value in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let _ = Heartbeat::decode(&key, &value);
            let _ = Checkpoint::decode(&key, &value);
            let _ = OffsetSync::decode(&key, &value);
        }

        #[test]
        fn every_proper_prefix_is_an_error(cut in 0usize..1000, g in short_string(), m in short_string()) {
            let cp = Checkpoint { consumer_group_id: g, metadata: m, ..checkpoint() };
            let key = cp.encode_key().unwrap();
            let value = cp.encode_value().unwrap();
            let k = cut % key.len();
            let v = cut % value.len();
            let key_cut_is_truncated = matches!(
                Checkpoint::decode(&key[..k], &value),
                Err(Mm2FormatError::Truncated { part: "key", .. })
            );
            prop_assert!(key_cut_is_truncated);
            let value_cut_is_truncated = matches!(
                Checkpoint::decode(&key, &value[..v]),
                Err(Mm2FormatError::Truncated { part: "value", .. })
            );
            prop_assert!(value_cut_is_truncated);
        }
    }
}
