//! Smoke tests for the integration-test harness in `tests/support/`, on Apache Kafka.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use support::data::{produce_records_with, ProduceOptions};
use support::proxy::{ProduceChecker, PRODUCE};
use support::records::{BatchBuilder, SimpleRecord, OFF_RECORDS_COUNT};
use support::wire::encode_request;
use support::{consume_all, create_topic, topic_name, Broker, Codec, TestRecord};

fn print_api_versions(broker: &Broker) {
    // ApiVersions, Metadata, Produce, Fetch, InitProducerId, CreateTopics
    for key in [18i16, 3, 0, 1, 22, 19] {
        match broker.api_version(key) {
            Some(r) => eprintln!(
                "the broker advertises {:>16} (key {key:>2}): v{}..=v{}",
                r.name(),
                r.min_version,
                r.max_version
            ),
            None => eprintln!("the broker does not advertise api key {key}"),
        }
    }
}

#[test]
fn produce_and_consume_through_checking_proxy() {
    let (broker, proxy) = Broker::start_behind_proxy("harness-smoke");
    // rdkafka decides its own acks; only strait's requests must use acks=all.
    proxy.set_require_acks_all(false);
    eprintln!("broker log: {}", broker.log_path().display());
    print_api_versions(&broker);
    assert_ne!(broker.bootstrap(), broker.direct_bootstrap());

    let bootstrap = broker.bootstrap();
    let topic = topic_name("smoke");
    create_topic(&bootstrap, &topic, 3);

    let records: Vec<TestRecord> = (0..1000)
        .map(|i| {
            let mut headers = vec![("idx".to_owned(), Some(i.to_string().into_bytes()))];
            if i % 3 == 0 {
                headers.push(("nullable".to_owned(), None));
            }
            TestRecord {
                key: Some(format!("key-{}", i % 41).into_bytes()),
                value: if i % 10 == 7 {
                    None
                } else {
                    Some(format!("value-{i}-{}", "x".repeat(i % 50)).into_bytes())
                },
                headers,
                partition: None,
                timestamp: Some(1_700_000_000_000 + i as i64),
            }
        })
        .collect();
    let delivered = produce_records_with(
        &bootstrap,
        &topic,
        &records,
        &ProduceOptions {
            codec: Codec::Lz4,
            idempotent: true,
            ..Default::default()
        },
    );
    assert_eq!(delivered.len(), records.len());

    let got = consume_all(&bootstrap, &topic, records.len(), Duration::from_secs(60));
    assert_eq!(got.len(), records.len(), "consumed record count");

    let by_position: HashMap<(i32, i64), &TestRecord> = delivered
        .iter()
        .zip(&records)
        .map(|(d, r)| ((d.partition, d.offset), r))
        .collect();
    let partitions_used: std::collections::BTreeSet<i32> =
        got.iter().map(|r| r.partition).collect();
    assert!(
        partitions_used.len() > 1,
        "records should spread over partitions"
    );
    for g in &got {
        let sent = by_position
            .get(&(g.partition, g.offset))
            .unwrap_or_else(|| panic!("unexpected record at {}/{}", g.partition, g.offset));
        assert_eq!(g.key, sent.key, "key at {}/{}", g.partition, g.offset);
        assert_eq!(g.value, sent.value, "value at {}/{}", g.partition, g.offset);
        assert_eq!(
            g.headers, sent.headers,
            "headers at {}/{}",
            g.partition, g.offset
        );
        assert_eq!(
            g.timestamp, sent.timestamp,
            "timestamp at {}/{}",
            g.partition, g.offset
        );
    }

    eprintln!(
        "proxy saw {} produce requests, {} batches, {} connections; request counts {:?}; producer ids {:?}",
        proxy.produce_requests(),
        proxy.produce_batches(),
        proxy.connections_accepted(),
        proxy.request_counts(),
        proxy.known_producer_ids()
    );
    for n in proxy.notes() {
        eprintln!("proxy note: {n}");
    }
    assert!(proxy.produce_requests() > 0, "proxy saw no Produce request");
    assert!(proxy.produce_batches() > 0, "proxy saw no record batch");
    assert!(
        proxy.produce_batches() < records.len() as u64,
        "batches should hold several records each"
    );
    assert!(
        !proxy.known_producer_ids().is_empty(),
        "idempotent producer should have fetched a producer id through the proxy"
    );
    proxy.assert_clean();
}

