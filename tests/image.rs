//! The container image (docs/image.md), built by `scripts/image.sh` without a container engine:
//! its OCI layout is well formed and reproducible (every digest and size checked, a second
//! build gives the same digests), its configuration is as documented (non-root user, entry
//! point, command, status port, labels) and the Dockerfile says the same; and its binary,
//! unpacked from the layer and run under chroot as the image's user on a read-only root,
//! replicates records between two Apache Kafka clusters, each exactly once, and stops cleanly
//! on SIGTERM.
//!
//! chroot and the read-only bind mount need root (CI runs as root): as any other user the
//! replication test fails, saying so, rather than passing without running.
//!
//! The first run builds the static release binary: 24 minutes cold on a loaded 2-core machine,
//! seconds once built (target-static/ is reused). So the two tests that need the image are
//! `#[ignore]`d: `cargo test --test image -- --include-ignored` runs them, and
//! `STRAIT_IMAGE_TEST=1 bash scripts/test.sh` does so in the test command. The Dockerfile test
//! always runs.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::kafka::start_kafka;
use support::strait::{status_get, wait_for_log};
use support::{consume_all, create_topic, produce_records, topic_name, Codec, TestRecord};

const USER: &str = "65532:65532";
const CONFIG: &str = "/etc/strait/strait.toml";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layout() -> PathBuf {
    repo().join("target/image/strait-oci")
}

