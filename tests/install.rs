//! README's install line works as written on this checkout: `cargo install --locked --path .`
//! (here with `--debug` into a temporary root and this checkout's target directory, so the
//! build already made is reused), and the installed binary audits the bundled example.

mod support;

use std::process::Command;

#[test]
fn the_readme_install_line_installs_a_working_chaudit() {
    let root = support::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let line = "cargo install --locked --path .";
    assert!(readme.contains(line), "README's install line changed: update this test");
    let dir = tempfile::tempdir().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["install", "--locked", "--path", ".", "--debug", "--root"])
        .arg(dir.path())
        .arg("--target-dir")
        .arg(root.join("target"))
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let installed = dir.path().join("bin/chaudit");
    let audit = Command::new(&installed)
        .args(["--config", "examples/production/config.xml", "--format", "json"])
        .current_dir(&root)
        .output()
        .unwrap();
    // the example has findings: exit 1, a JSON report
    assert_eq!(audit.status.code(), Some(1), "{}", String::from_utf8_lossy(&audit.stderr));
    let report: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    assert!(!report["findings"].as_array().unwrap().is_empty());
}
