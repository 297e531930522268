//! Facts of the machine chaudit runs on (`--host-facts`, for audits run on the server
//! node): the TCP settings that decide whether an idle connection restarts slow, and the
//! kernel settings ClickHouse's own start-up warnings check (memory, clock, limits).

use std::collections::BTreeMap;

use crate::facts::derived::{BlockDevice, Route};
use crate::facts::document::{Document, Fact};
use crate::facts::keys::host;

/// The `host` document, typed: `tcp_slow_start_after_idle` (from /proc), the routes with
/// their `initcwnd` (from `ip route show`; a route without one uses the kernel default of
/// 10) and the kernel facts; `unavailable` says why a fact that is not there could not be read.
pub fn collect() -> Document {
    let mut facts = Document::default();
    let mut unavailable = BTreeMap::new();
    let slow_start = match std::fs::read_to_string("/proc/sys/net/ipv4/tcp_slow_start_after_idle") {
        Ok(text) => Some(text.trim().to_string()),
        Err(e) => {
            unavailable.insert(host::TCP_SLOW_START_AFTER_IDLE.name().to_string(), e.to_string());
            None
        }
    };
    host::TCP_SLOW_START_AFTER_IDLE.put(&mut facts, slow_start);
    let routes = match std::process::Command::new("ip").args(["route", "show"]).output() {
        Ok(out) if out.status.success() => parse_routes(&String::from_utf8_lossy(&out.stdout)),
        Ok(out) => {
            unavailable
                .insert(host::ROUTES.name().to_string(), String::from_utf8_lossy(&out.stderr).trim().to_string());
            Vec::new()
        }
        Err(e) => {
            unavailable.insert(host::ROUTES.name().to_string(), format!("cannot run `ip route show`: {e}"));
            Vec::new()
        }
    };
    host::ROUTES.put(&mut facts, routes);
    for (name, read) in KERNEL_FACTS {
        match read() {
            Ok(value) => facts.insert(*name, value),
            Err(why) => {
                unavailable.insert(name.to_string(), why);
            }
        }
    }
    host::UNAVAILABLE.put(&mut facts, unavailable);
    facts
}

type Reader = fn() -> Result<Box<dyn Fact>, String>;

/// A fact as read.
fn fact(value: impl Fact) -> Box<dyn Fact> {
    Box::new(value)
}

/// Kernel facts by name (the keys of the `host` document). Strings as the kernel writes
/// them; for THP the selected `[mode]`; numbers where rules compare them.
const KERNEL_FACTS: &[(&str, Reader)] = &[
    (host::THP_ENABLED.name(), || selected(&read("/sys/kernel/mm/transparent_hugepage/enabled")?)),
    (host::THP_DEFRAG.name(), || selected(&read("/sys/kernel/mm/transparent_hugepage/defrag")?)),
    (host::OVERCOMMIT_MEMORY.name(), || number(&read("/proc/sys/vm/overcommit_memory")?)),
    (host::ZONE_RECLAIM_MODE.name(), || number(&read("/proc/sys/vm/zone_reclaim_mode")?)),
    (host::CLOCK_SOURCE.name(), || Ok(fact(read("/sys/devices/system/clocksource/clocksource0/current_clocksource")?))),
    (host::CPU_GOVERNOR.name(), cpu_governor),
    (host::PID_MAX.name(), || number(&read("/proc/sys/kernel/pid_max")?)),
    (host::THREADS_MAX.name(), || number(&read("/proc/sys/kernel/threads-max")?)),
    (host::FILE_MAX.name(), || number(&read("/proc/sys/fs/file-max")?)),
    (host::TASK_DELAYACCT.name(), || number(&read("/proc/sys/kernel/task_delayacct")?)),
    (host::SWAP_TOTAL_KB.name(), || meminfo_kb(&read("/proc/meminfo")?, "SwapTotal:").map(fact)),
    (host::DATA_PATH_FILESYSTEM.name(), || Ok(fact(filesystem_of(DATA_PATH, &read("/proc/mounts")?)))),
    (host::SERVER_MAX_PROCESSES.name(), server_max_processes),
    (host::MEM_TOTAL_KB.name(), || meminfo_kb(&read("/proc/meminfo")?, "MemTotal:").map(fact)),
    (host::KERNEL_RELEASE.name(), || Ok(fact(read("/proc/sys/kernel/osrelease")?))),
    (host::KERNEL_VERSION_NUMBER.name(), || kernel_version_number(&read("/proc/sys/kernel/osrelease")?).map(fact)),
    (host::BLOCK_DEVICES.name(), || block_devices().map(fact)),
    (host::THERMAL_THROTTLE_EVENTS.name(), || {
        Ok(fact(sum_of_files("/sys/devices/system/cpu", "thermal_throttle/core_throttle_count")))
    }),
    (host::ECC_CORRECTED_ERRORS.name(), || Ok(fact(sum_of_files("/sys/devices/system/edac/mc", "ce_count")))),
    (host::ECC_UNCORRECTED_ERRORS.name(), || Ok(fact(sum_of_files("/sys/devices/system/edac/mc", "ue_count")))),
];

/// The data path of a packaged install; the filesystem of its nearest mount point counts.
const DATA_PATH: &str = "/var/lib/clickhouse/";

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map(|t| t.trim().to_string()).map_err(|e| format!("{path}: {e}"))
}

fn number(text: &str) -> Result<Box<dyn Fact>, String> {
    count(text).map(fact)
}

fn count(text: &str) -> Result<u64, String> {
    text.parse::<u64>().map_err(|e| format!("`{text}`: {e}"))
}

/// `always [madvise] never` -> `madvise`.
fn selected(text: &str) -> Result<Box<dyn Fact>, String> {
    selected_mode(text).map(|mode| fact(mode.to_string()))
}

