//! Fetch by topic id (v13+, KIP-516): requests byte for byte against Apache Kafka's schema
//! (`FetchRequest.json`: the topic id replaces the name from v13, ReplicaId leaves the body at
//! v15), read back by the `kafka-protocol` crate up to v17; answers by id, with the tagged fields
//! of later versions (current leader, snapshot id, v16's node endpoints), decoded and named
//! back; fetch sessions by id; malformed answers.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::{
    EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
    SnapshotId,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse as KFetchResponse, RequestHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use strait::protocol::fetch::{
    self, FetchLimits, FetchPartitionSpec, FetchResponse, READ_COMMITTED,
};
use strait::protocol::fetch_session::FetchSession;
use strait::protocol::frame::{encode_request, RequestMeta};
use strait::protocol::wire::Reader;

const OLD: [u8; 16] = [0x11; 16];
const NEW: [u8; 16] = [0x22; 16];
const OTHER: [u8; 16] = [0x33; 16];

const LIMITS: FetchLimits = FetchLimits {
    max_wait_ms: 500,
    min_bytes: 1,
    max_bytes: 4 << 20,
    isolation_level: READ_COMMITTED,
};

fn spec(topic: &str, id: Option<[u8; 16]>, partition: i32, offset: i64) -> FetchPartitionSpec {
    FetchPartitionSpec {
        topic: topic.into(),
        topic_id: id,
        partition,
        offset,
        current_leader_epoch: 2,
        last_fetched_epoch: 1,
        max_bytes: 65536,
    }
}

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

/// The request as the `kafka-protocol` crate reads it back.
fn read_back(version: i16, req: &FetchRequest) -> FetchRequest {
    let bytes = frame(version, req);
    let mut body = Bytes::from(bytes[4..].to_vec());
    RequestHeader::decode(&mut body, ApiKey::Fetch.request_header_version(version)).unwrap();
    let back = FetchRequest::decode(&mut body, version).unwrap();
    assert!(body.is_empty(), "v{version}: bytes left over");
    back
}

fn answer(session_id: i32) -> FetchResponse {
    FetchResponse {
        error_code: 0,
        session_id,
        partitions: Vec::new(),
    }
}

fn uuid(id: [u8; 16]) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id)
}

/// A full Fetch v13 and v15 request of one partition, laid out by hand from the schema.
#[test]
fn a_full_request_by_id_matches_the_schema_byte_for_byte() {
    for version in [13i16, 15] {
        let mut s = FetchSession::new();
        let req = s.request(&[spec("orders", Some(OLD), 3, 70)], &LIMITS, version);
        let mut b = BytesMut::new();
        // Request header v2: key, version, correlation id, client id, no tagged fields.
        b.put_i16(1);
        b.put_i16(version);
        b.put_i32(9);
        b.put_i16(6);
        b.put_slice(b"strait");
        b.put_u8(0);
        if version < 15 {
            b.put_i32(-1); // ReplicaId, 0-14; from v15 in the ReplicaState tag (default: absent)
        }
        b.put_i32(500);
        b.put_i32(1);
        b.put_i32(4 << 20);
        b.put_i8(1);
        b.put_i32(0); // session id
        b.put_i32(0); // epoch 0: open a session
        b.put_u8(2); // one topic (compact array: n + 1)
        b.put_slice(&OLD); // TopicId: no name from v13
        b.put_u8(2); // one partition
        b.put_i32(3);
        b.put_i32(2); // current leader epoch
        b.put_i64(70);
        b.put_i32(1); // last fetched epoch
        b.put_i64(-1); // log start offset
        b.put_i32(65536);
        b.put_u8(0); // partition tags
        b.put_u8(0); // topic tags
        b.put_u8(1); // no forgotten topics
        b.put_u8(1); // rack id ""
        b.put_u8(0); // request tags
        let mut want = (b.len() as i32).to_be_bytes().to_vec();
        want.extend_from_slice(&b);
        assert_eq!(frame(version, &req), want, "v{version}");
    }
}

#[test]
fn requests_by_id_read_back_at_every_version() {
    for version in 13..=17i16 {
        let mut s = FetchSession::new();
        let parts = [
            spec("a", Some(OLD), 0, 5),
            spec("a", Some(OLD), 1, 6),
            spec("b", Some(OTHER), 0, 7),
        ];
        let req = read_back(version, &s.request(&parts, &LIMITS, version));
        assert_eq!(req.replica_id, BrokerId(-1), "a consumer, v{version}");
        let topics: Vec<_> = req
            .topics
            .iter()
            .map(|t| (t.topic_id, t.topic.0.as_str(), t.partitions.len()))
            .collect();
        assert_eq!(
            topics,
            vec![(uuid(OLD), "", 2), (uuid(OTHER), "", 1)],
            "no names from v13, v{version}"
        );
        // Forgetting b/0: by its id.
        s.on_response(&answer(8));
        let req = read_back(version, &s.request(&parts[..2], &LIMITS, version));
        assert_eq!((req.session_id, req.session_epoch), (8, 1));
        assert!(req.topics.is_empty());
        assert_eq!(req.forgotten_topics_data.len(), 1);
        assert_eq!(req.forgotten_topics_data[0].topic_id, uuid(OTHER));
        assert_eq!(req.forgotten_topics_data[0].partitions, vec![0]);
    }
}

