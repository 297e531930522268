//! A rule's `tests:`: the fixtures it proves itself on, each a firing or a quiet case.

use super::file::TestCase;
use super::*;

impl Parser<'_> {
    pub(super) fn tests(&mut self, cases: &[Spanned<TestCase>], base: &Path) -> Vec<RuleTest> {
        cases.iter().filter_map(|case| self.test(case, base)).collect()
    }

    fn test(&mut self, case: &Spanned<TestCase>, base: &Path) -> Option<RuleTest> {
        let TestCase { fires, quiet, at, version, outcome } = &case.value;
        let (fires, dir) = match (fires, quiet) {
            (Some(dir), None) => (true, dir),
            (None, Some(dir)) => (false, dir),
            _ => {
                self.error(case.origin, "each test has exactly one of `fires: DIR` or `quiet: DIR`", None);
                return None;
            }
        };
        let expect = match (fires, outcome) {
            (true, None) => Expectation::Fires,
            (false, None) => Expectation::Quiet,
            (false, Some(outcome)) => match outcome.value.as_str() {
                "passed" => Expectation::Quiet,
                "not-applicable" => Expectation::Outcome(OutcomeKind::NotApplicable),
                "inconclusive" => Expectation::Outcome(OutcomeKind::Inconclusive),
                _ => {
                    let why = "`outcome` of a quiet test is passed, not-applicable or inconclusive";
                    self.error(outcome.origin, why, None);
                    return None;
                }
            },
            (true, Some(outcome)) => {
                let why = "`outcome` goes with `quiet:` (a firing test's outcome is fired)";
                self.error(outcome.origin, why, None);
                return None;
            }
        };
        let version = version.as_ref().and_then(|v| match v.value.parse() {
            Ok(version) => Some(version),
            Err(message) => {
                self.error(v.origin, message, None);
                None
            }
        });
        let at = match at {
            Some(at) if !fires => {
                self.error(at.origin, "`at` is the expected location of a firing test", None);
                None
            }
            at => at.as_ref().map(|at| at.value.clone()),
        };
        Some(RuleTest { expect, fixture: base.join(&dir.value), at, version, origin: case.origin })
    }
}
