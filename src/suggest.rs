//! "Did you mean ...?": the known name most similar to a misspelled one.

/// Words longer than any ClickHouse name are no typo of one (and comparing a 4 MB element
/// name with every setting would take minutes).
const LONGEST_NAME: usize = 256;

/// The name of `names` most similar to `word` (Jaro-Winkler above `min_score`), if any.
pub fn closest_above<'a>(word: &str, names: impl Iterator<Item = &'a str>, min_score: f64) -> Option<&'a str> {
    if word.len() > LONGEST_NAME {
        return None;
    }
    names
        .map(|n| (strsim::jaro_winkler(word, n), n))
        .filter(|(score, _)| *score > min_score)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

/// The name of `names` close enough to `word` to be a likely typo of it.
pub fn closest<'a>(word: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    closest_above(word, names, 0.8)
}

/// The name of `names` that `word` is a likely misspelling of: at most one edit per six
/// characters of `word` (at least one, at most three), the fewest edits winning. A suggestion
/// further off names another setting, and renaming to it would keep a value meant for
/// something else.
pub fn typo_of<'a>(word: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if word.len() > LONGEST_NAME {
        return None;
    }
    let allowed = (word.chars().count() / 6).clamp(1, 3);
    names
        .filter(|n| n.len().abs_diff(word.len()) <= allowed)
        .map(|n| (strsim::levenshtein(word, n), n))
        .filter(|(edits, _)| (1..=allowed).contains(edits))
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_is_a_few_edits_relative_to_the_length() {
        let names = ["max_thread_pool_size", "custom_settings_prefixes", "path"];
        assert_eq!(typo_of("max_thred_pool_size", names.into_iter()), Some("max_thread_pool_size"));
        assert_eq!(typo_of("custom_setting_2_0", names.into_iter()), None);
        assert_eq!(typo_of("pth", names.into_iter()), Some("path"));
        assert_eq!(typo_of("xyz", names.into_iter()), None);
    }

    #[test]
    fn typos_find_their_name_and_nonsense_finds_none() {
        let names = ["max_threads", "max_memory_usage"];
        assert_eq!(closest("max_threadz", names.into_iter()), Some("max_threads"));
        assert_eq!(closest("zzz", names.into_iter()), None);
        assert_eq!(closest(&"x".repeat(1 << 20), names.into_iter()), None);
    }
}
