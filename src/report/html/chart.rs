//! Evidence that is a series, drawn: a map from a time to a number (failed queries per hour,
//! a node's peak Context locks per second over the window) or from names to numbers becomes
//! an inline SVG bar chart beside the finding. No script and no library: the page stays
//! self-contained, and every label and tooltip is escaped text.

use std::fmt::Write;

use serde_json::Value;

use super::esc;
use crate::suppress::date::Date;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 170.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 28.0;
/// Named (not timed) values drawn at most; more is a table's job.
const MAX_NAMED: usize = 60;

/// One point of a series: its key as the evidence writes it, where it falls on a time axis
/// (seconds, when every key of the series is a time), and its value.
pub struct Point<'a> {
    pub key: &'a str,
    at: Option<i64>,
    pub value: f64,
}

/// The points of an evidence value that is a series: an object whose every value is a number
/// (or a number written as text, as the server quotes 64-bit integers), or a list of
/// `[key, number]` pairs (in their order), keyed by times (`YYYY-MM-DD hh:mm:ss`, one point or
/// more) or by names (two to 60). Anything else is none.
pub fn points(v: &Value) -> Option<Vec<Point<'_>>> {
    let pairs: Vec<(&str, &Value)> = match v {
        Value::Object(map) => map.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        Value::Array(list) => list
            .iter()
            .map(|pair| match pair.as_array()?.as_slice() {
                [Value::String(k), v] => Some((k.as_str(), v)),
                _ => None,
            })
            .collect::<Option<_>>()?,
        _ => return None,
    };
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

/// What the evidence table says of a series: its extent and its peak.
pub fn summary(points: &[Point]) -> String {
    let peak = peak(points);
    match (points.first(), points.last()) {
        (Some(first), Some(last)) if points.len() > 1 && first.at.is_some() => format!(
            "{} points from {} to {}; peak {} at {} (chart below)",
            points.len(),
            first.key,
            last.key,
            number(peak.value),
            peak.key
        ),
        _ if points.len() == 1 => format!("{} at {} (chart below)", number(peak.value), peak.key),
        _ => format!("{} values; the largest {} ({}) (chart below)", points.len(), number(peak.value), peak.key),
    }
}

fn peak<'p, 'a>(points: &'p [Point<'a>]) -> &'p Point<'a> {
    points.iter().fold(&points[0], |best, p| if p.value > best.value { p } else { best })
}

/// The chart of one series of the evidence, `name` its key there.
pub fn svg(out: &mut String, name: &str, points: &[Point]) {
    let top = nice_ceiling(peak(points).value);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    // where each bar starts, in slots of the plot's width: a time series by its time (a gap
    // stays a gap), named values one slot each
    let (slots, slot_of): (f64, Vec<f64>) = match (points[0].at, points[points.len() - 1].at) {
        (Some(first), Some(last)) => {
            let step =
                points.windows(2).filter_map(|w| Some(w[1].at? - w[0].at?)).filter(|d| *d > 0).min().unwrap_or(1);
            let slots = ((last - first) / step + 1) as f64;
            (slots.max(8.0), points.iter().map(|p| ((p.at.unwrap_or(first) - first) / step) as f64).collect())
        }
        _ => (points.len() as f64, (0..points.len()).map(|i| i as f64).collect()),
    };
    let slot = plot_w / slots;
    let bar = (slot * 0.8).max(1.0);
    let _ = write!(
        out,
        "<figure class=\"chart\" data-series=\"{name}\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         role=\"img\" aria-label=\"{name}\">",
        name = esc(name)
    );
    // the axis, its top, middle and zero lines with their values
    for (i, value) in [top, top / 2.0, 0.0].into_iter().enumerate() {
        let y = TOP + plot_h * i as f64 / 2.0;
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"axis\" x=\"{}\" y=\"{:.1}\" \
             text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            esc(&compact(value))
        );
    }
    for (p, at) in points.iter().zip(&slot_of) {
        let h =
            if top > 0.0 { (p.value.max(0.0) / top * plot_h).max(if p.value > 0.0 { 1.0 } else { 0.0 }) } else { 0.0 };
        let _ = write!(
            out,
            "<rect class=\"bar\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\"><title>{}: {}</title></rect>",
            LEFT + at * slot + (slot - bar) / 2.0,
            TOP + plot_h - h,
            esc(p.key),
            esc(&number(p.value))
        );
    }
    // the first and last keys under the axis (every name when they fit)
    let labels: Vec<(usize, &str)> = if points[0].at.is_none() && points.len() <= 8 {
        (0..points.len()).map(|i| (i, "middle")).collect()
    } else if points.len() > 1 {
        vec![(0, "start"), (points.len() - 1, "end")]
    } else {
        vec![(0, "start")]
    };
    let short = shortener(points);
    for (i, anchor) in labels {
        let x = match anchor {
            "middle" => LEFT + slot_of[i] * slot + slot / 2.0,
            "end" => LEFT + slot_of[i] * slot + slot,
            _ => LEFT + slot_of[i] * slot,
        };
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            HEIGHT - 8.0,
            esc(&short(points[i].key))
        );
    }
    let _ = write!(
        out,
        "</svg><figcaption>{}: {}</figcaption></figure>\n",
        esc(name),
        esc(&summary(points).replace(" (chart below)", ""))
    );
}

