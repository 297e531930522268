//! The server config's coordination sections as Rust types: `<zookeeper>` (the Keeper or
//! ZooKeeper the server connects to, `config.zookeeper`), `<keeper_server>` (the ClickHouse
//! Keeper node it runs, `config.keeper_server`) and `<distributed_ddl>`
//! (`config.distributed_ddl`). Each is read as ClickHouse reads it: ZooKeeperArgs (every child
//! whose name starts with `node`), KeeperStateManager::parseServersConfiguration (every child of
//! `<raft_configuration>` whose name starts with `server`), DDLWorker (`<path>`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::typed::Location;
use crate::config::{Element, Origin};

/// `<zookeeper>`: the coordination service of the server's replicated tables and ON CLUSTER
/// statements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeeperClient {
    /// zookeeper, or keeper (its other name, read when there is no <zookeeper>)
    pub section: String,
    /// its <node> elements, in order
    pub nodes: Vec<KeeperNode>,
    /// the timeouts written in it (session_timeout_ms, operation_timeout_ms, connection_timeout_ms), each with its text
    pub timeouts: Vec<KeeperTimeout>,
    pub at: Location,
}

/// A `<node>` of `<zookeeper>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeeperNode {
    /// its <host>
    pub host: String,
    /// its <port> (2181 without one, as ClickHouse reads it)
    pub port: String,
    pub at: Location,
}

/// A timeout of `<zookeeper>`, as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeeperTimeout {
    /// session_timeout_ms, operation_timeout_ms or connection_timeout_ms
    pub name: String,
    /// its text
    pub value: String,
    pub at: Location,
}

/// `<keeper_server>`: the ClickHouse Keeper node this server (or clickhouse-keeper) runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeeperServer {
    /// its <server_id> (null without one)
    pub server_id: Option<String>,
    /// its <server_id> (the section without one)
    pub server_id_at: Location,
    /// the <server> elements of its <raft_configuration>, in order
    pub raft_servers: Vec<RaftServer>,
    pub at: Location,
}

/// A `<server>` of `<keeper_server><raft_configuration>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RaftServer {
    /// its <id>
    pub id: String,
    /// its <hostname>
    pub hostname: String,
    /// its <port>
    pub port: String,
    /// hostname:port, as Keeper compares them
    pub endpoint: String,
    /// the id of an earlier server with the same endpoint (empty when none)
    pub same_endpoint_as: String,
    /// the endpoint of an earlier server with the same id (empty when none, or when the endpoint is a duplicate already)
    pub same_id_as: String,
    /// with same_id_as, the <id> that made the two one: of the two, the one written later in the same file (a setting merged into a generated server), else this server's
    pub same_id_at: Location,
    pub at: Location,
}

/// `<distributed_ddl>`: where the ON CLUSTER statements' queue is in Keeper.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DistributedDdl {
    /// its <path> (null without one: the server's default, /clickhouse/task_queue/ddl)
    pub path: Option<String>,
    /// its <path> (the section without one)
    pub at: Location,
}

crate::fact_object!(KeeperClient { section, nodes, timeouts, at });
crate::fact_object!(KeeperNode { host, port, at });
crate::fact_object!(KeeperTimeout { name, value, at });
crate::fact_object!(KeeperServer { server_id, server_id_at, raft_servers, at });
crate::fact_object!(RaftServer { id, hostname, port, endpoint, same_endpoint_as, same_id_as, same_id_at, at });
crate::fact_object!(DistributedDdl { path, at });

const TIMEOUTS: [&str; 3] = ["session_timeout_ms", "operation_timeout_ms", "connection_timeout_ms"];

fn text(e: &Element, name: &str) -> Option<String> {
    e.child(name).map(|c| c.value().trim().to_string())
}

/// `<zookeeper>` (the first, as ClickHouse reads it), else `<keeper>` (getZooKeeperConfigName:
/// its other name); null without either.
pub fn zookeeper(root: &Element, at: &dyn Fn(Origin) -> Location) -> Option<KeeperClient> {
    let section = root.child("zookeeper").or_else(|| root.child("keeper"))?;
    let nodes = section
        .elements()
        .filter(|e| e.name.starts_with("node"))
        .map(|n| KeeperNode {
            host: text(n, "host").unwrap_or_default(),
            port: text(n, "port").unwrap_or_else(|| "2181".to_string()),
            at: at(n.origin),
        })
        .collect();
    let timeouts = TIMEOUTS
        .iter()
        .filter_map(|name| section.child(name))
        .map(|e| KeeperTimeout { name: e.name.to_string(), value: e.value().trim().to_string(), at: at(e.origin) })
        .collect();
    Some(KeeperClient { section: section.name.to_string(), nodes, timeouts, at: at(section.origin) })
}

