//! Release status: LTS releases are x.3 and x.8; the 3 latest monthly releases and the
//! 2 latest LTS releases are supported. "Latest" is the newest release chaudit knows of
//! (its settings history, the running server, the target), never the wall clock.

use serde::Serialize;

use crate::version::Version;

#[derive(Debug, Clone, Serialize)]
pub struct ReleaseStatus {
    /// major.minor
    pub release: String,
    pub lts: bool,
    pub supported: bool,
    /// The releases supported as of the newest one known, newest first.
    pub supported_releases: Vec<String>,
    /// What the status is judged against.
    pub as_of: String,
}

pub fn is_lts(v: Version) -> bool {
    matches!(v.minor, 3 | 8)
}

/// The status of `version` among `known` releases (major.minor; any order, duplicates allowed).
pub fn status(version: Version, known: &[Version]) -> ReleaseStatus {
    let mut releases: Vec<(u32, u32)> = known.iter().map(|v| (v.major, v.minor)).collect();
    releases.push((version.major, version.minor));
    releases.sort_unstable_by(|a, b| b.cmp(a));
    releases.dedup();
    let monthly = releases.iter().take(3);
    let lts = releases.iter().filter(|(_, minor)| matches!(minor, 3 | 8)).take(2);
    let mut supported: Vec<(u32, u32)> = monthly.chain(lts).copied().collect();
    supported.sort_unstable_by(|a, b| b.cmp(a));
    supported.dedup();
    let name = |(major, minor): (u32, u32)| format!("{major}.{minor}");
    ReleaseStatus {
        release: name((version.major, version.minor)),
        lts: is_lts(version),
        supported: supported.contains(&(version.major, version.minor)),
        supported_releases: supported.into_iter().map(name).collect(),
        as_of: name(releases[0]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn three_monthly_and_two_lts() {
        let known: Vec<Version> = ["25.8", "25.9", "26.1", "26.2", "26.3", "26.7", "26.8", "26.9"].map(v).to_vec();
        let s = status(v("26.9.2.1"), &known);
        assert!(s.supported && !s.lts);
        assert_eq!(s.supported_releases, ["26.9", "26.8", "26.7", "26.3"]);
        let old = status(v("25.8.2.1"), &known);
        assert!(old.lts && !old.supported);
        assert_eq!(old.as_of, "26.9");
        assert!(status(v("26.3"), &known).supported);
    }
}
