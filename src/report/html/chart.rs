//! Evidence that is a series (report/series.rs), drawn: an inline SVG bar chart beside the
//! finding, several series of one value side by side with a legend. No script and no
//! library: the page stays self-contained, and every label and tooltip is escaped text.

use std::fmt::Write;

use super::esc;
use crate::report::series::{Named, Point, number, summaries};

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 170.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 28.0;

/// The chart of one value of the evidence, `name` its key there: a bar per point, the bars of
/// several series side by side in each step, with a legend.
pub fn svg(out: &mut String, name: &str, series: &[Named]) {
    let all: Vec<&Point> = series.iter().flat_map(|(_, p)| p).collect();
    let top = nice_ceiling(all.iter().fold(0.0, |m: f64, p| m.max(p.value)));
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    // the steps of the axis: a time series by its time (a gap stays a gap), names in order
    let mut keys: Vec<&Point> = Vec::new();
    for p in &all {
        if !keys.iter().any(|k| k.key == p.key) {
            keys.push(p);
        }
    }
    let timed = keys[0].at.is_some();
    if timed {
        keys.sort_by_key(|p| p.at);
    }
    let (first, last) = (keys[0].at.unwrap_or(0), keys[keys.len() - 1].at.unwrap_or(0));
    let step = keys.windows(2).filter_map(|w| Some(w[1].at? - w[0].at?)).filter(|d| *d > 0).min().unwrap_or(1);
    let slots = if timed { (((last - first) / step + 1) as f64).max(8.0) } else { (keys.len() as f64).max(8.0) };
    let slot_of = |p: &Point| match p.at {
        Some(at) => ((at - first) / step) as f64,
        None => keys.iter().position(|k| k.key == p.key).unwrap_or(0) as f64,
    };
    let slot = plot_w / slots;
    let bar = (slot * 0.8 / series.len() as f64).max(1.0);
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
    let group = bar * series.len() as f64;
    for (i, (label, points)) in series.iter().enumerate() {
        for p in points {
            let h = if top > 0.0 {
                (p.value.max(0.0) / top * plot_h).max(if p.value > 0.0 { 1.0 } else { 0.0 })
            } else {
                0.0
            };
            let who = if label.is_empty() { String::new() } else { format!("{label}, ") };
            let _ = write!(
                out,
                "<rect class=\"bar s{i}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\"><title>{}{}: {}</title></rect>",
                LEFT + slot_of(p) * slot + (slot - group) / 2.0 + i as f64 * bar,
                TOP + plot_h - h,
                esc(&who),
                esc(p.key),
                esc(&number(p.value))
            );
        }
    }
    // the legend of several series, at the top right
    if series.len() > 1 {
        for (i, (label, _)) in series.iter().enumerate() {
            let y = TOP + 4.0 + 14.0 * i as f64;
            let _ = write!(
                out,
                "<rect class=\"bar s{i}\" x=\"{:.1}\" y=\"{y:.1}\" width=\"10\" height=\"10\"/><text class=\"axis\" x=\"{:.1}\" \
                 y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                WIDTH - RIGHT - 12.0,
                WIDTH - RIGHT - 16.0,
                y + 9.0,
                esc(label)
            );
        }
    }
    // the first and last keys under the axis (every name when they fit)
    let labels: Vec<(usize, &str)> = if !timed && keys.len() <= 8 {
        (0..keys.len()).map(|i| (i, "middle")).collect()
    } else if keys.len() > 1 {
        vec![(0, "start"), (keys.len() - 1, "end")]
    } else {
        vec![(0, "start")]
    };
    let short = shortener(&keys);
    for (i, anchor) in labels {
        let start = LEFT + slot_of(keys[i]) * slot;
        let x = match anchor {
            "middle" => start + slot / 2.0,
            "end" => start + slot,
            _ => start,
        };
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            HEIGHT - 8.0,
            esc(&short(keys[i].key))
        );
    }
    let _ = writeln!(out, "</svg><figcaption>{}: {}</figcaption></figure>", esc(name), esc(&summaries(series)));
}

/// How the keys are written under the axis: times within one day as `hh:mm`, times over
/// several as `MM-DD hh:mm`, names cut at 16 characters.
fn shortener(points: &[&Point]) -> impl Fn(&str) -> String {
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
    use crate::report::series::series;
    use serde_json::json;

    #[test]
    fn a_gap_in_time_stays_a_gap_and_every_label_is_escaped() {
        let v = json!({"2026-12-01 10:00:00": 5, "2026-12-01 13:00:00": 20, "2026-12-01 12:00:00": 7});
        let mut out = String::new();
        svg(&mut out, "per_hour<script>", &series(&v).unwrap());
        assert_eq!(out.matches("<rect").count(), 3);
        assert!(out.contains("data-series=\"per_hour&lt;script&gt;\"") && !out.contains("<script"));
        assert!(out.contains("peak 20 at 2026-12-01 13:00:00"), "{out}");
        // 10:00 in the first slot, 12:00 in the third (11:00 empty), of at least 8
        let xs: Vec<f64> = out
            .split("<rect class=\"bar s0\" x=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
            .collect();
        let slot = (WIDTH - LEFT - RIGHT) / 8.0;
        assert!((xs[1] - xs[0] - 2.0 * slot).abs() < 0.2 && (xs[2] - xs[1] - slot).abs() < 0.2, "{xs:?}");
        let names = json!({"<b>x</b>": 1, "a\"b": 2});
        let mut out = String::new();
        svg(&mut out, "n", &series(&names).unwrap());
        assert!(!out.contains("<b>") && out.contains("&lt;b&gt;x&lt;/b&gt;") && out.contains("a&quot;b"), "{out}");
    }

    #[test]
    fn two_series_share_the_axis_side_by_side_with_a_legend() {
        let v = json!({
            "from the cache": {"2026-12-01 10:00:00": 100, "2026-12-01 10:01:00": 0},
            "from object storage": {"2026-12-01 10:00:00": 5, "2026-12-01 10:01:00": 400},
        });
        let drawn = series(&v).unwrap();
        assert_eq!(
            drawn.iter().map(|(n, p)| (*n, p.len())).collect::<Vec<_>>(),
            [("from object storage", 2), ("from the cache", 2)]
        );
        let mut out = String::new();
        svg(&mut out, "node_bytes", &drawn);
        assert_eq!(out.matches("<rect class=\"bar s0\" x=").count(), 3, "two bars and the legend's key: {out}");
        assert_eq!(out.matches("<rect class=\"bar s1\" x=").count(), 3);
        assert!(
            out.contains(">from the cache</text>")
                && out.contains("<title>from the cache, 2026-12-01 10:00:00: 100</title>")
        );
        assert!(summaries(&drawn).starts_with("from object storage: 2 points"), "{}", summaries(&drawn));
        // as a list of [name, series] pairs, in its order
        let pairs = json!([["from the cache", v["from the cache"]], ["from object storage", v["from object storage"]]]);
        assert_eq!(
            series(&pairs).unwrap().iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            ["from the cache", "from object storage"]
        );
        // series of times and of names are not drawn together; one object is no pair of series
        assert!(series(&json!({"a": {"2026-12-01 10:00:00": 1}, "b": {"x": 1, "y": 2}})).is_none());
        assert!(series(&json!({"a": {"2026-12-01 10:00:00": 1}})).is_none());
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
