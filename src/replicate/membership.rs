//! Scale-out: the instances running the same configuration share each target cluster's work
//! through Kafka's group membership protocol on that cluster (see [`crate::assignment`]).
//!
//! One [`Ownership`] per target cluster sits between the membership task ([`run`]) and the flows
//! writing into that cluster:
//! - the task tells flows which units of work they own, and until when they may write (a lease
//!   renewed by every successful heartbeat, shorter than the session timeout, so an instance that
//!   lost touch with the coordinator stops writing before anyone else can take over);
//! - flows tell the task which units exist and which they hold. A flow releases a unit only after
//!   its in-flight requests were answered and its progress stored; the task starts the next
//!   rebalance only then, so a unit never has two owners.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::assignment::{
    assign, Assignment, MemberMetadata, WorkItem, PROTOCOL_NAME, PROTOCOL_TYPE,
};
use crate::client::group::{GroupClient, GroupError, GroupFailure, GroupTimings};
use crate::client::Cluster;

use crate::replicate::store;
use crate::Shutdown;

/// The group id of the instances sharing one target cluster.
pub fn group_id(instance_group: &str, target_alias: &str) -> String {
    format!("strait.{instance_group}.{target_alias}")
}

/// What the membership and the flows of one target cluster share.
#[derive(Debug, Default)]
pub struct Ownership {
    inner: Mutex<Shared>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct Shared {
    member_id: String,
    generation: i32,
    assigned: BTreeSet<WorkItem>,
    lease_until: Option<Instant>,
    /// Bumped when the membership was lost: flows drop everything without writing.
    lost_epoch: u64,
    wanted: BTreeMap<String, BTreeSet<WorkItem>>,
    held: BTreeMap<String, BTreeSet<WorkItem>>,
    rates: BTreeMap<WorkItem, u64>,
    unhealthy: BTreeMap<String, String>,
    members: BTreeMap<String, (String, BTreeSet<WorkItem>)>,
    done: BTreeSet<String>,
    /// Bumped whenever the assignment or the member list changes.
    version: u64,
}

/// A view of the membership for status displays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MembershipStatus {
    /// This member's id (empty before the first join).
    pub member_id: String,
    /// Group generation.
    pub generation: i32,
    /// Units this instance owns.
    pub owned: BTreeSet<WorkItem>,
    /// Every member's instance name and units, as the leader last assigned them.
    pub members: BTreeMap<String, (String, BTreeSet<WorkItem>)>,
}

