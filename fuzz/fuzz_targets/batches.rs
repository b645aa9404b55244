//! A Fetch answer's record bytes (or a record batch read from disk): split into batches, each
//! v2 batch's header read, CRC checked, records decoded in every codec (with the decompression
//! cap); legacy (magic 0/1) messages decoded and converted to v2.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strait::records::legacy::{decode_legacy, legacy_to_v2};
use strait::records::record::{decode_records, records};
use strait::records::{split, Compression, Entry};

const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    for entry in split(Bytes::copy_from_slice(data)).take(32) {
        match entry {
            Ok(Entry::V2(b)) => {
                let _ = (b.base_offset(), b.last_offset(), b.next_offset(), b.compression());
                let _ = (b.producer_id(), b.base_sequence(), b.records_count());
                let _ = b.verify_crc();
                let _ = b.has_contiguous_offsets();
                if let Ok(it) = records(&b, LIMIT) {
                    for r in it.take(1024) {
                        drop(r);
                    }
                }
                let _ = decode_records(&b, LIMIT);
            }
            Ok(Entry::Legacy(e)) => {
                let _ = decode_legacy(&e, LIMIT);
                let _ = legacy_to_v2(&e, Compression::Zstd, LIMIT);
            }
            Err(_) => break,
        }
    }
});
