//! `SplitLeaders`: makes one broker look like a cluster of two. Two listeners forward every
//! byte to the same upstream broker, except Metadata answers, which are rewritten to list the two
//! listeners as brokers 1 and 2 and to make broker 1 the leader of the even partitions and
//! broker 2 of the odd ones. A client then fetches from two leaders over two connections, as
//! from a real multi-broker cluster, while one broker serves every partition.
//!
//! Each listener counts the Fetch requests it forwarded, and can hold back its Fetch answers
//! (a slow leader).

use std::collections::HashMap;
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, BrokerId, MetadataResponse, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::wire::{parse_request_header, read_frame};

const METADATA: i16 = 3;
const FETCH: i16 = 1;
/// Largest frame passed through (the tests' answers stay far below it).
const MAX_FRAME: usize = 256 << 20;

struct Shared {
    upstream: String,
    ports: [u16; 2],
    fetches: [AtomicU64; 2],
    /// Milliseconds each listener holds a Fetch answer before passing it on.
    fetch_delay_ms: [AtomicU64; 2],
    problems: Mutex<Vec<String>>,
    stop: AtomicBool,
}

/// Two listeners in front of one broker, posing as its two leaders. See the module docs.
pub struct SplitLeaders {
    shared: Arc<Shared>,
}

impl SplitLeaders {
    /// Starts both listeners in front of `upstream` (`host:port`).
    pub fn start(upstream: &str) -> SplitLeaders {
        let listeners = [
            TcpListener::bind("127.0.0.1:0").expect("bind"),
            TcpListener::bind("127.0.0.1:0").expect("bind"),
        ];
        let ports = [
            listeners[0].local_addr().expect("addr").port(),
            listeners[1].local_addr().expect("addr").port(),
        ];
        let shared = Arc::new(Shared {
            upstream: upstream.to_string(),
            ports,
            fetches: [AtomicU64::new(0), AtomicU64::new(0)],
            fetch_delay_ms: [AtomicU64::new(0), AtomicU64::new(0)],
            problems: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        for (i, l) in listeners.into_iter().enumerate() {
            let shared = shared.clone();
            std::thread::spawn(move || {
                for conn in l.incoming() {
                    if shared.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Ok(c) = conn {
                        let shared = shared.clone();
                        std::thread::spawn(move || serve(c, i, shared));
                    }
                }
            });
        }
        SplitLeaders { shared }
    }

    /// The first listener, as a bootstrap address.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.shared.ports[0])
    }

    /// Fetch requests forwarded by broker 1 and broker 2.
    pub fn fetches(&self) -> [u64; 2] {
        [
            self.shared.fetches[0].load(Ordering::Relaxed),
            self.shared.fetches[1].load(Ordering::Relaxed),
        ]
    }

    /// Makes broker `broker` (1 or 2) hold each Fetch answer for `delay` before passing it on.
    pub fn delay_fetch_answers(&self, broker: usize, delay: std::time::Duration) {
        self.shared.fetch_delay_ms[broker - 1].store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// Answers the proxy could not parse or rewrite.
    pub fn problems(&self) -> Vec<String> {
        self.shared
            .problems
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for SplitLeaders {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for p in self.shared.ports {
            let _ = TcpStream::connect(("127.0.0.1", p)); // wakes the accept loop
        }
    }
}

fn write_frame(w: &mut TcpStream, payload: &[u8]) -> bool {
    let len = (payload.len() as i32).to_be_bytes();
    w.write_all(&len).is_ok() && w.write_all(payload).is_ok()
}

type Asked = Arc<Mutex<HashMap<i32, (i16, i16)>>>;

fn serve(client: TcpStream, listener: usize, shared: Arc<Shared>) {
    if shared.stop.load(Ordering::Relaxed) {
        return;
    }
    let Ok(upstream) = TcpStream::connect(&shared.upstream) else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let asked: Asked = Arc::default();
    let (mut c_read, mut c_write) = (client.try_clone().expect("clone"), client);
    let (mut u_read, mut u_write) = (upstream.try_clone().expect("clone"), upstream);
    let requests = {
        let (asked, shared) = (asked.clone(), shared.clone());
        std::thread::spawn(move || {
            while let Ok(frame) = read_frame(&mut c_read, MAX_FRAME) {
                if let Ok(h) = parse_request_header(&frame) {
                    if h.api_key == FETCH {
                        shared.fetches[listener].fetch_add(1, Ordering::Relaxed);
                    }
                    asked
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(h.correlation_id, (h.api_key, h.api_version));
                }
                if !write_frame(&mut u_write, &frame) {
                    break;
                }
            }
            let _ = u_write.shutdown(Shutdown::Write);
        })
    };
    while let Ok(frame) = read_frame(&mut u_read, MAX_FRAME) {
        let asked_for = (frame.len() >= 4)
            .then(|| i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]))
            .and_then(|corr| {
                asked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&corr)
            });
        let out = match asked_for {
            Some((FETCH, _)) => {
                let ms = shared.fetch_delay_ms[listener].load(Ordering::Relaxed);
                if ms > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
                frame
            }
            Some((METADATA, version)) => match rewrite_metadata(&frame, version, shared.ports) {
                Ok(f) => f,
                Err(e) => {
                    shared
                        .problems
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(e);
                    frame
                }
            },
            _ => frame,
        };
        if !write_frame(&mut c_write, &out) {
            break;
        }
    }
    let _ = c_write.shutdown(Shutdown::Both);
    let _ = requests.join();
}

/// The Metadata answer with brokers 1 and 2 on `ports`, broker 1 leading even partitions and
/// broker 2 odd ones.
fn rewrite_metadata(frame: &[u8], version: i16, ports: [u16; 2]) -> Result<Vec<u8>, String> {
    let hv = ApiKey::Metadata.response_header_version(version);
    let mut bytes = Bytes::copy_from_slice(frame);
    let header = ResponseHeader::decode(&mut bytes, hv).map_err(|e| e.to_string())?;
    let mut r = MetadataResponse::decode(&mut bytes, version).map_err(|e| e.to_string())?;
    let template = r.brokers.first().cloned().unwrap_or_default();
    r.brokers = (0..2)
        .map(|i| {
            let mut b = template.clone();
            b.node_id = BrokerId(i as i32 + 1);
            b.host = StrBytes::from_static_str("127.0.0.1");
            b.port = i32::from(ports[i]);
            b
        })
        .collect();
    r.controller_id = BrokerId(1);
    for t in &mut r.topics {
        for p in &mut t.partitions {
            let leader = BrokerId(1 + p.partition_index % 2);
            p.leader_id = leader;
            p.replica_nodes = vec![leader];
            p.isr_nodes = vec![leader];
            p.offline_replicas.clear();
        }
    }
    let mut out = BytesMut::new();
    header.encode(&mut out, hv).map_err(|e| e.to_string())?;
    r.encode(&mut out, version).map_err(|e| e.to_string())?;
    Ok(out.to_vec())
}
