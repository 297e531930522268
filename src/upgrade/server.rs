//! The facts the review reads, read once as their catalog types: a fact of another shape
//! is a note of the review, not a silent skip.

use serde::Deserialize;

use crate::facts::config::RootElement;
use crate::facts::config_users::WrittenSetting;
use crate::facts::rows::{MergeTreeSetting, SessionSetting, Table};
use crate::facts::typed::{self, Location, Settings};
use crate::facts::{Facts, Source};

/// This server's facts as the review reads them; each is empty when it was not collected.
#[derive(Default)]
pub(super) struct ServerFacts<'a> {
    /// `config.profile_settings`
    pub(super) profile_settings: Vec<WrittenSetting>,
    /// `config.merge_tree` and `config.merge_tree_at`
    pub(super) merge_tree: Settings<String>,
    pub(super) merge_tree_at: Settings<Location>,
    /// `config.root_elements`: `None` without a config
    pub(super) root_elements: Option<Vec<RootElement>>,
    /// `live.endpoint`: the server as user@url
    pub(super) endpoint: String,
    /// `live.settings` (system.settings) and `live.merge_tree_settings`
    pub(super) settings: Settings<SessionSetting<'a>>,
    pub(super) merge_tree_settings: Settings<MergeTreeSetting<'a>>,
    /// `live.tables`
    pub(super) tables: Vec<Table>,
    /// `log.window_seconds`: how far back query_log was read
    pub(super) window_seconds: u64,
}

impl<'a> ServerFacts<'a> {
    /// The facts of `facts`; one that is not of its catalog shape is left out, with a note.
    pub(super) fn read(facts: &'a Facts, notes: &mut Vec<String>) -> ServerFacts<'a> {
        let mut read = Reader { facts, notes };
        ServerFacts {
            profile_settings: read.config_fact("profile_settings"),
            merge_tree: read.config_fact("merge_tree"),
            merge_tree_at: read.config_fact("merge_tree_at"),
            root_elements: read.has_config_fact("root_elements").then(|| read.config_fact("root_elements")),
            endpoint: read.fact("live", "endpoint"),
            settings: read.fact("live", "settings"),
            merge_tree_settings: read.fact("live", "merge_tree_settings"),
            tables: read.fact("live", "tables"),
            window_seconds: read.fact("log", "window_seconds"),
        }
    }
}

struct Reader<'a, 'n> {
    facts: &'a Facts,
    notes: &'n mut Vec<String>,
}

impl<'a> Reader<'a, '_> {
    /// Whether the config's facts hold `fact` (there was a config).
    fn has_config_fact(&self, fact: &str) -> bool {
        self.facts.typed.get(&Source::Config).is_some_and(|config| config.get(fact).is_some())
    }

    /// A fact of the config, of the type it is built as.
    fn config_fact<T: Clone + Default + 'static>(&mut self, fact: &str) -> T {
        let Some(config) = self.facts.typed.get(&Source::Config) else { return T::default() };
        match (config.get(fact), config.get_as::<T>(fact)) {
            (None, _) => T::default(),
            (Some(_), Some(value)) => value.clone(),
            (Some(_), None) => {
                self.notes
                    .push(format!("left out of the review: config.{fact} is not a {}", std::any::type_name::<T>()));
                T::default()
            }
        }
    }

    fn fact<T: Deserialize<'a> + Default>(&mut self, source: &str, fact: &str) -> T {
        let Some(document) = self.facts.document.get(source) else { return T::default() };
        typed::read::<T>(document, source, fact).unwrap_or_else(|why| {
            self.notes.push(format!("left out of the review: {why}"));
            T::default()
        })
    }
}
