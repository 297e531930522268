//! Any bytes as a config file, XML or YAML, alone and as a fragment: the loader returns
//! a tree or an error, never panics. Run: `cargo fuzz run config_file` (in fuzz/).
#![no_main]

use chaudit::config::{self, LoadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else { return };
    let dir = tempfile_dir();
    let name = if selector % 2 == 0 { "config.xml" } else { "config.yaml" };
    let main = dir.join(name);
    // as the main file, and as a fragment merged into a small main file
    let (main_text, fragment): (&[u8], Option<&[u8]>) =
        if selector % 4 < 2 { (body, None) } else { (b"<clickhouse><a><b>1</b></a></clickhouse>", Some(body)) };
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("config.d")).unwrap();
    std::fs::write(if fragment.is_some() { dir.join("config.xml") } else { main.clone() }, main_text).unwrap();
    if let Some(fragment) = fragment {
        let ext = if selector % 8 < 4 { "xml" } else { "yaml" };
        std::fs::write(dir.join(format!("config.d/f.{ext}")), fragment).unwrap();
    }
    let options = LoadOptions { default_include_from: chaudit::config::DefaultInclude::None, env: Default::default() };
    let path = if fragment.is_some() { dir.join("config.xml") } else { main };
    if let Ok(loaded) = config::load(&path, &options) {
        let _ = config::render::render(&loaded.server, &loaded.sources, &config::render::RenderOptions { provenance: true });
    }
});

fn tempfile_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("chaudit-fuzz-{}", std::process::id()))
}
