//! `Cluster::partition` against Apache Kafka: one partition's offsets and a one-shot Fetch,
//! and errors that name the cluster, topic, partition and offset.

mod support;

use strait::client::{Cluster, ClusterConfig, FetchRead, EARLIEST, LATEST};
use strait::records::batch::{split, Entry};
use support::{create_topic, produce_records, topic_name, Broker, Codec, TestRecord};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_partition_read_once_with_errors_that_name_it() {
    let broker = Broker::start("edge");
    let topic = topic_name("partition-client");
    create_topic(&broker.bootstrap(), &topic, 2);
    let records: Vec<TestRecord> = (0..20)
        .map(|i| TestRecord {
            partition: Some(1),
            ..TestRecord::kv(format!("k{i}"), format!("v{i}"))
        })
        .collect();
    produce_records(&broker.bootstrap(), &topic, &records, Codec::None);
    let cluster = Cluster::connect(ClusterConfig::new("edge", &broker.bootstrap()))
        .await
        .expect("connect");

    let part = cluster.partition(&topic, 1);
    assert_eq!(part.list_offset(EARLIEST).await.expect("earliest"), 0);
    assert_eq!(part.list_offset(LATEST).await.expect("latest"), 20);
    assert_eq!(part.list_offset_once(LATEST).await.expect("latest"), 20);
    let (leader, epoch) = part.leader().await.expect("leader");
    assert!(leader >= 0 && epoch >= 0, "{leader} {epoch}");

    let fetched = part.fetch_once(FetchRead::at(5)).await.expect("fetch");
    assert_eq!(fetched.high_watermark, 20);
    let mut next = None;
    for entry in split(fetched.records) {
        if let Ok(Entry::V2(b)) = entry {
            next = Some(b.next_offset());
        }
    }
    assert_eq!(next, Some(20), "everything from offset 5 on, at once");

    // A small read returns at least the first batch; the empty partition nothing.
    let small = part
        .fetch_once(FetchRead::at(0).max_bytes(1))
        .await
        .expect("small fetch");
    assert!(!small.records.is_empty());
    let empty = cluster
        .partition(&topic, 0)
        .fetch_once(FetchRead::at(0))
        .await
        .expect("fetch the empty partition");
    assert!(empty.records.is_empty() && empty.high_watermark == 0);

    // Errors name the cluster, topic, partition and offset.
    let e = part
        .fetch_once(FetchRead::at(500))
        .await
        .expect_err("beyond the log end");
    assert_eq!(
        e.to_string(),
        format!(
            "cluster edge, topic {topic}, partition 1, offset 500: broker error OffsetOutOfRange (1)"
        )
    );
    let e = cluster
        .partition(&topic, 7)
        .fetch_once(FetchRead::at(3))
        .await
        .expect_err("no such partition");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "cluster edge, topic {topic}, partition 7, offset 3: "
        )),
        "{text}"
    );
}

/// A Fetch by topic id (v13+, KIP-516): the topic's own id reads as a read by name does, and
/// an id that is not the topic's (a topic deleted since) is refused by the broker with
/// UNKNOWN_TOPIC_ID, nothing read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_by_topic_id_reads_only_that_topic() {
    let broker = Broker::start("edge");
    let topic = topic_name("partition-client-id");
    create_topic(&broker.bootstrap(), &topic, 1);
    let records: Vec<TestRecord> = (0..10)
        .map(|i| TestRecord::kv(format!("k{i}"), format!("v{i}")))
        .collect();
    produce_records(&broker.bootstrap(), &topic, &records, Codec::None);
    let cluster = Cluster::connect(ClusterConfig::new("edge", &broker.bootstrap()))
        .await
        .expect("connect");
    let id = cluster
        .topic(&topic)
        .await
        .expect("metadata")
        .expect("the topic")
        .topic_id;
    assert_ne!(id, [0; 16], "Apache Kafka gives every topic an id");
    let part = cluster.partition(&topic, 0);
    let by_id = part
        .fetch_once(FetchRead::at(0).topic_id(Some(id)))
        .await
        .expect("fetch by id");
    let by_name = part.fetch_once(FetchRead::at(0)).await.expect("by name");
    assert_eq!(by_id.records, by_name.records);
    assert_eq!(by_id.topic_id, Some(id), "answered at v13+");
    assert_eq!(&*by_id.topic, topic.as_str(), "named back");
    let mut other = id;
    other[0] ^= 0xff;
    let e = part
        .fetch_once(FetchRead::at(0).topic_id(Some(other)))
        .await
        .expect_err("another topic's id");
    assert_eq!(
        e.code(),
        Some(strait::protocol::error_code::UNKNOWN_TOPIC_ID),
        "{e}"
    );
}