/// Runs `scripts/image.sh` (a no-op build when the binary is up to date); its summary (JSON).
fn build_image() -> Value {
    let out = Command::new("bash")
        .arg(repo().join("scripts/image.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/image.sh");
    assert!(out.status.success(), "scripts/image.sh failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let json = &text[text.find('{').expect("the script's summary")..];
    serde_json::from_str(json).expect("the script's summary is JSON")
}

/// The image, built once per test binary.
fn image() -> &'static Value {
    static BUILT: OnceLock<Value> = OnceLock::new();
    BUILT.get_or_init(build_image)
}

fn sha256(data: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, data);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// A blob of the layout, checked against its descriptor (digest and size).
fn blob(descriptor: &Value) -> Vec<u8> {
    let digest = descriptor["digest"].as_str().expect("digest");
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    let data = std::fs::read(layout().join("blobs/sha256").join(hex)).expect("blob");
    assert_eq!(sha256(&data), digest, "blob content matches its digest");
    assert_eq!(
        Some(data.len() as u64),
        descriptor["size"].as_u64(),
        "blob size matches its descriptor ({digest})"
    );
    data
}

struct Image {
    config: Value,
    layer: PathBuf,
    manifest_digest: String,
}

/// Reads the layout from index.json down, checking every digest and size on the way.
fn read_layout() -> Image {
    let oci_layout: Value =
        serde_json::from_slice(&std::fs::read(layout().join("oci-layout")).expect("oci-layout"))
            .expect("oci-layout JSON");
    assert_eq!(oci_layout["imageLayoutVersion"], "1.0.0");
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout().join("index.json")).expect("index.json"))
            .expect("index JSON");
    assert_eq!(index["schemaVersion"], 2);
    let manifests = index["manifests"].as_array().expect("manifests");
    assert_eq!(manifests.len(), 1, "one image: {index}");
    let desc = &manifests[0];
    assert_eq!(
        desc["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(desc["platform"]["os"], "linux");
    assert_eq!(desc["platform"]["architecture"], "amd64");
    assert_eq!(
        desc["annotations"]["org.opencontainers.image.ref.name"],
        env!("CARGO_PKG_VERSION")
    );
    let manifest: Value = serde_json::from_slice(&blob(desc)).expect("manifest JSON");
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let config: Value = serde_json::from_slice(&blob(&manifest["config"])).expect("config JSON");
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "one layer, from scratch: {manifest}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let gz = blob(&layers[0]);
    // The config's diff_id is the digest of the uncompressed layer.
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut tar)
        .expect("gunzip the layer");
    assert_eq!(
        config["rootfs"]["diff_ids"],
        serde_json::json!([sha256(&tar)]),
        "diff_id of the layer"
    );
    // docker-archive's manifest.json names the same blobs.
    let docker: Value = serde_json::from_slice(
        &std::fs::read(layout().join("manifest.json")).expect("manifest.json"),
    )
    .expect("manifest.json JSON");
    let hex = |d: &Value| d["digest"].as_str().expect("digest")[7..].to_string();
    assert_eq!(
        docker[0]["Config"],
        format!("blobs/sha256/{}", hex(&manifest["config"]))
    );
    assert_eq!(
        docker[0]["Layers"],
        serde_json::json!([format!("blobs/sha256/{}", hex(&layers[0]))])
    );
    assert_eq!(
        docker[0]["RepoTags"],
        serde_json::json!([format!("strait:{}", env!("CARGO_PKG_VERSION"))])
    );
    Image {
        config,
        layer: layout().join("blobs/sha256").join(hex(&layers[0])),
        manifest_digest: desc["digest"].as_str().expect("digest").to_string(),
    }
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run a command");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "builds the static release binary (minutes cold): --include-ignored, or STRAIT_IMAGE_TEST=1 in scripts/test.sh"]
fn the_image_is_a_valid_reproducible_oci_layout_run_as_non_root() {
    let summary = image();
    let image = read_layout();
    assert_eq!(summary["manifest"], image.manifest_digest);

    let c = &image.config;
    assert_eq!(c["os"], "linux");
    assert_eq!(c["architecture"], "amd64");
    let user = c["config"]["User"].as_str().expect("User");
    assert_eq!(user, USER);
    assert!(
        !user.starts_with("0:") && !user.starts_with("root"),
        "non-root"
    );
    assert_eq!(c["config"]["Entrypoint"], serde_json::json!(["/strait"]));
    assert_eq!(
        c["config"]["Cmd"],
        serde_json::json!(["run", "--config", CONFIG])
    );
    assert_eq!(
        c["config"]["ExposedPorts"],
        serde_json::json!({"8083/tcp": {}})
    );
    let labels = &c["config"]["Labels"];
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    assert_eq!(labels["org.opencontainers.image.title"], "strait");

    // The layer: exactly these entries, owned by root, nothing writable but /tmp.
    let listing = run(Command::new("tar")
        .args(["-tvzf"])
        .arg(&image.layer)
        .args(["--numeric-owner"]));
    let mut entries = Vec::new();
    for line in listing.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (mode, owner, path) = (f[0], f[1], f[f.len() - 1]);
        assert_eq!(owner, "0/0", "{line}");
        if path != "tmp/" {
            // Group and others: no write bit (only root, whom the image does not run as).
            assert!(
                mode.as_bytes()[5] != b'w' && mode.as_bytes()[8] != b'w',
                "only root may write {line}"
            );
        }
        entries.push((mode.to_string(), path.to_string()));
    }
    let paths: Vec<&str> = entries.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(
        paths,
        [
            "etc/",
            "etc/group",
            "etc/hosts",
            "etc/nsswitch.conf",
            "etc/passwd",
            "etc/ssl/",
            "etc/ssl/certs/",
            "etc/ssl/certs/ca-certificates.crt",
            "etc/strait/",
            "strait",
            "tmp/",
        ]
    );
    let mode = |p: &str| entries.iter().find(|e| e.1 == p).expect("entry").0.clone();
    assert_eq!(mode("strait"), "-rwxr-xr-x");
    assert_eq!(mode("tmp/"), "drwxrwxrwt");
    let passwd = run(Command::new("tar")
        .args(["-xzOf"])
        .arg(&image.layer)
        .arg("etc/passwd"));
    assert!(
        passwd
            .lines()
            .any(|l| l.starts_with("strait:x:65532:65532:")),
        "the image's user in /etc/passwd: {passwd}"
    );

    // Reproducible: a second build gives the same bytes, so the same digests.
    let index = std::fs::read(layout().join("index.json")).expect("index");
    let archive = std::fs::read(repo().join("target/image/strait-oci.tar")).expect("archive");
    let again = build_image();
    assert_eq!(
        again["manifest"], summary["manifest"],
        "same manifest digest"
    );
    assert_eq!(again["layer"], summary["layer"], "same layer digest");
    assert_eq!(
        std::fs::read(layout().join("index.json")).expect("index"),
        index
    );
    assert!(
        std::fs::read(repo().join("target/image/strait-oci.tar")).expect("archive") == archive,
        "the archive is byte-identical"
    );
    // The archive holds the layout.
    let listing = run(Command::new("tar")
        .arg("-tf")
        .arg(repo().join("target/image/strait-oci.tar")));
    for f in ["oci-layout", "index.json", "manifest.json"] {
        assert!(listing.lines().any(|l| l == f), "{f} in the archive");
    }
    eprintln!(
        "image {}: layer {} bytes compressed, {} bytes of files",
        summary["manifest"], summary["layer_bytes"], summary["unpacked_bytes"]
    );
}

