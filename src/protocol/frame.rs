//! Request and response framing: the int32 size prefix, request headers v1/v2 and response
//! headers v0/v1.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Request;

use super::wire::{put_empty_tags, put_nullable_string, Reader, WireError};

/// The default cap on a response frame: larger declared sizes are refused before any
/// allocation. Fetch responses are bounded by the request's `max_bytes`, well under this.
pub const DEFAULT_MAX_FRAME: usize = 256 * 1024 * 1024;

/// A request frame as a list of chunks for one vectored write: `chunks[0]` holds the size
/// prefix and the header; later chunks may be shared record bytes.
#[derive(Debug, Clone, Default)]
pub struct RequestFrame {
    /// The bytes of the frame, in order.
    pub chunks: Vec<Bytes>,
}

impl RequestFrame {
    /// Total size including the 4-byte size prefix.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(Bytes::len).sum()
    }
    /// True when the frame has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The frame as one buffer (tests and golden bytes; the connection writes chunks).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        for c in &self.chunks {
            v.extend_from_slice(c);
        }
        v
    }
}

/// Identifies a request: what goes in its header.
#[derive(Debug, Clone, Copy)]
pub struct RequestMeta<'a> {
    /// The API.
    pub api_key: ApiKey,
    /// Its version.
    pub version: i16,
    /// Matches the response to the request.
    pub correlation_id: i32,
    /// Our client id.
    pub client_id: &'a str,
}

/// Writes a request header (v1, or v2 with tagged fields when the API version is flexible).
pub fn put_request_header(buf: &mut BytesMut, meta: &RequestMeta<'_>) {
    buf.put_i16(meta.api_key as i16);
    buf.put_i16(meta.version);
    buf.put_i32(meta.correlation_id);
    // The client id stays a classic (non-compact) nullable string even in header v2.
    put_nullable_string(buf, Some(meta.client_id), false);
    if meta.api_key.request_header_version(meta.version) >= 2 {
        put_empty_tags(buf);
    }
}

/// Frames a request body encoded by `kafka-protocol`: size prefix, header, body, one chunk.
pub fn encode_request<R: Request>(
    meta: &RequestMeta<'_>,
    body: &R,
) -> Result<RequestFrame, String> {
    let mut buf = BytesMut::with_capacity(64);
    buf.put_i32(0);
    put_request_header(&mut buf, meta);
    body.encode(&mut buf, meta.version)
        .map_err(|e| format!("cannot encode {:?} v{}: {e}", meta.api_key, meta.version))?;
    let size = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&size.to_be_bytes());
    Ok(RequestFrame {
        chunks: vec![buf.freeze()],
    })
}

/// Checks a declared frame size against the cap before anything is allocated for it.
pub fn check_frame_size(declared: i32, max: usize) -> Result<usize, WireError> {
    if declared < 0 || declared as usize > max {
        return Err(WireError {
            what: "frame size",
            at: 0,
            reason: format!("declared {declared} bytes, outside 0..={max}"),
        });
    }
    Ok(declared as usize)
}

/// Reads the correlation id of a response frame (the bytes after the size prefix).
pub fn peek_correlation_id(frame: &[u8]) -> Option<i32> {
    frame
        .get(0..4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Consumes the response header of `frame` for the given request and returns a reader
/// positioned at the body.
pub fn response_body(frame: Bytes, api_key: ApiKey, version: i16) -> Result<Reader, WireError> {
    let mut r = Reader::new(frame);
    r.i32("correlation id")?;
    if api_key.response_header_version(version) >= 1 {
        r.skip_tagged_fields()?;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_and_huge_frames_are_refused() {
        assert!(check_frame_size(-1, DEFAULT_MAX_FRAME).is_err());
        assert!(check_frame_size(i32::MAX, DEFAULT_MAX_FRAME).is_err());
        assert_eq!(check_frame_size(10, DEFAULT_MAX_FRAME).unwrap(), 10);
    }
}
