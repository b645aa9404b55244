//! Broker-side validation of client Produce requests, modelled on Apache Kafka's rules.
//!
//! Everything here is synchronous and socket-free so it can be unit-tested: feed request frames
//! to [`ProduceChecker::check_request_frame`] (or a decoded body to [`check_produce_request`]) and
//! response frames to [`ProduceChecker::observe_response`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{
    ApiKey, DeleteTopicsResponse, InitProducerIdResponse, MetadataResponse, ProduceRequest,
    ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, HeaderVersion};

use crate::support::records::{batch_crc, split_batches, BatchHeader};
use crate::support::wire::{parse_request_header, Cursor, RequestInfo};

/// Produce API key.
pub const PRODUCE: i16 = 0;
/// Metadata API key.
pub const METADATA: i16 = 3;
/// InitProducerId API key.
pub const INIT_PRODUCER_ID: i16 = 22;
/// DeleteTopics API key.
pub const DELETE_TOPICS: i16 = 20;

/// Per (producerId, topic, partition) sequence state.
#[derive(Debug, Clone)]
struct SeqState {
    epoch: i16,
    /// Sequence the next new batch must start at.
    next: i32,
    /// (baseSequence, recordsCount) of every batch seen in this epoch, for exact retries.
    seen: HashSet<(i32, i32)>,
}

/// Outcome of looking at one request frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameOutcome {
    /// Parsed header, if it could be parsed.
    pub info: Option<RequestInfo>,
    /// `acks` of a decoded Produce request (acks=0 requests get no response).
    pub produce_acks: Option<i16>,
    /// Violations found in this frame.
    pub violations: Vec<String>,
}

/// State of the produce-request checker. One instance per proxy (shared by all connections,
/// since producer ids and sequences span connections).
#[derive(Debug)]
pub struct ProduceChecker {
    /// Require `acks == -1` on every Produce request.
    pub require_acks_all: bool,
    /// (producerId, producerEpoch) pairs handed out by InitProducerId responses.
    handed_out: HashSet<(i64, i16)>,
    sequences: HashMap<(i64, String, i32), SeqState>,
    /// Topic id (uuid text) -> name, learned from Metadata responses (for Produce v13+).
    topic_names: HashMap<String, String>,
    pub produce_requests: u64,
    pub produce_batches: u64,
    pub requests_by_api_key: BTreeMap<i16, u64>,
    /// All violations recorded so far (the proxy appends here).
    pub violations: Vec<String>,
}

impl Default for ProduceChecker {
    fn default() -> Self {
        ProduceChecker::new(true)
    }
}

impl ProduceChecker {
    pub fn new(require_acks_all: bool) -> Self {
        ProduceChecker {
            require_acks_all,
            handed_out: HashSet::new(),
            sequences: HashMap::new(),
            topic_names: HashMap::new(),
            produce_requests: 0,
            produce_batches: 0,
            requests_by_api_key: BTreeMap::new(),
            violations: Vec::new(),
        }
    }

    /// Records a producer id/epoch as handed out by the broker (what an InitProducerId
    /// response does); handy for unit tests.
    pub fn note_producer_id(&mut self, producer_id: i64, producer_epoch: i16) {
        self.handed_out.insert((producer_id, producer_epoch));
    }

    /// Producer ids handed out so far.
    pub fn known_producer_ids(&self) -> Vec<(i64, i16)> {
        let mut v: Vec<_> = self.handed_out.iter().copied().collect();
        v.sort_unstable();
        v
    }

    /// Looks at one client->broker frame payload (bytes after the int32 size prefix).
    /// Produce requests are fully checked; other requests are only counted.
    /// Returned violations are NOT appended to `self.violations`.
    pub fn check_request_payload(&mut self, payload: &[u8]) -> FrameOutcome {
        let mut out = FrameOutcome::default();
        let info = match parse_request_header(payload) {
            Ok(info) => info,
            Err(e) => {
                out.violations
                    .push(format!("[malformed-request-header] {e}"));
                return out;
            }
        };
        *self.requests_by_api_key.entry(info.api_key).or_insert(0) += 1;
        if info.api_key == PRODUCE {
            self.produce_requests += 1;
            match info.body_offset {
                Some(off) => {
                    let (acks, v) = check_produce_request(self, &info, &payload[off..]);
                    out.produce_acks = acks;
                    out.violations = v;
                }
                None => out.violations.push(format!(
                    "[malformed-produce] cannot locate body of Produce v{} request (correlation_id={})",
                    info.api_version, info.correlation_id
                )),
            }
        }
        out.info = Some(info);
        out
    }

