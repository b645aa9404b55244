//! The data lane's requests of a cluster: Fetch (one-off, in a fetch session, or started and
//! finished later) and Produce (of planned batches, or started and finished later), and the
//! requests in flight they return.

use super::*;

impl Cluster {
    /// One Fetch request to broker `node`, by topic id when every partition's is known and the
    /// broker names topics by id (v13+). Partition errors are returned per partition.
    pub async fn fetch(
        &self,
        node: i32,
        parts: &[FetchPartitionSpec],
        limits: &FetchLimits,
    ) -> Result<FetchResponse> {
        let (resp, addr) = self.fetch_with(node, parts, limits).await?;
        self.fetch_error(resp, &addr)
    }

    /// One Fetch request to broker `node` within a fetch session (KIP-227) with it: only the
    /// partitions of `parts` that are new or changed since the last request go out, and those
    /// no longer in `parts` are dropped from the session. Brokers without sessions get full
    /// requests. The response lists only partitions with data or news.
    pub async fn fetch_in_session(
        &self,
        node: i32,
        session: &mut FetchSession,
        parts: &[FetchPartitionSpec],
        limits: &FetchLimits,
    ) -> Result<FetchResponse> {
        self.pooled(node, Lane::Data).await?; // opened if it is not
        self.fetch_start(node, session, parts, limits)
            .await?
            .finish(session)
            .await
    }

    /// Writes the Fetch request of [`Cluster::fetch_in_session`] and returns at once, so the
    /// caller can do other work while the broker gathers the data. Only on an open data
    /// connection ([`Cluster::open_data`]; [`Cluster::connection_id`] opens one): it never
    /// waits on a connect.
    pub async fn fetch_start(
        &self,
        node: i32,
        session: &mut FetchSession,
        parts: &[FetchPartitionSpec],
        limits: &FetchLimits,
    ) -> Result<PendingFetch> {
        let started = async {
            let conn = self.open_data(node)?;
            let negotiated = conn.version(ApiKey::Fetch).map_err(|e| self.ctx(e))?;
            let version = fetch::version_for(negotiated, parts);
            let meta = conn.meta(ApiKey::Fetch, version);
            let id = meta.correlation_id;
            let req = session.request(parts, limits, version);
            let frame = encode_request(&meta, &req).map_err(Error::invalid)?;
            let response = conn.start(id, frame).await.map_err(|e| self.ctx(e))?;
            Ok(PendingFetch {
                response,
                version,
                timeout: self.config.connection.request_timeout
                    + Duration::from_millis(limits.max_wait_ms.max(0) as u64),
                deadline: Instant::now()
                    + self.config.connection.request_timeout
                    + Duration::from_millis(limits.max_wait_ms.max(0) as u64),
                cluster: self.config.name.clone(),
                broker: conn.addr().to_string(),
            })
        }
        .await;
        if started.is_err() {
            session.on_failure();
        }
        started
    }

    /// Sends a sessionless Fetch request for `parts` at the version [`fetch::version_for`]
    /// picks; returns the decoded response, named (top-level error not checked), and the
    /// broker's address.
    async fn fetch_with(
        &self,
        node: i32,
        parts: &[FetchPartitionSpec],
        limits: &FetchLimits,
    ) -> Result<(FetchResponse, String)> {
        let conn = self.connection(node).await?;
        let negotiated = conn.version(ApiKey::Fetch).map_err(|e| self.ctx(e))?;
        let version = fetch::version_for(negotiated, parts);
        let meta = conn.meta(ApiKey::Fetch, version);
        let id = meta.correlation_id;
        let req = fetch::request(parts, limits);
        let frame = encode_request(&meta, &req).map_err(Error::invalid)?;
        let timeout = self.config.connection.request_timeout
            + Duration::from_millis(limits.max_wait_ms.max(0) as u64);
        let started = Instant::now();
        let bytes = conn
            .send_frame(id, frame, timeout)
            .await
            .map_err(|e| self.ctx(e))?;
        self.observe_request(ApiKey::Fetch, started);
        let body = response_body(bytes, ApiKey::Fetch, version).map_err(|e| self.ctx(e.into()))?;
        let mut resp = fetch::decode_response(body, version)
            .map_err(|e| self.ctx(Error::from(e).broker_addr(conn.addr())))?;
        if version >= fetch::MIN_TOPIC_ID_VERSION {
            fetch::name_topics(&mut resp, &fetch::names_of(parts));
        }
        Ok((resp, conn.addr().to_string()))
    }

