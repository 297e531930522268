//! The direct path: one read-only session per replica, in parallel (bounded), at the
//! addresses the user gives for the replicas' HTTP interfaces.

use std::time::Instant;

use super::*;

/// How each node is read over a direct connection.
#[derive(Debug, Clone, Copy)]
pub struct NodeOptions {
    pub limits: Limits,
    pub log_window: Option<u64>,
    /// Queries at once on one node.
    pub in_flight: usize,
}

/// Each node over its own session, `parallel` at a time. A replica that timed out while
/// others answered is asked once more, after the rest, while the audit has time left; one the
/// audit's deadline cut off is not read, not unreachable.
pub async fn direct(
    nodes: Vec<(String, Endpoint)>,
    options: NodeOptions,
    parallel: usize,
    progress: Progress<'_>,
) -> Collected {
    let total = nodes.len();
    let finished = std::sync::atomic::AtomicUsize::new(0);
    // each replica's facts are held once for the replicas alike as soon as it is read
    let interner = std::sync::Mutex::new(Interner::default());
    let read = |batch: Vec<(usize, (String, Endpoint))>, count: bool| {
        let (finished, interner) = (&finished, &interner);
        stream::iter(batch)
            .map(move |(i, (name, endpoint))| async move {
                // the session's deadline bounds a replica that answers each query just in time
                let (node, trips) = one_node(name, endpoint.clone(), options, interner).await;
                if count {
                    progress(finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, total);
                }
                (i, node, trips, endpoint)
            })
            .buffer_unordered(parallel.max(1))
            .collect::<Vec<_>>()
    };
    let mut done = read(nodes.into_iter().enumerate().collect(), true).await;
    let answered = done.iter().any(|(_, node, _, _)| node.error.is_none());
    let again: Vec<(usize, (String, Endpoint))> = done
        .iter()
        .filter(|(_, node, _, _)| answered && !node.out_of_time && node.error.as_deref().is_some_and(timed_out))
        .map(|(i, node, _, endpoint)| (*i, (node.name.clone(), endpoint.clone())))
        .collect();
    if !again.is_empty() && Instant::now() < options.limits.deadline {
        let retried = read(again, false).await;
        for (i, node, trips, _) in retried {
            if let Some(slot) = done.iter_mut().find(|(j, _, _, _)| *j == i) {
                slot.2 += trips;
                // the second answer wins, unless the deadline cut it and the first was a failure of its own
                if node.error.is_none() || !node.out_of_time {
                    slot.1 = node;
                }
            }
        }
    }
    done.sort_by_key(|(i, _, _, _)| *i);
    let round_trips = done.iter().map(|(_, _, t, _)| t).sum();
    Collected { path: Path::Direct, nodes: done.into_iter().map(|(_, n, _, _)| n).collect(), round_trips }
}

/// A failure that says the replica was slow, not that it refused or is not there.
fn timed_out(error: &str) -> bool {
    error.contains("no answer within") || error.contains("timed out") || error.contains("deadline")
}

async fn one_node(
    name: String,
    endpoint: Endpoint,
    options: NodeOptions,
    interner: &std::sync::Mutex<Interner>,
) -> (NodeFacts, u32) {
    let NodeOptions { limits, log_window, in_flight } = options;
    // a failure once the audit's deadline has passed is the audit's, not the replica's
    let failed = |name: String, error: String| {
        let out_of_time = Instant::now() >= limits.deadline;
        let error = if out_of_time {
            format!(
                "not read: the audit's deadline ({} s, --deadline) passed before this replica answered, \
                 so it was not judged (a longer --deadline or a higher --parallel reads it): {error}",
                limits.total.as_secs()
            )
        } else {
            error
        };
        NodeFacts { name, live: None, log: None, error: Some(error), out_of_time }
    };
    let session = match Session::connect(endpoint, limits).await {
        Ok(s) => s.with_in_flight(in_flight),
        Err(e) => return (failed(name, e.to_string()), 1),
    };
    let node = match crate::collect::node_in(&session, log_window, None, interner).await {
        Ok(documents) => {
            NodeFacts { name, live: Some(documents.live), log: documents.log, error: None, out_of_time: false }
        }
        Err(e) => failed(name, e.to_string()),
    };
    (node, session.round_trips())
}

/// Where the replicas' HTTP interfaces are, for direct connections: system.clusters lists
/// native ports only, so the user says (the seed's credentials go to each).
#[derive(Debug, Clone, Default)]
pub struct ReplicaAddresses {
    /// `--replica-port`: every replica's HTTP(S) port, with the seed's scheme.
    pub port: Option<u16>,
    /// `--replica-dsn TEMPLATE`: a DSN with `{host}` (and `{port}`, the native port).
    pub template: Option<String>,
    /// `--replica-dsn HOST:PORT=DSN`: one replica, by its system.clusters name.
    pub by_name: Vec<(String, String)>,
}

impl ReplicaAddresses {
    /// `--replica-port` and each `--replica-dsn` (one template with `{host}`, or
    /// `HOST:PORT=DSN` for one replica); the error names the value it cannot read (its
    /// password hidden).
    pub fn parse(port: Option<u16>, given: &[String]) -> Result<ReplicaAddresses, String> {
        let mut replicas = ReplicaAddresses { port, ..Default::default() };
        for given in given {
            match given.split_once('=').filter(|(name, _)| !name.contains("://")) {
                Some((name, dsn)) => replicas.by_name.push((name.to_string(), dsn.to_string())),
                None if given.contains("{host}") && replicas.template.is_none() => {
                    replicas.template = Some(given.clone())
                }
                None => {
                    let shown = crate::collect::dsn::redact(given);
                    return Err(format!(
                        "--replica-dsn `{shown}`: one template with {{host}}, or HOST:PORT=DSN for one replica"
                    ));
                }
            }
        }
        Ok(replicas)
    }

