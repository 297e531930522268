//! The `chaudit` command: arguments in, library calls, exit code out.

mod cli;

// The loader allocates a node per XML element; mimalloc makes large config trees load
// markedly faster than the system allocator (see the README benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's options that libmimalloc-sys names no constant for (their place in the
/// `mi_option_e` enum of mimalloc.h).
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Runs before the standard library's start-up, whose first allocation reserves the arena
/// that `ARENA_EAGER_COMMIT` is read for: set from `main`, it would come too late.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static SET_ALLOCATOR_OPTIONS: extern "C" fn() = set_allocator_options;

extern "C" fn set_allocator_options() {
    // SAFETY (each call): sets a mimalloc option (an integer in its option table) before the
    // large allocations; mimalloc reads it whenever it asks the OS for memory.
    // Large config trees take hundreds of MB: on 4 KiB pages, the page faults cost more than
    // the parse (sys time 0.6 s of 1.0 s on the 2,000-file benchmark). Transparent huge
    // pages (madvise) cut that to 0.06 s.
    unsafe { libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1) };
    // Memory is committed as it is used, not its arena's first pages whole (7 MB of a small
    // run), and what a run frees is given back after 10 ms, not a second (by then the run is
    // over): the 2,000-fragment tree peaks at 70 MB instead of 98 MB, with fewer page faults.
    unsafe { libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0) };
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 10) };
}

fn main() -> std::process::ExitCode {
    #[cfg(not(target_os = "linux"))]
    set_allocator_options();
    cli::run()
}
