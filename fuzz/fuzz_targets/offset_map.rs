//! Stored progress records as read back from the progress topic: the offset map's encoding and
//! the writer and topic id sections. Whatever decodes must encode back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait::offsets::OffsetMap;
use strait::replicate::progress;

fuzz_target!(|data: &[u8]| {
    if let Ok(map) = OffsetMap::decode(data) {
        let again = OffsetMap::decode(&map.encode()).expect("a decoded map encodes back");
        assert_eq!(again, map);
        let _ = (map.source_next(), map.target_next());
        for o in [0, 1, map.source_next(), i64::MAX] {
            let _ = map.to_target(o);
        }
    }
    if let Some(s) = progress::decode(data) {
        let again = progress::decode(&progress::encode(&s))
            .expect("a decoded record encodes back");
        assert_eq!(again, s);
    }
});