/// How the keys are written under the axis: times within one day as `hh:mm`, times over
/// several as `MM-DD hh:mm`, names cut at 16 characters.
fn shortener(points: &[Point]) -> impl Fn(&str) -> String {
    let timed = points[0].at.is_some();
    let one_day = points.iter().all(|p| p.key.get(..10) == points[0].key.get(..10));
    move |key: &str| match (timed, one_day) {
        (true, true) => key.get(11..16).unwrap_or(key).to_string(),
        (true, false) => key.get(5..16).unwrap_or(key).to_string(),
        _ if key.chars().count() > 16 => format!("{}…", key.chars().take(15).collect::<String>()),
        _ => key.to_string(),
    }
}

/// The axis' top: the peak rounded up to 1, 2 or 5 times a power of ten.
fn nice_ceiling(peak: f64) -> f64 {
    if peak <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powf(peak.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * power).find(|c| *c >= peak).unwrap_or(10.0 * power)
}

/// A value as the evidence has it: whole numbers without a fraction.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v:.1}") }
}

/// An axis value: 1.5k, 2M.
fn compact(v: f64) -> String {
    let (scaled, unit) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let text = if scaled.fract() == 0.0 { format!("{}", scaled as i64) } else { format!("{scaled:.1}") };
    format!("{text}{unit}")
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
        for not in
            [json!({"a": 1}), json!({}), json!({"a": "x", "b": 1}), json!([1, 2]), json!("text"), json!({"a": [1]}), json!([["a", 1], ["b"]]), json!([["a", 1], [2, 3]])]
        {
            assert!(points(&not).is_none(), "{not}");
        }
        assert!(seconds("2026-12-01 24:00:00").is_none() && seconds("2026-13-01 00:00:00").is_none());
    }

    #[test]
    fn a_gap_in_time_stays_a_gap_and_every_label_is_escaped() {
        let v = json!({"2026-12-01 10:00:00": 5, "2026-12-01 13:00:00": 20, "2026-12-01 12:00:00": 7});
        let mut out = String::new();
        svg(&mut out, "per_hour<script>", &points(&v).unwrap());
        assert_eq!(out.matches("<rect").count(), 3);
        assert!(out.contains("data-series=\"per_hour&lt;script&gt;\"") && !out.contains("<script"));
        assert!(out.contains("peak 20 at 2026-12-01 13:00:00"), "{out}");
        // 10:00 in the first slot, 12:00 in the third (11:00 empty), of at least 8
        let xs: Vec<f64> =
            out.split("<rect class=\"bar\" x=\"").skip(1).map(|s| s[..s.find('"').unwrap()].parse().unwrap()).collect();
        let slot = (WIDTH - LEFT - RIGHT) / 8.0;
        assert!((xs[1] - xs[0] - 2.0 * slot).abs() < 0.2 && (xs[2] - xs[1] - slot).abs() < 0.2, "{xs:?}");
        let names = json!({"<b>x</b>": 1, "a\"b": 2});
        let mut out = String::new();
        svg(&mut out, "n", &points(&names).unwrap());
        assert!(!out.contains("<b>") && out.contains("&lt;b&gt;x&lt;/b&gt;") && out.contains("a&quot;b"), "{out}");
    }

    #[test]
    fn the_axis_top_is_a_round_number() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(7.0), 10.0);
        assert_eq!(nice_ceiling(180.0), 200.0);
        assert_eq!(nice_ceiling(5965.0), 10000.0);
        assert_eq!(nice_ceiling(0.3), 0.5);
        assert_eq!(compact(57000.0), "57k");
        assert_eq!(compact(1500.0), "1.5k");
        assert_eq!(number(98.75), "98.8");
    }
}
