//! A test Kerberos realm: an MIT KDC (`krb5kdc -n`, no daemon) on a free loopback port with a
//! fresh database in a folder of its own, principals and keytabs made with `kadmin.local`, and a
//! short ticket lifetime so tickets expire during a test. Stopped when dropped.
//!
//! Needs `krb5-kdc`, `krb5-admin-server` and `krb5-user` (`scripts/setup.sh`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use strait::local_kafka::free_port;

/// The test realm's name.
pub const REALM: &str = "STRAIT.TEST";

/// A running test KDC.
pub struct Kdc {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Kdc {
    /// Creates a realm whose tickets last at most `max_life` and starts its KDC.
    pub fn start(label: &str, max_life: Duration) -> Kdc {
        let dir = std::env::temp_dir().join(format!("strait-kdc-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_port().unwrap();
        let life = format!("{}s", max_life.as_secs().max(1));
        let d = dir.display();
        std::fs::write(
            dir.join("kdc.conf"),
            format!(
                "[kdcdefaults]\n kdc_ports = {port}\n kdc_tcp_ports = {port}\n\
                 [realms]\n {REALM} = {{\n  database_name = {d}/principal\n  key_stash_file = {d}/stash\n  \
                 acl_file = {d}/kadm5.acl\n  max_life = {life}\n  max_renewable_life = 0\n  \
                 kdc_ports = {port}\n  kdc_tcp_ports = {port}\n  \
                 supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n }}\n\
                 [logging]\n kdc = FILE:{d}/kdc.log\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("krb5.conf"),
            format!(
                "[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n \
                 rdns = false\n dns_canonicalize_hostname = false\n udp_preference_limit = 1\n \
                 forwardable = false\n\
                 [realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{port}\n }}\n\
                 [domain_realm]\n localhost = {REALM}\n .localhost = {REALM}\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("kadm5.acl"), "").unwrap();
        let mut kdc = Kdc {
            dir,
            port,
            child: None,
        };
        kdc.run(
            "kdb5_util",
            &["create", "-s", "-r", REALM, "-P", "strait-test-master"],
        );
        kdc.start_again();
        kdc
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("KRB5_CONFIG", self.krb5_conf())
            .env("KRB5_KDC_PROFILE", self.dir.join("kdc.conf"))
            .stdin(Stdio::null());
        c
    }

    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.command(program).args(args).output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{program} {args:?} failed:\n{text}");
        text
    }

    /// A `kadmin.local` query.
    pub fn kadmin(&self, query: &str) -> String {
        self.run("kadmin.local", &["-r", REALM, "-q", query])
    }

    /// Adds `principal` (without realm) with a random key and writes its keys to a keytab in
    /// the realm's folder, whose path is returned.
    pub fn principal_with_keytab(&self, principal: &str) -> PathBuf {
        self.kadmin(&format!("addprinc -randkey {principal}"));
        self.keytab(principal)
    }

    /// Writes the current keys of `principal` to a new keytab file (keys unchanged).
    pub fn keytab(&self, principal: &str) -> PathBuf {
        static KEYTABS: AtomicU64 = AtomicU64::new(0);
        let path = self.dir.join(format!(
            "{}-{}.keytab",
            principal.replace('/', "_"),
            KEYTABS.fetch_add(1, Ordering::Relaxed)
        ));
        self.kadmin(&format!(
            "ktadd -k {} -norandkey {principal}",
            path.display()
        ));
        path
    }

    /// The realm's krb5.conf (`KRB5_CONFIG`, the JVM's `java.security.krb5.conf`).
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir.join("krb5.conf")
    }

    /// The realm's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The full name of `principal` in this realm.
    pub fn full(&self, principal: &str) -> String {
        format!("{principal}@{REALM}")
    }

    /// Stops the KDC (the realm's database stays).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the KDC (again) on its port and waits until it accepts TCP connections.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the KDC runs");
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("krb5kdc.out"))
            .unwrap();
        let child = self
            .command("krb5kdc")
            .args(["-n", "-r", REALM])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("krb5kdc (run scripts/setup.sh)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "the KDC did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The KDC's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("kdc.log")).unwrap_or_default()
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        self.stop();
    }
}
