//! The floor: a plain socket-to-socket relay (what any user-space replicator must at least do),
//! and the pump and drain that feed and empty it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};

/// Buffer size of the relay, the pump and the drain.
pub const RELAY_BUFFER: usize = 1 << 20;

/// Copies `from` to `to` through one buffer of `buf` bytes until `from` ends; returns the bytes
/// copied.
pub fn copy(from: &mut impl Read, to: &mut impl Write, buf: usize) -> std::io::Result<u64> {
    let mut b = vec![0u8; buf.max(1)];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut b) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&b[..n])?;
        total += n as u64;
    }
}

/// Accepts one connection on `listener`, connects to `sink`, and relays everything from the
/// first to the second; returns the bytes relayed.
pub fn serve_once(listener: &TcpListener, sink: &str) -> std::io::Result<u64> {
    let (mut from, _) = listener.accept()?;
    let mut to = TcpStream::connect(sink)?;
    let n = copy(&mut from, &mut to, RELAY_BUFFER)?;
    to.shutdown(Shutdown::Write)?;
    Ok(n)
}

/// Connects to `addr` and writes `bytes` bytes, then closes the write side.
pub fn pump(addr: &str, bytes: u64) -> std::io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    let b = vec![0x5au8; RELAY_BUFFER];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(b.len() as u64) as usize;
        s.write_all(&b[..n])?;
        left -= n as u64;
    }
    s.shutdown(Shutdown::Write)
}

/// Accepts one connection on `listener` and reads it to the end; returns the bytes read.
pub fn drain(listener: &TcpListener) -> std::io::Result<u64> {
    let (mut s, _) = listener.accept()?;
    copy(&mut s, &mut std::io::sink(), RELAY_BUFFER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relays_every_byte() {
        let sink = TcpListener::bind("127.0.0.1:0").unwrap();
        let sink_addr = sink.local_addr().unwrap().to_string();
        let relay = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay_addr = relay.local_addr().unwrap().to_string();
        let drained = std::thread::spawn(move || drain(&sink).unwrap());
        let relayed = std::thread::spawn(move || serve_once(&relay, &sink_addr).unwrap());
        let n = 3 * RELAY_BUFFER as u64 + 12345;
        pump(&relay_addr, n).unwrap();
        assert_eq!(relayed.join().unwrap(), n);
        assert_eq!(drained.join().unwrap(), n);
    }
}
