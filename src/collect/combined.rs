//! The answer of a combined query (every fact in one query, each row as a JSON line tagged
//! with its part and, through clusterAllReplicas, its replica), split per replica and part
//! as its lines arrive. A row is held once, as its JSON text, for every replica that
//! answered it alike, and parsed only when its replica's document is built: the answer of
//! a whole fleet is never held as JSON values.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rustc_hash::FxHashSet;
use serde_json::Value;

use super::{Session, Unread, plan};

/// One fact's answer: its rows, or why it could not be read.
pub(crate) type Answer<'a> = (&'a str, Result<Rows, String>);

/// A fact's rows: parsed, or the JSON lines of a combined answer (parsed when used).
#[derive(Debug, Clone)]
pub(crate) enum Rows {
    Parsed(Vec<Value>),
    Lines(Vec<Arc<str>>),
}

impl Rows {
    pub fn is_empty(&self) -> bool {
        match self {
            Rows::Parsed(rows) => rows.is_empty(),
            Rows::Lines(lines) => lines.is_empty(),
        }
    }

    /// The rows as JSON values; a line that is not JSON fails the fact.
    pub fn into_values(self) -> Result<Vec<Value>, String> {
        match self {
            Rows::Parsed(rows) => Ok(rows),
            Rows::Lines(lines) => values(&lines),
        }
    }

    /// The first row, if it is JSON.
    pub fn first(&self) -> Option<Value> {
        match self {
            Rows::Parsed(rows) => rows.first().cloned(),
            Rows::Lines(lines) => parse(lines.first()?).ok(),
        }
    }
}

/// JSON lines as JSON values; a line that is not JSON fails them all.
pub(crate) fn values(lines: &[Arc<str>]) -> Result<Vec<Value>, String> {
    lines.iter().map(|line| parse(line)).collect()
}

fn parse(line: &str) -> Result<Value, String> {
    serde_json::from_str(line).map_err(|e| format!("{}: a row is not JSON: {e}", Unread::BadResponse.label()))
}

/// The rows read so far, per replica and part.
pub(crate) struct Combined {
    part_of: HashMap<String, usize>,
    parts: usize,
    by_node: BTreeMap<u64, Vec<Vec<Arc<str>>>>,
    /// The rows seen, when rows alike are held once (the replicas of a fan-out answer alike;
    /// one server's rows seldom repeat).
    seen: Option<FxHashSet<Arc<str>>>,
}

impl Combined {
    /// Runs the combined query `sql` of `parts` and reads its answer as it arrives;
    /// `of_replicas`: the answer of many replicas, whose rows alike are held once.
    pub async fn read(
        session: &Session,
        purpose: &str,
        sql: &str,
        settings: &[(&str, &str)],
        parts: &[plan::Part<'_>],
        of_replicas: bool,
    ) -> Result<Combined, super::CollectError> {
        let mut combined = Combined::new(parts, of_replicas);
        let format = plan::COMBINED_FORMAT;
        session.each_line(purpose, sql, settings, format, &mut |line| combined.add(line)).await?;
        Ok(combined)
    }

    fn new(parts: &[plan::Part<'_>], of_replicas: bool) -> Combined {
        Combined {
            part_of: parts.iter().enumerate().map(|(i, p)| (p.tag.clone(), i)).collect(),
            parts: parts.len(),
            by_node: BTreeMap::new(),
            seen: of_replicas.then(FxHashSet::default),
        }
    }

    /// One line: the replica's number (none from one server), the part's tag and the row.
    fn add(&mut self, line: &str) -> Result<(), String> {
        let not_a_row = || format!("not a line of the combined answer: {}", line.chars().take(200).collect::<String>());
        let mut columns = line.splitn(3, '\t');
        let (node, tag, row) = match (columns.next(), columns.next(), columns.next()) {
            (Some(node), Some(tag), Some(row)) => (node.parse().map_err(|_| not_a_row())?, tag, row),
            (Some(tag), Some(row), None) => (0, tag, row),
            _ => return Err(not_a_row()),
        };
        let part = *self.part_of.get(tag).ok_or_else(not_a_row)?;
        let row = match &mut self.seen {
            Some(seen) => match seen.get(row) {
                Some(held) => Arc::clone(held),
                None => {
                    let row: Arc<str> = row.into();
                    seen.insert(Arc::clone(&row));
                    row
                }
            },
            None => row.into(),
        };
        self.by_node.entry(node).or_insert_with(|| vec![Vec::new(); self.parts])[part].push(row);
        Ok(())
    }

    /// `node`'s answers, in the order of `parts` (a part without rows is an empty answer).
    pub fn take<'a>(&mut self, node: u64, parts: &[plan::Part<'a>]) -> Vec<Answer<'a>> {
        let mut lines = self.by_node.remove(&node).unwrap_or_default().into_iter();
        parts.iter().map(|p| (p.name, Ok(Rows::Lines(lines.next().unwrap_or_default())))).collect()
    }

    /// Every replica's answers that came, by its number, in the order of `parts`.
    pub fn take_all<'a>(&mut self, parts: &[plan::Part<'a>]) -> BTreeMap<u64, Vec<Answer<'a>>> {
        let nodes: Vec<u64> = self.by_node.keys().copied().collect();
        nodes.into_iter().map(|node| (node, self.take(node, parts))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_alike_are_held_once_and_split_per_replica_and_part() {
        let parts = [
            plan::Part { name: "settings", tag: "settings".into(), sql: "" },
            plan::Part { name: "shapes", tag: "log.shapes".into(), sql: "" },
        ];
        let mut combined = Combined::new(&parts, true);
        let setting = r#"{"name":"max_threads","value":"8"}"#;
        for node in ["1", "2"] {
            combined.add(&format!("{node}\tsettings\t{setting}")).unwrap();
        }
        combined.add("2\tlog.shapes\tnot json").unwrap();
        assert!(combined.add("2\tother\t{}").is_err());
        assert!(combined.add("x\tsettings\t{}").is_err());
        assert!(combined.add("Code: 241. DB::Exception: Memory limit exceeded").is_err());
        // one server's answer has no replica column
        combined.add(&format!("settings\t{setting}")).unwrap();
        assert_eq!(combined.take(0, &parts)[0].1.as_ref().unwrap().first().unwrap()["name"], "max_threads");
        let [(_, Ok(Rows::Lines(one))), _] = &combined.take(1, &parts)[..] else { panic!() };
        let mut two = combined.take(2, &parts).into_iter();
        let (_, Ok(Rows::Lines(two_settings))) = two.next().unwrap() else { panic!() };
        assert!(Arc::ptr_eq(&one[0], &two_settings[0]));
        assert_eq!(Rows::Lines(two_settings).into_values().unwrap()[0]["value"], "8");
        let (name, Ok(shapes)) = two.next().unwrap() else { panic!() };
        assert_eq!(name, "shapes");
        assert!(shapes.into_values().unwrap_err().starts_with("bad response: a row is not JSON"));
        // a replica that sent nothing has empty answers
        assert!(combined.take(3, &parts).iter().all(|(_, rows)| rows.as_ref().unwrap().is_empty()));
    }
}
