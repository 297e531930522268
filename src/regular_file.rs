//! Input and output files are regular files. Opening a FIFO for reading blocks until a
//! writer comes (forever, for an audit), and a device node renamed over by a temporary
//! file is gone: both are refused with what the path really is.
//!
//! Every write goes to a new temporary file beside its target, renamed over it when whole;
//! several targets are written all or none ([`replace_all`]); a temporary file is removed if
//! the process is interrupted ([`cleanup`]); no output may be one of the run's inputs
//! ([`ensure_not_input`]); [`lock`] keeps two runs from writing one tree at once.

mod cleanup;
pub mod lock;

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

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
/// one that grows while it is read is stopped at the cap. A file of the kernel's (under /proc,
/// /sys or /dev, or on such a file system mounted elsewhere) is refused before it is read: a
/// config under review could name /proc/self/environ as its include file and have the
/// environment of whoever audits it quoted in an error.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    read_capped(path, MAX_INPUT_FILE_BYTES)
}

fn read_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    refuse_kernel_path(path)?;
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    refuse_kernel_file_system(&file)?;
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
    #[allow(clippy::unnecessary_cast)] // f_type is not an i64 on every libc (musl)
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
    /// The target is a file the run reads (a usage error): nothing is written.
    #[error("{}: refusing to write it: it is {input}, an input of this run", path.display())]
    NamesInput { path: PathBuf, input: String },
    #[error("cannot write {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// One of several targets could not be written: none of them was changed.
    #[error("{failed}; nothing was written (left as they were: {})", shown(untouched))]
    NoneWritten { failed: Box<WriteError>, untouched: Vec<PathBuf> },
}

impl WriteError {
    /// The user's mistake (a target that is not a regular file, or is an input), not the system's.
    pub fn is_usage(&self) -> bool {
        match self {
            WriteError::NotRegular { .. } | WriteError::NamesInput { .. } => true,
            WriteError::Io { .. } => false,
            WriteError::NoneWritten { failed, .. } => failed.is_usage(),
        }
    }
}

