//! `strait offsets` and `strait failover`: a consumer group's translated offsets on the target
//! cluster, from the checkpoints strait stored there. Both read only the target cluster, so
//! they work when the source is down.

use std::fmt::Write as _;
use std::path::PathBuf;

use strait::replicate::admin;
use strait::{Error, Result};

/// Arguments of `strait offsets` and `strait failover`.
#[derive(Debug, clap::Args)]
pub struct OffsetsArgs {
    /// Configuration file (TOML or mm2.properties).
    #[arg(long)]
    pub config: PathBuf,
    /// Source cluster alias (where the group consumed until now).
    #[arg(long)]
    pub source: String,
    /// Target cluster alias (where the group moves to).
    #[arg(long)]
    pub target: String,
    /// Consumer group.
    #[arg(long)]
    pub group: String,
    /// Print `topic,partition,offset` lines, the input of
    /// `kafka-consumer-groups --reset-offsets --from-file` (offsets only).
    #[arg(long)]
    pub export: bool,
    /// Show what failover would commit without committing (failover only).
    #[arg(long)]
    pub dry_run: bool,
}

async fn translated(args: &OffsetsArgs) -> Result<Vec<(String, i32, i64)>> {
    let config = strait::config::load(&args.config).map_err(|e| Error::invalid(e.to_string()))?;
    let (_, offsets) = admin::translated_offsets(&config, &args.source, &args.target, &args.group)
        .await
        .map_err(|e| e.into_error().cluster(&args.target))?;
    Ok(triples(&offsets))
}

fn triples(offsets: &[admin::GroupOffset]) -> Vec<(String, i32, i64)> {
    offsets
        .iter()
        .map(|o| (o.topic.clone(), o.partition, o.offset))
        .collect()
}

/// The offsets as a `GROUP TOPIC PARTITION <offset_header>` table.
fn table(group: &str, offset_header: &str, offsets: &[(String, i32, i64)]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:<32} {:>9} {:>12}",
        "GROUP", "TOPIC", "PARTITION", offset_header
    );
    for (t, p, o) in offsets {
        let _ = writeln!(out, "{group:<24} {t:<32} {p:>9} {o:>12}");
    }
    out
}

/// `strait offsets`: the group's offsets on the target.
pub async fn offsets(args: &OffsetsArgs) -> Result<String> {
    let offsets = translated(args).await?;
    if !args.export {
        return Ok(table(&args.group, "OFFSET", &offsets));
    }
    let mut out = String::new();
    for (t, p, o) in &offsets {
        let _ = writeln!(out, "{t},{p},{o}");
    }
    Ok(out)
}

/// `strait failover`: commits the group's translated offsets on the target.
pub async fn failover(args: &OffsetsArgs) -> Result<String> {
    let config = strait::config::load(&args.config).map_err(|e| Error::invalid(e.to_string()))?;
    let offsets = admin::failover_group(
        &config,
        &args.source,
        &args.target,
        &args.group,
        args.dry_run,
    )
    .await
    .map_err(|e| e.into_error().cluster(&args.target))?;
    let offsets = triples(&offsets);
    let mut out = table(&args.group, "NEW-OFFSET", &offsets);
    let _ = writeln!(
        out,
        "{}",
        if args.dry_run {
            format!("dry run: nothing committed on cluster {}", args.target)
        } else {
            format!("committed on cluster {}", args.target)
        }
    );
    Ok(out)
}
