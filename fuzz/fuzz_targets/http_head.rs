//! Request heads sent to the status server by any client on the network.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strait::observe::http::parse_request;

fuzz_target!(|data: &[u8]| {
    let _ = parse_request(data);
});
