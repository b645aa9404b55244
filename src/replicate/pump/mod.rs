//! The data pump of one flow: the task that owns the data path ([`super::path::DataPath`]),
//! the Fetch and Produce requests in flight and the fetch sessions, and only runs the loop:
//! write the requests the data path plans, wait for whichever answer comes first, feed it back.
//!
//! It awaits nothing but the writes and answers of its own requests and the control actor's
//! [`Command`]s. Lookups the data path needs (leaders, connections, log starts) run in tasks of
//! their own and come back as messages; everything else a flow does (topic refresh and
//! creation, take-up, mirror control, ownership, progress and offset-sync writes) is the
//! control actor's ([`super::flow`]), which talks to the pump by commands and hears from it by
//! [`PumpEvent`]s. So a slow OffsetFetch, a slow topic creation or a slow identity service
//! never delays an answer the data path is waiting for.

mod command;

pub use command::{Command, Flushed, PartView, PathView, PumpEvent};

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument;

use super::membership::Ownership;
use super::path::{
    DataPath, Event, FetchOrder, Missing, PartKey, PartState, PathSettings, RequestId, Topology,
    Traffic, MAX_IN_FLIGHT,
};
use super::positions::{PositionRequests, Positions};
use super::status::FlowStatus;
use crate::client::{Cluster, PendingFetch, PendingProduce, EARLIEST};
use crate::observe::{Observer, Side};
use crate::protocol::fetch_session::FetchSession;
use crate::protocol::produce::ProduceSettings;

mod partition_status;

/// How often the pump publishes its partitions' status (the REST API and page read it).
const STATUS_EVERY: Duration = Duration::from_millis(100);

/// Longest the loop waits without an answer or a command.
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// How long lookups pause after one failed (see [`look_up`]).
const LOOKUP_BACKOFF: Duration = Duration::from_millis(250);

/// What a lookup task beside the pump reports.
enum Lookup {
    /// Leaders and connections were looked up; `gone` when a target topic was not found.
    Done { gone: bool },
    /// The log start of a partition whose position was out of range.
    LogStart {
        key: PartKey,
        at: i64,
        start: std::result::Result<i64, String>,
    },
}

/// What ended the wait of a round.
enum Wake {
    Produce,
    Fetch(usize),
    Lookup(Lookup),
    Command(Command),
    Time,
}

/// The control actor's end of a pump: commands in, events out.
pub struct PumpHandle {
    commands: mpsc::UnboundedSender<Command>,
    /// What the pump reports.
    pub events: mpsc::UnboundedReceiver<PumpEvent>,
}

impl PumpHandle {
    /// Sends a command (lost if the pump has ended, which only a stop does).
    pub fn send(&self, c: Command) {
        let _ = self.commands.send(c);
    }

    /// A copy of the partitions; empty if the pump has ended.
    pub async fn snapshot(&self) -> PathView {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Snapshot(tx));
        rx.await.unwrap_or_default()
    }

    /// Drops `keys` once the Produce requests in flight are answered; their last state.
    pub async fn release(&self, keys: Vec<PartKey>) -> PathView {
        if keys.is_empty() {
            return PathView::default();
        }
        let (reply, rx) = oneshot::channel();
        self.send(Command::Release { keys, reply });
        rx.await.unwrap_or_default()
    }

    /// Stops the pump after the answers in flight; the last state and the traffic counters.
    pub async fn drain(&self) -> (PathView, Traffic) {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Drain(tx));
        rx.await.unwrap_or_default()
    }
}

/// The data pump (see the module documentation).
pub struct Pump {
    flow: String,
    source: Arc<Cluster>,
    target: Arc<Cluster>,
    path: DataPath,
    /// Produce requests written and not yet answered, oldest first.
    produces: VecDeque<(RequestId, PendingProduce)>,
    /// Fetch requests written and not yet answered (at most one per source leader).
    fetches: Vec<(RequestId, i32, PendingFetch)>,
    /// Fetch sessions (KIP-227) with the source brokers, by node id.
    fetch_sessions: HashMap<i32, FetchSession>,
    lookups: (
        mpsc::UnboundedSender<Lookup>,
        mpsc::UnboundedReceiver<Lookup>,
    ),
    looking_up: bool,
    commands: mpsc::UnboundedReceiver<Command>,
    events: mpsc::UnboundedSender<PumpEvent>,
    /// Scale-out: writing is allowed only while the membership lease is valid.
    ownership: Option<Arc<Ownership>>,
    /// The duties task's requests for the acknowledged positions.
    positions: Option<PositionRequests>,
    status: Arc<watch::Sender<FlowStatus>>,
    next_status: Instant,
    obs: Arc<Observer>,
    /// Partitions to drop once no Produce request is in flight.
    releases: Vec<(Vec<PartKey>, oneshot::Sender<PathView>)>,
    /// The stop asked for, once no Produce request is in flight.
    drain: Option<oneshot::Sender<(PathView, Traffic)>>,
}

