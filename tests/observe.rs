//! Issue 6 acceptance: `/metrics`, the REST API, `strait status` and the status page (in
//! headless Chromium) of a running `strait run`.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use support::broker::free_port;
use support::{create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord};

/// A plain HTTP GET with std: status code and body.
fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

fn wait_until(what: &str, strait: &StraitRun, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n--- strait log ---\n{}",
            strait.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Sum of the samples of `metric` (exact name, no suffix) whose labels contain `labels`.
fn metric_sum(text: &str, metric: &str, labels: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name_labels, value) = l.rsplit_once(' ')?;
            let (name, rest) = match name_labels.split_once('{') {
                Some((n, r)) => (n, r),
                None => (name_labels, ""),
            };
            (name == metric && rest.contains(labels)).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}

fn records(prefix: &str, from: usize, n: usize, partitions: i32) -> Vec<TestRecord> {
    (from..from + n)
        .map(|i| TestRecord {
            key: Some(format!("order-{}", i % 31).into_bytes()),
            value: Some(format!("{prefix} order {i} amount {}", 10 + i % 90).into_bytes()),
            headers: Vec::new(),
            partition: Some((i % partitions as usize) as i32),
            timestamp: None, // CreateTime = now: replication latency is real
        })
        .collect()
}

/// Commits offsets for `group` with rdkafka, as a consumer of the group would.
fn commit(bootstrap: &str, group: &str, offsets: &[(&str, i32, i64)]) {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for (t, p, o) in offsets {
        tpl.add_partition_offset(t, *p, Offset::Offset(*o))
            .expect("tpl");
    }
    c.commit(&tpl, CommitMode::Sync).expect("commit");
}

struct Setup {
    a: Broker,
    b: Broker,
    strait: StraitRun,
    http: String,
    dir: PathBuf,
}

/// Brokers `a` and `b`, topics `orders` (3 partitions) and `clicks` (2) on `a`, and
/// `strait run` with one flow
/// `a -> b` and the status server on a free port.
fn setup(name: &str) -> Setup {
    let a = Broker::start("a");
    let b = Broker::start("b");
    create_topic(&a.bootstrap(), "orders", 3);
    create_topic(&a.bootstrap(), "clicks", 2);
    let dir = std::env::temp_dir().join(topic_name(name));
    std::fs::create_dir_all(&dir).expect("dir");
    let http = format!("127.0.0.1:{}", free_port());
    let config = dir.join("flow.toml");
    std::fs::write(
        &config,
        format!(
            "http = \"{http}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"orders\", \"clicks\"]\ngroups = [\"billing\", \"audit\"]\n\
             refresh_topics_interval_secs = 1\nheartbeat_interval_secs = 1\ncheckpoint_interval_secs = 1\n",
            a.bootstrap(),
            b.bootstrap(),
        ),
    )
    .expect("config");
    let strait = StraitRun::start(&config, &dir.join("strait.log"));
    wait_until("/ready = 200", &strait, Duration::from_secs(30), || {
        http_get(&http, "/ready").is_some_and(|(c, _)| c == 200)
    });
    Setup {
        a,
        b,
        strait,
        http,
        dir,
    }
}

const ORDERS: &str = "flow=\"a->b\",source=\"a\",target=\"b\",topic=\"orders\"";

