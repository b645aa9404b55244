//! Configuration files: the first byte picks strait's TOML or MirrorMaker 2's
//! `mm2.properties`; every problem must be an error naming the file and key, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait::config::{parse, validate, ConfigFormat};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (origin, format) = if sel % 2 == 0 {
        ("fuzz.toml", ConfigFormat::Toml)
    } else {
        ("mm2.properties", ConfigFormat::Mm2)
    };
    if let Ok(config) = parse(text, origin, format) {
        // A loaded configuration always passes the checks a hand-built one gets.
        assert!(validate(&config).is_ok());
    }
});