    /// Same as [`Self::check_request_payload`] for a whole frame including the size prefix.
    pub fn check_request_frame(&mut self, frame: &[u8]) -> FrameOutcome {
        let mut c = Cursor::new(frame);
        match c.i32("frame size") {
            Ok(n) if n >= 0 && n as usize == c.remaining() => self.check_request_payload(c.rest()),
            Ok(n) => FrameOutcome {
                violations: vec![format!(
                    "[bad-frame] size prefix {n} but {} payload bytes",
                    c.remaining()
                )],
                ..Default::default()
            },
            Err(e) => FrameOutcome {
                violations: vec![format!("[bad-frame] {e}")],
                ..Default::default()
            },
        }
    }

    /// Looks at one broker->client response frame payload for a request whose api key and
    /// version are known (matched by correlation id). Learns producer ids from InitProducerId
    /// and topic ids from Metadata. Returns a note on decoding problems (not a violation:
    /// the broker is not under test).
    pub fn observe_response(
        &mut self,
        api_key: i16,
        api_version: i16,
        payload: &[u8],
    ) -> Option<String> {
        if api_key != INIT_PRODUCER_ID && api_key != METADATA && api_key != DELETE_TOPICS {
            return None;
        }
        let key = ApiKey::try_from(api_key).ok()?;
        let hv = key.response_header_version(api_version);
        let mut bytes = Bytes::copy_from_slice(payload);
        let decoded = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
            ResponseHeader::decode(&mut bytes, hv).map_err(|e| format!("response header: {e}"))?;
            if api_key == INIT_PRODUCER_ID {
                let r = InitProducerIdResponse::decode(&mut bytes, api_version)
                    .map_err(|e| format!("InitProducerId v{api_version}: {e}"))?;
                if r.error_code == 0 && r.producer_id.0 >= 0 {
                    self.handed_out.insert((r.producer_id.0, r.producer_epoch));
                }
            } else if api_key == DELETE_TOPICS {
                // A deleted topic's logs are gone with their producer state: a topic created
                // again under the name starts every producer's sequences afresh.
                let r = DeleteTopicsResponse::decode(&mut bytes, api_version)
                    .map_err(|e| format!("DeleteTopics v{api_version}: {e}"))?;
                for t in r.responses.iter().filter(|t| t.error_code == 0) {
                    if let Some(name) = &t.name {
                        let name = name.0.as_str();
                        self.sequences.retain(|(_, topic, _), _| topic != name);
                    }
                }
            } else {
                let r = MetadataResponse::decode(&mut bytes, api_version)
                    .map_err(|e| format!("Metadata v{api_version}: {e}"))?;
                for t in &r.topics {
                    if let Some(name) = &t.name {
                        self.topic_names
                            .insert(t.topic_id.to_string(), name.0.as_str().to_owned());
                    }
                }
            }
            Ok(())
        }));
        match decoded {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("could not decode response: {e}")),
            Err(_) => Some(format!(
                "decoder panicked on {} v{api_version} response",
                crate::support::wire::api_key_name(api_key)
            )),
        }
    }
}

/// Walks the Produce request layout without allocating, refusing array counts larger than the
/// remaining bytes, so the kafka-protocol decoder can never be asked to pre-allocate a huge Vec.
fn precheck_produce_layout(body: &[u8], version: i16) -> Result<(), String> {
    let flex = version >= 9;
    let mut c = Cursor::new(body);
    if flex {
        c.compact_nullable("transactional_id")?;
    } else {
        c.nullable_str16("transactional_id")?;
    }
    c.skip(6, "acks/timeout_ms")?;
    let topics = c.array_len(flex, if flex { 3 } else { 6 }, "topic_data")?;
    for _ in 0..topics {
        if version >= 13 {
            c.skip(16, "topic_id")?;
        } else if flex {
            c.compact_nullable("topic name")?;
        } else {
            c.nullable_str16("topic name")?;
        }
        let parts = c.array_len(flex, if flex { 6 } else { 8 }, "partition_data")?;
        for _ in 0..parts {
            c.skip(4, "partition index")?;
            if flex {
                c.compact_nullable("records")?;
                c.tagged_fields("partition tagged fields")?;
            } else {
                c.nullable_bytes32("records")?;
            }
        }
        if flex {
            c.tagged_fields("topic tagged fields")?;
        }
    }
    if flex {
        c.tagged_fields("request tagged fields")?;
    }
    if c.remaining() != 0 {
        return Err(format!(
            "{} trailing bytes after the Produce request body",
            c.remaining()
        ));
    }
    Ok(())
}

