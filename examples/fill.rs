//! Fills a topic with a backlog of records for measurements:
//! `cargo run --release --example fill -- BOOTSTRAP TOPIC PARTITIONS RECORDS RECORD_BYTES CODEC`.
//! Batches of ~64 KiB, 16-byte keys, text values, written with strait's own encoder.

use bytes::Bytes;
use strait::client::{Cluster, ClusterConfig};
use strait::records::record::{encode_batch, BatchHeaderFields, Record};
use strait::records::{Compression, HeaderRewrite, RecordBatch};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() != 6 {
        return Err("usage: fill BOOTSTRAP TOPIC PARTITIONS RECORDS RECORD_BYTES CODEC".into());
    }
    let (boot, topic) = (&a[0], &a[1]);
    let (partitions, records, size): (i32, usize, usize) =
        (a[2].parse()?, a[3].parse()?, a[4].parse()?);
    let codec: Compression = a[5].parse()?;
    let cluster = Cluster::connect(ClusterConfig::new("fill", boot)).await?;
    cluster.create_topic(topic, partitions, 1, &[]).await?;
    let words = [
        "kafka", "batch", "offset", "replica", "strait", "leader", "fetch", "produce", "sensor",
        "cluster",
    ];
    let per_batch = (64 * 1024 / (size + 30)).max(1);
    let mut written = 0;
    let mut n = 0usize;
    while written < records {
        let p = (n % partitions as usize) as i32;
        n += 1;
        let count = per_batch.min(records - written);
        let recs: Vec<Record> = (0..count)
            .map(|i| {
                let mut v = String::with_capacity(size);
                let mut j = written + i;
                while v.len() < size {
                    v.push_str(words[j % words.len()]);
                    v.push(' ');
                    j = j.wrapping_mul(31).wrapping_add(7);
                }
                v.truncate(size);
                Record {
                    attributes: 0,
                    timestamp_delta: 0,
                    offset_delta: i as i32,
                    key: Some(Bytes::from(format!("key-{:012}", (written + i) % 100_000))),
                    value: Some(Bytes::from(v)),
                    headers: Vec::new(),
                }
            })
            .collect();
        let fields = BatchHeaderFields {
            base_timestamp: strait::replicate::store::now_ms(),
            ..Default::default()
        };
        let batch = RecordBatch::new(encode_batch(&fields, codec, &recs)?)?
            .rewrite(&HeaderRewrite::default());
        cluster.produce_batch(topic, p, &batch).await?;
        written += count;
    }
    println!("wrote {written} records to {topic}");
    Ok(())
}
