//! Input and output files are regular files. Opening a FIFO for reading blocks until a
//! writer comes (forever, for an audit), and a device node renamed over by a temporary
//! file is gone: both are refused with what the path really is.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::limits::{self, MAX_INPUT_FILE_BYTES};

/// A JSON file that does not parse or is not of its shape, said at its place:
/// `path:line:column: not WHAT: why` (serde_json's own " at line L column C" left off, the
/// place being said first).
pub fn json_error(path: &Path, what: &str, e: &serde_json::Error) -> String {
    let why = e.to_string();
    let why = why.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())).unwrap_or(&why);
    format!("{}:{}:{}: not {what}: {why}", path.display(), e.line(), e.column())
}

/// What a path is, when it is not a regular file.
fn kind(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    let kind = if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    };
    Some(kind)
}

pub(crate) fn not_regular(kind: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("it is {kind}, not a regular file"))
}

/// A file past [`MAX_INPUT_FILE_BYTES`]: refused before it is read (the callers name the path).
#[derive(Debug, Error)]
#[error("it is {size} bytes, more than chaudit reads of one input file ({cap}, MAX_INPUT_FILE_BYTES)", cap = limits::bytes(*.cap))]
pub struct TooLarge {
    /// Its size, or what was read of it when it grew past the cap while being read.
    pub size: u64,
    pub cap: u64,
}

/// Reads a whole file (links followed) that must be a regular file of at most
/// [`MAX_INPUT_FILE_BYTES`]. It is opened without blocking, so a FIFO is refused instead of
/// waited on; a larger file (a 10 GB sparse file) is refused before any of it is read, and
/// one that grows while it is read is stopped at the cap.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    read_capped(path, MAX_INPUT_FILE_BYTES)
}

fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if let Some(kind) = kind(&meta) {
        return Err(not_regular(kind));
    }
    let too_large = |size| io::Error::new(io::ErrorKind::FileTooLarge, TooLarge { size, cap });
    if meta.len() > cap {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[derive(Debug, Error)]
pub enum WriteError {
    /// The target exists and is not a regular file: nothing is written (a usage error).
    #[error("{}: refusing to replace it: it is {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("cannot write {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Whether [`replace`] may write `path` (checked before the work that produces its content).
pub fn ensure_replaceable(path: &Path) -> Result<(), WriteError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => match kind(&meta) {
            Some(kind) => Err(WriteError::NotRegular { path: path.to_path_buf(), kind }),
            None => Ok(()),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(WriteError::Io { path: path.to_path_buf(), source }),
    }
}

/// Writes `bytes` to `path` whole or not at all: see [`replace_with`].
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace_with(path, |out| out.write_all(bytes))
}

/// Writes what `write` writes to `path` whole or not at all: into a new temporary file
/// beside it (buffered, so a big report is streamed, not held), then renamed over it. Only
/// an absent path or a regular file is replaced (a link, a device or a FIFO is refused,
/// and left as it is).
pub fn replace_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), WriteError> {
    let io = |source| WriteError::Io { path: path.to_path_buf(), source };
    ensure_replaceable(path)?;
    let name = path.file_name().ok_or_else(|| io(io::Error::new(io::ErrorKind::InvalidInput, "no file name")))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".chaudit-{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    // create_new: never through a link or over anything left there
    let written = OpenOptions::new().write(true).create_new(true).open(&tmp).and_then(|file: File| {
        let mut out = io::BufWriter::with_capacity(1 << 20, file);
        write(&mut out)?;
        out.into_inner().map_err(io::IntoInnerError::into_error)?.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_error_says_its_place_once() {
        let e = serde_json::from_str::<Vec<String>>("[\n 1]").unwrap_err();
        let said = json_error(Path::new("b.json"), "a list of names", &e);
        assert_eq!(said, "b.json:2:2: not a list of names: invalid type: integer `1`, expected a string");
    }

    fn fifo(dir: &Path) -> PathBuf {
        let path = dir.join("pipe");
        let status = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(status.success());
        path
    }

    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let err = read(&fifo(dir.path())).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        assert!(read(dir.path()).unwrap_err().to_string().contains("a directory"));
    }

    #[test]
    fn a_file_past_the_cap_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let sparse = dir.path().join("sparse.xml");
        // 10 GB and no block on disk: refused by its size, nothing allocated for it
        File::create(&sparse).unwrap().set_len(10 << 30).unwrap();
        let err = read(&sparse).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(
            err.to_string(),
            "it is 10737418240 bytes, more than chaudit reads of one input file (512 MiB, MAX_INPUT_FILE_BYTES)"
        );
        let small = dir.path().join("small");
        std::fs::write(&small, b"12345").unwrap();
        assert_eq!(read_capped(&small, 5).unwrap(), b"12345");
        assert!(read_capped(&small, 4).unwrap_err().to_string().starts_with("it is 5 bytes"));
    }

    #[test]
    fn only_regular_files_or_nothing_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = fifo(dir.path());
        assert!(matches!(replace(&pipe, b"x"), Err(WriteError::NotRegular { kind: "a FIFO (named pipe)", .. })));
        assert!(std::fs::symlink_metadata(&pipe).unwrap().file_type().is_fifo());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        assert!(matches!(replace(&link, b"x"), Err(WriteError::NotRegular { kind: "a symbolic link", .. })));
        assert!(matches!(replace(Path::new("/dev/null"), b"x"), Err(WriteError::NotRegular { .. })));
        let file = dir.path().join("out.json");
        replace(&file, b"one").unwrap();
        replace(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        // a write that fails half-way leaves the old file as it was
        let failed = replace_with(&file, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("serializer failed"))
        });
        assert!(matches!(failed, Err(WriteError::Io { .. })));
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "no temporary file left");
    }
}