fn batch_ctx(topic: &str, partition: i32, h: &BatchHeader) -> String {
    format!(
        "topic={topic} partition={partition} baseOffset={} producerId={} producerEpoch={} baseSequence={} recordsCount={}",
        h.base_offset, h.producer_id, h.producer_epoch, h.base_sequence, h.records_count
    )
}

/// Checks one Produce request body (bytes after the request header) against Kafka's
/// broker-side rules. Updates the checker's sequence state and counters.
/// Returns the request's `acks` (if it decoded) and the violations found.
pub fn check_produce_request(
    checker: &mut ProduceChecker,
    info: &RequestInfo,
    body: &[u8],
) -> (Option<i16>, Vec<String>) {
    let mut v = Vec::new();
    let version = info.api_version;
    let req_ctx = format!(
        "Produce v{version} correlation_id={} client_id={:?}",
        info.correlation_id, info.client_id
    );
    if version < 3 {
        v.push(format!(
            "[produce-version] {req_ctx}: Produce versions below 3 cannot carry magic-2 batches"
        ));
        return (None, v);
    }
    if let Err(e) = precheck_produce_layout(body, version) {
        v.push(format!("[malformed-produce] {req_ctx}: {e}"));
        return (None, v);
    }
    // Header version is implied by the api version; recorded for the message only.
    let header_version = ProduceRequest::header_version(version);
    let mut bytes = Bytes::copy_from_slice(body);
    let decoded = catch_unwind(AssertUnwindSafe(|| {
        ProduceRequest::decode(&mut bytes, version).map(|r| (r, bytes.remaining()))
    }));
    let req = match decoded {
        Ok(Ok((req, 0))) => req,
        Ok(Ok((_, left))) => {
            v.push(format!(
                "[malformed-produce] {req_ctx} (header v{header_version}): {left} trailing bytes after body"
            ));
            return (None, v);
        }
        Ok(Err(e)) => {
            v.push(format!(
                "[malformed-produce] {req_ctx} (header v{header_version}): kafka-protocol decode failed: {e}"
            ));
            return (None, v);
        }
        Err(_) => {
            v.push(format!(
                "[malformed-produce] {req_ctx}: kafka-protocol decoder panicked"
            ));
            return (None, v);
        }
    };

    if checker.require_acks_all && req.acks != -1 {
        v.push(format!(
            "[acks-all] {req_ctx}: acks={} but the code under test must send acks=-1 (all)",
            req.acks
        ));
    }
    let transactional_id = req.transactional_id.as_ref().map(|s| s.as_str().to_owned());

    for topic in &req.topic_data {
        let topic_name = if version >= 13 {
            let id = topic.topic_id.to_string();
            checker
                .topic_names
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("id:{id}"))
        } else {
            topic.name.0.as_str().to_owned()
        };
        for pd in &topic.partition_data {
            let partition = pd.index;
            let Some(blob) = pd.records.as_ref() else {
                v.push(format!(
                    "[one-batch] {req_ctx} topic={topic_name} partition={partition}: records is null"
                ));
                continue;
            };
            let (batches, trailing) = split_batches(blob);
            if let Some(t) = trailing {
                v.push(format!(
                    "[one-batch] {req_ctx} topic={topic_name} partition={partition}: {t}"
                ));
            }
            if batches.len() != 1 {
                v.push(format!(
                    "[one-batch] {req_ctx} topic={topic_name} partition={partition}: {} record batches in one partition's records (Kafka requires exactly one)",
                    batches.len()
                ));
            }
            for batch in batches {
                checker.produce_batches += 1;
                check_batch(
                    checker,
                    &req_ctx,
                    transactional_id.as_deref(),
                    &topic_name,
                    partition,
                    batch,
                    &mut v,
                );
            }
        }
    }
    (Some(req.acks), v)
}

