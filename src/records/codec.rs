//! Compression codecs for record batches, with the framings Apache Kafka's Java client reads and
//! writes.
//!
//! * gzip: RFC 1952; several concatenated members are accepted when decompressing.
//! * snappy: the xerial framing the Java client writes (`\x82SNAPPY\0`, two big-endian `i32`s
//!   version and compatible version, then repeated `[u32 BE length][raw snappy block]`); plain
//!   raw snappy without the header is accepted too, as xerial's `SnappyInputStream` does.
//! * lz4: the LZ4 *frame* format with independent blocks. Kafka's Java reader
//!   (`KafkaLZ4BlockInputStream`) rejects dependent blocks and block sizes outside 64 KB..4 MB,
//!   so [`compress`] writes 64 KB independent blocks, no content size and no checksums, as
//!   `KafkaLZ4BlockOutputStream` does.
//! * zstd: decoded as a stream (frames written by streaming encoders carry no content size);
//!   compressed at level 3, Kafka's default.
//!
//! Every decompression takes a `limit` on the output size, a guard against decompression
//! bombs: decoding stops with [`CodecError::LimitExceeded`] as soon as the output would exceed
//! it, and no buffer is sized from a length declared inside the data beyond `limit`.

use std::borrow::Cow;
use std::io::Read;

use super::batch::Compression;

/// Why compressing or decompressing failed. Callers map it into
/// [`super::RecordsError::Codec`] with the codec's name and the batch offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The decompressed data would be larger than the caller's limit.
    #[error("decompressed size exceeds the limit of {limit} bytes")]
    LimitExceeded {
        /// The limit that was hit.
        limit: usize,
    },
    /// The input is not valid data for the codec.
    #[error("invalid compressed data: {0}")]
    Corrupt(String),
    /// The encoder failed.
    #[error("compression failed: {0}")]
    Compress(String),
}

/// The 8-byte magic at the start of a xerial snappy stream.
pub(crate) const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Length of the xerial header: magic, version `i32`, compatible version `i32`.
pub(crate) const XERIAL_HEADER_LEN: usize = 16;
/// Uncompressed bytes per xerial block, as `SnappyOutputStream` writes by default.
pub(crate) const XERIAL_BLOCK_SIZE: usize = 32 * 1024;
/// zstd level used by [`compress`] (Kafka's `compression.zstd.level` default).
pub(crate) const ZSTD_LEVEL: i32 = 3;
/// LZ4 frame magic number (little-endian on the wire).
pub(crate) const LZ4_FRAME_MAGIC: u32 = 0x184D_2204;

/// Reads at most this much at a time from a decoder.
const READ_CHUNK: usize = 64 * 1024;
/// Smallest `window_log_max` given to the zstd decoder (8 MiB windows, enough for every level
/// up to 19 without long-distance matching).
const ZSTD_MIN_WINDOW_LOG: u32 = 23;
/// Largest `window_log_max` (libzstd's default cap, 128 MiB: what level 22 streams declare).
const ZSTD_MAX_WINDOW_LOG: u32 = 27;

fn corrupt(e: impl std::fmt::Display) -> CodecError {
    CodecError::Corrupt(e.to_string())
}

/// Decompresses `data` written with `codec`, returning at most `limit` bytes (more is an
/// error). [`Compression::None`] returns the data as is, subject to the same limit.
pub fn decompress(codec: Compression, data: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    match codec {
        Compression::None => {
            if data.len() > limit {
                return Err(CodecError::LimitExceeded { limit });
            }
            Ok(data.to_vec())
        }
        Compression::Gzip => read_limited(flate2::read::MultiGzDecoder::new(data), data, limit),
        Compression::Snappy => decompress_snappy(data, limit),
        Compression::Lz4 => decompress_lz4(data, limit, false),
        Compression::Zstd => decompress_zstd(data, limit),
    }
}

/// Decompresses the value of a legacy (magic 0 or 1) compressed wrapper message.
///
/// Identical to [`decompress`] except for LZ4 under magic 0: Kafka before 0.10 computed the
/// LZ4 frame descriptor checksum (the `HC` byte) over the magic number too, so Kafka's reader
/// ignores that byte for magic 0 (`KafkaLZ4BlockInputStream`'s `ignoreFlagDescriptorChecksum`,
/// chosen by `CompressionType.LZ4.wrapForInput` from the message magic). This function does the
/// same, by checking everything else in the frame normally.
pub fn decompress_legacy(
    codec: Compression,
    magic: i8,
    data: &[u8],
    limit: usize,
) -> Result<Vec<u8>, CodecError> {
    if codec == Compression::Lz4 && magic == 0 {
        decompress_lz4(data, limit, true)
    } else {
        decompress(codec, data, limit)
    }
}

