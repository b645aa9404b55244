//! Response frames as a broker sends them: the first byte picks the API (ApiVersions,
//! Metadata, Fetch, Produce), the second the version; the rest is the frame after its size
//! (correlation id, header, body). Every decoder must return an error, never panic or allocate
//! past its caps.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strait::protocol::frame::{check_frame_size, peek_correlation_id, response_body};
use kafka_protocol::messages::ApiKey;
use strait::protocol::{api_versions, fetch, metadata, produce};

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let declared = i32::from_be_bytes([data[2], data[3], data[4], data[5]]);
    let _ = check_frame_size(declared, 1 << 20);
    let frame = Bytes::copy_from_slice(&data[2..]);
    let _ = peek_correlation_id(&frame);
    let version = i16::from(data[1] % 18);
    let key = match data[0] % 4 {
        0 => ApiKey::ApiVersions,
        1 => ApiKey::Metadata,
        2 => ApiKey::Fetch,
        _ => ApiKey::Produce,
    };
    let Ok(body) = response_body(frame, key, version) else {
        return;
    };
    match key {
        ApiKey::ApiVersions => drop(api_versions::decode_response(body, version)),
        ApiKey::Metadata => drop(metadata::decode_response(body, version)),
        ApiKey::Fetch => {
            if let Ok(resp) = fetch::decode_response(body, version) {
                // What a flow does next with the records of each partition.
                for p in resp.partitions {
                    for e in strait::records::split(p.records.clone()).take(64) {
                        drop(e);
                    }
                }
            }
        }
        _ => drop(produce::decode_response(body, version)),
    }
});