#[test]
fn the_version_names_topics_by_id_only_when_every_id_is_known() {
    let all = [spec("a", Some(OLD), 0, 1), spec("b", Some(OTHER), 0, 1)];
    let mixed = [spec("a", Some(OLD), 0, 1), spec("b", None, 0, 1)];
    assert_eq!(fetch::version_for(17, &all), 17);
    assert_eq!(fetch::version_for(13, &all), 13);
    assert_eq!(
        fetch::version_for(12, &all),
        12,
        "a broker without topic ids"
    );
    assert_eq!(fetch::version_for(17, &mixed), 12);
    assert_eq!(fetch::version_for(7, &mixed), 7);
    // At v12 a request names topics, whatever ids the partitions have.
    let req = read_back(12, &fetch::request(&mixed, &LIMITS));
    let names: Vec<_> = req.topics.iter().map(|t| t.topic.0.to_string()).collect();
    assert_eq!(names, vec!["a", "b"]);
}

/// A topic deleted and created again, taken up under its new id while the session holds the
/// old one: the new id is added and the old one forgotten, in one incremental request.
#[test]
fn a_new_id_under_the_same_name_is_added_and_the_old_one_forgotten() {
    let mut s = FetchSession::new();
    s.request(&[spec("t", Some(OLD), 0, 100)], &LIMITS, 13);
    s.on_response(&answer(5));
    let req = read_back(13, &s.request(&[spec("t", Some(NEW), 0, 0)], &LIMITS, 13));
    assert_eq!((req.session_id, req.session_epoch), (5, 1));
    assert_eq!(req.topics.len(), 1);
    assert_eq!(req.topics[0].topic_id, uuid(NEW));
    assert_eq!(req.forgotten_topics_data.len(), 1);
    assert_eq!(req.forgotten_topics_data[0].topic_id, uuid(OLD));
}

/// A broker refuses a request naming topics otherwise than its session does
/// (FETCH_SESSION_TOPIC_ID_ERROR): switching between by-name and by-id closes the session with
/// a full request (its id, epoch 0) that opens a new one.
#[test]
fn switching_between_names_and_ids_closes_the_session_with_a_full_request() {
    let mut s = FetchSession::new();
    let by_name = [spec("t", None, 0, 1), spec("u", Some(OTHER), 0, 1)];
    let by_id = [spec("t", Some(OLD), 0, 1), spec("u", Some(OTHER), 0, 1)];
    s.request(&by_name, &LIMITS, 12);
    s.on_response(&answer(5));
    let req = s.request(&by_id, &LIMITS, 13);
    assert_eq!(
        (req.session_id, req.session_epoch),
        (5, 0),
        "full, closing 5"
    );
    assert_eq!(req.topics.len(), 2, "every partition listed");
    s.on_response(&answer(6));
    assert_eq!((s.id(), s.epoch()), (6, 1));
    let req = s.request(&by_id, &LIMITS, 13);
    assert_eq!(
        (req.session_id, req.session_epoch),
        (6, 1),
        "incremental by id"
    );
    assert!(req.topics.is_empty());
    s.on_response(&answer(6));
    let req = s.request(&by_name, &LIMITS, 12);
    assert_eq!(
        (req.session_id, req.session_epoch),
        (6, 0),
        "full again, closing 6"
    );
    assert_eq!(req.topics.len(), 2);
}

/// A partition of a v13+ answer: records, a diverging epoch and the later tags.
fn partition(index: i32, records: &Bytes, version: i16) -> PartitionData {
    let mut p = PartitionData::default();
    p.partition_index = index;
    p.high_watermark = 1000;
    p.last_stable_offset = 990;
    p.log_start_offset = 10;
    p.records = Some(records.clone());
    p.current_leader = LeaderIdAndEpoch::default()
        .with_leader_id(BrokerId(4))
        .with_leader_epoch(9);
    p.snapshot_id = SnapshotId::default().with_end_offset(5).with_epoch(1);
    if version >= 14 {
        p.diverging_epoch = EpochEndOffset::default().with_epoch(3).with_end_offset(60);
    }
    p
}

/// An answer by id as the `kafka-protocol` crate encodes it, with v16's node endpoints.
fn encoded_answer(version: i16, records: &Bytes) -> Bytes {
    let mut t = FetchableTopicResponse::default();
    t.topic_id = uuid(OLD);
    t.partitions = vec![
        partition(2, records, version),
        partition(0, records, version),
    ];
    let mut stray = FetchableTopicResponse::default();
    stray.topic_id = uuid(OTHER);
    stray.partitions = vec![partition(1, records, version)];
    let mut resp = KFetchResponse::default();
    resp.session_id = 12;
    resp.responses = vec![t, stray];
    if version >= 16 {
        let mut n = NodeEndpoint::default();
        n.node_id = BrokerId(4);
        n.host = StrBytes::from_static_str("broker-4.example");
        n.port = 9092;
        n.rack = Some(StrBytes::from_static_str("r1"));
        resp.node_endpoints = vec![n];
    }
    let mut out = BytesMut::new();
    resp.encode(&mut out, version).unwrap();
    out.freeze()
}

