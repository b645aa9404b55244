//! Mirror topic prefixes (Cluster Linking's `cluster.link.prefix`) in an active-active pair:
//! west -> east mirrors as `west.<topic>`, east -> west as `east.<topic>`, both selecting every
//! topic, in one `strait run`. Every record lands once at its source offset under the prefixed
//! name, nothing is mirrored back (`east.west.trades`, `west.east.payments`), consumer offsets
//! follow into the prefixed topics, and `strait mirror` shows and promotes a mirror topic by
//! its name on the destination. Configs and ACLs of a source topic land on its prefixed mirror.

mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, AlterConfig, ConfigSource, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::ClientConfig;
use support::data::{commit_group, committed_offset, create_topic_with_config, watermarks};
use support::java::{self, JavaProgram};
use support::kafka::{start_each, start_kafka_with, KafkaCluster, KafkaOptions};
use support::strait::{status_get, wait_until};
use support::{
    consume_all, create_topic, produce_records, topic_name, Broker, Codec, OwnedRecord,
    ProduceCheckProxy, StraitRun, TestRecord,
};

const PARTITIONS: i32 = 3;
const RECORDS: usize = 300;

fn strait(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strait"))
        .args(args)
        .output()
        .expect("run strait");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The topic names of a cluster.
fn topics(bootstrap: &str) -> Vec<String> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("consumer");
    let md = consumer
        .fetch_metadata(None, Duration::from_secs(10))
        .expect("metadata");
    md.topics().iter().map(|t| t.name().to_string()).collect()
}

/// `RECORDS` records spread over the partitions, keys and values naming `what`.
fn records(what: &str) -> Vec<TestRecord> {
    (0..RECORDS)
        .map(|i| TestRecord {
            partition: Some(i as i32 % PARTITIONS),
            ..TestRecord::kv(format!("{what}-key-{i}"), format!("{what}-{i}"))
        })
        .collect()
}

/// Every record of `topic`, by (partition, offset): key, value and timestamp.
type Rows = BTreeMap<(i32, i64), (Option<Vec<u8>>, Option<Vec<u8>>, Option<i64>)>;

fn rows(bootstrap: &str, topic: &str) -> Rows {
    let v = consume_all(bootstrap, topic, RECORDS, Duration::from_secs(60));
    assert_eq!(v.len(), RECORDS, "{topic}: every record read");
    v.iter()
        .map(|r: &OwnedRecord| {
            (
                (r.partition, r.offset),
                (r.key.clone(), r.value.clone(), r.timestamp),
            )
        })
        .collect()
}

/// Two clusters behind Produce-checking proxies, each with a topic of `RECORDS` records and a
/// group committed at 40 on it, and the active-active configuration.
struct Pair {
    west: Broker,
    east: Broker,
    proxies: [ProduceCheckProxy; 2],
    config: std::path::PathBuf,
    dir: std::path::PathBuf,
    http: u16,
}

fn pair() -> Pair {
    let (west, proxy_west) = Broker::start_behind_proxy("west");
    let (east, proxy_east) = Broker::start_behind_proxy("east");
    let (w, e) = (west.direct_bootstrap(), east.direct_bootstrap());
    create_topic(&w, "trades", PARTITIONS);
    create_topic(&e, "payments", PARTITIONS);
    produce_records(&w, "trades", &records("trade"), Codec::Lz4);
    produce_records(&e, "payments", &records("payment"), Codec::None);
    commit_group(&w, "trade-readers", "trades", PARTITIONS, 40);
    commit_group(&e, "payment-readers", "payments", PARTITIONS, 40);
    let dir = std::env::temp_dir().join(topic_name("mirror-prefix"));
    std::fs::create_dir_all(&dir).expect("dir");
    let http = support::broker::free_port();
    let flow = |source: &str, target: &str| {
        format!(
            "[[flows]]\nsource = \"{source}\"\ntarget = \"{target}\"\nmode = \"mirror\"\n\
             link = \"{source}-link\"\nprefix = \"{source}.\"\ntopics = [\".*\"]\n\
             refresh_topics_interval_secs = 1\nconsumer_offset_sync_interval_ms = 500\n"
        )
    };
    let config = dir.join("active-active.toml");
    std::fs::write(
        &config,
        format!(
            "http = \"127.0.0.1:{http}\"\n\
             [clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n{}{}",
            west.bootstrap(),
            east.bootstrap(),
            flow("west", "east"),
            flow("east", "west"),
        ),
    )
    .expect("config");
    Pair {
        west,
        east,
        proxies: [proxy_west, proxy_east],
        config,
        dir,
        http,
    }
}

