//! Facts of the machine chaudit runs on (`--host-facts`, for audits run on the server
//! node): the TCP settings that decide whether an idle connection restarts slow.

use serde_json::{Map, Value, json};

/// The `host` document: `tcp_slow_start_after_idle` (from /proc) and the routes with their
/// `initcwnd` (from `ip route show`; a route without one uses the kernel default of 10).
pub fn collect() -> Value {
    let mut unavailable = Map::new();
    let slow_start = match std::fs::read_to_string("/proc/sys/net/ipv4/tcp_slow_start_after_idle") {
        Ok(text) => json!(text.trim()),
        Err(e) => {
            unavailable.insert("tcp_slow_start_after_idle".into(), json!(e.to_string()));
            Value::Null
        }
    };
    let routes = match std::process::Command::new("ip").args(["route", "show"]).output() {
        Ok(out) if out.status.success() => json!(parse_routes(&String::from_utf8_lossy(&out.stdout))),
        Ok(out) => {
            unavailable.insert("routes".into(), json!(String::from_utf8_lossy(&out.stderr).trim()));
            json!([])
        }
        Err(e) => {
            unavailable.insert("routes".into(), json!(format!("cannot run `ip route show`: {e}")));
            json!([])
        }
    };
    json!({"tcp_slow_start_after_idle": slow_start, "routes": routes, "unavailable": unavailable})
}

/// `default via 10.0.0.1 dev eth0 initcwnd 4` -> {destination, device, initcwnd}.
pub fn parse_routes(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).copied();
            json!({
                "route": line.trim(),
                "destination": words.first().copied().unwrap_or_default(),
                "device": after("dev"),
                "initcwnd": after("initcwnd").and_then(|n| n.parse::<u32>().ok()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_keep_their_initcwnd() {
        let routes =
            parse_routes("default via 10.0.0.1 dev eth0 initcwnd 4\n10.0.0.0/24 dev eth0 proto kernel scope link\n");
        assert_eq!(routes[0]["initcwnd"], 4);
        assert_eq!(routes[0]["device"], "eth0");
        assert!(routes[1]["initcwnd"].is_null());
    }
}