#[test]
fn metrics_rest_api_and_status_follow_the_data() {
    let s = setup("observe");
    let (code, body) = http_get(&s.http, "/health").expect("/health");
    assert_eq!((code, body.contains("\"up\"")), (200, true), "{body}");

    // The REST API lists the configured flow and, once selected, its topic and partitions
    // (taken up one by one: the status published in between may list fewer).
    let orders_partitions = |body: &str| -> usize {
        serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| {
                v["flows"][0]["topics"]
                    .as_array()?
                    .iter()
                    .find(|t| t["source_topic"] == "orders")?["partitions"]
                    .as_array()
                    .map(Vec::len)
            })
            .unwrap_or(0)
    };
    wait_until(
        "orders and its 3 partitions in /api/flows",
        &s.strait,
        Duration::from_secs(30),
        || http_get(&s.http, "/api/flows").is_some_and(|(_, b)| orders_partitions(&b) == 3),
    );
    let (code, body) = http_get(&s.http, "/api/flows").expect("/api/flows");
    assert_eq!(code, 200);
    let flows: serde_json::Value = serde_json::from_str(&body).expect("json");
    let list = flows["flows"].as_array().expect("flows array");
    assert_eq!(list.len(), 1, "{body}");
    assert_eq!(list[0]["name"], "a->b");
    assert_eq!(list[0]["source"], "a");
    assert_eq!(list[0]["target"], "b");
    assert_eq!(list[0]["source_connected"], true);
    let orders = list[0]["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .find(|t| t["source_topic"] == "orders")
        .expect("orders topic");
    assert_eq!(orders["target_topic"], "a.orders");
    assert_eq!(orders["partitions"].as_array().map(Vec::len), Some(3));
    let (code, _) = http_get(&s.http, "/api/flows/a-%3Eb").expect("one flow");
    assert_eq!(code, 200);
    let (code, body) = http_get(&s.http, "/api/flows/nope").expect("404");
    assert_eq!(code, 404, "{body}");
    let (code, _) = http_get(&s.http, "/definitely/not/here").expect("404");
    assert_eq!(code, 404);

    // First batch of data: the counters reach exactly what was written.
    produce_records(
        &s.a.bootstrap(),
        "orders",
        &records("x", 0, 3000, 3),
        Codec::Lz4,
    );
    wait_until(
        "3000 records counted",
        &s.strait,
        Duration::from_secs(60),
        || {
            http_get(&s.http, "/metrics").is_some_and(|(_, m)| {
                metric_sum(&m, "strait_replication_records_total", ORDERS) >= 3000.0
            })
        },
    );
    let (code, first) = http_get(&s.http, "/metrics").expect("/metrics");
    assert_eq!(code, 200);
    assert_eq!(
        metric_sum(&first, "strait_replication_records_total", ORDERS),
        3000.0
    );
    let bytes1 = metric_sum(&first, "strait_replication_bytes_total", ORDERS);
    assert!(bytes1 > 3000.0 * 10.0, "bytes {bytes1}");
    let lat1 = metric_sum(&first, "strait_replication_latency_seconds_count", ORDERS);
    assert!(lat1 > 0.0, "latency histogram empty:\n{first}");
    assert!(
        metric_sum(
            &first,
            "strait_replication_latency_seconds_bucket",
            "le=\"+Inf\""
        ) >= lat1
    );
    assert!(metric_sum(&first, "strait_record_age_seconds_count", ORDERS) > 0.0);
    assert!(
        metric_sum(
            &first,
            "strait_request_latency_seconds_count",
            "api=\"Fetch\""
        ) > 0.0,
        "{first}"
    );
    assert!(
        metric_sum(
            &first,
            "strait_request_latency_seconds_count",
            "api=\"Produce\""
        ) > 0.0
    );
    assert!(first.contains("# TYPE strait_replication_latency_seconds histogram"));
    assert!(metric_sum(&first, "process_resident_memory_bytes", "") > 1e6);
    assert_eq!(metric_sum(&first, "strait_flow_connected", "a->b"), 1.0);

    // More data: the counters move by exactly as much.
    produce_records(
        &s.a.bootstrap(),
        "orders",
        &records("y", 3000, 2000, 3),
        Codec::Zstd,
    );
    wait_until(
        "5000 records counted",
        &s.strait,
        Duration::from_secs(60),
        || {
            http_get(&s.http, "/metrics").is_some_and(|(_, m)| {
                metric_sum(&m, "strait_replication_records_total", ORDERS) >= 5000.0
            })
        },
    );
    let (_, second) = http_get(&s.http, "/metrics").expect("/metrics");
    assert_eq!(
        metric_sum(&second, "strait_replication_records_total", ORDERS),
        5000.0
    );
    assert!(metric_sum(&second, "strait_replication_bytes_total", ORDERS) > bytes1);
    assert!(metric_sum(&second, "strait_replication_latency_seconds_count", ORDERS) > lat1);
    wait_until(
        "lag 0 on every partition",
        &s.strait,
        Duration::from_secs(30),
        || {
            http_get(&s.http, "/metrics").is_some_and(|(_, m)| {
                m.lines()
                    .filter(|l| {
                        l.starts_with("strait_partition_lag_records{") && l.contains(ORDERS)
                    })
                    .count()
                    == 3
                    && metric_sum(&m, "strait_partition_lag_records", ORDERS) == 0.0
            })
        },
    );
    // The flow's own heartbeats come back through `a.heartbeats`: end-to-end latency.
    wait_until(
        "heartbeat latency",
        &s.strait,
        Duration::from_secs(30),
        || {
            http_get(&s.http, "/metrics").is_some_and(|(_, m)| {
                metric_sum(
                    &m,
                    "strait_heartbeat_latency_seconds_count",
                    "flow=\"a->b\"",
                ) > 0.0
            })
        },
    );

    // A group commit on `a` shows up as a checkpoint in the API.
    commit(&s.a.bootstrap(), "billing", &[("orders", 1, 1000)]);
    wait_until(
        "billing checkpoint",
        &s.strait,
        Duration::from_secs(30),
        || {
            http_get(&s.http, "/api/groups").is_some_and(|(_, b)| {
                let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_default();
                v["flows"][0]["groups"][0]["group"] == "billing"
                    && v["flows"][0]["groups"][0]["partitions"][0]["upstream_offset"] == 1000
            })
        },
    );
    let (_, m) = http_get(&s.http, "/metrics").expect("/metrics");
    assert!(
        metric_sum(
            &m,
            "strait_checkpoint_latency_seconds_count",
            "flow=\"a->b\""
        ) > 0.0
    );

    // `strait status` prints the same facts.
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(["status", "--http", &s.http])
        .output()
        .expect("strait status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("a->b  connected"), "{text}");
    assert!(
        text.contains("orders") && text.contains("a.orders"),
        "{text}"
    );
    assert!(text.contains("billing"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("orders ") && l.contains("a.orders") && l.contains(" 5000 ")),
        "{text}"
    );
    std::fs::write(s.dir.join("status.txt"), text.as_bytes()).expect("save status");

    // Malformed requests get 400 and the server carries on.
    let mut raw = TcpStream::connect(&s.http).expect("connect");
    raw.write_all(b"NOT HTTP AT ALL\r\n\r\n").expect("write");
    let mut answer = String::new();
    raw.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert_eq!(http_get(&s.http, "/health").map(|x| x.0), Some(200));

    // The target goes away: not ready any more (calls to it fail), though still up.
    let Setup {
        mut b, mut strait, ..
    } = s;
    b.stop();
    let http = s.http.clone();
    wait_until("/ready = 503", &strait, Duration::from_secs(30), || {
        http_get(&http, "/ready")
            .is_some_and(|(c, body)| c == 503 && body.contains("\"target_connected\": false"))
    });
    assert_eq!(http_get(&http, "/health").map(|x| x.0), Some(200));
    let (_, m) = http_get(&http, "/metrics").expect("/metrics");
    assert_eq!(metric_sum(&m, "strait_flow_connected", "a->b"), 0.0);
    // Calls to the target fail and are counted (which ones depends on timing: once the group
    // lease runs out the instance stops writing, so heartbeats may never be tried).
    assert!(
        metric_sum(&m, "strait_errors_total", "flow=\"a->b\"") >= 1.0,
        "{m}"
    );
    // No clean stop is possible without the target: end it now.
    strait.kill9();
}

fn chromium() -> PathBuf {
    let candidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "headless Chromium is needed for the status page test but none of {candidates:?} exists; \
                 install the Debian package `chromium` (scripts/setup.sh does)"
            )
        })
}

