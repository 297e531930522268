//! The `chaudit` command: arguments in, library calls, exit code out.

mod cli;

// The loader allocates a node per XML element; mimalloc makes large config trees load
// markedly faster than the system allocator (see the README benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option that libmimalloc-sys names no constant for (its place in the
/// `mi_option_e` enum of mimalloc.h).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> std::process::ExitCode {
    // SAFETY (each call): sets a mimalloc option (an integer in its option table) before the
    // large allocations; mimalloc reads it whenever it asks the OS for memory or gives it back.
    // Large config trees take hundreds of MB: on 4 KiB pages, the page faults cost more than
    // the parse (sys time 0.6 s of 1.0 s on the 2,000-file benchmark). Transparent huge
    // pages (madvise) cut that to 0.06 s.
    unsafe { libmimalloc_sys::mi_option_set(libmimalloc_sys::mi_option_large_os_pages, 1) };
    // What a run frees goes back after 10 ms, not a second (by then the run is over): the
    // parsed fragments, dropped once merged, do not stay in the peak. (Committing arena memory
    // only as it is used, not its first pages whole, would take the 2,000-fragment tree from
    // 66 MB to 53 MB, for a tenth more CPU in page faults.)
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 10) };
    cli::run()
}
