//! Small Java programs kept in `tests/java/`, compiled at test time against Apache Kafka's jars
//! (`strait::local_kafka::kafka_libs()`: kafka-clients, connect-mirror, connect-mirror-client,
//! ...) and run with `java -cp`, so a test can ask Apache Kafka's own code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A compiled program: its class folder and the jars it runs with.
pub struct JavaProgram {
    classes: PathBuf,
    libs: PathBuf,
    main: String,
}

/// Compiles `tests/java/<name>.java` with `javac` into a fresh temporary folder; panics with
/// javac's output if it does not compile.
pub fn compile(name: &str) -> JavaProgram {
    let libs = strait::local_kafka::kafka_libs()
        .unwrap_or_else(|e| panic!("Apache Kafka's jars for {name}.java: {e}"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/java")
        .join(format!("{name}.java"));
    let classes = std::env::temp_dir().join(crate::support::topic_name(&format!("java-{name}")));
    std::fs::create_dir_all(&classes).expect("class folder");
    let out = Command::new("javac")
        .arg("-cp")
        .arg(format!("{}/*", libs.display()))
        .arg("-d")
        .arg(&classes)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("run javac (a JDK 17 or newer on PATH): {e}"));
    assert!(
        out.status.success(),
        "javac {}:\n{}{}",
        source.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    JavaProgram {
        classes,
        libs,
        main: name.to_string(),
    }
}

impl JavaProgram {
    /// The folder of its compiled classes (for another JVM's class path).
    pub fn classes(&self) -> &Path {
        &self.classes
    }

    /// Runs the program with `args`, `stdin` on its standard input; returns its standard
    /// output, and panics with both outputs if it fails.
    pub fn run(&self, args: &[&str], stdin: &str) -> String {
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(format!(
                "{}:{}/*",
                self.classes.display(),
                self.libs.display()
            ))
            .arg(&self.main)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run java {}: {e}", self.main));
        if let Some(mut input) = child.stdin.take() {
            input.write_all(stdin.as_bytes()).expect("java stdin");
        }
        let out = child.wait_with_output().expect("java output");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "java {} {args:?} failed:\n{stdout}{}",
            self.main,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}
