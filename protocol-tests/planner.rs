//! The forwarding planner over kafka-python fixtures: what each kind of batch becomes, that
//! every outgoing batch is one Apache Kafka accepts, and that source offsets are accounted for.

use bytes::Bytes;
use strait::forward::{PartitionPlanner, Plan, ProducerIdentity, Reencode, SourceOffsets};
use strait::protocol::fetch::{AbortedTransaction, FetchedPartition};
use strait::records::record::decode_records;
use strait::records::rules::check_producible;
use strait::records::{split, Entry, RecordBatch};

const PID: ProducerIdentity = ProducerIdentity { id: 900, epoch: 2 };

fn fetched(name: &str, aborted: Vec<AbortedTransaction>) -> FetchedPartition {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    FetchedPartition {
        topic: "t".into(),
        topic_id: None,
        partition: 0,
        error_code: 0,
        high_watermark: 1_000,
        last_stable_offset: 1_000,
        log_start_offset: 0,
        aborted_transactions: aborted,
        records: Bytes::from(std::fs::read(p).expect("fixture")),
        diverging_epoch: None,
    }
}

fn plan(name: &str, from: i64, aborted: Vec<AbortedTransaction>) -> Plan {
    let mut planner = PartitionPlanner::new(from, Some(PID), 0);
    let plan = planner.plan(&fetched(name, aborted)).expect("plan");
    assert_eq!(planner.next_offset(), plan.next_offset);
    plan
}

/// Every outgoing batch passes Apache Kafka's produce rules and carries our producer id.
fn producible(plan: &Plan) -> Vec<RecordBatch> {
    plan.outgoing
        .iter()
        .map(|o| {
            let b = RecordBatch::new(o.batch.to_bytes()).expect("one batch");
            check_producible(&b, None).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((b.producer_id(), b.producer_epoch()), (PID.id, PID.epoch));
            assert!(!b.is_transactional());
            assert_eq!(b.records_count() as i64, o.source.count());
            b
        })
        .collect()
}

#[test]
fn plain_batches_are_forwarded_with_only_the_header_rewritten() {
    let p = plan("v2_multi.bin", 0, vec![]);
    let out = producible(&p);
    assert_eq!(out.len(), 5);
    let mut seq = 0;
    let src: Vec<RecordBatch> = split(fetched("v2_multi.bin", vec![]).records)
        .map(|e| match e.unwrap() {
            Entry::V2(b) => b,
            Entry::Legacy(_) => panic!(),
        })
        .collect();
    for ((o, b), s) in p.outgoing.iter().zip(&out).zip(&src) {
        assert!(o.reencoded.is_none());
        assert_eq!(b.base_sequence(), seq, "sequences follow record counts");
        seq += b.records_count();
        assert_eq!(b.records_region(), s.records_region(), "records untouched");
        assert_eq!(
            o.source,
            SourceOffsets::Contiguous {
                first: s.base_offset(),
                count: s.records_count() as i64
            }
        );
    }
    assert_eq!(
        p.next_offset,
        src.last().map(RecordBatch::next_offset).unwrap_or(-1)
    );
    assert!(p.dropped.is_empty());
}

#[test]
fn committed_transactions_are_forwarded_and_markers_dropped() {
    let p = plan("v2_transactional.bin", 0, vec![]);
    let out = producible(&p);
    assert_eq!(out.len(), 1);
    assert_eq!(
        p.outgoing[0].source,
        SourceOffsets::Contiguous { first: 0, count: 5 }
    );
    assert_eq!(
        p.dropped,
        vec![(5, 6)],
        "the commit marker has no target record"
    );
    assert_eq!(p.next_offset, 6);
}

#[test]
fn aborted_transactions_are_dropped_under_read_committed() {
    let aborted = vec![AbortedTransaction {
        producer_id: 4242,
        first_offset: 0,
    }];
    let p = plan("v2_transactional.bin", 0, aborted);
    assert!(p.outgoing.is_empty());
    assert_eq!(p.dropped, vec![(0, 6)]);
    assert_eq!(p.next_offset, 6);
}