/// A broker killed and started again comes back on the same port and answers ApiVersions
/// there again.
#[test]
fn broker_restarts_on_same_port() {
    let mut broker = Broker::start("harness-restart");
    let port = broker.port();
    assert!(broker.is_running());
    broker.stop();
    assert!(!broker.is_running());
    broker.start_again();
    assert!(broker.is_running());
    assert_eq!(broker.port(), port);
    assert_eq!(broker.start_count(), 2);
    assert!(broker.api_version(PRODUCE).is_some());
}

#[test]
fn proxy_flags_bad_produce_on_the_wire_and_drops_connections() {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    let (broker, proxy) = Broker::start_behind_proxy("harness-wire");
    let topic = topic_name("wire");
    create_topic(&broker.bootstrap(), &topic, 1);

    let mut blob = BatchBuilder::new(records(2)).build();
    blob.extend(BatchBuilder::new(records(1)).build());
    let mut conn = TcpStream::connect(proxy.addr()).expect("connect to proxy");
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
    conn.write_all(&produce_frame(7, 1, &topic, 0, blob))
        .expect("write produce");
    // Whatever the broker answers, the proxy forwards it.
    let response = support::wire::read_frame(&mut conn, 1 << 20).expect("produce response");
    assert_eq!(&response[..4], &42i32.to_be_bytes(), "correlation id");
    {
        use kafka_protocol::messages::ProduceResponse;
        use kafka_protocol::protocol::Decodable;
        let mut body = Bytes::copy_from_slice(&response[4..]);
        if let Ok(r) = ProduceResponse::decode(&mut body, 7) {
            for t in &r.responses {
                for p in &t.partition_responses {
                    eprintln!(
                        "Kafka answered a two-batch Produce v7 with error_code={} base_offset={}",
                        p.error_code, p.base_offset
                    );
                }
            }
        }
    }

    let v = proxy.take_violations();
    assert!(has(&v, "[one-batch]"), "{v:?}");
    assert!(has(&v, "[acks-all]"), "{v:?}");
    assert_eq!(proxy.produce_requests(), 1);
    assert_eq!(proxy.produce_batches(), 2);

    // drop_connections_now closes the proxied connection; new connections still work.
    proxy.drop_connections_now();
    let mut buf = [0u8; 1];
    match conn.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("expected the proxied connection to be closed, got {other:?}"),
    }
    let versions = support::wire::api_versions_probe(proxy.addr(), Duration::from_secs(5))
        .expect("ApiVersions through the proxy after drop_connections_now");
    assert!(!versions.is_empty());
    proxy.assert_clean();
}

#[test]
fn fault_plan_lost_produce_response_is_retried_cleanly() {
    let (broker, proxy) = Broker::start_behind_proxy("harness-fault");
    let bootstrap = broker.bootstrap();
    let topic = topic_name("fault");
    create_topic(&bootstrap, &topic, 1);
    // The broker appends the first Produce but the client never sees the answer.
    proxy.update_faults(|f| {
        f.close_after_request(PRODUCE, 1);
    });
    let records: Vec<TestRecord> = (0..200)
        .map(|i| TestRecord::kv(format!("k{i}"), format!("v{i}")))
        .collect();
    produce_records_with(
        &bootstrap,
        &topic,
        &records,
        &ProduceOptions {
            idempotent: true,
            ..Default::default()
        },
    );
    let marks = support::data::watermarks(&bootstrap, &topic);
    eprintln!(
        "after a lost produce response: {} produce requests, {} batches, watermarks {marks:?}",
        proxy.produce_requests(),
        proxy.produce_batches(),
    );
    assert!(
        proxy.produce_requests() >= 2,
        "the lost request should be retried"
    );
    assert_eq!(
        marks,
        vec![(0, records.len() as i64)],
        "idempotent retry must not duplicate"
    );
    let got = consume_all(&bootstrap, &topic, records.len(), Duration::from_secs(30));
    assert_eq!(got.len(), records.len());
    proxy.assert_clean();
}

