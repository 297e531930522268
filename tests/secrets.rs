//! No secret leaves chaudit, whatever the config under review says. Every hostile tree of
//! tests/secret-cases (each lists the values planted in it in its `planted` file) goes through
//! every command and format that prints or writes, with secrets planted in the environment of
//! the run (variables the trees name in `from_env`, and the CI job's own credentials) and in
//! the connection (a `--dsn` password that fake servers echo back). None of the planted values
//! may appear in any stdout, any stderr or any file the run wrote.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod support;

/// The environment of every run: what the trees read with `from_env`, and what a CI job holds.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("LEAK_ENV_ONE", "plantedenvone16"),
    ("LEAK_ENV_TWO", "plantedenvtwo17"),
    ("CHAUDIT_PLANTED_MALFORMED", "<a>plantedmalformed28</b>"),
    ("CLICKHOUSE_PASSWORD", "plantedchpw18"),
    ("AWS_SECRET_ACCESS_KEY", "plantedaws19"),
];

/// The password of the `--dsn` of the live runs, and one given as a query parameter.
const DSN_PASSWORD: &str = "planteddsn29";
const QUERY_PASSWORD: &str = "plantedquery30";

const FORMATS: &[&str] = &["text", "json", "markdown", "html", "sarif", "junit", "openmetrics"];

/// The main config of a case: config.xml, config.yaml or the one manifest.
fn main_config(dir: &Path) -> String {
    ["config.xml", "config.yaml", "chi.yaml"]
        .into_iter()
        .find(|name| dir.join(name).is_file())
        .unwrap_or_else(|| panic!("{}: no main config", dir.display()))
        .to_string()
}

/// Every offline command line that prints or writes something of the tree.
fn offline_runs(main: &str) -> Vec<Vec<String>> {
    let mut runs: Vec<Vec<&str>> = Vec::new();
    for format in FORMATS {
        runs.push(vec!["--config", main, "--format", format, "--all"]);
        runs.push(vec!["--config", main, "--format", format, "-o", "report.out"]);
    }
    runs.extend([
        vec!["--config", main, "--write-baseline", "baseline.json"],
        vec!["config", "show", "--config", main],
        vec!["config", "show", "--provenance", "--users", "--config", main],
        vec!["fix", "--dry-run", "--config", main],
        vec!["fix", "--config", main],
        vec!["upgrade", "--config", main, "--from", "25.8", "--to", "26.9"],
    ]);
    // drift: the tree against itself with every planted value changed (b/, see `leaks`),
    // and against an empty tree (empty/), both ways
    let changed = format!("b/{main}");
    for format in ["text", "json", "markdown", "html"] {
        runs.push(vec!["diff", main, &changed, "--format", format, "--all"]);
        runs.push(vec!["diff", "empty", main, "--format", format, "--all"]);
    }
    runs.extend([vec!["diff", main, &changed, "-o", "diff.out"], vec!["diff", main, "empty", "--format", "json"]]);
    runs.into_iter().map(|r| r.into_iter().map(String::from).collect()).collect()
}

/// A planted value changed at every letter and digit (`plantedsig3` -> `qmboufetjh4`): the
/// same shape, so the tree still parses, and a value of its own, as secret as the first.
fn changed(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            'z' => 'a',
            'Z' => 'A',
            '9' => '0',
            c if c.is_ascii_alphanumeric() => char::from(c as u8 + 1),
            c => c,
        })
        .collect()
}

/// For `chaudit diff`: b/, the tree with every planted value changed, and empty/, a tree that
/// sets nothing. Returns the changed values (planted too).
fn diff_sides(case: &Path, work: &Path, planted: &[String]) -> Vec<String> {
    let b = work.join("b");
    support::copy_tree(case, &b);
    std::fs::remove_file(b.join("planted")).unwrap();
    for path in support::files_under(&b, &|_| true) {
        let Ok(mut text) = std::fs::read_to_string(&path) else { continue };
        for value in planted {
            text = text.replace(value.as_str(), &changed(value));
        }
        std::fs::write(&path, text).unwrap();
    }
    std::fs::create_dir(work.join("empty")).unwrap();
    std::fs::write(work.join("empty/config.xml"), "<clickhouse></clickhouse>\n").unwrap();
    planted.iter().map(|v| changed(v)).collect()
}

