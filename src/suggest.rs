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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_nonsense_finds_none() {
        let names = ["max_threads", "max_memory_usage"];
        assert_eq!(closest("max_threadz", names.into_iter()), Some("max_threads"));
        assert_eq!(closest("zzz", names.into_iter()), None);
        assert_eq!(closest(&"x".repeat(1 << 20), names.into_iter()), None);
    }
}