#[tokio::test]
async fn helpers_work_inside_a_tokio_runtime() {
    use support::data::{consume_all_async, create_topic_async, produce_records_async};

    let (broker, proxy) = Broker::start_behind_proxy("harness-async");
    let bootstrap = broker.bootstrap();
    let topic = topic_name("async");
    create_topic_async(&bootstrap, &topic, 2).await;
    for codec in [Codec::Gzip, Codec::Snappy, Codec::None] {
        let records: Vec<TestRecord> = (0..50)
            .map(|i| TestRecord::kv(format!("k{i}"), format!("{codec:?}-{i}")))
            .collect();
        produce_records_async(&bootstrap, &topic, records, codec).await;
    }
    let got = consume_all_async(&bootstrap, &topic, 150, Duration::from_secs(30)).await;
    assert_eq!(got.len(), 150);
    assert!(proxy.produce_requests() >= 3);
    proxy.assert_clean();
}

#[test]
#[should_panic(expected = "unreported produce-rule violation")]
fn proxy_panics_on_drop_with_unreported_violations() {
    let unused = std::net::SocketAddr::from(([127, 0, 0, 1], support::broker::free_port()));
    let proxy = support::ProduceCheckProxy::start(unused);
    proxy.with_checker(|c| c.violations.push("[test] injected".to_owned()));
    drop(proxy);
}

/// A broker that cannot start (its port is taken) fails the test with its own log, which names
/// the reason (Kafka's "Address already in use").
#[test]
#[should_panic(expected = "already in use")]
fn broker_start_failure_reports_the_log() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut opts = support::BrokerOptions::new("harness-taken");
    opts.listen_port = Some(taken.local_addr().expect("addr").port());
    let _broker = Broker::start_with(opts);
}

// ---- checker unit tests (no sockets) ----

fn produce_frame(version: i16, acks: i16, topic: &str, partition: i32, blob: Vec<u8>) -> Vec<u8> {
    let req = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(Bytes::from(blob)))])]);
    encode_request(PRODUCE, version, 42, Some("unit-test"), &req).expect("encode produce request")
}

fn records(n: usize) -> Vec<SimpleRecord> {
    (0..n)
        .map(|i| SimpleRecord::kv(&format!("k{i}"), &format!("v{i}")))
        .collect()
}

fn has(violations: &[String], rule: &str) -> bool {
    violations.iter().any(|v| v.contains(rule))
}

#[test]
fn checker_accepts_a_valid_request() {
    for version in [3i16, 7, 9, 12] {
        let mut checker = ProduceChecker::new(true);
        checker.note_producer_id(1000, 0);
        let blob = BatchBuilder::new(records(3)).idempotent(1000, 0, 0).build();
        let out = checker.check_request_frame(&produce_frame(version, -1, "t", 0, blob));
        assert!(
            out.violations.is_empty(),
            "v{version}: {:?}",
            out.violations
        );
        assert_eq!(checker.produce_batches, 1);
        assert_eq!(out.produce_acks, Some(-1));
    }
}

#[test]
fn checker_flags_two_batches_in_one_partition() {
    for version in [7i16, 9] {
        let mut checker = ProduceChecker::new(true);
        let mut blob = BatchBuilder::new(records(2)).build();
        blob.extend(BatchBuilder::new(records(3)).build());
        let out = checker.check_request_frame(&produce_frame(version, -1, "t", 1, blob));
        assert!(
            has(&out.violations, "[one-batch]") && has(&out.violations, "2 record batches"),
            "v{version}: {:?}",
            out.violations
        );
        assert!(
            has(&out.violations, "topic=t partition=1"),
            "{:?}",
            out.violations
        );
    }
}

#[test]
fn checker_flags_corrupted_crc() {
    let mut checker = ProduceChecker::new(true);
    let mut blob = BatchBuilder::new(records(4)).build();
    let last = blob.len() - 1;
    blob[last] ^= 0x01;
    let out = checker.check_request_frame(&produce_frame(9, -1, "t", 0, blob));
    assert!(has(&out.violations, "[crc]"), "{:?}", out.violations);
    assert_eq!(out.violations.len(), 1, "{:?}", out.violations);
}

