//! ClickHouse versions compare as numbers (25.11 > 25.3); rules gate on ranges of them.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub build: u32,
}

impl FromStr for Version {
    type Err = String;

    /// `26.9`, `26.9.2.1`, or a server's `version()` such as `25.8.2.1-lts`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let core = s.trim().split(['-', ' ', '+']).next().unwrap_or_default();
        let parts: Vec<u32> = core
            .split('.')
            .map(|p| p.parse::<u32>().map_err(|_| format!("`{s}` is not a ClickHouse version (like 25.8 or 25.8.2.1)")))
            .collect::<Result<_, _>>()?;
        if parts.len() < 2 || parts.len() > 4 {
            return Err(format!("`{s}` is not a ClickHouse version (like 25.8 or 25.8.2.1)"));
        }
        let at = |i: usize| parts.get(i).copied().unwrap_or(0);
        Ok(Version { major: at(0), minor: at(1), patch: at(2), build: at(3) })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if self.patch > 0 || self.build > 0 {
            write!(f, ".{}.{}", self.patch, self.build)?;
        }
        Ok(())
    }
}

/// Versions travel as their text ("25.8.2.1") in snapshots and reports.
impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A conjunction of comparisons: `>=24.8, <26.9`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    bounds: Vec<(Comparison, Version)>,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    Equal,
}

impl FromStr for VersionRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut bounds = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (comparison, rest) = [
                (">=", Comparison::GreaterOrEqual),
                ("<=", Comparison::LessOrEqual),
                (">", Comparison::Greater),
                ("<", Comparison::Less),
                ("==", Comparison::Equal),
                ("=", Comparison::Equal),
            ]
            .iter()
            .find_map(|(op, c)| part.strip_prefix(op).map(|rest| (*c, rest)))
            .ok_or_else(|| format!("`{part}`: a bound starts with >=, >, <=, < or ="))?;
            bounds.push((comparison, rest.parse()?));
        }
        if bounds.is_empty() {
            return Err("an empty version range".into());
        }
        Ok(VersionRange { bounds, text: s.trim().to_string() })
    }
}

impl VersionRange {
    /// Whether `v` lies in the range; a bound given as `x.y` compares on major.minor only.
    pub fn contains(&self, v: Version) -> bool {
        self.bounds.iter().all(|(c, bound)| {
            let v = if bound.patch == 0 && bound.build == 0 { Version { patch: 0, build: 0, ..v } } else { v };
            match c {
                Comparison::Less => v < *bound,
                Comparison::LessOrEqual => v <= *bound,
                Comparison::Greater => v > *bound,
                Comparison::GreaterOrEqual => v >= *bound,
                Comparison::Equal => v == *bound,
            }
        })
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        let v = |s: &str| s.parse::<Version>().unwrap();
        assert!(v("25.11") > v("25.3"));
        assert!(v("25.8.2.1-lts") > v("25.8"));
        assert!("26".parse::<Version>().is_err());
    }

    #[test]
    fn ranges_bound_on_major_minor() {
        let r: VersionRange = ">=23.10, <26.9".parse().unwrap();
        assert!(r.contains("23.10.1.1".parse().unwrap()));
        assert!(r.contains("26.8.9.1".parse().unwrap()));
        assert!(!r.contains("26.9.2.1".parse().unwrap()));
        assert!(!r.contains("23.8".parse().unwrap()));
    }
}
