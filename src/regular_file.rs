//! Input and output files are regular files. Opening a FIFO for reading blocks until a
//! writer comes (forever, for an audit), and a device node renamed over by a temporary
//! file is gone: both are refused with what the path really is.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

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

/// Reads a whole file (links followed) that must be a regular file. It is opened without
/// blocking, so a FIFO is refused instead of waited on; a file of the kernel's (under /proc,
/// /sys or /dev, or on such a file system mounted elsewhere) is refused before it is read: a
/// config under review could name /proc/self/environ as its include file and have the
/// environment of whoever audits it quoted in an error.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    refuse_kernel_path(path)?;
    let mut file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    refuse_kernel_file_system(&file)?;
    let meta = file.metadata()?;
    if let Some(kind) = kind(&meta) {
        return Err(not_regular(kind));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Where the kernel's files are, by path (links resolved).
fn refuse_kernel_path(path: &Path) -> io::Result<()> {
    let real = path.canonicalize()?;
    match ["/proc", "/sys", "/dev"].into_iter().find(|top| real.starts_with(top)) {
        Some(top) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("it is under {top}, which chaudit never reads as a config or input file"),
        )),
        None => Ok(()),
    }
}

/// The kernel's pseudo file systems, wherever mounted (statfs(2) magic numbers).
fn refuse_kernel_file_system(file: &File) -> io::Result<()> {
    const KERNEL_FILE_SYSTEMS: [(i64, &str); 6] = [
        (0x9fa0, "proc"),
        (0x6265_6572, "sysfs"),
        (0x6462_6720, "debugfs"),
        (0x7363_6673, "securityfs"),
        (0x0027_e0eb, "cgroup"),
        (0x6367_7270, "cgroup2"),
    ];
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: fstatfs writes a statfs into the buffer for an open descriptor, or fails.
    if unsafe { libc::fstatfs(std::os::fd::AsRawFd::as_raw_fd(file), stat.as_mut_ptr()) } != 0 {
        return Ok(());
    }
    // SAFETY: fstatfs succeeded, so it wrote the struct.
    let kind = unsafe { stat.assume_init() }.f_type as i64;
    match KERNEL_FILE_SYSTEMS.iter().find(|(magic, _)| *magic == kind) {
        Some((_, name)) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("it is on the kernel's {name} file system, which chaudit never reads as a config or input file"),
        )),
        None => Ok(()),
    }
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
/// beside it (buffered, so a big report is streamed, not held, and with the secret values
/// [`crate::redact`] knows masked), then renamed over it. Only
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
        // every file chaudit writes passes through the redaction of known secret values
        let mut out = io::BufWriter::with_capacity(1 << 20, crate::redact::Redacting::new(file));
        write(&mut out)?;
        let mut redacting = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        redacting.finish()?;
        redacting.get_ref().sync_all()
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
    fn kernel_files_are_never_read() {
        for path in ["/proc/self/environ", "/proc/self/cmdline", "/sys/kernel/mm", "/dev/null"] {
            let err = read(Path::new(path)).unwrap_err();
            assert!(err.to_string().contains("never reads"), "{path}: {err}");
        }
        // through a link from an ordinary directory
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("include.xml");
        std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
        assert!(read(&link).unwrap_err().to_string().contains("under /proc"));
    }

    #[test]
    fn a_fifo_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let err = read(&fifo(dir.path())).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        assert!(read(dir.path()).unwrap_err().to_string().contains("a directory"));
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