    fn fetch_error(&self, resp: FetchResponse, addr: &str) -> Result<FetchResponse> {
        if resp.error_code != error_code::NONE {
            return Err(self.ctx(Error::broker(resp.error_code, None).broker_addr(addr)));
        }
        Ok(resp)
    }

    /// One Produce request to broker `node`, framed without copying record bytes. Partition
    /// errors are returned per partition.
    pub async fn produce(
        &self,
        node: i32,
        settings: &ProduceSettings<'_>,
        topics: &[ProduceTopic],
    ) -> Result<Vec<ProducedPartition>> {
        let conn = self.connection(node).await?;
        let version = conn.version(ApiKey::Produce).map_err(|e| self.ctx(e))?;
        let meta = conn.meta(ApiKey::Produce, version);
        let id = meta.correlation_id;
        let frame = produce::encode_request(&meta, settings, topics);
        let timeout = self.config.connection.request_timeout
            + Duration::from_millis(settings.timeout_ms.max(0) as u64);
        let started = Instant::now();
        let bytes = conn
            .send_frame(id, frame, timeout)
            .await
            .map_err(|e| self.ctx(e))?;
        self.observe_request(ApiKey::Produce, started);
        let body =
            response_body(bytes, ApiKey::Produce, version).map_err(|e| self.ctx(e.into()))?;
        produce::decode_response(body, version)
            .map_err(|e| self.ctx(Error::from(e).broker_addr(conn.addr())))
    }

    /// Produces one batch to a partition's leader with acks=all, in one attempt (wrap it in
    /// [`Cluster::retry`] to retry). A duplicate of a batch already written counts as written.
    /// Returns the target base offset (-1 when the broker did not say).
    pub async fn produce_batch(
        &self,
        topic: &str,
        partition: i32,
        batch: &RewrittenBatch,
    ) -> Result<i64> {
        let (leader, _) = self.leader(topic, partition).await?;
        let topics = [ProduceTopic {
            name: topic.to_string(),
            partitions: vec![ProducePartition {
                partition,
                batch: batch.clone(),
            }],
        }];
        let settings = ProduceSettings {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
        };
        let p = self
            .produce(leader, &settings, &topics)
            .await?
            .into_iter()
            .find(|p| p.topic == topic && p.partition == partition)
            .ok_or_else(|| {
                self.ctx(
                    Error::new(ErrorKind::Protocol(
                        "Produce answer lacks the partition".into(),
                    ))
                    .partition(topic, partition),
                )
            })?;
        match p.error_code {
            error_code::NONE | error_code::DUPLICATE_SEQUENCE_NUMBER => Ok(p.base_offset),
            code => {
                if error_code::needs_metadata_refresh(code) {
                    self.invalidate(topic);
                }
                Err(self.ctx(Error::broker(code, p.error_message).partition(topic, partition)))
            }
        }
    }

    /// Writes one Produce request to broker `node` and returns without waiting for the answer,
    /// so several requests can be in flight; requests started one after another reach the
    /// broker in that order. Only on an open data connection, as [`Cluster::fetch_start`].
    pub async fn produce_start(
        &self,
        node: i32,
        settings: &ProduceSettings<'_>,
        topics: &[ProduceTopic],
    ) -> Result<PendingProduce> {
        let conn = self.open_data(node)?;
        let version = conn.version(ApiKey::Produce).map_err(|e| self.ctx(e))?;
        let meta = conn.meta(ApiKey::Produce, version);
        let id = meta.correlation_id;
        let frame = produce::encode_request(&meta, settings, topics);
        let started = Instant::now();
        let response = conn.start(id, frame).await.map_err(|e| self.ctx(e))?;
        Ok(PendingProduce {
            connection: conn.id(),
            started,
            observer: self.config.observer.clone(),
            response,
            version,
            timeout: self.config.connection.request_timeout
                + Duration::from_millis(settings.timeout_ms.max(0) as u64),
            deadline: Instant::now()
                + self.config.connection.request_timeout
                + Duration::from_millis(settings.timeout_ms.max(0) as u64),
            cluster: self.config.name.clone(),
            broker: conn.addr().to_string(),
        })
    }
}

