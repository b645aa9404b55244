//! Compressed record data as a broker hands it out: the first byte picks the codec (and the
//! legacy magic); decompression must stop at its output cap and never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait::records::codec::{decompress, decompress_legacy};
use strait::records::Compression;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let codec = match sel % 5 {
        0 => Compression::None,
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        _ => Compression::Zstd,
    };
    if let Ok(out) = decompress(codec, rest, 1 << 20) {
        assert!(out.len() <= 1 << 20, "decompressed past the cap");
    }
    let _ = decompress_legacy(codec, (sel >> 4 & 1) as i8, rest, 1 << 20);
});