/// Compresses `data` with `codec` the way Apache Kafka's Java producer does: gzip (default
/// level), xerial-framed snappy in 32 KiB blocks, an LZ4 frame of 64 KiB independent blocks
/// without content size or checksums, or zstd at level 3. [`Compression::None`] copies.
pub fn compress(codec: Compression, data: &[u8]) -> Result<Vec<u8>, CodecError> {
    match codec {
        Compression::None => Ok(data.to_vec()),
        Compression::Gzip => {
            use std::io::Write;
            let mut enc = flate2::write::GzEncoder::new(
                Vec::with_capacity(data.len() / 2 + 64),
                flate2::Compression::default(),
            );
            enc.write_all(data)
                .map_err(|e| CodecError::Compress(e.to_string()))?;
            enc.finish()
                .map_err(|e| CodecError::Compress(e.to_string()))
        }
        Compression::Snappy => compress_snappy(data),
        Compression::Lz4 => {
            use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
            use std::io::Write;
            let info = FrameInfo::new()
                .block_size(BlockSize::Max64KB)
                .block_mode(BlockMode::Independent)
                .content_size(None)
                .block_checksums(false)
                .content_checksum(false);
            let mut enc =
                FrameEncoder::with_frame_info(info, Vec::with_capacity(data.len() / 2 + 64));
            enc.write_all(data)
                .map_err(|e| CodecError::Compress(e.to_string()))?;
            enc.finish()
                .map_err(|e| CodecError::Compress(e.to_string()))
        }
        Compression::Zstd => {
            zstd::bulk::compress(data, ZSTD_LEVEL).map_err(|e| CodecError::Compress(e.to_string()))
        }
    }
}

/// Drains `reader` into a vector of at most `limit` bytes. `input` (the compressed bytes) only
/// sizes the first allocation.
fn read_limited<R: Read>(mut reader: R, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let mut out: Vec<u8> = Vec::with_capacity(input.len().saturating_mul(4).min(limit));
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(corrupt(e)),
        };
        if n > limit - out.len() {
            return Err(CodecError::LimitExceeded { limit });
        }
        reserve_within(&mut out, n, limit);
        out.extend_from_slice(&chunk[..n]);
    }
}

/// Makes room for `extra` more bytes in `out`, doubling but never growing past `limit`
/// (callers have checked that `out.len() + extra <= limit`).
fn reserve_within(out: &mut Vec<u8>, extra: usize, limit: usize) {
    let needed = out.len() + extra;
    if needed > out.capacity() {
        let target = out.capacity().saturating_mul(2).max(needed).min(limit);
        out.reserve_exact(target - out.len());
    }
}

fn decompress_zstd(data: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let mut dec = zstd::stream::read::Decoder::with_buffer(data).map_err(corrupt)?;
    // Bound the window buffer the decoder allocates from the frame header: enough for any
    // frame whose output fits the limit, never less than 8 MiB, never more than libzstd's
    // default cap.
    let limit_log = usize::BITS - limit.saturating_sub(1).leading_zeros();
    dec.window_log_max(limit_log.clamp(ZSTD_MIN_WINDOW_LOG, ZSTD_MAX_WINDOW_LOG))
        .map_err(corrupt)?;
    read_limited(dec, data, limit)
}

/// LZ4 frame(s). With `ignore_header_checksum`, a wrong frame descriptor checksum in the first
/// frame is tolerated (see [`decompress_legacy`]).
fn decompress_lz4(
    data: &[u8],
    limit: usize,
    ignore_header_checksum: bool,
) -> Result<Vec<u8>, CodecError> {
    let input: Cow<'_, [u8]> = if ignore_header_checksum {
        fix_lz4_header_checksum(data)
    } else {
        Cow::Borrowed(data)
    };
    read_limited(lz4_flex::frame::FrameDecoder::new(&input[..]), data, limit)
}

/// Returns `data` with the first LZ4 frame's descriptor checksum recomputed, or `data` unchanged
/// when it does not start with a well-formed frame descriptor (the decoder then reports it).
fn fix_lz4_header_checksum(data: &[u8]) -> Cow<'_, [u8]> {
    const FLG_CONTENT_SIZE: u8 = 0x08;
    const FLG_DICT_ID: u8 = 0x01;
    if data.len() < 7 || data[..4] != LZ4_FRAME_MAGIC.to_le_bytes() {
        return Cow::Borrowed(data);
    }
    let flg = data[4];
    let mut descriptor_len = 2;
    if flg & FLG_CONTENT_SIZE != 0 {
        descriptor_len += 8;
    }
    if flg & FLG_DICT_ID != 0 {
        descriptor_len += 4;
    }
    let hc_at = 4 + descriptor_len;
    if data.len() <= hc_at {
        return Cow::Borrowed(data);
    }
    let hc = (xxh32_short(&data[4..hc_at]) >> 8) as u8;
    if data[hc_at] == hc {
        return Cow::Borrowed(data);
    }
    let mut fixed = data.to_vec();
    fixed[hc_at] = hc;
    Cow::Owned(fixed)
}