#[test]
fn checker_flags_other_rules() {
    let mut checker = ProduceChecker::new(true);
    checker.note_producer_id(7, 0);
    let frame = |seq: i32, n: usize| {
        produce_frame(
            9,
            -1,
            "s",
            0,
            BatchBuilder::new(records(n)).idempotent(7, 0, seq).build(),
        )
    };
    // First batch may start anywhere; the next must continue; exact retries are fine.
    assert!(checker
        .check_request_frame(&frame(10, 3))
        .violations
        .is_empty());
    assert!(checker
        .check_request_frame(&frame(13, 2))
        .violations
        .is_empty());
    assert!(checker
        .check_request_frame(&frame(10, 3))
        .violations
        .is_empty());
    let gap = checker.check_request_frame(&frame(16, 1)).violations;
    assert!(
        has(&gap, "[sequence]") && has(&gap, "expected 15"),
        "{gap:?}"
    );

    // Unknown producer id.
    let blob = BatchBuilder::new(records(1)).idempotent(99, 0, 0).build();
    let v = checker
        .check_request_frame(&produce_frame(9, -1, "s", 1, blob))
        .violations;
    assert!(has(&v, "[unknown-producer-id]"), "{v:?}");

    // acks=1 with require_acks_all.
    let blob = BatchBuilder::new(records(1)).build();
    let v = checker
        .check_request_frame(&produce_frame(9, 1, "s", 2, blob.clone()))
        .violations;
    assert!(has(&v, "[acks-all]"), "{v:?}");
    checker.require_acks_all = false;
    assert!(checker
        .check_request_frame(&produce_frame(9, 1, "s", 2, blob))
        .violations
        .is_empty());

    // lastOffsetDelta / recordsCount mismatch (CRC recomputed by the builder).
    let mut b = BatchBuilder::new(records(3));
    b.records_count_override = Some(4);
    let v = checker
        .check_request_frame(&produce_frame(9, -1, "s", 3, b.build()))
        .violations;
    assert!(has(&v, "[last-offset-delta]"), "{v:?}");

    // Control batch, and transactional batch without producer id / transactional_id.
    let mut b = BatchBuilder::new(records(1));
    b.attributes = 0x20;
    let v = checker
        .check_request_frame(&produce_frame(9, -1, "s", 4, b.build()))
        .violations;
    assert!(has(&v, "[control-batch]"), "{v:?}");
    let mut b = BatchBuilder::new(records(1));
    b.attributes = 0x10;
    let v = checker
        .check_request_frame(&produce_frame(9, -1, "s", 5, b.build()))
        .violations;
    assert!(has(&v, "[transactional]"), "{v:?}");

    // Magic 1, truncated blob, and garbage frames are violations, never panics.
    let mut b = BatchBuilder::new(records(1));
    b.magic = 1;
    let v = checker
        .check_request_frame(&produce_frame(9, -1, "s", 6, b.build()))
        .violations;
    assert!(has(&v, "[magic]"), "{v:?}");
    let mut blob = BatchBuilder::new(records(2)).build();
    blob.truncate(blob.len() - 3);
    let v = checker
        .check_request_frame(&produce_frame(9, -1, "s", 7, blob))
        .violations;
    assert!(has(&v, "[one-batch]"), "{v:?}");
    let mut blob = BatchBuilder::new(records(2)).build();
    blob[OFF_RECORDS_COUNT] = 0x7f;
    let mut frame = produce_frame(7, -1, "s", 8, blob);
    let v = checker.check_request_frame(&frame).violations;
    assert!(!v.is_empty());
    // Huge array count inside an otherwise valid frame.
    let at = 4 + 2 + 2 + 4 + 2 + "unit-test".len() + 2 + 2 + 4;
    frame[at..at + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    let v = checker.check_request_frame(&frame).violations;
    assert!(has(&v, "[malformed-produce]"), "{v:?}");
    for junk in [
        &[][..],
        &[0, 0, 0, 2, 0, 0][..],
        &[0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 1][..],
    ] {
        let v = checker.check_request_frame(junk).violations;
        assert!(!v.is_empty(), "junk {junk:?} not flagged");
    }
}

/// A scripted upstream for the proxy's fault tests (no Kafka): every request frame (api key,
/// version, correlation id, client id, then a u32 `n`) is answered with a frame of the same
/// correlation id and `n` bytes. How each connection's reading ended (`"eof"`, or the error
/// kind) is sent on the returned channel.
fn scripted_upstream() -> (
    std::net::SocketAddr,
    std::sync::mpsc::Receiver<std::io::ErrorKind>,
) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind scripted upstream");
    let addr = listener.local_addr().expect("scripted upstream address");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let ended = loop {
                    let mut size = [0u8; 4];
                    if let Err(e) = sock.read_exact(&mut size) {
                        break e.kind();
                    }
                    let mut payload = vec![0u8; i32::from_be_bytes(size) as usize];
                    if let Err(e) = sock.read_exact(&mut payload) {
                        break e.kind();
                    }
                    let n = u32::from_be_bytes(payload[payload.len() - 4..].try_into().unwrap());
                    let mut out = Vec::with_capacity(8 + n as usize);
                    out.extend_from_slice(&(4 + n as i32).to_be_bytes());
                    out.extend_from_slice(&payload[4..8]);
                    out.extend((0..n).map(|i| i as u8));
                    if let Err(e) = sock.write_all(&out) {
                        break e.kind();
                    }
                };
                let _ = tx.send(ended);
            });
        }
    });
    (addr, rx)
}

