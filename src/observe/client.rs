//! A tiny HTTP/1.1 GET client for `strait status`: one request per connection, bounded answer.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Error, Result};

/// Largest answer accepted.
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Splits a complete HTTP/1.x response into status code and body (honouring
/// `Content-Length` when present).
pub fn parse_response(raw: &[u8]) -> std::result::Result<(u16, Vec<u8>), String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer has no complete head")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "the answer head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Err(format!("bad status line {status_line:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("bad status line {status_line:?}"));
    }
    let code: u16 = code
        .parse()
        .map_err(|_| format!("bad status line {status_line:?}"))?;
    let mut body = &raw[end + 4..];
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                let n: usize = v
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad Content-Length {v:?}"))?;
                if n > body.len() {
                    return Err(format!(
                        "the answer ended after {} of {n} body bytes",
                        body.len()
                    ));
                }
                body = &body[..n];
            }
        }
    }
    Ok((code, body.to_vec()))
}

/// GETs `path` from the server at `addr` (`host:port`); returns status code and body.
pub async fn get(addr: &str, path: &str, timeout: Duration) -> Result<(u16, Vec<u8>)> {
    get_with(addr, path, timeout, None).await
}

/// [`get`] with an optional bearer token (never part of an error message).
pub async fn get_with(
    addr: &str,
    path: &str,
    timeout: Duration,
    token: Option<&str>,
) -> Result<(u16, Vec<u8>)> {
    let fail = |what: String| Error::invalid(format!("http://{addr}{path}: {what}"));
    let work = async {
        let mut s = TcpStream::connect(addr)
            .await
            .map_err(|e| fail(format!("cannot connect: {e}")))?;
        let host = addr;
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n{auth}Connection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes())
            .await
            .map_err(|e| fail(format!("cannot send: {e}")))?;
        let mut raw = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = s
                .read(&mut chunk)
                .await
                .map_err(|e| fail(format!("cannot read: {e}")))?;
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&chunk[..n]);
            if raw.len() > MAX_RESPONSE_BYTES {
                return Err(fail("the answer is too large".into()));
            }
        }
        parse_response(&raw).map_err(fail)
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| fail(format!("no answer within {timeout:?}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_responses() {
        let (code, body) =
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra").unwrap();
        assert_eq!((code, body.as_slice()), (200, &b"{}"[..]));
        let (code, body) = parse_response(b"HTTP/1.0 503 X\r\n\r\nbody").unwrap();
        assert_eq!((code, body.as_slice()), (503, &b"body"[..]));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\n").is_err());
    }
}
