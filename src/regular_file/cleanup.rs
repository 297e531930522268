//! Temporary files removed when the process is interrupted (SIGINT, SIGTERM, SIGHUP): their
//! paths are kept in a fixed table the signal handler reads without allocating or locking,
//! and unlinks, before the signal ends the process as it would have.

use std::ffi::{CString, c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::Once;
use std::sync::atomic::{AtomicPtr, Ordering};

/// At most this many temporary files at once (a run writes a few).
const SLOTS: usize = 64;

static PATHS: [AtomicPtr<c_char>; SLOTS] = [const { AtomicPtr::new(null_mut()) }; SLOTS];
static INSTALL: Once = Once::new();

const SIGNALS: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A path removed if a signal ends the process while it is registered.
pub struct Registered(Option<usize>);

/// Registers `path` until the returned guard is dropped.
pub fn register(path: &Path) -> Registered {
    INSTALL.call_once(install);
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return Registered(None) };
    let ptr = c.into_raw();
    for (i, slot) in PATHS.iter().enumerate() {
        if slot.compare_exchange(null_mut(), ptr, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return Registered(Some(i));
        }
    }
    // SAFETY: `ptr` came from `into_raw` above and was published nowhere
    drop(unsafe { CString::from_raw(ptr) });
    Registered(None)
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            // left allocated: a handler running on another thread may be reading it (a few
            // bytes per file written, once per run)
            PATHS[i].store(null_mut(), Ordering::SeqCst);
        }
    }
}

/// Only async-signal-safe calls: unlink, sigaction, raise.
extern "C" fn on_signal(signal: c_int) {
    for slot in &PATHS {
        let path = slot.load(Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: a registered path is a NUL-terminated string that is never freed
            unsafe { libc::unlink(path) };
        }
    }
    // SAFETY: restores the default action and re-raises: the process ends by the signal
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &action, null_mut());
        libc::raise(signal);
    }
}

fn install() {
    for signal in SIGNALS {
        // SAFETY: plain sigaction calls with zeroed, then filled, structures
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, null_mut(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN {
                // an ignored signal (nohup) stays ignored
                continue;
            }
            if old.sa_sigaction != libc::SIG_DFL {
                // someone else's handler: left as it is
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, null_mut());
        }
    }
}

/// Holds the signals above while it lives: renames that belong together are not cut in two.
pub struct Deferred(libc::sigset_t);

impl Deferred {
    pub fn new() -> Deferred {
        // SAFETY: sigset manipulation on local structures
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in SIGNALS {
                libc::sigaddset(&mut set, signal);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Deferred(old)
        }
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `new`; a held signal is delivered now
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, null_mut()) };
    }
}
