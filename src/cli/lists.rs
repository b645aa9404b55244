//! `strait topics` / `strait groups`: change a running flow's allow/deny lists, like
//! `srm-control topics|groups`. Changes are stored in the target cluster and picked up by
//! `strait run` within the flow's refresh interval.

use std::fmt::Write as _;
use std::path::PathBuf;

use strait::replicate::admin::{self, ListChange};
use strait::replicate::lists::ListKind;
use strait::{Error, Result};

/// Arguments of `strait topics` and `strait groups`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Configuration file (TOML or mm2.properties).
    #[arg(long)]
    pub config: PathBuf,
    /// Source cluster alias of the flow.
    #[arg(long)]
    pub source: String,
    /// Target cluster alias of the flow.
    #[arg(long)]
    pub target: String,
    /// Add a regex to the allow list.
    #[arg(long)]
    pub add: Vec<String>,
    /// Remove a regex from the allow list.
    #[arg(long)]
    pub remove: Vec<String>,
    /// Add a regex to the deny list.
    #[arg(long)]
    pub add_exclude: Vec<String>,
    /// Remove a regex from the deny list.
    #[arg(long)]
    pub remove_exclude: Vec<String>,
    /// Print the current lists.
    #[arg(long)]
    pub list: bool,
}

/// Applies the changes and returns the resulting lists as text.
pub async fn run(args: &ListArgs, kind: ListKind) -> Result<String> {
    let config = strait::config::load(&args.config).map_err(|e| Error::invalid(e.to_string()))?;
    let change = ListChange {
        add: args.add.clone(),
        remove: args.remove.clone(),
        add_exclude: args.add_exclude.clone(),
        remove_exclude: args.remove_exclude.clone(),
    };
    let outcome = admin::change_lists(&config, kind, &args.source, &args.target, &change)
        .await
        .map_err(admin::AdminError::into_error)?;
    let current = outcome.lists;
    let what = match kind {
        ListKind::Topics => "topics",
        ListKind::Groups => "groups",
    };
    let mut out = String::new();
    if outcome.changed {
        let _ = writeln!(
            out,
            "updated {what} lists of {}->{} (stored in cluster {})",
            args.source, args.target, args.target
        );
    }
    if args.list || outcome.changed {
        let _ = writeln!(out, "{what} allowed for {}->{}:", args.source, args.target);
        for r in &current.include {
            let _ = writeln!(out, "  {r}");
        }
        let _ = writeln!(out, "{what} excluded for {}->{}:", args.source, args.target);
        for r in &current.exclude {
            let _ = writeln!(out, "  {r}");
        }
    }
    Ok(out)
}
