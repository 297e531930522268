//! Each generated tree again, split as `--base DIR` reads a container: some of its files in
//! the tree mounted over the base, the others in the base, and base files the tree's files
//! of the same name hide. Read over its base, the tree must merge as the engine merged the
//! whole tree (the same `expected/`, no engine run of its own).

use std::path::{Path, PathBuf};

use chaudit::config::{Base, LoadOptions};

use crate::support::preprocessed;

/// What a base file hidden by one of the tree's files holds: read, it shows in the merge
/// (and `t1` in an include file).
const HIDDEN: &str = "<clickhouse><t1>hidden</t1><hidden_base_file>1</hidden_base_file></clickhouse>";

/// The same draw for a tree's file on every run (FNV-1a of the tree's number and the path).
fn draw(tree: usize, path: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ tree as u64;
    for byte in path.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn files(dir: &Path, under: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, under, out);
        } else {
            out.push(path.strip_prefix(under).unwrap().to_path_buf());
        }
    }
}

fn write(path: &Path, text: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Splits chaudit's copy of tree `tree` (`case/ours`) into `case/overlay` and `case/base`;
/// the main config's path in the overlay. A YAML main config stays in the base (the
/// image's entrypoint starts the server on config.xml), and the base always has a config.xml.
fn split(case: &Path, tree: usize) -> PathBuf {
    let ours = case.join("ours");
    let mut paths = Vec::new();
    files(&ours, &ours, &mut paths);
    for path in &paths {
        let name = path.to_string_lossy();
        let text = std::fs::read(ours.join(path)).unwrap();
        let draw = draw(tree, &name);
        if name != "config.yaml" && draw.is_multiple_of(2) {
            write(&case.join("overlay").join(path), &text);
            if draw.is_multiple_of(3) || name == "config.xml" {
                write(&case.join("base").join(path), HIDDEN.as_bytes());
            }
        } else {
            write(&case.join("base").join(path), &text);
        }
    }
    std::fs::create_dir_all(case.join("overlay")).unwrap();
    let yaml = paths.iter().any(|p| p == Path::new("config.yaml"));
    case.join("overlay").join(if yaml { "config.yaml" } else { "config.xml" })
}

/// Tree `tree`, written under `case` and run by the engine, read over its base by chaudit
/// and compared with the engine's merge of the whole tree.
pub fn compare(case: &Path, tree: usize, options: LoadOptions) -> preprocessed::Compared {
    let main = split(case, tree);
    // the engine ran the tree without the image's entrypoint, which would set up the default user
    let mut env = options.env.clone();
    env.insert("CLICKHOUSE_SKIP_USER_SETUP".into(), "1".into());
    let options = LoadOptions { base: Some(Base::Dir(case.join("base"))), env, ..options };
    preprocessed::compare(&format!("tree {tree} over a base"), &main, &case.join("expected"), &options)
}