/// What a pump starts with.
pub struct PumpParts {
    /// The data path's settings.
    pub settings: PathSettings,
    /// Source cluster.
    pub source: Arc<Cluster>,
    /// Target cluster.
    pub target: Arc<Cluster>,
    /// Scale-out ownership (the lease decides whether writing is allowed).
    pub ownership: Option<Arc<Ownership>>,
    /// The duties task's position requests.
    pub positions: Option<PositionRequests>,
    /// Where the partitions' status goes.
    pub status: Arc<watch::Sender<FlowStatus>>,
    /// Where metrics go.
    pub obs: Arc<Observer>,
}

/// The clients' caches as the data path's [`Topology`].
struct ClientView<'a> {
    source: &'a Cluster,
    target: &'a Cluster,
}

impl Topology for ClientView<'_> {
    fn source_leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        self.source.cached_leader(topic, partition)
    }
    fn source_topic_id(&self, topic: &str) -> Option<[u8; 16]> {
        self.source.cached_topic_id(topic)
    }
    fn source_connected(&self, node: i32) -> bool {
        self.source.open_data_connection(node).is_some()
    }
    fn target_leader(&self, topic: &str, partition: i32) -> Option<i32> {
        self.target.cached_leader(topic, partition).map(|l| l.0)
    }
    fn target_connection(&self, node: i32) -> Option<u64> {
        self.target.open_data_connection(node)
    }
}

/// The pump's ends of the channels to its control actor, until it starts.
pub struct PumpEnds {
    commands: mpsc::UnboundedReceiver<Command>,
    events: mpsc::UnboundedSender<PumpEvent>,
}

impl Pump {
    /// The channels between a control actor and the pump it will start: commands sent before
    /// the start are applied first.
    pub fn channels() -> (PumpHandle, PumpEnds) {
        let (commands_tx, commands) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        (
            PumpHandle {
                commands: commands_tx,
                events: events_rx,
            },
            PumpEnds { commands, events },
        )
    }

    /// Starts a pump as a task of its own, at the ends of [`Pump::channels`].
    pub fn spawn(parts: PumpParts, ends: PumpEnds) {
        let PumpEnds { commands, events } = ends;
        let pump = Pump {
            flow: parts.settings.flow.clone(),
            path: DataPath::new(parts.settings),
            source: parts.source,
            target: parts.target,
            produces: VecDeque::new(),
            fetches: Vec::new(),
            fetch_sessions: HashMap::new(),
            lookups: mpsc::unbounded_channel(),
            looking_up: false,
            commands,
            events,
            ownership: parts.ownership,
            positions: parts.positions,
            status: parts.status,
            next_status: Instant::now(),
            obs: parts.obs,
            releases: Vec::new(),
            drain: None,
        };
        // In the flow's span (flow, source, target), as its lookups are.
        tokio::spawn(pump.run().in_current_span());
    }

    /// The loop: until the control actor asks it to stop (or is gone).
    async fn run(mut self) {
        loop {
            let now = Instant::now();
            self.path
                .set_may_write(self.ownership.as_ref().is_none_or(|o| o.may_write()));
            self.path.handle_timeout(now);
            let draining = self.drain.is_some();
            if !draining {
                self.write_fetches(now).await;
            }
            if self.releases.is_empty() && !draining {
                self.write_produces().await;
            }
            self.look_up_missing();
            self.take_events();
            self.take_stats();
            self.answer_positions();
            if self.produces.is_empty() && !self.finish_releases() {
                return;
            }
            if now >= self.next_status {
                self.publish_status();
                self.next_status = now + STATUS_EVERY;
            }
            let wake = self
                .path
                .poll_timeout()
                .unwrap_or(now + IDLE_WAIT)
                .min(now + IDLE_WAIT)
                .min(self.next_status);
            // Whichever comes first: the oldest Produce answer, any Fetch answer (not taken
            // in while stopping: a stop does not wait for a long poll), a lookup, a command,
            // a deadline. Neither side waits for the other, so the target always has the
            // next request queued.
            let woke = tokio::select! {
                biased;
                _ = oldest_ready(&mut self.produces) => Wake::Produce,
                i = any_ready(&mut self.fetches), if !draining => Wake::Fetch(i),
                Some(l) = self.lookups.1.recv() => Wake::Lookup(l),
                c = self.commands.recv() => match c {
                    Some(c) => Wake::Command(c),
                    None => return, // the control actor is gone
                },
                _ = tokio::time::sleep_until(wake.into()) => Wake::Time,
            };
            match woke {
                Wake::Produce => self.take_produce().await,
                Wake::Fetch(i) => self.take_fetch(i).await,
                Wake::Lookup(l) => self.take_lookup(l),
                Wake::Command(c) => self.take_command(c),
                Wake::Time => {}
            }
            while let Ok(c) = self.commands.try_recv() {
                self.take_command(c);
            }
        }
    }

