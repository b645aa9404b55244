//! `strait run`: every flow of the configuration until SIGINT or SIGTERM.

use std::path::PathBuf;

use strait::error::{Error, Result};

/// Arguments of `strait run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Configuration file: strait TOML or a MirrorMaker 2 `mm2.properties`.
    #[arg(long)]
    pub config: PathBuf,
}

/// Waits for SIGINT or SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs the flows; returns when they stopped cleanly after a signal.
pub async fn run(args: &RunArgs) -> Result<String> {
    let config = strait::config::load(&args.config).map_err(|e| Error::invalid(e.to_string()))?;
    for u in &config.unsupported {
        tracing::warn!("{}: not supported, ignored: {u}", config.origin);
    }
    let flows: Vec<String> = config
        .flows
        .iter()
        .filter(|f| f.enabled)
        .map(|f| f.name())
        .collect();
    tracing::info!(flows = ?flows, "strait run starting");
    eprintln!(
        "strait run: flows {}; stop with Ctrl-C or SIGTERM",
        flows.join(", ")
    );
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut engine = tokio::spawn(strait::replicate::run(config, rx));
    tokio::select! {
        _ = stop_signal() => {}
        // Every flow stopped on its own (e.g. a refused password): report why and exit.
        r = &mut engine => {
            return match r {
                Ok(r) => r.map(|()| "strait run: every flow stopped\n".to_string()),
                Err(e) => Err(Error::invalid(format!("engine task failed: {e}"))),
            };
        }
    }
    eprintln!("strait run: stopping (persisting progress) ...");
    let _ = tx.send(true);
    match engine.await {
        Ok(r) => r.map(|()| "strait run: stopped cleanly\n".to_string()),
        Err(e) => Err(Error::invalid(format!("engine task failed: {e}"))),
    }
}
