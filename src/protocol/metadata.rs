//! Metadata (key 3): brokers, controller, topics and partition leaders.
//!
//! Requests are encoded with `kafka-protocol` and always send `allow_auto_topic_creation =
//! false` (a Metadata lookup must never create a topic). Responses v1..=12 are decoded here.

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::wire::{Reader, WireError};

/// A broker as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerMeta {
    /// Node id.
    pub node_id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: i32,
    /// Rack, if set.
    pub rack: Option<String>,
}

/// A partition's leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMeta {
    /// Error code for this partition.
    pub error_code: i16,
    /// Partition index.
    pub partition: i32,
    /// Leader node id (-1 when none).
    pub leader: i32,
    /// Leader epoch (-1 before v7).
    pub leader_epoch: i32,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isr: Vec<i32>,
}

/// A topic as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    /// Error code for this topic.
    pub error_code: i16,
    /// Topic name.
    pub name: String,
    /// Topic id (zero before v10).
    pub topic_id: [u8; 16],
    /// Internal topic (`__consumer_offsets` and the like).
    pub is_internal: bool,
    /// Partitions, in the order the broker listed them.
    pub partitions: Vec<PartitionMeta>,
}

/// A decoded Metadata response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataResponse {
    /// Brokers.
    pub brokers: Vec<BrokerMeta>,
    /// Cluster id (v2+).
    pub cluster_id: Option<String>,
    /// Controller node id.
    pub controller_id: i32,
    /// Topics.
    pub topics: Vec<TopicMeta>,
}

/// Builds a Metadata request for `topics` (`None` = all topics).
pub fn request(topics: Option<&[String]>) -> MetadataRequest {
    let mut req = MetadataRequest::default();
    req.allow_auto_topic_creation = false;
    req.topics = topics.map(|ts| {
        ts.iter()
            .map(|t| {
                let mut mt = MetadataRequestTopic::default();
                mt.name = Some(TopicName(StrBytes::from_string(t.clone())));
                mt
            })
            .collect()
    });
    req
}

/// Decodes a Metadata response body at `version` (1..=12).
pub fn decode_response(mut r: Reader, version: i16) -> Result<MetadataResponse, WireError> {
    let c = version >= 9;
    if version >= 3 {
        r.i32("throttle time")?;
    }
    let nb = r.array(c, 10, "brokers")?;
    let mut brokers = Vec::with_capacity(nb);
    for _ in 0..nb {
        let node_id = r.i32("node id")?;
        let host = r.string(c, "host")?;
        let port = r.i32("port")?;
        let rack = r.nullable_string(c, "rack")?;
        if c {
            r.skip_tagged_fields()?;
        }
        brokers.push(BrokerMeta {
            node_id,
            host,
            port,
            rack,
        });
    }
    let cluster_id = if version >= 2 {
        r.nullable_string(c, "cluster id")?
    } else {
        None
    };
    let controller_id = r.i32("controller id")?;
    let nt = r.array(c, 8, "topics")?;
    let mut topics = Vec::with_capacity(nt);
    for _ in 0..nt {
        let error_code = r.i16("topic error")?;
        let name = r.nullable_string(c, "topic name")?.unwrap_or_default();
        let topic_id = if version >= 10 {
            r.uuid("topic id")?
        } else {
            [0; 16]
        };
        let is_internal = r.bool("is internal")?;
        let np = r.array(c, 16, "partitions")?;
        let mut partitions = Vec::with_capacity(np);
        for _ in 0..np {
            let error_code = r.i16("partition error")?;
            let partition = r.i32("partition index")?;
            let leader = r.i32("leader")?;
            let leader_epoch = if version >= 7 {
                r.i32("leader epoch")?
            } else {
                -1
            };
            let replicas = read_i32s(&mut r, c, "replicas")?;
            let isr = read_i32s(&mut r, c, "isr")?;
            if version >= 5 {
                read_i32s(&mut r, c, "offline replicas")?;
            }
            if c {
                r.skip_tagged_fields()?;
            }
            partitions.push(PartitionMeta {
                error_code,
                partition,
                leader,
                leader_epoch,
                replicas,
                isr,
            });
        }
        if version >= 8 {
            r.i32("topic authorized operations")?;
        }
        if c {
            r.skip_tagged_fields()?;
        }
        topics.push(TopicMeta {
            error_code,
            name,
            topic_id,
            is_internal,
            partitions,
        });
    }
    if (8..=10).contains(&version) {
        r.i32("cluster authorized operations")?;
    }
    if c {
        r.skip_tagged_fields()?;
    }
    Ok(MetadataResponse {
        brokers,
        cluster_id,
        controller_id,
        topics,
    })
}

fn read_i32s(r: &mut Reader, compact: bool, what: &'static str) -> Result<Vec<i32>, WireError> {
    let n = r.array(compact, 4, what)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(r.i32(what)?);
    }
    Ok(v)
}