#[test]
fn active_active_prefixed_mirrors_keep_offsets_and_never_loop() {
    let p = pair();
    let (w, e) = (p.west.direct_bootstrap(), p.east.direct_bootstrap());
    let c = p.config.to_str().expect("utf-8 path");
    // Debug for the flows' topic selection: the skipped loops are logged there.
    let run = StraitRun::start_with(
        &p.config,
        &p.dir.join("run.log"),
        "info,strait::replicate::flow=debug",
    );
    let minute = Duration::from_secs(60);
    wait_until("both directions mirrored", minute, &run, || {
        watermarks(&e, "west.trades") == watermarks(&w, "trades")
            && watermarks(&w, "east.payments") == watermarks(&e, "payments")
    });
    // Every record once, at its source offset, under the prefixed name.
    assert!(rows(&w, "trades") == rows(&e, "west.trades"), "west.trades");
    assert!(
        rows(&e, "payments") == rows(&w, "east.payments"),
        "east.payments"
    );
    // Consumer offset sync into the prefixed topics.
    wait_until("groups synced into the mirror topics", minute, &run, || {
        (0..PARTITIONS).all(|part| {
            committed_offset(&e, "trade-readers", "west.trades", part) == Some(40)
                && committed_offset(&w, "payment-readers", "east.payments", part) == Some(40)
        })
    });
    // Several refresh intervals later, nothing went back: the name shows where it came from.
    std::thread::sleep(Duration::from_secs(4));
    let looped = |bootstrap: &str, back: &str| {
        topics(bootstrap)
            .into_iter()
            .filter(|t| t.starts_with(back))
            .collect::<Vec<_>>()
    };
    assert_eq!(looped(&w, "east.west."), Vec::<String>::new());
    assert_eq!(looped(&e, "west.east."), Vec::<String>::new());
    let log = run.log();
    assert!(
        log.contains("not mirrored: the topic came from cluster west")
            && log.contains("not mirrored: the topic came from cluster east"),
        "{log}"
    );

    check_shown_by_prefixed_name(c, p.http);
    promote_by_destination_name(c, &run, &w, &e);
    drop(run);
    for proxy in &p.proxies {
        proxy.assert_clean();
    }
}

