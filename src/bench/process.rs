//! A measured child process: started, stopped with SIGTERM, and reaped with `wait4` so its own
//! CPU time is read from the kernel's accounting. Peak RSS is the child's `VmHWM` read from
//! `/proc` before it stops: `ru_maxrss` would not do, as Linux carries the RSS of the forking
//! parent over into it across `exec`.

use std::process::{Child, Command};

use super::report::ProcessCost;
use crate::error::{Error, Result};

/// A running child whose resource usage is read when it is reaped. Killed on drop if still
/// running.
#[derive(Debug)]
pub struct Measured {
    child: Option<Child>,
    what: String,
    peak_rss: Option<u64>,
}

impl Measured {
    /// Spawns `cmd`; `what` names it in errors.
    pub fn spawn(mut cmd: Command, what: &str) -> Result<Measured> {
        let child = cmd
            .spawn()
            .map_err(|e| Error::invalid(format!("cannot start {what}: {e}")))?;
        Ok(Measured {
            child: Some(child),
            what: what.to_string(),
            peak_rss: None,
        })
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// The child's stdout, if it was piped (taken once).
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.as_mut().and_then(|c| c.stdout.take())
    }

    /// True while the child runs (it is not reaped by this check).
    pub fn is_running(&self) -> bool {
        let pid = self.id() as libc::pid_t;
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid with WNOWAIT only inspects the child; `info` is a valid out-pointer.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is set by waitid when a child changed state, zero otherwise.
        r == 0 && unsafe { info.si_pid() } == 0
    }

    /// Reads the child's peak RSS so far (`VmHWM`) and keeps it for the cost returned when it
    /// is reaped; call it just before the child ends.
    pub fn sample_peak_rss(&mut self) -> Option<u64> {
        let bytes = peak_rss(self.id())?;
        self.peak_rss = Some(self.peak_rss.unwrap_or(0).max(bytes));
        self.peak_rss
    }

    /// Takes the child's stdin, if it was piped (closing it tells `bench-relay` to exit).
    pub fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.as_mut().and_then(|c| c.stdin.take())
    }

    /// Sends SIGTERM and reaps the child. Returns its exit code (None when killed by a signal)
    /// and what it used.
    pub fn terminate(mut self) -> Result<(Option<i32>, ProcessCost)> {
        self.sample_peak_rss();
        // SAFETY: kill on our own child's pid, which is not reaped yet.
        unsafe {
            libc::kill(self.id() as libc::pid_t, libc::SIGTERM);
        }
        self.wait()
    }

    /// Waits for the child to exit and reaps it. Returns its exit code (None when killed by a
    /// signal) and what it used.
    pub fn wait(mut self) -> Result<(Option<i32>, ProcessCost)> {
        let Some(child) = self.child.take() else {
            return Err(Error::invalid(format!("{} was already reaped", self.what)));
        };
        let pid = child.id() as libc::pid_t;
        let mut status: libc::c_int = 0;
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = loop {
            // SAFETY: wait4 on our own unreaped child with valid out-pointers.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
                continue;
            }
            break r;
        };
        // The child is reaped: std must not wait for it again (its pipes are closed first).
        let mut child = child;
        drop((child.stdin.take(), child.stdout.take(), child.stderr.take()));
        std::mem::forget(child);
        if r != pid {
            return Err(Error::invalid(format!(
                "cannot reap {}: {}",
                self.what,
                std::io::Error::last_os_error()
            )));
        }
        let code = if libc::WIFEXITED(status) {
            Some(libc::WEXITSTATUS(status))
        } else {
            None
        };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Ok((
            code,
            ProcessCost {
                user_seconds: secs(usage.ru_utime),
                system_seconds: secs(usage.ru_stime),
                // Without a sample, ru_maxrss (KiB on Linux), which may include the parent's.
                peak_rss_bytes: self
                    .peak_rss
                    .unwrap_or(usage.ru_maxrss.max(0) as u64 * 1024),
            },
        ))
    }
}

/// The peak resident set size of process `pid` so far (`VmHWM` of `/proc/<pid>/status`), in
/// bytes; `None` when it cannot be read.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// CPU seconds (user plus system, all threads) process `pid` has used so far, from
/// `/proc/<pid>/stat`; `None` when it cannot be read. Resolution: one clock tick (10 ms).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    cpu_times(pid).map(|(user, system)| user + system)
}