    fn is_empty(&self) -> bool {
        self.port.is_none() && self.template.is_none() && self.by_name.is_empty()
    }
}

/// The endpoints of a cluster's replicas for direct connections, each with the seed's
/// credentials: the seed itself for its own entry, else as `addresses` say. Two replicas
/// at one endpoint are an error (the same server would be read for both).
pub fn direct_endpoints(
    seed: &Endpoint,
    members: &[Member],
    addresses: &ReplicaAddresses,
) -> Result<Vec<(String, Endpoint)>, CollectError> {
    let mut endpoints: Vec<(String, Endpoint)> = Vec::new();
    for m in members {
        let name = m.name();
        let dsn = match addresses.by_name.iter().find(|(n, _)| *n == name) {
            Some((_, dsn)) => Some(dsn.clone()),
            None => addresses
                .template
                .as_ref()
                .map(|t| t.replace("{host}", &m.host_name).replace("{port}", &m.port.to_string())),
        };
        let endpoint = match (dsn, addresses.port) {
            (Some(dsn), _) => {
                let given = crate::collect::dsn::resolve(&crate::collect::dsn::ConnectOptions {
                    dsn: Some(dsn),
                    ..Default::default()
                })
                .map(|resolved| resolved.endpoint)
                .map_err(|e| CollectError::Replicas(format!("replica {name}: {e}")))?;
                Endpoint {
                    secure: given.secure,
                    host: given.host,
                    port: given.port,
                    database: given.database,
                    ..seed.clone()
                }
            }
            (None, _) if m.is_local => seed.clone(),
            (None, Some(port)) => Endpoint { host: m.host_name.clone(), port, ..seed.clone() },
            (None, None) => {
                let why =
                    if addresses.is_empty() { "no HTTP port is known for it" } else { "no --replica-dsn names it" };
                return Err(CollectError::Replicas(format!(
                    "replica {name}: {why} (system.clusters lists native ports): give --replica-port PORT, \
                     --replica-dsn 'http://{{host}}:8123' or --replica-dsn '{name}=http://HOST:PORT'"
                )));
            }
        };
        if let Some((other, _)) = endpoints.iter().find(|(_, e)| e.url() == endpoint.url()) {
            return Err(CollectError::Replicas(format!(
                "replicas {other} and {name} both resolve to {}: the same server would be read twice",
                endpoint.url()
            )));
        }
        endpoints.push((name, endpoint));
    }
    Ok(endpoints)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_addresses_are_one_template_and_named_replicas() {
        let given = ["http://{host}:8123".to_string(), "ch2:9000=http://10.0.0.2:8123".to_string()];
        let read = ReplicaAddresses::parse(Some(8443), &given).unwrap();
        assert_eq!(read.port, Some(8443));
        assert_eq!(read.template.as_deref(), Some("http://{host}:8123"));
        assert_eq!(read.by_name, [("ch2:9000".to_string(), "http://10.0.0.2:8123".to_string())]);
        // a second template, or a DSN without {host}, is a mistake that hides the password
        let wrong = ReplicaAddresses::parse(None, &["http://u:secret@ch1:8123".to_string()]).unwrap_err();
        assert!(wrong.contains("one template with {host}") && !wrong.contains("secret"), "{wrong}");
    }

    fn member(host: &str, port: u64, is_local: bool) -> Member {
        Member { host_name: host.into(), port, is_local }
    }
    #[test]
    fn replicas_get_the_addresses_the_user_gives() {
        let options = crate::collect::dsn::ConnectOptions {
            dsn: Some("http://auditor:pw@ch1:18123".into()),
            ..Default::default()
        };
        let seed = crate::collect::dsn::resolve(&options).unwrap().endpoint;
        let members = [member("ch1", 9000, true), member("ch2", 9000, false), member("ch3", 9001, false)];
        // no address: an error naming the first replica that needs one (it was the seed's port)
        let err = direct_endpoints(&seed, &members, &ReplicaAddresses::default()).unwrap_err().to_string();
        assert!(err.contains("replica ch2:9000") && err.contains("--replica-port"), "{err}");
        let template = ReplicaAddresses { template: Some("https://{host}:8443".into()), ..Default::default() };
        let urls: Vec<String> =
            direct_endpoints(&seed, &members, &template).unwrap().iter().map(|(_, e)| e.to_string()).collect();
        assert_eq!(urls, ["auditor@https://ch1:8443", "auditor@https://ch2:8443", "auditor@https://ch3:8443"]);
        // the seed is kept for its own entry; one replica given by name
        let mixed = ReplicaAddresses {
            port: Some(8123),
            by_name: vec![("ch3:9001".into(), "http://ch3:28123".into())],
            ..Default::default()
        };
        let urls: Vec<String> =
            direct_endpoints(&seed, &members, &mixed).unwrap().iter().map(|(_, e)| e.url()).collect();
        assert_eq!(urls, ["http://ch1:18123", "http://ch2:8123", "http://ch3:28123"]);
        let clash = ReplicaAddresses { port: Some(18123), template: None, by_name: Vec::new() };
        let err = direct_endpoints(&seed, &[member("ch1", 9000, true), member("ch1", 9001, false)], &clash)
            .unwrap_err()
            .to_string();
        assert!(err.contains("both resolve to http://ch1:18123"), "{err}");
    }
}