    /// With no Produce request in flight: drops the partitions released and answers, and
    /// answers a stop. Returns false when the pump is to end.
    fn finish_releases(&mut self) -> bool {
        for (keys, reply) in std::mem::take(&mut self.releases) {
            let mut view = PathView::default();
            for k in keys {
                if let Some(st) = self.path.remove(&k) {
                    tracing::debug!(flow = %self.flow, topic = %k.0, partition = k.1, "partition released");
                    view.parts.insert(k, PartView::of(&st));
                }
            }
            self.path.replan();
            let _ = reply.send(view);
        }
        if let Some(reply) = self.drain.take() {
            self.take_stats();
            self.publish_status();
            let _ = reply.send((self.view(), self.path.traffic));
            return false;
        }
        true
    }

    /// Applies a command from the control actor (never waits).
    fn take_command(&mut self, c: Command) {
        match c {
            Command::Add { key, start } => {
                if self.path.part(&key).is_some() {
                    return;
                }
                if self.path.awaits_answer(&key.0, key.1) {
                    let _ = self.events.send(PumpEvent::RefreshTopics);
                    return;
                }
                let epoch = self.path.next_epoch();
                self.path.add(key, PartState::new(*start, epoch));
            }
            Command::Stop { key, why, kind } => {
                self.path.stop_partition(&key, why, kind);
            }
            Command::StopIfIdleAt {
                key,
                target_next,
                why,
                reply,
            } => {
                let idle = self.path.part(&key).is_some_and(|st| {
                    st.in_flight == 0 && st.queue.is_empty() && st.map.target_next() == target_next
                });
                let stopped = idle && self.path.stop_partition(&key, why, "foreign_write");
                let _ = reply.send(stopped);
            }
            Command::Release { keys, reply } => self.releases.push((keys, reply)),
            Command::Clear => {
                self.path.clear();
                self.produces.clear();
            }
            Command::Hold(topics) => self.path.set_held(topics),
            Command::Pause(paused) => self.path.set_paused(paused),
            Command::Replan => self.path.replan(),
            Command::Flushed(flushed) => {
                for f in flushed {
                    self.path.note_flushed(&f.key, f.take_up, f.at);
                }
            }
            Command::Synced(deltas) => {
                for (k, d) in deltas {
                    self.path.note_synced(&k, d);
                }
            }
            Command::Snapshot(reply) => {
                let _ = reply.send(self.view());
            }
            Command::Drain(reply) => self.drain = Some(reply),
        }
    }

    /// A copy of the partitions for the control actor.
    fn view(&self) -> PathView {
        PathView {
            parts: self
                .path
                .parts()
                .map(|(k, st)| (k.clone(), PartView::of(st)))
                .collect(),
            awaiting: self.path.awaiting(),
        }
    }

    /// Answers the duties task's requests for the acknowledged positions (a copy of each
    /// running partition's offset map), without waiting.
    fn answer_positions(&mut self) {
        let Some(rx) = self.positions.as_mut() else {
            return;
        };
        while let Ok(reply) = rx.try_recv() {
            let positions: Positions = self
                .path
                .parts()
                .map(|(_, st)| {
                    (
                        (st.source_topic.to_string(), st.partition),
                        (st.target_topic.clone(), st.map.clone()),
                    )
                })
                .collect();
            let _ = reply.send(positions);
        }
    }

