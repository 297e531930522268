//! Hostile input on the command line: files that are not regular files, write targets that
//! must not be replaced. Every case ends in bounded time with a clear error and its exit
//! code (a hang fails the test instead of holding it).

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

/// Runs chaudit in `dir`; (exit code, stderr). Killed, and the test failed, after 10 s.
fn chaudit(dir: &Path, args: &[&str]) -> (i32, String) {
    chaudit_within(dir, args, 10)
}

/// [`chaudit`] killed after `seconds`, with at most 4 GiB of address space: an input that
/// would make it allocate without a bound fails the test instead of the machine.
fn chaudit_within(dir: &Path, args: &[&str], seconds: u64) -> (i32, String) {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_chaudit"));
    // wide: a message is matched whole, not wrapped
    command
        .args(args)
        .current_dir(dir)
        .env("COLUMNS", "1000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 4 << 30, rlim_max: 4 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    // read as it comes: a long stderr would fill the pipe and stall the child
    let mut stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut stderr = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr_pipe, &mut stderr);
        stderr
    });
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().unwrap_or(-1), reader.join().unwrap());
        }
        if start.elapsed() > Duration::from_secs(seconds) {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("chaudit {args:?} did not finish within {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn fifo(path: &Path) -> PathBuf {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
    path.to_path_buf()
}

/// A directory with the bundled example config under `ex/` and a FIFO `pipe`.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = support::repo_root().join("examples/production");
    assert!(Command::new("cp").arg("-r").arg(example).arg(dir.path().join("ex")).status().unwrap().success());
    fifo(&dir.path().join("pipe"));
    dir
}

