//! `strait mirror truncate-and-restore`: after a failover, the topic on the cluster it was
//! failed over from becomes a mirror again; what it holds past the failover point is cut,
//! reported and saved (see [`strait::replicate::restore`]).

use std::path::PathBuf;
use std::time::Duration;

use strait::replicate::admin::AdminError;
use strait::replicate::restore::{self, RestoreOptions, RestoreOutcome};
use strait::{Error, Result};

/// Arguments of `strait mirror truncate-and-restore`.
#[derive(Debug, clap::Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub target: super::mirror::Target,
    /// The topic (same name on both clusters).
    #[arg(long)]
    pub topic: String,
    /// Only show what would be cut, per partition; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Directory for the cut records (default `truncated-<topic>-<ms>` here).
    #[arg(long)]
    pub save_to: Option<PathBuf>,
    /// Seconds to wait for the new mirror to copy far enough to restore consumer groups.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
}

/// Runs the command and returns its report; an error while group offsets still wait.
pub async fn run(a: &RestoreArgs) -> Result<String> {
    let config =
        strait::config::load(&a.target.config).map_err(|e| Error::invalid(e.to_string()))?;
    let opts = RestoreOptions {
        dry_run: a.dry_run,
        save_to: a.save_to.clone(),
        timeout: Duration::from_secs(a.timeout),
    };
    let out = restore::truncate_and_restore(&config, a.target.link.as_deref(), &a.topic, &opts)
        .await
        .map_err(AdminError::into_error)?;
    let text = report(&out);
    if out.waiting > 0 {
        return Err(Error::invalid(format!(
            "{text}{} group offset(s) of topic {} wait for link {} to copy that far; the restore is done: run the command again to restore them",
            out.waiting, out.plan.topic, out.plan.link
        )));
    }
    Ok(text)
}

/// The report: what is (or would be) cut per partition, where it was saved, the groups.
fn report(out: &RestoreOutcome) -> String {
    let plan = &out.plan;
    let (old, new) = &out.clusters;
    let mut s = String::new();
    let verb = match (out.dry_run, out.earlier) {
        (true, _) => "would cut",
        (false, true) => "was restored earlier; cut",
        (false, false) => "cut",
    };
    s.push_str(&format!(
        "topic {} on cluster {old} {verb} at the failover point, then mirrored from cluster {new} by link {}\n",
        plan.topic, plan.link
    ));
    let mut rows = vec![vec![
        "Partition".to_string(),
        "CutAt".into(),
        "LogEnd".into(),
        "OffsetsCut".into(),
        "SourceOffset".into(),
    ]];
    for (p, c) in restore::cut_rows(plan) {
        rows.push(vec![
            p.to_string(),
            c.at.to_string(),
            c.end.to_string(),
            c.offsets_cut().to_string(),
            c.source_at.to_string(),
        ]);
    }
    s.push_str(&super::table::format(&rows));
    if out.dry_run {
        s.push_str(&format!(
            "{} offsets would be cut; nothing was changed\n",
            plan.offsets_cut()
        ));
    } else {
        s.push_str(&format!(
            "{} records cut ({} offsets) saved to {}\n",
            plan.records_saved,
            plan.offsets_cut(),
            plan.saved_to
        ));
    }
    for (group, parts) in &plan.groups {
        let at: Vec<String> = parts.iter().map(|(p, o)| format!("{p}:{o}")).collect();
        let done = out.committed.iter().any(|(g, _, _)| g == group);
        let how = match (out.dry_run, done, out.busy.contains(group)) {
            (true, _, _) => "would be restored",
            (_, true, _) => "restored",
            (_, _, true) => "left alone (active members)",
            _ if out.waiting == 0 => "already has offsets (left as they are)",
            _ => "not restored yet",
        };
        s.push_str(&format!(
            "group {group}: {how} on cluster {old} (partition:offset on cluster {new}: {})\n",
            at.join(" ")
        ));
    }
    s
}
