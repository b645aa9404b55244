//! rdkafka-based helpers: unique topic names, topic creation, producing and consuming.
//!
//! All helpers are blocking (usable from `#[test]`). From inside a tokio runtime where other
//! tasks on the same runtime must keep running (e.g. the replicator under test), use the
//! `*_async` variants, which run the blocking work on `spawn_blocking`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use strait::client::Cluster;
use strait::records::{Compression, Entry, RecordBatch};

static TOPIC_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A unique, legal topic name starting with `prefix`.
pub fn topic_name(prefix: &str) -> String {
    let clean: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = TOPIC_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{clean}-{}-{n}-{nanos:x}", std::process::id())
}

/// Compression codec for rdkafka producers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    /// Needs rdkafka's `zstd` feature (not enabled in Cargo.toml at the time of writing).
    Zstd,
}

impl Codec {
    pub fn as_str(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    /// Codecs usable with the current rdkafka build.
    pub fn available() -> &'static [Codec] {
        &[Codec::None, Codec::Gzip, Codec::Snappy, Codec::Lz4]
    }
}

/// A record to produce.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// Target partition; `None` lets rdkafka's partitioner decide (by key).
    pub partition: Option<i32>,
    /// Create-time timestamp in ms; `None` lets rdkafka stamp "now".
    pub timestamp: Option<i64>,
}

impl TestRecord {
    pub fn kv(key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Self {
        TestRecord {
            key: Some(key.as_ref().to_vec()),
            value: Some(value.as_ref().to_vec()),
            ..Default::default()
        }
    }
}

/// A consumed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedRecord {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// Timestamp in ms, if the message had one.
    pub timestamp: Option<i64>,
}

/// Where one produced record landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    pub partition: i32,
    pub offset: i64,
}

/// Producer settings for [`produce_records_with`].
#[derive(Debug, Clone)]
pub struct ProduceOptions {
    pub codec: Codec,
    /// `enable.idempotence` (uses InitProducerId and sequence numbers).
    pub idempotent: bool,
    /// `acks`: "all", "1" or "0".
    pub acks: &'static str,
    pub linger_ms: u32,
    pub batch_size: u32,
    pub timeout: Duration,
    /// Extra librdkafka properties.
    pub extra: Vec<(String, String)>,
}

impl Default for ProduceOptions {
    fn default() -> Self {
        ProduceOptions {
            codec: Codec::None,
            idempotent: false,
            acks: "all",
            linger_ms: 20,
            batch_size: 256 * 1024,
            timeout: Duration::from_secs(60),
            extra: Vec::new(),
        }
    }
}

fn base_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("client.id", "strait-test-helper");
    c
}

struct DeliveryCollector {
    results: Mutex<Vec<Option<Result<Delivered, String>>>>,
}

impl ClientContext for DeliveryCollector {}

impl ProducerContext for DeliveryCollector {
    type DeliveryOpaque = usize;

    fn delivery(&self, r: &DeliveryResult<'_>, idx: usize) {
        let res = match r {
            Ok(m) => Ok(Delivered {
                partition: m.partition(),
                offset: m.offset(),
            }),
            Err((e, _)) => Err(e.to_string()),
        };
        let mut v = self.results.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = v.get_mut(idx) {
            *slot = Some(res);
        }
    }
}

/// Produces `records` with rdkafka (`compression.type = codec`, linger/batch settings that give
/// real multi-record batches, acks=all) and returns when every record is acknowledged, in input
/// order. Panics if any delivery fails or times out.
pub fn produce_records(
    bootstrap: &str,
    topic: &str,
    records: &[TestRecord],
    codec: Codec,
) -> Vec<Delivered> {
    produce_records_with(
        bootstrap,
        topic,
        records,
        &ProduceOptions {
            codec,
            ..Default::default()
        },
    )
}

