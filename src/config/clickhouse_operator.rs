//! Kubernetes manifests of ClickHouse's own operator (`clickhouse.com/v1alpha1`,
//! `kind: ClickHouseCluster`) read as the files it writes for its first host (shard 0,
//! replica 0), as its config generator (internal/controller/clickhouse/config.go and
//! templates/*.yaml.tmpl) writes them:
//!
//! - `config.yaml`, the main config (`CLICKHOUSE_CONFIG` points the server at it): path,
//!   logger from `spec.settings.logger`, macros, the Keeper nodes of `keeperClusterRef`,
//!   `remote_servers.default` with every host and the cluster secret, distributed DDL,
//!   `user_directories` (users.yaml and a replicated storage), openSSL when TLS is on;
//! - `config.d/00-logs-tables.yaml` and `config.d/00-network.yaml` (listen `::`, interserver
//!   credentials, the protocols, the stock ports removed);
//! - `users.yaml`: `default` (no password unless `defaultUserPassword` names one) and the
//!   operator's own user, both with `GRANT ALL ON *.*`;
//! - `spec.settings.extraConfig` as `config.d/99-extra-config.yaml` and `extraUsersConfig` as
//!   `users.d/99-extra-users-config.yaml`, every element at its manifest line.
//!
//! The operator's generated secrets (interserver password, cluster secret, Keeper identity,
//! its own user's password) are environment variables of the pod: stand-ins here. Not
//! rendered: the image's own config.d files, `podTemplate`/`containerTemplate` environment.

use super::error::{ConfigError, Pointer, Result};
use super::files;
use super::manifest::{MAX_DOCUMENTS, MAX_HOSTS, Rendered, held_value, stand_in};
use super::source::{FileId, Origin, SourceFile, SourceMap};
use super::tree::Element;
use crate::spanned_yaml::{Yaml, read_documents};

pub const KIND: &str = "ClickHouseCluster";

/// The variables the operator's pod gets from the Secret it generates
/// (`secretsToEnvMapping`), with stand-in values.
const GENERATED_ENV: [&str; 3] =
    ["CLICKHOUSE_INTERSERVER_PASSWORD", "CLICKHOUSE_KEEPER_IDENTITY", "CLICKHOUSE_CLUSTER_SECRET"];
const DEFAULT_PASSWORD_ENV: &str = "CLICKHOUSE_DEFAULT_USER_PASSWORD";

