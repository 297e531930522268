//! The `suppressions` input of fuzz/harness.rs. Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run suppressions` (in fuzz/).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::suppressions(data));
