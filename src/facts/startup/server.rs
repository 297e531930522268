//! What stops the server in the server config: settings and ports, listen hosts, system
//! logs, the log level, clusters.

use super::*;

/// Ports the server parses as integers at start.
const PORTS: &[&str] = &[
    "http_port",
    "https_port",
    "tcp_port",
    "tcp_port_secure",
    "interserver_http_port",
    "interserver_https_port",
    "mysql_port",
    "postgresql_port",
    "grpc_port",
    "prometheus_port",
];

/// Parameters a system log section cannot have beside its own `<engine>`
/// (SystemLog's getDefaultEngine / the engine check of each *_log section).
const LOG_ENGINE_EXCLUSIVE: &[(&str, &str)] = &[
    ("partition_by", "PARTITION BY"),
    ("ttl", "TTL"),
    ("order_by", "ORDER BY"),
    ("storage_policy", "STORAGE POLICY"),
    ("settings", "SETTINGS"),
];

/// Server settings, MergeTree settings, ports, interserver and listen hosts (Server::main).
pub(super) fn server(root: &Element, out: &mut Vec<StartProblem>) {
    let catalog = catalog::builtin();
    for e in root.elements().filter(|e| !e.has_element_children()) {
        if let Some(kind) = catalog.server.get(e.name.as_str()).and_then(|s| s.kind)
            && !PORTS.contains(&e.name.as_str())
            && !parses_as(kind, &e.value())
        {
            let reason = format!(
                "Cannot parse input: while parsing setting '{}' value '{}' ({kind}) \
                 (CANNOT_PARSE_INPUT_ASSERTION_FAILED, code 27)",
                e.name,
                e.value()
            );
            problem(out, StartCheck::ServerSettingUnparsable, e.name.as_str(), reason, e.value_origin());
        }
    }
    for merge_tree in root.children_named("merge_tree") {
        for s in merge_tree.elements() {
            match catalog.merge_tree.get(s.name.as_str()) {
                None => {
                    let reason =
                        format!("Unknown setting '{}': in MergeTree config (UNKNOWN_SETTING, code 115)", s.name);
                    problem(out, StartCheck::MergeTreeUnknownSetting, s.name.as_str(), reason, s.origin);
                }
                Some(setting) => {
                    let kind = setting.kind.unwrap_or_default();
                    if !parses_as(kind, &s.value()) {
                        let reason = format!(
                            "Cannot parse input: value '{}' of MergeTree setting '{}' ({kind}) \
                             (CANNOT_PARSE_INPUT_ASSERTION_FAILED, code 27)",
                            s.value(),
                            s.name
                        );
                        problem(out, StartCheck::MergeTreeSettingUnparsable, s.name.as_str(), reason, s.value_origin());
                    }
                }
            }
        }
    }
    for port in PORTS.iter().filter_map(|p| root.child(p)) {
        let value = port.value();
        let reason = match value.parse::<i64>() {
            Err(_) => format!("Syntax error: Not a valid integer: '{value}' (<{}>)", port.name),
            Ok(n) if !(0..=65535).contains(&n) => {
                format!("Out of range '{}': {value} (ARGUMENT_OUT_OF_BOUND, code 69)", port.name)
            }
            Ok(_) => continue,
        };
        problem(out, StartCheck::PortInvalid, port.name.as_str(), reason, port.value_origin());
    }
    if let (Some(_), Some(https)) = (root.child("interserver_http_port"), root.child("interserver_https_port")) {
        let reason =
            "Both http and https interserver ports are specified (EXCESSIVE_ELEMENT_IN_CONFIG, code 138)".to_string();
        problem(out, StartCheck::InterserverBothPorts, "interserver_https_port", reason, https.origin);
    }
    listen_hosts(root, out);
}

