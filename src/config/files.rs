//! Finding and reading config files the way ClickHouse does.

use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::error::{ConfigError, Result};
use super::fs::ConfigFs;
use super::source::{FileId, SourceFile, SourceMap, display_path};
use super::tree::Element;
use super::{xml, yaml};

const MERGE_EXTENSIONS: [&str; 4] = ["xml", "conf", "yaml", "yml"];
/// Linux ELOOP: too many levels of symbolic links.
const ELOOP: i32 = 40;

/// The fragments merged into `main`: every config file in `<main stem>.d/` and `conf.d/`
/// beside it, sorted together by full path (so `conf.d/` applies before `config.d/`).
pub fn merge_files(fs: &dyn ConfigFs, main: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = vec![main.with_extension("d"), main.with_file_name("conf.d")];
    dirs.sort();
    dirs.dedup();
    let mut files = Vec::new();
    for dir in dirs {
        let entries = match fs.read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                continue;
            }
            Err(e) if e.raw_os_error() == Some(ELOOP) => {
                return Err(ConfigError::SymlinkLoop { path: dir });
            }
            Err(source) => return Err(ConfigError::Read { path: dir, source }),
        };
        for (path, regular) in entries {
            if is_mergeable(fs, &path, regular)? {
                files.push(path);
            }
        }
    }
    files.sort_by(|a, b| a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes()));
    Ok(files)
}

/// A regular file (after following links) with a config extension, not a dotfile.
/// `regular`: already known to be a regular file itself (not a link).
fn is_mergeable(fs: &dyn ConfigFs, path: &Path, regular: bool) -> Result<bool> {
    let extension_ok = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MERGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
    let hidden = path.file_stem().is_some_and(|s| s.as_bytes().starts_with(b"."));
    if !extension_ok || hidden {
        return Ok(false);
    }
    if regular {
        return Ok(true);
    }
    match fs.is_file(path) {
        Ok(is_file) => Ok(is_file),
        Err(e) if e.raw_os_error() == Some(ELOOP) => Err(ConfigError::SymlinkLoop { path: path.to_path_buf() }),
        // a dangling link is not a regular file: ClickHouse skips it
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(source) => Err(ConfigError::Read { path: path.to_path_buf(), source }),
    }
}

/// Reads a file as UTF-8 text into the source map.
pub fn read(fs: &dyn ConfigFs, sources: &mut SourceMap, path: &Path) -> Result<FileId> {
    let file = read_file(fs, path, sources.base_dir())?;
    Ok(sources.push(file))
}

/// Reads a file as UTF-8 text, shown relative to `base_dir` (any thread: the source map
/// takes it after).
pub fn read_file(fs: &dyn ConfigFs, path: &Path, base_dir: &Path) -> Result<SourceFile> {
    let text = read_text(fs, path)?;
    let from = fs.read_from(path);
    Ok(SourceFile::new(from.clone(), display_path(base_dir, &from), text))
}

/// A file's text, which must be UTF-8.
fn read_text(fs: &dyn ConfigFs, path: &Path) -> Result<String> {
    let bytes = fs.read(path).map_err(|source| match source.kind() {
        ErrorKind::NotFound => ConfigError::NotFound { path: path.to_path_buf() },
        _ if source.raw_os_error() == Some(ELOOP) => ConfigError::SymlinkLoop { path: path.to_path_buf() },
        _ => ConfigError::Read { path: path.to_path_buf(), source },
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        let column = String::from_utf8_lossy(&valid[line_start..]).chars().count() + 1;
        ConfigError::NotUtf8 { path: path.to_path_buf(), line, column }
    })?;
    Ok(text)
}

/// Parses a file by ClickHouse's rules: `.xml` is XML, `.yaml`/`.yml` YAML, anything else
/// XML when its first non-blank character is `<`.
pub fn parse(file: &SourceFile, id: FileId) -> Result<Element> {
    let extension = file.path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("xml") => xml::parse(file, id),
        Some("yaml" | "yml") => yaml::parse(file, id),
        _ if file.text().trim_start().starts_with('<') => xml::parse(file, id),
        _ => yaml::parse(file, id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fs::{MemoryFs, RealFs};

    #[test]
    fn conf_d_sorts_before_config_d_and_filters_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut memory = MemoryFs::default();
        let names = ["config.d/b.xml", "config.d/a.YAML", "config.d/.hidden.xml", "config.d/n.txt", "conf.d/z.conf"];
        for f in names.into_iter().chain(["config.d/sub.xml/c.xml"]) {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "<clickhouse/>").unwrap();
            memory.insert(p, "<clickhouse/>");
        }
        for fs in [&RealFs as &dyn ConfigFs, &memory] {
            let files = merge_files(fs, &root.join("config.xml")).unwrap();
            let names: Vec<_> = files.iter().map(|p| p.strip_prefix(root).unwrap().display().to_string()).collect();
            assert_eq!(names, ["conf.d/z.conf", "config.d/a.YAML", "config.d/b.xml"], "{fs:?}");
        }
    }

    #[test]
    fn symlink_loops_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("config.d");
        std::fs::create_dir(&d).unwrap();
        std::os::unix::fs::symlink(d.join("loop.xml"), d.join("loop.xml")).unwrap();
        assert!(matches!(merge_files(&RealFs, &dir.path().join("config.xml")), Err(ConfigError::SymlinkLoop { .. })));
    }

    #[test]
    fn non_utf8_names_the_position() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.xml");
        std::fs::write(&p, b"<a>\n  \xff</a>").unwrap();
        let mut sources = SourceMap::new(dir.path().into());
        assert!(matches!(read(&RealFs, &mut sources, &p), Err(ConfigError::NotUtf8 { line: 2, column: 3, .. })));
    }
}
