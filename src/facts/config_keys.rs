//! The names ClickHouse's server code can read from its config (data/config-keys.txt, extracted
//! by scripts/extract-config-keys.py from the string literals of the server binaries of every
//! engine version the catalogs cover). A root element named nowhere in it is read by no code.

use std::sync::LazyLock;

/// The names in the file's (byte) order: sorted, so found by binary search, and a list is
/// read in a fraction of the time 81,000 names take to hash into a set.
static NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    include_str!("../../data/config-keys.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(' ').next())
        .collect()
});

/// Whether some version's server code reads an element of this name.
pub fn is_read(name: &str) -> bool {
    NAMES.binary_search(&name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_sorted_for_the_search() {
        assert!(NAMES.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn keys_the_server_reads_outside_server_settings_are_known_and_typos_are_not() {
        for name in ["timezone", "remote_url_allow_hosts", "listen_host", "openSSL", "max_thread_pool_size"] {
            assert!(is_read(name), "{name}");
        }
        for name in ["max_thred_pool_size", "custom_setting_2_0"] {
            assert!(!is_read(name), "{name}");
        }
    }
}
