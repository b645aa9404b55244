//! The Kafka wire protocol, sans-io: request framing and the responses strait decodes itself.
//!
//! Requests for the control plane are encoded with the `kafka-protocol` crate. The responses that
//! come straight from an unknown peer or carry record data (ApiVersions, Metadata, Fetch,
//! Produce) are decoded here with bounded readers, so a hostile length never turns into an
//! allocation, and record data stays a zero-copy slice of the frame.

pub mod api_versions;
pub mod fetch;
pub mod fetch_session;
pub mod frame;
pub mod metadata;
pub mod produce;
pub mod wire;

use kafka_protocol::messages::ApiKey;

/// A range of API versions, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    /// Lowest version.
    pub min: i16,
    /// Highest version.
    pub max: i16,
}

impl Versions {
    /// The highest version in both ranges, if they overlap.
    pub fn negotiate(self, broker: Versions) -> Option<i16> {
        let max = self.max.min(broker.max);
        (max >= self.min.max(broker.min)).then_some(max)
    }
}

/// The APIs strait speaks and the versions it implements. Produce stops below the version
/// that names topics by id only (v13); Fetch goes to v17 and names topics by id from v13
/// when their ids are known, else by name at most v12 (`fetch::version_for`). Fetch v18 adds
/// only a field for KRaft followers.
pub fn supported_versions(key: ApiKey) -> Option<Versions> {
    let (min, max) = match key {
        ApiKey::ApiVersions => (0, 3),
        ApiKey::Metadata => (1, 12),
        ApiKey::Fetch => (4, 17),
        ApiKey::Produce => (3, 12),
        ApiKey::ListOffsets => (1, 9),
        ApiKey::CreateTopics => (2, 7),
        ApiKey::DescribeConfigs => (1, 4),
        ApiKey::FindCoordinator => (1, 4),
        ApiKey::OffsetCommit => (2, 9),
        ApiKey::OffsetFetch => (1, 8),
        ApiKey::ListGroups => (1, 5),
        ApiKey::DescribeGroups => (1, 5),
        ApiKey::InitProducerId => (0, 5),
        ApiKey::CreatePartitions => (0, 3),
        ApiKey::DeleteTopics => (1, 6),
        ApiKey::IncrementalAlterConfigs => (0, 1),
        ApiKey::DescribeAcls => (1, 3),
        ApiKey::CreateAcls => (1, 3),
        ApiKey::JoinGroup => (1, 9),
        ApiKey::SyncGroup => (1, 5),
        ApiKey::Heartbeat => (1, 4),
        ApiKey::LeaveGroup => (1, 5),
        ApiKey::SaslHandshake => (1, 1),
        ApiKey::SaslAuthenticate => (0, 2),
        _ => return None,
    };
    Some(Versions { min, max })
}

