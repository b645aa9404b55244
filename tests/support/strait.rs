//! `strait run` as a child process of a test, its log in a file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `strait run --config CONFIG`, stderr (the log) written to a file.
pub struct StraitRun {
    child: Child,
    log: PathBuf,
    exited: bool,
}

impl StraitRun {
    /// Starts `strait --log FILTER run --config CONFIG`, logging to `log`.
    pub fn start_with(config: &Path, log: &Path, filter: &str) -> StraitRun {
        Self::start_with_args(config, log, filter, &[])
    }

    /// [`StraitRun::start_with`] with more `strait run` arguments.
    pub fn start_with_args(config: &Path, log: &Path, filter: &str, args: &[&str]) -> StraitRun {
        let file = std::fs::File::create(log).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_strait"))
            .args(["--log", filter, "run", "--config"])
            .arg(config)
            .args(args)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start strait run");
        StraitRun {
            child,
            log: log.to_path_buf(),
            exited: false,
        }
    }

    /// [`StraitRun::start_with`] at `info,strait=debug`.
    pub fn start(config: &Path, log: &Path) -> StraitRun {
        Self::start_with(config, log, "info,strait=debug")
    }

    /// The log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: &str) {
        if !self.exited {
            let _ = Command::new("kill")
                .args([sig, &self.child.id().to_string()])
                .status();
        }
    }

    /// SIGTERM; waits up to `timeout` for the exit (then kills) and returns whether it exited
    /// cleanly.
    pub fn terminate(&mut self, timeout: Duration) -> bool {
        self.signal("-TERM");
        let deadline = Instant::now() + timeout;
        while !self.exited && Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exited = true;
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill9();
        false
    }

    /// SIGTERM, and asserts a clean exit within 30 s; returns the log.
    pub fn stop(mut self) -> String {
        let clean = self.terminate(Duration::from_secs(30));
        assert!(
            clean,
            "strait run did not stop cleanly on SIGTERM:\n{}",
            self.log()
        );
        self.log()
    }

    /// kill -9, and waits for the process to end.
    /// The process id of the running `strait run`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds (user + system) the process has used so far, from `/proc/PID/stat`.
    pub fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which is in parentheses): utime is the 12th, stime
        // the 13th of those.
        let rest = stat.rsplit(')').next().unwrap_or_default();
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (ticks(11) + ticks(12)) / 100.0
    }

    /// Resident memory now and its peak (`VmRSS`, `VmHWM`), in bytes.
    pub fn memory(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
                * 1024
        };
        (kib("VmRSS:"), kib("VmHWM:"))
    }

    pub fn kill9(&mut self) {
        if !self.exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.exited = true;
        }
    }
}

impl Drop for StraitRun {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(20));
    }
}

/// GET `path` from a status server on a loopback `port`; (status code, body), `None` if it
/// does not answer.
pub fn status_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    Some((code, body))
}

/// Waits until `cond` holds, checking every 250 ms; after `timeout`, fails naming `what` and
/// showing `log()` (the log of the strait run or runs involved).
pub fn wait_for_log(
    what: &str,
    timeout: Duration,
    log: impl Fn() -> String,
    mut cond: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// [`wait_for_log`] showing `run`'s log.
pub fn wait_until(what: &str, timeout: Duration, run: &StraitRun, cond: impl FnMut() -> bool) {
    wait_for_log(what, timeout, || run.log(), cond);
}
