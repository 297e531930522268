//! Connection arguments, and running the collector for the audit, `collect` and `check`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use chaudit::collect::dsn::{ConnectOptions, Endpoint, Secret};
use chaudit::collect::{self, Session, cluster};
use chaudit::upgrade::history;
use chaudit::verdict::Failure;

use super::exit;

#[derive(Args, Clone, Default)]
pub struct ConnectArgs {
    /// http(s)://user:password@host:8123/db, or clickhouse-client's clickhouse://user@host (its native
    /// port read as the stock HTTP port beside it: 9000 as 8123, 9440 as 8443). Repeat it to
    /// audit several nodes as one cluster.
    #[arg(long, value_name = "DSN")]
    pub dsn: Vec<String>,
    /// Audit every replica of this cluster (from system.clusters of the --dsn node).
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// How replicas are read: ClickHouse's clusterAllReplicas through the --dsn node, direct
    /// connections to each (the --dsn credentials; ports from --replica-port or
    /// --replica-dsn), or auto (fan-out when the user may).
    #[arg(long, value_enum, default_value_t = FanOut::Auto)]
    pub fan_out: FanOut,
    /// The replicas' HTTP(S) port, for --cluster over direct connections (system.clusters
    /// lists native ports only).
    #[arg(long, value_name = "PORT")]
    pub replica_port: Option<u16>,
    /// Where the replicas' HTTP interfaces are, for --cluster over direct connections: a
    /// template, `http://{host}:8123` ({host} and {port}, the native port, from
    /// system.clusters), or one replica as `HOST:PORT=DSN` (its system.clusters name);
    /// repeatable. The --dsn credentials are sent to each.
    #[arg(long, value_name = "DSN")]
    pub replica_dsn: Vec<String>,
    /// Replicas read at once over direct connections.
    #[arg(long, default_value_t = 8)]
    pub parallel: usize,
    /// Queries chaudit sends at once to a server (each takes one of its query slots).
    #[arg(long, default_value_t = 1)]
    pub in_flight: usize,
    /// Server host, as clickhouse-client's --host/-h: audits that server live.
    #[arg(long, short = 'h', conflicts_with = "dsn")]
    pub host: Option<String>,
    /// HTTP(S) port, audits a server live (default 8123, or 8443 with --secure; env
    /// CLICKHOUSE_PORT). A native port (9000, 9440) is read as the stock HTTP port beside it.
    #[arg(long, conflicts_with = "dsn")]
    pub port: Option<u16>,
    /// User (env CLICKHOUSE_USER; default `default`).
    #[arg(long, short = 'u')]
    pub user: Option<String>,
    /// Password; without a value it is asked for on the terminal, not echoed (env
    /// CLICKHOUSE_PASSWORD; a value on the command line is visible to other users).
    #[arg(long, value_name = "PASSWORD", num_args = 0..=1, conflicts_with = "password_file")]
    pub password: Option<Option<String>>,
    /// Read the password from this file (first line).
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// HTTPS (TLS via rustls).
    #[arg(long)]
    pub secure: bool,
    /// Also trust the CA certificates in this PEM file (a private CA or a self-signed server).
    #[arg(long, value_name = "FILE", env = "CLICKHOUSE_CA_CERT")]
    pub ca_cert: Option<PathBuf>,
    /// Seconds to wait for each query (at least 1).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Seconds the whole collection may take, every server and query included (default: 3 x
    /// --timeout for one server, and for each round of --parallel replicas of a cluster, or
    /// each 100 replicas through clusterAllReplicas). A query not answered by then is not
    /// waited on: its facts are unavailable.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub deadline: Option<u64>,
    /// Print every query chaudit would send, with its purpose, and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print round trips to stderr after the audit.
    #[arg(long)]
    pub stats: bool,
    /// Window of query_log evidence, e.g. 24h, 90m, 7d (0 = no log evidence).
    #[arg(long, default_value = "24h", value_parser = parse_window)]
    pub since: u64,
}

#[derive(Clone, Copy, Default, clap::ValueEnum)]
pub enum FanOut {
    #[default]
    Auto,
    /// clusterAllReplicas(NAME, system.x) through the --dsn node: one round trip per fact.
    Cluster,
    /// One read-only session per replica, in parallel.
    Direct,
}

