//! A gateway that embeds strait: it runs one replication flow beside its own work, follows the
//! flow's status, and stops it cleanly.
//!
//! ```text
//! cargo run --example embed -- CONFIG FLOW [SECONDS]
//! ```
//!
//! `CONFIG` is a strait configuration (TOML or `mm2.properties`), `FLOW` the flow to run
//! (`source->target`). The gateway stops the flow once it has copied something and caught up
//! (lag 0), or after `SECONDS` (default 60), and prints what it saw, with the flow's series
//! read through [`Replicator::metrics`] (no HTTP listener: a gateway exports them itself).

use std::time::Duration;

use strait::{Replicator, ReplicatorError};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(config), Some(flow)) = (args.first(), args.get(1)) else {
        eprintln!("usage: embed CONFIG FLOW [SECONDS]");
        std::process::exit(2);
    };
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    if let Err(e) = run(config, flow, Duration::from_secs(seconds)).await {
        eprintln!("embed: {e}");
        // What the gateway tells its operator depends on what failed.
        let hint = match &e {
            ReplicatorError::Config(c) => format!("fix `{}` in {}", c.key, c.origin),
            ReplicatorError::UnknownFlow { known, .. } => {
                format!("run one of: {}", known.join(", "))
            }
            ReplicatorError::Http { addr, .. } => format!("choose another address than {addr}"),
            ReplicatorError::Auth(_) => "check the cluster's credentials".to_string(),
            _ => "see the log".to_string(),
        };
        eprintln!("embed: {hint}");
        std::process::exit(1);
    }
}

async fn run(config: &str, flow: &str, limit: Duration) -> Result<(), strait::ReplicatorError> {
    let replicator = Replicator::builder_from_file(config)?
        .only_flow(flow)
        .start()?;

    // The gateway's own work goes on beside the flow.
    let work = tokio::spawn(async {
        let mut ticks = 0u64;
        let mut every = tokio::time::interval(Duration::from_millis(100));
        loop {
            every.tick().await;
            ticks += 1;
            if ticks.is_multiple_of(50) {
                println!("gateway: {ticks} ticks of its own work");
            }
        }
    });

    let mut changes = replicator.subscribe();
    let deadline = tokio::time::Instant::now() + limit;
    let caught_up = loop {
        let status = replicator.status();
        if let Some(f) = status.flows.iter().find(|f| f.name == flow) {
            if let Some(why) = &f.stopped {
                println!("flow {flow} stopped: {why}");
                break false;
            }
            if status.ready && f.records > 0 && f.lag == 0 {
                println!("flow {flow} caught up: {} records copied", f.records);
                break true;
            }
        }
        tokio::select! {
            r = changes.changed() => if r.is_err() { break false },
            _ = tokio::time::sleep_until(deadline) => break false,
        }
    };
    if !caught_up {
        println!("flow {flow} did not catch up within {limit:?}");
    }
    report_metrics(&replicator, flow);
    work.abort();
    replicator.shutdown().await?;
    println!("flow {flow} stopped cleanly");
    Ok(())
}

/// What a gateway would export: the flow's totals (typed) and one line of the Prometheus text,
/// read in process.
fn report_metrics(replicator: &Replicator, flow: &str) {
    let metrics = replicator.metrics();
    let snapshot = metrics.snapshot();
    let records = snapshot.total("strait_replication_records_total", &[("flow", flow)]);
    let bytes = snapshot.total("strait_replication_bytes_total", &[("flow", flow)]);
    println!("metrics: flow {flow} records {records} bytes {bytes}");
    let text = metrics.render_prometheus();
    let prefix = format!("strait_replication_records_total{{flow=\"{flow}\"");
    if let Some(line) = text.lines().find(|l| l.starts_with(&prefix)) {
        println!("metrics line: {line}");
    }
}
