//! Any bytes as a rule file: the pack loader returns rules or diagnostics, never panics.
//! Run: `cargo fuzz run rule_file` (in fuzz/).
#![no_main]

use chaudit::rules::RulePack;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("chaudit-fuzz-rules-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rule.yaml"), data).unwrap();
    let _ = RulePack::load(false, &[dir]);
});
