//! A long-distance link on loopback: a TCP relay in front of a broker that holds every byte for
//! half a round trip in each direction, without limiting how many bytes are on their way (as a
//! link with a large bandwidth-delay product does). `strait bench --link-rtt-ms` puts the
//! target cluster behind it, so strait's writes and the direct writer's (the yardstick) cross
//! the same link.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{Error, Result};

/// Bytes read from a socket at once.
const CHUNK: usize = 64 * 1024;
/// Chunks on their way in one direction at most (the link's buffer: 64 MiB of full chunks).
const CHUNKS_IN_FLIGHT: usize = 1024;

/// A running delay link; it stops (with every connection through it) when dropped.
#[derive(Debug)]
pub struct DelayLink {
    addr: String,
    task: JoinHandle<()>,
}

impl DelayLink {
    /// Listens on `listen` (`host:port`) and relays each connection to `upstream`, each byte
    /// arriving `rtt / 2` after it was sent, in both directions.
    pub async fn start(listen: &str, upstream: &str, rtt: Duration) -> Result<DelayLink> {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| Error::invalid(format!("delay link: cannot listen on {listen}: {e}")))?;
        let addr = listener.local_addr().map_err(Error::from)?.to_string();
        let upstream = upstream.to_string();
        let one_way = rtt / 2;
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue; // the client sees its connection closed, as with a dead link
                };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                connections.spawn(carry(cr, sw, one_way));
                connections.spawn(carry(sr, cw, one_way));
            }
        });
        Ok(DelayLink { addr, task })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> &str {
        &self.addr
    }
}

impl Drop for DelayLink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Carries one direction: what `from` sends is written to `to` `delay` later, in order; the
/// end of `from` ends `to`'s write side once everything before it arrived.
async fn carry(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Bytes)>(CHUNKS_IN_FLIGHT);
    let reader = async move {
        loop {
            let mut buf = BytesMut::with_capacity(CHUNK);
            match from.read_buf(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx
                        .send((Instant::now() + delay, buf.freeze()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_byte_arrives_in_order_and_no_earlier_than_half_a_round_trip() {
        // An echo server behind the link: a round trip crosses it twice.
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_addr = echo.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (s, _) = echo.accept().await.unwrap();
            let (mut r, mut w) = s.into_split();
            tokio::io::copy(&mut r, &mut w).await.unwrap();
            w.shutdown().await.unwrap();
        });
        let rtt = Duration::from_millis(80);
        let link = DelayLink::start("127.0.0.1:0", &echo_addr, rtt)
            .await
            .unwrap();
        let s = TcpStream::connect(link.addr()).await.unwrap();
        let (mut r, mut w) = s.into_split();
        let sent: Vec<u8> = (0..3 * CHUNK + 777).map(|i| (i % 251) as u8).collect();
        let start = Instant::now();
        let to_send = sent.clone();
        let writer = tokio::spawn(async move {
            w.write_all(&to_send).await.unwrap();
            w.shutdown().await.unwrap();
        });
        let mut first = [0u8; 1];
        r.read_exact(&mut first).await.unwrap();
        assert!(start.elapsed() >= rtt, "{:?}", start.elapsed());
        let mut back = first.to_vec();
        r.read_to_end(&mut back).await.unwrap();
        writer.await.unwrap();
        assert_eq!(back, sent);
    }
}