impl Ownership {
    /// A new, empty ownership.
    pub fn new() -> Arc<Ownership> {
        Arc::new(Ownership::default())
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Whether this instance may write into the target now.
    pub fn may_write(&self) -> bool {
        self.lock().lease_until.is_some_and(|t| Instant::now() < t)
    }

    /// The units of `flow` this instance owns.
    pub fn assigned_for(&self, flow: &str) -> BTreeSet<WorkItem> {
        self.lock()
            .assigned
            .iter()
            .filter(|i| i.flow() == flow)
            .cloned()
            .collect()
    }

    /// Whether `item` is assigned to this instance (without copying the assignment).
    pub fn is_assigned(&self, item: &WorkItem) -> bool {
        self.lock().assigned.contains(item)
    }

    /// Whether this instance does the duties of `flow` now: it is assigned the flow's duties
    /// unit (the whole flow for a mirror flow, which is one unit of work) and its membership
    /// lease is valid (`None`: no scale-out, always).
    pub fn does_duties(own: Option<&Self>, flow: &str, mirror: bool) -> bool {
        let flow = flow.to_string();
        let unit = if mirror {
            WorkItem::Flow { flow }
        } else {
            WorkItem::Duties { flow }
        };
        own.is_none_or(|o| o.may_write() && o.is_assigned(&unit))
    }

    /// Changes each time the membership was lost.
    pub fn lost_epoch(&self) -> u64 {
        self.lock().lost_epoch
    }

    /// A flow's report: the units it believes exist, the ones it holds (running), their recent
    /// rates, and whether it can reach its clusters (`Err(why)` if not).
    pub fn report(
        &self,
        flow: &str,
        wanted: BTreeSet<WorkItem>,
        held: BTreeSet<WorkItem>,
        rates: BTreeMap<WorkItem, u64>,
        health: std::result::Result<(), String>,
    ) {
        let mut g = self.lock();
        let changed = g.wanted.get(flow) != Some(&wanted)
            || g.held.get(flow) != Some(&held)
            || g.unhealthy.get(flow) != health.as_ref().err();
        g.wanted.insert(flow.to_string(), wanted);
        g.held.insert(flow.to_string(), held);
        g.rates.retain(|k, _| k.flow() != flow);
        g.rates.extend(rates);
        match health {
            Ok(()) => g.unhealthy.remove(flow),
            Err(why) => g.unhealthy.insert(flow.to_string(), why),
        };
        drop(g);
        if changed {
            self.changed.notify_one();
        }
    }

    /// A flow stopped for good (it released everything).
    pub fn flow_done(&self, flow: &str) {
        let mut g = self.lock();
        g.done.insert(flow.to_string());
        g.held.remove(flow);
        drop(g);
        self.changed.notify_one();
    }

    /// Changes whenever what [`Ownership::status`] returns may have changed.
    pub fn version(&self) -> u64 {
        self.lock().version
    }

    /// The membership as this instance knows it.
    pub fn status(&self) -> MembershipStatus {
        let g = self.lock();
        MembershipStatus {
            member_id: g.member_id.clone(),
            generation: g.generation,
            owned: g.assigned.clone(),
            members: g.members.clone(),
        }
    }

    fn metadata(&self, instance: &str) -> MemberMetadata {
        let g = self.lock();
        MemberMetadata {
            instance: instance.to_string(),
            wanted: g.wanted.values().flatten().cloned().collect(),
            owned: g.held.values().flatten().cloned().collect(),
            rates: g.rates.clone(),
        }
    }

    fn wanted(&self) -> BTreeSet<WorkItem> {
        self.lock().wanted.values().flatten().cloned().collect()
    }

    fn released(&self) -> bool {
        let g = self.lock();
        g.held.values().flatten().all(|i| g.assigned.contains(i))
    }

    fn reported(&self, flows: &[String]) -> bool {
        let g = self.lock();
        flows
            .iter()
            .all(|f| g.wanted.contains_key(f) || g.done.contains(f))
    }

    /// Waits until every flow reported (or stopped); false if `shutdown` came first or every
    /// flow stopped without reporting.
    pub async fn wait_reported(&self, flows: &[String], shutdown: &Shutdown) -> bool {
        loop {
            if shutdown.is_stopped() {
                return false;
            }
            if self.all_done(flows) {
                return false;
            }
            if self.reported(flows) {
                return true;
            }
            tokio::select! {
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                _ = shutdown.stopped() => {}
            }
        }
    }

    fn unhealthy(&self) -> Option<String> {
        let g = self.lock();
        g.unhealthy
            .iter()
            .next()
            .map(|(f, why)| format!("flow {f}: {why}"))
    }

    fn all_done(&self, flows: &[String]) -> bool {
        let g = self.lock();
        flows.iter().all(|f| g.done.contains(f))
    }

    fn held(&self) -> BTreeSet<WorkItem> {
        self.lock().held.values().flatten().cloned().collect()
    }

    fn nothing_held(&self) -> bool {
        self.lock().held.values().all(|h| h.is_empty())
    }

    fn assigned(&self, member_id: &str, generation: i32, a: Assignment, lease_until: Instant) {
        let mut g = self.lock();
        g.member_id = member_id.to_string();
        g.generation = generation;
        g.assigned = a.items;
        g.members = a.members;
        g.lease_until = Some(lease_until);
        g.version += 1;
        drop(g);
        self.changed.notify_one();
    }

    fn extend_lease(&self, until: Instant) {
        let mut g = self.lock();
        if g.lease_until.is_some() {
            g.lease_until = Some(until);
        }
    }

    /// The membership is gone: nothing is owned, nothing may be written.
    fn lose(&self) {
        let mut g = self.lock();
        g.assigned.clear();
        g.lease_until = None;
        g.lost_epoch += 1;
        g.members.clear();
        g.version += 1;
        drop(g);
        self.changed.notify_one();
    }

    /// Releasing on purpose (shutdown, unhealthy): nothing is owned any more.
    fn release_all(&self) {
        let mut g = self.lock();
        g.assigned.clear();
        g.version += 1;
        drop(g);
        self.changed.notify_one();
    }
}

/// Settings of a membership.
#[derive(Debug, Clone)]
pub struct MembershipConfig {
    /// Group id (see [`group_id`]).
    pub group: String,
    /// Names of the flows writing into this target.
    pub flows: Vec<String>,
    /// Session and rebalance timeouts.
    pub timings: GroupTimings,
    /// This instance's name in assignments.
    pub instance: String,
}

/// This host's name and the process id.
pub fn instance_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string());
    format!("{host}/{}", std::process::id())
}

