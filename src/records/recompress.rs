//! Optional re-compression of uncompressed batches on their way to the target (a flow's
//! `recompress = "zstd"`), for links where bytes cost more than CPU.
//!
//! A batch is re-compressed exactly as Apache Kafka's producer builds a compressed batch: the
//! 61-byte header stays (base offset, last offset delta, timestamps, producer fields, record
//! count, transactional and timestamp-type bits), the records section after it becomes one zstd
//! frame of the same bytes, and only the codec bits of `attributes`, `batchLength` and the CRC
//! change. Control batches and batches already compressed are never touched, and a batch that
//! does not get smaller is sent as it came. Pure functions, no I/O.

use bytes::Bytes;

use super::batch::{
    ATTRIBUTES, ATTR_CODEC_MASK, ATTR_CONTROL, BATCH_LENGTH, CRC, HEADER_LEN, LOG_OVERHEAD, MAGIC,
};
use super::codec::CodecError;
use super::{codec, Compression, RecordBatch, RewrittenBatch};

/// A flow's `recompress` setting: what uncompressed batches become on the target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Recompress {
    /// Batches are forwarded as they came (the default).
    #[default]
    None,
    /// Uncompressed data batches are sent zstd-compressed (level 3, Kafka's default).
    Zstd,
}

impl Recompress {
    /// The configuration value (`none`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Recompress::None => "none",
            Recompress::Zstd => "zstd",
        }
    }

    /// The codec batches are re-compressed with (`None`: re-compression is off).
    pub fn codec(self) -> Option<Compression> {
        match self {
            Recompress::None => None,
            Recompress::Zstd => Some(Compression::Zstd),
        }
    }
}

impl std::str::FromStr for Recompress {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(Recompress::None),
            "zstd" => Ok(Recompress::Zstd),
            _ => Err(format!("unknown recompress codec `{}`", s.trim())),
        }
    }
}

/// Whether `batch` is one re-compression applies to: magic 2, no codec, not a control batch.
pub fn eligible(batch: &RewrittenBatch) -> bool {
    let attributes = batch.attributes();
    batch.header[MAGIC] == 2
        && attributes & ATTR_CODEC_MASK == Compression::None.attribute_bits()
        && attributes & ATTR_CONTROL == 0
}

