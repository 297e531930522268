//! "Did you mean ...?": the known name most similar to a misspelled one.

use std::sync::Mutex;

use rustc_hash::FxHashMap;

/// Words longer than any ClickHouse name are no typo of one (and comparing a 4 MB element
/// name with every setting would take minutes).
const LONGEST_NAME: usize = 256;

/// The name of `names` most similar to `word` (Jaro-Winkler above `min_score`), if any; on
/// a tie, the last. Compares `word` with every name: for short lists (a rule's keys, a
/// disk type's elements); a catalog's names go through an [`Index`].
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

/// A long list of known names (a catalog's 1,500 settings) indexed by trigram: a word is
/// compared only with the names sharing at least a third of its trigrams (a typo keeps most
/// of them), so 100,000 unknown names cost milliseconds, not minutes of Jaro-Winkler against
/// every name. Each distinct word is looked up once; later asks are answered from memory.
#[derive(Debug)]
pub struct Index {
    names: Vec<String>,
    /// each name's trigrams, sorted
    grams: Vec<Vec<Trigram>>,
    postings: FxHashMap<Trigram, Vec<u32>>,
    min_score: f64,
    /// answer only likely misspellings (see [`typo_of`]), not merely similar names
    typos_only: bool,
    answers: Mutex<FxHashMap<String, Option<u32>>>,
}

impl Index {
    pub fn new<'a>(names: impl Iterator<Item = &'a str>, min_score: f64) -> Index {
        let names: Vec<String> = names.map(str::to_string).collect();
        let grams: Vec<Vec<Trigram>> = names.iter().map(|name| trigrams(name)).collect();
        let mut postings: FxHashMap<Trigram, Vec<u32>> = FxHashMap::default();
        for (id, name_grams) in grams.iter().enumerate() {
            for gram in name_grams {
                postings.entry(*gram).or_default().push(id as u32);
            }
        }
        Index { names, grams, postings, min_score, typos_only: false, answers: Mutex::default() }
    }

    /// An index answering only likely misspellings of its names (see [`typo_of`]).
    pub fn of_typos<'a>(names: impl Iterator<Item = &'a str>) -> Index {
        Index { typos_only: true, ..Index::new(names, 0.0) }
    }

    /// The known name most similar to `word` (Jaro-Winkler above the index's score), if any.
    pub fn closest(&self, word: &str) -> Option<&str> {
        if word.len() > LONGEST_NAME {
            return None;
        }
        let remembered = self.answers.lock().ok().and_then(|a| a.get(word).copied());
        let id = match remembered {
            Some(id) => id,
            None => {
                let id = self.search(word);
                if let Ok(mut answers) = self.answers.lock() {
                    answers.insert(word.to_string(), id);
                }
                id
            }
        };
        id.map(|i| self.names[i as usize].as_str())
    }

    fn search(&self, word: &str) -> Option<u32> {
        let grams = trigrams(word);
        if self.typos_only {
            // an edit changes at most 3 trigrams: fewer shared than that cannot be a typo; nor
            // can a name longer or shorter by more than the edits allowed (`typo_of` checks both)
            let allowed = typo_edits(word);
            let needed = grams.len().saturating_sub(3 * allowed).max(1);
            let near = |id: u32| self.names[id as usize].len().abs_diff(word.len()) <= allowed;
            let names = self.candidates(&grams, needed, near).into_iter().map(|id| self.names[id as usize].as_str());
            return typo_of(word, names).and_then(|n| self.names.iter().position(|x| x == n)).map(|i| i as u32);
        }
        let needed = grams.len().div_ceil(3);
        self.candidates(&grams, needed, |_| true)
            .into_iter()
            .map(|id| (strsim::jaro_winkler(word, &self.names[id as usize]), id))
            .filter(|(score, _)| *score > self.min_score)
            // the highest score; on a tie the later name, as `closest_above` picks
            .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, id)| id)
    }
}

