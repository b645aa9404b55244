//! Sharing the work of one target cluster among strait instances, sans-io: the units of work,
//! what members tell the group leader, and the leader's sticky, balanced, cooperative assignor.
//!
//! Instances with the same configuration join one Kafka consumer-protocol group per target
//! cluster (protocol type [`PROTOCOL_TYPE`]). Each member's JoinGroup metadata
//! ([`MemberMetadata`]) lists the units of work it believes exist and the ones it owns; the
//! leader runs [`assign`] and sends every member its [`Assignment`] through SyncGroup.
//!
//! The assignor is cooperative (as KIP-429): a unit that moves from one live member to another is
//! first only taken away from its owner; the new owner gets it in the next rebalance, which the
//! old owner starts once it has stopped the unit and stored its progress. So a unit never has
//! two owners at once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The group protocol type strait's members use.
pub const PROTOCOL_TYPE: &str = "strait";
/// The one assignment protocol (name carried in JoinGroup).
pub(crate) const PROTOCOL_NAME: &str = "strait-cooperative-v1";

/// One unit of work.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WorkItem {
    /// One source partition of a replicate flow.
    Partition {
        /// Flow name (`source->target`).
        flow: String,
        /// Source topic.
        topic: String,
        /// Partition.
        partition: i32,
    },
    /// A replicate flow's flow-wide duties: heartbeats, checkpoints, group offset sync.
    Duties {
        /// Flow name.
        flow: String,
    },
    /// A whole flow (mirror flows are not split).
    Flow {
        /// Flow name.
        flow: String,
    },
}

impl WorkItem {
    /// The flow the unit belongs to.
    pub fn flow(&self) -> &str {
        match self {
            WorkItem::Partition { flow, .. }
            | WorkItem::Duties { flow }
            | WorkItem::Flow { flow } => flow,
        }
    }
}

impl fmt::Display for WorkItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkItem::Partition {
                flow,
                topic,
                partition,
            } => write!(f, "p|{flow}|{topic}|{partition}"),
            WorkItem::Duties { flow } => write!(f, "d|{flow}"),
            WorkItem::Flow { flow } => write!(f, "f|{flow}"),
        }
    }
}

impl FromStr for WorkItem {
    type Err = String;
    fn from_str(s: &str) -> Result<WorkItem, String> {
        let bad = || format!("not a unit of work: {s:?}");
        let (kind, rest) = s.split_once('|').ok_or_else(bad)?;
        match kind {
            "p" => {
                // Topic names cannot contain `|`; flow names (aliases and `->`) cannot either.
                let (flow, rest) = rest.split_once('|').ok_or_else(bad)?;
                let (topic, p) = rest.rsplit_once('|').ok_or_else(bad)?;
                let partition = p.parse().map_err(|_| bad())?;
                if flow.is_empty() || topic.is_empty() || partition < 0 {
                    return Err(bad());
                }
                Ok(WorkItem::Partition {
                    flow: flow.to_string(),
                    topic: topic.to_string(),
                    partition,
                })
            }
            "d" if !rest.is_empty() => Ok(WorkItem::Duties {
                flow: rest.to_string(),
            }),
            "f" if !rest.is_empty() => Ok(WorkItem::Flow {
                flow: rest.to_string(),
            }),
            _ => Err(bad()),
        }
    }
}

fn to_strings(items: &BTreeSet<WorkItem>) -> Vec<String> {
    items.iter().map(|i| i.to_string()).collect()
}

fn from_strings(items: &[String]) -> Result<BTreeSet<WorkItem>, String> {
    items.iter().map(|s| s.parse()).collect()
}

/// What a member tells the leader in JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberMetadata {
    /// A human name for the instance (host and process id).
    pub instance: String,
    /// Units of work this member believes exist.
    pub wanted: BTreeSet<WorkItem>,
    /// Units it owns now (still running).
    pub owned: BTreeSet<WorkItem>,
    /// Recent bytes per second of owned units, where known.
    pub rates: BTreeMap<WorkItem, u64>,
}

#[derive(Serialize, Deserialize)]
struct MetadataWire {
    v: u32,
    instance: String,
    wanted: Vec<String>,
    owned: Vec<String>,
    #[serde(default)]
    rates: BTreeMap<String, u64>,
}

