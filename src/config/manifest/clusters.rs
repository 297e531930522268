//! What the operator generates for the installation's clusters: `<zookeeper>` and
//! `<distributed_ddl>`, `<remote_servers>` from each cluster's layout (with its secret), the
//! first host's `<macros>`.

use super::*;

/// `<zookeeper>` (each node's host and port, the session settings) and the
/// `<distributed_ddl>` path the operator gives every installation.
pub(super) fn zookeeper_fragment(zookeeper: &Yaml, name: &str, root: Origin) -> Element {
    let mut children = Vec::new();
    if let Some(Yaml::Sequence(nodes, _)) = zookeeper.get("nodes") {
        for node in nodes {
            let mut parts = Vec::new();
            for (key, default) in [("host", None), ("port", Some("2181")), ("secure", None)] {
                match (node.get(key), default) {
                    (Some(Yaml::Scalar(value, at)), _) => parts.push(leaf(key, value, *at)),
                    (_, Some(default)) => parts.push(leaf(key, default, node.origin())),
                    _ => {}
                }
            }
            children.push(element("node", node.origin(), parts));
        }
    }
    for (key, tag) in [
        ("session_timeout_ms", "session_timeout_ms"),
        ("operation_timeout_ms", "operation_timeout_ms"),
        ("root", "root"),
        ("identity", "identity"),
    ] {
        if let Some(Yaml::Scalar(value, at)) = zookeeper.get(key) {
            children.push(leaf(tag, value, *at));
        }
    }
    let ddl = element("distributed_ddl", root, vec![leaf("path", &format!("/clickhouse/{name}/task_queue/ddl"), root)]);
    fragment(root, vec![element("zookeeper", zookeeper.origin(), children), ddl])
}

/// A cluster's shards and replicas: from `layout.shards`/`replicas` when listed, else
/// `shardsCount` x `replicasCount` (1 each by default).
pub(super) fn layout(cluster: &Yaml) -> Vec<(Origin, Option<&Yaml>, usize)> {
    let layout = cluster.get("layout");
    let count = |node: Option<&Yaml>, key: &str| {
        node.and_then(|n| n.get(key)).and_then(Yaml::as_str).and_then(|c| c.parse::<usize>().ok())
    };
    let replicas_of = |shard: Option<&Yaml>| {
        count(shard, "replicasCount")
            .or_else(|| match shard.and_then(|s| s.get("replicas")) {
                Some(Yaml::Sequence(items, _)) => Some(items.len()),
                _ => None,
            })
            .or_else(|| count(layout, "replicasCount"))
            .unwrap_or(1)
            .clamp(1, MAX_HOSTS + 1)
    };
    match layout.and_then(|l| l.get("shards")) {
        Some(Yaml::Sequence(shards, _)) if !shards.is_empty() => {
            shards.iter().map(|s| (s.origin(), Some(s), replicas_of(Some(s)))).collect()
        }
        _ => {
            let shards = count(layout, "shardsCount").unwrap_or(1).clamp(1, MAX_HOSTS + 1);
            (0..shards).map(|_| (cluster.origin(), None, replicas_of(None))).collect()
        }
    }
}

/// When the clusters have more hosts than chaudit renders: where (the first cluster) and why.
pub(super) fn too_many_hosts(clusters: &[&Yaml]) -> Option<(Origin, String)> {
    let hosts: usize = clusters.iter().flat_map(|c| layout(c)).map(|(_, _, replicas)| replicas).sum();
    let first = clusters.first()?;
    (hosts > MAX_HOSTS)
        .then(|| (first.origin(), format!("the clusters have more than {MAX_HOSTS} hosts, more than chaudit renders")))
}

/// The host name the operator gives a replica's service (chi-NAME-CLUSTER-SHARD-REPLICA).
pub(super) fn host_name(installation: &str, cluster: &str, shard: usize, replica: usize) -> String {
    format!("chi-{installation}-{cluster}-{shard}-{replica}")
}

pub(super) fn cluster_name(cluster: &Yaml) -> (&str, Origin) {
    match cluster.get("name") {
        Some(Yaml::Scalar(name, at)) => (name, *at),
        _ => ("cluster", cluster.origin()),
    }
}

/// `<remote_servers>`: each cluster's shards and replicas on the native port.
pub(super) fn remote_servers(installation: &str, clusters: &[&Yaml], root: Origin, secrets: &Secrets) -> Element {
    let mut list = Vec::new();
    for cluster in clusters {
        let (name, at) = cluster_name(cluster);
        let mut children = Vec::new();
        if let Some(secret) = cluster.get("secret") {
            children.push(secrets.cluster_secret(secret));
        }
        for (s, (shard_at, shard, replicas)) in layout(cluster).into_iter().enumerate() {
            let internal = shard.and_then(|s| s.get("internalReplication")).and_then(Yaml::as_str).map_or(
                if replicas > 1 { "true" } else { "false" },
                |v| {
                    if v.eq_ignore_ascii_case("true") || v == "1" { "true" } else { "false" }
                },
            );
            let mut parts = vec![leaf("internal_replication", internal, shard_at)];
            for r in 0..replicas {
                let host = host_name(installation, name, s, r);
                parts.push(element(
                    "replica",
                    shard_at,
                    vec![leaf("host", &host, shard_at), leaf("port", "9000", shard_at)],
                ));
            }
            children.push(element("shard", shard_at, parts));
        }
        list.push(element(name, at, children));
    }
    fragment(root, vec![element("remote_servers", root, list)])
}

/// The variable the operator passes a cluster's generated or referenced secret in.
pub(super) const CLUSTER_SECRET_VARIABLE: &str = "CLICKHOUSE_INTERNODE_CLUSTER_SECRET";

impl Secrets<'_> {
    /// A cluster's `secret` as the operator renders it: its `value` in the config, else
    /// `from_env` of the variable the operator fills from a Secret, the one `valueFrom`
    /// names or the one it generates for `auto` (normalizer's appendClusterSecretEnvVar).
    fn cluster_secret(&self, secret: &Yaml) -> Element {
        let mut e = Element::new("secret", secret.origin());
        if let Some(Yaml::Scalar(value, at)) = secret.get("value") {
            e.children.push(Node::Text(Text::new(value.as_str(), false, *at)));
            return e;
        }
        let reference = secret.get("valueFrom").and_then(|v| v.get("secretKeyRef"));
        let auto =
            secret.get("auto").and_then(Yaml::as_str).is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
        let value = match reference {
            Some(reference) => {
                let name = reference.get("name").and_then(Yaml::as_str).unwrap_or_default();
                let key = reference.get("key").and_then(Yaml::as_str).unwrap_or_default();
                Some(
                    held_value(self.documents, "Secret", name, "stringData", key)
                        .map_or_else(|| format!("(Secret {name}, key {key})"), str::to_string),
                )
            }
            None => auto.then(|| "(a Secret the operator generates)".to_string()),
        };
        if let Some(value) = value {
            self.env.borrow_mut().push((CLUSTER_SECRET_VARIABLE.into(), value));
        }
        e.attributes.push(Attribute { name: "from_env".into(), value: CLUSTER_SECRET_VARIABLE.into() });
        e
    }
}

/// The first host's `<macros>`.
pub(super) fn macros(installation: &str, cluster: &Yaml, root: Origin) -> Element {
    let (name, at) = cluster_name(cluster);
    let children = vec![
        leaf("installation", installation, root),
        leaf("cluster", name, at),
        leaf("shard", "0", at),
        leaf("replica", &host_name(installation, name, 0, 0), at),
    ];
    fragment(root, vec![element("macros", root, children)])
}
