//! Mirror statuses as Cluster Linking reports them (`ACTIVE`, `PAUSED`, `PENDING_STOPPED`,
//! `STOPPED`, `FAILED`, `SOURCE_UNAVAILABLE`, see [`crate::mirror::mirror_status`]): the
//! runner of a mirror flow records what failed in the mirror records (so `strait mirror`
//! shows it from the clusters alone), and every status it publishes says how long the source
//! has not answered.

use super::*;
use crate::mirror::MirrorStatusKind;

/// How a failure of a mirror whose source topic disappeared reads.
const GONE: &str = "gone from the metadata";

impl Flow {
    /// Notes whether the source cluster answered a health check (`Err`: its error).
    pub(super) fn note_source(&mut self, answered: std::result::Result<(), String>) {
        match answered {
            Ok(()) => self.source_down = None,
            Err(e) => match &mut self.source_down {
                Some((_, last)) => *last = e,
                None => self.source_down = Some((Instant::now(), e)),
            },
        }
    }

    /// The source's last error, once it has not answered for `source_unavailable_after`.
    fn source_problem(&self) -> Option<&str> {
        self.source_down
            .as_ref()
            .filter(|(since, _)| since.elapsed() >= self.cfg.source_unavailable_after)
            .map(|(_, e)| e.as_str())
    }

    /// The status of the mirror `rec`, with its reason.
    pub(super) fn status_of(&self, rec: &MirrorRecord) -> (MirrorStatusKind, Option<String>) {
        rec.status(self.source_problem())
    }

    /// Runner only: stores in the mirror records what failed since the last look, so the
    /// statuses survive a restart and `strait mirror status` shows them: partitions the data
    /// path stopped, and mirrors whose source topic is gone or back (`present`: the source's
    /// topics, when just read).
    pub(super) async fn record_failures(
        &mut self,
        view: &PathView,
        present: Option<&HashSet<String>>,
    ) -> Result<()> {
        let Some(m) = &self.mirror else {
            return Ok(());
        };
        let mut stops = Vec::new();
        for ((topic, p), st) in &view.parts {
            let Some(why) = &st.failed else { continue };
            if m.view
                .records
                .get(&**topic)
                .is_some_and(|r| !r.state.is_stopped() && !r.diverged.contains_key(p))
            {
                stops.push((topic.to_string(), *p, why.clone()));
            }
        }
        // A topic gone from the source's metadata was deleted, or strait may no longer describe
        // it; one that is back is taken up again (a topic created again has another topic id,
        // and its partitions then stop at take-up).
        let mut changed = Vec::new();
        if let Some(present) = present {
            for r in m.view.records.values() {
                if r.state.is_stopped() {
                    continue;
                }
                let there = present.contains(&r.topic);
                let was_gone = r.failed.as_deref().is_some_and(|f| f.contains(GONE));
                if !there && r.failed.is_none() {
                    let mut r = r.clone();
                    r.failed = Some(format!(
                        "the source topic {} is {GONE} of cluster {} (deleted, or strait may no longer describe it)",
                        r.topic,
                        self.source.name()
                    ));
                    r.updated_ms = store::now_ms();
                    tracing::error!(flow = %self.name(), topic = %r.topic, "mirror failed: {}", r.failed.as_deref().unwrap_or_default());
                    changed.push(r);
                } else if there && was_gone {
                    let mut r = r.clone();
                    r.failed = None;
                    r.updated_ms = store::now_ms();
                    tracing::info!(flow = %self.name(), topic = %r.topic, "the source topic is back: mirror taken up again");
                    changed.push(r);
                }
            }
        }
        for (topic, p, why) in stops {
            self.mark_diverged(&topic, p, why).await?;
        }
        for r in changed {
            self.mirror_write(r).await?;
        }
        Ok(())
    }
}
