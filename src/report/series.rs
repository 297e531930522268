//! Evidence that is a series: a map from a time to a number (failed queries per hour, a
//! node's peak Context locks per second over the window) or from names to numbers (a table's
//! parts per partition), or several such series of one value (cache reads against
//! object-store reads). The HTML report draws them (html/chart.rs); text and Markdown say
//! each in words (its extent and peak), JSON keeps the values.

use serde_json::Value;

use crate::suppress::date::Date;

/// Named (not timed) values a series holds at most; more is a table's job.
const MAX_NAMED: usize = 60;

/// One point of a series: its key as the evidence writes it, where it falls on a time axis
/// (seconds, when every key of the series is a time), and its value.
pub struct Point<'a> {
    pub key: &'a str,
    pub at: Option<i64>,
    pub value: f64,
}

/// The points of an evidence value that is a series: an object whose every value is a number
/// (or a number written as text, as the server quotes 64-bit integers), or a list of
/// `[key, number]` pairs (in their order), keyed by times (`YYYY-MM-DD hh:mm:ss`, one point or
/// more) or by names (two to 60). Anything else is none.
pub fn points(v: &Value) -> Option<Vec<Point<'_>>> {
    let pairs = keyed(v)?;
    let mut out = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        let value = match value {
            Value::Number(n) => n.as_f64()?,
            Value::String(s) => s.parse::<f64>().ok().filter(|f| f.is_finite())?,
            _ => return None,
        };
        out.push(Point { key, at: seconds(key), value });
    }
    if out.iter().all(|p| p.at.is_some()) {
        out.sort_by_key(|p| p.at);
        (!out.is_empty()).then_some(out)
    } else {
        out.iter_mut().for_each(|p| p.at = None);
        (2..=MAX_NAMED).contains(&out.len()).then_some(out)
    }
}

/// `YYYY-MM-DD hh:mm:ss` (how ClickHouse writes a DateTime) as seconds since 1970.
fn seconds(key: &str) -> Option<i64> {
    let (date, time) = key.split_once(' ')?;
    let mut hms = time.splitn(3, ':').map(|p| p.parse::<i64>().ok().filter(|n| (0..60).contains(n)));
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    (h < 24).then(|| Date::parse(date).map(|d| d.days() * 86_400 + h * 3600 + m * 60 + s))?
}

/// A series in words: its extent and its peak.
fn summary(points: &[Point]) -> String {
    let peak = peak(points);
    match (points.first(), points.last()) {
        (Some(first), Some(last)) if points.len() > 1 && first.at.is_some() => format!(
            "{} points from {} to {}; peak {} at {}",
            points.len(),
            first.key,
            last.key,
            number(peak.value),
            peak.key
        ),
        _ if points.len() == 1 => format!("{} at {}", number(peak.value), peak.key),
        _ => format!("{} values; the largest {} ({})", points.len(), number(peak.value), peak.key),
    }
}

fn peak<'p, 'a>(points: &'p [Point<'a>]) -> &'p Point<'a> {
    points.iter().fold(&points[0], |best, p| if p.value > best.value { p } else { best })
}

/// A series with its name in the chart's legend (empty: the chart's only series).
pub type Named<'a> = (&'a str, Vec<Point<'a>>);

/// The series of an evidence value: one (see `points`), or two to four named series over the
/// same kind of keys, drawn side by side (cache reads against object-store reads): an object
/// of them, or a list of `[name, series]` pairs (in their order).
pub fn series(v: &Value) -> Option<Vec<Named<'_>>> {
    if let Some(points) = points(v) {
        return Some(vec![("", points)]);
    }
    let named = keyed(v)?;
    if !(2..=4).contains(&named.len()) {
        return None;
    }
    let all: Vec<Named> = named.into_iter().map(|(k, v)| Some((k, points(v)?))).collect::<Option<_>>()?;
    let timed = |s: &Named| s.1[0].at.is_some();
    all.iter().all(|s| timed(s) == timed(&all[0])).then_some(all)
}

/// A value's series in words, each with its name when there are several.
pub fn summaries(series: &[Named]) -> String {
    let each = series.iter().map(|(name, points)| {
        let s = summary(points);
        if name.is_empty() { s } else { format!("{name}: {s}") }
    });
    each.collect::<Vec<_>>().join("; ")
}

/// A value as the evidence has it: whole numbers without a fraction.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v:.1}") }
}

/// An evidence value in words when it is a series (see `series`).
pub fn in_words(v: &Value) -> Option<String> {
    series(v).map(|s| summaries(&s))
}

/// An object's entries, or a list of `[key, value]` pairs, in their order; `None` for anything else.
fn keyed(v: &Value) -> Option<Vec<(&str, &Value)>> {
    match v {
        Value::Object(map) => Some(map.iter().map(|(k, v)| (k.as_str(), v)).collect()),
        Value::Array(list) => list
            .iter()
            .map(|pair| match pair.as_array()?.as_slice() {
                [Value::String(k), v] => Some((k.as_str(), v)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_map_of_times_or_names_to_numbers_is_a_series() {
        let hours = json!({"2026-12-01 13:00:00": "180", "2026-12-01 11:00:00": 60});
        let p = points(&hours).unwrap();
        assert_eq!(p.iter().map(|p| p.key).collect::<Vec<_>>(), ["2026-12-01 11:00:00", "2026-12-01 13:00:00"]);
        assert_eq!(p[1].at.unwrap() - p[0].at.unwrap(), 7200);
        assert_eq!(p[0].at, Some(Date::parse("2026-12-01").unwrap().days() * 86_400 + 11 * 3600));
        assert_eq!(points(&json!({"2026-12-01 13:00:00": 3})).unwrap().len(), 1, "one hour is a series");
        assert_eq!(points(&json!({"a": 1, "b": 2.5})).unwrap().len(), 2);
        let pairs = json!([["202612", "400"], ["202611", 12]]);
        assert_eq!(points(&pairs).unwrap().iter().map(|p| p.key).collect::<Vec<_>>(), ["202612", "202611"], "in order");
        for not in [
            json!({"a": 1}),
            json!({}),
            json!({"a": "x", "b": 1}),
            json!([1, 2]),
            json!("text"),
            json!({"a": [1]}),
            json!([["a", 1], ["b"]]),
            json!([["a", 1], [2, 3]]),
        ] {
            assert!(points(&not).is_none(), "{not}");
        }
        assert!(seconds("2026-12-01 24:00:00").is_none() && seconds("2026-13-01 00:00:00").is_none());
    }

    #[test]
    fn a_series_in_words() {
        let v = json!({"2026-12-01 13:00:00": "180", "2026-12-01 11:00:00": 60});
        assert_eq!(
            in_words(&v).unwrap(),
            "2 points from 2026-12-01 11:00:00 to 2026-12-01 13:00:00; peak 180 at 2026-12-01 13:00:00"
        );
        assert_eq!(in_words(&json!([["1", 420], ["0", 14]])).unwrap(), "2 values; the largest 420 (1)");
        assert!(in_words(&json!(["a", "b"])).is_none() && in_words(&json!(3)).is_none());
    }
}
