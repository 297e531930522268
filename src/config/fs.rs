//! The file system a config is loaded from: the real one, or a map of paths to bytes (a
//! fuzz input or a test's tree, loaded without writing a file).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::{self, ErrorKind};
use std::path::{Component, Path, PathBuf};

/// What the config loader reads. `Sync`: fragments are read on every core.
pub trait ConfigFs: Debug + Sync {
    /// A regular file's bytes (links followed); a directory or a FIFO is an error.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// A directory's entries, each with whether the listing already shows a regular file
    /// (when not, a link or an unknown type, [`ConfigFs::is_file`] says).
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<(PathBuf, bool)>>;
    /// Whether `path` is a regular file, links followed; an error when it is not there.
    fn is_file(&self, path: &Path) -> io::Result<bool>;
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    fn exists(&self, path: &Path) -> bool {
        self.is_file(path).is_ok()
    }

    /// Where the file the config knows as `path` is really read from (another file when the
    /// tree is mounted over a base: the base's file is shown, not the tree's path).
    fn read_from(&self, path: &Path) -> PathBuf {
        path.to_path_buf()
    }
}

/// The machine's file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl ConfigFs for RealFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        crate::regular_file::read(path)
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        // the listing tells a regular file without a stat call; links are followed later
        std::fs::read_dir(dir)?
            .map(|entry| entry.map(|entry| (entry.path(), entry.file_type().is_ok_and(|t| t.is_file()))))
            .collect()
    }

    fn is_file(&self, path: &Path) -> io::Result<bool> {
        Ok(std::fs::metadata(path)?.is_file())
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        path.canonicalize()
    }
}

/// Files held in memory, by path; a directory is any path a file is under. There are no
/// links, so `..` is resolved by the path alone.
#[derive(Debug, Clone, Default)]
pub struct MemoryFs {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemoryFs {
    /// Adds or replaces the file at `path`.
    pub fn insert(&mut self, path: impl AsRef<Path>, bytes: impl Into<Vec<u8>>) {
        self.files.insert(normalize(path.as_ref()), bytes.into());
    }

    /// The files under `dir` (any depth; `dir` itself when it is a file).
    fn under<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = &'a PathBuf> {
        self.files.range(dir.to_path_buf()..).map(|(path, _)| path).take_while(move |path| path.starts_with(dir))
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.under(path).any(|file| file != path)
    }
}

impl ConfigFs for MemoryFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let path = normalize(path);
        match self.files.get(&path) {
            Some(bytes) => Ok(bytes.clone()),
            None if self.is_dir(&path) => Err(crate::regular_file::not_regular("a directory")),
            None => Err(ErrorKind::NotFound.into()),
        }
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<(PathBuf, bool)>> {
        let dir = normalize(dir);
        if self.files.contains_key(&dir) {
            return Err(ErrorKind::NotADirectory.into());
        }
        let mut entries: Vec<(PathBuf, bool)> = self
            .under(&dir)
            .filter_map(|file| {
                let mut rest = file.strip_prefix(&dir).ok()?.components();
                let name = rest.next()?;
                Some((dir.join(name), rest.next().is_none()))
            })
            .collect();
        if entries.is_empty() {
            return Err(ErrorKind::NotFound.into());
        }
        entries.dedup();
        Ok(entries)
    }

    fn is_file(&self, path: &Path) -> io::Result<bool> {
        let path = normalize(path);
        if self.files.contains_key(&path) {
            Ok(true)
        } else if self.is_dir(&path) {
            Ok(false)
        } else {
            Err(ErrorKind::NotFound.into())
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.is_file(path)?;
        Ok(normalize(path))
    }
}

/// `path` without `.` and with each `..` taking off the name before it, without the file
/// system (a server's path need not exist on this machine).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(normal.components().next_back(), Some(Component::Normal(_))) => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_directories_are_the_paths_files_are_under() {
        let mut fs = MemoryFs::default();
        fs.insert("/c/config.xml", "<clickhouse/>");
        fs.insert("/c/config.d/a.xml", "a");
        fs.insert("/c/config.d/sub/b.xml", "b");
        fs.insert("/c/config.dx", "not under config.d");
        let listed = fs.read_dir(Path::new("/c/config.d")).unwrap();
        assert_eq!(listed, [(PathBuf::from("/c/config.d/a.xml"), true), (PathBuf::from("/c/config.d/sub"), false)]);
        assert_eq!(fs.read(Path::new("/c/config.d/../config.d/./a.xml")).unwrap(), b"a");
        assert!(fs.read(Path::new("/c/config.d")).unwrap_err().to_string().contains("a directory"));
        assert_eq!(fs.read_dir(Path::new("/c/none")).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(fs.read_dir(Path::new("/c/config.xml")).unwrap_err().kind(), ErrorKind::NotADirectory);
        assert!(!fs.is_file(Path::new("/c/config.d/sub")).unwrap());
        assert!(!fs.exists(Path::new("/c/users.xml")));
        assert_eq!(fs.canonicalize(Path::new("/c/./config.d/../config.xml")).unwrap(), Path::new("/c/config.xml"));
    }
}