/// A fake server on loopback that answers every request with the request itself (its line
/// and headers: the credentials chaudit sent), as a 500 error or as a 200 answer that is no
/// ClickHouse answer. Killed when dropped.
struct EchoServer {
    child: Child,
    port: u16,
}

impl EchoServer {
    fn start(status: u16) -> EchoServer {
        let port = support::free_port();
        let script = r#"
import http.server, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        text = ('Code: 516. DB::Exception: echo of ' + self.requestline + ' ' + str(dict(self.headers))).encode() + b' ' + body
        self.send_response(int(sys.argv[2]))
        self.send_header('Content-Length', str(len(text)))
        self.end_headers()
        self.wfile.write(text)
    do_GET = do_POST = answer
    def log_message(self, *args):
        pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), Echo).serve_forever()
"#;
        let child = Command::new("python3")
            .args(["-c", script, &port.to_string(), &status.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("python3 runs the fake server");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "the fake server did not listen on {port}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        EchoServer { child, port }
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The live command lines against a server on `port`.
fn live_runs(main: &str, port: u16) -> Vec<Vec<String>> {
    let dsn = format!("http://auditor:{DSN_PASSWORD}@127.0.0.1:{port}");
    let query_dsn = format!("http://auditor@127.0.0.1:{port}/?password={QUERY_PASSWORD}");
    let mut runs: Vec<Vec<String>> = FORMATS
        .iter()
        .map(|format| ["--config", main, "--dsn", &dsn, "--format", format].map(String::from).to_vec())
        .collect();
    runs.push(["collect", "--dsn", &dsn, "-o", "snapshot.json"].map(String::from).to_vec());
    runs.push(["--dsn", &query_dsn, "--format", "json"].map(String::from).to_vec());
    runs.push(["-h", "127.0.0.1", "--port", &port.to_string(), "-u", "auditor"].map(String::from).to_vec());
    runs.push(["upgrade", "--dsn", &dsn, "--to", "26.9"].map(String::from).to_vec());
    // drift against a server that echoes the credentials, in the URL and as a query parameter
    runs.push(["diff", &dsn, main, "--format", "json"].map(String::from).to_vec());
    runs.push(["diff", main, &query_dsn].map(String::from).to_vec());
    runs
}

/// Files below `dir` with their contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    support::files_under(dir, &|_| true).into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect()
}

/// Runs `args` in a fresh copy of `case`; the planted values found in its stdout, stderr or
/// any file it wrote or changed, each with where.
fn leaks(case: &Path, args: &[String], planted: &[String]) -> Vec<String> {
    let work = tempfile::tempdir().unwrap();
    support::copy_tree(case, work.path());
    std::fs::remove_file(work.path().join("planted")).unwrap();
    let mut planted = planted.to_vec();
    if args.first().is_some_and(|a| a == "diff") {
        let changed = diff_sides(case, work.path(), &planted);
        planted.extend(changed);
    }
    let before = snapshot(work.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(args)
        .current_dir(work.path())
        .env("NO_COLOR", "1")
        .envs(ENVIRONMENT.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = Vec::new();
    let stderr_reader = {
        let mut pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).unwrap();
            bytes
        })
    };
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    stderr.extend(stderr_reader.join().unwrap());
    child.wait().unwrap();
    // (name, what was written, what the file held before: a value kept in the user's own
    // file, as `fix` keeps an earlier fix file's, is not a leak)
    let mut outputs = vec![("stdout".to_string(), stdout, Vec::new()), ("stderr".to_string(), stderr, Vec::new())];
    for (path, bytes) in snapshot(work.path()) {
        let earlier = before.iter().find(|(p, _)| *p == path).map(|(_, b)| b.clone());
        if earlier.as_ref() != Some(&bytes) {
            outputs.push((
                path.strip_prefix(work.path()).unwrap().display().to_string(),
                bytes,
                earlier.unwrap_or_default(),
            ));
        }
    }
    let mut found = Vec::new();
    for (name, bytes, earlier) in &outputs {
        let (text, earlier) = (String::from_utf8_lossy(bytes), String::from_utf8_lossy(earlier));
        for value in &planted {
            if text.contains(value.as_str()) && !earlier.contains(value.as_str()) {
                found.push(format!("{}: `{value}` in {name}", args.join(" ")));
            }
        }
    }
    found
}

