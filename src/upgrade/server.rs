//! The facts the review reads, read once as their catalog types: a fact of another shape
//! is a note of the review, not a silent skip.

use crate::facts::config::RootElement;
use crate::facts::config_users::WrittenSetting;
use crate::facts::document::Fact;
use crate::facts::keys::{config, live, log};
use crate::facts::rows::{MergeTreeSetting, SessionSetting, Table};
use crate::facts::typed::{FactKey, FactType, Location, Settings};
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
            profile_settings: read.config_fact(config::PROFILE_SETTINGS),
            merge_tree: read.config_fact(config::MERGE_TREE),
            merge_tree_at: read.config_fact(config::MERGE_TREE_AT),
            root_elements: read.has_config_fact(config::ROOT_ELEMENTS).then(|| read.config_fact(config::ROOT_ELEMENTS)),
            endpoint: read.fact(live::ENDPOINT),
            settings: read.fact(live::SETTINGS),
            merge_tree_settings: read.fact(live::MERGE_TREE_SETTINGS),
            tables: read.fact(live::TABLES),
            window_seconds: read.fact(log::WINDOW_SECONDS).0,
        }
    }
}

struct Reader<'a, 'n> {
    facts: &'a Facts,
    notes: &'n mut Vec<String>,
}

impl<'a> Reader<'a, '_> {
    /// Whether the config's facts hold `fact` (there was a config).
    fn has_config_fact<T: Fact>(&self, fact: FactKey<T>) -> bool {
        self.facts.typed.get(&Source::Config).is_some_and(|config| fact.is_in(config))
    }

    /// A fact of the config, of the type it is built as.
    fn config_fact<T: Fact + Clone + Default>(&mut self, fact: FactKey<T>) -> T {
        let Some(config) = self.facts.typed.get(&Source::Config) else { return T::default() };
        match (fact.is_in(config), fact.get(config)) {
            (false, _) => T::default(),
            (true, Some(value)) => value.clone(),
            (true, None) => {
                self.notes.push(format!(
                    "left out of the review: {} is not a {}",
                    fact.path(),
                    std::any::type_name::<T>()
                ));
                T::default()
            }
        }
    }

    fn fact<T: FactType>(&mut self, fact: FactKey<T>) -> T::Read<'a> {
        let Some(document) = self.facts.collected(fact.source()) else { return Default::default() };
        fact.read(document).unwrap_or_else(|why| {
            self.notes.push(format!("left out of the review: {why}"));
            Default::default()
        })
    }
}
