//! The forwarding hot path, stage by stage, over the kafka-python bench fixtures in every codec,
//! with a memcpy of the same bytes as the yardstick. Throughput is per byte of batch data.

use std::hint::black_box;

use bytes::{BufMut, Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_protocol::messages::ApiKey;
use strait::protocol::fetch;
use strait::protocol::frame::RequestMeta;
use strait::protocol::produce::{encode_request, ProducePartition, ProduceSettings, ProduceTopic};
use strait::protocol::wire::Reader;
use strait::records::{split, Entry, HeaderRewrite, RecordBatch};

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

fn fixture(codec: &str) -> Bytes {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(format!("bench_1k_{codec}.bin"));
    Bytes::from(std::fs::read(p).expect("bench fixture"))
}

fn batches(blob: &Bytes) -> Vec<RecordBatch> {
    split(blob.clone())
        .map(|e| match e.expect("valid fixture") {
            Entry::V2(b) => b,
            Entry::Legacy(_) => panic!("v2 fixture expected"),
        })
        .collect()
}

const REWRITE: HeaderRewrite = HeaderRewrite {
    base_offset: Some(0),
    partition_leader_epoch: Some(-1),
    attributes: None,
    producer_id: Some(4242),
    producer_epoch: Some(0),
    base_sequence: Some(17),
};

/// A Fetch v12 response body holding `blob` for one partition, as a broker would send it.
fn fetch_response(blob: &Bytes) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i32(0); // throttle
    b.put_i16(0); // error
    b.put_i32(0); // session
    b.put_u8(2); // one topic (compact)
    b.put_u8(7);
    b.put_slice(b"bench1");
    b.put_u8(2); // one partition
    b.put_i32(0);
    b.put_i16(0);
    b.put_i64(1024);
    b.put_i64(1024);
    b.put_i64(0);
    b.put_u8(0); // null aborted list
    b.put_i32(-1);
    strait::protocol::wire::put_uvarint(&mut b, blob.len() as u32 + 1);
    b.put_slice(blob);
    b.put_u8(0);
    b.put_u8(0);
    b.put_u8(0);
    b.freeze()
}

fn bench(c: &mut Criterion) {
    for codec in CODECS {
        let blob = fixture(codec);
        let list = batches(&blob);
        let mut g = c.benchmark_group(format!("hot_path/{codec}"));
        g.throughput(Throughput::Bytes(blob.len() as u64));

        g.bench_function("memcpy (yardstick)", |b| {
            let mut dst = vec![0u8; blob.len()];
            b.iter(|| {
                dst.copy_from_slice(black_box(&blob));
                black_box(&dst);
            })
        });
        g.bench_function("split", |b| {
            b.iter(|| {
                let n = split(black_box(blob.clone())).count();
                black_box(n)
            })
        });
        g.bench_function("split + rewrite + crc update", |b| {
            b.iter(|| {
                for e in split(black_box(blob.clone())) {
                    if let Ok(Entry::V2(batch)) = e {
                        black_box(batch.rewrite(&REWRITE));
                    }
                }
            })
        });
        g.bench_function("crc verify (full recompute)", |b| {
            b.iter(|| {
                for batch in &list {
                    black_box(batch.verify_crc().is_ok());
                }
            })
        });
        let rewritten: Vec<_> = list.iter().map(|b| b.rewrite(&REWRITE)).collect();
        g.bench_function("produce framing (16 partitions)", |b| {
            b.iter(|| {
                let topics = [ProduceTopic {
                    name: "bench1".to_string(),
                    partitions: rewritten
                        .iter()
                        .take(16)
                        .enumerate()
                        .map(|(i, batch)| ProducePartition {
                            partition: i as i32,
                            batch: batch.clone(),
                        })
                        .collect(),
                }];
                let meta = RequestMeta {
                    api_key: ApiKey::Produce,
                    version: 9,
                    correlation_id: 1,
                    client_id: "strait",
                };
                let settings = ProduceSettings {
                    transactional_id: None,
                    acks: -1,
                    timeout_ms: 30_000,
                };
                black_box(encode_request(&meta, &settings, &topics))
            })
        });
        let resp = fetch_response(&blob);
        g.bench_function("fetch response parse", |b| {
            b.iter(|| {
                let r = fetch::decode_response(Reader::new(black_box(resp.clone())), 12)
                    .expect("parse");
                black_box(r)
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