/// Control-topic key of the leader's last assignment of `group`.
pub fn assignment_key(group: &str) -> String {
    format!("members|{group}")
}

/// Control-topic key of what one member runs.
pub fn held_key(group: &str, member_id: &str) -> String {
    format!("member|{group}|{member_id}")
}

/// The leader's last assignment, as stored (see [`assignment_key`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredAssignment {
    /// Generation.
    pub generation: i32,
    /// Member id → (instance, units).
    pub members: BTreeMap<String, (String, Vec<String>)>,
}

/// What one member runs, as stored (see [`held_key`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredHeld {
    /// Generation it last joined.
    pub generation: i32,
    /// Instance name.
    pub instance: String,
    /// Units it runs now.
    pub held: Vec<String>,
    /// When this was written (ms since the epoch).
    pub at_ms: i64,
}

async fn store_record(target: &Cluster, key: String, value: Option<Vec<u8>>) {
    let r = async {
        store::ensure_compacted_topic(target, target.control_topic(), -1).await?;
        store::append(
            target,
            target.control_topic(),
            0,
            &[(Bytes::from(key), value.map(Bytes::from))],
        )
        .await
    }
    .await;
    if let Err(e) = r {
        tracing::warn!("cannot store the membership record: {e}");
    }
}

/// Lease granted by a group call sent at `sent`: half the session timeout, so it ends well
/// before the coordinator could give the units to someone else.
fn lease(sent: Instant, t: &GroupTimings) -> Instant {
    sent + t.session_timeout / 2
}

/// Runs the membership of one target cluster until `shutdown`, then waits for the flows to stop
/// and leaves the group.
pub async fn run(
    target: Arc<Cluster>,
    cfg: MembershipConfig,
    own: Arc<Ownership>,
    shutdown: Shutdown,
) {
    let mut m = Member {
        target: &target,
        cfg,
        own,
        shutdown,
        member_id: String::new(),
        client: None,
    };
    // Ends on shutdown, or when every flow stopped by itself (for example a refused password).
    while !m.shutdown.is_stopped() && !m.own.all_done(&m.cfg.flows) {
        if !m.ready_to_join().await || !m.connect().await {
            continue;
        }
        let Some(generation) = m.join().await else {
            continue;
        };
        if let After::Done = m.hold(generation).await {
            break;
        }
    }
    m.leave().await;
}

/// One membership between the steps of [`run`].
struct Member<'a> {
    target: &'a Cluster,
    cfg: MembershipConfig,
    own: Arc<Ownership>,
    shutdown: Shutdown,
    /// Empty until the coordinator gave one (and after it dropped this member).
    member_id: String,
    /// The coordinator's connection; `None` until connected and after it broke.
    client: Option<GroupClient<'a>>,
}

/// A generation joined: what holding it needs.
struct Generation {
    generation: i32,
    /// Whether this member must release units before the cooperative second round.
    revoking: bool,
    /// The units of work this member believed existed when it joined.
    wanted_at_join: BTreeSet<WorkItem>,
}

/// How holding a generation ended.
enum After {
    /// Join again (units released, the set of units changed, the coordinator asked, or a call
    /// failed).
    Rejoin,
    /// Every flow stopped: leave.
    Done,
}

impl<'a> Member<'a> {
    /// Whether every flow knows what exists and reaches its clusters; waits a little if not.
    async fn ready_to_join(&mut self) -> bool {
        if self.own.reported(&self.cfg.flows) && self.own.unhealthy().is_none() {
            return true;
        }
        tokio::select! {
            _ = self.own.changed.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            _ = self.shutdown.stopped() => {}
        }
        false
    }