/// A request frame for [`scripted_upstream`] (a Fetch v4 header, which the proxy parses)
/// asking for a response of `n` bytes after the correlation id.
fn scripted_request(correlation_id: i32, n: u32) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&1i16.to_be_bytes());
    p.extend_from_slice(&4i16.to_be_bytes());
    p.extend_from_slice(&correlation_id.to_be_bytes());
    p.extend_from_slice(&1i16.to_be_bytes());
    p.push(b't');
    p.extend_from_slice(&n.to_be_bytes());
    let mut f = (p.len() as i32).to_be_bytes().to_vec();
    f.extend(p);
    f
}

fn scripted_client(proxy: &support::ProduceCheckProxy) -> std::net::TcpStream {
    let c = std::net::TcpStream::connect(proxy.addr()).expect("connect to the proxy");
    c.set_read_timeout(Some(Duration::from_secs(20))).ok();
    c
}

/// Reads one response of [`scripted_upstream`]: its correlation id and body length.
fn scripted_response(c: &mut std::net::TcpStream) -> (i32, usize) {
    let p = support::wire::read_frame(c, 64 << 20).expect("a response through the proxy");
    (i32::from_be_bytes(p[..4].try_into().unwrap()), p.len() - 4)
}

/// How the upstream's side of the next connection to end ended.
fn upstream_end(ends: &std::sync::mpsc::Receiver<std::io::ErrorKind>) -> std::io::ErrorKind {
    ends.recv_timeout(Duration::from_secs(10))
        .expect("the upstream connection ended")
}

#[test]
fn proxy_cut_resets_both_sides() {
    use std::io::{ErrorKind, Read, Write};
    let (upstream, ends) = scripted_upstream();
    let proxy = support::ProduceCheckProxy::start(upstream);
    let mut c = scripted_client(&proxy);
    c.write_all(&scripted_request(1, 10)).expect("write");
    assert_eq!(scripted_response(&mut c), (1, 10));
    proxy.drop_connections_now();
    let mut buf = [0u8; 16];
    let got = c.read(&mut buf).map_err(|e| e.kind());
    assert_eq!(got, Err(ErrorKind::ConnectionReset), "an RST, not a FIN");
    assert_eq!(upstream_end(&ends), ErrorKind::ConnectionReset);
    // New connections work.
    let mut c = scripted_client(&proxy);
    c.write_all(&scripted_request(2, 10)).expect("write");
    assert_eq!(scripted_response(&mut c), (2, 10));
    proxy.assert_clean();
}

#[test]
fn proxy_resets_in_the_middle_of_a_response() {
    use std::io::{ErrorKind, Read, Write};
    use support::proxy::{SplitMix64, ANY_API_KEY};
    let (upstream, ends) = scripted_upstream();
    let proxy = support::ProduceCheckProxy::start(upstream);
    let seed = 0x5eed;
    proxy.update_faults(|f| {
        f.seed(seed).reset_mid_response(ANY_API_KEY, 1);
    });
    let mut c = scripted_client(&proxy);
    c.write_all(&scripted_request(1, 10_000)).expect("write");
    let frame_len = 4 + 4 + 10_000u64;
    let mut got = Vec::new();
    let end = loop {
        let mut buf = [0u8; 4096];
        match c.read(&mut buf) {
            Ok(0) => break Ok(0),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => break Err(e.kind()),
        }
    };
    assert_eq!(
        end,
        Err(ErrorKind::ConnectionReset),
        "after {} bytes",
        got.len()
    );
    // The part is the seed's draw: the cut replays.
    let expected = SplitMix64::new(seed).range(1, frame_len - 1) as usize;
    assert_eq!(got.len(), expected, "bytes of the cut response");
    assert_eq!(proxy.responses_cut(), 1);
    assert_eq!(upstream_end(&ends), ErrorKind::ConnectionReset);
    // One shot: the next connection is answered in full.
    let mut c = scripted_client(&proxy);
    c.write_all(&scripted_request(2, 10_000)).expect("write");
    assert_eq!(scripted_response(&mut c), (2, 10_000));
    proxy.assert_clean();
}