/// `batch` with its records section compressed with `to`, when it is [`eligible`] and the
/// result is smaller; `Ok(None)` otherwise (forward `batch` as it is), `Err` when the codec
/// failed (forward it as it is, and say so). Every header field but the codec bits,
/// `batchLength` and the CRC is kept; the CRC is computed afresh over attributes to the end.
pub fn recompress(
    batch: &RewrittenBatch,
    to: Recompress,
) -> Result<Option<RewrittenBatch>, CodecError> {
    let Some(codec) = to.codec() else {
        return Ok(None);
    };
    if !eligible(batch) {
        return Ok(None);
    }
    let compressed = codec::compress(codec, &batch.records)?;
    if compressed.len() >= batch.records.len() {
        return Ok(None);
    }
    let Ok(batch_length) = i32::try_from(HEADER_LEN - LOG_OVERHEAD + compressed.len()) else {
        return Ok(None);
    };
    let mut header = batch.header;
    let attributes = (batch.attributes() & !ATTR_CODEC_MASK) | codec.attribute_bits();
    header[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    header[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&batch_length.to_be_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&header[ATTRIBUTES..]), &compressed);
    header[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(Some(RewrittenBatch {
        header,
        records: Bytes::from(compressed),
    }))
}

/// The CRC `batch` had before [`recompress`] compressed it with `to`: over its header from the
/// attributes on with the codec bits cleared, then its records decompressed (at most `limit`
/// bytes). `Ok(None)` when `batch` is not compressed with `to`'s codec; `Err` when it does not
/// decompress. Equal to the CRC of the uncompressed batch strait planned from the same source
/// records under the same header: what the take-up after a restart compares.
pub fn uncompressed_crc(
    batch: &RecordBatch,
    to: Recompress,
    limit: usize,
) -> Result<Option<u32>, CodecError> {
    let Some(codec) = to.codec() else {
        return Ok(None);
    };
    let Some(fields) = batch.bytes().get(ATTRIBUTES..HEADER_LEN) else {
        return Ok(None);
    };
    if batch.magic() != 2 || batch.compression() != Some(codec) {
        return Ok(None);
    }
    let records = codec::decompress(codec, &batch.records_region(), limit)?;
    let mut header = [0u8; HEADER_LEN - ATTRIBUTES];
    header.copy_from_slice(fields);
    let attributes = batch.attributes() & !ATTR_CODEC_MASK;
    header[..2].copy_from_slice(&attributes.to_be_bytes());
    Ok(Some(crc32c::crc32c_append(
        crc32c::crc32c(&header),
        &records,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::batch::{
        ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL, BASE_OFFSET, BASE_TIMESTAMP, LAST_OFFSET_DELTA,
        MAX_TIMESTAMP, PRODUCER_ID, RECORDS_COUNT,
    };
    use crate::records::record::{
        decode_records, encode_batch, BatchHeaderFields, Record, RecordHeader,
    };
    use crate::records::{HeaderRewrite, RecordBatch};
    use proptest::prelude::*;

    /// A batch of `values` (keys `k<i>`, one header on every other record) with `codec` and
    /// `attributes`, as strait would send it (header rewritten for producer 7).
    fn batch(values: &[Vec<u8>], codec: Compression, attributes: i16) -> RewrittenBatch {
        let records: Vec<Record> = values
            .iter()
            .enumerate()
            .map(|(i, v)| Record {
                attributes: 0,
                timestamp_delta: i as i64 * 3,
                offset_delta: i as i32,
                key: Some(Bytes::from(format!("k{i}"))),
                value: (i % 5 != 4).then(|| Bytes::from(v.clone())),
                headers: if i % 2 == 0 {
                    vec![RecordHeader {
                        key: Bytes::from(format!("h{i}")),
                        value: Some(Bytes::from_static(b"hv")),
                    }]
                } else {
                    Vec::new()
                },
            })
            .collect();
        let fields = BatchHeaderFields {
            base_offset: 0,
            partition_leader_epoch: -1,
            attributes,
            base_timestamp: 1_700_000_000_000,
            max_timestamp: None,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
        };
        let raw = encode_batch(&fields, codec, &records).expect("encode");
        RecordBatch::new(raw)
            .expect("batch")
            .rewrite(&HeaderRewrite {
                producer_id: Some(7),
                producer_epoch: Some(2),
                base_sequence: Some(1000),
                ..HeaderRewrite::default()
            })
    }

    fn text(n: usize, seed: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                format!(
                    "order {} of customer {} shipped to warehouse {}",
                    i + seed,
                    i % 7,
                    i % 3
                )
                .into_bytes()
            })
            .collect()
    }

    /// The header bytes that must survive re-compression unchanged.
    const KEPT: [(usize, usize); 8] = [
        (BASE_OFFSET, 8),
        (12, 4), // partitionLeaderEpoch
        (MAGIC, 1),
        (LAST_OFFSET_DELTA, 4),
        (BASE_TIMESTAMP, 8),
        (MAX_TIMESTAMP, 8),
        (PRODUCER_ID, 8 + 2 + 4), // producerId, producerEpoch, baseSequence
        (RECORDS_COUNT, 4),
    ];

    /// Checks everything re-compression promises about `out`, made from `orig`.
    fn check_round_trip(orig: &RewrittenBatch, out: &RewrittenBatch) {
        for (at, len) in KEPT {
            assert_eq!(
                orig.header[at..at + len],
                out.header[at..at + len],
                "field at {at}"
            );
        }
        assert_eq!(
            orig.attributes() & !ATTR_CODEC_MASK,
            out.attributes() & !ATTR_CODEC_MASK
        );
        assert_eq!(out.attributes() & ATTR_CODEC_MASK, 4, "zstd codec bits");
        assert!(out.len() < orig.len());
        let parsed = RecordBatch::new(out.to_bytes()).expect("parses");
        parsed.verify_crc().expect("crc32c over attributes..end");
        assert_eq!(
            crc32c::crc32c(&out.to_bytes()[ATTRIBUTES..]),
            out.crc(),
            "stored CRC"
        );
        assert_eq!(parsed.compression(), Some(Compression::Zstd));
        assert_eq!(
            uncompressed_crc(&parsed, Recompress::Zstd, 1 << 26),
            Ok(Some(orig.crc())),
            "the CRC it had uncompressed, as the take-up compares it"
        );
        assert_eq!(
            uncompressed_crc(&parsed, Recompress::None, 1 << 26),
            Ok(None)
        );
        let section = codec::decompress(Compression::Zstd, &out.records, 1 << 26).expect("zstd");
        assert_eq!(section, orig.records.to_vec(), "records section");
        let before = decode_records(&RecordBatch::new(orig.to_bytes()).expect("orig"), 1 << 26);
        assert_eq!(decode_records(&parsed, 1 << 26), before, "records");
        assert_eq!(parsed.records_count(), orig.records_count());
        assert_eq!(parsed.base_sequence(), orig.base_sequence());
        assert_eq!(parsed.producer_id(), 7);
        assert_eq!(parsed.producer_epoch(), 2);
    }

    #[test]
    fn text_batch_becomes_a_smaller_zstd_batch_with_the_same_records() {
        let orig = batch(&text(200, 0), Compression::None, 0);
        let out = recompress(&orig, Recompress::Zstd)
            .expect("zstd")
            .expect("smaller");
        check_round_trip(&orig, &out);
    }

    #[test]
    fn transactional_and_log_append_time_bits_are_kept() {
        let attrs = ATTR_TRANSACTIONAL | ATTR_LOG_APPEND_TIME;
        let orig = batch(&text(50, 3), Compression::None, attrs);
        let out = recompress(&orig, Recompress::Zstd)
            .expect("zstd")
            .expect("smaller");
        check_round_trip(&orig, &out);
        assert_eq!(out.attributes(), attrs | 4);
    }

    #[test]
    fn off_control_and_compressed_batches_are_untouched() {
        let plain = batch(&text(100, 0), Compression::None, 0);
        assert_eq!(recompress(&plain, Recompress::None), Ok(None));
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let b = batch(&text(100, 0), codec, 0);
            assert!(!eligible(&b));
            assert_eq!(recompress(&b, Recompress::Zstd), Ok(None), "{codec:?}");
        }
        let control = batch(&vec![Vec::new(); 30], Compression::None, ATTR_CONTROL);
        assert!(!eligible(&control));
        assert_eq!(recompress(&control, Recompress::Zstd), Ok(None));
    }

    #[test]
    fn incompressible_batch_is_kept() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let noise: Vec<Vec<u8>> = (0..2)
            .map(|_| {
                (0..4000)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect()
            })
            .collect();
        let orig = batch(&noise, Compression::None, 0);
        assert!(eligible(&orig));
        assert_eq!(recompress(&orig, Recompress::Zstd), Ok(None));
    }

    #[test]
    fn setting_parses() {
        assert_eq!("zstd".parse(), Ok(Recompress::Zstd));
        assert_eq!(" None ".parse(), Ok(Recompress::None));
        assert!("lz4".parse::<Recompress>().is_err());
        assert_eq!(Recompress::default(), Recompress::None);
        assert_eq!(Recompress::Zstd.name(), "zstd");
    }

    proptest! {
        #[test]
        fn recompressed_batches_round_trip(
            values in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..300), 1..40),
            transactional in any::<bool>(),
            seq in 0i32..i32::MAX,
        ) {
            let attrs = if transactional { ATTR_TRANSACTIONAL } else { 0 };
            let orig = batch(&values, Compression::None, attrs).rewrite(&HeaderRewrite {
                base_sequence: Some(seq),
                ..HeaderRewrite::default()
            });
            match recompress(&orig, Recompress::Zstd).expect("zstd") {
                Some(out) => check_round_trip(&orig, &out),
                None => {
                    // Kept only when zstd does not make it smaller.
                    let z = codec::compress(Compression::Zstd, &orig.records).expect("zstd");
                    prop_assert!(z.len() >= orig.records.len());
                }
            }
            prop_assert_eq!(orig.base_sequence(), seq);
        }
    }
}
