//! The project file `.chaudit.yaml`:
//!
//! ```yaml
//! ignore:
//!   - rule: plaintext-password          # or rules: [a, b]; "all" for every rule
//!     file: users.d/legacy.xml          # optional: findings in this file
//!     element: users/legacy/password    # optional: the element at this path
//!     reason: the legacy ETL box is firewalled; rotating in Q1
//!     expires: 2027-03-31               # optional: stops suppressing after this day
//!   - rule: too-many-parts
//!     host: ch2:8123                    # optional: a finding of a cluster audit on this replica alone
//!     object: db.events                 # optional: findings about this object (a finding's `object`)
//!     reason: backfill until Friday
//! ```

use std::path::Path;

use super::date::Date;
use super::{Ignore, SuppressionError, Target};
use crate::config::error::{ConfigError, FileProblem};
use crate::config::{Location, Origin, RealFs, SourceMap, files};
use crate::spanned_yaml::{Yaml, read_document};

const ENTRY_KEYS: &[&str] = &["rule", "rules", "file", "element", "host", "object", "reason", "expires"];

/// Reads the project file; `resolve` turns an element path into the locations that set it.
pub fn load(path: &Path, resolve: &dyn Fn(&str) -> Vec<Location>) -> Result<Vec<Ignore>, Vec<SuppressionError>> {
    let mut sources = SourceMap::new(path.parent().map(Path::to_path_buf).unwrap_or_default());
    let id = files::read(&RealFs, &mut sources, path).map_err(|e| {
        let message = match e {
            ConfigError::Read { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        vec![SuppressionError::Read { path: path.display().to_string(), message }]
    })?;
    let file = sources.file(id);
    let error = |origin: Origin, message: String, help: Option<&str>| {
        SuppressionError::Invalid(FileProblem::new(
            "chaudit::suppress::invalid",
            &sources,
            origin,
            message,
            "here",
            help.map(str::to_string),
        ))
    };
    let doc = read_document(&file.text(), id).map_err(|(o, m)| vec![error(o, m, None)])?;
    if let Yaml::Mapping(pairs, _) = &doc {
        let unknown = pairs.iter().filter_map(|(k, _)| Some((k, k.as_str()?))).find(|(_, k)| *k != "ignore");
        if let Some((key, name)) = unknown {
            let help = crate::suggest::closest(name, ["ignore"].into_iter()).map(|s| format!("did you mean `{s}`?"));
            let message = format!("unknown key `{name}`: the project file holds `ignore:`");
            return Err(vec![error(key.origin(), message, help.as_deref())]);
        }
    }
    let entries = match doc.get("ignore") {
        None => return Ok(Vec::new()),
        Some(Yaml::Sequence(items, _)) => items,
        Some(other) => return Err(vec![error(other.origin(), "`ignore` is a list of suppressions".into(), None)]),
    };
    let mut ignores = Vec::new();
    let mut errors = Vec::new();
    for entry in entries {
        if let Yaml::Mapping(pairs, _) = entry {
            for (key, _) in pairs {
                let Some(k) = key.as_str().filter(|k| !ENTRY_KEYS.contains(k)) else { continue };
                let help =
                    crate::suggest::closest(k, ENTRY_KEYS.iter().copied()).map(|s| format!("did you mean `{s}`?"));
                errors.push(error(key.origin(), format!("unknown key `{k}` in a suppression"), help.as_deref()));
            }
        }
        let line = sources.locate(entry.origin()).line;
        let at = format!("{}:{line}", file.display);
        let text = |key: &str| entry.get(key).and_then(Yaml::as_str).map(str::to_string);
        let rules: Vec<String> = match (entry.get("rule"), entry.get("rules")) {
            (Some(Yaml::Scalar(r, _)), None) => vec![r.clone()],
            (None, Some(Yaml::Sequence(items, _))) => {
                items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect()
            }
            _ => Vec::new(),
        };
        if rules.is_empty() {
            errors.push(error(entry.origin(), "a suppression names `rule: ID` (or `rules: [..]`)".into(), None));
            continue;
        }
        let Some(reason) = text("reason").filter(|r| !r.trim().is_empty()) else {
            let help = Some("say why: reason: \"...\" (reviewers and auditors read it)");
            errors.push(error(entry.origin(), format!("suppression of {} has no reason", rules.join(", ")), help));
            continue;
        };
        let expires = match entry.get("expires") {
            None => None,
            Some(node) => match node.as_str().and_then(Date::parse) {
                Some(d) => Some(d),
                None => {
                    let shown = node.as_str().unwrap_or("(not a scalar)");
                    let message = format!("`expires: {shown}` is not a YYYY-MM-DD date");
                    errors.push(error(node.origin(), message, None));
                    continue;
                }
            },
        };
        let target = match (text("element"), text("file")) {
            (Some(element), _) => Target::Locations(resolve(&element)),
            (None, file) => Target::File(file),
        };
        let (host, object) = (text("host"), text("object"));
        ignores.push(Ignore { rules, reason, kind: "project", at, target, expires, host, object });
    }
    if errors.is_empty() { Ok(ignores) } else { Err(errors) }
}