#[test]
fn proxy_latency_with_jitter_keeps_frames_in_order() {
    use std::io::Write;
    let (upstream, _ends) = scripted_upstream();
    let proxy = support::ProduceCheckProxy::start(upstream);
    proxy.update_faults(|f| {
        f.seed(7)
            .latency(Duration::from_millis(50), Duration::from_millis(100));
    });
    let mut c = scripted_client(&proxy);
    let start = std::time::Instant::now();
    let mut all = Vec::new();
    for i in 0..40 {
        all.extend(scripted_request(i, 100 + i as u32));
    }
    c.write_all(&all).expect("write");
    for i in 0..40 {
        assert_eq!(scripted_response(&mut c), (i, 100 + i as usize), "in order");
        if i == 0 {
            // Each way at least the base latency.
            assert!(
                start.elapsed() >= Duration::from_millis(100),
                "{:?}",
                start.elapsed()
            );
        }
    }
    // Pipelined, like a network: not 40 round trips of at least 100 ms one after the other.
    let took = start.elapsed();
    assert!(took < Duration::from_millis(2500), "{took:?}");
    proxy.assert_clean();
}

#[test]
fn proxy_bandwidth_limit_paces_forwarded_bytes() {
    use std::io::Write;
    let (upstream, _ends) = scripted_upstream();
    let proxy = support::ProduceCheckProxy::start(upstream);
    proxy.update_faults(|f| {
        f.bandwidth(100_000);
    });
    let mut c = scripted_client(&proxy);
    let start = std::time::Instant::now();
    // A full bucket (one second's worth) and then 200 000 bytes at 100 000 bytes/s.
    c.write_all(&scripted_request(1, 300_000)).expect("write");
    assert_eq!(scripted_response(&mut c), (1, 300_000));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1800) && took < Duration::from_secs(8),
        "{took:?}"
    );
    // Lifted: at once.
    proxy.update_faults(|f| f.bandwidth = None);
    let start = std::time::Instant::now();
    c.write_all(&scripted_request(2, 300_000)).expect("write");
    assert_eq!(scripted_response(&mut c), (2, 300_000));
    assert!(start.elapsed() < Duration::from_millis(1500));
    proxy.assert_clean();
}

#[test]
fn proxy_blackhole_forwards_nothing_until_it_ends() {
    use std::io::Write;
    let (upstream, _ends) = scripted_upstream();
    let proxy = support::ProduceCheckProxy::start(upstream);
    let mut old = scripted_client(&proxy);
    old.write_all(&scripted_request(1, 10)).expect("write");
    assert_eq!(scripted_response(&mut old), (1, 10));

    let start = std::time::Instant::now();
    proxy.update_faults(|f| {
        f.blackhole_for(Duration::from_millis(1500));
    });
    old.write_all(&scripted_request(2, 10)).expect("write");
    // A new connection is accepted meanwhile; both are answered once the blackhole ends.
    let mut new = scripted_client(&proxy);
    new.write_all(&scripted_request(3, 10)).expect("write");
    assert_eq!(scripted_response(&mut old), (2, 10));
    assert_eq!(scripted_response(&mut new), (3, 10));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1450) && took < Duration::from_secs(5),
        "{took:?}"
    );

    // Clearing the plan ends a blackhole at once.
    proxy.update_faults(|f| {
        f.blackhole_for(Duration::from_secs(60));
    });
    let start = std::time::Instant::now();
    old.write_all(&scripted_request(4, 10)).expect("write");
    std::thread::sleep(Duration::from_millis(300));
    proxy.update_faults(|f| f.clear());
    assert_eq!(scripted_response(&mut old), (4, 10));
    assert!(start.elapsed() < Duration::from_secs(5));
    proxy.assert_clean();
}