impl MemberMetadata {
    /// The JoinGroup metadata bytes (versioned JSON).
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&MetadataWire {
            v: 1,
            instance: self.instance.clone(),
            wanted: to_strings(&self.wanted),
            owned: to_strings(&self.owned),
            rates: self
                .rates
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
        })
        .unwrap_or_default()
    }

    /// Decodes JoinGroup metadata; errors say what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<MemberMetadata, String> {
        let w: MetadataWire =
            serde_json::from_slice(bytes).map_err(|e| format!("bad member metadata: {e}"))?;
        if w.v != 1 {
            return Err(format!("member metadata version {} is not 1", w.v));
        }
        let mut rates = BTreeMap::new();
        for (k, v) in w.rates {
            rates.insert(k.parse()?, v);
        }
        Ok(MemberMetadata {
            instance: w.instance,
            wanted: from_strings(&w.wanted)?,
            owned: from_strings(&w.owned)?,
            rates,
        })
    }
}

/// What the leader gives one member in SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// Units the member owns from now on.
    pub items: BTreeSet<WorkItem>,
    /// Every member's instance name and units, for status displays.
    pub members: BTreeMap<String, (String, BTreeSet<WorkItem>)>,
}

#[derive(Serialize, Deserialize)]
struct AssignmentWire {
    v: u32,
    items: Vec<String>,
    #[serde(default)]
    members: BTreeMap<String, (String, Vec<String>)>,
}

impl Assignment {
    /// The SyncGroup assignment bytes (versioned JSON).
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&AssignmentWire {
            v: 1,
            items: to_strings(&self.items),
            members: self
                .members
                .iter()
                .map(|(id, (inst, items))| (id.clone(), (inst.clone(), to_strings(items))))
                .collect(),
        })
        .unwrap_or_default()
    }

    /// Decodes an assignment; an empty byte string is an empty assignment.
    pub fn decode(bytes: &[u8]) -> Result<Assignment, String> {
        if bytes.is_empty() {
            return Ok(Assignment::default());
        }
        let w: AssignmentWire =
            serde_json::from_slice(bytes).map_err(|e| format!("bad assignment: {e}"))?;
        if w.v != 1 {
            return Err(format!("assignment version {} is not 1", w.v));
        }
        let mut members = BTreeMap::new();
        for (id, (inst, items)) in w.members {
            members.insert(id, (inst, from_strings(&items)?));
        }
        Ok(Assignment {
            items: from_strings(&w.items)?,
            members,
        })
    }
}

/// The leader's decision: what each member gets now, and what it will get once units that move
/// have been released.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Units per member for this generation (moving units withheld from their new owner).
    pub now: BTreeMap<String, BTreeSet<WorkItem>>,
    /// The balanced target per member.
    pub target: BTreeMap<String, BTreeSet<WorkItem>>,
    /// Units that move to another member (released first, given in the next generation).
    pub moving: BTreeSet<WorkItem>,
}

