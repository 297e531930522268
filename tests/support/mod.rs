//! Shared by the integration tests: the real ClickHouse engine, installed on demand.
#![allow(dead_code)] // each test binary uses part of this

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod browser;
pub mod manifest;
pub mod preprocessed;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The python of a venv holding the ClickHouse 26.9 engine (installed on first use).
/// A test that cannot get the engine fails: it is never skipped.
pub fn engine_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| install_engine(CLICKHOUSE_26_9))
}

/// The python of the venv holding the ClickHouse 25.8 server (chdb 3.7.2: its library
/// exports clickhouse-server's entry point), installed on first use.
pub fn server_engine_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| install_engine(CLICKHOUSE_25_8))
}

fn install_engine(package: &str) -> PathBuf {
    let script = repo_root().join("tests/clickhouse/ensure-engine.sh");
    let out = Command::new("bash").arg(&script).arg(package).output().expect("run ensure-engine.sh");
    assert!(
        out.status.success(),
        "cannot install the ClickHouse engine (PyPI {package}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).expect("utf-8 path").trim())
}

/// Whether the real clickhouse-server 25.8.2.1 starts on a config tree, and why not.
#[derive(Debug, serde::Deserialize)]
pub struct EngineStart {
    pub started: bool,
    /// The server's exit status when it stopped by itself (None: it was up, then stopped).
    pub exit_status: Option<i32>,
    /// The first error lines it logged (the reason for a refusal).
    pub errors: Vec<String>,
}

/// Starts clickhouse-server 25.8 on `tree` (its config.xml; `tree/../env` is the only
/// environment its from_env sees) in a private user, network and mount namespace, waits
/// until it is ready for connections or has exited, and stops it
/// (scripts/engine-preprocess.py --start). About a second per tree.
pub fn engine_start(tree: &Path) -> EngineStart {
    let verdict = engine_start_within(tree, 20);
    // neither up nor stopped, and not a word logged: the machine was too busy to tell (seen
    // once on a loaded 2-core CI run), not a verdict on the tree; asked once more, longer
    if !verdict.started && verdict.exit_status.is_none() && verdict.errors.is_empty() {
        return engine_start_within(tree, 90);
    }
    verdict
}

fn engine_start_within(tree: &Path, seconds: u32) -> EngineStart {
    let out = Command::new(server_engine_python())
        .arg(repo_root().join("scripts/engine-preprocess.py"))
        .arg("--start")
        .arg(tree)
        .args(["--timeout", &seconds.to_string()])
        .output()
        .expect("run engine-preprocess.py --start");
    assert!(
        out.status.success(),
        "engine-preprocess.py --start failed for {}:\n{}",
        tree.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("engine start verdict is not JSON ({e}):\n{}", String::from_utf8_lossy(&out.stdout)))
}

/// What the real engine reports after loading `config` (see tests/clickhouse/engine_probe.py).
pub fn engine_probe(config: &Path, settings: &[String], env: &[(String, String)]) -> serde_json::Value {
    let script = repo_root().join("tests/clickhouse/engine_probe.py");
    let out = Command::new(engine_python())
        .arg(script)
        .arg(config)
        .args(settings)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("run engine_probe.py");
    assert!(
        out.status.success(),
        "engine_probe failed for {}:\n{}",
        config.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("engine_probe output is not JSON ({e}):\n{}", String::from_utf8_lossy(&out.stdout)))
}

/// A real ClickHouse server on loopback, stopped (by its pid) when dropped.
pub struct LiveServer {
    pub dir: tempfile::TempDir,
    pub http_port: u16,
    /// The native protocol port (0: not opened).
    pub tcp_port: u16,
    pid: u32,
    package: String,
}

/// The PyPI wheels that run as real servers, by ClickHouse version.
pub const CLICKHOUSE_26_9: &str = "chdb-core==26.9.0";
pub const CLICKHOUSE_25_8: &str = "chdb==3.7.2";
pub const CLICKHOUSE_24_8: &str = "chdb==2.1.1";

/// Runs one of tests/clickhouse's start scripts with `env`: the pid it prints once the
/// service is ready, or its stderr.
fn start_script(script: &str, env: &[(&str, &str)]) -> Result<u32, String> {
    let out = Command::new("bash")
        .arg(repo_root().join("tests/clickhouse").join(script))
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or_else(|e| panic!("{script}: not a pid: {e}")))
}