#[test]
fn compacted_batches_with_gaps_are_reencoded_and_their_offsets_listed() {
    let p = plan("v2_compacted_gaps.bin", 0, vec![]);
    let out = producible(&p);
    assert_eq!(out.len(), 2);
    assert_eq!(p.outgoing[0].reencoded, Some(Reencode::OffsetGaps));
    assert_eq!(
        p.outgoing[0].source,
        SourceOffsets::Listed(vec![0, 1, 4, 5, 9])
    );
    assert_eq!(
        p.outgoing[1].source,
        SourceOffsets::Listed(vec![11, 12, 15, 17])
    );
    assert_eq!(p.outgoing[0].source_next, 10);
    assert_eq!(
        p.next_offset, 20,
        "the batch's span is kept: 18 and 19 were compacted away"
    );
    // Same records, same codec, now contiguous.
    let src: Vec<RecordBatch> = split(fetched("v2_compacted_gaps.bin", vec![]).records)
        .map(|e| match e.unwrap() {
            Entry::V2(b) => b,
            Entry::Legacy(_) => panic!(),
        })
        .collect();
    for (s, o) in src.iter().zip(&out) {
        assert_eq!(s.compression(), o.compression());
        let (a, b) = (
            decode_records(s, 1 << 20).unwrap(),
            decode_records(o, 1 << 20).unwrap(),
        );
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (&x.key, &x.value, &x.headers),
                (&y.key, &y.value, &y.headers)
            );
            assert_eq!(
                x.timestamp(s.base_timestamp()),
                y.timestamp(o.base_timestamp())
            );
        }
    }
}

#[test]
fn log_append_time_becomes_create_time_carrying_the_append_time() {
    let p = plan("v2_log_append_time.bin", 0, vec![]);
    let out = producible(&p);
    assert_eq!(p.outgoing[0].reencoded, Some(Reencode::LogAppendTime));
    assert!(!out[0].is_log_append_time());
    for r in decode_records(&out[0], 1 << 20).unwrap() {
        assert_eq!(
            r.timestamp(out[0].base_timestamp()),
            1_700_000_999_000,
            "what consumers of the source saw"
        );
    }
}

#[test]
fn legacy_message_sets_are_converted_to_v2() {
    for name in ["v0_none.bin", "v1_none.bin", "v1_gzip.bin", "v0_snappy.bin"] {
        let p = plan(name, 0, vec![]);
        producible(&p);
        assert!(
            p.outgoing
                .iter()
                .all(|o| o.reencoded == Some(Reencode::Legacy)),
            "{name}"
        );
        let total: i64 = p.outgoing.iter().map(|o| o.source.count()).sum();
        assert_eq!(total, 5, "{name}");
        assert_eq!(p.next_offset, 105, "{name}");
    }
}

#[test]
fn a_fetch_inside_a_batch_forwards_only_the_rest() {
    let p = plan("v2_none.bin", 5, vec![]);
    let out = producible(&p);
    assert_eq!(p.outgoing[0].reencoded, Some(Reencode::PartialBatch));
    assert_eq!(
        p.outgoing[0].source,
        SourceOffsets::Contiguous {
            first: 5,
            count: 15
        }
    );
    assert_eq!(out[0].records_count(), 15);
    assert_eq!(p.next_offset, 20);
}

#[test]
fn batches_already_forwarded_are_skipped() {
    let p = plan("v2_multi.bin", 10, vec![]);
    assert_eq!(p.outgoing.len(), 3, "batches at 10, 13 and 18 remain");
    assert!(p.outgoing.iter().all(|o| o.reencoded.is_none()));
}

#[test]
fn a_planning_error_consumes_nothing() {
    let mut planner = PartitionPlanner::new(0, Some(PID), 7);
    let mut f = fetched("v2_gzip.bin", vec![]);
    let mut bad = f.records.to_vec();
    bad[16] = 9; // unknown magic
    f.records = Bytes::from(bad);
    assert!(planner.plan(&f).is_err());
    assert_eq!((planner.next_offset(), planner.next_sequence()), (0, 7));
}
