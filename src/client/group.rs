//! Kafka's classic group membership protocol (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup) for a member with its own protocol type, over a connection of its own (JoinGroup
//! blocks at the coordinator until the rebalance completes, which would stall pooled requests).

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::{Cluster, Connection};
use crate::error::{Error, Result};
use crate::protocol::error_code;

/// Timings of a membership.
#[derive(Debug, Clone, Copy)]
pub struct GroupTimings {
    /// The coordinator drops a member it has not heard from for this long.
    pub session_timeout: Duration,
    /// How long members may take to rejoin during a rebalance.
    pub rebalance_timeout: Duration,
}

/// What JoinGroup answered.
#[derive(Debug, Clone)]
pub(crate) struct Joined {
    /// Generation of the group.
    pub generation: i32,
    /// This member's id.
    pub member_id: String,
    /// The leader's member id.
    pub leader: String,
    /// Every member's metadata (only the leader receives them).
    pub members: Vec<(String, Bytes)>,
}

/// The outcome of a group call that the caller must react to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupError {
    /// Join again (rebalance in progress, or a new generation).
    Rejoin,
    /// The coordinator forgot this member: join again with no member id, owning nothing.
    Lost,
    /// The coordinator moved or is unavailable: find it again.
    Coordinator,
}

/// Classifies a group error code; `None` for success, `Some(Err)` for anything unexpected.
pub(crate) fn classify(code: i16) -> Option<std::result::Result<GroupError, i16>> {
    match code {
        error_code::NONE => None,
        error_code::REBALANCE_IN_PROGRESS | error_code::ILLEGAL_GENERATION => {
            Some(Ok(GroupError::Rejoin))
        }
        error_code::UNKNOWN_MEMBER_ID => Some(Ok(GroupError::Lost)),
        error_code::NOT_COORDINATOR
        | error_code::COORDINATOR_NOT_AVAILABLE
        | error_code::COORDINATOR_LOAD_IN_PROGRESS => Some(Ok(GroupError::Coordinator)),
        other => Some(Err(other)),
    }
}

/// A group call's result: success, a state the caller handles, or an error.
pub(crate) type GroupResult<T> = std::result::Result<T, GroupFailure>;

/// Why a group call did not succeed.
#[derive(Debug)]
pub(crate) enum GroupFailure {
    /// A protocol state to react to.
    State(GroupError),
    /// Anything else (network, unexpected error code).
    Error(Error),
}

impl From<Error> for GroupFailure {
    fn from(e: Error) -> GroupFailure {
        GroupFailure::Error(e)
    }
}

fn check(cluster: &Cluster, group: &str, what: &str, code: i16) -> GroupResult<()> {
    match classify(code) {
        None => Ok(()),
        Some(Ok(s)) => Err(GroupFailure::State(s)),
        Some(Err(code)) => Err(GroupFailure::Error(
            Error::broker(code, Some(format!("{what} of group {group}"))).cluster(cluster.name()),
        )),
    }
}

/// A connection to a group's coordinator.
pub(crate) struct GroupClient<'a> {
    cluster: &'a Cluster,
    conn: Connection,
    group: String,
    timings: GroupTimings,
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