#[test]
fn inputs_that_are_fifos_are_refused_not_waited_on() {
    let dir = workdir();
    let d = dir.path();
    let config = ["--config", "ex/config.xml"];
    let cases: Vec<Vec<&str>> = vec![
        vec!["--config", "pipe"],
        vec!["config", "show", "--config", "pipe"],
        vec!["check", "--snapshot", "pipe"],
        [&config[..], &["--baseline", "pipe"]].concat(),
        [&config[..], &["--suppressions", "pipe"]].concat(),
        vec!["--dsn", "http://127.0.0.1:1", "--password-file", "pipe"],
    ];
    for args in cases {
        let (code, stderr) = chaudit(d, &args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("FIFO (named pipe)"), "{args:?}: {stderr}");
    }
    // a FIFO as the users config, the include_from file and a rule file
    std::fs::write(
        d.join("ex/config.d/users-pipe.xml"),
        "<clickhouse><user_directories><users_xml><path>../pipe</path></users_xml></user_directories></clickhouse>",
    )
    .unwrap();
    let (code, stderr) = chaudit(d, &config);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("FIFO"), "{stderr}");
    std::fs::write(
        d.join("ex/config.d/users-pipe.xml"),
        "<clickhouse><include_from>../pipe</include_from></clickhouse>",
    )
    .unwrap();
    let (code, stderr) = chaudit(d, &config);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("FIFO"), "{stderr}");
    std::fs::remove_file(d.join("ex/config.d/users-pipe.xml")).unwrap();
    std::fs::create_dir(d.join("rules")).unwrap();
    fifo(&d.join("rules/rule.yaml"));
    let (code, stderr) = chaudit(d, &[&config[..], &["--rules", "rules"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("FIFO"), "{stderr}");
}

#[test]
fn only_regular_files_are_replaced_by_writes() {
    let dir = workdir();
    let d = dir.path();
    std::os::unix::fs::symlink("/dev/full", d.join("full")).unwrap();
    for target in ["pipe", "/dev/full", "full", "ex"] {
        let (code, stderr) = chaudit(d, &["--config", "ex/config.xml", "--write-baseline", target]);
        assert_eq!(code, 2, "{target}: {stderr}");
        assert!(stderr.contains("refusing to replace it"), "{target}: {stderr}");
        // checked before anything is collected: no server is needed to see it
        let (code, stderr) = chaudit(d, &["collect", "--dsn", "http://127.0.0.1:1", "-o", target]);
        assert_eq!(code, 2, "{target}: {stderr}");
        assert!(stderr.contains("refusing to replace it"), "{target}: {stderr}");
    }
    assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
    assert!(std::fs::symlink_metadata(d.join("full")).unwrap().file_type().is_symlink());
    let (code, stderr) = chaudit(d, &["--config", "ex/config.xml", "--write-baseline", "baseline.json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(d.join("baseline.json").is_file());
}

#[test]
fn a_rule_too_costly_for_its_facts_is_stopped_and_errored() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 300 users; four nested exists() over them: 8.1e9 steps (ran for hours)
    let users: String =
        (0..300).map(|i| format!("<u{i}><password_sha256_hex>00</password_sha256_hex></u{i}>")).collect();
    std::fs::write(d.join("config.xml"), "<clickhouse><users_config>users.xml</users_config></clickhouse>").unwrap();
    std::fs::write(d.join("users.xml"), format!("<clickhouse><users>{users}</users></clickhouse>")).unwrap();
    std::fs::create_dir(d.join("rules")).unwrap();
    std::fs::write(
        d.join("rules/quadruple-loop.yaml"),
        r#"id: quadruple-loop
title: Four nested loops over the users
severity: low
category: security
tags: [test]
confidence: high
description: costs 300^4 steps
applies:
  sources: [config]
when: >-
  config.users.exists(a, config.users.exists(b, config.users.exists(c,
  config.users.exists(e, a.name + b.name + c.name + e.name == "none"))))
message: never
remediation:
  restart: false
  manual: nothing
references: []
"#,
    )
    .unwrap();
    let started = Instant::now();
    let args =
        ["--config", "config.xml", "--no-builtin-rules", "--rules", "rules", "--rule-budget", "1", "--format", "json"];
    let out = Command::new(env!("CARGO_BIN_EXE_chaudit")).args(args).current_dir(d).output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let outcome = &report["outcomes"][0];
    assert_eq!(outcome["outcome"], "errored", "{report}");
    assert!(outcome["reason"].as_str().unwrap().contains("evaluation budget"), "{outcome}");
}

#[test]
fn loops_over_literal_lists_are_stopped_at_the_budget_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let users: String =
        (0..300).map(|i| format!("<u{i}><password_sha256_hex>00</password_sha256_hex></u{i}>")).collect();
    std::fs::write(d.join("config.xml"), "<clickhouse><users_config>users.xml</users_config></clickhouse>").unwrap();
    std::fs::write(d.join("users.xml"), format!("<clickhouse><users>{users}</users></clickhouse>")).unwrap();
    std::fs::create_dir(d.join("rules")).unwrap();
    let list = format!("[{}]", (0..300).map(|i| i.to_string()).collect::<Vec<_>>().join(", "));
    for (id, when) in [
        // the facts wrapped in a literal list: the inner loops never reach for a fact again
        (
            "wrapped-loop",
            "[config.users].exists(all, all.exists(a, all.exists(b, all.exists(c, a.name + b.name + c.name == \"none\"))))"
                .to_string(),
        ),
        ("literal-loop", format!("{list}.exists(a, {list}.exists(b, {list}.exists(c, {list}.exists(e, a + b + c + e < 0))))")),
    ] {
        std::fs::write(
            d.join(format!("rules/{id}.yaml")),
            format!(
                "id: {id}\ntitle: Nested loops\nseverity: low\ncategory: security\ntags: [test]\nconfidence: high\n\
                 description: costs 300^4 steps\napplies:\n  sources: [config]\nwhen: >-\n  {when}\nmessage: never\n\
                 remediation:\n  restart: false\n  manual: nothing\nreferences: []\n"
            ),
        )
        .unwrap();
    }
    let started = Instant::now();
    let args =
        ["--config", "config.xml", "--no-builtin-rules", "--rules", "rules", "--rule-budget", "1", "--format", "json"];
    let out = Command::new(env!("CARGO_BIN_EXE_chaudit")).args(args).current_dir(d).output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for outcome in report["outcomes"].as_array().unwrap() {
        assert_eq!(outcome["outcome"], "errored", "{report}");
        assert!(outcome["reason"].as_str().unwrap().contains("evaluation budget"), "{outcome}");
    }
}

#[test]
fn a_run_that_could_not_judge_keeps_the_old_baseline_entries() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("config.xml"), "<clickhouse><users_config>users.xml</users_config></clickhouse>").unwrap();
    std::fs::write(
        d.join("users.xml"),
        "<clickhouse><users><default><password></password></default></users></clickhouse>",
    )
    .unwrap();
    let (code, stderr) =
        chaudit(d, &["--config", "config.xml", "--write-baseline", "baseline.json", "--fail-on", "never"]);
    assert_eq!(code, 0, "{stderr}");
    let before: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("baseline.json")).unwrap()).unwrap();
    let entries = before["findings"].as_array().unwrap().len();
    assert!(entries > 0, "{before}");
    // the users config breaks: its rules cannot judge, the run exits 2, and their entries stay
    std::fs::write(d.join("users.xml"), "<clickhouse><users><default></users></clickhouse>").unwrap();
    let (code, stderr) =
        chaudit(d, &["--config", "config.xml", "--write-baseline", "baseline.json", "--fail-on", "never"]);
    assert_eq!(code, 2, "{stderr}");
    let after: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("baseline.json")).unwrap()).unwrap();
    for entry in before["findings"].as_array().unwrap() {
        assert!(after["findings"].as_array().unwrap().contains(entry), "{entry} lost: {after}");
    }
}