/// Listen hosts: a wildcard bound beside an address it covers fails the second bind
/// (Address already in use) unless listen_try or listen_reuse_port; a dotted quad that is no
/// IPv4 address fails to resolve.
fn listen_hosts(root: &Element, out: &mut Vec<StartProblem>) {
    let hosts: Vec<&Element> = root.children_named("listen_host").collect();
    for h in &hosts {
        let v = h.value();
        if v.bytes().all(|b| b.is_ascii_digit() || b == b'.') && v.contains('.') && v.parse::<Ipv4Addr>().is_err() {
            let reason = format!("Listen [{v}] failed: DNS error while resolving: {v} (NETWORK_ERROR, code 210)");
            problem(out, StartCheck::ListenHostInvalid, v, reason, h.value_origin());
        }
    }
    let tolerant =
        ["listen_try", "listen_reuse_port"].iter().any(|s| root.child(s).is_some_and(|e| is_true(&e.value())));
    if tolerant {
        return;
    }
    // `::` binds IPv4 too (dual stack): it covers every other host; 0.0.0.0 covers IPv4 ones
    let covers = |wildcard: &str, other: &str| match wildcard {
        "::" => true,
        "0.0.0.0" => other.parse::<Ipv4Addr>().is_ok(),
        _ => false,
    };
    for (i, wildcard) in hosts.iter().enumerate() {
        for (j, other) in hosts.iter().enumerate() {
            let (w, o) = (wildcard.value(), other.value());
            if i != j && w != o && covers(&w, &o) {
                let (first, second) = if i < j { (&w, *other) } else { (&o, *wildcard) };
                let second_value = second.value();
                let reason = format!(
                    "Listen [{second_value}] failed: Address already in use (NETWORK_ERROR, code 210): \
                     listen_host {first} already binds it, and neither listen_try nor listen_reuse_port is set"
                );
                problem(out, StartCheck::ListenHostOverlap, second_value, reason, second.value_origin());
                return;
            }
        }
    }
}

/// A system log section with its own `<engine>` takes no engine parameters beside it.
pub(super) fn system_logs(root: &Element, out: &mut Vec<StartProblem>) {
    for log in root.elements().filter(|e| e.name.ends_with("_log") && e.child("engine").is_some()) {
        if let Some((tag, clause)) = LOG_ENGINE_EXCLUSIVE.iter().find(|(tag, _)| log.child(tag).is_some()) {
            let reason = format!(
                "If 'engine' is specified for system table, {clause} parameters should be specified directly \
                 inside 'engine' and '{tag}' setting doesn't make sense (BAD_ARGUMENTS, code 36)"
            );
            problem(
                out,
                StartCheck::SystemLogEngineWithParameters,
                log.name.as_str(),
                reason,
                log.child(tag).map_or(log.origin, |e| e.origin),
            );
        }
    }
}

/// The log levels Poco's Logger::parseLevel reads (any case), or a number from 1 to 9.
const LOG_LEVELS: &[&str] =
    &["none", "fatal", "critical", "error", "warning", "notice", "information", "debug", "trace", "test"];

/// `<logger><level>` and `<text_log><level>` name a log level (Poco's Logger::parseLevel:
/// the server stops on anything else, an empty level included).
pub(super) fn log_levels(root: &Element, out: &mut Vec<StartProblem>) {
    for section in ["logger", "text_log"] {
        let Some(level) = root.child(section).and_then(|s| s.child("level")) else { continue };
        let value = level.value();
        let value = value.trim();
        let known = LOG_LEVELS.iter().any(|l| l.eq_ignore_ascii_case(value))
            || value.parse::<u8>().is_ok_and(|n| (1..=9).contains(&n));
        if !known {
            let shown = if value.is_empty() { "(empty)".to_string() } else { value.to_string() };
            let reason = format!(
                "Invalid argument: Not a valid log level: <{section}><level> is {shown}; it takes none, fatal, \
                 critical, error, warning, notice, information, debug, trace or test"
            );
            problem(out, StartCheck::LogLevelInvalid, section, reason, level.origin);
        }
    }
}

/// Every replica of a cluster has a `<host>` (Cluster's constructor reads it with getString).
pub(super) fn clusters(root: &Element, out: &mut Vec<StartProblem>) {
    for cluster in model::clusters(root) {
        for (shard_number, shard) in cluster.shards.iter().enumerate() {
            for (number, replica) in shard.iter().enumerate().filter(|(_, r)| r.element.child("host").is_none()) {
                let reason = format!(
                    "Not found: remote_servers.{}...{}.host (CANNOT_LOAD_CONFIG, code 347)",
                    cluster.name, replica.element.name
                );
                let part = format!("shard {}/replica {}", shard_number + 1, number + 1);
                let at = replica.element.origin;
                problem_in(out, StartCheck::ClusterReplicaWithoutHost, cluster.name.as_str(), part, reason, at);
            }
        }
    }
    if let Some(servers) = root.child("remote_servers") {
        let default_port = root.child("tcp_port").is_some();
        for cluster in servers.elements().filter(|c| c.child("discovery").is_none()) {
            cluster_layout(cluster, default_port, out);
        }
    }
}

