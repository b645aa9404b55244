//! A broker's SCRAM server-first message (SASL authentication): nonce, salt and iteration
//! count are parsed with their limits, never panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait::sasl::scram::parse_server_first;

fuzz_target!(|data: &[u8]| {
    let _ = parse_server_first(data, "fyko+d2lbbFgONRv9qkxdawL");
    if data.len() > 8 {
        let _ = parse_server_first(&data[8..], &String::from_utf8_lossy(&data[..8]));
    }
});