/// [`produce_records`] with explicit options.
pub fn produce_records_with(
    bootstrap: &str,
    topic: &str,
    records: &[TestRecord],
    opts: &ProduceOptions,
) -> Vec<Delivered> {
    let mut cfg = base_config(bootstrap);
    cfg.set("compression.type", opts.codec.as_str())
        .set("linger.ms", opts.linger_ms.to_string())
        .set("batch.size", opts.batch_size.to_string())
        .set("batch.num.messages", "10000")
        .set("acks", opts.acks)
        .set("enable.idempotence", opts.idempotent.to_string())
        .set("message.timeout.ms", opts.timeout.as_millis().to_string());
    for (k, v) in &opts.extra {
        cfg.set(k, v);
    }
    let ctx = DeliveryCollector {
        results: Mutex::new(vec![None; records.len()]),
    };
    let producer: BaseProducer<DeliveryCollector> = cfg
        .create_with_context(ctx)
        .expect("create rdkafka BaseProducer");
    let deadline = Instant::now() + opts.timeout;
    for (i, r) in records.iter().enumerate() {
        let mut headers = OwnedHeaders::new_with_capacity(r.headers.len());
        for (k, v) in &r.headers {
            headers = headers.insert(Header {
                key: k.as_str(),
                value: v.as_ref(),
            });
        }
        let mut rec: BaseRecord<'_, Vec<u8>, Vec<u8>, usize> = BaseRecord::with_opaque_to(topic, i);
        rec.key = r.key.as_ref();
        rec.payload = r.value.as_ref();
        rec.partition = r.partition;
        rec.timestamp = r.timestamp;
        if !r.headers.is_empty() {
            rec.headers = Some(headers);
        }
        loop {
            match producer.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    rec = back;
                    producer.poll(Duration::from_millis(50));
                    assert!(
                        Instant::now() < deadline,
                        "produce_records: rdkafka queue stayed full until the timeout"
                    );
                }
                Err((e, _)) => panic!("produce_records: send record {i} to {topic}: {e}"),
            }
        }
        producer.poll(Duration::ZERO);
    }
    let left = deadline.saturating_duration_since(Instant::now());
    producer
        .flush(left)
        .unwrap_or_else(|e| panic!("produce_records: flush to {topic} failed: {e}"));
    let results = std::mem::take(
        &mut *producer
            .context()
            .results
            .lock()
            .unwrap_or_else(|e| e.into_inner()),
    );
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Some(Ok(d)) => d,
            Some(Err(e)) => panic!("produce_records: record {i} to {topic} failed: {e}"),
            None => panic!("produce_records: record {i} to {topic} got no delivery report"),
        })
        .collect()
}

/// Runs a future to completion on a private current-thread runtime on a fresh OS thread
/// (works whether or not the caller is inside a tokio runtime).
fn block_on_thread<F, T>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::spawn(f)
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Creates `topic` with `partitions` partitions (replication factor 1) via the rdkafka
/// AdminClient and waits until its metadata shows all partitions. Panics on failure
/// (an already-existing topic is accepted).
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    create_topic_with_config(bootstrap, topic, partitions, &[]);
}

/// A pseudo config of [`create_topic_with_config`]: the topic's replication factor (1 unless
/// given).
pub const REPLICATION_FACTOR: &str = "replication.factor";

/// [`create_topic`] with topic configs (e.g. `("cleanup.policy", "compact")`).
pub fn create_topic_with_config(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    config: &[(&str, &str)],
) {
    let bootstrap = bootstrap.to_owned();
    let topic = topic.to_owned();
    let config: Vec<(String, String)> = config
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    block_on_thread(move || {
        let admin: AdminClient<DefaultClientContext> = base_config(&bootstrap)
            .create()
            .expect("create rdkafka AdminClient");
        let rf: i32 = config
            .iter()
            .find(|(k, _)| k == REPLICATION_FACTOR)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(1);
        let mut nt = NewTopic::new(&topic, partitions, TopicReplication::Fixed(rf));
        for (k, v) in config.iter().filter(|(k, _)| k != REPLICATION_FACTOR) {
            nt = nt.set(k, v);
        }
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime for create_topic");
        let results = rt
            .block_on(admin.create_topics([&nt], &opts))
            .unwrap_or_else(|e| panic!("create_topics({topic}) failed: {e}"));
        for r in results {
            match r {
                Ok(_) => {}
                Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => panic!("create topic {name}: {code:?}"),
            }
        }
        wait_for_partitions(&bootstrap, &topic, partitions, Duration::from_secs(30));
    });
}

