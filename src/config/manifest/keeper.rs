//! A ClickHouseKeeperInstallation read as the Keeper config the Altinity operator writes for
//! its first Keeper host (first cluster, replica 0), as its CHK generator
//! (pkg/model/chk/config/generator.go, files_generator*.go) and normalizer
//! (pkg/model/chk/normalizer/normalizer-host.go) write it: the bundled files of
//! config/chk/keeper_config.d, then `<raft_configuration>` (one `<server>` per host of every
//! cluster), `spec.configuration.settings` over it, the host's `<server_id>`, then
//! `spec.configuration.files`.

use super::*;

/// The files the operator puts on every Keeper host (its config/chk/keeper_config.d), bundled
/// from the operator's repository: they come before the generated ones.
pub const KEEPER_OPERATOR_FILES: [(&str, &str); 3] = [
    (
        "keeper_config.d/01-keeper-01-default-config.xml",
        include_str!("../../../data/altinity-operator/keeper_config.d/01-keeper-01-default-config.xml"),
    ),
    (
        "keeper_config.d/01-keeper-02-readiness.xml",
        include_str!("../../../data/altinity-operator/keeper_config.d/01-keeper-02-readiness.xml"),
    ),
    (
        "keeper_config.d/01-keeper-03-enable-reconfig.xml",
        include_str!("../../../data/altinity-operator/keeper_config.d/01-keeper-03-enable-reconfig.xml"),
    ),
];

/// The raft port of a host the settings give none (`KpDefaultRaftPortNumber`, type_host.go).
const DEFAULT_RAFT_PORT: &str = "9444";

/// The setting the operator reads a host's raft port from (`Settings.GetRaftPort`).
const RAFT_PORT_SETTING: &str = "keeper_server/raft_configuration/server/port";

/// The Keeper installation of a manifest over the operator's keeper_config.d files, or `None`
/// when no document is one. The users tree is empty: the operator writes no users for Keeper.
pub fn render_keeper(sources: &mut SourceMap, file: FileId, defaults: Vec<Element>) -> Result<Option<Rendered>> {
    let manifest = sources.file(file);
    let source = SourceFile::new(manifest.path.clone(), manifest.display.clone(), manifest.text().to_string());
    let source = &source;
    let fail =
        |origin: Origin, message: String| ConfigError::syntax(Pointer::in_file(source, origin.offset, 1), message);
    let documents = read_documents(&source.text(), file, MAX_DOCUMENTS).map_err(|(o, m)| fail(o, m))?;
    let Some(installation) = documents.iter().find(|d| d.get("kind").and_then(Yaml::as_str) == Some(KEEPER_KIND))
    else {
        return Ok(None);
    };
    let root = Origin { file, offset: 0 };
    let name = installation.get("metadata").and_then(|m| m.get("name")).and_then(Yaml::as_str).unwrap_or("chk");
    let configuration = installation.get("spec").and_then(|s| s.get("configuration"));
    let section = |key: &str| configuration.and_then(|c| c.get(key));
    let convert = |document: Yaml| crate::config::yaml::convert(document, root).map_err(|(o, m)| fail(o, m));
    let secrets = Secrets { documents: &documents, env: std::cell::RefCell::new(Vec::new()) };
    let clusters: Vec<&Yaml> = match section("clusters") {
        Some(Yaml::Sequence(items, _)) => items.iter().collect(),
        _ => Vec::new(),
    };
    if let Some((at, message)) = too_many_hosts(&clusters) {
        return Err(fail(at, message));
    }
    let settings = section("settings");
    let mut fragments = defaults;
    fragments.push(raft_configuration(name, &clusters, settings, installation.origin()));
    if let Some(settings) = settings {
        fragments.push(convert(paths("settings", settings, &secrets))?);
    }
    // the host's own file: its cluster's settings over the global ones, then its server id
    // (the first host's replica index, 0)
    if let Some(settings) = clusters.first().and_then(|c| c.get("settings")) {
        fragments.push(convert(paths("settings", settings, &secrets))?);
    }
    let id_at = clusters.first().map_or(installation.origin(), |c| c.origin());
    fragments.push(fragment(root, vec![element("keeper_server", id_at, vec![leaf("server_id", "0", id_at)])]));
    let host_files = clusters.first().and_then(|c| c.get("files"));
    for (place, given) in inline_files(sources, source, section("files"), host_files)? {
        // Keeper reads no users config: only the server-side files count
        if matches!(place, Place::Server) {
            fragments.push(given);
        }
    }
    let mut server = Element::new("clickhouse", root);
    crate::config::merge::merge_fragments(&mut server, fragments, sources)?;
    let installation = crate::config::manifest_patch::Installation {
        kind: KEEPER_KIND.to_string(),
        name: name.to_string(),
        document: installation.clone(),
    };
    Ok(Some(Rendered {
        server,
        users: Element::new("clickhouse", root),
        env: secrets.env.into_inner(),
        installation: Some(installation),
    }))
}

fn raft_port(settings: Option<&Yaml>) -> Option<&str> {
    settings.and_then(|s| s.get(RAFT_PORT_SETTING)).and_then(Yaml::as_str)
}

/// `<keeper_server><raft_configuration>` as getRaftConfig writes it: one `<server>` per host of
/// every cluster, its id the host's replica index, its hostname the host's service
/// (`chk-NAME-CLUSTER-SHARD-REPLICA`), its port the raft port of the settings or 9444. Each
/// server keeps the line of the layout that made it.
fn raft_configuration(name: &str, clusters: &[&Yaml], settings: Option<&Yaml>, at: Origin) -> Element {
    // the installation's settings are the fallback the normalizer reads for every host
    // (hostEnsurePortValuesFromSettings); a host's own port settings are not rendered
    let port = raft_port(settings).unwrap_or(DEFAULT_RAFT_PORT);
    let mut servers = Vec::new();
    for cluster in clusters {
        let (cluster_name, _) = cluster_name(cluster);
        let made_at = cluster.get("layout").map_or(cluster.origin(), |l| l.get("replicasCount").unwrap_or(l).origin());
        for (shard, (_, _, replicas)) in layout(cluster).into_iter().enumerate() {
            for replica in 0..replicas {
                let id = replica.to_string();
                let host = format!("chk-{name}-{cluster_name}-{shard}-{replica}");
                servers.push(element(
                    "server",
                    made_at,
                    vec![leaf("id", &id, made_at), leaf("hostname", &host, made_at), leaf("port", port, made_at)],
                ));
            }
        }
    }
    let raft = element("raft_configuration", at, servers);
    fragment(at, vec![element("keeper_server", at, vec![raft])])
}
