//! What the loader is told: the default include file and the environment `from_env` reads,
//! `--root` checkouts, the `--base` the tree is mounted over.

use super::*;

/// The include file used when the config has no `<include_from>` (ClickHouse: /etc/metrika.xml
/// when it exists, on the host the server runs on).
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultInclude {
    /// /etc/metrika.xml, but only for an installed config (under /etc/clickhouse-server): a
    /// checked-out tree must not depend on the machine that lints it.
    Installed,
    /// This file, when it exists.
    File(PathBuf),
    /// No default include file.
    None,
}

/// ClickHouse's default include file, and where a config must be for chaudit to use it.
const HOST_INCLUDE_FILE: &str = "/etc/metrika.xml";
pub(super) const INSTALLED_CONFIG_DIR: &str = "/etc/clickhouse-server";

impl DefaultInclude {
    /// `none`, or a file.
    pub fn parse(value: &str) -> DefaultInclude {
        if value == "none" { DefaultInclude::None } else { DefaultInclude::File(value.into()) }
    }

    pub(super) fn path_for(&self, fs: &dyn ConfigFs, main: &Path, roots: &Roots) -> Option<PathBuf> {
        let path = match self {
            // a `--root` holding /etc/metrika.xml: the checkout's, whatever this machine has
            DefaultInclude::Installed if roots.map(Path::new(HOST_INCLUDE_FILE)).is_some() => {
                roots.map(Path::new(HOST_INCLUDE_FILE))?.0
            }
            DefaultInclude::Installed => {
                let main = fs.canonicalize(main).unwrap_or_else(|_| main.to_path_buf());
                main.starts_with(INSTALLED_CONFIG_DIR).then(|| PathBuf::from(HOST_INCLUDE_FILE))?
            }
            DefaultInclude::File(path) => path.clone(),
            DefaultInclude::None => return None,
        };
        fs.exists(&path).then_some(path)
    }
}

/// Settings of the loader that differ between a server host and a test.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Used when the config has no `<include_from>`.
    pub default_include_from: DefaultInclude,
    /// The environment `from_env` reads (chaudit's own by default).
    pub env: HashMap<String, String>,
    /// Where `env` comes from when it is not chaudit's own (`--env-file .env`): findings about
    /// a variable say which environment they judged.
    pub env_origin: Option<String>,
    /// `--root SERVER_DIR=DIR`: the absolute paths the config names (include_from, the users
    /// config, /etc/metrika.xml) are read from a checkout.
    pub roots: Roots,
    /// `--base DIR|image`: the tree's files are mounted one by one over the official image's
    /// stock /etc/clickhouse-server (see [`super::base`]).
    pub base: Option<Base>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_include_from: DefaultInclude::Installed,
            env: std::env::vars().collect(),
            env_origin: None,
            roots: Default::default(),
            base: None,
        }
    }
}

impl LoadOptions {
    /// Options for a test fixture: no /etc/metrika.xml, and exactly the environment of its
    /// `env` file (KEY=VALUE lines), if any.
    pub fn for_fixture(dir: &Path) -> LoadOptions {
        let env = std::fs::read_to_string(dir.join("env"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        LoadOptions {
            default_include_from: DefaultInclude::File(dir.join("metrika.xml")),
            env,
            env_origin: None,
            roots: Default::default(),
            base: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_include_file_is_only_for_an_installed_config() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("config.xml");
        assert_eq!(DefaultInclude::Installed.path_for(&RealFs, &main, &Roots::default()), None);
        assert_eq!(
            DefaultInclude::None.path_for(&RealFs, Path::new("/etc/clickhouse-server/config.xml"), &Roots::default()),
            None
        );
        let named = dir.path().join("metrika.xml");
        assert_eq!(
            DefaultInclude::parse(named.to_str().unwrap()).path_for(&RealFs, &main, &Roots::default()),
            None,
            "a missing file is no include"
        );
        std::fs::write(&named, "<clickhouse/>").unwrap();
        assert_eq!(
            DefaultInclude::parse(named.to_str().unwrap()).path_for(&RealFs, &main, &Roots::default()),
            Some(named)
        );
        assert_eq!(DefaultInclude::parse("none"), DefaultInclude::None);
    }
}
