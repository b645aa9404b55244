//! `strait topics` / `strait groups`: change a running flow's allow/deny lists, like
//! `srm-control topics|groups`. Changes are stored in the target cluster and picked up by
//! `strait run` within the flow's refresh interval.

use std::fmt::Write as _;
use std::path::PathBuf;

use strait::config::Config;
use strait::replicate::lists::{self, ListKind, Lists};
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

fn config_lists(config: &Config, kind: ListKind, source: &str, target: &str) -> Result<Lists> {
    let flow = config
        .flows
        .iter()
        .find(|f| f.source == source && f.target == target)
        .ok_or_else(|| {
            let known: Vec<String> = config.flows.iter().map(|f| f.name()).collect();
            Error::invalid(format!(
                "{}: no flow {source}->{target} (flows: {})",
                config.origin,
                known.join(", ")
            ))
        })?;
    Ok(match kind {
        ListKind::Topics => Lists {
            include: flow.topics.clone(),
            exclude: flow.topics_exclude.clone(),
        },
        ListKind::Groups => Lists {
            include: flow.groups.clone(),
            exclude: flow.groups_exclude.clone(),
        },
    })
}

/// Applies the changes and returns the resulting lists as text.
pub async fn run(args: &ListArgs, kind: ListKind) -> Result<String> {
    let config = strait::config::load(&args.config).map_err(|e| Error::invalid(e.to_string()))?;
    let initial = config_lists(&config, kind, &args.source, &args.target)?;
    for re in args.add.iter().chain(&args.add_exclude) {
        regex::Regex::new(&format!("^(?:{re})$"))
            .map_err(|e| Error::invalid(format!("bad regex {re:?}: {e}")))?;
    }
    let replication_factor =
        strait::replicate::cluster_settings(&config, &args.target)?.replication_factor;
    let target = strait::replicate::connect_once(&config, &args.target).await?;
    let mut current = lists::read(&target, kind, &args.source, &args.target)
        .await?
        .unwrap_or(initial);
    let before = current.clone();
    for re in &args.add {
        if !current.include.contains(re) {
            current.include.push(re.clone());
        }
    }
    current.include.retain(|r| !args.remove.contains(r));
    for re in &args.add_exclude {
        if !current.exclude.contains(re) {
            current.exclude.push(re.clone());
        }
    }
    current.exclude.retain(|r| !args.remove_exclude.contains(r));
    if current != before {
        lists::write(
            &target,
            kind,
            &args.source,
            &args.target,
            &current,
            replication_factor,
        )
        .await?;
    }
    let what = match kind {
        ListKind::Topics => "topics",
        ListKind::Groups => "groups",
    };
    let mut out = String::new();
    if current != before {
        let _ = writeln!(
            out,
            "updated {what} lists of {}->{} (stored in cluster {})",
            args.source, args.target, args.target
        );
    }
    if args.list || current != before {
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
