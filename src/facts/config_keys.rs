//! The names ClickHouse's server code can read from its config (data/config-keys.txt, extracted
//! by scripts/extract-config-keys.py from the string literals of the server binaries of every
//! engine version the catalogs cover). A root element named nowhere in it is read by no code.

/// The file: a comment line, then one name per line (with the versions that read it), in
/// byte order.
const TEXT: &str = include_str!("../../data/config-keys.txt");

/// Whether some version's server code reads an element of this name: a binary search over
/// the file's lines as they are (listing 81,000 names first cost more than the searches).
pub fn is_read(name: &str) -> bool {
    let text = names();
    // `low` and `high` are always where a line starts (or the end)
    let (mut low, mut high) = (0, text.len());
    while low < high {
        let middle = (low + high) / 2;
        let start = text[..middle].rfind('\n').map_or(0, |i| i + 1).max(low);
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        match key(&text[start..end]).cmp(name) {
            std::cmp::Ordering::Equal => return true,
            std::cmp::Ordering::Less => low = end + 1,
            std::cmp::Ordering::Greater => high = start,
        }
    }
    false
}

/// The lines of names, after the comment.
fn names() -> &'static str {
    TEXT.split_once('\n').map_or("", |(_, rest)| rest)
}

/// A line's name (before the versions).
fn key(line: &str) -> &str {
    line.split(' ').next().unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_sorted_for_the_search() {
        let listed: Vec<&str> = names().lines().map(key).collect();
        assert!(TEXT.starts_with('#') && !names().starts_with('#'), "one comment line, first");
        assert!(listed.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(listed.iter().all(|name| is_read(name)), "every name is found");
    }

    #[test]
    fn keys_the_server_reads_outside_server_settings_are_known_and_typos_are_not() {
        for name in ["timezone", "remote_url_allow_hosts", "listen_host", "openSSL", "max_thread_pool_size"] {
            assert!(is_read(name), "{name}");
        }
        for name in ["max_thred_pool_size", "custom_setting_2_0", "", "A0", "A0fx", "~~~"] {
            assert!(!is_read(name), "{name}");
        }
    }
}
