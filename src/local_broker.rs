//! Local nisshi brokers started as child processes (for `strait demo` and `strait bench`):
//! in-memory storage on a free loopback port, stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::{Cluster, ClusterConfig};
use crate::error::{Error, Result};

/// A nisshi broker this process started; killed on drop.
#[derive(Debug)]
pub struct LocalBroker {
    name: String,
    addr: String,
    child: Child,
}

impl Drop for LocalBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The nisshi binary: `explicit` if given, else `nisshi` on PATH, else `~/.cargo/bin/nisshi`.
pub fn nisshi_path(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("nisshi"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cargo/bin/nisshi"));
    }
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        Error::invalid(
            "nisshi not found: run `bash scripts/setup.sh` (or `cargo install nisshi@0.8.1 --locked \
             --ignore-rust-version --no-default-features --features dynostore,libsql`)",
        )
    })
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(Error::from)?;
    Ok(l.local_addr().map_err(Error::from)?.port())
}

impl LocalBroker {
    /// Starts `nisshi broker` with cluster id `name` on a free 127.0.0.1 port and waits until
    /// it answers ApiVersions (30 s at most).
    pub async fn start(nisshi: &Path, name: &str) -> Result<LocalBroker> {
        let port = free_port()?;
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(nisshi)
            .args([
                "broker",
                "--cluster-id",
                name,
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .arg("--storage-engine")
            .arg(format!("memory://{name}/"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                Error::invalid(format!("cannot start nisshi ({}): {e}", nisshi.display()))
            })?;
        let broker = LocalBroker {
            name: name.to_string(),
            addr: format!("127.0.0.1:{port}"),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut cfg = ClusterConfig::new(name, &broker.addr);
            cfg.retries = 0;
            cfg.connection.connect_timeout = Duration::from_secs(1);
            if Cluster::connect(cfg).await.is_ok() {
                return Ok(broker);
            }
            if Instant::now() > deadline {
                return Err(Error::invalid(format!(
                    "cluster {name} did not come up on {}",
                    broker.addr
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The cluster id it was started with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its `host:port`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Its process id (the bench reads its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}
