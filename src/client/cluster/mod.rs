//! A client for one Kafka cluster: bootstrap, metadata cache with leader routing, one pooled
//! connection per broker, typed requests, and retry with backoff for retriable errors.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, DescribeConfigsRequest, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, GroupId, InitProducerIdRequest,
    ListGroupsRequest, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest,
    OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, Request, StrBytes};

mod data;

pub use data::{PendingFetch, PendingProduce};

use super::connection::{Connection, ConnectionConfig};
use crate::config::InternalTopics;
use crate::error::{Error, ErrorKind, Result};
use crate::observe::Observer;
use crate::protocol::fetch::{self, FetchLimits, FetchPartitionSpec, FetchResponse};
use crate::protocol::fetch_session::FetchSession;
use crate::protocol::frame::{encode_request, response_body};
use crate::protocol::metadata::{self, BrokerMeta, MetadataResponse, TopicMeta};
use crate::protocol::produce::{
    self, ProducePartition, ProduceSettings, ProduceTopic, ProducedPartition,
};
use crate::protocol::{api_versions::ApiVersionsResponse, error_code};
use crate::records::RewrittenBatch;

/// ListOffsets timestamp meaning "log end offset".
pub const LATEST: i64 = -1;
/// ListOffsets timestamp meaning "log start offset".
pub const EARLIEST: i64 = -2;

/// Settings of a cluster client.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Name used in errors and logs (the alias from the configuration).
    pub name: String,
    /// `host:port` addresses to bootstrap from.
    pub bootstrap: Vec<String>,
    /// Per-connection settings.
    pub connection: ConnectionConfig,
    /// Attempts for a retriable error before giving up.
    pub retries: u32,
    /// First backoff; doubles up to `retry_backoff_max`.
    pub retry_backoff: Duration,
    /// Largest backoff.
    pub retry_backoff_max: Duration,
    /// Where request latencies and retries are reported, if anywhere.
    pub observer: Option<Arc<Observer>>,
    /// Names of strait's own topics on this cluster.
    pub internal_topics: InternalTopics,
}

impl ClusterConfig {
    /// Settings with defaults for a cluster reached at `bootstrap` (comma-separated).
    pub fn new(name: &str, bootstrap: &str) -> ClusterConfig {
        ClusterConfig {
            name: name.to_string(),
            bootstrap: bootstrap
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            connection: ConnectionConfig::default(),
            retries: 8,
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(5),
            observer: None,
            internal_topics: InternalTopics::default(),
        }
    }
}

#[derive(Debug, Default)]
struct MetadataCache {
    cluster_id: Option<String>,
    controller_id: i32,
    brokers: HashMap<i32, BrokerMeta>,
    topics: HashMap<String, TopicMeta>,
}

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Any reachable broker.
    Any,
    /// A broker by node id.
    Node(i32),
}

/// Which pooled connection to a broker a request travels on. A broker handles the requests of
/// one connection one at a time, in order, so the data path (Fetch and Produce of replicated
/// records) has a connection of its own that control work (metadata, group offsets, progress
/// records, read-backs) never queues on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// The data path's Fetch and Produce requests.
    Data,
    /// Everything else.
    Control,
}

/// One pooled connection's place: locked only while that connection is (re)opened, so
/// connecting to a slow or dead broker never holds up requests to others.
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

/// A client for one cluster. Share it behind an `Arc`; all methods take `&self`.
#[derive(Debug)]
pub struct Cluster {
    config: ClusterConfig,
    conns: std::sync::Mutex<HashMap<(i32, Lane), Slot>>,
    bootstrap: tokio::sync::Mutex<Option<Arc<Connection>>>,
    cache: RwLock<MetadataCache>,
}

impl Cluster {
    /// Connects to a bootstrap broker and loads the broker list.
    pub async fn connect(config: ClusterConfig) -> Result<Cluster> {
        if config.bootstrap.is_empty() {
            return Err(Error::invalid("no bootstrap servers given").cluster(&config.name));
        }
        let cluster = Cluster {
            config,
            conns: std::sync::Mutex::new(HashMap::new()),
            bootstrap: tokio::sync::Mutex::new(None),
            cache: RwLock::new(MetadataCache::default()),
        };
        cluster.metadata(Some(&[])).await?;
        Ok(cluster)
    }

