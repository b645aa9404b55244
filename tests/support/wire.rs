//! Small Kafka wire-format helpers shared by the broker readiness probe and the proxy:
//! a bounds-checked byte cursor, request framing, and an ApiVersions probe.
//!
//! Nothing here panics on malformed input: every read returns `Result<_, String>`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

/// Largest frame any harness component will buffer (declared sizes above this are refused).
pub const MAX_FRAME_BYTES: usize = 256 << 20;

/// Client id used by harness-originated requests.
pub const HARNESS_CLIENT_ID: &str = "strait-test-harness";

/// A bounds-checked big-endian reader over a byte slice.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if self.remaining() < n {
            return Err(format!(
                "truncated {what}: need {n} bytes at offset {}, only {} left",
                self.pos,
                self.remaining()
            ));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn skip(&mut self, n: usize, what: &str) -> Result<(), String> {
        self.take(n, what).map(|_| ())
    }

    pub fn i8(&mut self, what: &str) -> Result<i8, String> {
        let b = self.take(1, what)?;
        Ok(b[0] as i8)
    }

    pub fn i16(&mut self, what: &str) -> Result<i16, String> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    pub fn i32(&mut self, what: &str) -> Result<i32, String> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn i64(&mut self, what: &str) -> Result<i64, String> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// Kafka unsigned varint (at most 5 bytes, fits in u32).
    pub fn uvarint(&mut self, what: &str) -> Result<u32, String> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.take(1, what)?[0];
            if i == 4 && b > 0x0f {
                return Err(format!("unsigned varint {what} overflows 32 bits"));
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("unsigned varint {what} longer than 5 bytes"))
    }

    /// Classic nullable string/bytes with an int16 length (-1 = null).
    pub fn nullable_str16(&mut self, what: &str) -> Result<Option<&'a [u8]>, String> {
        let len = self.i16(what)?;
        match len {
            -1 => Ok(None),
            n if n < -1 => Err(format!("negative length {n} for {what}")),
            n => self.take(n as usize, what).map(Some),
        }
    }

    /// Classic nullable bytes with an int32 length (-1 = null).
    pub fn nullable_bytes32(&mut self, what: &str) -> Result<Option<&'a [u8]>, String> {
        let len = self.i32(what)?;
        match len {
            -1 => Ok(None),
            n if n < -1 => Err(format!("negative length {n} for {what}")),
            n => self.take(n as usize, what).map(Some),
        }
    }

    /// Compact nullable string/bytes (unsigned varint length + 1, 0 = null).
    pub fn compact_nullable(&mut self, what: &str) -> Result<Option<&'a [u8]>, String> {
        match self.uvarint(what)? {
            0 => Ok(None),
            n => self.take((n - 1) as usize, what).map(Some),
        }
    }

    /// Array length, classic (int32, -1 = null) or compact (uvarint + 1, 0 = null).
    /// Refuses counts larger than the remaining bytes divided by `min_element_size`, so a
    /// bogus count can never cause a large allocation further down.
    pub fn array_len(
        &mut self,
        flexible: bool,
        min_element_size: usize,
        what: &str,
    ) -> Result<usize, String> {
        let count: i64 = if flexible {
            i64::from(self.uvarint(what)?) - 1
        } else {
            i64::from(self.i32(what)?)
        };
        if count < -1 {
            return Err(format!("negative array length {count} for {what}"));
        }
        let count = count.max(0) as usize;
        let max = self.remaining() / min_element_size.max(1);
        if count > max {
            return Err(format!(
                "array {what} declares {count} elements but only {} bytes remain",
                self.remaining()
            ));
        }
        Ok(count)
    }

    /// Skips a tagged-field section (flexible versions).
    pub fn tagged_fields(&mut self, what: &str) -> Result<(), String> {
        let n = self.uvarint(what)?;
        if n as usize > self.remaining() {
            return Err(format!(
                "{what}: {n} tagged fields but {} bytes remain",
                self.remaining()
            ));
        }
        for _ in 0..n {
            self.uvarint(what)?;
            let size = self.uvarint(what)?;
            self.skip(size as usize, what)?;
        }
        Ok(())
    }
}

/// The fixed part of a request header plus where the body starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    /// Offset of the request body within the frame payload (after the size prefix),
    /// `None` when the header version of this API key is unknown.
    pub body_offset: Option<usize>,
}

/// Parses a request header from a frame payload (bytes after the int32 size prefix).
pub fn parse_request_header(payload: &[u8]) -> Result<RequestInfo, String> {
    let mut c = Cursor::new(payload);
    let api_key = c.i16("request api_key")?;
    let api_version = c.i16("request api_version")?;
    let correlation_id = c.i32("request correlation_id")?;
    let client_id = c
        .nullable_str16("request client_id")?
        .map(|b| String::from_utf8_lossy(b).into_owned());
    let header_version = ApiKey::try_from(api_key)
        .ok()
        .map(|k| k.request_header_version(api_version));
    let body_offset = match header_version {
        Some(v) if v >= 2 => {
            c.tagged_fields("request header tagged fields")?;
            Some(c.position())
        }
        Some(_) => Some(c.position()),
        None => None,
    };
    Ok(RequestInfo {
        api_key,
        api_version,
        correlation_id,
        client_id,
        body_offset,
    })
}

