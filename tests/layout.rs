//! The crate as a program embedding it sees it (docs/embedding.md): with default features off
//! (and the optional SASL features an embedder may turn on), strait depends on neither clap nor
//! tracing-subscriber, does not build the command's feature, and so compiles none of the bench
//! or the launchers; and the library hides no public module.

use std::path::Path;
use std::process::Command;

/// The feature sets an embedder uses: none, and each optional SASL mechanism.
const EMBEDDER_FEATURES: [&str; 3] = ["", "aws-msk-iam", "aws-msk-iam,gssapi"];

/// The crates only strait's command needs (feature `cli`).
const COMMAND_ONLY: [&str; 2] = ["clap", "tracing-subscriber"];

/// The library's modules that only the command, the bench and the integration tests use.
const COMMAND_MODULES: [&str; 4] = ["bench", "local_broker", "local_kafka", "local_mm2"];

/// `cargo tree` of strait's normal dependencies (no dev or build dependencies) with default
/// features off and `features` on, plus `extra` arguments; one line per crate, no prefixes.
fn cargo_tree(features: &str, extra: &[&str]) -> String {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["tree", "--locked", "--offline", "-p", "strait"])
        .args(["-e", "normal", "--prefix", "none", "--no-default-features"])
        .arg("--manifest-path")
        .arg(&manifest);
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    let out = cmd.args(extra).output().expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The crate names in `cargo tree --prefix none` output.
fn crate_names(tree: &str) -> Vec<&str> {
    tree.lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect()
}

#[test]
fn an_embedder_builds_no_command_dependency() {
    for features in EMBEDDER_FEATURES {
        let tree = cargo_tree(features, &[]);
        let names = crate_names(&tree);
        assert!(names.contains(&"tokio"), "not a dependency tree:\n{tree}");
        for name in COMMAND_ONLY {
            assert!(
                !names.contains(&name),
                "features [{features}] pull in {name}:\n{tree}"
            );
        }
        // libc stays in the tree through tokio; strait itself does not ask for it.
        let direct = cargo_tree(features, &["--depth", "1"]);
        assert!(
            !crate_names(&direct).contains(&"libc"),
            "features [{features}]: strait depends on libc directly:\n{direct}"
        );
    }
}

#[test]
fn an_embedder_does_not_turn_on_the_command() {
    for features in EMBEDDER_FEATURES {
        // Every feature of strait that is on, one line each (`strait feature "..."`).
        let on = cargo_tree(features, &["-e", "features", "-i", "strait"]);
        assert!(
            !on.contains("feature \"cli\""),
            "features [{features}] turn on the command:\n{on}"
        );
        assert!(
            !on.contains("feature \"default\""),
            "features [{features}] turn on the defaults:\n{on}"
        );
    }
    // The command's feature, for contrast, is what the defaults turn on.
    let defaults = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "--offline", "-p", "strait"])
        .args(["-e", "features", "-i", "strait", "--prefix", "none"])
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("run cargo tree");
    assert!(
        String::from_utf8_lossy(&defaults.stdout).contains("feature \"cli\""),
        "the default features do not include the command: {}",
        String::from_utf8_lossy(&defaults.stderr)
    );
}

#[test]
fn the_command_modules_are_behind_its_feature_and_no_module_is_hidden() {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("read src/lib.rs");
    assert!(!lib.contains("doc(hidden)"), "src/lib.rs hides an item");
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    for module in COMMAND_MODULES {
        let decl = format!("pub mod {module};");
        let at = lines
            .iter()
            .position(|l| *l == decl)
            .unwrap_or_else(|| panic!("src/lib.rs has no `{decl}`"));
        assert!(
            at > 0 && lines[at - 1] == "#[cfg(feature = \"cli\")]",
            "`{decl}` is not behind the `cli` feature"
        );
    }
    for line in &lines {
        if let Some(module) = line
            .strip_prefix("pub mod ")
            .and_then(|m| m.strip_suffix(';'))
        {
            let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
            let has_docs = [format!("{module}.rs"), format!("{module}/mod.rs")]
                .iter()
                .filter_map(|f| std::fs::read_to_string(file.join(f)).ok())
                .any(|text| text.starts_with("//!"));
            assert!(has_docs, "the public module {module} has no documentation");
        }
    }
}
