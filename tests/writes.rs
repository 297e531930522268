//! Writes are atomic and exclusive: the fix files and the SQL file are written all or none,
//! a fix file that is not a regular file is refused without being opened, two `chaudit fix`
//! runs on one tree take turns, an interrupted write leaves no temporary file, and no output
//! is ever one of the run's inputs.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` at most `limit`: (exit code, stderr); the test fails on a hang.
fn finish(mut child: Child, limit: Duration, what: &str) -> (i32, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            return (status.code().unwrap_or(-1), stderr);
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// (exit code, stderr as one line: a diagnostic is wrapped at the terminal's width).
fn chaudit(dir: &Path, args: &[&str]) -> (i32, String) {
    let (code, stderr) = finish(spawn(dir, args), Duration::from_secs(20), &format!("chaudit {args:?}"));
    (code, one_line(&stderr))
}

fn one_line(text: &str) -> String {
    text.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A directory with the bundled example config under `ex/`: its fix writes
/// ex/config.d/zz-chaudit-fix.xml and ex/users.d/zz-chaudit-fix.xml.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support::copy_tree(&support::repo_root().join("examples/production"), &dir.path().join("ex"));
    dir
}

const SERVER_FIX: &str = "ex/config.d/zz-chaudit-fix.xml";
const USERS_FIX: &str = "ex/users.d/zz-chaudit-fix.xml";

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = support::files_under(dir, &|_| true)
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_fix_file_that_is_a_fifo_is_refused_not_waited_on() {
    let dir = workdir();
    let d = dir.path();
    assert!(Command::new("mkfifo").arg(d.join(SERVER_FIX)).status().unwrap().success());
    let (code, stderr) = chaudit(d, &["fix", "--config", "ex/config.xml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("FIFO (named pipe)"), "{stderr}");
    assert!(!d.join(USERS_FIX).exists(), "the other fix file was written: {stderr}");
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &std::fs::symlink_metadata(d.join(SERVER_FIX)).unwrap().file_type()
    ));
}

#[test]
fn fix_files_are_written_all_or_none() {
    // the users fix file cannot be written (a directory is there): the server one is not written either
    let dir = workdir();
    let d = dir.path();
    std::fs::create_dir(d.join(USERS_FIX)).unwrap();
    let before = snapshot(d);
    let (code, stderr) = chaudit(d, &["fix", "--config", "ex/config.xml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("a directory"), "{stderr}");
    assert!(!d.join(SERVER_FIX).exists(), "{stderr}");
    assert_eq!(snapshot(d), before, "nothing changed");

    // --sql into a directory that does not exist: no fix file is written, and the error says so
    let dir = workdir();
    let d = dir.path();
    let before = snapshot(d);
    let (code, stderr) = chaudit(d, &["fix", "--config", "ex/config.xml", "--sql", "missing/fix.sql"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("missing/fix.sql") && stderr.contains("nothing was written"), "{stderr}");
    assert!(!d.join(SERVER_FIX).exists() && !d.join(USERS_FIX).exists(), "{stderr}");
    assert_eq!(snapshot(d), before, "nothing changed");
    let leftovers: Vec<PathBuf> = support::files_under(d, &|_| true)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(".chaudit-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // and with the directory there, all three are written
    std::fs::create_dir(d.join("missing")).unwrap();
    let (code, stderr) = chaudit(d, &["fix", "--config", "ex/config.xml", "--sql", "missing/fix.sql"]);
    assert!(code == 0 || code == 1, "{stderr}");
    assert!(d.join(SERVER_FIX).is_file() && d.join(USERS_FIX).is_file() && d.join("missing/fix.sql").is_file());
}

#[test]
fn the_baseline_and_the_report_are_written_all_or_none() {
    let dir = workdir();
    let d = dir.path();
    let args = ["--config", "ex/config.xml", "--fail-on", "never", "--write-baseline", "baseline.json"];
    let (code, stderr) = chaudit(d, &[&args[..], &["--format", "sarif", "-o", "missing/out.sarif"]].concat());
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("missing/out.sarif") && stderr.contains("nothing was written"), "{stderr}");
    assert!(!d.join("baseline.json").exists(), "the baseline was written without the report");
    std::fs::create_dir(d.join("missing")).unwrap();
    let (code, stderr) = chaudit(d, &[&args[..], &["--format", "sarif", "-o", "missing/out.sarif"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(d.join("baseline.json").is_file() && d.join("missing/out.sarif").is_file());
    // the report on stdout: the baseline is written alone
    std::fs::remove_file(d.join("baseline.json")).unwrap();
    let (code, stderr) = chaudit(d, &args);
    assert_eq!(code, 0, "{stderr}");
    assert!(d.join("baseline.json").is_file());
}

#[test]
fn a_second_fix_waits_for_the_first() {
    let dir = workdir();
    let d = dir.path();
    // another run holds the tree's lock
    let held = std::fs::File::open(d.join("ex/config.xml")).unwrap();
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
    let mut child = spawn(d, &["fix", "--config", "ex/config.xml"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "the second run did not wait for the lock");
    assert!(!d.join(SERVER_FIX).exists());
    drop(held);
    let (code, stderr) = finish(child, Duration::from_secs(20), "fix after the lock was released");
    assert!(code == 0 || code == 1, "{stderr}");
    assert!(d.join(SERVER_FIX).is_file(), "{stderr}");
}

#[test]
fn two_fixes_at_once_keep_both_fixes() {
    let dir = workdir();
    let d = dir.path();
    let one = spawn(d, &["fix", "--config", "ex/config.xml", "--select", "query-log-without-ttl"]);
    let two = spawn(d, &["fix", "--config", "ex/config.xml", "--select", "system-log-without-ttl"]);
    let (a, stderr_a) = finish(one, Duration::from_secs(20), "first fix");
    let (b, stderr_b) = finish(two, Duration::from_secs(20), "second fix");
    assert!(a <= 1 && b <= 1, "{stderr_a}\n{stderr_b}");
    let fix = std::fs::read_to_string(d.join(SERVER_FIX)).unwrap();
    assert!(fix.contains("<query_log>") && fix.contains("<metric_log>"), "a fix was lost:\n{fix}");
}

#[test]
fn an_interrupted_write_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 150,000 unknown root elements: 150,000 findings, a JSON report of more than 100 MB
    let mut config = String::from("<clickhouse>\n");
    for i in 0..150_000 {
        config.push_str(&format!("<unknown_setting_{i}>1</unknown_setting_{i}>\n"));
    }
    config.push_str("</clickhouse>\n");
    std::fs::write(d.join("config.xml"), config).unwrap();
    let mut child = spawn(d, &["--config", "config.xml", "--format", "json", "-o", "out.json", "--fail-on", "never"]);
    let temp = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(".out.json."))
    };
    let start = Instant::now();
    while !temp(d) {
        assert!(child.try_wait().unwrap().is_none(), "the report was written before it could be interrupted");
        assert!(start.elapsed() < Duration::from_secs(120), "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGTERM), "{status:?}");
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!temp(d), "a temporary file is left: {left:?}");
    assert!(!d.join("out.json").exists(), "{left:?}");
}

#[test]
fn no_output_names_an_input_of_the_run() {
    let dir = workdir();
    let d = dir.path();
    std::fs::write(
        d.join("ex/config.d/40-include.xml"),
        "<clickhouse><include_from>../inc.xml</include_from></clickhouse>",
    )
    .unwrap();
    std::fs::write(d.join("inc.xml"), "<clickhouse></clickhouse>").unwrap();
    std::fs::write(d.join("baseline.json"), "").unwrap();
    std::fs::write(d.join("suppress.yaml"), "ignore: []\n").unwrap();
    std::fs::write(d.join("snapshot.json"), "{}").unwrap();
    std::fs::hard_link(d.join("ex/config.xml"), d.join("linked.xml")).unwrap();
    let (code, stderr) = chaudit(d, &["--config", "ex/config.xml", "--write-baseline", "baseline.json"]);
    assert!(code <= 1, "{stderr}");
    let before = snapshot(d);
    let config = ["--config", "ex/config.xml"];
    let cases: Vec<Vec<&str>> = vec![
        [&config[..], &["-o", "ex/config.xml"]].concat(),
        [&config[..], &["-o", "ex/users.xml"]].concat(),
        [&config[..], &["--format", "sarif", "-o", "ex/config.d/10-network.xml"]].concat(),
        [&config[..], &["-o", "ex/users.d/analysts.xml"]].concat(),
        [&config[..], &["-o", "inc.xml"]].concat(),
        [&config[..], &["-o", "linked.xml"]].concat(),
        [&config[..], &["--write-baseline", "ex/config.xml"]].concat(),
        [&config[..], &["--write-baseline", "ex/users.xml"]].concat(),
        [&config[..], &["--baseline", "baseline.json", "-o", "baseline.json"]].concat(),
        [&config[..], &["--suppressions", "suppress.yaml", "--format", "junit", "-o", "suppress.yaml"]].concat(),
        [&config[..], &["--write-baseline", "baseline.json", "-o", "baseline.json"]].concat(),
        vec!["check", "--snapshot", "snapshot.json", "--format", "json", "-o", "snapshot.json"],
        vec!["fix", "--config", "ex/config.xml", "--sql", "ex/users.xml"],
        vec!["fix", "--config", "ex/config.xml", "--sql", "inc.xml"],
        vec!["fix", "--config", "ex/config.xml", "--sql", "ex/config.d/zz-chaudit-fix.xml"],
    ];
    for args in cases {
        let (code, stderr) = chaudit(d, &args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        let stderr = one_line(&stderr);
        assert!(stderr.contains("refusing to write it") && stderr.contains("input of this run"), "{args:?}: {stderr}");
        assert_eq!(snapshot(d), before, "{args:?} changed a file: {stderr}");
    }
}