/// Runs Chromium headless on `url` with `extra` arguments; returns stdout.
fn run_chromium(url: &str, extra: &[&str], profile: &Path) -> String {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--virtual-time-budget=8000",
            "--window-size=1280,860",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let mut stdout = stdout;
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().expect("wait chromium") {
            let out = reader.join().unwrap_or_default();
            if !status.success() {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                panic!("chromium exited with {status}\n{err}");
            }
            return out;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Samples the page needs before it is looked at: 3, or more for the README's picture
/// (`STRAIT_DOCS_SAMPLES`).
fn samples_wanted() -> usize {
    std::env::var("STRAIT_DOCS_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

#[test]
fn status_page_draws_charts_in_headless_chromium() {
    let browser = chromium(); // fail early and clearly when it is missing
    let s = setup("page");
    // Steady traffic while the page is looked at, so the charts show real data.
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let stop = stop.clone();
        let bootstrap = s.a.bootstrap();
        std::thread::spawn(move || {
            let (mut i, mut round) = (0, 0);
            while !stop.load(Ordering::Relaxed) {
                // A rate that changes from round to round, on two topics.
                let n = 200 + 150 * (round % 5);
                produce_records(&bootstrap, "orders", &records("p", i, n, 3), Codec::Lz4);
                produce_records(
                    &bootstrap,
                    "clicks",
                    &records("c", i, n / 3, 2),
                    Codec::Zstd,
                );
                i += n;
                round += 1;
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    };
    wait_until(
        "data on every orders partition",
        &s.strait,
        Duration::from_secs(60),
        || {
            http_get(&s.http, "/metrics").is_some_and(|(_, m)| {
                metric_sum(&m, "strait_replication_records_total", ORDERS) >= 600.0
            })
        },
    );
    commit(
        &s.a.bootstrap(),
        "billing",
        &[("orders", 0, 100), ("orders", 1, 150), ("orders", 2, 120)],
    );
    commit(
        &s.a.bootstrap(),
        "audit",
        &[("clicks", 0, 40), ("clicks", 1, 35)],
    );
    wait_until(
        "samples and checkpoints in /api/status",
        &s.strait,
        Duration::from_secs(60),
        || {
            http_get(&s.http, "/api/status").is_some_and(|(_, b)| {
                let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_default();
                let series = v["flows"][0]["series"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let groups = v["flows"][0]["groups"].as_array().map_or(0, Vec::len);
                series.len() >= samples_wanted()
                    && series
                        .iter()
                        .any(|p| p["records_per_second"].as_f64() > Some(0.0))
                    && groups == 2
            })
        },
    );
    let url = format!("http://{}/", s.http);
    let profile = s.dir.join("chromium-profile");
    let dom = run_chromium(&url, &["--dump-dom"], &profile);
    assert!(
        dom.contains("data-ready=\"1\""),
        "charts never had two points:\n{dom}"
    );
    let canvases = dom.matches("<canvas").count();
    assert_eq!(canvases, 3, "{dom}");
    for part in dom.split("data-samples=\"").skip(1) {
        let n: usize = part.split('"').next().unwrap_or("0").parse().unwrap_or(0);
        assert!(n >= 2, "a chart with {n} samples:\n{dom}");
    }
    assert!(dom.contains("data-topic=\"orders\""), "{dom}");
    assert!(dom.contains("data-topic=\"clicks\""), "{dom}");
    assert!(dom.contains("data-group=\"billing\""), "{dom}");
    assert!(dom.contains("a.orders"), "{dom}");

    let shot = target_dir().join("observe").join("status-page.png");
    std::fs::create_dir_all(shot.parent().expect("parent")).expect("dir");
    let _ = std::fs::remove_file(&shot);
    let profile = s.dir.join("chromium-profile-2");
    run_chromium(
        &url,
        &[&format!("--screenshot={}", shot.display())],
        &profile,
    );
    stop.store(true, Ordering::Relaxed);
    producer.join().expect("producer");
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "{} did not write {}: {e}",
            browser.display(),
            shot.display()
        )
    });
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(png.len() > 10_000, "screenshot is only {} bytes", png.len());
    eprintln!("status page screenshot: {}", shot.display());
    // `STRAIT_DOCS_SAMPLES=20 STRAIT_DOCS_SCREENSHOT=docs/status-page-checkpoints.png` refreshes
    // the README's picture.
    if let Some(docs) = std::env::var_os("STRAIT_DOCS_SCREENSHOT") {
        std::fs::copy(&shot, &docs).expect("copy the screenshot");
    }
}

/// Connections that hold the status port without finishing a request: `n` of them, a third
/// sending nothing, a third half a request line, a third a request line and half a header;
/// one the server closed (its header-read timeout) is opened again at once, so `n` stay held.
/// Returns the number of connections opened in all.
fn hold_idle_connections(addr: &str, n: usize, stop: &AtomicBool) -> usize {
    let partial: [&[u8]; 3] = [
        b"",
        b"GET /hea",
        b"GET /ready HTTP/1.1\r\nHost: x\r\nX-Slow: aaa",
    ];
    let open = |i: usize| -> TcpStream {
        let mut s = TcpStream::connect(addr).expect("connect to the status server");
        s.write_all(partial[i % 3]).expect("half a request");
        s.set_nonblocking(true).expect("nonblocking");
        s
    };
    let mut held: Vec<TcpStream> = (0..n).map(open).collect();
    let mut opened = n;
    while !stop.load(Ordering::SeqCst) {
        for (i, s) in held.iter_mut().enumerate() {
            let mut buf = [0u8; 1024];
            match s.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                // Closed by the server (possibly after an error answer): hold a new one.
                _ => {
                    *s = open(i);
                    opened += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    opened
}

/// Issue 31's liveness check: with 200 idle or half-sent connections held against the status
/// port, `/health` asked every 100 ms for 30 s answers 200 within 100 ms every time, and
/// `/ready` stays truthful: 200 while the flow runs, 503 once the source cluster is stopped.
#[test]
fn health_answers_at_once_while_200_connections_idle() {
    let s = setup("idle-http");
    // STRAIT_TEST_IDLE_CONNECTIONS=0: the same polling without them, for a baseline.
    let held: usize = std::env::var("STRAIT_TEST_IDLE_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let stop = Arc::new(AtomicBool::new(false));
    let holder = {
        let (addr, stop) = (s.http.clone(), stop.clone());
        std::thread::spawn(move || hold_idle_connections(&addr, held, &stop))
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut latencies = Vec::new();
    let mut slow = Vec::new();
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(30) {
        let tick = Instant::now();
        let answer = http_get(&s.http, "/health");
        let took = tick.elapsed();
        assert_eq!(
            answer.as_ref().map(|a| a.0),
            Some(200),
            "/health #{i}: {answer:?} after {took:?}\n{}",
            s.strait.log()
        );
        if took >= Duration::from_millis(20) {
            slow.push(format!("#{i} at {:?}: {took:?}", started.elapsed()));
        }
        latencies.push(took);
        if i % 10 == 5 {
            let (code, body) = http_get(&s.http, "/ready").expect("/ready");
            assert_eq!(code, 200, "/ready while the flow runs: {body}");
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(100).saturating_sub(tick.elapsed()));
    }
    latencies.sort();
    let max = latencies[latencies.len() - 1];
    let p99 = latencies[latencies.len() * 99 / 100];
    let median = latencies[latencies.len() / 2];
    println!(
        "/health under {held} held connections: {} answers, median {median:?}, p99 {p99:?}, max {max:?}",
        latencies.len()
    );
    println!("answers over 20 ms: {slow:?}");
    assert!(max < Duration::from_millis(100), "over 100 ms: {slow:?}");

    // The source goes away: not ready any more, still alive, with the connections still held.
    let Setup {
        mut a, mut strait, ..
    } = s;
    a.stop();
    let http = s.http.clone();
    wait_until("/ready = 503", &strait, Duration::from_secs(30), || {
        http_get(&http, "/ready")
            .is_some_and(|(c, body)| c == 503 && body.contains("\"source_connected\": false"))
    });
    assert_eq!(http_get(&http, "/health").map(|x| x.0), Some(200));
    stop.store(true, Ordering::SeqCst);
    let opened = holder.join().expect("holder");
    println!("idle connections opened in all: {opened} ({held} held at a time)");
    assert!(
        held == 0 || opened > held,
        "the server closes idle connections"
    );
    strait.kill9();
}