    /// Connects to the group coordinator unless connected; waits a second if it cannot.
    async fn connect(&mut self) -> bool {
        if self.client.as_ref().is_some_and(|c| !c.is_broken()) {
            return true;
        }
        match GroupClient::connect(self.target, &self.cfg.group, self.cfg.timings).await {
            Ok(c) => {
                self.client = Some(c);
                true
            }
            Err(e) => {
                tracing::warn!(group = %self.cfg.group, "cannot reach the group coordinator: {e}");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = self.shutdown.stopped() => {}
                }
                false
            }
        }
    }

    /// Joins and syncs a generation (the leader computes and stores the assignment), and
    /// takes up what this member was assigned. `None` after a failure (handled).
    async fn join(&mut self) -> Option<Generation> {
        let c = self.client.as_ref()?;
        let group = &self.cfg.group;
        let meta = self.own.metadata(&self.cfg.instance);
        let sent = Instant::now();
        let encoded = Bytes::from(meta.encode());
        let joined = match c
            .join(&self.member_id, PROTOCOL_TYPE, PROTOCOL_NAME, encoded)
            .await
        {
            Ok(j) => j,
            Err(f) => {
                handle_failure(f, group, &mut self.member_id, &self.own, &mut self.client).await;
                return None;
            }
        };
        self.member_id = joined.member_id.clone();
        let leader = joined.leader == self.member_id;
        let assignments = if leader {
            leader_assignments(group, &joined.members)
        } else {
            Vec::new()
        };
        let bytes = match c
            .sync(
                joined.generation,
                &self.member_id,
                PROTOCOL_TYPE,
                PROTOCOL_NAME,
                assignments,
            )
            .await
        {
            Ok(b) => b,
            Err(f) => {
                handle_failure(f, group, &mut self.member_id, &self.own, &mut self.client).await;
                return None;
            }
        };
        let a = Assignment::decode(&bytes).unwrap_or_else(|e| {
            tracing::error!(%group, "cannot read the assignment: {e}; owning nothing this generation");
            Assignment::default()
        });
        let revoking = !meta.owned.is_subset(&a.items);
        tracing::info!(%group, generation = joined.generation, member = %self.member_id, leader, owned = a.items.len(), members = a.members.len(), revoking, "joined");
        if leader {
            self.store_assignment(joined.generation, &a).await;
        }
        let lease = lease(sent, &self.cfg.timings);
        self.own
            .assigned(&self.member_id, joined.generation, a, lease);
        Some(Generation {
            generation: joined.generation,
            revoking,
            wanted_at_join: meta.wanted,
        })
    }

    /// The leader records the whole assignment in the control topic (what `strait members`
    /// shows).
    async fn store_assignment(&self, generation: i32, a: &Assignment) {
        let stored = StoredAssignment {
            generation,
            members: a
                .members
                .iter()
                .map(|(id, (inst, items))| {
                    (
                        id.clone(),
                        (inst.clone(), items.iter().map(|i| i.to_string()).collect()),
                    )
                })
                .collect(),
        };
        let key = assignment_key(&self.cfg.group);
        store_record(self.target, key, serde_json::to_vec(&stored).ok()).await;
    }

    /// Stable: heartbeats and records what is held, until a rejoin is due or every flow
    /// stopped. On shutdown it keeps heartbeating (so the lease holds) until the flows have
    /// drained and stored their progress.
    async fn hold(&mut self, g: Generation) -> After {
        let heartbeat_every = (self.cfg.timings.session_timeout / 5).min(Duration::from_secs(1));
        let mut written: Option<BTreeSet<WorkItem>> = None;
        // Once stopping, the stop no longer wakes the loop (it would at once, every time):
        // heartbeats go on at their pace until the flows are done.
        let mut stopping = self.shutdown.is_stopped();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(heartbeat_every) => {}
                _ = self.own.changed.notified() => {}
                _ = self.shutdown.stopped(), if !stopping => stopping = true,
            }
            if self.own.all_done(&self.cfg.flows) {
                return After::Done;
            }
            let Some(c) = self.client.as_ref() else {
                return After::Rejoin;
            };
            if let Some(why) = self.own.unhealthy() {
                tracing::warn!(group = %self.cfg.group, "leaving the group: {why}");
                self.own.release_all();
                wait_released(&self.own).await;
                if let Err(e) = c.leave(&self.member_id).await {
                    tracing::warn!(group = %self.cfg.group, "leave failed: {e}");
                }
                self.own.lose();
                self.member_id.clear();
                return After::Rejoin;
            }
            let sent = Instant::now();
            match c.heartbeat(g.generation, &self.member_id).await {
                Ok(()) => self.own.extend_lease(lease(sent, &self.cfg.timings)),
                Err(f) => {
                    let (group, own) = (&self.cfg.group, &self.own);
                    handle_failure(f, group, &mut self.member_id, own, &mut self.client).await;
                    return After::Rejoin;
                }
            }
            self.store_held(g.generation, &mut written).await;
            if g.revoking && self.own.released() {
                return After::Rejoin; // the cooperative second round
            }
            if self.own.wanted() != g.wanted_at_join {
                return After::Rejoin;
            }
        }
    }

    /// Records what this member holds, when it changed since `written`.
    async fn store_held(&self, generation: i32, written: &mut Option<BTreeSet<WorkItem>>) {
        let held = self.own.held();
        if written.as_ref() == Some(&held) {
            return;
        }
        let rec = StoredHeld {
            generation,
            instance: self.cfg.instance.clone(),
            held: held.iter().map(|i| i.to_string()).collect(),
            at_ms: store::now_ms(),
        };
        let key = held_key(&self.cfg.group, &self.member_id);
        store_record(self.target, key, serde_json::to_vec(&rec).ok()).await;
        *written = Some(held);
    }

    /// Shutdown: once the flows have drained and stored their progress (or gave up), leaves
    /// the group, so the others take over at once.
    async fn leave(self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.own.all_done(&self.cfg.flows) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if let (Some(c), false) = (self.client.as_ref(), self.member_id.is_empty()) {
            let group = &self.cfg.group;
            store_record(self.target, held_key(group, &self.member_id), None).await;
            if let Err(e) = c.leave(&self.member_id).await {
                tracing::warn!(%group, "leave failed: {e}");
            } else {
                tracing::info!(%group, member = %self.member_id, "left the group");
            }
        }
        self.own.lose();
    }
}

