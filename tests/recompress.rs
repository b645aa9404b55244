//! `recompress = "zstd"` on Apache Kafka: rdkafka writes uncompressed records (keys, headers,
//! some null values) to one topic and lz4 batches to another; strait, killed with `kill -9`
//! halfway and started again, replicates both. On the target every record of both topics is
//! the source's (key, value, headers, timestamp, partition, offset), once; every batch of the
//! uncompressed topic is a zstd batch whose decompressed records section is byte for byte the
//! source batch's at the same offset (the broker accepted and kept strait's compression), the
//! topic takes less than half the bytes, and the lz4 topic's batches are the source's, byte
//! for byte.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use strait::client::{Cluster, ClusterConfig};
use strait::records::codec::decompress;
use strait::records::{Compression, RecordBatch};
use support::data::{produce_records_with, raw_batches, watermarks, ProduceOptions};
use support::kafka::{start_kafka, KafkaCluster};
use support::{consume_all, create_topic, topic_name, Codec, OwnedRecord, StraitRun, TestRecord};

const PLAIN: &str = "plain";
const LZ4: &str = "packed";
const PARTITIONS: i32 = 2;
const PLAIN_RECORDS: usize = 20_000;
const LZ4_RECORDS: usize = 6_000;
/// Slow enough that the `kill -9` lands halfway.
const CAP: u64 = 1_000_000;

fn write_config(dir: &Path, a: &KafkaCluster, b: &KafkaCluster) -> std::path::PathBuf {
    let config = dir.join("strait.toml");
    std::fs::write(
        &config,
        format!(
            "instance_group = \"{}\"\n\
             [clusters.a]\nbootstrap_servers = \"{}\"\n[clusters.b]\nbootstrap_servers = \"{}\"\n\
             [defaults]\nrecompress = \"zstd\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{PLAIN}\", \"{LZ4}\"]\n\
             max_bytes_per_second = {CAP}\n",
            topic_name("g"),
            a.bootstrap(),
            b.bootstrap()
        ),
    )
    .expect("write config");
    config
}

