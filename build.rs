//! Embeds the built-in rule pack (rules/**/*.yaml, fixtures excluded) into the binary, and
//! indexes the lines of data/config-keys.txt.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=rules");
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    collect(&root.join("rules"), &mut files);
    files.sort();
    let entries: String = files
        .iter()
        .map(|f| {
            let relative = f.strip_prefix(&root).expect("under the manifest dir").display().to_string();
            format!("    ({relative:?}, include_str!({:?})),\n", f.display().to_string())
        })
        .collect();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtin_rules.rs");
    std::fs::write(out, format!("pub const BUILTIN_RULES: &[(&str, &str)] = &[\n{entries}];\n"))
        .expect("write builtin_rules.rs");
    index_config_keys(&root);
}

/// Where each name's line starts in data/config-keys.txt after its comment line, as
/// little-endian u32s: the search for a name probes lines without scanning for them.
fn index_config_keys(root: &Path) {
    println!("cargo:rerun-if-changed=data/config-keys.txt");
    let text = std::fs::read_to_string(root.join("data/config-keys.txt")).expect("read data/config-keys.txt");
    let names = text.split_once('\n').map_or("", |(_, rest)| rest);
    let mut starts = Vec::new();
    let mut at = 0;
    for line in names.split_inclusive('\n') {
        starts.extend_from_slice(&u32::try_from(at).expect("the file is under 4 GiB").to_le_bytes());
        at += line.len();
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("config_key_lines.bin");
    std::fs::write(out, starts).expect("write config_key_lines.bin");
}

/// Rule files: YAML files not inside a fixture tree (a directory with a config.xml, or
/// the config.d/, conf.d/, users.d/ of one).
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let is_fixture = ["config.xml", "config.yaml", "config.yml"].iter().any(|m| dir.join(m).exists())
        || dir.file_name().is_some_and(|n| n == "config.d" || n == "conf.d" || n == "users.d");
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if !is_fixture && path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}