/// Assigns the units every member wants among the members, by member id:
/// - every unit to exactly one member, counts differing by at most one;
/// - sticky: a member keeps what it owns unless it holds more than its share;
/// - units that are free or taken from an overloaded member go, heaviest first (by known bytes
///   per second), to the member with the least load among those below their share;
/// - cooperative: a unit owned by another live member is not given to its new owner yet.
pub fn assign(members: &BTreeMap<String, MemberMetadata>) -> Plan {
    let mut plan = Plan::default();
    if members.is_empty() {
        return plan;
    }
    let items: BTreeSet<WorkItem> = members.values().flat_map(|m| m.wanted.clone()).collect();
    let rate = |i: &WorkItem| -> u64 {
        members
            .values()
            .filter_map(|m| m.rates.get(i))
            .copied()
            .max()
            .unwrap_or(0)
    };
    // Current owners; a unit claimed twice (never by a correct member) stays with the first.
    let mut owner: BTreeMap<&WorkItem, &str> = BTreeMap::new();
    for (id, m) in members {
        for i in &m.owned {
            if items.contains(i) {
                owner.entry(i).or_insert(id.as_str());
            }
        }
    }
    let mut kept: BTreeMap<&str, Vec<&WorkItem>> =
        members.keys().map(|id| (id.as_str(), Vec::new())).collect();
    for (i, id) in &owner {
        if let Some(v) = kept.get_mut(id) {
            v.push(*i);
        }
    }
    // Shares: members owning most get the larger shares, so fewer units move.
    let n = items.len();
    let m = members.len();
    let (base, extra) = (n / m, n % m);
    let mut order: Vec<&str> = members.keys().map(String::as_str).collect();
    order.sort_by_key(|id| std::cmp::Reverse(kept[id].len()));
    let share: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(k, id)| (*id, base + usize::from(k < extra)))
        .collect();
    let mut pool: Vec<&WorkItem> = items.iter().filter(|i| !owner.contains_key(i)).collect();
    let mut target: BTreeMap<&str, Vec<&WorkItem>> = BTreeMap::new();
    for (id, mut v) in kept {
        // Keep the heaviest owned units; the rest go back to the pool.
        v.sort_by_key(|i| (std::cmp::Reverse(rate(i)), (*i).clone()));
        let s = share[id];
        if v.len() > s {
            pool.extend(v.split_off(s));
        }
        target.insert(id, v);
    }
    pool.sort_by_key(|i| (std::cmp::Reverse(rate(i)), (*i).clone()));
    for i in pool {
        let best = target
            .iter()
            .filter(|(id, v)| v.len() < share[**id])
            .min_by_key(|(id, v)| (v.iter().map(|x| rate(x)).sum::<u64>(), v.len(), **id))
            .map(|(id, _)| *id);
        if let Some(id) = best {
            if let Some(v) = target.get_mut(id) {
                v.push(i);
            }
        }
    }
    for (id, v) in target {
        let all: BTreeSet<WorkItem> = v.iter().map(|i| (*i).clone()).collect();
        let now: BTreeSet<WorkItem> = v
            .iter()
            .filter(|i| match owner.get(**i) {
                Some(o) if *o != id => {
                    plan.moving.insert((**i).clone());
                    false
                }
                _ => true,
            })
            .map(|i| (*i).clone())
            .collect();
        plan.now.insert(id.to_string(), now);
        plan.target.insert(id.to_string(), all);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(partition: i32) -> WorkItem {
        WorkItem::Partition {
            flow: "a->b".into(),
            topic: "t".into(),
            partition,
        }
    }

    fn universe(n: i32) -> BTreeSet<WorkItem> {
        let mut s: BTreeSet<WorkItem> = (0..n).map(p).collect();
        s.insert(WorkItem::Duties {
            flow: "a->b".into(),
        });
        s
    }

    fn member(wanted: &BTreeSet<WorkItem>, owned: &[WorkItem]) -> MemberMetadata {
        MemberMetadata {
            instance: "host-1".into(),
            wanted: wanted.clone(),
            owned: owned.iter().cloned().collect(),
            rates: BTreeMap::new(),
        }
    }

    /// Runs rebalances as members would (releasing, then rejoining) until nothing moves; returns
    /// the final ownership and how many rounds it took.
    fn settle(
        mut members: BTreeMap<String, MemberMetadata>,
    ) -> (BTreeMap<String, BTreeSet<WorkItem>>, usize) {
        for round in 1..10 {
            let plan = assign(&members);
            // No unit owned twice at any moment.
            let mut seen = BTreeSet::new();
            for items in plan.now.values() {
                for i in items {
                    assert!(seen.insert(i.clone()), "{i} given twice");
                }
            }
            for (id, m) in members.iter_mut() {
                m.owned = plan.now[id].clone();
            }
            if plan.moving.is_empty() {
                return (plan.now, round);
            }
        }
        panic!("did not settle");
    }

    #[test]
    fn wire_forms_round_trip() {
        let items = [
            p(3),
            WorkItem::Duties {
                flow: "a->b".into(),
            },
            WorkItem::Flow {
                flow: "west->east".into(),
            },
            WorkItem::Partition {
                flow: "a->b".into(),
                topic: "x.y-z_1".into(),
                partition: 12,
            },
        ];
        for i in &items {
            assert_eq!(i.to_string().parse::<WorkItem>().unwrap(), *i);
        }
        for bad in [
            "",
            "p|a->b|t",
            "p|a->b|t|-1",
            "p||t|1",
            "d|",
            "x|y",
            "p|a|t|z",
        ] {
            assert!(bad.parse::<WorkItem>().is_err(), "{bad}");
        }
        let mut m = member(&universe(3), &[p(1)]);
        m.rates.insert(p(1), 1000);
        assert_eq!(MemberMetadata::decode(&m.encode()).unwrap(), m);
        let a = Assignment {
            items: [p(0), p(2)].into_iter().collect(),
            members: [(
                "m1".to_string(),
                ("h".to_string(), [p(0)].into_iter().collect()),
            )]
            .into_iter()
            .collect(),
        };
        assert_eq!(Assignment::decode(&a.encode()).unwrap(), a);
        assert_eq!(Assignment::decode(b"").unwrap(), Assignment::default());
        assert!(Assignment::decode(b"{\"v\":2,\"items\":[]}").is_err());
        assert!(MemberMetadata::decode(b"garbage").is_err());
    }

    #[test]
    fn one_member_gets_everything_at_once() {
        let u = universe(24);
        let (own, rounds) = settle([("m1".to_string(), member(&u, &[]))].into());
        assert_eq!(own["m1"], u);
        assert_eq!(rounds, 1);
    }

    #[test]
    fn a_joining_member_gets_its_share_in_two_steps_without_double_ownership() {
        let u = universe(24); // 25 units
        let all: Vec<WorkItem> = u.iter().cloned().collect();
        let members: BTreeMap<String, MemberMetadata> = [
            ("m1".to_string(), member(&u, &all)),
            ("m2".to_string(), member(&u, &[])),
        ]
        .into();
        let first = assign(&members);
        assert!(first.now["m2"].is_empty(), "moving units are withheld");
        assert_eq!(first.now["m1"].len(), 13);
        assert_eq!(first.moving.len(), 12);
        let (own, rounds) = settle(members);
        assert_eq!(rounds, 2);
        assert_eq!(own["m1"].len() + own["m2"].len(), 25);
        assert!(own["m1"].len().abs_diff(own["m2"].len()) <= 1);
        // m1 kept 13 of its own: only what had to move moved.
        assert!(own["m1"].iter().all(|i| all.contains(i)));
    }

    #[test]
    fn stable_when_nothing_changed() {
        let u = universe(24);
        let (own, _) = settle(
            [
                ("m1".to_string(), member(&u, &[])),
                ("m2".to_string(), member(&u, &[])),
                ("m3".to_string(), member(&u, &[])),
            ]
            .into(),
        );
        let again: BTreeMap<String, MemberMetadata> = own
            .iter()
            .map(|(id, items)| {
                let v: Vec<WorkItem> = items.iter().cloned().collect();
                (id.clone(), member(&u, &v))
            })
            .collect();
        let plan = assign(&again);
        assert!(plan.moving.is_empty());
        assert_eq!(plan.now, own);
    }

    #[test]
    fn a_dead_members_units_go_to_the_others_at_once() {
        let u = universe(24);
        let (own, _) = settle(
            [
                ("m1".to_string(), member(&u, &[])),
                ("m2".to_string(), member(&u, &[])),
                ("m3".to_string(), member(&u, &[])),
            ]
            .into(),
        );
        // m3 is gone (session expired): its units are free, nothing else moves.
        let rest: BTreeMap<String, MemberMetadata> = ["m1", "m2"]
            .iter()
            .map(|id| {
                let v: Vec<WorkItem> = own[*id].iter().cloned().collect();
                (id.to_string(), member(&u, &v))
            })
            .collect();
        let plan = assign(&rest);
        assert!(plan.moving.is_empty(), "{:?}", plan.moving);
        assert_eq!(plan.now["m1"].len() + plan.now["m2"].len(), 25);
        assert!(own["m1"].is_subset(&plan.now["m1"]));
        assert!(own["m2"].is_subset(&plan.now["m2"]));
    }

    #[test]
    fn heavy_units_are_spread() {
        let u: BTreeSet<WorkItem> = (0..4).map(p).collect();
        let mut m1 = member(&u, &[]);
        m1.rates.insert(p(0), 1000);
        m1.rates.insert(p(1), 1000);
        let members: BTreeMap<String, MemberMetadata> =
            [("m1".to_string(), m1), ("m2".to_string(), member(&u, &[]))].into();
        let plan = assign(&members);
        let heavy = |id: &str| {
            plan.now[id]
                .iter()
                .filter(|i| **i == p(0) || **i == p(1))
                .count()
        };
        assert_eq!(heavy("m1"), 1);
        assert_eq!(heavy("m2"), 1);
    }

    proptest! {
        #[test]
        fn every_unit_exactly_once_and_balanced(
            n in 0i32..60,
            owners in proptest::collection::vec(0usize..5, 0..60),
            members in 1usize..5,
        ) {
            let u = universe(n);
            let ids: Vec<String> = (0..members).map(|k| format!("m{k}")).collect();
            let mut owned: BTreeMap<String, Vec<WorkItem>> =
                ids.iter().map(|id| (id.clone(), Vec::new())).collect();
            for (i, o) in u.iter().zip(owners.iter()) {
                if *o < members {
                    if let Some(v) = owned.get_mut(&ids[*o]) {
                        v.push(i.clone());
                    }
                }
            }
            let m: BTreeMap<String, MemberMetadata> = ids
                .iter()
                .map(|id| (id.clone(), member(&u, &owned[id])))
                .collect();
            let (own, rounds) = settle(m);
            prop_assert!(rounds <= 2);
            let total: usize = own.values().map(|s| s.len()).sum();
            prop_assert_eq!(total, u.len());
            let counts: Vec<usize> = own.values().map(|s| s.len()).collect();
            let (lo, hi) = (counts.iter().min().copied().unwrap_or(0), counts.iter().max().copied().unwrap_or(0));
            prop_assert!(hi - lo <= 1, "{:?}", counts);
        }
    }
}