/// XXH32 with seed 0 of an input shorter than 16 bytes (an LZ4 frame descriptor is at most 14).
fn xxh32_short(input: &[u8]) -> u32 {
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    debug_assert!(input.len() < 16);
    let mut h = P5.wrapping_add(input.len() as u32);
    let mut words = input.chunks_exact(4);
    for w in &mut words {
        let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        h = h
            .wrapping_add(v.wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

/// True when `data` starts with the full xerial magic (raw snappy can start with 0x82 too).
fn is_xerial(data: &[u8]) -> bool {
    data.len() >= XERIAL_HEADER_LEN && data[..XERIAL_MAGIC.len()] == XERIAL_MAGIC
}

fn decompress_snappy(data: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let mut decoder = snap::raw::Decoder::new();
    let mut out = Vec::new();
    if !is_xerial(data) {
        append_raw_snappy(&mut decoder, data, &mut out, limit)?;
        return Ok(out);
    }
    let mut pos = XERIAL_HEADER_LEN;
    while pos < data.len() {
        let Some(len_bytes) = data.get(pos..pos + 4) else {
            return Err(corrupt(format!(
                "xerial block length truncated at byte {pos}"
            )));
        };
        // A second xerial stream concatenated to the first: skip its header, as xerial's
        // SnappyInputStream does.
        if data[pos..].starts_with(&XERIAL_MAGIC) {
            if data.len() - pos < XERIAL_HEADER_LEN {
                return Err(corrupt("truncated xerial header"));
            }
            pos += XERIAL_HEADER_LEN;
            continue;
        }
        let len = u32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
        pos += 4;
        let len = len as usize;
        let Some(block) = data.get(pos..pos.saturating_add(len)) else {
            return Err(corrupt(format!(
                "xerial block of {len} bytes at byte {} runs past the end ({} bytes)",
                pos - 4,
                data.len()
            )));
        };
        append_raw_snappy(&mut decoder, block, &mut out, limit)?;
        pos += len;
    }
    Ok(out)
}

/// Decompresses one raw snappy block and appends it to `out`, checking the declared length
/// against `limit` before allocating.
fn append_raw_snappy(
    decoder: &mut snap::raw::Decoder,
    block: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), CodecError> {
    let n = snap::raw::decompress_len(block).map_err(corrupt)?;
    if n > limit - out.len() {
        return Err(CodecError::LimitExceeded { limit });
    }
    let start = out.len();
    reserve_within(out, n, limit);
    out.resize(start + n, 0);
    let written = decoder
        .decompress(block, &mut out[start..])
        .map_err(corrupt)?;
    if written != n {
        return Err(corrupt(format!(
            "snappy block declared {n} bytes but produced {written}"
        )));
    }
    Ok(())
}

fn compress_snappy(data: &[u8]) -> Result<Vec<u8>, CodecError> {
    let mut encoder = snap::raw::Encoder::new();
    let blocks = data.len().div_ceil(XERIAL_BLOCK_SIZE);
    let mut out = Vec::with_capacity(XERIAL_HEADER_LEN + blocks * 4 + data.len() / 2 + 64);
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes()); // version
    out.extend_from_slice(&1i32.to_be_bytes()); // minimum compatible version
    let mut scratch = vec![0u8; snap::raw::max_compress_len(XERIAL_BLOCK_SIZE.min(data.len()))];
    for block in data.chunks(XERIAL_BLOCK_SIZE) {
        let n = encoder
            .compress(block, &mut scratch)
            .map_err(|e| CodecError::Compress(e.to_string()))?;
        let len = u32::try_from(n).map_err(|e| CodecError::Compress(e.to_string()))?;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&scratch[..n]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::{Duration, Instant};

    /// Deterministic pseudo-random bytes (xorshift), incompressible.
    fn random_bytes(n: usize, mut seed: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            v.extend_from_slice(&seed.to_le_bytes());
        }
        v.truncate(n);
        v
    }

    fn compressible_bytes(n: usize) -> Vec<u8> {
        let text =
            b"topic=orders partition=7 key=customer-0042 value={\"sku\":\"A-17\",\"qty\":3} ";
        text.iter().copied().cycle().take(n).collect()
    }

    #[test]
    fn round_trip_every_codec() {
        let inputs: Vec<(&str, Vec<u8>)> = vec![
            ("empty", Vec::new()),
            ("small", b"hello kafka".to_vec()),
            ("random 1 MiB", random_bytes(1 << 20, 0x9E37_79B9_7F4A_7C15)),
            ("compressible 1 MiB", compressible_bytes(1 << 20)),
        ];
        for codec in Compression::ALL {
            for (name, input) in &inputs {
                let packed = compress(codec, input).unwrap();
                let unpacked = decompress(codec, &packed, input.len()).unwrap();
                assert_eq!(&unpacked, input, "{codec:?} {name}");
                if !input.is_empty() && codec != Compression::None {
                    // One byte less than the output is over the limit.
                    assert_eq!(
                        decompress(codec, &packed, input.len() - 1),
                        Err(CodecError::LimitExceeded {
                            limit: input.len() - 1
                        }),
                        "{codec:?} {name}"
                    );
                }
            }
        }
    }

    #[test]
    fn compressible_data_shrinks() {
        let input = compressible_bytes(1 << 20);
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let packed = compress(codec, &input).unwrap();
            assert!(
                packed.len() < input.len() / 4,
                "{codec:?}: {}",
                packed.len()
            );
        }
    }

    #[test]
    fn snappy_is_xerial_framed_in_32k_blocks() {
        let input = compressible_bytes(100_000);
        let packed = compress(Compression::Snappy, &input).unwrap();
        assert_eq!(&packed[..8], &XERIAL_MAGIC);
        assert_eq!(&packed[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
        // Walk the blocks: 32768, 32768, 32768, 1696 input bytes.
        let mut pos = 16;
        let mut sizes = Vec::new();
        while pos < packed.len() {
            let len = u32::from_be_bytes(packed[pos..pos + 4].try_into().unwrap()) as usize;
            let block = &packed[pos + 4..pos + 4 + len];
            sizes.push(snap::raw::decompress_len(block).unwrap());
            pos += 4 + len;
        }
        assert_eq!(sizes, vec![32768, 32768, 32768, 100_000 - 3 * 32768]);
        // Empty input is the bare header, as xerial's SnappyOutputStream writes it.
        assert_eq!(compress(Compression::Snappy, b"").unwrap().len(), 16);
    }

    #[test]
    fn lz4_frame_is_what_kafka_accepts() {
        let input = random_bytes(200_000, 7);
        let packed = compress(Compression::Lz4, &input).unwrap();
        assert_eq!(&packed[..4], &LZ4_FRAME_MAGIC.to_le_bytes());
        let flg = packed[4];
        assert_eq!(flg >> 6, 1, "version 01");
        assert_ne!(flg & 0x20, 0, "independent blocks");
        assert_eq!(
            flg & 0x1f,
            0,
            "no block checksum, content size, content checksum, dict"
        );
        assert_eq!(packed[5], 0x40, "64 KB blocks");
        assert_eq!(packed[6], (xxh32_short(&packed[4..6]) >> 8) as u8);
    }

    #[test]
    fn raw_snappy_is_accepted() {
        for input in [
            b"x".to_vec(),
            compressible_bytes(70_000),
            random_bytes(5000, 3),
        ] {
            let raw = snap::raw::Encoder::new().compress_vec(&input).unwrap();
            assert_eq!(
                decompress(Compression::Snappy, &raw, 1 << 20).unwrap(),
                input
            );
        }
        // A raw block declaring more than the limit is refused before allocating.
        let raw = snap::raw::Encoder::new()
            .compress_vec(&vec![0u8; 1 << 20])
            .unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, 1000),
            Err(CodecError::LimitExceeded { limit: 1000 })
        );
    }

    #[test]
    fn concatenated_xerial_streams_are_accepted() {
        let a = compress(Compression::Snappy, b"first part, ").unwrap();
        let b = compress(Compression::Snappy, b"second part").unwrap();
        let both = [a, b].concat();
        assert_eq!(
            decompress(Compression::Snappy, &both, 100).unwrap(),
            b"first part, second part"
        );
    }

    #[test]
    fn truncated_xerial_block_is_an_error() {
        let packed = compress(Compression::Snappy, &compressible_bytes(50_000)).unwrap();
        for cut in [17, 20, 30, packed.len() - 1] {
            assert!(
                matches!(
                    decompress(Compression::Snappy, &packed[..cut], 1 << 20),
                    Err(CodecError::Corrupt(_))
                ),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn multi_member_gzip() {
        let member = |s: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(s).unwrap();
            e.finish().unwrap()
        };
        let data = [member(b"alpha "), member(b"beta "), member(b"gamma")].concat();
        assert_eq!(
            decompress(Compression::Gzip, &data, 100).unwrap(),
            b"alpha beta gamma"
        );
    }

    #[test]
    fn zstd_streaming_frame_without_content_size() {
        let input = compressible_bytes(300_000);
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.write_all(&input).unwrap();
        let packed = enc.finish().unwrap();
        // Frame header descriptor: no content size flag with a non-single-segment frame.
        assert_eq!(packed[4] & 0xC0, 0);
        assert_eq!(
            decompress(Compression::Zstd, &packed, input.len()).unwrap(),
            input
        );
        // Two frames back to back decode as one stream.
        let two = [packed.clone(), packed].concat();
        assert_eq!(
            decompress(Compression::Zstd, &two, 2 * input.len())
                .unwrap()
                .len(),
            2 * input.len()
        );
    }

    #[test]
    fn bombs_stop_at_the_limit() {
        let zeros = vec![0u8; 100 << 20];
        let gz = compress(Compression::Gzip, &zeros).unwrap();
        let mut zs_enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        zs_enc.write_all(&zeros).unwrap();
        let zs = zs_enc.finish().unwrap();
        let lz = compress(Compression::Lz4, &zeros).unwrap();
        let sn = compress(Compression::Snappy, &zeros).unwrap();
        drop(zeros);
        for (codec, data) in [
            (Compression::Gzip, gz),
            (Compression::Zstd, zs),
            (Compression::Lz4, lz),
            (Compression::Snappy, sn),
        ] {
            let start = Instant::now();
            let r = decompress(codec, &data, 1 << 20);
            assert_eq!(
                r,
                Err(CodecError::LimitExceeded { limit: 1 << 20 }),
                "{codec:?}"
            );
            assert!(
                start.elapsed() < Duration::from_secs(2),
                "{codec:?} took {:?}",
                start.elapsed()
            );
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let junk = random_bytes(4096, 11);
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert!(decompress(codec, &junk, 1 << 20).is_err(), "{codec:?}");
            let _ = decompress(codec, &[], 1 << 20);
            let good = compress(codec, &compressible_bytes(10_000)).unwrap();
            for cut in [1, good.len() / 2] {
                let _ = decompress(codec, &good[..cut], 1 << 20);
            }
        }
    }

    #[test]
    fn xxh32_known_vectors() {
        assert_eq!(xxh32_short(b""), 0x02CC_5D05);
        assert_eq!(xxh32_short(b"a"), 0x550D_7456);
        assert_eq!(xxh32_short(b"abc"), 0x32D1_53FF);
    }

    #[test]
    fn xxh32_matches_lz4_flex_header_checksums() {
        use lz4_flex::frame::{FrameEncoder, FrameInfo};
        for content_size in [None, Some(5u64)] {
            let info = FrameInfo::new().content_size(content_size);
            let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(b"hello").unwrap();
            let frame = enc.finish().unwrap();
            let hc_at = if content_size.is_some() { 14 } else { 6 };
            assert_eq!(frame[hc_at], (xxh32_short(&frame[4..hc_at]) >> 8) as u8);
        }
    }

    #[test]
    fn magic0_lz4_with_broken_header_checksum() {
        let input = compressible_bytes(5000);
        let mut frame = compress(Compression::Lz4, &input).unwrap();
        // Kafka 0.8/0.9 hashed the magic number along with FLG and BD.
        let broken = (xxh32_short(&frame[0..6]) >> 8) as u8;
        assert_ne!(broken, frame[6]);
        frame[6] = broken;
        assert!(matches!(
            decompress(Compression::Lz4, &frame, 1 << 20),
            Err(CodecError::Corrupt(_))
        ));
        assert!(decompress_legacy(Compression::Lz4, 1, &frame, 1 << 20).is_err());
        assert_eq!(
            decompress_legacy(Compression::Lz4, 0, &frame, 1 << 20).unwrap(),
            input
        );
        // A correct checksum works with the lenient path too.
        let good = compress(Compression::Lz4, &input).unwrap();
        assert_eq!(
            decompress_legacy(Compression::Lz4, 0, &good, 1 << 20).unwrap(),
            input
        );
    }

    #[test]
    fn none_respects_limit() {
        assert_eq!(decompress(Compression::None, b"abc", 3).unwrap(), b"abc");
        assert_eq!(
            decompress(Compression::None, b"abcd", 3),
            Err(CodecError::LimitExceeded { limit: 3 })
        );
    }
}