/// User and system CPU seconds (all threads) process `pid` has used so far, from
/// `/proc/<pid>/stat`; `None` when it cannot be read.
pub fn cpu_times(pid: u32) -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime as f64 / ticks as f64, stime as f64 / ticks as f64))
}

/// CPU seconds of several processes, sampled together; the difference of two samples is what
/// each used in between.
#[derive(Debug, Clone, Default)]
pub struct CpuSample(Vec<Option<f64>>);

impl CpuSample {
    /// Samples `pids` now.
    pub fn take(pids: &[u32]) -> CpuSample {
        CpuSample(pids.iter().map(|&p| cpu_seconds(p)).collect())
    }

    /// CPU seconds process `i` used since `earlier` (`None` if either sample failed).
    pub fn since(&self, earlier: &CpuSample, i: usize) -> Option<f64> {
        let now = (*self.0.get(i)?)?;
        let then = (*earlier.0.get(i)?)?;
        Some((now - then).max(0.0))
    }
}

/// The whole machine's CPU time from `/proc/stat` (all cores): busy and total jiffies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineSample {
    busy: u64,
    total: u64,
}

impl MachineSample {
    /// Samples the machine now (`None` off Linux or when `/proc/stat` cannot be read).
    pub fn take() -> Option<MachineSample> {
        MachineSample::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Parses the `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq steal.
    /// Idle and iowait are not busy.
    fn parse(stat: &str) -> Option<MachineSample> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        if v.len() < 5 {
            return None;
        }
        let total: u64 = v.iter().sum();
        Some(MachineSample {
            busy: total - v[3] - v[4],
            total,
        })
    }

    /// Fraction of all cores busy since `earlier` (0 to 1; `None` if no time passed).
    pub fn busy_since(&self, earlier: &MachineSample) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let busy = self.busy.checked_sub(earlier.busy)?;
        (total > 0).then(|| busy as f64 / total as f64)
    }
}

impl Drop for Measured {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaps_and_reads_usage() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 3",
        ]);
        let m = Measured::spawn(cmd, "a shell loop").unwrap();
        let (code, cost) = m.wait().unwrap();
        assert_eq!(code, Some(3));
        assert!(cost.cpu_seconds() > 0.0);
        assert!(cost.peak_rss_bytes > 0);
    }

    #[test]
    fn cpu_seconds_of_a_busy_child_grow() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 5",
        ]);
        let m = Measured::spawn(cmd, "a shell loop").unwrap();
        let before = CpuSample::take(&[m.id(), 0]);
        // Sampled until the loop has used some CPU: on a busy machine it gets less of a core,
        // and a fixed wait would measure the machine, not the sampling.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let (used, after) = loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let after = CpuSample::take(&[m.id(), 0]);
            let used = after.since(&before, 0).unwrap();
            if used > 0.05 || std::time::Instant::now() > deadline {
                break (used, after);
            }
        };
        assert!(used > 0.05 && used < 20.0, "{used}");
        assert_eq!(after.since(&before, 1), None, "pid 0 has no /proc entry");
        let (_, _) = m.terminate().unwrap();
    }

    #[test]
    fn machine_busy_from_proc_stat() {
        let a = MachineSample::parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5\n").unwrap();
        let b = MachineSample::parse("cpu  250 0 100 900 50 0 0 0 0 0\n").unwrap();
        // 200 busy of 300 jiffies.
        assert_eq!(b.busy_since(&a), Some(200.0 / 300.0));
        assert_eq!(a.busy_since(&a), None);
        assert_eq!(a.busy_since(&b), None);
        assert_eq!(MachineSample::parse("cpu0 1 2 3 4 5\n"), None);
        assert_eq!(MachineSample::parse("cpu  1 x 3 4 5\n"), None);
        if cfg!(target_os = "linux") {
            assert!(MachineSample::take().is_some());
        }
    }

    #[test]
    fn terminate_stops_a_sleeper() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut m = Measured::spawn(cmd, "sleep").unwrap();
        assert!(m.is_running());
        let rss = m.sample_peak_rss().unwrap();
        assert!(rss > 0 && rss < 64 << 20, "{rss}");
        let (code, _) = m.terminate().unwrap();
        assert_eq!(code, None);
    }
}
