//! ApiVersions (key 18): the first request on every connection.
//!
//! A broker that does not know the version we ask for answers with UNSUPPORTED_VERSION and a
//! v0-format body listing what it supports; [`decode_response`] handles that fallback.

use std::collections::HashMap;

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::ApiKey;

use super::frame::{put_request_header, RequestFrame, RequestMeta};
use super::wire::{put_empty_tags, put_string, Reader, WireError};
use super::{error_code, Versions};

/// What the broker said it supports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersionsResponse {
    /// Error code (0, or UNSUPPORTED_VERSION when the fallback body was read).
    pub error_code: i16,
    /// Supported version range by API key number.
    pub apis: HashMap<i16, Versions>,
}

impl ApiVersionsResponse {
    /// The broker's range for an API.
    pub fn range(&self, key: ApiKey) -> Option<Versions> {
        self.apis.get(&(key as i16)).copied()
    }
}

/// Encodes an ApiVersions request at `version` (0..=3).
pub fn encode_request(correlation_id: i32, client_id: &str, version: i16) -> RequestFrame {
    let mut buf = BytesMut::with_capacity(64);
    buf.put_i32(0);
    put_request_header(
        &mut buf,
        &RequestMeta {
            api_key: ApiKey::ApiVersions,
            version,
            correlation_id,
            client_id,
        },
    );
    if version >= 3 {
        put_string(&mut buf, "strait", true);
        put_string(&mut buf, env!("CARGO_PKG_VERSION"), true);
        put_empty_tags(&mut buf);
    }
    let size = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&size.to_be_bytes());
    RequestFrame {
        chunks: vec![buf.freeze()],
    }
}

/// Decodes the body of an ApiVersions response to a request sent at `version`. ApiVersions
/// responses always use response header v0, so `body` starts right after the correlation id.
pub fn decode_response(body: Reader, version: i16) -> Result<ApiVersionsResponse, WireError> {
    let mut probe = body.clone();
    let code = probe.i16("error code")?;
    if code == error_code::UNSUPPORTED_VERSION && version > 0 {
        // The broker answered in v0 format, listing what it supports.
        return decode_at(body, 0);
    }
    decode_at(body, version)
}

fn decode_at(mut r: Reader, version: i16) -> Result<ApiVersionsResponse, WireError> {
    let compact = version >= 3;
    let error_code = r.i16("error code")?;
    let n = r.array(compact, 6, "api keys")?;
    let mut apis = HashMap::with_capacity(n);
    for _ in 0..n {
        let key = r.i16("api key")?;
        let min = r.i16("min version")?;
        let max = r.i16("max version")?;
        if compact {
            r.skip_tagged_fields()?;
        }
        apis.insert(key, Versions { min, max });
    }
    if version >= 1 && r.remaining() > 0 {
        r.i32("throttle time")?;
    }
    if compact && r.remaining() > 0 {
        r.skip_tagged_fields()?;
    }
    Ok(ApiVersionsResponse { error_code, apis })
}
