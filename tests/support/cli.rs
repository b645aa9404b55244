//! Running strait's commands from a test, and looking through what they print: files in a
//! fresh folder, the command's output, its error lines, and the check that no configured
//! secret (or a 10-character piece of one) shows anywhere.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::topic_name;

/// A fresh folder under the system's temporary folder.
pub fn temp_dir(label: &str) -> PathBuf {
    let d = std::env::temp_dir().join(topic_name(&format!("strait-{label}")));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Writes `text` to `dir/name`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test file");
    p
}

/// `DIR/both-ways.toml`: mirror flows both ways between `west` and `east` for `topic`, as
/// Cluster Linking's bidirectional link: `west-link` (west -> east) and `east-link` (east ->
/// west).
pub fn both_ways_config(
    dir: &Path,
    west: &super::Broker,
    east: &super::Broker,
    topic: &str,
) -> PathBuf {
    let flow = |src: &str, dst: &str, link: &str| {
        format!(
            "[[flows]]\nsource = \"{src}\"\ntarget = \"{dst}\"\nmode = \"mirror\"\nlink = \"{link}\"\n\
             topics = [\"{topic}\"]\nrefresh_topics_interval_secs = 1\n\
             consumer_offset_sync_interval_ms = 500\n"
        )
    };
    write_file(
        dir,
        "both-ways.toml",
        &format!(
            "[clusters.west]\nbootstrap_servers = \"{}\"\n[clusters.east]\nbootstrap_servers = \"{}\"\n{}{}",
            west.bootstrap(),
            east.bootstrap(),
            flow("west", "east", "west-link"),
            flow("east", "west", "east-link"),
        ),
    )
}

/// `strait` with `env` set and no standard input.
pub fn strait_cmd(env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strait"));
    cmd.env_remove("STRAIT_LOG").stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `strait ARGS` to its end.
pub fn strait_out(args: &[&str], env: &[(&str, &str)]) -> Output {
    strait_cmd(env).args(args).output().expect("run strait")
}

/// `strait mirror VERB --config F --link LINK --topic T --timeout SECS`, to its end.
pub fn mirror_verb(config: &Path, verb: &str, link: &str, topic: &str, secs: u64) -> Output {
    strait_cmd(&[])
        .args(["mirror", verb, "--config"])
        .arg(config)
        .args([
            "--link",
            link,
            "--topic",
            topic,
            "--timeout",
            &secs.to_string(),
        ])
        .output()
        .expect("run strait mirror")
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

/// Standard output then standard error.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The lines of `out` holding `needle`, debug and trace lines left out.
pub fn lines_with<'a>(out: &'a str, needle: &str) -> Vec<&'a str> {
    out.lines()
        .filter(|l| l.contains(needle) && !l.contains("DEBUG") && !l.contains("TRACE"))
        .collect()
}

/// Fails if `text` contains any of `secrets`, or a 10-character piece of one (a truncated or
/// partly quoted secret).
pub fn assert_no_secret(what: &str, text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(
            !text.contains(s),
            "{what} contains a configured secret:\n{text}"
        );
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