/// The longest `--since` window: ten years.
const MAX_WINDOW_SECONDS: u64 = 3650 * 86_400;

/// `24h`, `90m`, `7d`, `3600s` (or plain seconds) -> seconds.
fn parse_window(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (number, unit) = s.find(|c: char| !c.is_ascii_digit()).map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let n: u64 = number.parse().map_err(|_| format!("`{s}`: a window is like 24h, 90m or 7d"))?;
    let factor = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("`{s}`: the unit is s, m, h or d")),
    };
    n.checked_mul(factor)
        .filter(|seconds| *seconds <= MAX_WINDOW_SECONDS)
        .ok_or_else(|| format!("`{s}`: a window is at most 3650d"))
}

impl ConnectArgs {
    /// A live audit is asked for by `--dsn`, `--host` or `--port` on the command line, never by
    /// the environment (CLICKHOUSE_HOST exported leaves an offline audit offline).
    pub fn wanted(&self) -> bool {
        !self.dsn.is_empty() || self.host.is_some() || self.port.is_some()
    }

    /// Credentials or TLS without a server to send them to: a mistake, not an offline audit.
    pub fn check_asked(&self) -> Result<(), String> {
        if self.wanted() || self.cluster.is_some() {
            return Ok(());
        }
        let given = [
            (self.user.is_some(), "--user"),
            (self.password.is_some(), "--password"),
            (self.password_file.is_some(), "--password-file"),
            (self.secure, "--secure"),
        ];
        match given.iter().find(|(given, _)| *given) {
            Some((_, flag)) => Err(format!("{flag} is for a live audit: give --host or --dsn too")),
            None => Ok(()),
        }
    }

    /// Several nodes: `--cluster`, or `--dsn` given more than once.
    pub fn is_cluster(&self) -> bool {
        self.cluster.is_some() || self.dsn.len() > 1
    }

    /// The per-query timeout and the whole collection's deadline, from now.
    pub fn limits(&self) -> collect::Limits {
        let total = self.deadline.unwrap_or(self.timeout.saturating_mul(3));
        let limits = collect::Limits::new(Duration::from_secs(self.timeout), Duration::from_secs(total));
        // without --deadline the budget is one server's: a cluster gets it per round of replicas
        if self.deadline.is_none() { limits.per_server() } else { limits }
    }

    pub fn endpoint(&self) -> Result<Endpoint, String> {
        self.endpoint_of(self.dsn.first().cloned())
    }

    fn endpoint_of(&self, dsn: Option<String>) -> Result<Endpoint, String> {
        let password = match &self.password_file {
            Some(path) => Some(Secret::new(
                chaudit::regular_file::read_to_string(path)
                    .map_err(|e| format!("--password-file {}: {e}", path.display()))?
                    .lines()
                    .next()
                    .unwrap_or_default(),
            )),
            None => match &self.password {
                Some(Some(given)) => Some(Secret::new(given.as_str())),
                Some(None) => Some(prompt_password()?),
                None => None,
            },
        };
        let resolved = collect::dsn::resolve(&ConnectOptions {
            dsn,
            host: self.host.clone(),
            port: self.port,
            user: self.user.clone(),
            password,
            secure: self.secure,
            ca_cert: self.ca_cert.clone(),
            env: collect::dsn::Environment::read(),
        })?;
        for note in &resolved.notes {
            super::warn(note);
        }
        Ok(resolved.endpoint)
    }
}

/// `--password` without a value: asked for on the terminal without echo, as clickhouse-client
/// does; without a terminal there is no one to ask.
fn prompt_password() -> Result<Secret, String> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(
            "--password without a value asks on a terminal and there is none: use --password-file or CLICKHOUSE_PASSWORD"
                .into(),
        );
    }
    rpassword::prompt_password("Password: ").map(Secret::new).map_err(|e| format!("cannot read the password: {e}"))
}

/// What `--stats` prints about the audit's own footprint.
pub struct Stats {
    pub round_trips: u32,
    pub rows_read: Option<u64>,
}

/// Why the server (or cluster) could not be read: what to tell the user, and whether the
/// arguments were the mistake (not audited) or the run failed.
#[derive(Debug)]
pub struct Unread {
    pub failure: Failure,
    pub message: String,
}

impl Unread {
    fn usage(message: String) -> Unread {
        Unread { failure: Failure::Usage, message }
    }

