//! The `dsn` input of fuzz/harness.rs. Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run dsn` (in fuzz/).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::dsn(data));