/// A Fetch request in flight (see [`Cluster::fetch_start`]).
#[derive(Debug)]
pub struct PendingFetch {
    response: crate::client::connection::PendingResponse,
    version: i16,
    /// The request's whole timeout (reported when it runs out).
    timeout: Duration,
    deadline: Instant,
    cluster: String,
    broker: String,
}

impl PendingFetch {
    /// Returns once the answer has arrived or the request timed out; cancel-safe (see
    /// [`PendingResponse::ready`](crate::client::connection::PendingResponse::ready)).
    pub async fn ready(&mut self) {
        let _ = tokio::time::timeout_at(self.deadline.into(), self.response.ready()).await;
    }

    /// Waits for the broker's answer and brings `session` (the one the request was built with)
    /// up to date. Partition errors are returned per partition.
    pub async fn finish(self, session: &mut FetchSession) -> Result<FetchResponse> {
        let ctx = |e: Error| e.cluster(&self.cluster).broker_addr(&self.broker);
        let decoded = async {
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            let bytes = self
                .response
                .wait_reporting(remaining, self.timeout)
                .await
                .map_err(|e| e.cluster(&self.cluster))?;
            let body = response_body(bytes, ApiKey::Fetch, self.version)
                .map_err(|e| ctx(Error::from(e)))?;
            let mut resp =
                fetch::decode_response(body, self.version).map_err(|e| ctx(Error::from(e)))?;
            if self.version >= fetch::MIN_TOPIC_ID_VERSION {
                let unknown = session.name_topics(&mut resp);
                if unknown > 0 {
                    tracing::debug!(cluster = %self.cluster, broker = %self.broker, "{unknown} partitions of topic ids never asked for in a Fetch answer; ignored");
                }
            }
            Ok::<_, Error>(resp)
        }
        .await;
        match &decoded {
            Ok(resp) => session.on_response(resp),
            Err(_) => session.on_failure(),
        }
        let resp = decoded?;
        if resp.error_code != error_code::NONE {
            return Err(ctx(Error::broker(resp.error_code, None)));
        }
        Ok(resp)
    }
}

/// A Produce request in flight.
#[derive(Debug)]
pub struct PendingProduce {
    connection: u64,
    started: Instant,
    observer: Option<Arc<Observer>>,
    response: crate::client::connection::PendingResponse,
    version: i16,
    /// The request's whole timeout (reported when it runs out).
    timeout: Duration,
    deadline: Instant,
    cluster: String,
    broker: String,
}

impl PendingProduce {
    /// Returns once the answer has arrived or the request timed out; cancel-safe (see
    /// [`PendingResponse::ready`](crate::client::connection::PendingResponse::ready)).
    pub async fn ready(&mut self) {
        let _ = tokio::time::timeout_at(self.deadline.into(), self.response.ready()).await;
    }

    /// The id of the connection carrying the request (see [`Connection::id`]).
    pub fn connection(&self) -> u64 {
        self.connection
    }

    /// Waits for the broker's answer: per-partition results.
    pub async fn finish(self) -> Result<Vec<ProducedPartition>> {
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        let bytes = self
            .response
            .wait_reporting(remaining, self.timeout)
            .await
            .map_err(|e| e.cluster(&self.cluster))?;
        if let Some(o) = &self.observer {
            o.request(&self.cluster, "Produce", self.started.elapsed());
        }
        let body = response_body(bytes, ApiKey::Produce, self.version).map_err(|e| {
            Error::from(e)
                .cluster(&self.cluster)
                .broker_addr(&self.broker)
        })?;
        produce::decode_response(body, self.version).map_err(|e| {
            Error::from(e)
                .cluster(&self.cluster)
                .broker_addr(&self.broker)
        })
    }
}