/// A cluster's shards, replicas and their elements as Cluster's constructor takes them: an
/// element it does not know, a cluster without shards, a shard without replicas, a replica
/// without a port when the server has no `<tcp_port>` to default to.
fn cluster_layout(cluster: &Element, default_port: bool, out: &mut Vec<StartProblem>) {
    let name = cluster.name.as_str();
    let mut refuse = |part: String, reason: String, at: Origin| {
        let reason = format!("{reason} (CANNOT_LOAD_CONFIG, code 347)");
        problem_in(out, StartCheck::ClusterDefinitionInvalid, name, part, reason, at);
    };
    let keys: Vec<&Element> =
        cluster.elements().filter(|e| e.name != "secret" && e.name != "allow_distributed_ddl_queries").collect();
    if keys.is_empty() {
        let reason = format!("No cluster elements (shard, node) specified in config at path remote_servers.{name}");
        refuse(String::new(), reason, cluster.origin);
    }
    let port = |replica: &Element, path: String| {
        (replica.child("port").is_none() && !default_port).then(|| {
            (
                format!("Port is not specified in cluster configuration: remote_servers.{name}.{path}.port"),
                replica.origin,
            )
        })
    };
    for key in keys {
        if key.name.starts_with("node") {
            if let Some((reason, at)) = port(key, key.name.to_string()) {
                refuse(key.name.to_string(), reason, at);
            }
        } else if key.name.starts_with("shard") {
            let mut replicas = 0;
            for element in key.elements() {
                let part = format!("{}/{}", key.name, element.name);
                if element.name.starts_with("replica") {
                    replicas += 1;
                    if let Some((reason, at)) = port(element, format!("{}.{}", key.name, element.name)) {
                        refuse(part, reason, at);
                    }
                } else if !element.name.starts_with("weight") && !element.name.starts_with("internal_replication") {
                    refuse(part, format!("Unknown element in config: {}", element.name), element.origin);
                }
            }
            if replicas == 0 {
                let reason =
                    format!("the shard remote_servers.{name}.{} has no <replica> (std::out_of_range)", key.name);
                refuse(key.name.to_string(), reason, key.origin);
            }
        } else {
            refuse(key.name.to_string(), format!("Unknown element in config: {}", key.name), key.origin);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SourceMap, xml};

    /// The parts cluster-definition-invalid reports on `remote_servers` (a server config's).
    fn refused(config: &str) -> Vec<String> {
        let mut sources = SourceMap::new("/".into());
        let id = sources.add("/config.xml".into(), config.into());
        let root = xml::parse(sources.file(id), id).unwrap();
        let mut out = Vec::new();
        clusters(&root, &mut out);
        out.into_iter()
            .filter(|p| p.check == StartCheck::ClusterDefinitionInvalid)
            .map(|p| format!("{}:{}", p.subject, p.part))
            .collect()
    }

    #[test]
    fn clusters_are_read_as_cluster_reads_them() {
        let replica = "<replica><host>h</host><port>9000</port></replica>";
        let sound = format!(
            "<clickhouse><remote_servers><a><secret>s</secret><shard><weight>1</weight>{replica}</shard><shard_2>{replica}</shard_2></a>\
             <b><node><host>h</host><port>9000</port></node></b><c><discovery><path>/x</path></discovery></c>\
             </remote_servers></clickhouse>"
        );
        assert_eq!(refused(&sound), Vec::<String>::new());
        let broken = format!(
            "<clickhouse><remote_servers><a><secret>s</secret></a><b><shard/><hsard>{replica}</hsard></b>\
             <c><shard><erplica/>{replica}</shard></c></remote_servers></clickhouse>"
        );
        assert_eq!(refused(&broken), ["a:", "b:shard", "b:hsard", "c:shard/erplica"]);
        let portless = "<remote_servers><a><shard><replica><host>h</host></replica></shard></a></remote_servers>";
        assert_eq!(refused(&format!("<clickhouse>{portless}</clickhouse>")), ["a:shard/replica"]);
        // the server's own <tcp_port> is a replica's default port
        assert!(refused(&format!("<clickhouse><tcp_port>9000</tcp_port>{portless}</clickhouse>")).is_empty());
    }
}
