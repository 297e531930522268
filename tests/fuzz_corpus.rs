//! The fuzz corpus as a regression test: every input under fuzz/corpus/<target>/ (the
//! structure-aware seeds and what the fuzzer kept, minimized) goes through its target's
//! harness again, as `cargo fuzz run` would feed it.

#[path = "../fuzz/harness.rs"]
mod harness;

mod support;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = support::repo_root().join("fuzz/corpus").join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no corpus for {target}");
    for input in inputs {
        let data = std::fs::read(&input).unwrap();
        let started = std::time::Instant::now();
        // the stack of a main thread, as chaudit and libFuzzer run with (a test thread has 2 MiB)
        let worker = std::thread::Builder::new().stack_size(8 << 20).spawn(move || run(&data)).unwrap();
        if let Err(panic) = worker.join() {
            eprintln!("{} failed", input.display());
            std::panic::resume_unwind(panic);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{} took {:?}",
            input.display(),
            started.elapsed()
        );
    }
}

#[test]
fn config_file() {
    replay("config_file", harness::config_file);
}

#[test]
fn config_tree() {
    replay("config_tree", harness::config_tree);
}

#[test]
fn rule_file() {
    replay("rule_file", harness::rule_file);
}

#[test]
fn snapshot() {
    replay("snapshot", harness::snapshot);
}

#[test]
fn suppressions() {
    replay("suppressions", harness::suppressions);
}

#[test]
fn baseline() {
    replay("baseline", harness::baseline);
}

#[test]
fn dsn() {
    replay("dsn", harness::dsn);
}

#[test]
fn env_file() {
    replay("env_file", harness::env_file);
}
