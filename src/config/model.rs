//! Typed reads of a merged tree, with the same rules ClickHouse applies when it reads
//! them: clusters (Cluster.cpp), storage configuration, macros, settings profiles.
//! Every item keeps the element it came from, for findings' locations.

use super::tree::Element;

#[derive(Debug, Clone, PartialEq)]
pub struct Replica<'a> {
    pub host: String,
    pub port: Option<u16>,
    pub element: &'a Element,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cluster<'a> {
    pub name: String,
    /// Shards in order (`shard_num` is the index + 1), each a list of replicas.
    pub shards: Vec<Vec<Replica<'a>>>,
    pub element: &'a Element,
}

/// `remote_servers`: a `node*` child is a one-replica shard, a `shard*` child holds `replica*`s.
pub fn clusters(root: &Element) -> Vec<Cluster<'_>> {
    let Some(servers) = root.child("remote_servers") else { return Vec::new() };
    servers
        .elements()
        .map(|cluster| {
            let shards = cluster
                .elements()
                .filter_map(|child| {
                    if child.name.starts_with("node") {
                        Some(vec![replica(child)])
                    } else if child.name.starts_with("shard") {
                        Some(child.elements().filter(|r| r.name.starts_with("replica")).map(replica).collect())
                    } else {
                        None
                    }
                })
                .collect();
            Cluster { name: cluster.name.to_string(), shards, element: cluster }
        })
        .collect()
}

fn replica(e: &Element) -> Replica<'_> {
    Replica {
        host: e.child("host").map(Element::value).unwrap_or_default(),
        port: e.child("port").and_then(|p| p.value().parse().ok()),
        element: e,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Disk<'a> {
    pub name: String,
    /// `type` as written (`local` when absent, as ClickHouse assumes).
    pub kind: String,
    pub element: &'a Element,
}

impl Disk<'_> {
    pub fn setting(&self, name: &str) -> Option<String> {
        self.element.child(name).map(Element::value)
    }
}

pub fn disks(root: &Element) -> Vec<Disk<'_>> {
    let Some(disks) = root.find("storage_configuration/disks") else { return Vec::new() };
    disks
        .elements()
        .map(|d| Disk {
            name: d.name.to_string(),
            kind: d.child("type").map(Element::value).unwrap_or_else(|| "local".into()),
            element: d,
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub struct Volume<'a> {
    pub name: String,
    pub disks: Vec<String>,
    pub element: &'a Element,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Policy<'a> {
    pub name: String,
    /// Volumes in priority order (priority = index + 1).
    pub volumes: Vec<Volume<'a>>,
    pub element: &'a Element,
}

pub fn storage_policies(root: &Element) -> Vec<Policy<'_>> {
    let Some(policies) = root.find("storage_configuration/policies") else { return Vec::new() };
    policies
        .elements()
        .map(|p| Policy {
            name: p.name.to_string(),
            volumes: p
                .child("volumes")
                .map(|v| {
                    v.elements()
                        .map(|vol| Volume {
                            name: vol.name.to_string(),
                            disks: vol.elements().filter(|d| d.name.starts_with("disk")).map(Element::value).collect(),
                            element: vol,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            element: p,
        })
        .collect()
}

/// `<macros>`: name -> value, first occurrence wins.
pub fn macros(root: &Element) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for m in root.child("macros").into_iter().flat_map(Element::elements) {
        if !out.iter().any(|(name, _)| *name == m.name) {
            out.push((m.name.to_string(), m.value()));
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
pub struct Profile<'a> {
    pub name: String,
    /// Profiles this one inherits (`<profile>` children), in order.
    pub inherits: Vec<String>,
    /// Settings set here (not `profile` or `constraints`), first occurrence per name.
    pub settings: Vec<&'a Element>,
    pub element: &'a Element,
}

pub fn profiles(users_root: &Element) -> Vec<Profile<'_>> {
    let Some(profiles) = users_root.child("profiles") else { return Vec::new() };
    profiles
        .elements()
        .map(|p| {
            let mut settings: Vec<&Element> = Vec::new();
            for s in p.elements().filter(|s| s.name != "profile" && s.name != "constraints") {
                if !settings.iter().any(|seen| seen.name == s.name) {
                    settings.push(s);
                }
            }
            Profile {
                name: p.name.to_string(),
                inherits: p.children_named("profile").map(Element::value).collect(),
                settings,
                element: p,
            }
        })
        .collect()
}