/// The cluster in a manifest file, or `None` when no document is one.
pub fn render(sources: &mut SourceMap, file: FileId) -> Result<Option<Rendered>> {
    let manifest = sources.file(file);
    let source = SourceFile::new(manifest.path.clone(), manifest.display.clone(), manifest.text().to_string());
    let fail =
        |origin: Origin, message: String| ConfigError::syntax(Pointer::in_file(&source, origin.offset, 1), message);
    let documents = read_documents(&source.text(), file, MAX_DOCUMENTS).map_err(|(o, m)| fail(o, m))?;
    let of_kind =
        |kind: &'static str| documents.iter().filter(move |d| d.get("kind").and_then(Yaml::as_str) == Some(kind));
    let Some(cluster) = of_kind(KIND).next() else { return Ok(None) };
    let spec = cluster.get("spec");
    let field = |path: &[&str]| path.iter().try_fold(spec?, |node, key| node.get(key));
    let text = |path: &[&str]| field(path).and_then(Yaml::as_str);
    let count = |path: &[&str], default: u64| -> Result<u64> {
        match field(path) {
            None => Ok(default),
            Some(node) => node
                .as_str()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| fail(node.origin(), format!("`{}` is not a number", path.join(".")))),
        }
    };
    let (shards, replicas) = (count(&["shards"], 1)?, count(&["replicas"], 3)?);
    if shards.saturating_mul(replicas) > MAX_HOSTS as u64 {
        let at = field(&["shards"]).or(field(&["replicas"])).map_or(cluster.origin(), Yaml::origin);
        return Err(fail(at, format!("the cluster has more than {MAX_HOSTS} hosts, more than chaudit renders")));
    }
    let metadata = |document: &Yaml, key: &str| {
        document.get("metadata").and_then(|m| m.get(key)).and_then(Yaml::as_str).map(str::to_string)
    };
    let name = metadata(cluster, "name").unwrap_or_else(|| "cluster".into()).replace('.', "-");
    let namespace = metadata(cluster, "namespace").unwrap_or_else(|| "default".into());
    let domain = text(&["clusterDomain"]).unwrap_or("cluster.local");
    let keeper_name = text(&["keeperClusterRef", "name"]).unwrap_or("keeper").replace('.', "-");
    let keeper = of_kind("KeeperCluster").find(|k| metadata(k, "name").as_deref() == Some(keeper_name.as_str()));
    let keeper_replicas =
        keeper.and_then(|k| k.get("spec")?.get("replicas")?.as_str()?.parse::<u64>().ok()).unwrap_or(3).min(15);
    let tls = |key: &str| text(&["settings", "tls", key]) == Some("true");
    let (tls_enabled, tls_required) = (tls("enabled"), tls("enabled") && tls("required"));

    let host = |set: &str, service: &str| format!("{set}-0.{service}.{namespace}.svc.{domain}");
    let set = format!("{name}-clickhouse");
    let hosts: Vec<Vec<String>> = (0..shards)
        .map(|s| (0..replicas).map(|r| host(&format!("{set}-{s}-{r}"), &format!("{set}-headless"))).collect())
        .collect();
    let keeper_set = format!("{keeper_name}-keeper");
    let keepers: Vec<String> =
        (0..keeper_replicas).map(|i| host(&format!("{keeper_set}-{i}"), &format!("{keeper_set}-headless"))).collect();

    let logger = |key: &str, default: &str| text(&["settings", "logger", key]).unwrap_or(default).to_string();
    let generated = [
        ("config.yaml", main_config(&logger, &hosts, &keepers, tls_enabled)),
        ("config.d/00-logs-tables.yaml", "query_log:\npart_log:\ntext_log:\n".to_string()),
        ("config.d/00-network.yaml", network(tls_enabled, tls_required)),
    ];
    let password = field(&["settings", "defaultUserPassword"]);
    let password_type = password.and_then(|p| p.get("passwordType")).and_then(Yaml::as_str).unwrap_or("password");
    let users_file = ("users.yaml", users(password.map(|_| password_type)));

    let mut parse = |(path, text): (&str, String)| -> Result<Element> {
        let id = sources.add(format!("(clickhouse-operator)/{path}").into(), text);
        files::parse(sources.file(id), id)
    };
    let root = Origin { file, offset: 0 };
    let convert = |node: &Yaml| super::yaml::convert(node.clone(), node.origin()).map_err(|(o, m)| fail(o, m));
    let mut server_fragments = generated.into_iter().map(&mut parse).collect::<Result<Vec<_>>>()?;
    let mut users_fragments = vec![parse(users_file)?];
    if let Some(extra) = field(&["settings", "extraConfig"]) {
        server_fragments.push(convert(extra)?);
    }
    if let Some(extra) = field(&["settings", "extraUsersConfig"]) {
        users_fragments.push(convert(extra)?);
    }
    let mut server = Element::new("clickhouse", root);
    super::merge::merge_fragments(&mut server, server_fragments, sources)?;
    let mut users = Element::new("clickhouse", root);
    super::merge::merge_fragments(&mut users, users_fragments, sources)?;

    let mut env: Vec<(String, String)> =
        GENERATED_ENV.iter().map(|v| (v.to_string(), format!("(generated by the operator: {v})"))).collect();
    if let Some(password) = password {
        env.push((DEFAULT_PASSWORD_ENV.into(), secret_value(&documents, password, password_type)));
    }
    // its fixes are made in its own terms (extra_config.rs)
    let installation = Some(super::manifest_patch::Installation {
        kind: KIND.to_string(),
        name: metadata(cluster, "name").unwrap_or_else(|| "cluster".into()),
        document: cluster.clone(),
    });
    Ok(Some(Rendered { server, users, env, installation }))
}

/// The value `defaultUserPassword` selects: the Secret's or ConfigMap's data when the
/// manifest holds it, else a stand-in (a well-formed hash of `password_type`).
fn secret_value(documents: &[Yaml], selector: &Yaml, password_type: &str) -> String {
    for (key, kind, data) in [("secret", "Secret", "stringData"), ("configMap", "ConfigMap", "data")] {
        let Some(reference) = selector.get(key) else { continue };
        let name = reference.get("name").and_then(Yaml::as_str).unwrap_or_default();
        let item = reference.get("key").and_then(Yaml::as_str).unwrap_or_default();
        let held = held_value(documents, kind, name, data, item);
        return held.map_or_else(|| stand_in(password_type, format!("({kind} {name}, key {item})")), str::to_string);
    }
    "(no source)".into()
}

