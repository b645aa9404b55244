//! Fetch sessions (KIP-227) on the wire: a full request that opens a session and an incremental
//! one with a changed partition and a forgotten one, byte for byte against Fetch v7 as Apache
//! Kafka's schema lays it out, and read back by the `kafka-protocol` crate at v12.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchRequest, RequestHeader};
use kafka_protocol::protocol::Decodable;
use strait::protocol::fetch::{FetchLimits, FetchPartitionSpec, FetchResponse, READ_COMMITTED};
use strait::protocol::fetch_session::FetchSession;
use strait::protocol::frame::{encode_request, RequestMeta};

fn spec(topic: &str, partition: i32, offset: i64) -> FetchPartitionSpec {
    FetchPartitionSpec {
        topic: topic.into(),
        topic_id: None,
        partition,
        offset,
        current_leader_epoch: 2,
        last_fetched_epoch: -1,
        max_bytes: 65536,
    }
}

const LIMITS: FetchLimits = FetchLimits {
    max_wait_ms: 500,
    min_bytes: 1,
    max_bytes: 4 << 20,
    isolation_level: READ_COMMITTED,
};

fn frame(version: i16, req: &FetchRequest) -> Vec<u8> {
    let meta = RequestMeta {
        api_key: ApiKey::Fetch,
        version,
        correlation_id: 9,
        client_id: "strait",
    };
    encode_request(&meta, req)
        .unwrap()
        .chunks
        .iter()
        .flat_map(|c| c.to_vec())
        .collect()
}

/// Size prefix, request header v1 and the Fetch v7 fields before the topics.
fn v7_prefix(b: &mut BytesMut, session_id: i32, epoch: i32) {
    b.put_i16(1); // Fetch
    b.put_i16(7);
    b.put_i32(9);
    b.put_i16(6);
    b.put_slice(b"strait");
    b.put_i32(-1); // replica id
    b.put_i32(500);
    b.put_i32(1);
    b.put_i32(4 << 20);
    b.put_i8(1); // READ_COMMITTED
    b.put_i32(session_id);
    b.put_i32(epoch);
}

/// One v7 partition: index, fetch offset, log start offset, max bytes.
fn v7_partition(b: &mut BytesMut, partition: i32, offset: i64) {
    b.put_i32(partition);
    b.put_i64(offset);
    b.put_i64(-1);
    b.put_i32(65536);
}

fn sized(body: BytesMut) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

fn answer(session_id: i32) -> FetchResponse {
    FetchResponse {
        error_code: 0,
        session_id,
        partitions: Vec::new(),
    }
}

#[test]
fn v7_full_then_incremental_bytes() {
    let mut s = FetchSession::new();
    let all = [spec("t", 0, 100), spec("t", 1, 200), spec("u", 0, 7)];
    let full = frame(7, &s.request(&all, &LIMITS, 7));
    let mut b = BytesMut::new();
    v7_prefix(&mut b, 0, 0);
    b.put_i32(2); // topics
    b.put_i16(1);
    b.put_slice(b"t");
    b.put_i32(2);
    v7_partition(&mut b, 0, 100);
    v7_partition(&mut b, 1, 200);
    b.put_i16(1);
    b.put_slice(b"u");
    b.put_i32(1);
    v7_partition(&mut b, 0, 7);
    b.put_i32(0); // nothing forgotten
    assert_eq!(full, sized(b), "full request opening a session");

    s.on_response(&answer(0x0102_0304));
    // t/1 moved on, u/0 is not wanted any more, t/0 unchanged.
    let inc = frame(
        7,
        &s.request(&[spec("t", 0, 100), spec("t", 1, 250)], &LIMITS, 7),
    );
    let mut b = BytesMut::new();
    v7_prefix(&mut b, 0x0102_0304, 1);
    b.put_i32(1);
    b.put_i16(1);
    b.put_slice(b"t");
    b.put_i32(1);
    v7_partition(&mut b, 1, 250);
    b.put_i32(1); // forgotten topics
    b.put_i16(1);
    b.put_slice(b"u");
    b.put_i32(1);
    b.put_i32(0);
    assert_eq!(inc, sized(b), "incremental request");
}

