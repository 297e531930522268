//! What each fuzz target does with its input, shared by the targets (fuzz/fuzz_targets/) and
//! the corpus replay test (tests/fuzz_corpus.rs): every parser takes any bytes and returns
//! a value or an error, never a panic, a hang or unbounded memory.
#![allow(dead_code)] // each fuzz target uses one of these

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chaudit::config::{self, LoadOptions, MemoryFs};
use chaudit::eval::Selection;
use chaudit::rules::RulePack;

/// A scratch directory of this process and target, emptied (tmpfs when there is one).
fn scratch(target: &str) -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let dir = base.join(format!("chaudit-fuzz-{target}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every rule of `pack` on `facts`.
fn audit(pack: &RulePack, facts: &chaudit::facts::Facts) {
    if let Ok(selection) = Selection::new(pack, &[], &[], &[]) {
        let _ = chaudit::eval::evaluate(pack, facts, &selection);
    }
}

fn builtin_pack() -> &'static RulePack {
    static PACK: OnceLock<RulePack> = OnceLock::new();
    PACK.get_or_init(|| RulePack::load(true, &[]).expect("the built-in pack loads"))
}

/// The directory of the config inputs (in memory).
const TREE: &str = "/config";

/// What a config tree or file loads to, rendered.
fn load_and_render(fs: &MemoryFs, main: &Path, options: &LoadOptions) -> Option<config::LoadedConfig> {
    let loaded = config::load_with(fs, main, options).ok()?;
    let _ = config::render::render(
        &loaded.server,
        &loaded.sources,
        &config::render::RenderOptions { provenance: true, masking: None },
    );
    Some(loaded)
}

/// A whole config tree as one input: files separated by NUL bytes. The first is the main
/// config (its first byte: even XML, odd YAML); each other's first byte says where it goes:
/// config.d/ or conf.d/ (XML or YAML), users.xml, users.d/, or the include_from file.
pub fn config_tree(data: &[u8]) {
    let dir = Path::new(TREE);
    let mut files = data.split(|b| *b == 0);
    let Some(main) = files.next() else { return };
    let Some((&selector, main)) = main.split_first() else { return };
    let mut fs = MemoryFs::default();
    let main_path = dir.join(if selector % 2 == 0 { "config.xml" } else { "config.yaml" });
    fs.insert(&main_path, main);
    for (i, file) in files.enumerate() {
        let Some((&role, body)) = file.split_first() else { continue };
        let path = match role % 7 {
            0 => format!("config.d/{i}.xml"),
            1 => format!("config.d/{i}.yaml"),
            2 => format!("conf.d/{i}.xml"),
            3 => "users.xml".to_string(),
            4 => format!("users.d/{i}.xml"),
            5 => format!("users.d/{i}.yaml"),
            _ => "metrika.xml".to_string(),
        };
        fs.insert(dir.join(path), body);
    }
    let env = [("CH_PORT".to_string(), "9000".to_string()), ("EMPTY".to_string(), String::new())];
    let include = config::DefaultInclude::File(dir.join("metrika.xml"));
    let options = LoadOptions {
        default_include_from: include,
        env: env.into_iter().collect(),
        env_origin: None,
        roots: Default::default(),
        base: None,
    };
    if let Some(loaded) = load_and_render(&fs, &main_path, &options) {
        let facts = chaudit::facts::config::facts(&loaded, "fuzz".into(), None);
        audit(builtin_pack(), &facts);
    }
}

/// One config file, XML or YAML, alone and as a fragment (the first byte says which).
pub fn config_file(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let dir = Path::new(TREE);
    let mut fs = MemoryFs::default();
    let main = if selector % 4 < 2 {
        let main = dir.join(if selector % 2 == 0 { "config.xml" } else { "config.yaml" });
        fs.insert(&main, body);
        main
    } else {
        let ext = if selector % 8 < 4 { "xml" } else { "yaml" };
        fs.insert(dir.join(format!("config.d/f.{ext}")), body);
        fs.insert(dir.join("config.xml"), "<clickhouse><a><b>1</b></a></clickhouse>");
        dir.join("config.xml")
    };
    let options = LoadOptions {
        default_include_from: config::DefaultInclude::None,
        env: Default::default(),
        env_origin: None,
        roots: Default::default(),
        base: None,
    };
    load_and_render(&fs, &main, &options);
}

/// A rule file: rules or diagnostics; a rule that loads is evaluated on empty facts.
pub fn rule_file(data: &[u8]) {
    let dir = PathBuf::from("/rules");
    let mut fs = MemoryFs::default();
    fs.insert(dir.join("rule.yaml"), data);
    if let Ok(pack) = RulePack::load_with(&fs, false, &[dir]) {
        audit(&pack, &chaudit::facts::Facts::empty(String::new()));
    }
}

/// A snapshot (`chaudit collect` output), read and audited as `chaudit check` does.
pub fn snapshot(data: &[u8]) {
    let dir = scratch("snapshot");
    let path = dir.join("snapshot.json");
    std::fs::write(&path, data).unwrap();
    let Ok((facts, live)) = chaudit::audit::read_snapshot(&path) else { return };
    let pack = builtin_pack();
    match live {
        Some(chaudit::audit::Live::Cluster { name, collected }) => {
            let Ok(selection) = Selection::new(pack, &[], &[], &[]) else { return };
            let _ = chaudit::cluster::audit(pack, &facts, &|_| None, name.as_deref(), &collected, &selection);
        }
        _ => audit(pack, &facts),
    }
}

/// A suppressions file (.chaudit.yaml).
pub fn suppressions(data: &[u8]) {
    let dir = scratch("suppress");
    let path = dir.join(".chaudit.yaml");
    std::fs::write(&path, data).unwrap();
    let _ = chaudit::suppress::project::load(&path, &|_| Vec::new());
}

/// A baseline file.
pub fn baseline(data: &[u8]) {
    let dir = scratch("baseline");
    let path = dir.join("baseline.json");
    std::fs::write(&path, data).unwrap();
    if let Ok(baseline) = chaudit::baseline::Baseline::read(&path) {
        baseline.apply(&mut []);
    }
}

/// A DSN: an endpoint or an error, and no error shows what stood between `://` and the
/// last `@` (the user and password).
pub fn dsn(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let options = chaudit::collect::dsn::ConnectOptions { dsn: Some(text.to_string()), ..Default::default() };
    match chaudit::collect::dsn::resolve(&options) {
        Ok(resolved) => {
            let endpoint = resolved.endpoint;
            // how an endpoint is named in reports (Display, url, Debug) does not depend on its password
            let shown = |e: &chaudit::collect::dsn::Endpoint| format!("{e} {} {e:?}", e.url());
            let mut other = endpoint.clone();
            other.password = chaudit::collect::dsn::Secret::new("another");
            assert_eq!(shown(&endpoint), shown(&other), "{text:?}: the password shows");
        }
        Err(message) => {
            let start = text.find("://").map_or(0, |s| s + 3);
            if let Some(at) = text.rfind('@').filter(|at| *at >= start) {
                let credentials = &text[start..at];
                // a leak: in the message, and not there once the credentials are replaced
                // (the message's own words, "http://user@host", may contain them)
                let replaced = format!("{}X{}", &text[..start], &text[at..]);
                let options = chaudit::collect::dsn::ConnectOptions { dsn: Some(replaced), ..Default::default() };
                let without = chaudit::collect::dsn::resolve(&options).err().unwrap_or_default();
                let elsewhere = text[..start].contains(credentials) || text[at..].contains(credentials);
                // credentials that read like the mask itself (`/***` shows in `//***@`) reveal nothing
                let like_the_mask = "://***@".contains(credentials);
                assert!(
                    credentials.len() < 3
                        || !message.contains(credentials)
                        || elsewhere
                        || like_the_mask
                        || without.contains(credentials),
                    "{text:?}: the credentials show: {message}"
                );
            }
        }
    }
}

/// An env file (`--env-file`): variables or an error at a line of the file, never a panic;
/// every name is one a shell could export.
pub fn env_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match chaudit::config::env_file::parse(text, "fuzz.env") {
        Ok(vars) => {
            for (name, _) in &vars {
                assert!(!name.is_empty() && !name.contains('='), "{text:?}: variable {name:?}");
            }
        }
        Err(e) => assert!(e.line >= 1 && e.line <= text.lines().count().max(1), "{text:?}: line {}", e.line),
    }
}
