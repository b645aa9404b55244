//! `strait members`: the instances sharing each target cluster's work and who owns what: live
//! members from the group coordinator (DescribeGroups), what the leader assigned them and what
//! each one runs from the records they keep in the target cluster, so it works from any machine.

use std::path::PathBuf;

use std::collections::BTreeMap;

use kafka_protocol::messages::DescribeGroupsResponse;
use strait::assignment::{Assignment, WorkItem};
use strait::replicate::membership::{
    assignment_key, group_id, held_key, StoredAssignment, StoredHeld,
};
use strait::replicate::store;
use strait::{Error, Result};

/// Arguments of `strait members`.
#[derive(Debug, clap::Args)]
pub struct MembersArgs {
    /// Configuration file (TOML or mm2.properties).
    #[arg(long)]
    pub config: PathBuf,
    /// Only this target cluster.
    #[arg(long)]
    pub target: Option<String>,
    /// Print one line per unit of work a live member runs: `target member unit`.
    #[arg(long)]
    pub units: bool,
}

/// The group's state, its live members, and (when it is stable) the assignment the
/// coordinator holds for each member, decoded.
fn live_members(
    resp: DescribeGroupsResponse,
) -> (String, Vec<String>, BTreeMap<String, Assignment>) {
    let Some(g) = resp.groups.into_iter().next() else {
        return ("Dead".to_string(), Vec::new(), BTreeMap::new());
    };
    let stable = g.group_state.as_str() == "Stable";
    let mut assignments = BTreeMap::new();
    let mut live = Vec::new();
    for m in &g.members {
        let id = m.member_id.to_string();
        if stable {
            match Assignment::decode(&m.member_assignment) {
                Ok(a) => {
                    assignments.insert(id.clone(), a);
                }
                Err(e) => tracing::warn!(member = %id, "the coordinator's assignment: {e}"),
            }
        }
        live.push(id);
    }
    (g.group_state.to_string(), live, assignments)
}

/// Describes the groups and returns the table.
pub async fn run(args: &MembersArgs) -> Result<String> {
    let config = strait::config::load(&args.config).map_err(|e| Error::invalid(e.to_string()))?;
    let mut targets: Vec<String> = config
        .flows
        .iter()
        .filter(|f| f.enabled)
        .map(|f| f.target.clone())
        .collect();
    targets.sort();
    targets.dedup();
    if let Some(t) = &args.target {
        if !targets.contains(t) {
            return Err(Error::invalid(format!(
                "{}: no enabled flow writes into {t:?} (targets: {})",
                config.origin,
                targets.join(", ")
            )));
        }
        targets = vec![t.clone()];
    }
    let mut rows = vec![vec![
        "Target".to_string(),
        "Group".into(),
        "State".into(),
        "Member".into(),
        "Instance".into(),
        "Assigned".into(),
        "Running".into(),
        "Duties".into(),
    ]];
    let mut units = Vec::new();
    for t in targets {
        let group = group_id(&config.instance_group, &t);
        let cluster = strait::replicate::connect_once(&config, &t).await?;
        // Live members from the coordinator; what they own and run from their stored records.
        let resp = cluster.describe_group(&group).await?;
        let (state, live, coordinator) = live_members(resp);
        let records = store::read_latest(&cluster, cluster.control_topic()).await?;
        let assigned: Option<StoredAssignment> = records
            .get(assignment_key(&group).as_bytes())
            .and_then(|v| serde_json::from_slice(v).ok());
        if live.is_empty() {
            rows.push(vec![
                t.clone(),
                group.clone(),
                state.clone(),
                "-".into(),
                "-".into(),
                "0".into(),
                "0".into(),
                "-".into(),
            ]);
        }
        for id in &live {
            let held: Option<StoredHeld> = records
                .get(held_key(&group, id).as_bytes())
                .and_then(|v| serde_json::from_slice(v).ok());
            let parse = |v: &[String]| -> Vec<WorkItem> {
                v.iter().filter_map(|s| s.parse().ok()).collect()
            };
            // The coordinator's own assignment while the group is stable; during a rebalance
            // the leader's stored record (the coordinator then hands out none).
            let (inst, given) = match coordinator.get(id) {
                Some(a) => (
                    a.members.get(id).map(|m| m.0.clone()).unwrap_or_default(),
                    a.items.iter().cloned().collect(),
                ),
                None => {
                    let (inst, given) = assigned
                        .as_ref()
                        .and_then(|a| a.members.get(id).cloned())
                        .unwrap_or_default();
                    (inst, parse(&given))
                }
            };
            let running = held.as_ref().map(|h| parse(&h.held)).unwrap_or_default();
            let is_part = |i: &&WorkItem| matches!(i, WorkItem::Partition { .. });
            let duties: Vec<String> = running
                .iter()
                .filter_map(|i| match i {
                    WorkItem::Duties { flow } => Some(flow.clone()),
                    WorkItem::Flow { flow } => Some(format!("{flow} (whole flow)")),
                    WorkItem::Partition { .. } => None,
                })
                .collect();
            rows.push(vec![
                t.clone(),
                group.clone(),
                state.clone(),
                id.clone(),
                held.as_ref().map(|h| h.instance.clone()).unwrap_or(inst),
                given.iter().filter(is_part).count().to_string(),
                running.iter().filter(is_part).count().to_string(),
                if duties.is_empty() {
                    "-".to_string()
                } else {
                    duties.join(",")
                },
            ]);
            for i in &running {
                units.push(format!("{t} {id} {i}"));
            }
        }
    }
    if args.units {
        return Ok(units.into_iter().map(|u| u + "\n").collect());
    }
    Ok(super::table::format(&rows))
}
