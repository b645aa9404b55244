//! Issue 31, item 2: the write API against Apache Kafka, with two instances of one scale-out
//! group. Every route of the OpenAPI document answers as documented; token rules; bad input
//! (400 naming the field, nothing stored); unknown flow and group (404); a conflict (409:
//! failover of a group with active members, nothing committed); the audit line; a topic
//! list changed through instance 1 applied by both instances; and a flow paused through one
//! instance paused on both, across a restart, then resumed exactly once.

mod support;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use support::broker::free_port;
use support::data::{committed_offset, watermarks};
use support::{create_topic, produce_records, topic_name, Broker, Codec, StraitRun, TestRecord};

const READ: &str = "read-token-1";
const WRITE: &str = "write-token-2";

/// One HTTP/1.1 request by hand: (status, body).
fn http(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
            b.len()
        ));
    } else {
        req.push_str("\r\n");
    }
    s.write_all(req.as_bytes()).expect("write");
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no answer: {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (code, body)
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn write_config(path: &Path, a: &Broker, b: &Broker, port: u16) {
    std::fs::write(
        path,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [http]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{READ}\"\nwrite_token = {{ env = \"STRAIT_TEST_WRITE_TOKEN\" }}\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"t1\"]\ngroups = [\"g1\"]\n\
             refresh_topics_interval_secs = 1\ncheckpoint_interval_secs = 1\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");
}

fn wait(what: &str, timeout: Duration, logs: &[&StraitRun], mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() > deadline {
            let l: Vec<String> = logs.iter().map(|r| r.log()).collect();
            panic!("timed out waiting for {what}\n{}", l.join("\n-----\n"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn the_write_api_changes_every_instance_through_the_clis_records() {
    std::env::set_var("STRAIT_TEST_WRITE_TOKEN", WRITE);
    let a = Broker::start("a");
    let b = Broker::start("b");
    let dir = std::env::temp_dir().join(topic_name("write-api"));
    std::fs::create_dir_all(&dir).expect("dir");
    for t in ["t1", "t2"] {
        create_topic(&a.bootstrap(), t, 2);
        let records: Vec<TestRecord> = (0..10)
            .map(|i| TestRecord {
                partition: Some(i % 2),
                ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
            })
            .collect();
        produce_records(&a.bootstrap(), t, &records, Codec::None);
    }
    // Group g1 committed offset 3 of t1/0 on the source.
    {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", a.bootstrap())
            .set("group.id", "g1")
            .set("enable.auto.commit", "false")
            .create()
            .expect("consumer");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset("t1", 0, Offset::Offset(3))
            .expect("tpl");
        c.commit(&tpl, CommitMode::Sync).expect("commit");
    }
    let (p1, p2) = (free_port(), free_port());
    let (c1, c2) = (dir.join("s1.toml"), dir.join("s2.toml"));
    write_config(&c1, &a, &b, p1);
    write_config(&c2, &a, &b, p2);
    // At trace level: no line of strait's may carry a token, whatever its level.
    let s1 = StraitRun::start_with(&c1, &dir.join("s1.log"), "info,strait=trace");
    let s2 = StraitRun::start_with(&c2, &dir.join("s2.log"), "info");
    let both = [&s1, &s2];
    wait(
        "both instances ready",
        Duration::from_secs(90),
        &both,
        || {
            [p1, p2].iter().all(|p| {
                std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok()
                    && http(*p, "GET", "/ready", Some(READ), None).0 == 200
            })
        },
    );
    let topics = "/api/flows/a-%3Eb/topics";
    let failover = "/api/flows/a-%3Eb/failover";

    // Token rules.
    assert_eq!(http(p1, "POST", topics, None, Some("{}")).0, 401);
    assert_eq!(http(p1, "POST", topics, Some(READ), Some("{}")).0, 403);
    assert_eq!(http(p1, "POST", topics, Some("nope"), Some("{}")).0, 403);
    assert_eq!(http(p1, "GET", topics, Some(WRITE), None).0, 405);
    assert_eq!(http(p1, "GET", "/api/flows", Some(WRITE), None).0, 401);
    // Bad input: 400 naming the field; unknown flow: 404.
    for (body, field) in [
        (r#"{"add":"t2"}"#, "add"),
        (r#"{"add":["("]}"#, "add"),
        (r#"{"add":["t2"],"add_exclude":["("]}"#, "add_exclude"),
        (r#"{"adds":["t2"]}"#, "adds"),
        ("{", "body"),
        ("[]", "body"),
    ] {
        let (code, answer) = http(p1, "POST", topics, Some(WRITE), Some(body));
        assert_eq!(code, 400, "{body}: {answer}");
        assert_eq!(json(&answer)["field"], field, "{body}: {answer}");
    }
    let (code, answer) = http(p1, "POST", failover, Some(WRITE), Some("{}"));
    assert_eq!(
        (code, json(&answer)["field"].clone()),
        (400, "group".into())
    );
    let (code, answer) = http(
        p1,
        "POST",
        failover,
        Some(WRITE),
        Some(r#"{"group":"g1","dry_run":1}"#),
    );
    assert_eq!(
        (code, json(&answer)["field"].clone()),
        (400, "dry_run".into())
    );
    let (code, _) = http(
        p1,
        "POST",
        "/api/flows/b-%3Ea/topics",
        Some(WRITE),
        Some("{}"),
    );
    assert_eq!(code, 404);
    // Nothing applied partially: the lists are still the configured ones.
    let (code, answer) = http(p1, "POST", topics, Some(WRITE), Some("{}"));
    assert_eq!(code, 200, "{answer}");
    let v = json(&answer);
    assert_eq!(v["changed"], false);
    assert_eq!(v["include"], serde_json::json!(["t1"]));
    let (code, _) = http(
        p1,
        "POST",
        failover,
        Some(WRITE),
        Some(r#"{"group":"nobody","dry_run":true}"#),
    );
    assert_eq!(code, 404);

    // Group failover: dry run once the checkpoint is there, 409 while the group has a member
    // on the target (nothing committed), then the real one.
    wait("g1's checkpoint", Duration::from_secs(60), &both, || {
        http(
            p1,
            "POST",
            failover,
            Some(WRITE),
            Some(r#"{"group":"g1","dry_run":true}"#),
        )
        .0 == 200
    });
    let (code, answer) = http(
        p2,
        "POST",
        failover,
        Some(WRITE),
        Some(r#"{"group":"g1","dry_run":true}"#),
    );
    assert_eq!(code, 200, "{answer}");
    let v = json(&answer);
    assert_eq!(v["committed"], false);
    assert!(
        v["offsets"].as_array().is_some_and(
            |o| o.contains(&serde_json::json!({"topic":"a.t1","partition":0,"offset":3}))
        ),
        "{answer}"
    );
    assert_eq!(committed_offset(&b.bootstrap(), "g1", "a.t1", 0), None);
    {
        let member: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", b.bootstrap())
            .set("group.id", "g1")
            .set("enable.auto.commit", "false")
            .create()
            .expect("member");
        member.subscribe(&["a.t1"]).expect("subscribe");
        wait("g1's member on b", Duration::from_secs(60), &both, || {
            let _ = member.poll(Duration::from_millis(200));
            member.assignment().is_ok_and(|a| a.count() > 0)
        });
        let (code, answer) = http(p1, "POST", failover, Some(WRITE), Some(r#"{"group":"g1"}"#));
        assert_eq!(code, 409, "{answer}");
        assert_eq!(committed_offset(&b.bootstrap(), "g1", "a.t1", 0), None);
        member.unsubscribe();
    }
    wait("g1 failed over", Duration::from_secs(60), &both, || {
        let (code, _) = http(p1, "POST", failover, Some(WRITE), Some(r#"{"group":"g1"}"#));
        code == 200
    });
    assert_eq!(committed_offset(&b.bootstrap(), "g1", "a.t1", 0), Some(3));

    // A topic list change through instance 1, applied by both instances.
    let (code, answer) = http(p1, "POST", topics, Some(WRITE), Some(r#"{"add":["t2"]}"#));
    assert_eq!(code, 200, "{answer}");
    let v = json(&answer);
    assert_eq!(v["changed"], true);
    assert_eq!(v["include"], serde_json::json!(["t1", "t2"]));
    wait(
        "both instances apply the new list",
        Duration::from_secs(60),
        &both,
        || {
            both.iter().all(|s| {
                s.log()
                    .lines()
                    .any(|l| l.contains("topic lists changed") && l.contains("\"t2\""))
            })
        },
    );
    wait("t2 replicated", Duration::from_secs(60), &both, || {
        watermarks(&b.bootstrap(), "a.t2")
            .iter()
            .map(|(_, h)| h)
            .sum::<i64>()
            == 10
    });
    // Instance 2 answers with the same stored lists.
    let (code, answer) = http(p2, "POST", topics, Some(WRITE), Some("{}"));
    assert_eq!(code, 200);
    assert_eq!(json(&answer)["include"], serde_json::json!(["t1", "t2"]));

    // The audit line: endpoint, flow, change, caller; never a token.
    let log = s1.log();
    let audit: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("strait::audit"))
        .collect();
    assert!(
        audit
            .iter()
            .any(|l| l.contains("POST /api/flows/a->b/topics")
                && l.contains("flow=a->b")
                && l.contains("t2")
                && l.contains("caller=127.0.0.1:")
                && l.contains("status=200")),
        "{log}"
    );
    assert!(!log.contains(WRITE) && !log.contains(READ), "{log}");
    // Nor any document the status server serves.
    for path in [
        "/metrics",
        "/api/status",
        "/api/flows",
        "/api/groups",
        "/api/openapi.json",
    ] {
        let (code, body) = http(p1, "GET", path, Some(READ), None);
        assert_eq!(code, 200, "{path}: {body}");
        assert!(
            !body.contains(WRITE) && !body.contains(READ),
            "{path}: {body}"
        );
    }

    // Every route of the OpenAPI document answers with one of its documented codes, and the
    // document lists every route served.
    let (code, doc) = http(p1, "GET", "/api/openapi.json", Some(READ), None);
    assert_eq!(code, 200);
    let doc = json(&doc);
    let paths = doc["paths"].as_object().expect("paths");
    let served: BTreeSet<&str> = [
        "/",
        "/metrics",
        "/health",
        "/ready",
        "/api/status",
        "/api/flows",
        "/api/flows/{flow}",
        "/api/groups",
        "/api/openapi.json",
        "/api/flows/{flow}/topics",
        "/api/flows/{flow}/groups",
        "/api/flows/{flow}/failover",
        "/api/flows/{flow}/pause",
        "/api/flows/{flow}/resume",
        "/api/mirrors/{link}/topics/{topic}/pause",
        "/api/mirrors/{link}/topics/{topic}/resume",
        "/api/mirrors/{link}/topics/{topic}/promote",
        "/api/mirrors/{link}/topics/{topic}/failover",
        "/api/mirrors/{link}/topics/{topic}/reverse-and-start",
        "/api/mirrors/{link}/topics/{topic}/reverse-and-pause",
        "/api/mirrors/{link}/configure",
    ]
    .into_iter()
    .collect();
    assert_eq!(
        paths.keys().map(|k| k.as_str()).collect::<BTreeSet<_>>(),
        served
    );
    for (path, ops) in paths {
        let concrete = path
            .replace("{flow}", "a-%3Eb")
            .replace("{link}", "a-%3Eb")
            .replace("{topic}", "t1");
        for (method, op) in ops.as_object().expect("operations") {
            let codes: Vec<u16> = op["responses"]
                .as_object()
                .expect("responses")
                .keys()
                .map(|c| c.parse().expect("code"))
                .collect();
            let (code, answer) = match method.as_str() {
                "get" => http(p1, "GET", &concrete, Some(READ), None),
                "post" => {
                    let example =
                        op["requestBody"]["content"]["application/json"]["example"].to_string();
                    http(p1, "POST", &concrete, Some(WRITE), Some(&example))
                }
                m => panic!("undocumented method {m}"),
            };
            assert!(
                codes.contains(&code),
                "{method} {path}: {code} not in {codes:?}: {answer}"
            );
            assert!(
                matches!(code, 200 | 404),
                "{method} {path}: {code}: {answer}"
            );
            if method == "get" {
                assert_eq!(
                    http(p1, "GET", &concrete, None, None).0 == 401,
                    path != "/health"
                );
            } else {
                assert_eq!(http(p1, "POST", &concrete, None, Some("{}")).0, 401);
                assert!(codes.contains(&401) && codes.contains(&403) && codes.contains(&400));
            }
        }
    }
}

/// Without `write_token` the write API is off: 404 whatever the token.
#[test]
fn without_a_write_token_the_write_api_is_off() {
    let a = Broker::start("a");
    let b = Broker::start("b");
    let dir = std::env::temp_dir().join(topic_name("write-api-off"));
    std::fs::create_dir_all(&dir).expect("dir");
    let port = free_port();
    let config = dir.join("off.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [http]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{READ}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"t1\"]\n",
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("config");
    let s = StraitRun::start_with(&config, &dir.join("off.log"), "info");
    wait("the status server", Duration::from_secs(60), &[&s], || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    for token in [None, Some(READ), Some(WRITE)] {
        let (code, body) = http(
            port,
            "POST",
            "/api/flows/a-%3Eb/topics",
            token,
            Some(r#"{"add":["x"]}"#),
        );
        assert_eq!(code, 404, "{body}");
        assert!(body.contains("write API is off"), "{body}");
    }
    assert!(s.log().contains("write API off"), "{}", s.log());
}

/// The mirror verbs: 202 once stored (a running instance carries them out), 404 for an unknown
/// link or topic, 409 once the mirror ended or for a reversal with no flow the other way; bad
/// input 400.
#[test]
fn mirror_verbs_through_the_write_api() {
    std::env::set_var("STRAIT_TEST_WRITE_TOKEN", WRITE);
    let west = Broker::start("west");
    let east = Broker::start("east");
    let dir = std::env::temp_dir().join(topic_name("write-api-mirror"));
    std::fs::create_dir_all(&dir).expect("dir");
    create_topic(&west.bootstrap(), "orders", 1);
    let records: Vec<TestRecord> = (0..10)
        .map(|i| TestRecord::kv(format!("k{i}"), format!("v{i}")))
        .collect();
    produce_records(&west.bootstrap(), "orders", &records, Codec::None);
    let port = free_port();
    let config = dir.join("link.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n\
             [http]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{READ}\"\nwrite_token = {{ env = \"STRAIT_TEST_WRITE_TOKEN\" }}\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\nlink = \"west-link\"\ntopics = [\"orders\"]\n\
             refresh_topics_interval_secs = 1\n",
            west.bootstrap(),
            east.bootstrap()
        ),
    )
    .expect("config");
    let s = StraitRun::start_with(&config, &dir.join("link.log"), "info");
    let base = "/api/mirrors/west-link/topics/orders";
    wait("the mirror topic", Duration::from_secs(90), &[&s], || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && http(port, "POST", &format!("{base}/pause"), Some(WRITE), None).0 == 202
    });
    assert_eq!(
        http(port, "POST", &format!("{base}/pause"), None, None).0,
        401
    );
    assert_eq!(
        http(port, "POST", &format!("{base}/pause"), Some(READ), None).0,
        403
    );
    let (code, answer) = http(
        port,
        "POST",
        &format!("{base}/resume"),
        Some(WRITE),
        Some(r#"{"now":true}"#),
    );
    assert_eq!((code, json(&answer)["field"].clone()), (400, "now".into()));
    assert_eq!(
        http(
            port,
            "POST",
            "/api/mirrors/nope/topics/orders/pause",
            Some(WRITE),
            None
        )
        .0,
        404
    );
    assert_eq!(
        http(
            port,
            "POST",
            "/api/mirrors/west-link/topics/nope/pause",
            Some(WRITE),
            None
        )
        .0,
        404
    );
    let (code, answer) = http(
        port,
        "POST",
        &format!("{base}/resume"),
        Some(WRITE),
        Some("{}"),
    );
    assert_eq!(code, 202, "{answer}");
    assert_eq!(json(&answer)["action"], "resume");
    // No mirror flow east -> west to mirror it back: a reversal conflicts, nothing stored.
    for verb in ["reverse-and-start", "reverse-and-pause"] {
        let (code, answer) = http(port, "POST", &format!("{base}/{verb}"), Some(WRITE), None);
        assert_eq!(code, 409, "{verb}: {answer}");
        assert!(
            answer.contains("no enabled mirror flow from east to west"),
            "{verb}: {answer}"
        );
    }
    // A flow back that does not select the topic: refused through the CLI with one line
    // naming the flow and its lists, nothing stored (the mirror goes on below).
    let back = dir.join("back.toml");
    std::fs::write(
        &back,
        format!(
            "[clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"west\"\ntarget = \"east\"\nmode = \"mirror\"\nlink = \"west-link\"\ntopics = [\"orders\"]\n\
             [[flows]]\nsource = \"east\"\ntarget = \"west\"\nmode = \"mirror\"\nlink = \"east-link\"\ntopics = [\"other\"]\n",
            west.bootstrap(),
            east.bootstrap()
        ),
    )
    .expect("back config");
    let out = support::cli::mirror_verb(&back, "reverse-and-start", "west-link", "orders", 30);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("the mirror flow east->west does not select it")
            && err.contains("other")
            && err.trim().lines().count() == 1,
        "{err}"
    );
    let (code, answer) = http(port, "POST", &format!("{base}/failover"), Some(WRITE), None);
    assert_eq!(code, 202, "{answer}");
    wait(
        "the mirror failed over",
        Duration::from_secs(60),
        &[&s],
        || http(port, "POST", &format!("{base}/promote"), Some(WRITE), None).0 == 409,
    );
    let (code, answer) = http(port, "POST", &format!("{base}/pause"), Some(WRITE), None);
    assert_eq!(code, 409, "{answer}");
    assert!(answer.contains("ended"), "{answer}");
    assert!(
        s.log().lines().any(|l| l.contains("strait::audit")
            && l.contains("/failover")
            && l.contains("status=202")),
        "{}",
        s.log()
    );
}

/// The flow document of instance `port` (`/api/flows`).
fn flow_doc(port: u16) -> serde_json::Value {
    let (code, body) = http(port, "GET", "/api/flows", Some(READ), None);
    assert_eq!(code, 200, "{body}");
    json(&body)["flows"][0].clone()
}

/// Records on the target's `a.t1`, all partitions.
fn landed(b: &Broker) -> i64 {
    watermarks(&b.bootstrap(), "a.t1")
        .iter()
        .map(|(_, h)| h)
        .sum()
}

/// A flow paused through instance 2's write API is paused on both instances of the group:
/// nothing is copied, and `/ready` (still 200), `/api/flows`, `/metrics` and `strait status` say
/// so; an instance killed and started again while paused starts paused; resumed through the
/// CLI, both continue where they stopped and every record lands exactly once, in order.
#[test]
fn a_flow_paused_through_one_instance_is_paused_on_every_instance() {
    std::env::set_var("STRAIT_TEST_WRITE_TOKEN", WRITE);
    let a = Broker::start("a");
    let b = Broker::start("b");
    let dir = std::env::temp_dir().join(topic_name("write-api-pause"));
    std::fs::create_dir_all(&dir).expect("dir");
    create_topic(&a.bootstrap(), "t1", 4);
    let batch = |from: usize| -> Vec<TestRecord> {
        (from..from + 100)
            .map(|i| TestRecord {
                partition: Some((i % 4) as i32),
                ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
            })
            .collect()
    };
    produce_records(&a.bootstrap(), "t1", &batch(0), Codec::None);
    let (p1, p2) = (free_port(), free_port());
    let (c1, c2) = (dir.join("s1.toml"), dir.join("s2.toml"));
    write_config(&c1, &a, &b, p1);
    write_config(&c2, &a, &b, p2);
    let mut s1 = StraitRun::start_with(&c1, &dir.join("s1.log"), "info");
    let s2 = StraitRun::start_with(&c2, &dir.join("s2.log"), "info");
    let ready = |p: u16| {
        std::net::TcpStream::connect(("127.0.0.1", p)).is_ok()
            && http(p, "GET", "/ready", Some(READ), None).0 == 200
    };
    wait("both ready", Duration::from_secs(90), &[&s1, &s2], || {
        ready(p1) && ready(p2)
    });
    wait(
        "the first 100 records",
        Duration::from_secs(60),
        &[&s1, &s2],
        || landed(&b) == 100,
    );

    // Pause through instance 2; a second pause changes nothing; bad input stores nothing.
    let pause = "/api/flows/a-%3Eb/pause";
    let (code, answer) = http(p2, "POST", pause, Some(WRITE), Some(r#"{"reason":7}"#));
    assert_eq!(
        (code, json(&answer)["field"].clone()),
        (400, "reason".into())
    );
    assert!(flow_doc(p1)["paused"].is_null());
    let (code, answer) = http(
        p2,
        "POST",
        pause,
        Some(WRITE),
        Some(r#"{"reason":"maintenance window"}"#),
    );
    assert_eq!(code, 200, "{answer}");
    assert_eq!(json(&answer)["changed"], true, "{answer}");
    let (code, answer) = http(p1, "POST", pause, Some(WRITE), Some("{}"));
    assert_eq!(code, 200, "{answer}");
    assert_eq!(json(&answer)["changed"], false, "{answer}");
    assert_eq!(json(&answer)["reason"], "maintenance window", "{answer}");
    wait(
        "both instances paused",
        Duration::from_secs(30),
        &[&s1, &s2],
        || {
            [p1, p2]
                .iter()
                .all(|p| flow_doc(*p)["paused"]["reason"] == "maintenance window")
        },
    );
    for p in [p1, p2] {
        // Paused is the operator's intent, not a fault: still ready, and it says paused.
        let (code, body) = http(p, "GET", "/ready", Some(READ), None);
        assert_eq!(code, 200, "{body}");
        assert_eq!(json(&body)["flows"][0]["paused"]["paused"], true, "{body}");
        let (_, metrics) = http(p, "GET", "/metrics", Some(READ), None);
        assert!(
            metrics.contains("strait_flow_paused{flow=\"a->b\",source=\"a\",target=\"b\"} 1"),
            "{metrics}"
        );
    }
    let status = support::cli::strait_out(
        &["status", "--config", c1.to_str().expect("path")],
        &[("STRAIT_TEST_WRITE_TOKEN", WRITE)],
    );
    let text = support::cli::text(&status);
    assert!(status.status.success(), "{text}");
    assert!(
        text.contains("paused") && text.contains("maintenance window"),
        "{text}"
    );

    // Nothing is copied while paused, on either instance.
    produce_records(&a.bootstrap(), "t1", &batch(100), Codec::None);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(landed(&b), 100, "copied while paused");

    // Instance 1 killed and started again: it starts paused (and the group's work moves).
    s1.kill9();
    let s1 = StraitRun::start_with(&c1, &dir.join("s1-again.log"), "info");
    wait(
        "instance 1 back, paused",
        Duration::from_secs(90),
        &[&s1, &s2],
        || ready(p1) && flow_doc(p1)["paused"]["paused"] == true,
    );
    produce_records(&a.bootstrap(), "t1", &batch(200), Codec::None);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(landed(&b), 100, "copied while paused, after a restart");

    // Resumed through the CLI: both continue where they stopped.
    let out = support::cli::strait_out(
        &[
            "resume",
            "--config",
            c2.to_str().expect("path"),
            "--source",
            "a",
            "--target",
            "b",
        ],
        &[("STRAIT_TEST_WRITE_TOKEN", WRITE)],
    );
    let text = support::cli::text(&out);
    assert!(out.status.success() && text.contains("resumed"), "{text}");
    wait(
        "all 300 records",
        Duration::from_secs(60),
        &[&s1, &s2],
        || landed(&b) >= 300,
    );
    wait(
        "both instances resumed",
        Duration::from_secs(30),
        &[&s1, &s2],
        || [p1, p2].iter().all(|p| flow_doc(*p)["paused"].is_null()),
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(landed(&b), 300, "copied twice");
    // Record by record: each target partition holds its source partition, in order.
    let source = support::data::consume_all(&a.bootstrap(), "t1", 300, Duration::from_secs(30));
    let target = support::data::consume_all(&b.bootstrap(), "a.t1", 300, Duration::from_secs(30));
    let view = |r: &[support::data::OwnedRecord]| -> Vec<String> {
        r.iter()
            .map(|x| format!("{} {:?} {:?}", x.partition, x.key, x.value))
            .collect()
    };
    assert_eq!(view(&target), view(&source));
    let (_, metrics) = http(p1, "GET", "/metrics", Some(READ), None);
    assert!(
        metrics.contains("strait_flow_paused{flow=\"a->b\",source=\"a\",target=\"b\"} 0"),
        "{metrics}"
    );
    let log = s2.log();
    assert!(
        log.lines().any(|l| l.contains("strait::audit")
            && l.contains("POST /api/flows/a->b/pause")
            && l.contains("maintenance window")
            && l.contains("status=200")),
        "{log}"
    );
    for l in [s1.log(), log] {
        assert!(
            l.contains("paused: nothing is fetched") && l.contains("resumed"),
            "{l}"
        );
    }
}