    /// Writes the Fetch requests the data path plans. A leader whose request cannot be written
    /// is told to the data path (its fetch session starts over); the others still go.
    async fn write_fetches(&mut self, now: Instant) {
        let view = ClientView {
            source: &self.source,
            target: &self.target,
        };
        let orders = self.path.poll_fetch(now, &view);
        let mut failed = None;
        let mut sent = false;
        for FetchOrder {
            id,
            leader,
            specs,
            limits,
        } in orders
        {
            let session = self.fetch_sessions.entry(leader).or_default();
            let incremental = session.id() != 0;
            match self
                .source
                .fetch_start(leader, session, &specs, &limits)
                .await
            {
                Ok(p) => {
                    sent = true;
                    self.fetches.push((id, leader, p));
                    self.path.traffic.incremental_fetches += u64::from(incremental);
                }
                Err(e) => {
                    tracing::warn!(flow = %self.flow, "fetch round failed: {e}");
                    self.path.handle_fetch_unsent(now, id);
                    failed = Some(e.to_string());
                }
            }
        }
        match failed {
            Some(problem) => {
                self.obs.error(&self.flow, "fetch");
                self.obs.disconnected(&self.flow, Side::Source, problem);
            }
            // Only a request that went out says the source answers (with no partition to
            // fetch, the control actor's checks speak for it).
            None if sent => self.obs.connected(&self.flow, Side::Source, true),
            None => {}
        }
    }

    /// Writes the Produce requests the data path plans, up to [`MAX_IN_FLIGHT`].
    async fn write_produces(&mut self) {
        let settings = ProduceSettings {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
        };
        while self.path.in_flight_len() < MAX_IN_FLIGHT {
            let view = ClientView {
                source: &self.source,
                target: &self.target,
            };
            let orders = self.path.poll_produce(&view);
            if orders.is_empty() {
                return;
            }
            let mut failed = None;
            for order in orders {
                match self
                    .target
                    .produce_start(order.leader, &settings, &order.topics)
                    .await
                {
                    Ok(pending) => {
                        self.path
                            .handle_produce_sent(order.id, pending.connection());
                        self.produces.push_back((order.id, pending));
                    }
                    Err(e) => {
                        tracing::warn!(flow = %self.flow, "produce failed: {e}");
                        self.path.handle_produce_unsent(order.id);
                        failed = Some(e.to_string());
                    }
                }
            }
            if let Some(problem) = failed {
                self.obs.error(&self.flow, "produce");
                self.obs.disconnected(&self.flow, Side::Target, problem);
                return;
            }
            self.obs.connected(&self.flow, Side::Target, true);
        }
    }

    /// Looks up, beside the pump, the leaders and connections the data path did not find.
    fn look_up_missing(&mut self) {
        if self.looking_up {
            return;
        }
        let missing = self.path.take_missing();
        if missing.is_empty() {
            return;
        }
        self.looking_up = true;
        let (source, target) = (self.source.clone(), self.target.clone());
        let done = self.lookups.0.clone();
        let name = self.flow.clone();
        tokio::spawn(
            async move {
                let gone = look_up(&name, &source, &target, missing).await;
                let _ = done.send(Lookup::Done { gone });
            }
            .in_current_span(),
        );
    }

    /// Acts on what the data path reported: lookups start beside the pump, cached metadata is
    /// dropped, the rest goes to the control actor.
    fn take_events(&mut self) {
        while let Some(event) = self.path.poll_event() {
            let to_control = match event {
                Event::LogStartWanted { key, at } => {
                    let source = self.source.clone();
                    let done = self.lookups.0.clone();
                    let read = async move {
                        let start = match source.list_offsets(&key.0, &[key.1], EARLIEST).await {
                            Ok(v) => v
                                .first()
                                .map(|x| x.1)
                                .ok_or_else(|| "ListOffsets returned no log start".to_string()),
                            Err(e) => Err(e.to_string()),
                        };
                        let _ = done.send(Lookup::LogStart { key, at, start });
                    };
                    tokio::spawn(read.in_current_span());
                    continue;
                }
                Event::Recreated { key, was, now } => {
                    self.stop_recreated(&key, was, now);
                    continue;
                }
                Event::InvalidateSource(t) => {
                    self.source.invalidate(&t);
                    continue;
                }
                Event::InvalidateTarget(t) => {
                    self.target.invalidate(&t);
                    continue;
                }
                Event::BeyondEnd(k) => PumpEvent::BeyondEnd(k),
                Event::Diverged {
                    topic,
                    partition,
                    why,
                } => PumpEvent::Diverged {
                    topic,
                    partition,
                    why,
                },
                Event::Retake { key, stored } => PumpEvent::Retake { key, stored },
                Event::RefreshTopics => PumpEvent::RefreshTopics,
            };
            let _ = self.events.send(to_control);
        }
    }

    /// Reports what the data path counted to the metrics, at the wall clock's time now.
    fn take_stats(&mut self) {
        let now_ms = super::store::now_ms();
        let names = (self.flow.as_str(), self.source.name(), self.target.name());
        while let Some(stat) = self.path.poll_stat() {
            stat.report(&self.obs, names, now_ms);
        }
    }

