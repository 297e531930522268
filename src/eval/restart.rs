//! Whether a fix needs a server restart, from the engine's own word: a profile or user change
//! is reloaded by the running server; a server setting applies without a restart when
//! system.server_settings says `changeable_without_restart = Yes` (the bundled catalog of the
//! audited version, else the newest: 24.8 needs a restart for settings 26.9 reloads). Only
//! for a section the catalog does not describe (a system log, storage) does the rule's own
//! `restart:` stand. Removing an element that no server code reads changes nothing the server
//! does, so it never needs one (the reload that drops it is proven in tests/reload_engine.rs).

use crate::facts::catalog::Catalog;
use crate::rules::ConfigTree;

use super::finding::Fragment;

pub fn needs_restart(fragments: &[Fragment], rule_says: bool, catalog: &Catalog) -> bool {
    if fragments.is_empty() {
        return rule_says;
    }
    fragments.iter().filter(|f| f.tree == ConfigTree::Server).any(|f| match crate::config::fragment::parse(&f.xml) {
        Ok(root) => root
            .children
            .iter()
            .filter(|e| !removes_unread(e))
            .any(|e| catalog.needs_restart(&e.name).unwrap_or(rule_says)),
        Err(_) => rule_says,
    })
}

fn removes_unread(element: &crate::config::fragment::Node) -> bool {
    element.removes() && !crate::facts::config_keys::is_read(&element.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(xml: &str) -> Vec<Fragment> {
        vec![Fragment { tree: ConfigTree::Server, xml: xml.into() }]
    }

    #[test]
    fn the_catalog_decides_for_server_settings_and_profiles_reload() {
        let catalog = crate::facts::catalog::builtin();
        // max_concurrent_queries: changeable_without_restart = Yes on 26.9
        assert!(!needs_restart(
            &server("<clickhouse><max_concurrent_queries>100</max_concurrent_queries></clickhouse>"),
            true,
            catalog
        ));
        // listen_host is no setting of the catalog: the rule's word stands
        assert!(needs_restart(&server("<clickhouse><listen_host>::</listen_host></clickhouse>"), true, catalog));
        let users = vec![Fragment { tree: ConfigTree::Users, xml: "<clickhouse><profiles/></clickhouse>".into() }];
        assert!(!needs_restart(&users, true, catalog));
    }

    #[test]
    fn removing_what_no_code_reads_needs_no_restart() {
        let catalog = crate::facts::catalog::builtin();
        assert!(!needs_restart(&server("<clickhouse><app_threshold remove=\"1\"/></clickhouse>"), true, catalog));
        // the suggested rename still asks the catalog, and a removal of a key the server reads
        // keeps the rule's word
        let rename = "<clickhouse><max_thred_pool_size remove=\"1\"/><max_thread_pool_size>9</max_thread_pool_size></clickhouse>";
        assert!(needs_restart(&server(rename), false, catalog));
        assert!(needs_restart(&server("<clickhouse><listen_host remove=\"1\"/></clickhouse>"), true, catalog));
    }

    #[test]
    fn the_audited_versions_catalog_decides() {
        let fix =
            server("<clickhouse><concurrent_threads_soft_limit_num>8</concurrent_threads_soft_limit_num></clickhouse>");
        let of = |v: &str| crate::facts::catalog::of(Some(v.parse().unwrap()));
        // changeable_without_restart: No on 24.8, Yes on 26.9 (system.server_settings of each)
        assert!(needs_restart(&fix, false, of("24.8")));
        assert!(!needs_restart(&fix, true, of("26.9")));
    }
}