/// Kafka error codes strait reacts to by name.
pub mod error_code {
    /// No error.
    pub const NONE: i16 = 0;
    /// The group's generation moved on (rejoin).
    pub const ILLEGAL_GENERATION: i16 = 22;
    /// The coordinator does not know this member (rejoin with no member id).
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    /// The group is rebalancing (rejoin).
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    /// JoinGroup v4+: join again with the member id in the response.
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    /// The requested offset is outside the log.
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    /// A batch failed its CRC check.
    pub const CORRUPT_MESSAGE: i16 = 2;
    /// The topic or partition does not exist (retriable).
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    /// No leader right now (retriable).
    pub const LEADER_NOT_AVAILABLE: i16 = 5;
    /// This broker is not the leader (retriable after a metadata refresh).
    pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    /// The request timed out on the broker (retriable).
    pub const REQUEST_TIMED_OUT: i16 = 7;
    /// A batch is larger than the topic allows.
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    /// The group coordinator is loading (retriable).
    pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
    /// The coordinator is not available (retriable).
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    /// This broker is not the coordinator (retriable).
    pub const NOT_COORDINATOR: i16 = 16;
    /// Not enough in-sync replicas (retriable).
    pub const NOT_ENOUGH_REPLICAS: i16 = 19;
    /// Written, but not enough replicas acknowledged (retriable).
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
    /// The broker does not enable the SASL mechanism asked for.
    pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
    /// A SASL request in the wrong state.
    pub const ILLEGAL_SASL_STATE: i16 = 34;
    /// The SASL credentials were refused.
    pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
    /// The topic already exists.
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
    /// The API version is not supported.
    pub const UNSUPPORTED_VERSION: i16 = 35;
    /// The cluster has no authorizer: ACL requests cannot be served.
    pub const SECURITY_DISABLED: i16 = 54;
    /// The sequence number is out of order.
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
    /// The batch was already written (idempotent retry).
    pub const DUPLICATE_SEQUENCE_NUMBER: i16 = 46;
    /// The producer epoch is stale.
    pub const INVALID_PRODUCER_EPOCH: i16 = 47;
    /// The group does not exist (newer DescribeGroups versions say so for unknown groups).
    pub const GROUP_ID_NOT_FOUND: i16 = 69;
    /// The producer id is unknown to the broker.
    pub const UNKNOWN_PRODUCER_ID: i16 = 59;
    /// The leader epoch in the request is stale (retriable).
    pub const FENCED_LEADER_EPOCH: i16 = 74;
    /// The leader epoch in the request is newer than the broker's (retriable).
    pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
    /// The leader has no high watermark yet (retriable).
    pub const OFFSET_NOT_AVAILABLE: i16 = 78;
    /// The client's metadata is stale (retriable).
    pub const KAFKA_STORAGE_ERROR: i16 = 56;
    /// The broker has no fetch session with that id (KIP-227).
    pub const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
    /// The fetch session epoch is not the one the broker expects (KIP-227).
    pub const INVALID_FETCH_SESSION_EPOCH: i16 = 71;
    /// The broker knows no topic of this id (Fetch v13+): the topic was deleted (and perhaps
    /// created again under a new id), or the broker's metadata lags.
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
    /// The topic id asked for is not the id of the partition's log (Fetch v13+): the topic was
    /// deleted and created again under the same name.
    pub const INCONSISTENT_TOPIC_ID: i16 = 103;
    /// A fetch session request names topics otherwise (by id or by name) than the session.
    pub const FETCH_SESSION_TOPIC_ID_ERROR: i16 = 106;

    /// Errors that a retry (after a metadata refresh where relevant) can cure.
    pub fn is_retriable(code: i16) -> bool {
        matches!(
            code,
            UNKNOWN_TOPIC_OR_PARTITION
                | LEADER_NOT_AVAILABLE
                | NOT_LEADER_OR_FOLLOWER
                | REQUEST_TIMED_OUT
                | COORDINATOR_LOAD_IN_PROGRESS
                | COORDINATOR_NOT_AVAILABLE
                | NOT_COORDINATOR
                | NOT_ENOUGH_REPLICAS
                | NOT_ENOUGH_REPLICAS_AFTER_APPEND
                | FENCED_LEADER_EPOCH
                | UNKNOWN_LEADER_EPOCH
                | OFFSET_NOT_AVAILABLE
                | KAFKA_STORAGE_ERROR
                | UNKNOWN_TOPIC_ID
                | INCONSISTENT_TOPIC_ID
        )
    }

    /// Errors after which the partition's leader should be looked up again.
    pub fn needs_metadata_refresh(code: i16) -> bool {
        matches!(
            code,
            UNKNOWN_TOPIC_OR_PARTITION
                | LEADER_NOT_AVAILABLE
                | NOT_LEADER_OR_FOLLOWER
                | FENCED_LEADER_EPOCH
                | UNKNOWN_LEADER_EPOCH
                | KAFKA_STORAGE_ERROR
                | UNKNOWN_TOPIC_ID
                | INCONSISTENT_TOPIC_ID
        )
    }

    /// Whether `code` says the topic id a Fetch asked for is not the topic's now: deleted, or
    /// deleted and created again (or the broker's metadata lags behind a new topic).
    pub fn is_topic_id_stale(code: i16) -> bool {
        matches!(code, UNKNOWN_TOPIC_ID | INCONSISTENT_TOPIC_ID)
    }

    /// A short name for an error code, as Kafka's `Errors` enum spells it.
    pub fn name(code: i16) -> String {
        match kafka_protocol::ResponseError::try_from_code(code) {
            Some(e) => format!("{e:?}"),
            None if code == 0 => "NONE".to_string(),
            None => format!("error code {code}"),
        }
    }
}
