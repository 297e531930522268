//! A rule's `tests:`: the fixtures it proves itself on, each a firing or a quiet case.

use super::*;

impl Parser<'_> {
    pub(super) fn tests(&mut self, base: &Path) -> Vec<RuleTest> {
        let Some(node) = self.doc.get("tests") else { return Vec::new() };
        let Yaml::Sequence(items, _) = node else {
            self.error(node.origin(), "`tests` is a list of `- fires: DIR` / `- quiet: DIR`", None);
            return Vec::new();
        };
        let mut tests = Vec::new();
        for item in items {
            let Yaml::Mapping(pairs, _) = item else {
                self.error(
                    item.origin(),
                    "a test is `fires: DIR` or `quiet: DIR` (with `at`, `version`, `outcome`)",
                    None,
                );
                continue;
            };
            self.known_keys(pairs, &["fires", "quiet", "at", "version", "outcome"], "tests[].");
            let (fires, dir) = match (item.get("fires"), item.get("quiet")) {
                (Some(d), None) => (true, d),
                (None, Some(d)) => (false, d),
                _ => {
                    self.error(item.origin(), "each test has exactly one of `fires: DIR` or `quiet: DIR`", None);
                    continue;
                }
            };
            let Some(dir) = dir.as_str() else {
                self.error(dir.origin(), "the fixture is a directory name", None);
                continue;
            };
            let expect = match (fires, item.get("outcome")) {
                (true, None) => Expectation::Fires,
                (false, None) => Expectation::Quiet,
                (false, Some(node)) => match node.as_str() {
                    Some("passed") => Expectation::Quiet,
                    Some("not-applicable") => Expectation::Outcome(OutcomeKind::NotApplicable),
                    Some("inconclusive") => Expectation::Outcome(OutcomeKind::Inconclusive),
                    _ => {
                        self.error(
                            node.origin(),
                            "`outcome` of a quiet test is passed, not-applicable or inconclusive",
                            None,
                        );
                        continue;
                    }
                },
                (true, Some(node)) => {
                    self.error(node.origin(), "`outcome` goes with `quiet:` (a firing test's outcome is fired)", None);
                    continue;
                }
            };
            let version = match item.get("version") {
                None => None,
                Some(node) => match node.as_str().map(str::parse) {
                    Some(Ok(v)) => Some(v),
                    Some(Err(m)) => {
                        self.error(node.origin(), m, None);
                        None
                    }
                    None => {
                        self.error(node.origin(), "`version` is a ClickHouse version such as \"25.8\"", None);
                        None
                    }
                },
            };
            let at = match item.get("at") {
                None => None,
                Some(node) => match (fires, node.as_str()) {
                    (true, Some(at)) => Some(at.to_string()),
                    (false, _) => {
                        self.error(node.origin(), "`at` is the expected location of a firing test", None);
                        None
                    }
                    (true, None) => {
                        self.error(node.origin(), "`at` is `file:line`", None);
                        None
                    }
                },
            };
            tests.push(RuleTest { expect, fixture: base.join(dir), at, version, origin: item.origin() });
        }
        tests
    }
}