/// `strait mirror list|status|describe`, `/api/flows` and the metric name the mirror topics as
/// they are on the destination.
fn check_shown_by_prefixed_name(c: &str, http: u16) {
    let (ok, status, err) = strait(&["mirror", "status", "--config", c]);
    assert!(ok, "{err}");
    println!("{status}");
    for (topic, link) in [("west.trades", "west-link"), ("east.payments", "east-link")] {
        let lines: Vec<Vec<&str>> = status
            .lines()
            .filter(|l| l.starts_with(&format!("{topic} ")))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines.len(), PARTITIONS as usize, "{status}");
        for row in lines {
            // Topic Partition ClusterLink State SourceLogStart SourceLogEnd DestLogEnd Lag
            // LastFetchLagMs IsCaughtUp Offsets Status
            assert_eq!(row[2], link, "{status}");
            assert_eq!(row[5], row[6], "same log end on both sides: {status}");
            assert_eq!(&row[7..], ["0", "0", "true", "identical", "ACTIVE"]);
        }
    }
    // By the source topic's name too.
    let (ok, only, _) = strait(&["mirror", "status", "--config", c, "--topic", "trades"]);
    assert!(
        ok && only.lines().count() == 1 + PARTITIONS as usize,
        "{only}"
    );
    assert!(only.lines().skip(1).all(|l| l.starts_with("west.trades ")));
    let (ok, list, err) = strait(&["mirror", "list", "--config", c]);
    assert!(ok, "{err}");
    assert!(
        list.lines().any(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells.get(3..5) == Some(&["west.trades", "trades"][..])
        }),
        "{list}"
    );
    let (ok, out, err) = strait(&[
        "mirror",
        "describe",
        "--config",
        c,
        "--topic",
        "east.payments",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!("{:<24}payments\n", "Source topic")),
        "{out}"
    );
    assert_eq!(
        out.matches("identical").count(),
        PARTITIONS as usize,
        "{out}"
    );
    let (_, api) = status_get(http, "/api/flows").expect("/api/flows");
    let flows: serde_json::Value = serde_json::from_str(&api).expect("json");
    let mirrors: Vec<(String, String)> = flows["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .flat_map(|f| f["mirrors"].as_array().cloned().unwrap_or_default())
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_string();
            (s("topic"), s("source_topic"))
        })
        .collect();
    for want in [("west.trades", "trades"), ("east.payments", "payments")] {
        assert!(
            mirrors.contains(&(want.0.into(), want.1.into())),
            "{want:?} in {api}"
        );
    }
    let (_, metrics) = status_get(http, "/metrics").expect("/metrics");
    let line = "strait_mirror_topic_status{flow=\"west->east\",link=\"west-link\",topic=\"west.trades\",status=\"ACTIVE\"} 1";
    assert!(metrics.lines().any(|l| l == line), "{metrics}");
}

/// `strait mirror promote --topic west.trades`: the destination name, as Cluster Linking's
/// `kafka-mirrors --promote --topics west.trades`.
fn promote_by_destination_name(c: &str, run: &StraitRun, w: &str, e: &str) {
    let (ok, out, err) = strait(&["mirror", "promote", "--config", c, "--topic", "west.trades"]);
    assert!(ok, "{out}{err}\n{}", run.log());
    assert!(out.contains("promoted"), "{out}");
    let local = vec![TestRecord {
        partition: Some(0),
        ..TestRecord::kv("east", "written on east")
    }];
    produce_records(e, "west.trades", &local, Codec::None);
    produce_records(w, "trades", &records("late"), Codec::None);
    std::thread::sleep(Duration::from_secs(3));
    let ends: i64 = watermarks(e, "west.trades").iter().map(|x| x.1).sum();
    assert_eq!(
        ends,
        RECORDS as i64 + 1,
        "mirrored, then one written on east"
    );
    let (ok, list, _) = strait(&["mirror", "list", "--config", c]);
    assert!(
        ok && list
            .lines()
            .any(|l| l.contains("west.trades") && l.contains("promoted")),
        "{list}"
    );
    // A promoted mirror topic is an ordinary topic, but its name still says where it came
    // from: east -> west does not take it.
    assert!(!topics(w).iter().any(|t| t.starts_with("east.west.")));
    let (ok, _, err) = strait(&["mirror", "pause", "--config", c, "--topic", "trades"]);
    assert!(!ok && err.contains("already ended"), "{err}");
    assert!(!run.log().contains("written by something other than strait"));
}

/// A one-node cluster whose brokers and controller authorize every request with
/// `StandardAuthorizer`; the anonymous PLAINTEXT principal (the tests, strait) is a super user.
fn start_with_authorizer(name: &str) -> KafkaCluster {
    let mut opts = KafkaOptions::new(name);
    opts.properties = vec![
        (
            "authorizer.class.name".into(),
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        ),
        ("super.users".into(), "User:ANONYMOUS".into()),
    ];
    start_kafka_with(opts)
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin")
}

/// A topic's `retention.ms` when the topic sets it (config source DYNAMIC_TOPIC_CONFIG).
fn retention(bootstrap: &str, topic: &str) -> Option<String> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let res = rt
        .block_on(admin(bootstrap).describe_configs(
            &[ResourceSpecifier::Topic(topic)],
            &AdminOptions::new().request_timeout(Some(Duration::from_secs(30))),
        ))
        .expect("describe configs");
    let resource = res.into_iter().next()?.ok()?;
    resource
        .entries
        .iter()
        .find(|e| e.source == ConfigSource::DynamicTopic && e.name == "retention.ms")
        .and_then(|e| e.value.clone())
}

