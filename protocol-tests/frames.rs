//! Request frames against golden bytes and against the `kafka-protocol` crate's encoder; our
//! response decoders against responses that crate encodes.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, FetchResponse, MetadataResponse,
    ProduceRequest, ProduceResponse, ProducerId, RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use strait::protocol::frame::{RequestFrame, RequestMeta};
use strait::protocol::produce::{ProducePartition, ProduceSettings, ProduceTopic};
use strait::protocol::wire::Reader;
use strait::protocol::{api_versions, fetch, metadata, produce};
use strait::records::{split, Entry, HeaderRewrite};

fn fixture(name: &str) -> Bytes {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    Bytes::from(std::fs::read(p).expect("fixture"))
}

/// A request framed by `kafka-protocol`: size, header, body.
fn reference_frame<T: Encodable>(key: ApiKey, version: i16, id: i32, body: &T) -> Vec<u8> {
    let mut header = RequestHeader::default();
    header.request_api_key = key as i16;
    header.request_api_version = version;
    header.correlation_id = id;
    header.client_id = Some(StrBytes::from_static_str("strait"));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let mut out = (buf.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&buf);
    out
}

#[test]
fn request_header_golden_bytes() {
    let meta = RequestMeta {
        api_key: ApiKey::Metadata,
        version: 1,
        correlation_id: 7,
        client_id: "strait",
    };
    let mut b = BytesMut::new();
    strait::protocol::frame::put_request_header(&mut b, &meta);
    assert_eq!(&b[..], b"\x00\x03\x00\x01\x00\x00\x00\x07\x00\x06strait");
    let meta = RequestMeta { version: 9, ..meta };
    let mut b = BytesMut::new();
    strait::protocol::frame::put_request_header(&mut b, &meta);
    assert_eq!(
        &b[..],
        b"\x00\x03\x00\x09\x00\x00\x00\x07\x00\x06strait\x00"
    );
}

#[test]
fn api_versions_request_matches_reference() {
    for version in 0..=3 {
        let ours = api_versions::encode_request(42, "strait", version).to_vec();
        let mut req = ApiVersionsRequest::default();
        req.client_software_name = StrBytes::from_static_str("strait");
        req.client_software_version = StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
        assert_eq!(
            ours,
            reference_frame(ApiKey::ApiVersions, version, 42, &req),
            "v{version}"
        );
    }
}

fn batches(name: &str) -> Vec<strait::records::RecordBatch> {
    split(fixture(name))
        .filter_map(|e| match e.unwrap() {
            Entry::V2(b) => Some(b),
            Entry::Legacy(_) => None,
        })
        .collect()
}

#[test]
fn produce_frame_matches_reference_and_is_zero_copy() {
    let zstd = batches("v2_zstd.bin").remove(0);
    let lz4 = batches("v2_lz4.bin").remove(0);
    let none = batches("v2_none.bin").remove(0);
    let rw = HeaderRewrite {
        base_offset: Some(0),
        producer_id: Some(9),
        producer_epoch: Some(0),
        base_sequence: Some(0),
        ..Default::default()
    };
    let topics = vec![
        ProduceTopic {
            name: "alpha".into(),
            partitions: vec![
                ProducePartition {
                    partition: 0,
                    batch: zstd.rewrite(&rw),
                },
                ProducePartition {
                    partition: 3,
                    batch: lz4.rewrite(&rw),
                },
            ],
        },
        ProduceTopic {
            name: "beta".into(),
            partitions: vec![ProducePartition {
                partition: 1,
                batch: none.rewrite(&rw),
            }],
        },
    ];
    for version in 3..=12 {
        let meta = RequestMeta {
            api_key: ApiKey::Produce,
            version,
            correlation_id: 99,
            client_id: "strait",
        };
        let settings = ProduceSettings {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
        };
        let frame: RequestFrame = produce::encode_request(&meta, &settings, &topics);
        // Every records region goes out as the very buffer it came in.
        for t in &topics {
            for p in &t.partitions {
                assert!(
                    frame
                        .chunks
                        .iter()
                        .any(|c| c.as_ptr() == p.batch.records.as_ptr()
                            && c.len() == p.batch.records.len()),
                    "v{version}: records region copied"
                );
            }
        }
        let mut req = ProduceRequest::default();
        req.acks = -1;
        req.timeout_ms = 30_000;
        req.topic_data = topics
            .iter()
            .map(|t| {
                let mut td = TopicProduceData::default();
                td.name = TopicName(StrBytes::from_string(t.name.clone()));
                td.partition_data = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let mut pd = PartitionProduceData::default();
                        pd.index = p.partition;
                        pd.records = Some(p.batch.to_bytes());
                        pd
                    })
                    .collect();
                td
            })
            .collect();
        assert_eq!(
            frame.to_vec(),
            reference_frame(ApiKey::Produce, version, 99, &req),
            "produce v{version}"
        );
    }
}

/// Encodes a response body with `kafka-protocol`, prefixed by a response header.
fn response<T: Encodable>(key: ApiKey, version: i16, body: &T) -> Reader {
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&5i32.to_be_bytes());
    if key.response_header_version(version) >= 1 {
        buf.extend_from_slice(&[0]);
    }
    body.encode(&mut buf, version).unwrap();
    strait::protocol::frame::response_body(buf.freeze(), key, version).unwrap()
}