#[test]
fn an_input_past_the_cap_is_refused_unread() {
    let dir = workdir();
    let d = dir.path();
    // 10 GB and no block on disk: read whole, it was a 10 GB allocation
    for name in ["big.xml", "ex/config.d/big.xml", "big.json"] {
        std::fs::File::create(d.join(name)).unwrap().set_len(10 << 30).unwrap();
    }
    let cases: [&[&str]; 4] = [
        &["--config", "big.xml"],
        &["--config", "ex/config.xml"],
        &["check", "--snapshot", "big.json"],
        &["config", "show", "--config", "big.xml"],
    ];
    for args in cases {
        let (code, stderr) = chaudit(d, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("big.") && stderr.contains("MAX_INPUT_FILE_BYTES"), "{args:?}: {stderr}");
        // as said, whatever the width it is wrapped at
        let said = stderr.split_whitespace().filter(|w| *w != "│").collect::<Vec<_>>().join(" ");
        assert!(said.contains("10737418240 bytes, more than chaudit reads of one input file (512 MiB"), "{stderr}");
    }
    std::fs::remove_file(d.join("ex/config.d/big.xml")).unwrap();
    let (code, stderr) = chaudit(d, &["--config", "ex/config.xml", "--baseline", "big.json"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("baseline big.json") && stderr.contains("MAX_INPUT_FILE_BYTES"), "{stderr}");
}

/// "Billion laughs" through a 26-line include_from file: each element holds ten `incl`s of
/// the next, 10^25 nodes in all.
#[test]
fn an_incl_that_fans_out_is_stopped_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let names: Vec<String> = (b'a'..=b'z').map(|c| format!("l{}", c as char)).collect();
    let mut include = String::from("<clickhouse>\n");
    for pair in names.windows(2) {
        let ten = format!("<v incl=\"{}\"/>", pair[1]).repeat(10);
        include.push_str(&format!("<{0}>{ten}</{0}>\n", pair[0]));
    }
    include.push_str("<lz><v>lol</v></lz>\n</clickhouse>\n");
    std::fs::write(d.join("metrika.xml"), include).unwrap();
    std::fs::write(
        d.join("config.xml"),
        "<clickhouse>\n<include_from>metrika.xml</include_from>\n<macros incl=\"la\"/>\n</clickhouse>\n",
    )
    .unwrap();
    for args in [&["--config", "config.xml"][..], &["config", "show", "--config", "config.xml"]] {
        // a million nodes are built before the cap stops them: seconds of a debug build's CPU,
        // more on a machine shared with other tests (bounded, not timed: benches time)
        let (code, stderr) = chaudit_within(d, args, 60);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("more than 1000000 nodes") && stderr.contains("MAX_SUBSTITUTED_NODES"), "{stderr}");
        assert!(stderr.contains("metrika.xml:"), "the error points into the include file: {stderr}");
    }
}