/// The Dockerfile builds the same image: same user, entry point, command, port, version and
/// files as scripts/image.sh.
#[test]
fn the_dockerfile_says_what_the_script_builds() {
    let docker = std::fs::read_to_string(repo().join("Dockerfile")).expect("Dockerfile");
    let script = std::fs::read_to_string(repo().join("scripts/oci_image.py")).expect("script");
    let has = |line: &str| docker.lines().any(|l| l.trim() == line);
    assert!(has("FROM scratch"));
    assert!(has(&format!("USER {USER}")));
    assert!(has(r#"ENTRYPOINT ["/strait"]"#));
    assert!(has(&format!(r#"CMD ["run", "--config", "{CONFIG}"]"#)));
    assert!(has("EXPOSE 8083"));
    assert!(has(
        "ENV PATH=/ SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"
    ));
    assert!(docker.contains(&format!(
        r#"org.opencontainers.image.version="{}""#,
        env!("CARGO_PKG_VERSION")
    )));
    assert!(docker.contains("--no-default-features --features cli,aws-msk-iam"));
    assert!(script.contains(&format!(r#"USER = "{USER}""#)));
    assert!(script.contains(r#"ETC_FILES = ["group", "hosts", "nsswitch.conf", "passwd"]"#));
    for f in ["group", "hosts", "nsswitch.conf", "passwd"] {
        assert!(
            docker.contains(&format!("deploy/image/rootfs/etc/{f}")),
            "the Dockerfile copies /etc/{f}"
        );
    }
    for d in ["/rootfs/etc/ssl/certs", "/rootfs/etc/strait", "/rootfs/tmp"] {
        assert!(docker.contains(d), "the Dockerfile makes {d}");
    }
}

/// `strait run` from the unpacked image: chroot into the layer's files as 65532:65532, the
/// root bind-mounted read-only in a mount namespace of its own, no /proc.
struct Contained {
    child: Child,
    log: PathBuf,
}

impl Contained {
    fn start(root: &Path, log: &Path) -> Contained {
        let file = std::fs::File::create(log).expect("log file");
        let script = "mount --bind \"$0\" \"$0\" && mount -o remount,ro,bind \"$0\" \"$0\" \
                      && exec chroot --userspec=\"$1\" \"$0\" /strait --log info,strait=debug \
                      run --config \"$2\"";
        // unshare and sh exec: the child's pid is strait's.
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", script])
            .arg(root)
            .args([USER, CONFIG])
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start strait from the image");
        Contained {
            child,
            log: log.to_path_buf(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn proc_file(&self, name: &str) -> String {
        std::fs::read_to_string(format!("/proc/{}/{name}", self.child.id())).unwrap_or_default()
    }

    /// SIGTERM; the exit status within 30 s.
    fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Contained {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

#[test]
#[ignore = "builds the static release binary (minutes cold) and needs root: --include-ignored, or STRAIT_IMAGE_TEST=1 in scripts/test.sh"]
fn the_unpacked_image_replicates_each_record_once_as_non_root_on_a_read_only_root() {
    let uid = run(Command::new("id").arg("-u"));
    assert_eq!(
        uid.trim(),
        "0",
        "this test runs the image's binary under chroot and a read-only bind mount, which \
         need root: run it as root (CI does), e.g. `sudo -E cargo test --test image -- --include-ignored`"
    );
    image();
    let image = read_layout();

    const TOPIC: &str = "orders";
    const RECORDS: usize = 2000;
    const PARTITIONS: i32 = 3;
    let a = start_kafka("a");
    let b = start_kafka("b");
    create_topic(&a.bootstrap(), TOPIC, PARTITIONS);
    let records: Vec<TestRecord> = (0..RECORDS)
        .map(|i| TestRecord {
            partition: Some((i % PARTITIONS as usize) as i32),
            ..TestRecord::kv(format!("k{i}"), format!("v{i:05}"))
        })
        .collect();
    produce_records(&a.bootstrap(), TOPIC, &records, Codec::Zstd);

    // The image's files, as a runtime unpacks them.
    let dir = std::env::temp_dir().join(topic_name("image"));
    let root = dir.join("root");
    std::fs::create_dir_all(&root).expect("root dir");
    run(Command::new("tar")
        .args(["-xzpf"])
        .arg(&image.layer)
        .args(["--same-owner", "-C"])
        .arg(&root));
    // The configuration, mounted read-only in a container: the source by host name (resolved
    // from the image's /etc/hosts by the static binary), the target by address.
    let a_port = a.bootstrap().rsplit(':').next().expect("port").to_string();
    let http = free_port();
    std::fs::write(
        root.join("etc/strait/strait.toml"),
        format!(
            "instance_group = \"{}\"\nhttp = \"127.0.0.1:{http}\"\n\
             [clusters.a]\nbootstrap_servers = \"localhost:{a_port}\"\n\
             [clusters.b]\nbootstrap_servers = \"{}\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\ntopics = [\"{TOPIC}\"]\n",
            topic_name("g"),
            b.bootstrap()
        ),
    )
    .expect("config");

    let mut strait = Contained::start(&root, &dir.join("strait.log"));
    let remote = format!("a.{TOPIC}");
    wait_for_log(
        "every record on the target",
        Duration::from_secs(120),
        || strait.log(),
        || {
            support::data::watermarks(&b.bootstrap(), &remote)
                .iter()
                .map(|w| w.1 as usize)
                .sum::<usize>()
                >= RECORDS
        },
    );
    // It runs as the image's user, on a read-only root, and answers on its status port.
    let status = strait.proc_file("status");
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap_or("");
    assert_eq!(
        uid_line.split_whitespace().nth(1),
        Some("65532"),
        "runs as 65532: {uid_line}"
    );
    let mountinfo = strait.proc_file("mountinfo");
    let root_mount = mountinfo
        .lines()
        .find(|l| l.split_whitespace().nth(4) == Some("/"))
        .unwrap_or_else(|| panic!("the root mount in {mountinfo}"));
    assert!(
        root_mount
            .split_whitespace()
            .nth(5)
            .is_some_and(|o| o.split(',').any(|o| o == "ro")),
        "the root is read-only: {root_mount}"
    );
    wait_for_log(
        "/health answers 200",
        Duration::from_secs(30),
        || strait.log(),
        || status_get(http, "/health").is_some_and(|(code, _)| code == 200),
    );

    // Each record once, in order per partition.
    let got = consume_all(&b.bootstrap(), &remote, RECORDS, Duration::from_secs(60));
    assert_eq!(
        got.len(),
        RECORDS,
        "records on the target\n{}",
        strait.log()
    );
    for p in 0..PARTITIONS {
        let values: Vec<Vec<u8>> = got
            .iter()
            .filter(|r| r.partition == p)
            .map(|r| r.value.clone().unwrap_or_default())
            .collect();
        let expected: Vec<Vec<u8>> = (0..RECORDS)
            .filter(|i| (*i % PARTITIONS as usize) as i32 == p)
            .map(|i| format!("v{i:05}").into_bytes())
            .collect();
        assert!(values == expected, "partition {p}: records differ");
    }

    let exit = strait.terminate();
    let log = strait.log();
    assert!(
        exit.is_some_and(|s| s.success()),
        "strait from the image did not stop cleanly on SIGTERM ({exit:?}):\n{log}"
    );
    // Nothing more arrived after the stop.
    let total: i64 = support::data::watermarks(&b.bootstrap(), &remote)
        .iter()
        .map(|w| w.1)
        .sum();
    assert_eq!(
        total as usize, RECORDS,
        "records on the target after the stop"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
