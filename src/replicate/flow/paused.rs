//! A flow paused and resumed by an operator ([`crate::replicate::pause`]): every instance
//! looks for a changed pause record in the control topic every [`PAUSE_CHECK`], at start-up
//! before any partition is taken up, and tells the pump.

use super::*;
use crate::replicate::pause::{self, PauseRecord};

/// How often a flow looks for a changed pause record: one ListOffsets on the control topic,
/// which is read only when its end moved.
pub(super) const PAUSE_CHECK: Duration = Duration::from_secs(1);

impl Flow {
    /// Applies the stored pause record if the control topic changed since the last look.
    pub(super) async fn check_pause(&mut self) -> Result<()> {
        let end = mirrors::control_end(&self.target).await?;
        if end == self.pause_seen {
            return Ok(());
        }
        let record = pause::read(&self.target, self.source.name(), self.target.name()).await?;
        self.apply_pause(record);
        self.pause_seen = end;
        Ok(())
    }

    /// Pauses or resumes the pump when `record` changes whether the flow is paused.
    fn apply_pause(&mut self, record: Option<PauseRecord>) {
        let record = record.filter(|r| r.paused);
        if record.is_some() != self.paused.is_some() {
            match &record {
                Some(r) => tracing::info!(
                    flow = %self.name(),
                    reason = r.reason.as_deref().unwrap_or("-"),
                    "paused: nothing is fetched or written until the flow is resumed"
                ),
                None => tracing::info!(flow = %self.name(), "resumed"),
            }
            self.pump.send(Command::Pause(record.is_some()));
        }
        self.paused = record;
        self.publish_status(None);
    }
}
