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

use chaudit::config::{DefaultInclude, LoadOptions};
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
