//! `config show` against what the real clickhouse-server writes to preprocessed_configs.
//!
//! Each directory under tests/engine-cases/ holds `tree/` (a config tree built from
//! ClickHouse's own files, see tests/engine-cases/SOURCES), an optional `env` (KEY=VALUE
//! lines, the only environment of its from_env) and `expected/`: the config.xml and users.xml
//! clickhouse-server 25.8.2.1 wrote for it (scripts/engine-preprocess.py --all
//! tests/engine-cases regenerates them), or no config.xml when the engine refused the tree.
//! chaudit's rendering must be the same element tree: comments, whitespace-only text,
//! attribute order and `<a></a>` vs `<a/>` aside.

mod support;

use std::path::{Path, PathBuf};

use chaudit::config::{self, ConfigError, DefaultInclude, LoadOptions, Root, Roots};
use support::preprocessed;

fn cases() -> Vec<PathBuf> {
    let root = support::repo_root().join("tests/engine-cases");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("tree/config.xml").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn options(case: &Path) -> LoadOptions {
    let mut options = LoadOptions::for_fixture(case);
    options.default_include_from = DefaultInclude::None;
    options
}

#[test]
fn config_show_equals_the_engines_preprocessed_configs() {
    let cases = cases();
    assert!(cases.len() >= 50, "{} engine cases", cases.len());
    let mut failures = Vec::new();
    let (mut compared, mut refused) = (0, 0);
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let result =
            preprocessed::compare(&name, &case.join("tree/config.xml"), &case.join("expected"), &options(case));
        compared += result.files;
        refused += usize::from(result.refused_by_both);
        failures.extend(result.failures);
    }
    eprintln!("{} cases: {compared} files compared, {refused} trees refused by both", cases.len());
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

/// `chaudit config show` in each of its modes, on every engine case, as a strict XML parser
/// reads it: whatever a user pipes the output into must accept it.
#[test]
fn config_show_is_well_formed_xml_in_every_mode() {
    let modes: [&[&str]; 6] = [
        &[],
        &["--users"],
        &["--provenance"],
        &["--show-secrets"],
        &["--users", "--provenance"],
        &["--users", "--show-secrets"],
    ];
    let mut failures = Vec::new();
    let mut parsed = 0;
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let env = options(&case).env;
        for mode in modes {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
                .args(["config", "show", "--default-include-from", "none", "--config"])
                .arg(case.join("tree/config.xml"))
                .args(mode)
                .envs(env.iter())
                .output()
                .expect("run chaudit");
            if out.stdout.is_empty() {
                continue; // refused, as the engine refuses the tree
            }
            let text = String::from_utf8_lossy(&out.stdout);
            match roxmltree::Document::parse(&text) {
                Ok(_) => parsed += 1,
                Err(e) => failures.push(format!("{name} {}: {e}", mode.join(" "))),
            }
        }
    }
    eprintln!("{parsed} outputs parsed");
    assert!(parsed >= 300, "only {parsed} outputs");
    assert!(failures.is_empty(), "{} outputs are not well-formed XML:\n{}", failures.len(), failures.join("\n"));
}

/// A checked-out tree that names its files by their absolute paths on the server
/// (tests/cmd/fixtures/rooted: `<include_from>` and `<users_config>` under
/// /etc/clickhouse-server, an `incl` from the include file, users.d/ beside the users file):
/// read through `--root /etc/clickhouse-server=DIR`, it is the tree clickhouse-server 25.8
/// preprocesses once the files are installed at /etc/clickhouse-server
/// (engine-preprocess.py --install-at: inside its own namespace, the machine's /etc is not
/// touched), as the library loads it and as `chaudit config show` prints it.
#[test]
fn a_tree_read_through_a_root_is_the_tree_the_engine_reads_installed() {
    let tree = support::repo_root().join("tests/cmd/fixtures/rooted");
    let expected = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(support::server_engine_python())
        .arg(support::repo_root().join("scripts/engine-preprocess.py"))
        .arg(&tree)
        .arg(expected.path())
        .args(["--install-at", "/etc/clickhouse-server"])
        .output()
        .expect("run engine-preprocess.py");
    assert!(out.status.success(), "engine-preprocess.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let log = std::fs::read_to_string(expected.path().join("log")).unwrap_or_default();
    // the engine read the installed files by the absolute paths the config names
    let users = std::fs::read_to_string(expected.path().join("users.xml")).unwrap_or_default();
    assert!(
        users.contains("/etc/clickhouse-server/users.xml")
            && users.contains("/etc/clickhouse-server/users.d/readonly.xml"),
        "the engine wrote no users config of the installed files:\n{users}\n{log}"
    );
    assert!(log.contains("Including configuration file '/etc/clickhouse-server/config.d/macros.xml'"), "{log}");

    let mut options = options(&tree);
    let root = Root::parse(&format!("/etc/clickhouse-server={}", tree.display())).unwrap();
    options.roots = Roots::new(vec![root]);
    let result = preprocessed::compare("rooted", &tree.join("config.xml"), expected.path(), &options);
    assert!(result.failures.is_empty(), "{}", result.failures.join("\n"));
    assert_eq!(result.files, 2, "config.xml and users.xml compared");

    // the command line, from the repository with a relative DIR, as CI runs it
    for (mode, engine) in [(&[][..], "config.xml"), (&["--users"][..], "users.xml")] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
            .current_dir(support::repo_root())
            .args(["config", "show", "--show-secrets", "--config", "tests/cmd/fixtures/rooted/config.xml"])
            .args(["--root", "/etc/clickhouse-server=tests/cmd/fixtures/rooted"])
            .args(mode)
            .output()
            .expect("run chaudit");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ours = preprocessed::parse_xml(String::from_utf8(out.stdout).unwrap(), "chaudit");
        let theirs = std::fs::read_to_string(expected.path().join(engine)).unwrap();
        let theirs = preprocessed::parse_xml(theirs, "engine");
        let difference = preprocessed::difference(&preprocessed::shape(&ours), &preprocessed::shape(&theirs), "");
        assert_eq!(difference, None, "{engine}");
    }

    // without the root, the files are not where the config says: refused, as the engine would
    options.roots = Roots::default();
    let refused = config::load(&tree.join("config.xml"), &options);
    assert!(matches!(refused, Err(ConfigError::IncludeFromMissing { .. })), "{refused:?}");
}
