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
use tokio::sync::{watch, Notify};

use crate::assignment::{
    assign, Assignment, MemberMetadata, WorkItem, PROTOCOL_NAME, PROTOCOL_TYPE,
};
use crate::client::group::{GroupClient, GroupError, GroupFailure, GroupTimings};
use crate::client::Cluster;
use crate::replicate::lists::CONTROL_TOPIC;
use crate::replicate::store;

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
    pub async fn wait_reported(
        &self,
        flows: &[String],
        shutdown: &mut watch::Receiver<bool>,
    ) -> bool {
        loop {
            if *shutdown.borrow() {
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
                _ = shutdown.changed() => {}
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
        store::ensure_compacted_topic(target, CONTROL_TOPIC, -1).await?;
        store::append(
            target,
            CONTROL_TOPIC,
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
    mut shutdown: watch::Receiver<bool>,
) {
    let heartbeat_every = (cfg.timings.session_timeout / 5).min(Duration::from_secs(1));
    let mut member_id = String::new();
    let mut client: Option<GroupClient<'_>> = None;
    // Ends on shutdown, or when every flow stopped by itself (for example a refused password).
    'outer: while !*shutdown.borrow() && !own.all_done(&cfg.flows) {
        // Join only once every flow knows what exists and can reach its clusters.
        if !own.reported(&cfg.flows) || own.unhealthy().is_some() {
            tokio::select! {
                _ = own.changed.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        if client.as_ref().is_none_or(|c| c.is_broken()) {
            match GroupClient::connect(&target, &cfg.group, cfg.timings).await {
                Ok(c) => client = Some(c),
                Err(e) => {
                    tracing::warn!(group = %cfg.group, "cannot reach the group coordinator: {e}");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = shutdown.changed() => {}
                    }
                    continue;
                }
            }
        }
        let Some(c) = client.as_ref() else { continue };
        // Join and sync.
        let meta = own.metadata(&cfg.instance);
        let sent = Instant::now();
        let joined = match c
            .join(
                &member_id,
                PROTOCOL_TYPE,
                PROTOCOL_NAME,
                Bytes::from(meta.encode()),
            )
            .await
        {
            Ok(j) => j,
            Err(f) => {
                handle_failure(f, &cfg.group, &mut member_id, &own, &mut client).await;
                continue;
            }
        };
        member_id = joined.member_id.clone();
        let assignments = if joined.leader == member_id {
            leader_assignments(&cfg.group, &joined.members)
        } else {
            Vec::new()
        };
        let bytes = match c
            .sync(
                joined.generation,
                &member_id,
                PROTOCOL_TYPE,
                PROTOCOL_NAME,
                assignments,
            )
            .await
        {
            Ok(b) => b,
            Err(f) => {
                handle_failure(f, &cfg.group, &mut member_id, &own, &mut client).await;
                continue;
            }
        };
        let a = match Assignment::decode(&bytes) {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(group = %cfg.group, "cannot read the assignment: {e}; owning nothing this generation");
                Assignment::default()
            }
        };
        let revoking = !meta.owned.is_subset(&a.items);
        tracing::info!(group = %cfg.group, generation = joined.generation, member = %member_id, leader = joined.leader == member_id, owned = a.items.len(), members = a.members.len(), revoking, "joined");
        if joined.leader == member_id {
            let stored = StoredAssignment {
                generation: joined.generation,
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
            store_record(
                &target,
                assignment_key(&cfg.group),
                serde_json::to_vec(&stored).ok(),
            )
            .await;
        }
        own.assigned(&member_id, joined.generation, a, lease(sent, &cfg.timings));
        let wanted_at_join = meta.wanted;
        let mut written: Option<BTreeSet<WorkItem>> = None;
        // Stable: heartbeat; rejoin when units were released, the set of units changed, or the
        // coordinator asks.
        loop {
            tokio::select! {
                _ = tokio::time::sleep(heartbeat_every) => {}
                _ = own.changed.notified() => {}
                _ = shutdown.changed() => {}
            }
            // On shutdown keep heartbeating (so the lease holds) until the flows have drained
            // and stored their progress.
            if own.all_done(&cfg.flows) {
                break 'outer;
            }
            if let Some(why) = own.unhealthy() {
                tracing::warn!(group = %cfg.group, "leaving the group: {why}");
                own.release_all();
                wait_released(&own).await;
                if let Err(e) = c.leave(&member_id).await {
                    tracing::warn!(group = %cfg.group, "leave failed: {e}");
                }
                own.lose();
                member_id.clear();
                continue 'outer;
            }
            let sent = Instant::now();
            match c.heartbeat(joined.generation, &member_id).await {
                Ok(()) => own.extend_lease(lease(sent, &cfg.timings)),
                Err(f) => {
                    handle_failure(f, &cfg.group, &mut member_id, &own, &mut client).await;
                    continue 'outer;
                }
            }
            let held = own.held();
            if written.as_ref() != Some(&held) {
                let rec = StoredHeld {
                    generation: joined.generation,
                    instance: cfg.instance.clone(),
                    held: held.iter().map(|i| i.to_string()).collect(),
                    at_ms: store::now_ms(),
                };
                store_record(
                    &target,
                    held_key(&cfg.group, &member_id),
                    serde_json::to_vec(&rec).ok(),
                )
                .await;
                written = Some(held);
            }
            if revoking && own.released() {
                continue 'outer; // the cooperative second round
            }
            if own.wanted() != wanted_at_join {
                continue 'outer;
            }
        }
    }
    // Shutdown: the flows have drained and stored their progress (or gave up); the group hears
    // we left, so the others take over at once.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !own.all_done(&cfg.flows) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if let (Some(c), false) = (client.as_ref(), member_id.is_empty()) {
        store_record(&target, held_key(&cfg.group, &member_id), None).await;
        if let Err(e) = c.leave(&member_id).await {
            tracing::warn!(group = %cfg.group, "leave failed: {e}");
        } else {
            tracing::info!(group = %cfg.group, member = %member_id, "left the group");
        }
    }
    own.lose();
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