#[test]
fn fix_and_upgrade_refuse_a_tree_that_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("config.xml"), "<clickhouse><users_config>users.xml</users_config></clickhouse>").unwrap();
    // `default` has no password: a fixable finding, were the users config read
    std::fs::write(d.join("users.xml"), "<clickhouse><users><default><password></password></users></clickhouse>")
        .unwrap();
    for args in [
        &["fix", "--config", "config.xml", "--dry-run"][..],
        &["fix", "--config", "config.xml"],
        &["upgrade", "--config", "config.xml", "--from", "25.8", "--to", "26.9"],
    ] {
        let (code, stderr) = chaudit(d, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("users.xml:1:"), "{args:?}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 2, "nothing written");
    // the server config broken, the users config sound
    std::fs::write(d.join("users.xml"), "<clickhouse><users><default/></users></clickhouse>").unwrap();
    std::fs::write(d.join("config.xml"), "<clickhouse><users_config>users.xml</users_config><x></clickhouse>").unwrap();
    for args in [
        &["fix", "--config", "config.xml"][..],
        &["upgrade", "--config", "config.xml", "--from", "25.8", "--to", "26.9"],
    ] {
        let (code, stderr) = chaudit(d, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains("config.xml:1:"), "{args:?}: {stderr}");
    }
}

/// A server that is not ClickHouse (tests/clickhouse/fake_server.py MODE) on a loopback
/// port, stopped (by its pid) when dropped.
struct FakeServer {
    child: std::process::Child,
    url: String,
}

impl FakeServer {
    fn start(mode: &str) -> FakeServer {
        let script = support::repo_root().join("tests/clickhouse/fake_server.py");
        let mut child =
            Command::new("python3").arg(script).arg(mode).stdout(Stdio::piped()).stdin(Stdio::null()).spawn().unwrap();
        let mut port = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut port).unwrap();
        let port: u16 = port.trim().parse().unwrap_or_else(|_| panic!("fake_server.py {mode} gave no port: {port:?}"));
        FakeServer { child, url: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_server_that_is_not_clickhouse_is_a_failed_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (mode, why) in [
        ("empty", "no row: an empty answer is not a ClickHouse server's"),
        ("html", "not a ClickHouse server's answer"),
        ("json", "missing field `version`"),
        ("endless-probe", "more than one row: not a ClickHouse server's answer"),
    ] {
        let server = FakeServer::start(mode);
        for args in [&["--dsn", &server.url][..], &["collect", "--dsn", &server.url, "-o", "s.json"]] {
            let (code, stderr) = chaudit(d, args);
            assert_eq!(code, 3, "{mode} {args:?}: {stderr}");
            assert!(stderr.contains(why), "{mode} {args:?}: {stderr}");
        }
    }
}

#[test]
fn an_endless_answer_is_read_up_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // (the fake server's mode, seconds allowed, what the error names): a line without end
    // stops at the row's cap; rows of 1 MiB without end at the answer's bytes; rows of 3
    // bytes without end at the answer's rows, long before its bytes
    let cases = [
        ("endless-row", 60, &["16 MiB", "MAX_ROW_BYTES"][..]),
        ("endless-rows", 120, &["256 MiB", "MAX_ANSWER_BYTES"]),
        ("endless-small-rows", 120, &["MAX_ANSWER_ROWS"]),
    ];
    for (mode, seconds, named) in cases {
        let server = FakeServer::start(mode);
        let (code, stderr) = chaudit_within(d, &["collect", "--dsn", &server.url, "-o", "s.json"], seconds);
        assert_eq!(code, 3, "{mode}: {stderr}");
        assert!(stderr.contains("settings: over a limit:"), "{mode}: {stderr}");
        assert!(named.iter().all(|n| stderr.contains(n)), "{mode}: {stderr}");
    }
}