#[test]
fn answers_by_id_decode_and_are_named_back_without_copying_records() {
    let records = Bytes::from_static(b"not parsed here: only sliced out of the frame");
    for version in 13..=17i16 {
        let body = encoded_answer(version, &records);
        let mut got = fetch::decode_response(Reader::new(body.clone()), version).unwrap();
        assert_eq!(got.session_id, 12);
        assert_eq!(got.partitions.len(), 3, "v{version}");
        assert!(got.partitions.iter().all(|p| p.topic.is_empty()));
        let ids: Vec<_> = got.partitions.iter().map(|p| p.topic_id).collect();
        assert_eq!(ids, vec![Some(OLD), Some(OLD), Some(OTHER)]);
        let frame = body.as_ptr() as usize..body.as_ptr() as usize + body.len();
        for p in &got.partitions {
            assert_eq!(p.records, records);
            assert!(frame.contains(&(p.records.as_ptr() as usize)), "a slice");
            assert_eq!((p.high_watermark, p.log_start_offset), (1000, 10));
        }
        let d = got.partitions[0].diverging_epoch;
        if version >= 14 {
            assert_eq!(d.map(|d| (d.epoch, d.end_offset)), Some((3, 60)));
        }
        // Only OLD was asked for: OTHER's partition is dropped.
        let names = fetch::names_of(&[spec("orders", Some(OLD), 2, 0)]);
        assert_eq!(fetch::name_topics(&mut got, &names), 1);
        let named: Vec<_> = got
            .partitions
            .iter()
            .map(|p| (p.topic.to_string(), p.partition))
            .collect();
        assert_eq!(named, vec![("orders".into(), 2), ("orders".into(), 0)]);
    }
}

/// The session names an answer by the ids it asked for, including partitions it holds but did
/// not list in the last (incremental) request.
#[test]
fn a_session_names_answers_by_the_ids_it_holds() {
    let records = Bytes::from_static(b"x");
    let mut s = FetchSession::new();
    let parts = [
        spec("orders", Some(OLD), 0, 1),
        spec("orders", Some(OLD), 2, 1),
    ];
    s.request(&parts, &LIMITS, 16);
    s.on_response(&answer(12));
    let req = s.request(&parts, &LIMITS, 16);
    assert!(req.topics.is_empty(), "nothing changed");
    let mut got = fetch::decode_response(Reader::new(encoded_answer(16, &records)), 16).unwrap();
    assert_eq!(s.name_topics(&mut got), 1, "OTHER was never asked for");
    assert!(got.partitions.iter().all(|p| &*p.topic == "orders"));
    s.on_response(&got);
    assert_eq!((s.id(), s.epoch()), (12, 2));
}

#[test]
fn truncated_answers_by_id_are_errors() {
    let records = Bytes::from_static(b"records");
    for version in [13i16, 16, 17] {
        let body = encoded_answer(version, &records);
        assert!(fetch::decode_response(Reader::new(body.clone()), version).is_ok());
        for n in 0..body.len() {
            assert!(
                fetch::decode_response(Reader::new(body.slice(..n)), version).is_err(),
                "v{version} cut at {n} of {}",
                body.len()
            );
        }
    }
}

#[test]
fn hostile_counts_and_tag_lengths_in_answers_by_id_are_errors() {
    // throttle, error, session id, then 2^21 topics of which none follow.
    let mut b = BytesMut::new();
    b.put_i32(0);
    b.put_i16(0);
    b.put_i32(0);
    b.put_slice(&[0x80, 0x80, 0x80, 0x01]);
    assert!(fetch::decode_response(Reader::new(b.freeze()), 13).is_err());
    // One topic, one partition whose tagged field claims more bytes than there are.
    let mut b = BytesMut::new();
    b.put_i32(0);
    b.put_i16(0);
    b.put_i32(0);
    b.put_u8(2);
    b.put_slice(&OLD);
    b.put_u8(2);
    b.put_i32(0); // partition
    b.put_i16(0);
    b.put_i64(1);
    b.put_i64(1);
    b.put_i64(0);
    b.put_u8(0); // null aborted transactions
    b.put_i32(-1); // preferred read replica
    b.put_u8(0); // null records
    b.put_u8(1); // one tag
    b.put_u8(1); // current leader
    b.put_u8(100); // of 100 bytes
    b.put_slice(&[0; 8]);
    assert!(fetch::decode_response(Reader::new(b.freeze()), 13).is_err());
    // A top-level tag (v16 node endpoints) cut short.
    let mut b = BytesMut::new();
    b.put_i32(0);
    b.put_i16(0);
    b.put_i32(0);
    b.put_u8(1); // no topics
    b.put_u8(1);
    b.put_u8(0);
    b.put_u8(50);
    assert!(fetch::decode_response(Reader::new(b.freeze()), 16).is_err());
}