    /// Stops partition `key`, whose source topic had id `was` and now has id `now`.
    fn stop_recreated(&mut self, key: &PartKey, was: [u8; 16], now: [u8; 16]) {
        let Some(st) = self.path.part(key) else {
            return;
        };
        let why =
            super::path::recreated_message(self.source.name(), &key.0, key.1, &st.map, was, now);
        self.path.stop_partition(key, why, "source_topic_recreated");
    }

    /// Takes in the oldest Produce request's answer.
    async fn take_produce(&mut self) {
        let Some((id, pending)) = self.produces.pop_front() else {
            return;
        };
        let answer = pending.finish().await.map_err(|e| e.to_string());
        self.path.handle_produce(id, answer);
        self.take_events();
    }

    /// Takes in the answer of the Fetch request at index `i` of `fetches`.
    async fn take_fetch(&mut self, i: usize) {
        let (id, leader, pending) = self.fetches.remove(i);
        let session = self.fetch_sessions.entry(leader).or_default();
        let answer = pending
            .finish(session)
            .await
            .map(|r| r.partitions)
            .map_err(|e| e.to_string());
        self.path.handle_fetch(Instant::now(), id, answer);
    }

    /// Takes in what a lookup task found.
    fn take_lookup(&mut self, l: Lookup) {
        match l {
            Lookup::Done { gone } => {
                self.looking_up = false;
                if gone {
                    let _ = self.events.send(PumpEvent::RefreshTopics);
                }
                self.path.replan();
            }
            Lookup::LogStart { key, at, start } => self.path.handle_log_start(&key, at, start),
        }
    }
}

/// Looks up what the data path missed: leaders (loading metadata) and data connections
/// (connecting). Returns whether a target partition was not found (its topic may be gone).
/// The first failure on a side ends that side's lookups (the cluster is probably down), and
/// any failure makes it pause [`LOOKUP_BACKOFF`] before it reports: a cluster that cannot be
/// reached is asked a few times a second, not in a tight loop.
async fn look_up(name: &str, source: &Cluster, target: &Cluster, missing: Missing) -> bool {
    let mut failed = false;
    for (topic, p) in &missing.source_partitions {
        if let Err(e) = source.leader(topic, *p).await {
            tracing::warn!(flow = %name, %topic, partition = p, "no source leader: {e}");
            failed = true;
            break;
        }
    }
    for node in &missing.source_nodes {
        if let Err(e) = source.connection_id(*node).await {
            tracing::warn!(flow = %name, node, "cannot connect to source broker: {e}");
            source.forget_leaders_on(*node); // looked up again: leadership may have moved
            failed = true;
        }
    }
    let mut gone = false;
    for (topic, p) in &missing.target_partitions {
        if let Err(e) = target.leader(topic, *p).await {
            tracing::warn!(flow = %name, %topic, partition = p, "no target leader: {e}");
            gone = true;
            failed = true;
            break;
        }
    }
    for node in &missing.target_nodes {
        if let Err(e) = target.connection_id(*node).await {
            tracing::warn!(flow = %name, node, "cannot connect to target broker: {e}");
            target.forget_leaders_on(*node); // looked up again: leadership may have moved
            failed = true;
        }
    }
    if failed {
        tokio::time::sleep(LOOKUP_BACKOFF).await;
    }
    gone
}

/// Waits for the oldest Produce answer (for ever when none is outstanding). Cancel-safe: the
/// request keeps what arrived.
async fn oldest_ready(produces: &mut VecDeque<(RequestId, PendingProduce)>) {
    match produces.front_mut() {
        Some(oldest) => oldest.1.ready().await,
        None => std::future::pending().await,
    }
}

/// Waits until any of `fetches` has its answer (or timed out); returns its index. Cancel-safe:
/// each request keeps what arrived.
async fn any_ready(fetches: &mut [(RequestId, i32, PendingFetch)]) -> usize {
    if let [only] = fetches {
        only.2.ready().await;
        return 0;
    }
    if fetches.is_empty() {
        return std::future::pending().await;
    }
    let mut waits: Vec<_> = fetches.iter_mut().map(|f| Box::pin(f.2.ready())).collect();
    std::future::poll_fn(|cx| {
        for (i, w) in waits.iter_mut().enumerate() {
            if std::future::Future::poll(w.as_mut(), cx).is_ready() {
                return std::task::Poll::Ready(i);
            }
        }
        std::task::Poll::Pending
    })
    .await
}