/// `<keeper_server>` (the first); null without one.
pub fn keeper_server(root: &Element, at: &dyn Fn(Origin) -> Location) -> Option<KeeperServer> {
    let section = root.child("keeper_server")?;
    let server_id = section.child("server_id");
    let mut raft_servers: Vec<RaftServer> = Vec::new();
    // each server's <id> (the server without one), to place a duplicate id where it was written
    let mut id_origins: Vec<Origin> = Vec::new();
    let servers = section.child("raft_configuration").into_iter().flat_map(|r| r.elements());
    for s in servers.filter(|e| e.name.starts_with("server")) {
        let (id, hostname, port) = (
            text(s, "id").unwrap_or_default(),
            text(s, "hostname").unwrap_or_default(),
            text(s, "port").unwrap_or_default(),
        );
        let endpoint = format!("{hostname}:{port}");
        // Keeper checks the endpoint first, then the id (parseServersConfiguration)
        let same_endpoint_as =
            raft_servers.iter().find(|r| r.endpoint == endpoint).map(|r| r.id.clone()).unwrap_or_default();
        let id_origin = s.child("id").map_or(s.origin, |e| e.origin);
        let earlier_same_id =
            if same_endpoint_as.is_empty() { raft_servers.iter().position(|r| same_number(&r.id, &id)) } else { None };
        let same_id_as = earlier_same_id.map(|i| raft_servers[i].endpoint.clone()).unwrap_or_default();
        let same_id_at = match earlier_same_id.map(|i| id_origins[i]) {
            Some(earlier) if earlier.file == id_origin.file && earlier.offset > id_origin.offset => at(earlier),
            _ => at(id_origin),
        };
        id_origins.push(id_origin);
        raft_servers.push(RaftServer {
            id,
            hostname,
            port,
            endpoint,
            same_endpoint_as,
            same_id_as,
            same_id_at,
            at: at(s.origin),
        });
    }
    Some(KeeperServer {
        server_id: server_id.map(|e| e.value().trim().to_string()),
        server_id_at: at(server_id.map_or(section.origin, |e| e.origin)),
        raft_servers,
        at: at(section.origin),
    })
}

/// Whether two ids are one number (Keeper reads them with getInt: `01` is `1`), or one text
/// when either is not a number.
fn same_number(a: &str, b: &str) -> bool {
    match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `<distributed_ddl>` (the first); null without one.
pub fn distributed_ddl(root: &Element, at: &dyn Fn(Origin) -> Location) -> Option<DistributedDdl> {
    let section = root.child("distributed_ddl")?;
    let path = section.child("path");
    Some(DistributedDdl {
        path: path.map(|p| p.value().trim().to_string()),
        at: at(path.map_or(section.origin, |p| p.origin)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DefaultInclude, LoadOptions, MemoryFs, load_with};

    /// The sections of `xml` (a main config, loaded from memory) as the facts read them.
    fn read(xml: &str) -> (Option<KeeperClient>, Option<KeeperServer>, Option<DistributedDdl>) {
        let mut memory = MemoryFs::default();
        memory.insert("/etc/ch/config.xml", xml);
        let options = LoadOptions {
            default_include_from: DefaultInclude::None,
            env: Default::default(),
            env_origin: None,
            roots: Default::default(),
            base: None,
        };
        let loaded = load_with(&memory, std::path::Path::new("/etc/ch/config.xml"), &options).unwrap();
        let root = &loaded.server.root;
        let at = |o: Origin| Location(format!("{}", o.offset));
        (zookeeper(root, &at), keeper_server(root, &at), distributed_ddl(root, &at))
    }

    #[test]
    fn raft_servers_are_compared_as_keeper_compares_them() {
        let (_, keeper, _) = read(
            "<clickhouse><keeper_server><server_id>1</server_id><raft_configuration>\
             <server><id>1</id><hostname>k1</hostname><port>9234</port></server>\
             <server><id>01</id><hostname>k2</hostname><port>9234</port></server>\
             <server><id>3</id><hostname>k2</hostname><port>9234</port></server>\
             <server><id>1</id><hostname>k2</hostname><port>9234</port></server>\
             <server><id>4</id><hostname>k1.example.com</hostname><port>9234</port></server>\
             <secure>false</secure>\
             </raft_configuration></keeper_server></clickhouse>",
        );
        let keeper = keeper.unwrap();
        assert_eq!(keeper.server_id.as_deref(), Some("1"));
        let seen: Vec<(&str, &str, &str)> = keeper
            .raft_servers
            .iter()
            .map(|s| (s.endpoint.as_str(), s.same_endpoint_as.as_str(), s.same_id_as.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("k1:9234", "", ""),
                // `01` is the number 1, as Keeper's getInt reads it
                ("k2:9234", "", "k1:9234"),
                ("k2:9234", "01", ""),
                // the endpoint is checked first: one duplicate reported, as Keeper throws one
                ("k2:9234", "01", ""),
                // another name of a host is another endpoint
                ("k1.example.com:9234", "", ""),
            ]
        );
    }

    #[test]
    fn the_keeper_sections_as_the_server_reads_them() {
        let (client, keeper, ddl) = read(
            "<clickhouse><keeper><node><host>k1</host></node><node index=\"2\"><host>k2</host><port>9181</port></node>\
             <session_timeout_ms> -1 </session_timeout_ms><root>/ch</root></keeper>\
             <distributed_ddl><pool_size>2</pool_size></distributed_ddl></clickhouse>",
        );
        let client = client.unwrap();
        assert_eq!(client.section, "keeper");
        let nodes: Vec<(&str, &str)> = client.nodes.iter().map(|n| (n.host.as_str(), n.port.as_str())).collect();
        assert_eq!(nodes, [("k1", "2181"), ("k2", "9181")]);
        let timeouts: Vec<(&str, &str)> = client.timeouts.iter().map(|t| (t.name.as_str(), t.value.as_str())).collect();
        assert_eq!(timeouts, [("session_timeout_ms", "-1")]);
        assert!(keeper.is_none());
        assert_eq!(ddl.unwrap().path, None);
        // <zookeeper> wins over <keeper>
        let (client, _, _) = read("<clickhouse><keeper><node><host>a</host></node></keeper><zookeeper/></clickhouse>");
        assert_eq!(client.unwrap().section, "zookeeper");
    }
}
