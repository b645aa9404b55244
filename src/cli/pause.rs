//! `strait pause` / `strait resume`: pause or resume a whole flow while it runs, as Kafka
//! Connect pauses a connector. The change is stored in the target cluster; every instance
//! running the flow applies it within a second, and instances started later start paused.

use std::path::PathBuf;

use strait::replicate::admin;
use strait::{Error, Result};

/// The flow a command names.
#[derive(Debug, clap::Args)]
pub struct FlowArgs {
    /// Configuration file (TOML or mm2.properties).
    #[arg(long)]
    pub config: PathBuf,
    /// Source cluster alias of the flow.
    #[arg(long)]
    pub source: String,
    /// Target cluster alias of the flow.
    #[arg(long)]
    pub target: String,
}

/// Arguments of `strait pause`.
#[derive(Debug, clap::Args)]
pub struct PauseArgs {
    /// The flow.
    #[command(flatten)]
    pub flow: FlowArgs,
    /// Why (shown by `strait status`, `/api/flows` and the page).
    #[arg(long)]
    pub reason: Option<String>,
}

/// Pauses (`paused`) or resumes the flow and says what it did.
pub async fn run(flow: &FlowArgs, paused: bool, reason: Option<String>) -> Result<String> {
    let config = strait::config::load(&flow.config).map_err(|e| Error::invalid(e.to_string()))?;
    let outcome = admin::pause_flow(&config, &flow.source, &flow.target, paused, reason)
        .await
        .map_err(admin::AdminError::into_error)?;
    let name = format!("{}->{}", flow.source, flow.target);
    let verb = if paused { "paused" } else { "resumed" };
    Ok(if outcome.changed {
        format!(
            "{name} {verb} (stored in cluster {}; every instance running it applies it within a second)\n",
            flow.target
        )
    } else {
        format!("{name} already {verb}: nothing changed\n")
    })
}