#[test]
fn fetch_response_decodes_like_the_reference() {
    let records = fixture("v2_multi.bin");
    for version in 4..=12i16 {
        let mut pd = PartitionData::default();
        pd.partition_index = 2;
        pd.high_watermark = 1000;
        pd.last_stable_offset = 990;
        pd.log_start_offset = if version >= 5 { 10 } else { -1 };
        let mut at = AbortedTransaction::default();
        at.producer_id = ProducerId(77);
        at.first_offset = 500;
        pd.aborted_transactions = Some(vec![at]);
        pd.records = Some(records.clone());
        let mut empty = PartitionData::default();
        empty.partition_index = 0;
        empty.error_code = 6;
        empty.records = None;
        let mut t = FetchableTopicResponse::default();
        t.topic = TopicName(StrBytes::from_static_str("orders"));
        t.partitions = vec![pd, empty];
        let mut resp = FetchResponse::default();
        resp.session_id = if version >= 7 { 12 } else { 0 };
        resp.responses = vec![t];
        let got = fetch::decode_response(response(ApiKey::Fetch, version, &resp), version).unwrap();
        assert_eq!(got.partitions.len(), 2, "v{version}");
        let p = &got.partitions[0];
        assert_eq!(
            (
                &*p.topic,
                p.partition,
                p.high_watermark,
                p.last_stable_offset
            ),
            ("orders", 2, 1000, 990)
        );
        assert_eq!(
            p.aborted_transactions,
            vec![fetch::AbortedTransaction {
                producer_id: 77,
                first_offset: 500
            }]
        );
        assert_eq!(p.records, records, "v{version}");
        assert_eq!(got.partitions[1].error_code, 6);
        assert!(got.partitions[1].records.is_empty());
        assert_eq!(got.session_id, resp.session_id);
    }
}

#[test]
fn produce_response_decodes_like_the_reference() {
    for version in 3..=12i16 {
        let mut p = PartitionProduceResponse::default();
        p.index = 4;
        p.error_code = 0;
        p.base_offset = 1234;
        p.log_append_time_ms = -1;
        p.log_start_offset = 5;
        let mut t = TopicProduceResponse::default();
        t.name = TopicName(StrBytes::from_static_str("orders"));
        t.partition_responses = vec![p];
        let mut resp = ProduceResponse::default();
        resp.responses = vec![t];
        let got =
            produce::decode_response(response(ApiKey::Produce, version, &resp), version).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].topic.as_str(), got[0].partition, got[0].base_offset),
            ("orders", 4, 1234)
        );
    }
}

#[test]
fn metadata_response_decodes_like_the_reference() {
    for version in 1..=12i16 {
        let mut b = MetadataResponseBroker::default();
        b.node_id = BrokerId(3);
        b.host = StrBytes::from_static_str("10.0.0.3");
        b.port = 9093;
        let mut p = MetadataResponsePartition::default();
        p.partition_index = 1;
        p.leader_id = BrokerId(3);
        p.leader_epoch = 4;
        p.replica_nodes = vec![BrokerId(3)];
        p.isr_nodes = vec![BrokerId(3)];
        let mut t = MetadataResponseTopic::default();
        t.name = Some(TopicName(StrBytes::from_static_str("orders")));
        t.partitions = vec![p];
        let mut resp = MetadataResponse::default();
        resp.brokers = vec![b];
        resp.cluster_id = Some(StrBytes::from_static_str("cluster-x"));
        resp.controller_id = BrokerId(3);
        resp.topics = vec![t];
        let got =
            metadata::decode_response(response(ApiKey::Metadata, version, &resp), version).unwrap();
        assert_eq!(got.brokers[0].host, "10.0.0.3");
        assert_eq!(got.brokers[0].port, 9093);
        assert_eq!(got.topics[0].name, "orders");
        assert_eq!(got.topics[0].partitions[0].leader, 3);
        assert_eq!(
            got.topics[0].partitions[0].leader_epoch,
            if version >= 7 { 4 } else { -1 }
        );
        if version >= 2 {
            assert_eq!(got.cluster_id.as_deref(), Some("cluster-x"));
        }
    }
}

#[test]
fn api_versions_response_and_v0_fallback() {
    for version in 0..=3i16 {
        let mut resp = ApiVersionsResponse::default();
        let mut v = ApiVersion::default();
        v.api_key = 0;
        v.min_version = 3;
        v.max_version = 11;
        resp.api_keys = vec![v];
        // ApiVersions responses always use header v0.
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&1i32.to_be_bytes());
        resp.encode(&mut buf, version).unwrap();
        let mut r = Reader::new(buf.freeze());
        r.i32("id").unwrap();
        let got = api_versions::decode_response(r, version).unwrap();
        assert_eq!(
            got.range(ApiKey::Produce),
            Some(strait::protocol::Versions { min: 3, max: 11 })
        );
    }
    // A broker that does not know v3 answers UNSUPPORTED_VERSION with a v0 body.
    let mut resp = ApiVersionsResponse::default();
    resp.error_code = 35;
    let mut v = ApiVersion::default();
    v.api_key = 18;
    v.max_version = 2;
    resp.api_keys = vec![v];
    let mut buf = BytesMut::new();
    resp.encode(&mut buf, 0).unwrap();
    let got = api_versions::decode_response(Reader::new(buf.freeze()), 3).unwrap();
    assert_eq!(got.error_code, 35);
    assert_eq!(got.range(ApiKey::ApiVersions).map(|v| v.max), Some(2));
}