async fn wait_released(own: &Ownership) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !own.nothing_held() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn handle_failure(
    f: GroupFailure,
    group: &str,
    member_id: &mut String,
    own: &Ownership,
    client: &mut Option<GroupClient<'_>>,
) {
    match f {
        GroupFailure::State(GroupError::Rejoin) => {}
        GroupFailure::State(GroupError::Lost) => {
            tracing::warn!(%group, member = %member_id, "the coordinator dropped this member; its units were given to others");
            member_id.clear();
            own.lose();
        }
        GroupFailure::State(GroupError::Coordinator) => {
            *client = None;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        GroupFailure::Error(e) => {
            tracing::warn!(%group, "group call failed: {e}");
            *client = None;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

/// The leader's part: every member's assignment from their metadata.
fn leader_assignments(group: &str, members: &[(String, Bytes)]) -> Vec<(String, Bytes)> {
    let mut metas = BTreeMap::new();
    for (id, bytes) in members {
        match MemberMetadata::decode(bytes) {
            Ok(m) => {
                metas.insert(id.clone(), m);
            }
            Err(e) => {
                tracing::error!(%group, member = %id, "ignoring a member: {e}");
                metas.insert(id.clone(), MemberMetadata::default());
            }
        }
    }
    let plan = assign(&metas);
    let view: BTreeMap<String, (String, BTreeSet<WorkItem>)> = plan
        .now
        .iter()
        .map(|(id, items)| {
            let inst = metas
                .get(id)
                .map(|m| m.instance.clone())
                .unwrap_or_default();
            (id.clone(), (inst, items.clone()))
        })
        .collect();
    if !plan.moving.is_empty() {
        tracing::info!(%group, moving = plan.moving.len(), "units move after their owners release them");
    }
    plan.now
        .into_iter()
        .map(|(id, items)| {
            let a = Assignment {
                items,
                members: view.clone(),
            };
            (id, Bytes::from(a.encode()))
        })
        .collect()
}
