//! Requests sent to the status server by any client on the network, past hyper's parsing: the
//! request target's percent-decoding and query, the token gate's header, cookie and `?token=`
//! handling, and the router, never panicking. An input is a request head as text: the first
//! line `METHOD TARGET ...`, then `name: value` header lines.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strait::observe::http::{percent_decode, token_gate, Request, Server};
use strait::observe::Observer;
use strait::secret::Secret;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = percent_decode(&text);
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default();
    let target = first.next().unwrap_or("/");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let Some(request) = Request::new(method, target, headers) else {
        return;
    };
    let server = Server::new(Arc::new(Observer::new()), BTreeMap::new());
    let _ = server.route(&request);
    let gated = server.with_authorize(token_gate(Secret::literal("s3cret")));
    let _ = gated.route(&request);
});