#[test]
fn v12_incremental_request_reads_back() {
    let mut s = FetchSession::new();
    s.request(&[spec("t", 0, 1), spec("u", 3, 2)], &LIMITS, 12);
    s.on_response(&answer(42));
    s.request(&[spec("t", 0, 1), spec("u", 3, 2)], &LIMITS, 12);
    s.on_response(&answer(42));
    let bytes = frame(12, &s.request(&[spec("t", 0, 5)], &LIMITS, 12));
    let mut body = Bytes::from(bytes[4..].to_vec());
    let header =
        RequestHeader::decode(&mut body, ApiKey::Fetch.request_header_version(12)).unwrap();
    assert_eq!(header.correlation_id, 9);
    let req = FetchRequest::decode(&mut body, 12).unwrap();
    assert!(body.is_empty());
    assert_eq!((req.session_id, req.session_epoch), (42, 2));
    assert_eq!(req.topics.len(), 1);
    assert_eq!(req.topics[0].topic.0.as_str(), "t");
    assert_eq!(req.topics[0].partitions[0].fetch_offset, 5);
    assert_eq!(req.topics[0].partitions[0].current_leader_epoch, 2);
    assert_eq!(req.forgotten_topics_data.len(), 1);
    assert_eq!(req.forgotten_topics_data[0].topic.0.as_str(), "u");
    assert_eq!(req.forgotten_topics_data[0].partitions, vec![3]);
}

/// KIP-320 at v12: the last fetched epoch goes on the wire, a change of it alone resends the
/// partition in an incremental request, and a diverging epoch in the answer (partition tag 0,
/// encoded here by the `kafka-protocol` crate) is read back with no records.
#[test]
fn v12_last_fetched_epoch_and_diverging_epoch() {
    use kafka_protocol::messages::fetch_response::{
        EpochEndOffset, FetchableTopicResponse, PartitionData,
    };
    use kafka_protocol::messages::{FetchResponse as KFetchResponse, TopicName};
    use kafka_protocol::protocol::{Encodable, StrBytes};
    let mut s = FetchSession::new();
    let mut p = spec("t", 0, 7);
    p.last_fetched_epoch = 3;
    s.request(std::slice::from_ref(&p), &LIMITS, 12);
    s.on_response(&answer(42));
    let unchanged = s.request(std::slice::from_ref(&p), &LIMITS, 12);
    assert!(
        unchanged.topics.is_empty(),
        "nothing changed: nothing listed"
    );
    s.on_response(&answer(42));
    p.last_fetched_epoch = 4;
    let bytes = frame(12, &s.request(std::slice::from_ref(&p), &LIMITS, 12));
    let mut body = Bytes::from(bytes[4..].to_vec());
    RequestHeader::decode(&mut body, ApiKey::Fetch.request_header_version(12)).unwrap();
    let req = FetchRequest::decode(&mut body, 12).unwrap();
    assert_eq!(req.topics[0].partitions[0].last_fetched_epoch, 4);

    let mut part = PartitionData::default();
    part.partition_index = 0;
    part.high_watermark = 130;
    part.last_stable_offset = 130;
    part.log_start_offset = 0;
    part.diverging_epoch = EpochEndOffset::default().with_epoch(3).with_end_offset(60);
    let mut topic = FetchableTopicResponse::default();
    topic.topic = TopicName(StrBytes::from_static_str("t"));
    topic.partitions.push(part);
    let mut resp = KFetchResponse::default();
    resp.session_id = 42;
    resp.responses.push(topic);
    let mut out = BytesMut::new();
    resp.encode(&mut out, 12).unwrap();
    let decoded = strait::protocol::fetch::decode_response(
        strait::protocol::wire::Reader::new(out.freeze()),
        12,
    )
    .unwrap();
    let d = decoded.partitions[0]
        .diverging_epoch
        .expect("diverging epoch");
    assert_eq!((d.epoch, d.end_offset), (3, 60));
    assert!(decoded.partitions[0].records.is_empty());

    // Without the tag (the default epoch -1), nothing diverges.
    let mut resp = KFetchResponse::default();
    let mut topic = FetchableTopicResponse::default();
    topic.topic = TopicName(StrBytes::from_static_str("t"));
    topic.partitions.push(PartitionData::default());
    resp.responses.push(topic);
    let mut out = BytesMut::new();
    resp.encode(&mut out, 12).unwrap();
    let decoded = strait::protocol::fetch::decode_response(
        strait::protocol::wire::Reader::new(out.freeze()),
        12,
    )
    .unwrap();
    assert_eq!(decoded.partitions[0].diverging_epoch, None);
}