fn check_batch(
    checker: &mut ProduceChecker,
    req_ctx: &str,
    transactional_id: Option<&str>,
    topic: &str,
    partition: i32,
    batch: &[u8],
    v: &mut Vec<String>,
) {
    let h = match BatchHeader::parse(batch) {
        Ok(h) => h,
        Err(e) => {
            v.push(format!(
                "[batch-header] {req_ctx} topic={topic} partition={partition}: {e}"
            ));
            return;
        }
    };
    let ctx = batch_ctx(topic, partition, &h);
    if h.magic != 2 {
        v.push(format!(
            "[magic] {req_ctx} {ctx}: magic {} (must be 2)",
            h.magic
        ));
        return;
    }
    let crc = batch_crc(batch);
    if crc != h.crc {
        v.push(format!(
            "[crc] {req_ctx} {ctx}: stored CRC-32C {:#010x} != computed {crc:#010x}",
            h.crc
        ));
    }
    if h.records_count <= 0 {
        v.push(format!(
            "[records-count] {req_ctx} {ctx}: recordsCount {} (a produced batch must hold records)",
            h.records_count
        ));
    }
    if i64::from(h.last_offset_delta) + 1 != i64::from(h.records_count) {
        v.push(format!(
            "[last-offset-delta] {req_ctx} {ctx}: lastOffsetDelta {} + 1 != recordsCount {}",
            h.last_offset_delta, h.records_count
        ));
    }
    if h.is_control() {
        v.push(format!(
            "[control-batch] {req_ctx} {ctx}: clients may not produce control batches"
        ));
    }
    if h.is_transactional() {
        if h.producer_id < 0 {
            v.push(format!(
                "[transactional] {req_ctx} {ctx}: transactional batch without a producer id"
            ));
        }
        if transactional_id.is_none() {
            v.push(format!(
                "[transactional] {req_ctx} {ctx}: transactional batch in a request without transactional_id"
            ));
        }
    }
    if h.producer_id < 0 {
        return;
    }
    if h.base_sequence < 0 || h.producer_epoch < 0 {
        v.push(format!(
            "[sequence] {req_ctx} {ctx}: idempotent batch needs baseSequence >= 0 and producerEpoch >= 0"
        ));
        return;
    }
    if !checker
        .handed_out
        .iter()
        .any(|(pid, _)| *pid == h.producer_id)
    {
        v.push(format!(
            "[unknown-producer-id] {req_ctx} {ctx}: producerId {} was never handed out by an InitProducerId response seen on this proxy",
            h.producer_id
        ));
    } else if !checker
        .handed_out
        .contains(&(h.producer_id, h.producer_epoch))
    {
        v.push(format!(
            "[unknown-producer-epoch] {req_ctx} {ctx}: producerEpoch {} of producerId {} was never handed out by InitProducerId",
            h.producer_epoch, h.producer_id
        ));
    }
    let count = h.records_count.max(0);
    let next_after = ((i64::from(h.base_sequence) + i64::from(count)) % (1i64 << 31)) as i32;
    let key = (h.producer_id, topic.to_owned(), partition);
    match checker.sequences.get_mut(&key) {
        None => {
            let mut seen = HashSet::new();
            seen.insert((h.base_sequence, h.records_count));
            checker.sequences.insert(
                key,
                SeqState {
                    epoch: h.producer_epoch,
                    next: next_after,
                    seen,
                },
            );
        }
        Some(st) => {
            if h.producer_epoch < st.epoch {
                v.push(format!(
                    "[sequence] {req_ctx} {ctx}: producerEpoch {} is older than epoch {} already used on this partition",
                    h.producer_epoch, st.epoch
                ));
            } else if h.producer_epoch > st.epoch {
                if h.base_sequence != 0 {
                    v.push(format!(
                        "[sequence] {req_ctx} {ctx}: first batch of a bumped producerEpoch must start at sequence 0"
                    ));
                }
                st.epoch = h.producer_epoch;
                st.seen.clear();
                st.seen.insert((h.base_sequence, h.records_count));
                st.next = next_after;
            } else if st.seen.contains(&(h.base_sequence, h.records_count)) {
                // Exact retry of an already-seen batch: allowed, state unchanged.
            } else if h.base_sequence != st.next {
                v.push(format!(
                    "[sequence] {req_ctx} {ctx}: baseSequence {} but expected {} (previous baseSequence + recordsCount)",
                    h.base_sequence, st.next
                ));
                st.seen.insert((h.base_sequence, h.records_count));
                st.next = next_after;
            } else {
                st.seen.insert((h.base_sequence, h.records_count));
                st.next = next_after;
            }
        }
    }
}
