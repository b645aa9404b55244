//! A source log truncated by an unclean leader election, on Apache Kafka: strait copied
//! records that the new leader never had, and the new leader writes other records at those
//! offsets. Strait must notice by leader epoch (the leader's diverging epoch in the Fetch
//! answer, KIP-320), stop the partition with one line naming the offsets, show it stopped, and
//! copy nothing of the new leader's records into the remote partition.

mod support;

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};

use support::data::watermarks;
use support::data::{produce_records_with, ProduceOptions};
use support::kafka::{start_kafka, start_kafka_with, KafkaOptions};
use support::strait::status_get;
use support::{topic_name, StraitRun, TestRecord};

const TOPIC: &str = "orders";
const REMOTE: &str = "a.orders";

fn produce(bootstrap: &str, prefix: &str, n: usize, acks: &'static str) {
    let records: Vec<TestRecord> = (0..n)
        .map(|i| TestRecord::kv(format!("k{i}"), format!("{prefix}-{i}")))
        .collect();
    let opts = ProduceOptions {
        acks,
        ..ProduceOptions::default()
    };
    let delivered = produce_records_with(bootstrap, TOPIC, &records, &opts);
    assert_eq!(delivered.len(), n);
}

/// Creates the topic with its one partition on brokers 2 and 3 (2 leading), unclean leader
/// election allowed.
fn create_on_brokers_2_and_3(bootstrap: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("admin client");
    let assignment: &[&[i32]] = &[&[2, 3]];
    let topic = NewTopic::new(TOPIC, 1, TopicReplication::Variable(assignment))
        .set("unclean.leader.election.enable", "true")
        .set("min.insync.replicas", "1");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let results = rt
        .block_on(admin.create_topics([&topic], &AdminOptions::new()))
        .expect("create topic");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

/// Leader and in-sync replicas of the partition, as the metadata says.
fn leader_and_isr(bootstrap: &str) -> (i32, Vec<i32>) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .create()
        .expect("consumer");
    let md = consumer
        .fetch_metadata(Some(TOPIC), Duration::from_secs(10))
        .expect("metadata");
    let p = &md.topics()[0].partitions()[0];
    (p.leader(), p.isr().to_vec())
}

fn wait_for(
    what: &str,
    log: &dyn Fn() -> String,
    timeout: Duration,
    mut done: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "{what}:\n{}", log());
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_log_truncated_by_an_unclean_election_stops_the_partition() {
    let mut opts = KafkaOptions::new("trunc-a");
    opts.nodes = 3;
    opts.controllers = 1; // brokers 2 and 3 can stop without losing the quorum
    opts.heap = "256m".into();
    opts.properties = vec![
        ("replica.lag.time.max.ms".into(), "2000".into()),
        ("auto.leader.rebalance.enable".into(), "false".into()),
        ("unclean.leader.election.enable".into(), "true".into()),
    ];
    let mut a = start_kafka_with(opts);
    let b = start_kafka("trunc-b");
    let bootstrap = a.bootstrap();
    create_on_brokers_2_and_3(&bootstrap);
    produce(&bootstrap, "first", 100, "all");

    let dir = std::env::temp_dir().join(topic_name("truncation"));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("strait.toml");
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{bootstrap}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n",
            b.bootstrap()
        ),
    )
    .expect("config");
    let http = strait::local_kafka::free_port().expect("port");
    let addr = format!("127.0.0.1:{http}");
    let run =
        StraitRun::start_with_args(&config, &dir.join("strait.log"), "info", &["--http", &addr]);
    let log = || run.log();
    let target_end = || {
        watermarks(&b.bootstrap(), REMOTE)
            .first()
            .map_or(0, |w| w.1)
    };
    wait_for(
        "the first 100 records copied",
        &log,
        Duration::from_secs(90),
        || target_end() == 100,
    );

    // Broker 3 (the follower) stops; once it left the ISR, 50 records go to broker 2 alone,
    // and strait copies them.
    a.kill_node(2);
    wait_for(
        "broker 3 out of the ISR",
        &log,
        Duration::from_secs(60),
        || leader_and_isr(&bootstrap).1 == vec![2],
    );
    produce(&bootstrap, "lost", 50, "1");
    wait_for(
        "the 50 records only broker 2 has copied",
        &log,
        Duration::from_secs(60),
        || target_end() == 150,
    );

    // Broker 2 dies; broker 3 comes back and is elected although it was not in sync: its log
    // ends at 100, and it writes other records from there.
    a.kill_node(1);
    a.start_node(2).expect("broker 3 starts");
    wait_for(
        "broker 3 elected (unclean)",
        &log,
        Duration::from_secs(90),
        || leader_and_isr(&bootstrap).0 == 3,
    );
    produce(&bootstrap, "other", 30, "1");

    // The partition stops, saying where the source diverged; nothing of the other records is
    // copied; the status shows it stopped.
    wait_for(
        "the partition stopped",
        &log,
        Duration::from_secs(60),
        || run.log().contains("diverged at offset 100"),
    );
    let line = run
        .log()
        .lines()
        .find(|l| l.contains("diverged at offset 100"))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("cluster a, topic orders, partition 0, offset 150")
            && line.contains("partition stopped"),
        "{line}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(target_end(), 150, "no record of the new leader copied");
    let (code, _) = status_get(http, "/ready").expect("ready answers");
    assert_eq!(code, 503, "a stopped partition is not ready");
    let (_, status) = status_get(http, "/api/status").expect("status");
    assert!(status.contains("diverged at offset 100"), "{status}");
}
