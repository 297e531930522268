//! The `chaudit` command: arguments in, library calls, exit code out.

mod cli;

// The loader allocates a node per XML element; mimalloc makes large config trees load
// markedly faster than the system allocator (see the README benchmark).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::run()
}
