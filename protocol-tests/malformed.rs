//! Malformed and random input: errors, never panics, never allocations of declared sizes.

use bytes::Bytes;
use proptest::prelude::*;
use strait::protocol::frame::{check_frame_size, DEFAULT_MAX_FRAME};
use strait::protocol::wire::Reader;
use strait::protocol::{api_versions, fetch, metadata, produce};
use strait::records::batch::{BATCH_LENGTH, HEADER_LEN, RECORDS_COUNT};
use strait::records::legacy::decode_legacy;
use strait::records::record::decode_records;
use strait::records::{split, Entry, RecordBatch, RecordsError};

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    std::fs::read(p).expect("fixture")
}

#[test]
fn two_gigabyte_frame_is_refused() {
    assert!(check_frame_size(i32::MAX, DEFAULT_MAX_FRAME).is_err());
    assert!(check_frame_size(-5, DEFAULT_MAX_FRAME).is_err());
}

#[test]
fn bad_crc_is_detected() {
    let mut b = fixture("v2_gzip.bin");
    let n = b.len();
    b[n - 3] ^= 1;
    let batch = RecordBatch::new(Bytes::from(b)).unwrap();
    assert!(matches!(
        batch.verify_crc(),
        Err(RecordsError::CrcMismatch { .. })
    ));
}

#[test]
fn length_beyond_buffer_is_a_truncated_tail_not_a_batch() {
    let mut b = fixture("v2_none.bin");
    b[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&(i32::MAX).to_be_bytes());
    let mut it = split(Bytes::from(b.clone()));
    assert!(it.next().is_none());
    assert_eq!(it.truncated_tail(), b.len());
    assert!(RecordBatch::new(Bytes::from(b)).is_err());
}

#[test]
fn negative_counts_are_errors() {
    let mut b = fixture("v2_none.bin");
    b[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&(-7i32).to_be_bytes());
    assert!(matches!(
        split(Bytes::from(b)).next(),
        Some(Err(RecordsError::BadLength { .. }))
    ));
    // A records count far beyond what the bytes can hold.
    let mut b = fixture("v2_none.bin");
    b[RECORDS_COUNT..RECORDS_COUNT + 4].copy_from_slice(&(i32::MAX).to_be_bytes());
    let batch = RecordBatch::new(Bytes::from(b)).unwrap();
    assert!(decode_records(&batch, 1 << 20).is_err());
    // Array counts in responses.
    let mut r = Reader::new(Bytes::from_static(&[0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff]));
    assert!(fetch::decode_response(r.clone(), 4).is_err());
    r.i32("x").unwrap();
    let body = Bytes::from_static(&[0xff, 0xff, 0xff, 0xfe]);
    assert!(metadata::decode_response(Reader::new(body), 1).is_err());
}

#[test]
fn compressed_payload_garbage_is_an_error() {
    for name in ["v2_gzip.bin", "v2_snappy.bin", "v2_lz4.bin", "v2_zstd.bin"] {
        let mut b = fixture(name);
        for x in b[HEADER_LEN + 10..].iter_mut() {
            *x = x.wrapping_mul(31).wrapping_add(7);
        }
        let batch = RecordBatch::new(Bytes::from(b)).unwrap();
        assert!(decode_records(&batch, 1 << 20).is_err(), "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parsers_survive_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..600), version in 0i16..18) {
        let bytes = Bytes::from(data);
        for entry in split(bytes.clone()).flatten() {
            match entry {
                Entry::V2(b) => {
                    let _ = b.verify_crc();
                    let _ = decode_records(&b, 1 << 16);
                }
                Entry::Legacy(raw) => {
                    let _ = decode_legacy(&raw, 1 << 16);
                }
            }
        }
        let _ = api_versions::decode_response(Reader::new(bytes.clone()), version.min(3));
        let _ = metadata::decode_response(Reader::new(bytes.clone()), version.clamp(1, 12));
        let _ = fetch::decode_response(Reader::new(bytes.clone()), version.clamp(4, 17));
        let _ = produce::decode_response(Reader::new(bytes), version.clamp(3, 12));
    }

    #[test]
    fn mutated_fixture_batches_never_panic(pos in 0usize..10_000, val in any::<u8>(), which in 0usize..5) {
        let name = ["v2_none.bin", "v2_gzip.bin", "v2_snappy.bin", "v2_lz4.bin", "v2_zstd.bin"][which];
        let mut b = fixture(name);
        let at = pos % b.len();
        b[at] = val;
        for entry in split(Bytes::from(b)).flatten() {
            if let Entry::V2(batch) = entry {
                let _ = decode_records(&batch, 1 << 20);
            }
        }
    }
}
