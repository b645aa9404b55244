//! `strait` commands run by the security tests (`tests/secure.rs`, `tests/stores.rs`), their
//! output, and the check that no configured secret shows in it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Fails if `text` contains any of `secrets` (or a long enough piece of one).
pub fn assert_no_secret(what: &str, text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !text.contains(s),
            "{what} contains a configured secret:\n{text}"
        );
        // Also a 10-character piece of it (a truncated or partly quoted secret).
        let chars: Vec<char> = s.chars().collect();
        for w in chars.windows(10) {
            let piece: String = w.iter().collect();
            assert!(
                !text.contains(&piece),
                "{what} contains part of a configured secret ({piece}):\n{text}"
            );
        }
    }
}

/// Writes `text` to `dir/name`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test file");
    p
}

/// The strait binary with `env` set, `STRAIT_LOG` unset and no standard input.
pub fn strait_cmd(env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strait"));
    cmd.env_remove("STRAIT_LOG").stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Standard output then standard error.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `strait --log trace probe --config F --cluster ALIAS`.
pub fn probe(config: &Path, alias: &str, env: &[(&str, &str)]) -> Output {
    strait_cmd(env)
        .args(["--log", "trace", "probe", "--timeout", "10", "--config"])
        .arg(config)
        .args(["--cluster", alias])
        .output()
        .expect("run strait probe")
}