    fn of(e: collect::CollectError) -> Unread {
        let failure = match e {
            collect::CollectError::UnknownCluster { .. }
            | collect::CollectError::CaCert(_)
            | collect::CollectError::Replicas(_) => Failure::Usage,
            _ => Failure::Runtime,
        };
        Unread { failure, message: e.to_string() }
    }

    /// Says why on stderr; the exit code of the failure.
    pub fn exit(&self) -> ExitCode {
        eprintln!("chaudit: {}", self.message);
        self.failure.status().exit_code().into()
    }
}

/// Connects and collects one node (`review`: the upgrade review's queries too), with the
/// audit's footprint.
pub fn collect_live(args: &ConnectArgs, review: bool) -> Result<(collect::NodeDocuments, Stats), Unread> {
    let endpoint = args.endpoint().map_err(Unread::usage)?;
    let runtime = runtime()?;
    runtime.block_on(async {
        let fail = Unread::of;
        let waiting = waiting_notice(args.timeout);
        let session = Session::connect_waiting(endpoint, args.limits(), &waiting)
            .await
            .map_err(fail)?
            .with_in_flight(args.in_flight);
        if let Some(warning) = writable_user_warning(&[session.readonly], &session.user) {
            super::warn(&warning);
        }
        let review_history = review.then(|| history::builtin().version.parse().ok()).flatten();
        let log_window = Some(args.since).filter(|s| *s > 0);
        let node = collect::node(&session, log_window, review_history).await.map_err(fail)?;
        let stats = Stats { round_trips: session.round_trips(), rows_read: session.rows_read() };
        Ok((node, stats))
    })
}

/// Collects every node of a cluster (`--cluster NAME` through the --dsn node, or each
/// --dsn): the cluster name and what each node gave. `progress` shows it on stderr.
pub fn collect_cluster(args: &ConnectArgs, progress: bool) -> Result<(Option<String>, cluster::Collected), Unread> {
    let usage = Unread::usage;
    let endpoints: Vec<Endpoint> =
        args.dsn.iter().map(|d| args.endpoint_of(Some(d.clone()))).collect::<Result<_, _>>().map_err(usage)?;
    if let Some(e) = endpoints.iter().enumerate().find_map(|(i, e)| endpoints[..i].iter().find(|o| o.url() == e.url()))
    {
        return Err(usage(format!("{} is given twice with --dsn: each --dsn names another node", e.url())));
    }
    if args.cluster.is_some() && endpoints.len() != 1 {
        return Err(usage("--cluster reads the replicas through one node: give one --dsn".into()));
    }
    let replicas = cluster::ReplicaAddresses::parse(args.replica_port, &args.replica_dsn).map_err(usage)?;
    let runtime = runtime()?;
    let plan = cluster::Plan {
        cluster: args.cluster.clone(),
        endpoints,
        fan_out: match args.fan_out {
            FanOut::Auto => cluster::FanOut::Auto,
            FanOut::Cluster => cluster::FanOut::Cluster,
            FanOut::Direct => cluster::FanOut::Direct,
        },
        parallel: args.parallel,
        node: cluster::NodeOptions {
            limits: args.limits(),
            log_window: Some(args.since).filter(|s| *s > 0),
            in_flight: args.in_flight,
        },
        replicas,
    };
    let show = move |done: usize, total: usize| {
        if progress {
            eprint!("\rchaudit: collecting {done}/{total}{}", if done == total { "\n" } else { "" });
        }
    };
    // a replica's name and error text come from the servers: written out
    let warn = |message: String| super::warn(&chaudit::mask::without_controls(&message));
    let told = |endpoints: &[(String, Endpoint)]| {
        if let Some((_, first)) = endpoints.first() {
            let with = if first.password.expose().is_empty() { "" } else { " and its password" };
            // a fleet's 500 addresses are not one line to read: the first ones, and how many more
            const LISTED: usize = 8;
            let urls: Vec<String> = endpoints.iter().take(LISTED + 1).map(|(_, e)| e.url()).collect();
            let to = match endpoints.len() {
                n if n <= LISTED + 1 => urls.join(", "),
                n => format!("{} and {} more replicas", urls[..LISTED].join(", "), n - LISTED),
            };
            eprintln!("chaudit: note: user `{}`{with} sent to {to}", first.user);
        }
    };
    let waiting = waiting_notice(args.timeout);
    let user = plan.endpoints.first().map(|e| e.user.clone()).unwrap_or_default();
    let collected = runtime.block_on(cluster::collect(plan, &show, &warn, &told, &waiting)).map_err(Unread::of)?;
    // each replica's readonly level, as its session there has it
    let levels: Vec<u8> = collected
        .nodes
        .iter()
        .filter_map(|n| chaudit::facts::keys::live::READONLY.json(n.live.as_ref()?)?.as_u64())
        .map(|level| u8::try_from(level).unwrap_or(u8::MAX))
        .collect();
    if let Some(warning) = writable_user_warning(&levels, &user) {
        super::warn(&warning);
    }
    Ok((args.cluster.clone(), collected))
}

