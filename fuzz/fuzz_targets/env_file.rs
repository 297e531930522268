//! The `env_file` input of fuzz/harness.rs. Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run env_file` (in fuzz/).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::env_file(data));
