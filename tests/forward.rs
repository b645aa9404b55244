//! Issue 2 acceptance, through the engine's real data path: rdkafka writes 100 000 records per
//! codec (keys, headers, some null values) into 3-partition topics on cluster A; a flow run
//! in-process through `strait::Replicator` (as an embedding program runs it) copies them to
//! cluster B (every Produce checked by the proxy against Apache Kafka's rules); an rdkafka
//! consumer on B reads identical records in the same order, and every forwarded batch's
//! records region is byte-identical to the source's: nothing was decoded or re-encoded.

mod support;

use std::time::Duration;

use strait::client::{Cluster, ClusterConfig};
use support::data::raw_batches;
use support::{consume_all, create_topic, produce_records, topic_name, Broker, Codec, TestRecord};

const RECORDS_PER_CODEC: usize = 100_000;
const PARTITIONS: i32 = 3;

fn test_records(codec: &str) -> Vec<TestRecord> {
    (0..RECORDS_PER_CODEC)
        .map(|i| TestRecord {
            key: Some(format!("{codec}-key-{}", i % 997).into_bytes()),
            value: if i % 50 == 7 {
                None
            } else {
                Some(format!("{codec} value {i} {}", "x".repeat(i % 200)).into_bytes())
            },
            headers: match i % 3 {
                0 => vec![],
                1 => vec![("trace".to_string(), Some(format!("t{i}").into_bytes()))],
                _ => vec![
                    ("a".to_string(), Some(b"1".to_vec())),
                    ("empty".to_string(), None),
                ],
            },
            partition: Some((i % PARTITIONS as usize) as i32),
            timestamp: Some(1_700_000_000_000 + i as i64),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_every_codec_byte_for_byte() {
    let a = Broker::start("A");
    let (b, proxy) = Broker::start_behind_proxy("B");
    let source = Cluster::connect(ClusterConfig::new("A", &a.bootstrap()))
        .await
        .expect("connect A");
    let target = Cluster::connect(ClusterConfig::new("B", &b.bootstrap()))
        .await
        .expect("connect B");
    let codecs = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];
    let topics: Vec<(Codec, String, Vec<TestRecord>)> = codecs
        .iter()
        .map(|c| {
            let topic = topic_name(&format!("fwd-{}", c.as_str()));
            (*c, topic, test_records(c.as_str()))
        })
        .collect();
    for (codec, topic, records) in &topics {
        let (boot, topic, records, codec) = (a.bootstrap(), topic.clone(), records.clone(), *codec);
        tokio::task::spawn_blocking(move || {
            create_topic(&boot, &topic, PARTITIONS);
            produce_records(&boot, &topic, &records, codec);
        })
        .await
        .expect("produce");
    }

    // One flow copies every codec's topic, in this process; its log is kept in the test's
    // folder.
    let dir = std::env::temp_dir().join(topic_name("forward"));
    std::fs::create_dir_all(&dir).expect("dir");
    let log = std::fs::File::create(dir.join("strait.log")).expect("log file");
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("strait=debug"))
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(log))
        .try_init();
    let config = dir.join("strait.toml");
    let names: Vec<String> = topics.iter().map(|t| format!("{:?}", t.1)).collect();
    std::fs::write(
        &config,
        format!(
            "[clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [{}]\n",
            a.bootstrap(),
            b.bootstrap(),
            names.join(", ")
        ),
    )
    .expect("config");
    let replicator = strait::Replicator::builder_from_file(&config)
        .expect("config")
        .start()
        .expect("start");
    let mut status = replicator.subscribe();
    let total = (RECORDS_PER_CODEC * topics.len()) as u64;
    let caught_up = tokio::time::timeout(Duration::from_secs(240), async {
        loop {
            let doc = status.borrow_and_update().clone();
            if let Some(f) = doc.flows.first() {
                if f.records >= total && f.lag == 0 {
                    return;
                }
            }
            if status.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
    let last = replicator.status();
    replicator.shutdown().await.expect("clean stop");
    assert!(
        caught_up.is_ok(),
        "the flow never caught up (log: {}): {last:?}",
        dir.join("strait.log").display()
    );

    for (codec, topic, records) in &topics {
        let remote = format!("a.{topic}");
        let mut copied = 0;
        for partition in 0..PARTITIONS {
            // Byte identity of every records region, batch by batch, at the same offsets.
            let src = raw_batches(&source, topic, partition).await;
            let dst = raw_batches(&target, &remote, partition).await;
            assert_eq!(src.len(), dst.len(), "{codec:?} p{partition}: batch count");
            let pid = dst.first().map(|d| d.producer_id()).unwrap_or(-1);
            assert!(pid >= 0, "{codec:?}: strait writes idempotently");
            for (s, d) in src.iter().zip(&dst) {
                assert_eq!(
                    s.base_offset(),
                    d.base_offset(),
                    "{codec:?}: offsets preserved"
                );
                assert_eq!(
                    s.records_region(),
                    d.records_region(),
                    "{codec:?} p{partition} @{}",
                    s.base_offset()
                );
                assert_eq!(s.compression(), d.compression());
                assert_eq!(d.producer_id(), pid, "one producer identity per partition");
                copied += d.records_count() as usize;
            }
        }
        assert_eq!(copied, RECORDS_PER_CODEC);

        // An independent client reads the same records, in the same order per partition.
        let (a_boot, b_boot, t) = (a.bootstrap(), b.bootstrap(), topic.clone());
        let (from_a, from_b) = tokio::task::spawn_blocking(move || {
            (
                consume_all(&a_boot, &t, RECORDS_PER_CODEC, Duration::from_secs(120)),
                consume_all(
                    &b_boot,
                    &format!("a.{t}"),
                    RECORDS_PER_CODEC,
                    Duration::from_secs(120),
                ),
            )
        })
        .await
        .expect("consume");
        assert_eq!(from_a.len(), RECORDS_PER_CODEC);
        assert_eq!(
            from_b.len(),
            RECORDS_PER_CODEC,
            "{codec:?}: all records on B"
        );
        for (x, y) in from_a.iter().zip(&from_b) {
            assert_eq!((x.partition, x.offset), (y.partition, y.offset));
            assert_eq!(x.key, y.key);
            assert_eq!(x.value, y.value);
            assert_eq!(x.headers, y.headers);
            assert_eq!(x.timestamp, y.timestamp);
        }
        // And they are the records rdkafka was asked to write.
        let mut want: Vec<_> = records.iter().enumerate().collect();
        want.sort_by_key(|(i, r)| (r.partition, *i));
        for ((_, w), got) in want.iter().zip(&from_b) {
            assert_eq!(w.key, got.key);
            assert_eq!(w.value, got.value);
            assert_eq!(w.timestamp, got.timestamp);
        }
    }
    assert!(
        proxy.produce_batches() > 0,
        "the proxy saw strait's produce requests"
    );
    proxy.assert_clean();
}