/// The warning for an auditing user that may write (`readonly` = 0 on some of the servers
/// read, their levels in `levels`), if it may: chaudit sends only reads, and readonly=1 is all
/// it needs (readonly=2 may change settings, not data: no warning).
fn writable_user_warning(levels: &[u8], user: &str) -> Option<String> {
    let writable = levels.iter().filter(|level| **level == 0).count();
    let on = match (writable, levels.len()) {
        (0, _) => return None,
        (w, n) if w == n || n == 1 => String::new(),
        (w, n) => format!(" on {w} of {n} replicas"),
    };
    Some(format!(
        "the auditing user `{}` may write (readonly = 0){on}: chaudit sends only reads, and a readonly=1 user is all \
         it needs (docs/live.md)",
        chaudit::mask::without_controls(user)
    ))
}

/// What stderr says while a server has not answered the connect probe (unless `--quiet`):
/// one line after [`collect::WAIT_NOTICE_AFTER`]; on a terminal, that line counts the seconds
/// until the answer or the timeout.
fn waiting_notice(timeout: u64) -> impl Fn(&Endpoint, Option<Duration>) + Sync {
    use std::io::IsTerminal;
    let (terminal, quiet) = (std::io::stderr().is_terminal(), super::quiet());
    move |endpoint: &Endpoint, waited: Option<Duration>| {
        if quiet {
            return;
        }
        let url = endpoint.url();
        let url = chaudit::mask::without_controls(&url);
        match waited {
            Some(waited) if terminal && waited.as_secs() < timeout => {
                eprint!("\rchaudit: waiting for {url}: no answer after {} s (timeout {timeout} s)", waited.as_secs());
            }
            Some(waited) if waited == collect::WAIT_NOTICE_AFTER => {
                eprintln!("chaudit: waiting for {url}: no answer after {} s (timeout {timeout} s)", waited.as_secs());
            }
            None if terminal => eprint!("\n"),
            _ => {}
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, Unread> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Unread { failure: Failure::Runtime, message: format!("cannot start the runtime: {e}") })
}

pub fn print_plan(args: &ConnectArgs, review: bool) -> ExitCode {
    let window = Some(args.since).filter(|s| *s > 0);
    let plan = match (&args.cluster, args.fan_out) {
        (Some(name), FanOut::Auto | FanOut::Cluster) => collect::plan::describe_fan_out(name, window),
        _ => collect::plan::describe(window, review),
    };
    super::write_stdout(&plan, exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_user_that_may_write_is_warned_about() {
        let warning = writable_user_warning(&[0], "default").unwrap();
        assert!(warning.starts_with("the auditing user `default` may write (readonly = 0): "), "{warning}");
        assert!(warning.contains("a readonly=1 user is all it needs"), "{warning}");
        // readonly=1 reads only; readonly=2 may change settings, not data
        assert_eq!(writable_user_warning(&[1], "auditor"), None);
        assert_eq!(writable_user_warning(&[2], "auditor"), None);
        assert_eq!(writable_user_warning(&[], "auditor"), None, "nothing read, nothing said");
        // a cluster: once, saying on how many replicas when not on all
        assert!(writable_user_warning(&[0, 0, 0], "a").unwrap().contains("(readonly = 0): "));
        assert!(writable_user_warning(&[1, 0, 1], "a").unwrap().contains("(readonly = 0) on 1 of 3 replicas: "));
        assert_eq!(writable_user_warning(&[1, 1], "a"), None);
    }
}
