//! Shared by the integration tests: the real ClickHouse engine, installed on demand.
#![allow(dead_code)] // each test binary uses part of this

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The python of a venv holding the ClickHouse 26.9 engine (installed on first use).
/// A test that cannot get the engine fails: it is never skipped.
pub fn engine_python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let script = repo_root().join("tests/clickhouse/ensure-engine.sh");
        let out = Command::new("bash").arg(&script).output().expect("run ensure-engine.sh");
        assert!(
            out.status.success(),
            "cannot install the ClickHouse engine (PyPI chdb-core):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).expect("utf-8 path").trim())
    })
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
