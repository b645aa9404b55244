//! Scale-out as the control actor sees it: taking up ownership changes from the instance group
//! (the pump drops everything when the membership was lost, and releases units taken away
//! after their answers are in, their progress then stored), reporting what this instance holds, and the
//! health check that makes an instance that cannot reach a cluster leave the group.

use super::*;

impl Flow {
    /// Takes up ownership changes: drops everything if the membership was lost (writing
    /// nothing), releases units taken away (answers applied, progress stored), and reports what
    /// exists and what is held. Returns whether units were newly assigned.
    pub(super) async fn sync_ownership(&mut self) -> bool {
        let Some(own) = self.ownership.clone() else {
            return false;
        };
        let name = self.name();
        if own.lost_epoch() != self.scale.lost_seen {
            self.scale.lost_seen = own.lost_epoch();
            tracing::warn!(flow = %name, "group membership lost: stopping every partition without writing");
            self.pump.send(Command::Clear);
            self.retake.clear();
        }
        let mut gained = false;
        let version = own.version();
        let fresh = (version != self.scale.ownership_seen.0).then(|| own.assigned_for(&name));
        self.scale.ownership_seen.0 = version;
        let mut changed = false;
        if let Some(assigned) = fresh.filter(|a| *a != self.scale.assigned) {
            changed = true;
            gained = assigned.iter().any(|i| !self.scale.assigned.contains(i));
            self.scale.assigned = assigned;
            let view = self.pump.snapshot().await;
            let release: Vec<PartKey> = view
                .parts
                .keys()
                .filter(|(t, p)| !self.owns_partition(t, *p))
                .cloned()
                .collect();
            let retake: BTreeSet<PartKey> = std::mem::take(&mut self.retake);
            self.retake = retake
                .into_iter()
                .filter(|k| self.owns_partition(&k.0, k.1))
                .collect();
            if !release.is_empty() {
                // Dropped once their answers are in; their last position is stored.
                let last = self.pump.release(release).await;
                if self.may_write() {
                    if let Err(e) = self.write_progress(&last).await {
                        tracing::warn!(flow = %name, "progress write before releasing failed: {e}");
                    }
                }
                for k in last.parts.keys() {
                    tracing::info!(flow = %name, topic = %k.0, partition = k.1, "released to another instance");
                }
            }
        }
        // Reported when something changed, and every second for the rates and health.
        if changed || self.scale.ownership_seen.1.elapsed() >= Duration::from_secs(1) {
            let view = self.pump.snapshot().await;
            self.report_ownership(&view);
        }
        gained
    }

    /// Tells the group what this flow wants and holds (the partitions of `view`), their
    /// rates and whether both clusters answer.
    pub(super) fn report_ownership(&mut self, view: &PathView) {
        self.scale.ownership_seen.1 = Instant::now();
        let Some(own) = &self.ownership else {
            return;
        };
        if self.scale.wanted_items.is_empty() {
            return; // not refreshed yet: the group would see a flow with no work
        }
        let mut held: BTreeSet<WorkItem> = view
            .parts
            .keys()
            .map(|(t, p)| self.partition_item(t, *p))
            .collect();
        if self.owns_duties() {
            held.insert(self.duties_item());
        }
        let rates = view
            .parts
            .iter()
            .map(|((t, p), st)| (self.partition_item(t, *p), st.bytes))
            .collect();
        let health = match &self.scale.health.1 {
            Some(why) if self.scale.health.0.elapsed() > Duration::from_secs(15) => {
                Err(why.clone())
            }
            _ => Ok(()),
        };
        own.report(
            &self.name(),
            self.scale.wanted_items.clone(),
            held,
            rates,
            health,
        );
    }

    /// Tells the observer which cluster `e` could not reach (authentication and credentials
    /// included), so `/ready` says why; other errors are not about reaching a cluster, and a
    /// connection the broker closed is simply made again.
    pub(super) fn report_unreachable(&self, e: &crate::error::Error) {
        use crate::error::ErrorKind as K;
        let reaching = matches!(
            e.kind,
            K::Io(_) | K::Timeout(..) | K::Credentials(_) | K::Auth(_) | K::Tls(_)
        );
        let side = match e.context.cluster.as_deref() {
            Some(c) if c == self.source.name() => Side::Source,
            Some(c) if c == self.target.name() => Side::Target,
            _ => return,
        };
        if reaching {
            self.obs.disconnected(&self.name(), side, e.to_string());
        }
    }

    /// Checks every few seconds that both clusters answer (scale-out: an instance that cannot
    /// reach one leaves the group).
    pub(super) async fn check_health(&mut self) {
        if self.ownership.is_none() || Instant::now() < self.scale.next_health {
            return;
        }
        self.scale.next_health = Instant::now() + Duration::from_secs(2);
        let src = self.source.metadata(Some(&[])).await;
        let dst = self.target.metadata(Some(&[])).await;
        let name = self.name();
        for (side, r) in [(Side::Source, &src), (Side::Target, &dst)] {
            match r {
                Ok(_) => self.obs.connected(&name, side, true),
                Err(e) => {
                    // A failed call like any other: counted, as the reason `/ready` shows.
                    self.obs.error(&name, "health_check");
                    self.obs.disconnected(&name, side, e.to_string());
                }
            }
        }
        self.note_source(src.as_ref().map(|_| ()).map_err(|e| e.to_string()));
        match (src, dst) {
            (Ok(_), Ok(_)) => self.scale.health = (Instant::now(), None),
            (Err(e), _) => {
                self.scale.health.1 = Some(format!("cluster {}: {e}", self.source.name()))
            }
            (_, Err(e)) => {
                self.scale.health.1 = Some(format!("cluster {}: {e}", self.target.name()))
            }
        }
    }
}