/// A port the kernel just handed out on 127.0.0.1 (free at the time of asking).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0").local_addr().unwrap().port()
}

impl LiveServer {
    /// Starts a ClickHouse 26.9 server; `prepare` may put files into its config dir
    /// (`<dir>/server/`, whose config.xml the launcher writes) before it starts.
    pub fn start(prepare: impl Fn(&Path)) -> LiveServer {
        LiveServer::start_version(CLICKHOUSE_26_9, false, prepare)
    }

    /// Starts a server of the ClickHouse version in `package` (see the CLICKHOUSE_ consts),
    /// with the native protocol port open when `native` (for remote() and clusters).
    pub fn start_version(package: &str, native: bool, prepare: impl Fn(&Path)) -> LiveServer {
        let ports = || (free_port(), if native { free_port() } else { 0 });
        let (http, tcp) = ports();
        LiveServer::try_start(package, http, tcp, &prepare).unwrap_or_else(|first| {
            // a start that did not come up (a port taken meanwhile, a slow start under load)
            // gets one more try on fresh ports; both failures are shown
            let (http, tcp) = ports();
            LiveServer::try_start(package, http, tcp, &prepare)
                .unwrap_or_else(|second| panic!("ClickHouse server did not start, twice:\n{first}\n---\n{second}"))
        })
    }

    /// Starts a server on the given ports (a cluster's config names them before start).
    pub fn start_on(package: &str, http_port: u16, tcp_port: u16, prepare: impl Fn(&Path)) -> LiveServer {
        LiveServer::try_start(package, http_port, tcp_port, &prepare).unwrap_or_else(|first| {
            LiveServer::try_start(package, http_port, tcp_port, &prepare)
                .unwrap_or_else(|second| panic!("ClickHouse server did not start, twice:\n{first}\n---\n{second}"))
        })
    }

    fn try_start(package: &str, http_port: u16, tcp_port: u16, prepare: &dyn Fn(&Path)) -> Result<LiveServer, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let server_dir = dir.path().join("server");
        std::fs::create_dir_all(&server_dir).unwrap();
        prepare(&server_dir);
        let pid = Self::launch(package, dir.path(), http_port, tcp_port)?;
        Ok(LiveServer { dir, http_port, tcp_port, pid, package: package.to_string() })
    }

    /// Stops the server and starts it again on the same directory, data and ports: what a
    /// restart after a config change sees.
    pub fn restart(&mut self) {
        self.stop();
        self.pid = Self::launch(&self.package, self.dir.path(), self.http_port, self.tcp_port)
            .unwrap_or_else(|e| panic!("ClickHouse server did not start again: {e}"));
    }

    fn launch(package: &str, dir: &Path, http_port: u16, tcp_port: u16) -> Result<u32, String> {
        let dir = dir.display().to_string();
        let (http, tcp) = (http_port.to_string(), tcp_port.to_string());
        // a server kept in a static is never dropped: it follows this process instead
        let env = [
            ("CH_PKG", package),
            ("CH_DIR", &dir),
            ("CH_HTTP_PORT", &http),
            ("CH_TCP_PORT", &tcp),
            ("CH_START_TIMEOUT", "120"),
            ("CH_OWNER_PID", &std::process::id().to_string()),
        ];
        start_script("start-server.sh", &env)
    }

    /// Its HTTP endpoint, as `--dsn` takes it.
    pub fn dsn(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// Its name in a cluster report (its system.clusters host:port).
    pub fn node(&self) -> String {
        format!("127.0.0.1:{}", self.tcp_port)
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("server/config.xml")
    }

    /// Runs a query over the HTTP interface and returns the body (TSV by default).
    pub fn query(&self, sql: &str) -> String {
        self.try_query(sql).unwrap_or_else(|error| panic!("query failed: {sql}\n{error}"))
    }

    /// The server's answer: Ok(body), or Err(body) when it refuses the query.
    pub fn try_query(&self, sql: &str) -> Result<String, String> {
        self.try_query_as("default", "", sql)
    }

    /// The server's answer to `user` (password `password`).
    pub fn try_query_as(&self, user: &str, password: &str, sql: &str) -> Result<String, String> {
        let out = Command::new("curl")
            .args(["-sS", "--fail-with-body", "--data-binary", sql, "-u", &format!("{user}:{password}")])
            .arg(format!("http://127.0.0.1:{}/", self.http_port))
            .output()
            .expect("run curl");
        let body = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() { Ok(body) } else { Err(body) }
    }
}