/// Waits until metadata for `topic` shows at least `partitions` partitions.
pub fn wait_for_partitions(bootstrap: &str, topic: &str, partitions: i32, timeout: Duration) {
    let consumer: BaseConsumer = base_config(bootstrap)
        .create()
        .expect("create rdkafka BaseConsumer for metadata");
    let deadline = Instant::now() + timeout;
    loop {
        let n = partition_count_with(&consumer, topic);
        if n >= partitions as usize {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "topic {topic} has {n} partitions in metadata, expected {partitions}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn partition_count_with(consumer: &BaseConsumer, topic: &str) -> usize {
    match consumer.fetch_metadata(Some(topic), Duration::from_secs(5)) {
        Ok(md) => md
            .topics()
            .iter()
            .find(|t| t.name() == topic && t.error().is_none())
            .map(|t| t.partitions().len())
            .unwrap_or(0),
        Err(_) => 0,
    }
}

/// Number of partitions of `topic` according to metadata (0 if unknown).
pub fn partition_count(bootstrap: &str, topic: &str) -> usize {
    let consumer: BaseConsumer = base_config(bootstrap)
        .create()
        .expect("create rdkafka BaseConsumer for metadata");
    partition_count_with(&consumer, topic)
}

/// (low, high) watermarks of every partition of `topic`, indexed by partition.
pub fn watermarks(bootstrap: &str, topic: &str) -> Vec<(i64, i64)> {
    let consumer: BaseConsumer = base_config(bootstrap)
        .create()
        .expect("create rdkafka BaseConsumer for watermarks");
    let n = partition_count_with(&consumer, topic);
    (0..n as i32)
        .map(|p| {
            // A partition just created or whose leader moves answers NotLeaderForPartition for
            // a moment (Apache Kafka): asked again for up to 20 s.
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                match consumer.fetch_watermarks(topic, p, Duration::from_secs(10)) {
                    Ok(w) => break w,
                    Err(e) if Instant::now() < deadline => {
                        eprintln!("fetch_watermarks({topic}/{p}): {e}; asking again");
                        std::thread::sleep(Duration::from_millis(200));
                    }
                    Err(e) => panic!("fetch_watermarks({topic}/{p}): {e}"),
                }
            }
        })
        .collect()
}

/// Reads `topic` from offset 0 of every partition (assign() with a throwaway group.id that never
/// joins or commits)
/// until `expected_count` records arrived or `timeout` passed. Returns the records sorted by
/// (partition, offset); callers assert on the count.
pub fn consume_all(
    bootstrap: &str,
    topic: &str,
    expected_count: usize,
    timeout: Duration,
) -> Vec<OwnedRecord> {
    let deadline = Instant::now() + timeout;
    // librdkafka's assign() needs a group handle, so a throwaway group.id is set; with
    // explicit offsets and no commits it never joins or commits anything.
    let consumer: BaseConsumer = base_config(bootstrap)
        .set("group.id", topic_name("strait-test-reader"))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("create rdkafka BaseConsumer");
    let mut partitions = 0;
    while partitions == 0 {
        partitions = partition_count_with(&consumer, topic);
        if partitions == 0 {
            if Instant::now() >= deadline {
                return Vec::new();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions as i32 {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .expect("add partition to assignment");
    }
    consumer.assign(&tpl).expect("assign partitions");
    let mut out = Vec::with_capacity(expected_count);
    let mut last_error: Option<String> = None;
    while out.len() < expected_count && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Ok(m)) => {
                let headers = m
                    .headers()
                    .map(|h| {
                        h.iter()
                            .map(|hd| (hd.key.to_owned(), hd.value.map(|v| v.to_vec())))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push(OwnedRecord {
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(|k| k.to_vec()),
                    value: m.payload().map(|v| v.to_vec()),
                    headers,
                    timestamp: m.timestamp().to_millis(),
                });
            }
            Some(Err(e)) => {
                let s = e.to_string();
                if last_error.as_deref() != Some(s.as_str()) {
                    eprintln!("consume_all({topic}): {s}");
                    last_error = Some(s);
                }
            }
        }
    }
    out.sort_by_key(|r| (r.partition, r.offset));
    out
}

/// [`produce_records`] on `spawn_blocking`.
pub async fn produce_records_async(
    bootstrap: &str,
    topic: &str,
    records: Vec<TestRecord>,
    codec: Codec,
) -> Vec<Delivered> {
    let (b, t) = (bootstrap.to_owned(), topic.to_owned());
    tokio::task::spawn_blocking(move || produce_records(&b, &t, &records, codec))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// [`create_topic`] on `spawn_blocking`.
pub async fn create_topic_async(bootstrap: &str, topic: &str, partitions: i32) {
    let (b, t) = (bootstrap.to_owned(), topic.to_owned());
    tokio::task::spawn_blocking(move || create_topic(&b, &t, partitions))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// [`consume_all`] on `spawn_blocking`.
pub async fn consume_all_async(
    bootstrap: &str,
    topic: &str,
    expected_count: usize,
    timeout: Duration,
) -> Vec<OwnedRecord> {
    let (b, t) = (bootstrap.to_owned(), topic.to_owned());
    tokio::task::spawn_blocking(move || consume_all(&b, &t, expected_count, timeout))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Commits `offset` for every partition of `topic` in `group` on `bootstrap` (no member joins).
pub fn commit_group(bootstrap: &str, group: &str, topic: &str, partitions: i32, offset: i64) {
    let c: BaseConsumer = base_config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("group consumer");
    let mut tpl = rdkafka::TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, rdkafka::Offset::Offset(offset))
            .expect("offset");
    }
    c.commit(&tpl, rdkafka::consumer::CommitMode::Sync)
        .expect("commit");
}

/// The offset `group` committed for `topic`/`partition`, if any (read with rdkafka, without
/// joining the group).
pub fn committed_offset(bootstrap: &str, group: &str, topic: &str, partition: i32) -> Option<i64> {
    let c: BaseConsumer = base_config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("create rdkafka BaseConsumer for committed offsets");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(topic, partition);
    let got = c.committed_offsets(tpl, Duration::from_secs(10)).ok()?;
    let e = got.elements_for_topic(topic).into_iter().next()?;
    match e.offset() {
        Offset::Offset(o) => Some(o),
        _ => None,
    }
}

/// Waits until the cluster's group coordinator answers (Apache Kafka creates and loads
/// `__consumer_offsets` on the first group request; librdkafka does not retry a failed
/// committed-offset lookup of a manual assignment, so tests warm it up first).
pub fn warm_up_group_coordinator(bootstrap: &str) {
    let consumer: BaseConsumer = base_config(bootstrap)
        .set("group.id", "strait-test-warm-up")
        .create()
        .expect("create rdkafka BaseConsumer for the warm-up");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition("strait-test-warm-up", 0);
        match consumer.committed_offsets(tpl, Duration::from_secs(5)) {
            Ok(_) => return,
            Err(e) if Instant::now() < deadline => {
                eprintln!("group coordinator of {bootstrap} not ready yet: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("the group coordinator of {bootstrap} never answered: {e}"),
        }
    }
}

/// The group coordinator's view of `group` (ListGroups + DescribeGroups through rdkafka): its
/// state and, per member id, the assignment bytes the coordinator holds for it.
pub fn group_assignments(bootstrap: &str, group: &str) -> (String, BTreeMap<String, Vec<u8>>) {
    group_assignments_with(&group_client(bootstrap), group)
}

/// An rdkafka client for [`group_assignments_with`]: one kept for many samples answers in a
/// round trip, where a new one per sample first connects and reads metadata.
pub fn group_client(bootstrap: &str) -> BaseConsumer {
    base_config(bootstrap)
        .create()
        .expect("create rdkafka BaseConsumer for DescribeGroups")
}

/// [`group_assignments`] through `consumer`.
pub fn group_assignments_with(
    consumer: &BaseConsumer,
    group: &str,
) -> (String, BTreeMap<String, Vec<u8>>) {
    let list = match consumer.fetch_group_list(Some(group), Duration::from_secs(10)) {
        Ok(l) => l,
        Err(_) => return ("Unknown".to_string(), BTreeMap::new()),
    };
    let Some(g) = list.groups().iter().find(|g| g.name() == group) else {
        return ("Dead".to_string(), BTreeMap::new());
    };
    let members = g
        .members()
        .iter()
        .map(|m| (m.id().to_string(), m.assignment().unwrap_or(&[]).to_vec()))
        .collect();
    (g.state().to_string(), members)
}

/// The codec of every batch of `topic`'s partition `partition` on the cluster at `bootstrap`
/// (`None`: bits no codec has).
pub fn batch_codecs(bootstrap: &str, topic: &str, partition: i32) -> Vec<Option<Compression>> {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let config = strait::client::ClusterConfig::new("codecs", bootstrap);
        let c = Cluster::connect(config).await.expect("connect");
        raw_batches(&c, topic, partition).await
    })
    .iter()
    .map(RecordBatch::compression)
    .collect()
}

/// Every batch of a partition, read with strait's own client (from the log start to the end).
pub async fn raw_batches(cluster: &Cluster, topic: &str, partition: i32) -> Vec<RecordBatch> {
    let (_, entries) = strait::replicate::store::read_entries(cluster, topic, partition)
        .await
        .expect("read the partition");
    entries
        .into_iter()
        .map(|e| match e {
            Entry::V2(b) => b,
            Entry::Legacy(_) => panic!("legacy batch from the broker"),
        })
        .collect()
}