fn records(tag: &str, n: usize) -> Vec<TestRecord> {
    (0..n)
        .map(|i| TestRecord {
            key: (i % 10 != 3).then(|| format!("{tag}-key-{}", i % 113).into_bytes()),
            value: (i % 41 != 5).then(|| {
                format!(
                    "{tag} reading {i} of meter {} at site {}: ok",
                    i % 17,
                    i % 5
                )
                .into_bytes()
            }),
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

fn on_target(b: &str) -> usize {
    [PLAIN, LZ4]
        .iter()
        .map(|t| {
            watermarks(b, &format!("a.{t}"))
                .iter()
                .map(|w| w.1 as usize)
                .sum::<usize>()
        })
        .sum()
}

/// The records of the uncompressed topic arrived in zstd batches holding the source's records
/// sections; returns (source bytes, target bytes).
async fn check_recompressed(source: &Cluster, target: &Cluster) -> (usize, usize) {
    let (mut src_bytes, mut dst_bytes) = (0, 0);
    for partition in 0..PARTITIONS {
        let src = raw_batches(source, PLAIN, partition).await;
        let dst = raw_batches(target, &format!("a.{PLAIN}"), partition).await;
        let by_offset: BTreeMap<i64, &RecordBatch> =
            src.iter().map(|b| (b.base_offset(), b)).collect();
        assert_eq!(src.len(), dst.len(), "p{partition}: batch count");
        for d in &dst {
            let s = by_offset
                .get(&d.base_offset())
                .unwrap_or_else(|| panic!("p{partition}: no source batch at {}", d.base_offset()));
            assert_eq!(s.compression(), Some(Compression::None));
            assert_eq!(
                d.compression(),
                Some(Compression::Zstd),
                "p{partition} @{}: re-compressed",
                d.base_offset()
            );
            d.verify_crc().expect("target CRC");
            assert_eq!(d.records_count(), s.records_count());
            assert_eq!(d.last_offset_delta(), s.last_offset_delta());
            assert_eq!(d.base_timestamp(), s.base_timestamp());
            assert_eq!(d.max_timestamp(), s.max_timestamp());
            let section =
                decompress(Compression::Zstd, &d.records_region(), 64 << 20).expect("zstd section");
            assert!(
                section == s.records_region().to_vec(),
                "p{partition} @{}: records section differs",
                d.base_offset()
            );
            src_bytes += s.len();
            dst_bytes += d.len();
        }
    }
    (src_bytes, dst_bytes)
}

/// The lz4 topic's batches are the source's, byte for byte.
async fn check_forwarded(source: &Cluster, target: &Cluster) {
    for partition in 0..PARTITIONS {
        let src = raw_batches(source, LZ4, partition).await;
        let dst = raw_batches(target, &format!("a.{LZ4}"), partition).await;
        assert_eq!(src.len(), dst.len(), "lz4 p{partition}: batch count");
        for (s, d) in src.iter().zip(&dst) {
            assert_eq!(s.base_offset(), d.base_offset());
            assert_eq!(d.compression(), Some(Compression::Lz4));
            assert_eq!(s.attributes(), d.attributes());
            assert_eq!(
                s.records_region(),
                d.records_region(),
                "lz4 p{partition} @{}",
                s.base_offset()
            );
        }
    }
}

fn same_records(a: &str, b: &str, topic: &str, n: usize) {
    let key = |r: &OwnedRecord| (r.partition, r.offset);
    let mut from_a = consume_all(a, topic, n, Duration::from_secs(60));
    let mut from_b = consume_all(b, &format!("a.{topic}"), n, Duration::from_secs(60));
    from_a.sort_by_key(key);
    from_b.sort_by_key(key);
    assert_eq!(from_a.len(), n, "{topic}: source");
    assert_eq!(from_b.len(), n, "{topic}: every record once on the target");
    for (x, y) in from_a.iter().zip(&from_b) {
        assert_eq!((x.partition, x.offset), (y.partition, y.offset), "{topic}");
        assert_eq!(x.key, y.key, "{topic} {}/{}", x.partition, x.offset);
        assert_eq!(x.value, y.value, "{topic} {}/{}", x.partition, x.offset);
        assert_eq!(x.headers, y.headers, "{topic} {}/{}", x.partition, x.offset);
        assert_eq!(
            x.timestamp, y.timestamp,
            "{topic} {}/{}",
            x.partition, x.offset
        );
    }
}

#[test]
fn uncompressed_batches_arrive_zstd_compressed_and_others_byte_for_byte() {
    let a = start_kafka("a");
    let b = start_kafka("b");
    let dir = std::env::temp_dir().join(topic_name("recompress"));
    std::fs::create_dir_all(&dir).expect("dir");
    for (topic, n, codec) in [
        (PLAIN, PLAIN_RECORDS, Codec::None),
        (LZ4, LZ4_RECORDS, Codec::Lz4),
    ] {
        create_topic(&a.bootstrap(), topic, PARTITIONS);
        let opts = ProduceOptions {
            codec,
            linger_ms: 5,
            batch_size: 16 * 1024,
            ..Default::default()
        };
        produce_records_with(&a.bootstrap(), topic, &records(topic, n), &opts);
    }
    let total = PLAIN_RECORDS + LZ4_RECORDS;

    // Killed once some records arrived, then started again: it takes up after its own
    // (re-compressed) batches on the target.
    let config = write_config(&dir, &a, &b);
    let mut first = StraitRun::start(&config, &dir.join("run1.log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while on_target(&b.bootstrap()) < total / 4 {
        assert!(Instant::now() < deadline, "no progress:\n{}", first.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    first.kill9();
    let landed = on_target(&b.bootstrap());
    let second = StraitRun::start(&config, &dir.join("run2.log"));
    let deadline = Instant::now() + Duration::from_secs(90);
    while on_target(&b.bootstrap()) < total {
        assert!(
            Instant::now() < deadline,
            "not all arrived:\n{}",
            second.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = second.stop();
    let paired = log.contains("found strait's own batches after the last progress record");
    eprintln!(
        "killed with {landed} of {total} on the target; own batches paired at restart: {paired}"
    );
    assert!(!log.contains("another CRC"), "{log}");

    same_records(&a.bootstrap(), &b.bootstrap(), PLAIN, PLAIN_RECORDS);
    same_records(&a.bootstrap(), &b.bootstrap(), LZ4, LZ4_RECORDS);

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let source = Cluster::connect(ClusterConfig::new("a", &a.bootstrap()))
            .await
            .expect("connect a");
        let target = Cluster::connect(ClusterConfig::new("b", &b.bootstrap()))
            .await
            .expect("connect b");
        let (src_bytes, dst_bytes) = check_recompressed(&source, &target).await;
        eprintln!("uncompressed topic: {src_bytes} bytes on the source, {dst_bytes} on the target");
        assert!(
            dst_bytes * 2 < src_bytes,
            "{dst_bytes} bytes on the target for {src_bytes} on the source"
        );
        check_forwarded(&source, &target).await;
    });
}