/// A YAML scalar, quoted (names and paths from the manifest go into generated YAML).
fn quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// templates/base.yaml.tmpl for the first host.
fn main_config(logger: &dyn Fn(&str, &str) -> String, hosts: &[Vec<String>], keepers: &[String], tls: bool) -> String {
    let mut out = String::from("path: /var/lib/clickhouse/\nlogger:\n  console: true\n");
    out += &format!("  level: {}\n", quoted(&logger("level", "trace")));
    if logger("jsonLogs", "false") == "true" {
        out += "  formatting:\n    type: json\n";
    }
    if logger("logToFile", "true") == "true" {
        out += "  log: /var/log/clickhouse-server/clickhouse-server.log\n";
        out += "  errorlog: /var/log/clickhouse-server/clickhouse-server.err.log\n";
    }
    out += &format!("  size: {}\n  count: {}\n", quoted(&logger("size", "1000M")), quoted(&logger("count", "50")));
    out += "macros:\n  cluster: default\n  shard: 0\n  replica: 0\nzookeeper:\n  nodes:\n";
    for keeper in keepers {
        out += &format!("    - host: {}\n      port: {}\n", quoted(keeper), if tls { 9281 } else { 9181 });
        if tls {
            out += "      secure: 1\n";
        }
    }
    out += "  identity:\n    '@from_env': CLICKHOUSE_KEEPER_IDENTITY\n";
    out += "remote_servers:\n  default:\n    secret:\n      '@from_env': CLICKHOUSE_CLUSTER_SECRET\n    shard:\n";
    for shard in hosts {
        out += "      - internal_replication: true\n        replica:\n";
        for host in shard {
            out += &format!("          - host: {}\n            port: 9001\n", quoted(host));
        }
    }
    out += "distributed_ddl:\n  path: /clickhouse/task_queue/ddl\n  profile: default\n";
    out += "user_directories:\n  users_xml:\n    path: users.yaml\n  replicated:\n    zookeeper_path: /clickhouse/access\n";
    out += "user_defined_zookeeper_path: /clickhouse/user_defined\n";
    if tls {
        out += "openSSL:\n";
        for side in ["server", "client"] {
            out += &format!(
                "  {side}:\n    certificateFile: /etc/clickhouse-server/tls/clickhouse-server.crt\n    \
                 privateKeyFile: /etc/clickhouse-server/tls/clickhouse-server.key\n    \
                 caConfig: /etc/clickhouse-server/tls/ca-bundle.crt\n    verificationMode: relaxed\n    \
                 disableProtocols: sslv2,sslv3\n    preferServerCiphers: true\n"
            );
        }
    }
    out + "display_secrets_in_show_and_select: true\n"
}

/// templates/network.yaml.tmpl with buildProtocols' ports (interserver and management have
/// their own elements).
fn network(tls: bool, tls_required: bool) -> String {
    let mut protocols = vec![("prometheus", "prometheus", 9363, "", "prometheus")];
    if !tls_required {
        protocols.push(("http", "http", 8123, "", "http"));
        protocols.push(("tcp", "tcp", 9000, "", "native protocol"));
    }
    if tls {
        protocols.push(("http-secure", "tls", 8443, "http", "https"));
        protocols.push(("tcp-secure", "tls", 9440, "tcp", "secure native protocol"));
    }
    protocols.sort_by_key(|p| p.0);
    let mut out = String::from(
        "listen_host: '::'\ninterserver_http_port: 9009\ninterserver_http_credentials:\n  user: interserver\n  \
         password:\n    - '@from_env': CLICKHOUSE_INTERSERVER_PASSWORD\n  allow_empty: false\ntcp_port: 9001\nprotocols:\n",
    );
    for (name, kind, port, implementation, description) in protocols {
        out += &format!("  {name}:\n    type: {kind}\n");
        if !implementation.is_empty() {
            out += &format!("    impl: {implementation}\n");
        }
        out += &format!("    port: {port}\n    description: {description}\n");
    }
    for port in [
        "tcp_port_secure",
        "http_port",
        "https_port",
        "mysql_port",
        "postgresql_port",
        "tcp_with_proxy_port",
        "tcp_ssh_port",
    ] {
        out += &format!("{port}:\n  '@remove': '1'\n");
    }
    out
}

/// templates/users.yaml.tmpl: `password_type` is the default user's `passwordType` when the
/// manifest gives it a password.
fn users(password_type: Option<&str>) -> String {
    let authentication = match password_type {
        Some(kind) => format!("    {}:\n      - '@from_env': {DEFAULT_PASSWORD_ENV}\n", quoted(kind)),
        None => "    no_password:\n".into(),
    };
    format!(
        "users:\n  default:\n    profile: default\n    quota: default\n{authentication}    grants:\n      \
         - query: 'GRANT ALL ON *.*'\n  operator:\n    profile: default\n    quota: default\n    \
         password_sha256_hex: '{}'\n    grants:\n      - query: 'GRANT ALL ON *.*'\n\
         profiles:\n  default:\n    log_queries: 1\nquotas:\n  default:\n",
        "0".repeat(64)
    )
}