    /// The name given in the configuration.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// strait's control topic on this cluster (`control_topic`).
    pub fn control_topic(&self) -> &str {
        &self.config.internal_topics.control
    }

    /// strait's progress topic on this cluster (`progress_topic`).
    pub fn progress_topic(&self) -> &str {
        &self.config.internal_topics.progress
    }

    /// The cluster id, once metadata was loaded.
    pub fn cluster_id(&self) -> Option<String> {
        self.read_cache().cluster_id.clone()
    }

    fn read_cache(&self) -> std::sync::RwLockReadGuard<'_, MetadataCache> {
        self.cache.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_cache(&self) -> std::sync::RwLockWriteGuard<'_, MetadataCache> {
        self.cache.write().unwrap_or_else(|e| e.into_inner())
    }

    /// `e` naming this cluster.
    pub(crate) fn ctx(&self, e: Error) -> Error {
        e.cluster(&self.config.name)
    }

    /// The result of a one-resource admin answer; an error naming `api` when it holds none.
    pub(crate) fn only<T>(&self, api: &str, result: Option<T>) -> Result<T> {
        result.ok_or_else(|| {
            self.ctx(Error::new(ErrorKind::Protocol(format!(
                "{api} answer is empty"
            ))))
        })
    }

    /// An admin answer's error code for `topic`: an error naming this cluster, the topic and
    /// the broker's message, unless NONE.
    pub(crate) fn topic_outcome(
        &self,
        code: i16,
        message: Option<&StrBytes>,
        topic: &str,
    ) -> Result<()> {
        if code == error_code::NONE {
            return Ok(());
        }
        let message = message.map(|m| m.to_string());
        Err(self.ctx(Error::broker(code, message).topic(topic)))
    }

    /// A connection to any broker: the bootstrap connection, or a new one to the first
    /// reachable bootstrap or known broker.
    pub async fn any_connection(&self) -> Result<Arc<Connection>> {
        let mut guard = self.bootstrap.lock().await;
        if let Some(c) = guard.as_ref() {
            if !c.is_broken() {
                return Ok(c.clone());
            }
        }
        let mut candidates = self.config.bootstrap.clone();
        candidates.extend(
            self.read_cache()
                .brokers
                .values()
                .map(|b| format!("{}:{}", b.host, b.port)),
        );
        let mut last = None;
        for addr in candidates {
            match Connection::connect(&addr, &self.config.connection).await {
                Ok(c) => {
                    let c = Arc::new(c);
                    *guard = Some(c.clone());
                    return Ok(c);
                }
                Err(e) => {
                    tracing::debug!(cluster = %self.config.name, %addr, error = %e, "bootstrap failed");
                    last = Some(e.broker_addr(&addr));
                }
            }
        }
        Err(self.ctx(last.unwrap_or_else(|| Error::invalid("no broker to connect to"))))
    }

    /// A new connection to broker `node_id` of its own, outside the pool.
    pub async fn dedicated_connection(&self, node_id: i32) -> Result<Connection> {
        let addr = match self.cached_addr(node_id) {
            Some(a) => a,
            None => self.fresh_addr(node_id).await?,
        };
        self.open(node_id, &addr).await
    }

    /// The pooled control connection to broker `node_id`, connecting if needed.
    pub async fn connection(&self, node_id: i32) -> Result<Arc<Connection>> {
        self.pooled(node_id, Lane::Control).await
    }

    /// The pooled connection of `lane` to broker `node_id`, connecting if needed. Only
    /// requests waiting for this very connection wait while it connects.
    pub async fn pooled(&self, node_id: i32, lane: Lane) -> Result<Arc<Connection>> {
        let slot = {
            let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
            conns.entry((node_id, lane)).or_default().clone()
        };
        let mut slot = slot.lock().await;
        if let Some(c) = slot.as_ref() {
            if !c.is_broken() {
                return Ok(c.clone());
            }
        }
        let addr = match self.cached_addr(node_id) {
            Some(a) => a,
            None => self.fresh_addr(node_id).await?,
        };
        let c = Arc::new(self.open(node_id, &addr).await?);
        *slot = Some(c.clone());
        Ok(c)
    }

    /// `host:port` of broker `node_id` from the metadata cache.
    fn cached_addr(&self, node_id: i32) -> Option<String> {
        self.read_cache()
            .brokers
            .get(&node_id)
            .map(|b| format!("{}:{}", b.host, b.port))
    }

    /// `host:port` of broker `node_id` after refreshing the broker list.
    async fn fresh_addr(&self, node_id: i32) -> Result<String> {
        self.metadata(Some(&[])).await?;
        self.cached_addr(node_id).ok_or_else(|| {
            self.ctx(Error::invalid(format!(
                "broker {node_id} is not in metadata"
            )))
        })
    }

    async fn open(&self, node_id: i32, addr: &str) -> Result<Connection> {
        Connection::connect(addr, &self.config.connection)
            .await
            .map_err(|e| self.ctx(e.broker_addr(&format!("{node_id} ({addr})"))))
    }

    async fn route(&self, route: Route) -> Result<Arc<Connection>> {
        match route {
            Route::Any => self.any_connection().await,
            Route::Node(n) => self.connection(n).await,
        }
    }

    /// Sends a request encoded and decoded by `kafka-protocol` at the negotiated version. Use
    /// for control-plane APIs; the data path has its own framing.
    pub async fn send<R: Request>(&self, route: Route, req: &R) -> Result<(i16, R::Response)> {
        let conn = self.route(route).await?;
        self.send_on(&conn, req, self.config.connection.request_timeout)
            .await
    }

    /// The version of `R` both sides of `conn` support.
    pub fn version_on<R: Request>(&self, conn: &Connection) -> Result<i16> {
        let key = ApiKey::try_from(R::KEY)
            .map_err(|_| Error::invalid(format!("unknown API key {}", R::KEY)))?;
        conn.version(key).map_err(|e| self.ctx(e))
    }

    /// [`send`](Self::send) on a given connection (for example a dedicated one, for requests
    /// that block at the broker such as JoinGroup), waiting up to `timeout`.
    pub async fn send_on<R: Request>(
        &self,
        conn: &Connection,
        req: &R,
        timeout: Duration,
    ) -> Result<(i16, R::Response)> {
        let key = ApiKey::try_from(R::KEY)
            .map_err(|_| Error::invalid(format!("unknown API key {}", R::KEY)))?;
        let version = conn.version(key).map_err(|e| self.ctx(e))?;
        let meta = conn.meta(key, version);
        let id = meta.correlation_id;
        let frame = encode_request(&meta, req).map_err(Error::invalid)?;
        let started = Instant::now();
        let bytes = conn
            .send_frame(id, frame, timeout)
            .await
            .map_err(|e| self.ctx(e))?;
        self.observe_request(key, started);
        let mut body = response_body(bytes, key, version).map_err(|e| self.ctx(e.into()))?;
        let mut rest: Bytes = body_rest(&mut body);
        let resp = R::Response::decode(&mut rest, version).map_err(|e| {
            self.ctx(Error::new(ErrorKind::Protocol(format!(
                "cannot decode {key:?} v{version} response: {e}"
            ))))
            .broker_addr(conn.addr())
        })?;
        Ok((version, resp))
    }

    fn observe_request(&self, key: ApiKey, started: Instant) {
        if let Some(o) = &self.config.observer {
            o.request(&self.config.name, &format!("{key:?}"), started.elapsed());
        }
    }

    /// The version of `key` both sides support, as negotiated with any broker.
    pub async fn negotiated(&self, key: ApiKey) -> Result<i16> {
        self.any_connection()
            .await?
            .version(key)
            .map_err(|e| self.ctx(e))
    }

    /// Runs `op` until it succeeds, fails with a non-retriable error, or retries run out;
    /// refreshes metadata between attempts when the error calls for it.
    pub async fn retry<T, F, Fut>(&self, what: &str, mut op: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut backoff = self.config.retry_backoff;
        let mut attempt = 0;
        loop {
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retriable() && attempt < self.config.retries => {
                    attempt += 1;
                    if let Some(o) = &self.config.observer {
                        o.retry(&self.config.name, what);
                    }
                    tracing::debug!(cluster = %self.config.name, %what, attempt, error = %e, "retrying");
                    if e.code().is_none_or(error_code::needs_metadata_refresh) {
                        let _ = self.metadata(Some(&[])).await;
                        self.write_cache().topics.clear();
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(self.config.retry_backoff_max);
                }
                Err(e) => return Err(self.ctx(e)),
            }
        }
    }

    /// Fetches metadata for `topics` (`None` = all, `Some(&[])` = brokers only) and updates
    /// the cache. Never creates topics.
    pub async fn metadata(&self, topics: Option<&[String]>) -> Result<MetadataResponse> {
        let conn = self.any_connection().await?;
        let version = conn.version(ApiKey::Metadata).map_err(|e| self.ctx(e))?;
        let meta = conn.meta(ApiKey::Metadata, version);
        let id = meta.correlation_id;
        let frame = encode_request(&meta, &metadata::request(topics)).map_err(Error::invalid)?;
        let started = Instant::now();
        let bytes = conn
            .send_frame(id, frame, self.config.connection.request_timeout)
            .await
            .map_err(|e| self.ctx(e))?;
        self.observe_request(ApiKey::Metadata, started);
        let body =
            response_body(bytes, ApiKey::Metadata, version).map_err(|e| self.ctx(e.into()))?;
        let resp = metadata::decode_response(body, version)
            .map_err(|e| self.ctx(Error::from(e).broker_addr(conn.addr())))?;
        let mut cache = self.write_cache();
        cache.cluster_id = resp.cluster_id.clone();
        cache.controller_id = resp.controller_id;
        if !resp.brokers.is_empty() {
            cache.brokers = resp
                .brokers
                .iter()
                .map(|b| (b.node_id, b.clone()))
                .collect();
        }
        for t in &resp.topics {
            if t.error_code == error_code::NONE {
                // In partition order, so a leader lookup finds partition `i` at index `i`
                // (brokers list them in any order; a scan per lookup made planning a Fetch
                // for 1 000 partitions quadratic).
                let mut sorted = t.clone();
                sorted.partitions.sort_by_key(|p| p.partition);
                cache.topics.insert(t.name.clone(), sorted);
            } else {
                cache.topics.remove(&t.name);
            }
        }
        Ok(resp)
    }

    /// Where topic admin requests go: the controller, when metadata named one.
    pub(crate) fn controller_route(&self) -> Route {
        let controller = self.read_cache().controller_id;
        if controller >= 0 {
            Route::Node(controller)
        } else {
            Route::Any
        }
    }

    /// The brokers from the last metadata.
    pub fn brokers(&self) -> Vec<BrokerMeta> {
        let mut v: Vec<_> = self.read_cache().brokers.values().cloned().collect();
        v.sort_by_key(|b| b.node_id);
        v
    }

    /// The id of `topic` as the cached metadata has it (`None`: not cached, or the broker
    /// gives no topic ids). Never asks the broker.
    pub fn cached_topic_id(&self, topic: &str) -> Option<[u8; 16]> {
        self.read_cache()
            .topics
            .get(topic)
            .map(|t| t.topic_id)
            .filter(|id| *id != [0; 16])
    }

    /// A topic's metadata, from the cache or freshly loaded. `Ok(None)` when it does not exist.
    pub async fn topic(&self, topic: &str) -> Result<Option<TopicMeta>> {
        if let Some(t) = self.read_cache().topics.get(topic) {
            return Ok(Some(t.clone()));
        }
        let resp = self.metadata(Some(&[topic.to_string()])).await?;
        match resp.topics.into_iter().find(|t| t.name == topic) {
            Some(t) if t.error_code == error_code::NONE => Ok(Some(t)),
            Some(t) if t.error_code == error_code::UNKNOWN_TOPIC_OR_PARTITION => Ok(None),
            Some(t) => Err(self.ctx(Error::broker(t.error_code, None).topic(topic))),
            None => Ok(None),
        }
    }

    /// The leader node id and leader epoch of a partition. Answered from the metadata cache
    /// without copying it; metadata is loaded only when the topic is not cached.
    pub async fn leader(&self, topic: &str, partition: i32) -> Result<(i32, i32)> {
        let cached = {
            let cache = self.read_cache();
            cache
                .topics
                .get(topic)
                .map(|t| find_partition(&t.partitions, partition))
        };
        let found = match cached {
            Some(found) => found,
            None => self
                .topic(topic)
                .await?
                .and_then(|t| find_partition(&t.partitions, partition)),
        };
        let Some((leader, epoch)) = found else {
            return Err(self.ctx(
                Error::broker(error_code::UNKNOWN_TOPIC_OR_PARTITION, None)
                    .partition(topic, partition),
            ));
        };
        if leader < 0 {
            self.invalidate(topic);
            return Err(self.ctx(
                Error::broker(error_code::LEADER_NOT_AVAILABLE, None).partition(topic, partition),
            ));
        }
        Ok((leader, epoch))
    }

    /// The leader node id and leader epoch of a partition from the metadata cache, without
    /// asking any broker (`None`: not cached, or no leader now).
    pub fn cached_leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        let cache = self.read_cache();
        let found = find_partition(&cache.topics.get(topic)?.partitions, partition)?;
        (found.0 >= 0).then_some(found)
    }

    /// The id of the open data-path connection to broker `node` (`None`: none is open, or it
    /// is being opened). Never connects and never waits.
    pub fn open_data_connection(&self, node: i32) -> Option<u64> {
        self.open_data(node).ok().map(|c| c.id())
    }

    /// The open data-lane connection to broker `node`, without connecting and without
    /// waiting: an error if there is none, it is broken, or it is being made right now. The
    /// data pump writes its requests only on such connections, so it never waits on a
    /// connect (its lookups make connections beside it).
    pub fn open_data(&self, node: i32) -> Result<Arc<Connection>> {
        let not_open = || {
            self.ctx(Error::new(ErrorKind::Io(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                format!("no open data connection to broker {node}"),
            ))))
        };
        let slot = {
            let conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
            conns.get(&(node, Lane::Data)).cloned()
        };
        let slot = slot.ok_or_else(not_open)?;
        let guard = slot.try_lock().map_err(|_| not_open())?;
        guard
            .as_ref()
            .filter(|c| !c.is_broken())
            .cloned()
            .ok_or_else(not_open)
    }

    /// Forgets cached leadership of every topic with a partition led by broker `node` (it
    /// cannot be reached: the leadership has probably moved).
    pub fn forget_leaders_on(&self, node: i32) {
        self.write_cache()
            .topics
            .retain(|_, t| !t.partitions.iter().any(|p| p.leader == node));
    }

    /// Forgets cached leadership of `topic` (after NOT_LEADER and the like).
    pub fn invalidate(&self, topic: &str) {
        self.write_cache().topics.remove(topic);
    }

    /// ApiVersions as negotiated with any broker.
    pub async fn api_versions(&self) -> Result<ApiVersionsResponse> {
        Ok(self.any_connection().await?.api_versions().clone())
    }

    /// Offsets for a timestamp ([`EARLIEST`], [`LATEST`] or a time in ms) for each partition,
    /// in the order asked: one ListOffsets request per leader, the whole set retried.
    pub async fn list_offsets(
        &self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> Result<Vec<(i32, i64)>> {
        self.retry("list offsets", || {
            self.list_offsets_once(topic, partitions, timestamp)
        })
        .await
    }

    /// [`Cluster::list_offsets`] tried once (no retries): for polling, where a failed poll is
    /// asked again anyway. A partition error, or an answer that lacks a partition asked for,
    /// fails the call; partitions not asked for are ignored.
    pub async fn list_offsets_once(
        &self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> Result<Vec<(i32, i64)>> {
        let mut by_leader: HashMap<i32, Vec<ListOffsetsPartition>> = HashMap::new();
        let mut found: HashMap<i32, Option<i64>> = HashMap::with_capacity(partitions.len());
        for &p in partitions {
            if found.insert(p, None).is_some() {
                continue; // asked twice: one request, answered for both
            }
            let (leader, epoch) = self.leader(topic, p).await?;
            let mut lp = ListOffsetsPartition::default();
            lp.partition_index = p;
            lp.current_leader_epoch = epoch;
            lp.timestamp = timestamp;
            by_leader.entry(leader).or_default().push(lp);
        }
        for (leader, parts) in by_leader {
            let mut lt = ListOffsetsTopic::default();
            lt.name = TopicName(StrBytes::from_string(topic.to_string()));
            lt.partitions = parts;
            let mut req = ListOffsetsRequest::default();
            req.replica_id = BrokerId(-1);
            req.topics = vec![lt];
            let (_, resp) = self.send(Route::Node(leader), &req).await?;
            let answered = resp
                .topics
                .iter()
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| t.partitions.iter());
            for part in answered {
                let Some(slot) = found.get_mut(&part.partition_index) else {
                    continue; // not asked for
                };
                if part.error_code != error_code::NONE {
                    if error_code::needs_metadata_refresh(part.error_code) {
                        self.invalidate(topic);
                    }
                    return Err(self.ctx(
                        Error::broker(part.error_code, None).partition(topic, part.partition_index),
                    ));
                }
                *slot = Some(part.offset);
            }
        }
        partitions
            .iter()
            .map(|&p| match found.get(&p) {
                Some(&Some(offset)) => Ok((p, offset)),
                _ => Err(self.ctx(
                    Error::new(ErrorKind::Protocol(
                        "ListOffsets answer lacks the partition".into(),
                    ))
                    .partition(topic, p),
                )),
            })
            .collect()
    }

    /// The id of the data-path connection to broker `node` that the next
    /// [`Cluster::produce_start`] would use.
    pub async fn connection_id(&self, node: i32) -> Result<u64> {
        Ok(self.pooled(node, Lane::Data).await?.id())
    }

    /// A producer id and epoch for idempotent writes (InitProducerId without a transactional id).
    pub async fn init_producer_id(&self) -> Result<(i64, i16)> {
        self.retry("init producer id", || async move {
            let mut req = InitProducerIdRequest::default();
            req.transactional_id = None;
            req.transaction_timeout_ms = -1;
            req.producer_id = kafka_protocol::messages::ProducerId(-1);
            req.producer_epoch = -1;
            let (_, resp) = self.send(Route::Any, &req).await?;
            if resp.error_code != error_code::NONE {
                return Err(Error::broker(resp.error_code, None));
            }
            Ok((resp.producer_id.0, resp.producer_epoch))
        })
        .await
    }

    /// Creates a topic. `Ok(false)` when it already existed.
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(String, String)],
    ) -> Result<bool> {
        let mut t = CreatableTopic::default();
        t.name = TopicName(StrBytes::from_string(name.to_string()));
        t.num_partitions = partitions;
        t.replication_factor = replication_factor;
        t.configs = configs
            .iter()
            .map(|(k, v)| {
                let mut c = CreatableTopicConfig::default();
                c.name = StrBytes::from_string(k.clone());
                c.value = Some(StrBytes::from_string(v.clone()));
                c
            })
            .collect();
        let mut req = CreateTopicsRequest::default();
        req.topics = vec![t];
        req.timeout_ms = 30_000;
        let (_, resp) = self.send(self.controller_route(), &req).await?;
        let r = resp.topics.first().ok_or_else(|| {
            self.ctx(Error::new(ErrorKind::Protocol(
                "CreateTopics answer is empty".into(),
            )))
        })?;
        match r.error_code {
            error_code::NONE => {
                self.invalidate(name);
                Ok(true)
            }
            error_code::TOPIC_ALREADY_EXISTS => Ok(false),
            code => Err(self.ctx(
                Error::broker(code, r.error_message.as_ref().map(|m| m.to_string())).topic(name),
            )),
        }
    }

    /// Deletes topic `name` (DeleteTopics, by name; from v6 by name in `topics`). `Ok(false)`
    /// when there is no such topic. Kafka drops the topic's committed consumer offsets with it.
    pub async fn delete_topic(&self, name: &str) -> Result<bool> {
        use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
        let conn = self.route(self.controller_route()).await?;
        let version = self.version_on::<kafka_protocol::messages::DeleteTopicsRequest>(&conn)?;
        let mut req = kafka_protocol::messages::DeleteTopicsRequest::default();
        let topic = TopicName(StrBytes::from_string(name.to_string()));
        if version >= 6 {
            let mut t = DeleteTopicState::default();
            t.name = Some(topic);
            req.topics = vec![t];
        } else {
            req.topic_names = vec![topic];
        }
        req.timeout_ms = 30_000;
        let (_, resp) = self
            .send_on(&conn, &req, self.config.connection.request_timeout)
            .await?;
        let r = self.only("DeleteTopics", resp.responses.first())?;
        self.invalidate(name);
        match r.error_code {
            error_code::UNKNOWN_TOPIC_OR_PARTITION => Ok(false),
            code => self
                .topic_outcome(code, r.error_message.as_ref(), name)
                .map(|()| true),
        }
    }

    /// Raises a topic's partition count to `count` (CreatePartitions). Errors with
    /// UnsupportedVersion when the cluster does not offer the API.
    pub async fn create_partitions(&self, topic: &str, count: i32) -> Result<()> {
        let mut t =
            kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic::default();
        t.name = TopicName(StrBytes::from_string(topic.to_string()));
        t.count = count;
        t.assignments = None;
        let mut req = kafka_protocol::messages::CreatePartitionsRequest::default();
        req.topics = vec![t];
        req.timeout_ms = 30_000;
        let (_, resp) = self.send(self.controller_route(), &req).await?;
        let r = self.only("CreatePartitions", resp.results.first())?;
        self.topic_outcome(r.error_code, r.error_message.as_ref(), topic)?;
        self.invalidate(topic);
        Ok(())
    }

    /// The configs of a topic as (name, value) pairs.
    pub async fn describe_topic_configs(
        &self,
        topic: &str,
    ) -> Result<Vec<(String, Option<String>)>> {
        let (_, configs) = self.describe_topic(topic).await?;
        Ok(configs
            .iter()
            .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
            .collect())
    }

    /// A topic's configs as (name, value, set on the topic itself) triples: DescribeConfigs
    /// lists the broker's defaults too, which are not the topic's own settings.
    pub async fn describe_topic_overrides(
        &self,
        topic: &str,
    ) -> Result<Vec<(String, String, bool)>> {
        let (version, configs) = self.describe_topic(topic).await?;
        // `config_source` (v1+): 1 is the topic's own setting; 0 (unknown) comes from brokers
        // that do not say, whose values are all taken as the old versions of strait did.
        const UNKNOWN: i8 = 0;
        const TOPIC_CONFIG: i8 = 1;
        Ok(configs
            .iter()
            .filter_map(|c| {
                let own = version < 1 || matches!(c.config_source, UNKNOWN | TOPIC_CONFIG);
                Some((c.name.to_string(), c.value.as_ref()?.to_string(), own))
            })
            .collect())
    }

    /// DescribeConfigs of one topic: the version used and the configs answered.
    async fn describe_topic(
        &self,
        topic: &str,
    ) -> Result<(
        i16,
        Vec<kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult>,
    )> {
        let mut res = DescribeConfigsResource::default();
        res.resource_type = 2; // TOPIC
        res.resource_name = StrBytes::from_string(topic.to_string());
        res.configuration_keys = None;
        let mut req = DescribeConfigsRequest::default();
        req.resources = vec![res];
        let (version, resp) = self.send(Route::Any, &req).await?;
        let r = self.only("DescribeConfigs", resp.results.into_iter().next())?;
        self.topic_outcome(r.error_code, r.error_message.as_ref(), topic)?;
        Ok((version, r.configs))
    }

    /// The coordinator node of a consumer group.
    pub async fn group_coordinator(&self, group: &str) -> Result<i32> {
        self.retry("find coordinator", || async move {
            let version = self.negotiated(ApiKey::FindCoordinator).await?;
            let mut req = FindCoordinatorRequest::default();
            req.key_type = 0;
            if version >= 4 {
                req.coordinator_keys = vec![StrBytes::from_string(group.to_string())];
            } else {
                req.key = StrBytes::from_string(group.to_string());
            }
            let (_, resp) = self.send(Route::Any, &req).await?;
            let (code, node) = match resp.coordinators.first() {
                Some(c) => (c.error_code, c.node_id.0),
                None => (resp.error_code, resp.node_id.0),
            };
            if code != error_code::NONE {
                return Err(Error::broker(code, None));
            }
            Ok(node)
        })
        .await
    }

    /// Committed offsets of a group (all its partitions).
    pub async fn offset_fetch(&self, group: &str) -> Result<OffsetFetchResponse> {
        let node = self.group_coordinator(group).await?;
        let version = self.negotiated(ApiKey::OffsetFetch).await?;
        let mut req = OffsetFetchRequest::default();
        if version >= 8 {
            let mut g =
                kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup::default();
            g.group_id = GroupId(StrBytes::from_string(group.to_string()));
            g.topics = None;
            req.groups = vec![g];
        } else {
            req.group_id = GroupId(StrBytes::from_string(group.to_string()));
            req.topics = None;
        }
        Ok(self.send(Route::Node(node), &req).await?.1)
    }

    /// Commits offsets for a group from outside it (generation -1, no member id), as
    /// `kafka-consumer-groups --reset-offsets` does.
    pub async fn offset_commit(&self, group: &str, req: OffsetCommitRequest) -> Result<()> {
        let node = self.group_coordinator(group).await?;
        let (_, resp) = self.send(Route::Node(node), &req).await?;
        for t in &resp.topics {
            for p in &t.partitions {
                if p.error_code != error_code::NONE {
                    return Err(self.ctx(
                        Error::broker(p.error_code, None).partition(&t.name.0, p.partition_index),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Group ids known to every broker.
    pub async fn list_groups(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for b in self.brokers() {
            let (_, resp) = self
                .send(Route::Node(b.node_id), &ListGroupsRequest::default())
                .await?;
            if resp.error_code != error_code::NONE {
                return Err(self.ctx(Error::broker(resp.error_code, None)));
            }
            out.extend(resp.groups.iter().map(|g| g.group_id.0.to_string()));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Describes one group (state and members).
    pub async fn describe_group(&self, group: &str) -> Result<DescribeGroupsResponse> {
        let node = self.group_coordinator(group).await?;
        let mut req = DescribeGroupsRequest::default();
        req.groups = vec![GroupId(StrBytes::from_string(group.to_string()))];
        Ok(self.send(Route::Node(node), &req).await?.1)
    }
}

/// Leader and leader epoch of `partition`: at its index when the broker listed partitions in
/// order (the usual case, O(1) per lookup even with thousands of partitions), else by search.
fn find_partition(
    partitions: &[crate::protocol::metadata::PartitionMeta],
    partition: i32,
) -> Option<(i32, i32)> {
    let at = usize::try_from(partition)
        .ok()
        .and_then(|i| partitions.get(i))
        .filter(|p| p.partition == partition);
    at.or_else(|| partitions.iter().find(|p| p.partition == partition))
        .map(|p| (p.leader, p.leader_epoch))
}

fn body_rest(r: &mut crate::protocol::wire::Reader) -> Bytes {
    r.rest()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::metadata::PartitionMeta;

    fn part(partition: i32, leader: i32) -> PartitionMeta {
        PartitionMeta {
            error_code: 0,
            partition,
            leader,
            leader_epoch: partition * 10,
            replicas: vec![leader],
            isr: vec![leader],
        }
    }

    #[test]
    fn finds_partitions_in_order_or_not() {
        let ordered: Vec<_> = (0..5).map(|p| part(p, 100 + p)).collect();
        assert_eq!(find_partition(&ordered, 3), Some((103, 30)));
        assert_eq!(find_partition(&ordered, 5), None);
        assert_eq!(find_partition(&ordered, -1), None);
        let shuffled = vec![part(2, 7), part(0, 5), part(1, 6)];
        assert_eq!(find_partition(&shuffled, 0), Some((5, 0)));
        assert_eq!(find_partition(&shuffled, 2), Some((7, 20)));
        assert_eq!(find_partition(&shuffled, 3), None);
    }
}