/// The planted values of a case, and those of the environment and the connection.
fn planted(case: &Path) -> Vec<String> {
    let file = std::fs::File::open(case.join("planted")).unwrap();
    let mut values: Vec<String> =
        BufReader::new(file).lines().map(Result::unwrap).filter(|l| !l.trim().is_empty()).collect();
    values.extend(ENVIRONMENT.iter().map(|(_, v)| v.trim_start_matches("<a>").trim_end_matches("</b>").to_string()));
    values.extend([DSN_PASSWORD.to_string(), QUERY_PASSWORD.to_string()]);
    values
}

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(support::repo_root().join("tests/secret-cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 7, "the hostile trees of tests/secret-cases");
    cases
}

#[test]
fn no_planted_secret_leaves_any_offline_command() {
    let cases = cases();
    // the two cores each take half the trees
    let found: Vec<String> = std::thread::scope(|scope| {
        let halves: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .map(|half| {
                scope.spawn(move || {
                    half.iter()
                        .flat_map(|case| {
                            let main = main_config(case);
                            let planted = planted(case);
                            offline_runs(&main).into_iter().flat_map(move |args| leaks(case, &args, &planted))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(found.is_empty(), "secrets that left chaudit:\n{}", found.join("\n"));
}

#[test]
fn no_credential_echoed_by_a_server_leaves_chaudit() {
    let case = support::repo_root().join("tests/secret-cases/env-and-urls");
    let planted = planted(&case);
    let mut found = Vec::new();
    for status in [500, 200] {
        let server = EchoServer::start(status);
        // the server really does echo the password: the test would see a leak
        let mut probe = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        write!(probe, "GET /?password={DSN_PASSWORD} HTTP/1.0\r\n\r\n").unwrap();
        let mut answer = String::new();
        probe.read_to_string(&mut answer).unwrap();
        assert!(answer.contains(DSN_PASSWORD), "{answer}");
        for args in live_runs("config.xml", server.port) {
            found.extend(leaks(&case, &args, &planted));
        }
    }
    assert!(found.is_empty(), "secrets that left chaudit:\n{}", found.join("\n"));
}

#[test]
fn kernel_files_named_by_a_config_are_not_read() {
    let case = support::repo_root().join("tests/secret-cases/kernel-include");
    let (code, stdout, stderr) = support::chaudit(&case, &["--config", "config.xml", "--format", "json"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/proc/self/environ: it is under /proc, which chaudit never reads"), "{stderr}");
    assert!(!stdout.contains("PATH=") && !stderr.contains("PATH="), "{stdout}{stderr}");
}

#[test]
fn show_secrets_shows_the_environment_but_never_the_connection() {
    let case = support::repo_root().join("tests/secret-cases/env-and-urls");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_chaudit"))
            .args(args)
            .current_dir(&case)
            .envs(ENVIRONMENT.iter().copied())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = run(&["config", "show", "--show-secrets", "--config", "config.xml"]);
    assert!(shown.contains("<level>plantedenvone16</level>"), "{shown}");
    let masked = run(&["config", "show", "--config", "config.xml"]);
    assert!(masked.contains("<level>******</level>") && masked.contains("<secert>******</secert>"), "{masked}");
    let report = run(&["--config", "config.xml", "--show-secrets", "--format", "json"]);
    assert!(report.contains("plantedenvone16"), "the log level's finding quotes the value it judged");
}

/// The drift sweep is not vacuous: b/ differs from the tree in its secrets, and the diff
/// says they differ without showing them.
#[test]
fn a_diff_of_changed_secrets_says_they_differ_and_shows_none() {
    let case = support::repo_root().join("tests/secret-cases/env-and-urls");
    let work = tempfile::tempdir().unwrap();
    support::copy_tree(&case, work.path());
    let mut planted = planted(&case);
    planted.extend(diff_sides(&case, work.path(), &planted));
    let (code, stdout, stderr) =
        support::chaudit(work.path(), &["diff", "config.xml", "b/config.xml", "--format", "text"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("the values differ; secrets are not shown"), "{stdout}");
    for value in &planted {
        assert!(!stdout.contains(value.as_str()) && !stderr.contains(value.as_str()), "{value}:\n{stdout}{stderr}");
    }
}