impl LiveServer {
    /// Stops the server (by its pid) and waits until it is gone.
    pub fn stop(&self) {
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
        // a shutdown on a loaded machine can take seconds: the next start on this directory
        // must not meet the old server still running (killed after 30 s)
        if !self.gone_within(600) {
            let _ = Command::new("kill").args(["-9", &self.pid.to_string()]).status();
            self.gone_within(200);
        }
    }

    /// Whether the server's process is gone within `ticks` x 50 ms.
    fn gone_within(&self, ticks: u32) -> bool {
        for _ in 0..ticks {
            if !Path::new(&format!("/proc/{}", self.pid)).exists() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
        // wait for it to go, so its ports and files are released
        for _ in 0..100 {
            if !Path::new(&format!("/proc/{}", self.pid)).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A cluster audit in JSON as the cluster tests run it (the last hour of logs, replicas that
/// cannot be read allowed): the report, after asserting it exits 0.
pub fn cluster_audit(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let mut all = args.to_vec();
    all.extend(["--format", "json", "--fail-on", "never", "--since", "1h", "--allow-inconclusive"]);
    let (code, out, err) = chaudit(dir.path(), &all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}:\n{out}\n{err}"))
}

/// Runs the chaudit binary in `dir`; returns (exit code, stdout, stderr).
pub fn chaudit(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run chaudit");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The entry of `rule` in a JSON report's `list` ("outcomes" or "findings"), the first when
/// there are several.
pub fn report_entry<'a>(report: &'a serde_json::Value, list: &str, rule: &str) -> Option<&'a serde_json::Value> {
    report[list].as_array()?.iter().find(|e| e["rule_id"] == rule)
}

/// Every finding of `rule` in a JSON report.
pub fn findings_of<'a>(report: &'a serde_json::Value, rule: &str) -> Vec<&'a serde_json::Value> {
    report["findings"].as_array().into_iter().flatten().filter(|f| f["rule_id"] == rule).collect()
}

/// Copies a directory tree (fixtures into a scratch dir the test may edit).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// Files below `dir` (sorted), not descending into directories `enter` refuses.
pub fn files_under(dir: &Path, enter: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if enter(&path) {
                    stack.push(path);
                }
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The real-world configs of tests/corpus/real-configs (SOURCES.md left out).
pub fn corpus_files() -> Vec<PathBuf> {
    files_under(&repo_root().join("tests/corpus/real-configs"), &|_| true)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "SOURCES.md"))
        .collect()
}

/// A TCP proxy on a free loopback port in front of `upstream`. `on_request(n)` is called as
/// the n-th HTTP request (1-based) starts to pass and says whether to forward it: a test
/// stops the server there, or holds the request unanswered.
#[allow(dead_code)] // not every test binary uses it
pub fn proxy(upstream: u16, on_request: impl Fn(usize) -> bool + Send + Sync + 'static) -> u16 {
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let on_request = Arc::new(on_request);
    let requests = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(up) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else { continue };
            let (mut client_read, mut up_write) = (client.try_clone().unwrap(), up.try_clone().unwrap());
            let (mut up_read, mut client_write) = (up, client);
            let (on_request, requests) = (Arc::clone(&on_request), Arc::clone(&requests));
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let mut passing = true;
                while let Ok(n) = client_read.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if buf[..n].starts_with(b"POST ") {
                        passing = on_request(requests.fetch_add(1, Ordering::SeqCst) + 1);
                    }
                    if passing && up_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                while let Ok(n) = up_read.read(&mut buf) {
                    if n == 0 || client_write.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// A users.xml for a test server: `default` (passwordless, local: the launcher's console and
/// the test's own SQL need it) and `auditor`, readonly=1 with `password`, its `<auditor>`
/// element ending with `auditor_extra` (grants, say).
#[allow(dead_code)] // not every test binary uses it
pub fn users_xml(password: &str, auditor_extra: &str) -> String {
    format!(
        r#"<clickhouse>
    <profiles>
        <default/>
        <readonly><readonly>1</readonly></readonly>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>default</profile>
            <access_management>1</access_management>
        </default>
        <auditor>
            <password>{password}</password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>readonly</profile>{auditor_extra}
        </auditor>
    </users>
</clickhouse>
"#
    )
}

/// Apache ZooKeeper, standalone on a free loopback port with its own data dir (installed from
/// Debian's `zookeeper` package on first use, tests/clickhouse/ensure-zookeeper.sh), stopped
/// by its pid when dropped. A test that cannot start it fails: it is never skipped.
pub struct ZooKeeper {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pid: u32,
}

impl ZooKeeper {
    fn launch(dir: &Path, port: u16) -> Result<u32, String> {
        let (dir, port) = (dir.display().to_string(), port.to_string());
        let env = [
            ("ZK_DIR", dir.as_str()),
            ("ZK_PORT", &port),
            ("ZK_START_TIMEOUT", "90"),
            ("ZK_OWNER_PID", &std::process::id().to_string()),
        ];
        start_script("start-zookeeper.sh", &env)
    }

    /// Stops it (by its pid) and waits until it is gone; its data stays for `start_again`.
    pub fn stop(&self) {
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
        for _ in 0..200 {
            if !Path::new(&format!("/proc/{}", self.pid)).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Starts it again after `stop`, on the same port and data.
    pub fn start_again(&mut self) {
        self.pid = ZooKeeper::launch(self.dir.path(), self.port)
            .unwrap_or_else(|e| panic!("ZooKeeper did not start again: {e}"));
    }

    pub fn start() -> ZooKeeper {
        let attempt = || -> Result<ZooKeeper, String> {
            let dir = tempfile::tempdir().expect("tempdir");
            let port = free_port();
            let pid = ZooKeeper::launch(dir.path(), port)?;
            Ok(ZooKeeper { dir, port, pid })
        };
        // a port taken meanwhile, a start too slow under load: once more, both failures shown
        attempt().unwrap_or_else(|first| {
            attempt().unwrap_or_else(|second| panic!("ZooKeeper did not start, twice:\n{first}\n---\n{second}"))
        })
    }

    /// The answer to a four-letter-word command (`ruok`, `mntr`, `cons`...); empty when it
    /// does not answer within 5 s.
    pub fn four_letter(&self, command: &str) -> String {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else { return String::new() };
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        let _ = stream.write_all(command.as_bytes());
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    }

    /// Runs ZooKeeper's own command-line client (`deleteall PATH`, `ls PATH`...) against it;
    /// returns its output, and fails the test when the client cannot run.
    pub fn cli(&self, args: &[&str]) -> String {
        static CLASSPATH: OnceLock<String> = OnceLock::new();
        let classpath = CLASSPATH.get_or_init(|| {
            let out = Command::new("bash")
                .arg(repo_root().join("tests/clickhouse/ensure-zookeeper.sh"))
                .output()
                .expect("run ensure-zookeeper.sh");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        });
        let out = Command::new("timeout")
            .args(["60", "java", "-Xmx128m", "-cp", classpath, "org.apache.zookeeper.ZooKeeperMain", "-server"])
            .arg(format!("127.0.0.1:{}", self.port))
            .args(args)
            .output()
            .expect("run the ZooKeeper client");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "ZooKeeper client {args:?} failed:\n{text}");
        text
    }

    /// The `<zookeeper>` section of a ClickHouse config pointing at it.
    pub fn clickhouse_section(&self) -> String {
        format!(
            "<zookeeper><node><host>127.0.0.1</host><port>{}</port></node>\
             <session_timeout_ms>30000</session_timeout_ms></zookeeper>",
            self.port
        )
    }
}

impl Drop for ZooKeeper {
    fn drop(&mut self) {
        self.stop();
    }
}