/// Encodes `body` as a complete size-prefixed request frame.
pub fn encode_request<R: Encodable + HeaderVersion>(
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    body: &R,
) -> Result<Vec<u8>, String> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key)
        .with_request_api_version(api_version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id.map(|s| StrBytes::from_string(s.to_owned())));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, R::header_version(api_version))
        .map_err(|e| format!("encode request header: {e}"))?;
    body.encode(&mut buf, api_version)
        .map_err(|e| format!("encode request body: {e}"))?;
    let len = i32::try_from(buf.len()).map_err(|_| "request too large".to_owned())?;
    let mut out = Vec::with_capacity(buf.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&buf);
    Ok(out)
}

/// Reads one size-prefixed frame (returns the payload without the prefix).
pub fn read_frame<R: Read>(r: &mut R, max: usize) -> Result<Vec<u8>, String> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|e| format!("read frame size: {e}"))?;
    let len = i32::from_be_bytes(len);
    if len < 0 || len as usize > max {
        return Err(format!("bad frame size {len} (cap {max})"));
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload)
        .map_err(|e| format!("read frame payload ({len} bytes): {e}"))?;
    Ok(payload)
}

/// One entry of an ApiVersions response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersionRange {
    pub api_key: i16,
    pub min_version: i16,
    pub max_version: i16,
}

impl ApiVersionRange {
    /// Human name of the API key, e.g. "Produce", or "ApiKey(77)" if unknown to kafka-protocol.
    pub fn name(&self) -> String {
        api_key_name(self.api_key)
    }
}

/// Human name of an API key, e.g. "Produce".
pub fn api_key_name(api_key: i16) -> String {
    match ApiKey::try_from(api_key) {
        Ok(k) => format!("{k:?}"),
        Err(_) => format!("ApiKey({api_key})"),
    }
}

fn api_versions_once<S: Read + Write>(
    stream: &mut S,
    version: i16,
    correlation_id: i32,
) -> Result<(i16, Vec<ApiVersionRange>), String> {
    let mut req = ApiVersionsRequest::default();
    if version >= 3 {
        req = req
            .with_client_software_name(StrBytes::from_static_str(HARNESS_CLIENT_ID))
            .with_client_software_version(StrBytes::from_static_str("0.1.0"));
    }
    let frame = encode_request(
        ApiKey::ApiVersions as i16,
        version,
        correlation_id,
        Some(HARNESS_CLIENT_ID),
        &req,
    )?;
    stream
        .write_all(&frame)
        .map_err(|e| format!("write ApiVersions request: {e}"))?;
    let payload = read_frame(stream, MAX_FRAME_BYTES)?;
    let mut bytes = Bytes::from(payload);
    // ApiVersions responses always use response header v0.
    let header = ResponseHeader::decode(&mut bytes, ApiVersionsResponse::header_version(version))
        .map_err(|e| format!("decode ApiVersions response header: {e}"))?;
    if header.correlation_id != correlation_id {
        return Err(format!(
            "ApiVersions response correlation id {} != {correlation_id}",
            header.correlation_id
        ));
    }
    let resp = ApiVersionsResponse::decode(&mut bytes, version)
        .map_err(|e| format!("decode ApiVersions v{version} response body: {e}"))?;
    let ranges = resp
        .api_keys
        .iter()
        .map(|k| ApiVersionRange {
            api_key: k.api_key,
            min_version: k.min_version,
            max_version: k.max_version,
        })
        .collect();
    Ok((resp.error_code, ranges))
}

/// Connects to `addr`, performs a real ApiVersions exchange (v3, falling back to v0 when the
/// broker answers UNSUPPORTED_VERSION) and returns the advertised API version ranges.
pub fn api_versions_probe(
    addr: SocketAddr,
    timeout: Duration,
) -> Result<Vec<ApiVersionRange>, String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|_| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("set socket timeouts: {e}"))?;
    stream.set_nodelay(true).ok();
    api_versions_exchange(&mut stream)
}

fn api_versions_exchange<S: Read + Write>(stream: &mut S) -> Result<Vec<ApiVersionRange>, String> {
    let (error_code, ranges) = api_versions_once(stream, 3, 1)?;
    match error_code {
        0 => Ok(ranges),
        // UNSUPPORTED_VERSION: the broker tells us its range and expects a retry at v0.
        35 => {
            let (error_code, ranges) = api_versions_once(stream, 0, 2)?;
            if error_code == 0 {
                Ok(ranges)
            } else {
                Err(format!("ApiVersions v0 returned error code {error_code}"))
            }
        }
        other => Err(format!("ApiVersions v3 returned error code {other}")),
    }
}
