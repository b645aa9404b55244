//! Record batches, sans-io: framing, header rewrites with CRC upkeep, codecs, record
//! decoding/encoding, legacy conversion and Apache Kafka's produce-side rules.
//!
//! Nothing here does I/O, and the forwarding path ([`batch::split`], [`batch::RecordBatch::rewrite`])
//! never copies or decodes a records payload (unless a flow asks for [`recompress`]ion).

pub mod batch;
pub mod codec;
pub mod crc;
pub mod legacy;
pub mod recompress;
pub mod record;
pub mod rules;

pub use batch::{split, Compression, Entry, HeaderRewrite, RecordBatch, RewrittenBatch};

/// What can be wrong with records bytes. Callers add cluster, topic and partition.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordsError {
    /// Fewer bytes than a structure needs.
    #[error("truncated: needed {needed} bytes, {available} available")]
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// A length field that cannot be right.
    #[error("batch at offset {offset} declares an impossible length {declared}")]
    BadLength {
        /// The entry's offset field.
        offset: i64,
        /// The declared length.
        declared: i64,
    },
    /// A magic byte other than 0, 1 or 2.
    #[error("batch at offset {offset} has unsupported magic {magic}")]
    UnsupportedMagic {
        /// The magic byte.
        magic: i8,
        /// The entry's offset field.
        offset: i64,
    },
    /// Stored and computed CRC differ.
    #[error(
        "batch at offset {offset} is corrupt: stored CRC {stored:#010x}, computed {computed:#010x}"
    )]
    CrcMismatch {
        /// The batch's base offset.
        offset: i64,
        /// CRC in the header.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
    /// Attribute bits name no known codec.
    #[error("batch at offset {offset} names unknown codec {bits}")]
    UnknownCodec {
        /// The batch's base offset.
        offset: i64,
        /// Codec bits.
        bits: i16,
    },
    /// Compressed data that does not decompress, or compression that failed.
    #[error("{codec} data at offset {offset}: {reason}")]
    Codec {
        /// Codec name.
        codec: &'static str,
        /// The batch's base offset.
        offset: i64,
        /// What the codec said.
        reason: String,
    },
    /// A structural problem inside the records section.
    #[error("batch at offset {offset}: {reason}")]
    Corrupt {
        /// The batch's base offset.
        offset: i64,
        /// What is wrong.
        reason: String,
    },
}