fn shown(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
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

/// An output must not be one of the run's inputs (the same file, by any name): writing the
/// report over the config it audits loses the config. `inputs` are (what it is, its path);
/// an output that does not exist yet is none of them.
pub fn ensure_not_input(output: &Path, inputs: &[(&str, &Path)]) -> Result<(), WriteError> {
    let out = std::fs::metadata(output).ok();
    for &(what, input) in inputs {
        let same = match (&out, std::fs::metadata(input)) {
            (Some(out), Ok(meta)) => meta.dev() == out.dev() && meta.ino() == out.ino(),
            // two outputs named alike, neither written yet
            _ => input == output,
        };
        if same {
            let input = if input == output { what.to_string() } else { format!("{what} {}", input.display()) };
            return Err(WriteError::NamesInput { path: output.to_path_buf(), input });
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` whole or not at all: see [`replace_with`].
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    replace_with(path, |out| out.write_all(bytes))
}

/// A new temporary file beside a target: removed when dropped (unless renamed), or when a
/// signal ends the process.
struct Temp {
    path: PathBuf,
    _registered: cleanup::Registered,
    renamed: bool,
}

impl Temp {
    /// `.NAME.chaudit-PID-N.WHAT` beside `target`, created new (never through a link or over
    /// anything left there) and filled by `write`.
    fn create(target: &Path, what: &str) -> io::Result<(Temp, File)> {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let name = target.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        tmp_name.push(format!(".chaudit-{}-{n}.{what}", std::process::id()));
        let path = target.with_file_name(tmp_name);
        // registered first: a signal between the creation and the registration leaves nothing
        let registered = cleanup::register(&path);
        let file = OpenOptions::new().write(true).create_new(true).open(&path)?;
        Ok((Temp { path, _registered: registered, renamed: false }, file))
    }

    fn write(target: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<Temp> {
        let (temp, file) = Temp::create(target, "tmp")?;
        // a file replaced keeps its permissions (a manifest readable by its owner only stays so)
        if let Ok(meta) = std::fs::symlink_metadata(target)
            && meta.is_file()
        {
            file.set_permissions(meta.permissions())?;
        }
        // every file chaudit writes passes through the redaction of known secret values
        let mut out = io::BufWriter::with_capacity(1 << 20, crate::redact::Redacting::new(file));
        write(&mut out)?;
        let mut redacting = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        redacting.finish()?;
        redacting.get_ref().sync_all()?;
        Ok(temp)
    }

    fn rename_to(&mut self, target: &Path) -> io::Result<()> {
        std::fs::rename(&self.path, target)?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Writes what `write` writes to `path` whole or not at all: into a new temporary file
/// beside it (buffered, so a big report is streamed, not held, and with the secret values
/// [`crate::redact`] knows masked), then renamed over it. Only
/// an absent path or a regular file is replaced (a link, a device or a FIFO is refused,
/// and left as it is).
pub fn replace_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), WriteError> {
    let io = |source| WriteError::Io { path: path.to_path_buf(), source };
    ensure_replaceable(path)?;
    let mut temp = Temp::write(path, write).map_err(io)?;
    ensure_replaceable(path)?;
    temp.rename_to(path).map_err(io)
}

/// Writes every `(path, bytes)` or none (see [`Transaction`]); every target is checked
/// before any is written, and an error names the files left as they were.
pub fn replace_all(files: &[(&Path, &[u8])]) -> Result<(), WriteError> {
    let paths: Vec<&Path> = files.iter().map(|(p, _)| *p).collect();
    let mut transaction = Transaction::default();
    let staged = paths
        .iter()
        .try_for_each(|p| ensure_replaceable(p))
        .and_then(|()| files.iter().try_for_each(|(path, bytes)| transaction.stage(path, bytes)));
    staged.and_then(|()| transaction.commit()).map_err(|e| none_written(e, &paths))
}

/// `failed`, saying that none of `paths` was written (when there are several).
pub fn none_written(failed: WriteError, paths: &[&Path]) -> WriteError {
    if paths.len() < 2 {
        return failed;
    }
    WriteError::NoneWritten { failed: Box::new(failed), untouched: paths.iter().map(|p| p.to_path_buf()).collect() }
}

/// Files written together, all or none: each is staged whole in its temporary file, then
/// [`Transaction::commit`] renames them all over their targets. Dropped uncommitted (an
/// error, a panic), it removes its temporary files and changes nothing.
#[derive(Default)]
pub struct Transaction {
    staged: Vec<(PathBuf, Temp)>,
}

impl Transaction {
    /// Writes `bytes` for `path` into a temporary file beside it.
    pub fn stage(&mut self, path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        self.stage_with(path, |out| out.write_all(bytes))
    }

    /// Writes what `write` writes for `path` into a temporary file beside it (streamed).
    pub fn stage_with(
        &mut self,
        path: &Path,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), WriteError> {
        ensure_replaceable(path)?;
        let temp = Temp::write(path, write).map_err(|source| WriteError::Io { path: path.to_path_buf(), source })?;
        self.staged.push((path.to_path_buf(), temp));
        Ok(())
    }

    /// Renames every staged file over its target. A rename that fails puts back the targets
    /// already replaced, from links to their old files made first (on a file system without
    /// hard links, a replaced file cannot be put back, and is left new).
    pub fn commit(mut self) -> Result<(), WriteError> {
        let several = self.staged.len() > 1;
        let olds: Vec<Old> =
            self.staged.iter().map(|(path, _)| if several { Old::keep(path) } else { Old::Kept }).collect();
        // an interruption now would leave some renamed, some not: signals wait until the end
        let _deferred = cleanup::Deferred::new();
        for i in 0..self.staged.len() {
            let (path, temp) = &mut self.staged[i];
            let renamed = ensure_replaceable(path)
                .and_then(|()| temp.rename_to(path).map_err(|source| WriteError::Io { path: path.clone(), source }));
            if let Err(error) = renamed {
                for ((done, _), old) in self.staged[..i].iter().zip(olds) {
                    old.put_back(done);
                }
                return Err(error);
            }
        }
        Ok(())
    }
}

/// What a target was before a [`Transaction`] replaced it, to put it back.
enum Old {
    /// There was no file: the new one is removed.
    Absent,
    /// A link to the old file.
    Linked(Temp),
    /// Nothing to put back (a single target, or no hard link possible).
    Kept,
}

impl Old {
    fn keep(path: &Path) -> Old {
        if std::fs::symlink_metadata(path).is_err() {
            return Old::Absent;
        }
        let Ok((old, file)) = Temp::create(path, "old") else { return Old::Kept };
        drop(file);
        match std::fs::remove_file(&old.path).and_then(|()| std::fs::hard_link(path, &old.path)) {
            Ok(()) => Old::Linked(old),
            Err(_) => Old::Kept,
        }
    }

    fn put_back(self, path: &Path) {
        match self {
            Old::Absent => {
                let _ = std::fs::remove_file(path);
            }
            Old::Linked(mut old) => {
                let _ = old.rename_to(path);
            }
            Old::Kept => {}
        }
    }
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

    #[test]
    fn several_files_are_written_all_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (dir.path().join("one.xml"), dir.path().join("two.xml"));
        std::fs::write(&one, "old").unwrap();
        // the second target's directory does not exist: the first is left as it was
        let missing = dir.path().join("missing/three.sql");
        let err = replace_all(&[(&one, b"new"), (&two, b"new"), (&missing, b"sql")]).unwrap_err();
        assert!(matches!(&err, WriteError::NoneWritten { failed, .. } if matches!(**failed, WriteError::Io { .. })));
        assert!(err.to_string().contains("nothing was written"), "{err}");
        assert_eq!(std::fs::read(&one).unwrap(), b"old");
        assert!(!two.exists());
        // a FIFO among them: refused before any is written
        let pipe = fifo(dir.path());
        let err = replace_all(&[(&one, b"new"), (&pipe, b"x")]).unwrap_err();
        assert!(err.is_usage(), "{err}");
        assert_eq!(std::fs::read(&one).unwrap(), b"old");
        replace_all(&[(&one, b"new"), (&two, b"two")]).unwrap();
        assert_eq!((std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap()), (b"new".to_vec(), b"two".to_vec()));
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 3, "no temporary or old file left: {names:?}");
    }

    #[test]
    fn a_commit_that_fails_half_way_puts_back_what_it_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two, three) = (dir.path().join("one"), dir.path().join("two"), dir.path().join("three"));
        std::fs::write(&one, "old").unwrap();
        let mut transaction = Transaction::default();
        transaction.stage(&one, b"new").unwrap();
        transaction.stage(&two, b"new").unwrap();
        transaction.stage(&three, b"new").unwrap();
        // the third target turns into a directory after it was staged
        std::fs::create_dir(&three).unwrap();
        assert!(matches!(transaction.commit(), Err(WriteError::NotRegular { kind: "a directory", .. })));
        assert_eq!(std::fs::read(&one).unwrap(), b"old");
        assert!(!two.exists());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "no temporary or old file left: {names:?}");
    }

    #[test]
    fn an_output_is_never_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.xml");
        std::fs::write(&config, "<clickhouse/>").unwrap();
        let linked = dir.path().join("linked.xml");
        std::fs::hard_link(&config, &linked).unwrap();
        let inputs = [("the main config", config.as_path())];
        for output in [&config, &linked] {
            let err = ensure_not_input(output, &inputs).unwrap_err();
            assert!(err.is_usage() && err.to_string().contains("the main config"), "{err}");
        }
        assert!(ensure_not_input(&dir.path().join("report.json"), &inputs).is_ok());
    }
}