fn selected_mode(text: &str) -> Result<&str, String> {
    let start = text.find('[').ok_or_else(|| format!("no [selected] mode in `{text}`"))?;
    let end = text[start..].find(']').ok_or_else(|| format!("no [selected] mode in `{text}`"))?;
    Ok(&text[start + 1..start + end])
}

fn meminfo_kb(meminfo: &str, key: &str) -> Result<u64, String> {
    let line = meminfo.lines().find(|l| l.starts_with(key)).ok_or_else(|| format!("no {key} in /proc/meminfo"))?;
    count(line.split_whitespace().nth(1).unwrap_or_default())
}

/// `5.6.12-arch1` -> 5006012 (major * 1,000,000 + minor * 1,000 + patch), so rules compare ranges.
fn kernel_version_number(release: &str) -> Result<u64, String> {
    let numeric: String = release.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let mut parts = numeric.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor, patch) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if major == 0 {
        return Err(format!("no kernel version in `{release}`"));
    }
    Ok(major * 1_000_000 + minor * 1_000 + patch)
}

/// Block devices (loop, ram and zram left out), by name.
fn block_devices() -> Result<Vec<BlockDevice>, String> {
    let entries = std::fs::read_dir("/sys/block").map_err(|e| format!("/sys/block: {e}"))?;
    let mut devices: Vec<BlockDevice> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if ["loop", "ram", "zram"].iter().any(|p| name.starts_with(p)) {
                return None;
            }
            let queue =
                |f: &str| std::fs::read_to_string(e.path().join("queue").join(f)).ok()?.trim().parse::<u64>().ok();
            Some(BlockDevice { rotational: queue("rotational")? == 1, read_ahead_kb: queue("read_ahead_kb"), name })
        })
        .collect();
    devices.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(devices)
}

/// The sum of `<dir>/*/<file>` (per-CPU or per-controller counters); null where none exists.
fn sum_of_files(dir: &str, file: &str) -> Option<u64> {
    let entries = std::fs::read_dir(dir).ok()?;
    let counts: Vec<u64> = entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join(file)).ok()?.trim().parse().ok())
        .collect();
    (!counts.is_empty()).then(|| counts.iter().sum())
}

/// The filesystem type of the longest mount point `path` lies under (/proc/mounts lines:
/// device, mount point, type, ...).
fn filesystem_of(path: &str, mounts: &str) -> Option<String> {
    mounts
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            Some((fields.get(1)?.replace("\\040", " "), fields.get(2)?.to_string()))
        })
        .filter(|(mount, _)| path.starts_with(mount.as_str()) && (mount == "/" || path[mount.len()..].starts_with('/')))
        .max_by_key(|(mount, _)| mount.len())
        .map(|(_, kind)| kind)
}

/// cpu0's frequency governor; null where the kernel has no frequency scaling (most VMs).
fn cpu_governor() -> Result<Box<dyn Fact>, String> {
    let path = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(fact(Some(text.trim().to_string()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(fact(None::<String>)),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

/// RLIMIT_NPROC (soft) of the running clickhouse-server process, found by its name.
fn server_max_processes() -> Result<Box<dyn Fact>, String> {
    let entries = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    let server = entries
        .flatten()
        .map(|e| e.path())
        .find(|p| std::fs::read_to_string(p.join("comm")).is_ok_and(|c| c.trim().starts_with("clickhouse-serv")));
    let server = server.ok_or("no clickhouse-server process on this host")?;
    let limits = std::fs::read_to_string(server.join("limits")).map_err(|e| format!("{}: {e}", server.display()))?;
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max processes"))
        .and_then(|l| l.split_whitespace().nth(2))
        .ok_or("no Max processes in limits")?;
    // `unlimited` is no limit at all
    Ok(fact(soft.parse::<u64>().unwrap_or(u64::MAX)))
}

/// `default via 10.0.0.1 dev eth0 initcwnd 4` -> {destination, device, initcwnd}.
pub fn parse_routes(text: &str) -> Vec<Route> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).copied();
            Route {
                route: line.trim().to_string(),
                destination: words.first().copied().unwrap_or_default().to_string(),
                device: after("dev").map(str::to_string),
                initcwnd: after("initcwnd").and_then(|n| n.parse::<u32>().ok()).map(u64::from),
            }
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
        assert_eq!(routes[0].initcwnd, Some(4));
        assert_eq!(routes[0].device.as_deref(), Some("eth0"));
        assert_eq!(routes[1].initcwnd, None);
    }

    #[test]
    fn kernel_values_parse_as_the_kernel_writes_them() {
        assert_eq!(selected_mode("always [madvise] never").unwrap(), "madvise");
        assert!(selected_mode("madvise").is_err());
        assert_eq!(meminfo_kb("MemTotal: 1 kB\nSwapTotal:     2097148 kB\n", "SwapTotal:").unwrap(), 2097148);
        let mounts =
            "overlay / overlay rw 0 0\n/dev/sda1 /var/lib/clickhouse ext4 rw 0 0\n/dev/sdb /var/lib/c xfs rw 0 0\n";
        assert_eq!(filesystem_of("/var/lib/clickhouse/", mounts).as_deref(), Some("ext4"));
        assert_eq!(filesystem_of("/var/lib/clickhouse/", "overlay / overlay rw 0 0\n").as_deref(), Some("overlay"));
        assert_eq!(kernel_version_number("5.6.12-arch1").unwrap(), 5_006_012);
        assert_eq!(kernel_version_number("6.18.44-fc-v669").unwrap(), 6_018_044);
        assert!(kernel_version_number("unknown").is_err());
    }
}
