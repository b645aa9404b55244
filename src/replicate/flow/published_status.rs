//! What the control actor shows of a flow: the members sharing its target and the mirrors'
//! states, published into the status channel that `/api/status`, the page and `strait status`
//! read (the pump publishes the partitions into the same channel).

use super::*;

impl Flow {
    /// The members as the status shows them, rebuilt only when the membership changed.
    pub(super) fn member_statuses(&mut self) -> Vec<MemberStatus> {
        let Some(own) = &self.ownership else {
            return Vec::new();
        };
        let version = own.version();
        if self.scale.members_cache.0 != version {
            let me = own.status();
            let (flow, duties) = (self.name(), self.duties_item());
            let members = me
                .members
                .iter()
                .map(|(id, (inst, items))| MemberStatus {
                    member_id: id.clone(),
                    instance: inst.clone(),
                    this_instance: *id == me.member_id,
                    partitions: items
                        .iter()
                        .filter(|i| i.flow() == flow && matches!(i, WorkItem::Partition { .. }))
                        .count(),
                    duties: items.contains(&duties),
                })
                .collect();
            self.scale.members_cache = (version, members);
        }
        self.scale.members_cache.1.clone()
    }

    /// The mirrors as the status shows them, with the partitions of `view`.
    fn mirror_statuses(&self, view: &PathView) -> Vec<MirrorStatus> {
        let Some(m) = &self.mirror else {
            return Vec::new();
        };
        let mut v: Vec<MirrorStatus> = m
            .view
            .records
            .values()
            .map(|r| {
                let (status, status_reason) = self.status_of(r);
                let mut ms = MirrorStatus {
                    topic: self.cfg.mirror_topic(&r.topic),
                    source_topic: r.topic.clone(),
                    link: r.link.clone(),
                    state: r.state.as_str().to_string(),
                    status: status.as_str().to_string(),
                    status_reason,
                    stopped_partitions: r.diverged.iter().map(|(p, w)| (*p, w.clone())).collect(),
                    ..MirrorStatus::default()
                };
                for st in view.of_topic(&r.topic) {
                    match r.offsets_mode(st.partition, st.map()) {
                        OffsetsMode::Identical => ms.identical_partitions.push(st.partition),
                        mode => ms.mapped_partitions.push((st.partition, mode.to_string())),
                    }
                }
                ms
            })
            .collect();
        v.sort_by(|a, b| a.topic.cmp(&b.topic));
        v
    }

    /// Publishes the members and the pause, and the mirrors when `view` is given, if they
    /// changed.
    /// Without `view`, the mirrors' statuses are brought up to date (an unreachable source
    /// shows without a look at the partitions).
    pub(super) fn publish_status(&mut self, view: Option<&PathView>) {
        let members = self.member_statuses();
        let paused = self.paused.clone();
        let mirrors = view.map(|v| self.mirror_statuses(v));
        let statuses: HashMap<String, (String, Option<String>)> = match (&self.mirror, view) {
            (Some(m), None) => m
                .view
                .records
                .values()
                .map(|r| {
                    let (kind, why) = self.status_of(r);
                    (r.topic.clone(), (kind.as_str().to_string(), why))
                })
                .collect(),
            _ => HashMap::new(),
        };
        let name = self.name();
        self.status.send_if_modified(|status| {
            let mut moved = false;
            if status.name != name {
                status.name = name;
                moved = true;
            }
            if let Some(mirrors) = mirrors {
                if status.mirrors != mirrors {
                    status.mirrors = mirrors;
                    moved = true;
                }
            }
            for ms in status.mirrors.iter_mut() {
                if let Some((kind, why)) = statuses.get(&ms.topic) {
                    if ms.status != *kind || ms.status_reason != *why {
                        ms.status = kind.clone();
                        ms.status_reason = why.clone();
                        moved = true;
                    }
                }
            }
            if status.members != members {
                status.members = members;
                moved = true;
            }
            if status.paused != paused {
                status.paused = paused;
                moved = true;
            }
            moved
        });
    }
}
