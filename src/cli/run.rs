//! `strait run`: every flow of the configuration until SIGINT or SIGTERM.

use std::path::PathBuf;

use strait::{Error, Result};

/// Arguments of `strait run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Configuration file: strait TOML or a MirrorMaker 2 `mm2.properties`.
    #[arg(long)]
    pub config: PathBuf,
    /// Serve the status page, `/metrics` and the REST API on this `host:port` instead of the
    /// configuration's `http` address (port 0 picks a free port; the address is logged). Lets
    /// several instances with one configuration run on one machine.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
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
    let mut config =
        strait::config::load(&args.config).map_err(|e| Error::invalid(e.to_string()))?;
    if let Some(addr) = &args.http {
        let loopback = strait::config::is_loopback_listen(addr);
        match config.http.as_mut() {
            Some(h) if loopback || h.allow_remote => h.addr = addr.clone(),
            None if loopback => config.http = Some(strait::config::HttpSettings::new(addr)),
            _ => {
                return Err(Error::invalid(format!(
                    "--http {addr}: not a loopback address; set `allow_remote = true` in the configuration's [http] to serve on other interfaces"
                )))
            }
        }
    }
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