impl Index {
    /// The names sharing at least `needed` of the word's trigrams (`grams`, sorted) and
    /// passing `near`, by id. Such a name shares one of any `len - needed + 1` of them, so
    /// only the names of that many of the rarest trigrams are counted: the common ones
    /// (`_ma`, `ax_`) are on hundreds of names, and counting them for each of 100,000 words
    /// was most of the cost. The names are gathered in a bit set (in id order, each once,
    /// without sorting) and `near`, the cheaper test, goes before counting.
    fn candidates(&self, grams: &[Trigram], needed: usize, near: impl Fn(u32) -> bool) -> Vec<u32> {
        let mut lists: Vec<&[u32]> =
            grams.iter().map(|g| self.postings.get(g).map_or(&[][..], Vec::as_slice)).collect();
        lists.sort_unstable_by_key(|list| list.len());
        let probes = (grams.len() + 1).saturating_sub(needed).min(lists.len());
        let mut seen = vec![0u64; self.names.len().div_ceil(64)];
        for id in lists[..probes].iter().flat_map(|list| list.iter()) {
            seen[*id as usize / 64] |= 1 << (id % 64);
        }
        let shares_enough = |id: u32| {
            let name = &self.grams[id as usize];
            grams.iter().filter(|g| name.binary_search(g).is_ok()).count() >= needed
        };
        let mut ids = Vec::new();
        for (block, mut bits) in seen.into_iter().enumerate() {
            while bits != 0 {
                let id = (block * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                if near(id) && shares_enough(id) {
                    ids.push(id);
                }
            }
        }
        ids
    }
}

/// Three bytes of a word as one number: sorted and compared as a word, not byte by byte.
type Trigram = u32;

/// The distinct trigrams of a word padded at both ends (`^^ab$`), so short words have some
/// and the first letters, where Jaro-Winkler weighs most, count twice.
fn trigrams(word: &str) -> Vec<Trigram> {
    let padded: Vec<u8> = [b'^', b'^'].into_iter().chain(word.bytes()).chain([b'$']).collect();
    let mut grams: Vec<Trigram> = padded.windows(3).map(|w| u32::from_be_bytes([0, w[0], w[1], w[2]])).collect();
    grams.sort_unstable();
    grams.dedup();
    grams
}

/// The name of `names` that `word` is a likely misspelling of: at most one edit per six
/// characters of `word` (at least one, at most three), the fewest edits winning. A suggestion
/// further off names another setting, and renaming to it would keep a value meant for
/// something else.
pub fn typo_of<'a>(word: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if word.len() > LONGEST_NAME {
        return None;
    }
    let allowed = typo_edits(word);
    names
        .filter(|n| n.len().abs_diff(word.len()) <= allowed)
        .map(|n| (strsim::levenshtein(word, n), n))
        .filter(|(edits, _)| (1..=allowed).contains(edits))
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)))
        .map(|(_, n)| n)
}

/// How many edits a misspelling of `word` may have: one per six characters, one to three.
fn typo_edits(word: &str) -> usize {
    (word.chars().count() / 6).clamp(1, 3)
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

    #[test]
    fn the_index_finds_what_comparing_every_name_finds() {
        let catalog = crate::facts::catalog::builtin();
        let names: Vec<&str> = catalog.session.keys().collect();
        let index = Index::new(names.iter().copied(), 0.85);
        for word in ["max_threadz", "max_memry_usage", "send_timout", "log_queries_min_typ", "use_uncompressed_cach"] {
            assert_eq!(index.closest(word), closest_above(word, names.iter().copied(), 0.85), "{word}");
            assert!(index.closest(word).is_some(), "{word}");
        }
        assert_eq!(index.closest("app_metric_12345_threshold"), None);
        assert_eq!(index.closest("max_threadz"), Some("max_threads"), "answered again from memory");
    }

    #[test]
    fn the_typo_index_finds_what_checking_every_name_finds() {
        let catalog = crate::facts::catalog::builtin();
        let names: Vec<&str> = catalog.server.keys().collect();
        let index = Index::of_typos(names.iter().copied());
        let words = ["max_thred_pool_size", "max_conection", "keep_alive_timout", "mark_cache_sise", "pth", "tcp_prt"];
        let unrelated = (0..200).map(|n| format!("app_metric_{n}_threshold"));
        for word in words.into_iter().map(String::from).chain(unrelated) {
            assert_eq!(index.closest(&word), typo_of(&word, names.iter().copied()), "{word}");
        }
        assert_eq!(index.closest("max_thred_pool_size"), Some("max_thread_pool_size"));
    }
}
