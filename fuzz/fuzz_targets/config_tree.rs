//! The `config_tree` input of fuzz/harness.rs. Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run config_tree` (in fuzz/).
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::config_tree(data));
