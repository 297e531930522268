//! The names ClickHouse's server code can read from its config (data/config-keys.txt, extracted
//! by scripts/extract-config-keys.py from the string literals of the server binaries of every
//! engine version the catalogs cover). A root element named nowhere in it is read by no code.

/// The file: a comment line, then one name per line (with the versions that read it), in
/// byte order.
const TEXT: &str = include_str!("../../data/config-keys.txt");

/// Where each line of [`names`] starts (little-endian u32s, from the file at build time).
static LINE_STARTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/config_key_lines.bin"));

/// Whether some version's server code reads an element of this name: a binary search over
/// the file's lines as they are, each probe's line found through the build-time index
/// (listing 81,000 names first cost more than the searches; scanning the text for each
/// probe's line start cost twice the search, 0.7 µs a name against 0.35).
pub fn is_read(name: &str) -> bool {
    let text = names();
    let (starts, _) = LINE_STARTS.as_chunks::<4>();
    starts
        .binary_search_by(|start| compare_key(&text.as_bytes()[u32::from_le_bytes(*start) as usize..], name.as_bytes()))
        .is_ok()
}

/// How the name a line starts with ([`key`]) orders against `name`, read byte by byte up to
/// `name`'s length: the line's key is not measured first (that scan, and a memcmp call, were
/// most of each probe).
fn compare_key(line: &[u8], name: &[u8]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let key_byte = |i: usize| line.get(i).copied().filter(|b| !matches!(b, b' ' | b'\n'));
    for (i, &wanted) in name.iter().enumerate() {
        match key_byte(i) {
            None => return Ordering::Less,
            Some(b) if b != wanted => return b.cmp(&wanted),
            Some(_) => {}
        }
    }
    if key_byte(name.len()).is_some() { Ordering::Greater } else { Ordering::Equal }
}

/// The lines of names, after the comment.
fn names() -> &'static str {
    TEXT.split_once('\n').map_or("", |(_, rest)| rest)
}

/// The name a line starts with (before its versions, or its end): what [`compare_key`] reads.
#[cfg(test)]
fn key(line: &[u8]) -> &[u8] {
    let end = line.iter().position(|b| matches!(b, b' ' | b'\n')).unwrap_or(line.len());
    &line[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_sorted_for_the_search() {
        let listed: Vec<&str> = names().lines().map(|line| line.split(' ').next().unwrap_or(line)).collect();
        assert!(TEXT.starts_with('#') && !names().starts_with('#'), "one comment line, first");
        assert!(listed.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(LINE_STARTS.len() / 4, listed.len(), "the build-time index has every line");
        assert!(listed.iter().all(|name| is_read(name)), "every name is found");
    }

    #[test]
    fn a_line_is_compared_as_its_key() {
        for (line, name) in
            [("abc 24.8\n", "abc"), ("abc\n", "ab"), ("ab\n", "abc"), ("abd 1", "abc"), ("", "a"), ("a", "")]
        {
            assert_eq!(
                compare_key(line.as_bytes(), name.as_bytes()),
                key(line.as_bytes()).cmp(name.as_bytes()),
                "{line:?} {name}"
            );
        }
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