impl<'a> GroupClient<'a> {
    /// Finds the coordinator of `group` on `cluster` and connects to it.
    pub async fn connect(
        cluster: &'a Cluster,
        group: &str,
        timings: GroupTimings,
    ) -> Result<GroupClient<'a>> {
        let node = cluster.group_coordinator(group).await?;
        let conn = cluster.dedicated_connection(node).await?;
        Ok(GroupClient {
            cluster,
            conn,
            group: group.to_string(),
            timings,
        })
    }

    /// Whether the connection broke (connect again).
    pub fn is_broken(&self) -> bool {
        self.conn.is_broken()
    }

    /// JoinGroup with one protocol; answers MEMBER_ID_REQUIRED by joining again with the id.
    pub async fn join(
        &self,
        member_id: &str,
        protocol_type: &str,
        protocol_name: &str,
        metadata: Bytes,
    ) -> GroupResult<Joined> {
        let mut member_id = member_id.to_string();
        for _ in 0..3 {
            let mut req = JoinGroupRequest::default();
            req.group_id = GroupId(s(&self.group));
            req.session_timeout_ms = self.timings.session_timeout.as_millis() as i32;
            req.rebalance_timeout_ms = self.timings.rebalance_timeout.as_millis() as i32;
            req.member_id = s(&member_id);
            req.protocol_type = s(protocol_type);
            let mut p = JoinGroupRequestProtocol::default();
            p.name = s(protocol_name);
            p.metadata = metadata.clone();
            req.protocols = vec![p];
            let wait = self.timings.rebalance_timeout + Duration::from_secs(5);
            let (_, resp) = self.cluster.send_on(&self.conn, &req, wait).await?;
            if resp.error_code == error_code::MEMBER_ID_REQUIRED {
                member_id = resp.member_id.to_string();
                continue;
            }
            check(self.cluster, &self.group, "JoinGroup", resp.error_code)?;
            return Ok(Joined {
                generation: resp.generation_id,
                member_id: resp.member_id.to_string(),
                leader: resp.leader.to_string(),
                members: resp
                    .members
                    .into_iter()
                    .map(|m| (m.member_id.to_string(), m.metadata))
                    .collect(),
            });
        }
        Err(GroupFailure::Error(
            Error::invalid(format!(
                "group {}: the coordinator kept asking for a member id",
                self.group
            ))
            .cluster(self.cluster.name()),
        ))
    }

    /// SyncGroup: the leader passes every member's assignment; everyone gets their own.
    pub async fn sync(
        &self,
        generation: i32,
        member_id: &str,
        protocol_type: &str,
        protocol_name: &str,
        assignments: Vec<(String, Bytes)>,
    ) -> GroupResult<Bytes> {
        let version = self.cluster.version_on::<SyncGroupRequest>(&self.conn)?;
        let mut req = SyncGroupRequest::default();
        req.group_id = GroupId(s(&self.group));
        req.generation_id = generation;
        req.member_id = s(member_id);
        if version >= 5 {
            req.protocol_type = Some(s(protocol_type));
            req.protocol_name = Some(s(protocol_name));
        }
        req.assignments = assignments
            .into_iter()
            .map(|(id, a)| {
                let mut x = SyncGroupRequestAssignment::default();
                x.member_id = s(&id);
                x.assignment = a;
                x
            })
            .collect();
        let wait = self.timings.rebalance_timeout + Duration::from_secs(5);
        let (_, resp) = self.cluster.send_on(&self.conn, &req, wait).await?;
        check(self.cluster, &self.group, "SyncGroup", resp.error_code)?;
        Ok(resp.assignment)
    }

    /// Heartbeat.
    pub async fn heartbeat(&self, generation: i32, member_id: &str) -> GroupResult<()> {
        let mut req = HeartbeatRequest::default();
        req.group_id = GroupId(s(&self.group));
        req.generation_id = generation;
        req.member_id = s(member_id);
        let (_, resp) = self
            .cluster
            .send_on(&self.conn, &req, self.timings.session_timeout)
            .await?;
        check(self.cluster, &self.group, "Heartbeat", resp.error_code)
    }

    /// LeaveGroup, so the others take over at once instead of after the session timeout.
    pub async fn leave(&self, member_id: &str) -> Result<()> {
        let version = self.cluster.version_on::<LeaveGroupRequest>(&self.conn)?;
        let mut req = LeaveGroupRequest::default();
        req.group_id = GroupId(s(&self.group));
        if version >= 3 {
            let mut m = MemberIdentity::default();
            m.member_id = s(member_id);
            req.members = vec![m];
        } else {
            req.member_id = s(member_id);
        }
        let (_, resp) = self
            .cluster
            .send_on(&self.conn, &req, Duration::from_secs(5))
            .await?;
        if resp.error_code != error_code::NONE && resp.error_code != error_code::UNKNOWN_MEMBER_ID {
            return Err(Error::broker(
                resp.error_code,
                Some(format!("LeaveGroup of group {}", self.group)),
            )
            .cluster(self.cluster.name()));
        }
        Ok(())
    }
}
