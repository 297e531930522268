//! An advisory lock (flock) on a config tree, held by its main config file: two runs that
//! write the tree's fix files one after the other, never interleaved.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use thiserror::Error;

/// How long a run waits for another one to finish with the tree.
pub const WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Error)]
pub enum LockError {
    #[error(
        "another `chaudit fix` is writing the tree of {} (it holds its lock): waited {} s; run again when it is done",
        path.display(), waited.as_secs()
    )]
    Busy { path: PathBuf, waited: Duration },
    #[error("cannot lock {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// The lock, released when dropped (or when the process ends, however it ends).
#[derive(Debug)]
pub struct TreeLock {
    _file: File,
}

impl TreeLock {
    /// Locks the tree of `main` (exclusive, or shared for a run that only reads it), waiting
    /// up to `wait` for another run to release it.
    pub fn acquire(main: &Path, exclusive: bool, wait: Duration) -> Result<TreeLock, LockError> {
        let io = |source| LockError::Io { path: main.to_path_buf(), source };
        // opened without blocking (a FIFO is refused by the config loader, never waited on here)
        let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(main).map_err(io)?;
        if let Some(kind) = super::kind(&file.metadata().map_err(io)?) {
            return Err(io(super::not_regular(kind)));
        }
        let operation = if exclusive { libc::LOCK_EX } else { libc::LOCK_SH };
        let start = Instant::now();
        loop {
            // SAFETY: flock on a descriptor this function owns
            if unsafe { libc::flock(file.as_raw_fd(), operation | libc::LOCK_NB) } == 0 {
                return Ok(TreeLock { _file: file });
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::WouldBlock {
                return Err(io(e));
            }
            if start.elapsed() >= wait {
                return Err(LockError::Busy { path: main.to_path_buf(), waited: wait });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