fn set_retention(bootstrap: &str, topic: &str, ms: &str) {
    let alter = AlterConfig::new(ResourceSpecifier::Topic(topic)).set("retention.ms", ms);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let res = rt
        .block_on(admin(bootstrap).alter_configs(
            &[alter],
            &AdminOptions::new().request_timeout(Some(Duration::from_secs(30))),
        ))
        .expect("alter configs");
    for r in res {
        r.unwrap_or_else(|(_, e)| panic!("alter configs of {topic}: {e:?}"));
    }
}

/// Topic ACLs as Kafka's Admin client lists them, one line each: name, pattern, principal,
/// host, operation, permission, separated by spaces.
fn acls(tool: &JavaProgram, bootstrap: &str) -> Vec<String> {
    tool.run(&["list", bootstrap], "")
        .lines()
        .filter_map(|l| l.strip_prefix("acl\t"))
        .map(|l| l.replace('\t', " "))
        .collect()
}

fn create_acl(tool: &JavaProgram, bootstrap: &str, line: &str) {
    let input = format!("{}\n", line.replace(' ', "\t"));
    let out = tool.run(&["create", bootstrap], &input);
    assert!(out.contains("created\t1"), "{out}");
}

/// Cluster Linking's topic config and ACL sync for a prefixed mirror topic: the source topic's
/// settings and literal ACLs land on `a.orders` on the destination, at creation and later.
#[test]
fn a_prefixed_mirror_topic_gets_its_source_topics_configs_and_acls() {
    let tool = java::compile("AclTool");
    let [a, d] = start_each(["a", "d"], start_with_authorizer);
    let (ab, db) = (a.bootstrap(), d.bootstrap());
    create_topic_with_config(&ab, "orders", 1, &[("retention.ms", "86400000")]);
    let orders: Vec<TestRecord> = (0..20)
        .map(|i| TestRecord::kv(format!("k{i}"), "v"))
        .collect();
    produce_records(&ab, "orders", &orders, Codec::None);
    create_acl(&tool, &ab, "orders LITERAL User:alice * READ ALLOW");
    let dir = std::env::temp_dir().join(topic_name("mirror-prefix-sync"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("mirror.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{ab}\"\n[clusters.d]\nbootstrap_servers = \"{db}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"d\"\nmode = \"mirror\"\nprefix = \"a.\"\n\
             topics = [\"orders\"]\nrefresh_topics_interval_secs = 1\n\
             sync_topic_configs_interval_secs = 1\nsync_topic_acls_interval_secs = 1\n"
        ),
    )
    .expect("config");
    let run = StraitRun::start_with(&config, &dir.join("run.log"), "info");
    let half = Duration::from_secs(30);
    wait_until("orders mirrored as a.orders", half, &run, || {
        watermarks(&db, "a.orders").iter().map(|w| w.1).sum::<i64>() == 20
    });
    assert_eq!(retention(&db, "a.orders").as_deref(), Some("86400000"));
    let alice = "a.orders LITERAL User:alice * READ ALLOW".to_string();
    wait_until("alice's ACL on a.orders", half, &run, || {
        acls(&tool, &db).contains(&alice)
    });
    set_retention(&ab, "orders", "3600000");
    create_acl(&tool, &ab, "orders LITERAL User:erin * DESCRIBE ALLOW");
    let erin = "a.orders LITERAL User:erin * DESCRIBE ALLOW".to_string();
    wait_until("the change and the new ACL follow", half, &run, || {
        retention(&db, "a.orders").as_deref() == Some("3600000") && acls(&tool, &db).contains(&erin)
    });
    assert!(!topics(&db).contains(&"orders".to_string()));
    assert!(
        acls(&tool, &db).iter().all(|l| l.starts_with("a.orders ")),
        "{:?}",
        acls(&tool, &db)
    );
    let log = run.stop();
    assert!(
        !log.contains("topic config sync failed") && !log.contains("topic ACL sync failed"),
        "{log}"
    );
}
