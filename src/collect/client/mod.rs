//! A read-only session with one ClickHouse node over HTTP (the official `clickhouse` crate).
//! Every query is a SELECT, tagged with a `chaudit-` query_id (and, when the user may change
//! settings, a log_comment and max_execution_time) so the audit's own footprint can be found.
//! A `readonly=1` user gets no setting at all: it would refuse the query (error 164).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hyper_util::client::legacy::connect::HttpConnector;
use serde::de::DeserializeOwned;
use serde_json::Value;
use thiserror::Error;

use super::dsn::Endpoint;
use super::guard::Guard;
use crate::limits::{self, MAX_ANSWER_BYTES, MAX_ANSWER_ROWS, MAX_ROW_BYTES};

mod error;
mod tls;

use error::query_error;
pub use error::{CollectError, Unread};
use tls::base_client;

/// How long a session waits: for each query, and for the whole audit.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub per_query: Duration,
    /// No query is sent, or waited on, after this.
    pub deadline: Instant,
    /// The whole budget (for messages).
    pub total: Duration,
    /// The budget is one server's (the user gave none): a fleet gets it per round of
    /// replicas (see [`Limits::for_fleet`]).
    pub per_server: bool,
}

/// Replicas one query through clusterAllReplicas covers in one server's budget: its answer
/// grows with the cluster.
const FAN_OUT_REPLICAS_PER_BUDGET: usize = 100;

impl Limits {
    /// From now: `per_query` for each query, `total` for all of them.
    pub fn new(per_query: Duration, total: Duration) -> Limits {
        // a deadline past what the clock can count is none at all: a year will do
        let now = Instant::now();
        let deadline = now.checked_add(total).unwrap_or(now + Duration::from_secs(365 * 86_400));
        Limits { per_query, deadline, total, per_server: false }
    }

    /// One server's budget, which a fleet scales (the default when the user sets none).
    pub fn per_server(self) -> Limits {
        Limits { per_server: true, ..self }
    }

    /// The limits for `replicas` read `parallel` at a time over direct connections, or through
    /// clusterAllReplicas (`parallel` None): a budget given for one server is given to each
    /// round of `parallel` replicas, or, through the fan-out, to each 100 replicas, whose
    /// queries wait that much longer too. A budget the user set stands.
    pub fn for_fleet(self, replicas: usize, parallel: Option<usize>) -> Limits {
        if !self.per_server {
            return self;
        }
        let rounds = replicas.div_ceil(parallel.unwrap_or(FAN_OUT_REPLICAS_PER_BUDGET).max(1)).max(1);
        let rounds = u32::try_from(rounds).unwrap_or(u32::MAX);
        let start = self.deadline.checked_sub(self.total).unwrap_or(self.deadline);
        let total = self.total.saturating_mul(rounds);
        let per_query = if parallel.is_none() { self.per_query.saturating_mul(rounds) } else { self.per_query };
        let deadline = start.checked_add(total).unwrap_or(self.deadline);
        Limits { per_query, deadline, total, per_server: true }
    }
}

pub struct Session {
    client: clickhouse::Client,
    endpoint: Endpoint,
    /// The user's `readonly` setting: 1 forbids sending any setting.
    pub readonly: u8,
    pub version: String,
    query_id_prefix: String,
    sequence: AtomicU32,
    round_trips: AtomicU32,
    /// Rows the server read for this session's queries (from X-ClickHouse-Summary, which
    /// needs wait_end_of_query: not available to a readonly=1 user).
    rows_read: AtomicU64,
    limits: Limits,
    /// Queries sent at once (1: one after the other, the least a busy server notices).
    pub in_flight: usize,
    /// The user chaudit is logged in as, and its enabled roles (whom row policies name).
    pub user: String,
    pub roles: Vec<String>,
    /// The user's limits that could cut an answer short without an error.
    guard: Guard,
    /// The replicas one answer holds (1; a fan-out's, every replica's): an answer may have
    /// this many times [`MAX_ANSWER_BYTES`] and [`MAX_ANSWER_ROWS`].
    replicas: AtomicU64,
}

/// The connect probe's row: the server's version, the session's `readonly`, who it is, and
/// the limits that could cut an answer.
#[derive(serde::Deserialize)]
struct Probe {
    version: String,
    readonly: u8,
    user: String,
    roles: Vec<String>,
    #[serde(flatten)]
    guard: Guard,
}

impl Session {
    /// Connects and reads the version and the user's readonly level (one round trip).
    pub async fn connect(endpoint: Endpoint, limits: Limits) -> Result<Session, CollectError> {
        Session::connect_waiting(endpoint, limits, &|_, _| {}).await
    }

    /// [`Session::connect`], telling `waiting` while the server has not answered: after
    /// [`WAIT_NOTICE_AFTER`], then every second, and once more (`None`) when the wait ends.
    pub async fn connect_waiting(
        endpoint: Endpoint,
        limits: Limits,
        waiting: Waiting<'_>,
    ) -> Result<Session, CollectError> {
        let mut client = base_client(&endpoint)?
            .with_url(endpoint.url())
            .with_user(endpoint.user.clone())
            .with_password(endpoint.password.expose().to_string());
        if let Some(db) = &endpoint.database {
            client = client.with_database(db.clone());
        }
        let mut session = Session {
            client,
            query_id_prefix: format!("chaudit-{}-{}", std::process::id(), unique_suffix()),
            endpoint,
            readonly: 1,
            version: String::new(),
            sequence: AtomicU32::new(0),
            round_trips: AtomicU32::new(0),
            rows_read: AtomicU64::new(0),
            limits,
            in_flight: 1,
            user: String::new(),
            roles: Vec::new(),
            guard: Guard::default(),
            replicas: AtomicU64::new(1),
        };
        let (purpose, sql) = super::plan::CONNECT_PROBE;
        // one row, or the server is not a ClickHouse server (an empty body, a web page, an
        // endless stream): never a session taken on nothing
        let mut probe: Option<Probe> = None;
        let mut one_row = |line: &str| {
            if probe.is_some() {
                return Err("more than one row: not a ClickHouse server's answer".into());
            }
            probe = Some(serde_json::from_str(line).map_err(|e| format!("{e}: not a ClickHouse server's answer"))?);
            Ok(())
        };
        let read =
            watched(session.each_line(purpose, sql, &[], "JSONEachRow", &mut one_row), &session.endpoint, waiting)
                .await;
        read.map_err(|e| session.connection_error(e))?;
        let bad = |message: String| CollectError::BadResponse { purpose: purpose.to_string(), message };
        let probe = probe.ok_or_else(|| bad("no row: an empty answer is not a ClickHouse server's".into()))?;
        if probe.version.parse::<crate::version::Version>().is_err() {
            return Err(bad(format!("`{}` is not a ClickHouse version: not a ClickHouse server", probe.version)));
        }
        session.version = probe.version;
        session.readonly = probe.readonly;
        session.user = probe.user;
        session.roles = probe.roles;
        session.guard = probe.guard;
        Ok(session)
    }

    /// Whether the server lets `user` log in with an empty password (one `SELECT 1` as it):
    /// Some(false) when it refuses the credentials; Some(true) when it answers, or refuses
    /// the query itself once logged in (a profile's limits, no grant); None when the answer
    /// says neither (no answer, the user's networks excluding chaudit's address).
    pub async fn accepts_empty_password(&self, user: &str) -> Option<bool> {
        let client = base_client(&self.endpoint).ok()?.with_url(self.endpoint.url()).with_user(user).with_password("");
        let left = self.limits.deadline.saturating_duration_since(Instant::now()).min(self.limits.per_query);
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        match tokio::time::timeout(left, client.query(super::empty_password::SQL).fetch_all::<u8>()).await {
            Ok(Ok(_)) => Some(true),
            Ok(Err(e)) => {
                let text = e.to_string();
                // AUTHENTICATION_FAILED, UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD
                let refused = ["Code: 516.", "Code: 192.", "Code: 193.", "Code: 194."];
                // IP_ADDRESS_NOT_ALLOWED: its networks exclude chaudit's address, not a verdict
                if refused.iter().any(|code| text.contains(code)) {
                    Some(false)
                } else if text.contains("Code: ") && !text.contains("Code: 195.") {
                    Some(true)
                } else {
                    None
                }
            }
            Err(_) => None,
        }
    }

    /// Lets one answer be `replicas` times [`MAX_ANSWER_BYTES`] and [`MAX_ANSWER_ROWS`] (a
    /// fan-out's answer holds every replica's).
    pub fn answers_of_replicas(&self, replicas: usize) {
        self.replicas.store(replicas.max(1) as u64, Ordering::Relaxed);
    }

    /// Sends up to `n` queries at once (the round trips overlap; their number is the same).
    /// The session with other limits (a fleet's, once its size is known).
    pub fn with_limits(mut self, limits: Limits) -> Session {
        self.limits = limits;
        self
    }

    pub fn with_in_flight(mut self, n: usize) -> Session {
        self.in_flight = n.max(1);
        self
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn round_trips(&self) -> u32 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Rows the server read for the audit's queries; `None` for a readonly=1 user.
    pub fn rows_read(&self) -> Option<u64> {
        (self.readonly != 1).then(|| self.rows_read.load(Ordering::Relaxed))
    }

    /// The query_id prefix of this audit's queries (to find them in query_log).
    pub fn query_id_prefix(&self) -> &str {
        &self.query_id_prefix
    }

    /// Runs one SELECT and returns its rows as JSON objects.
    pub async fn rows(&self, purpose: &str, sql: &str) -> Result<Vec<Value>, CollectError> {
        self.rows_with(purpose, sql, &[]).await
    }

    /// Runs one SELECT with query settings (never for a readonly=1 user: it refuses them).
    pub async fn rows_with(
        &self,
        purpose: &str,
        sql: &str,
        settings: &[(&str, &str)],
    ) -> Result<Vec<Value>, CollectError> {
        self.typed_rows(purpose, sql, settings).await
    }

    /// Runs one SELECT and reads each row as a `T` (a row of another shape is a bad response).
    pub async fn typed_rows<T: DeserializeOwned>(
        &self,
        purpose: &str,
        sql: &str,
        settings: &[(&str, &str)],
    ) -> Result<Vec<T>, CollectError> {
        let mut rows = Vec::new();
        self.each_line(purpose, sql, settings, "JSONEachRow", &mut |line| {
            rows.push(serde_json::from_str(line).map_err(|e| e.to_string())?);
            Ok(())
        })
        .await?;
        Ok(rows)
    }

    /// Runs one SELECT and hands each line of its answer in `format` (one row) to `each` as
    /// it arrives, so that an answer is never held whole; an error from `each` is the
    /// server's answer not being rows (`BadResponse`).
    pub async fn each_line(
        &self,
        purpose: &str,
        sql: &str,
        settings: &[(&str, &str)],
        format: &str,
        each: &mut dyn FnMut(&str) -> Result<(), String>,
    ) -> Result<(), CollectError> {
        let n = self.sequence.fetch_add(1, Ordering::Relaxed);
        let mut query = self.client.query(sql).with_setting("query_id", format!("{}-{n}", self.query_id_prefix));
        for (name, value) in settings.iter().filter(|_| self.readonly != 1) {
            query = query.with_setting(*name, *value);
        }
        if self.readonly != 1 {
            for (name, value) in self.guard.throw_settings() {
                query = query.with_setting(name, value);
            }
            query = query
                .with_setting("log_comment", format!("chaudit: {purpose}"))
                .with_setting("max_execution_time", self.limits.per_query.as_secs().max(1).to_string())
                .with_setting("wait_end_of_query", "1");
        }
        let left = self.limits.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(CollectError::Deadline { purpose: purpose.to_string(), seconds: self.limits.total.as_secs() });
        }
        let (wait, limit) = if left < self.limits.per_query {
            (left, CollectError::Deadline { purpose: purpose.to_string(), seconds: self.limits.total.as_secs() })
        } else {
            let seconds = self.limits.per_query.as_secs();
            (self.limits.per_query, CollectError::Timeout { purpose: purpose.to_string(), seconds })
        };
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let bad = |message: String| CollectError::BadResponse { purpose: purpose.into(), message };
        let too_large = |what: String| CollectError::TooLarge { purpose: purpose.into(), what };
        let replicas = self.replicas.load(Ordering::Relaxed);
        let (cap, rows_cap) = (MAX_ANSWER_BYTES.saturating_mul(replicas), MAX_ANSWER_ROWS.saturating_mul(replicas));
        let started = Instant::now();
        let fetch = async {
            let mut cursor = query.fetch_bytes(format).map_err(|e| query_error(purpose, e))?;
            // a line may span chunks: its start is kept until its end arrives
            let mut partial = Vec::new();
            let (mut bytes, mut rows) = (0u64, 0u64);
            while let Some(chunk) = cursor.next().await.map_err(|e| query_error(purpose, e))? {
                bytes += chunk.len() as u64;
                if bytes > cap {
                    let cap = limits::bytes(cap);
                    return Err(too_large(format!(
                        "the answer passed {cap}, chaudit's cap on one answer (MAX_ANSWER_BYTES): not read further"
                    )));
                }
                let mut rest = &chunk[..];
                while let Some(end) = rest.iter().position(|b| *b == b'\n') {
                    partial.extend_from_slice(&rest[..end]);
                    rest = &rest[end + 1..];
                    rows += row(&partial, each).map_err(bad)?;
                    partial.clear();
                    if rows > rows_cap {
                        return Err(too_large(format!(
                            "the answer passed {rows_cap} rows, chaudit's cap on one answer (MAX_ANSWER_ROWS): \
                             not read further"
                        )));
                    }
                }
                partial.extend_from_slice(rest);
                if partial.len() > MAX_ROW_BYTES {
                    let cap = limits::bytes(MAX_ROW_BYTES as u64);
                    return Err(too_large(format!(
                        "a row of the answer passed {cap}, chaudit's cap on one row (MAX_ROW_BYTES): not read further"
                    )));
                }
            }
            rows += row(&partial, each).map_err(bad)?;
            Ok((rows, cursor.summary().and_then(|s| s.read_rows()).unwrap_or(0)))
        };
        let (rows, read) =
            tokio::time::timeout(wait, fetch).await.map_err(|_| limit)?.map_err(|e| self.guard.named(e))?;
        self.rows_read.fetch_add(read, Ordering::Relaxed);
        if self.readonly == 1
            && let Some(why) = self.guard.cut(rows, started.elapsed())
        {
            return Err(CollectError::Cut { purpose: purpose.into(), why });
        }
        Ok(())
    }

    fn connection_error(&self, e: CollectError) -> CollectError {
        let endpoint = self.endpoint.to_string();
        match e {
            CollectError::Query { code: Some(516 | 192 | 193 | 194), message, .. } => {
                CollectError::Authentication { endpoint, message }
            }
            CollectError::Query { code: None, message, .. } => CollectError::Unreachable { endpoint, message },
            CollectError::Timeout { seconds, .. } => {
                CollectError::Unreachable { endpoint, message: format!("no answer within {seconds} s") }
            }
            CollectError::Deadline { seconds, .. } => CollectError::Unreachable {
                endpoint,
                message: format!("no answer before the audit's deadline ({seconds} s, --deadline)"),
            },
            other => other,
        }
    }
}

/// How long the connect probe waits before it says so.
pub const WAIT_NOTICE_AFTER: Duration = Duration::from_secs(5);

/// Told while a server has not answered the connect probe: the endpoint and how long it has
/// waited; `None` when the wait ended (answered, refused or timed out) after being told.
pub type Waiting<'a> = &'a (dyn Fn(&Endpoint, Option<Duration>) + Sync);

/// `answer`, telling `waiting` from [`WAIT_NOTICE_AFTER`] on, every second, until it is in.
async fn watched<T>(answer: impl std::future::Future<Output = T>, endpoint: &Endpoint, waiting: Waiting<'_>) -> T {
    let mut answer = std::pin::pin!(answer);
    let started = tokio::time::Instant::now();
    let mut waited = WAIT_NOTICE_AFTER;
    let mut told = false;
    loop {
        tokio::select! {
            out = &mut answer => {
                if told {
                    waiting(endpoint, None);
                }
                return out;
            }
            () = tokio::time::sleep_until(started + waited) => {
                waiting(endpoint, Some(waited));
                told = true;
                waited += Duration::from_secs(1);
            }
        }
    }
}

/// One line of an answer to `each` (blank lines are none): the rows it was, 0 or 1.
fn row(line: &[u8], each: &mut dyn FnMut(&str) -> Result<(), String>) -> Result<u64, String> {
    let text = String::from_utf8_lossy(line);
    if text.trim().is_empty() { Ok(0) } else { each(&text).map(|()| 1) }
}

/// Unique to one session: the start time, a count of this process's sessions (a cluster
/// audit opens hundreds within a millisecond) and a random part (another audit, on another
/// machine, with the same process id): a query_id the server already runs is refused
/// (QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING).
fn unique_suffix() -> String {
    use std::hash::{BuildHasher, RandomState};
    static SESSIONS: AtomicU32 = AtomicU32::new(0);
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let session = SESSIONS.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one((millis, session)) as u32;
    format!("{millis}-{session}-{random:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_servers_budget_is_given_to_each_round_of_a_fleet_and_a_set_budget_stands() {
        let (query, total) = (Duration::from_secs(30), Duration::from_secs(90));
        let one = Limits::new(query, total).per_server();
        // 2,000 replicas 8 at a time: 250 rounds of one server's 90 s; each query still 30 s
        let direct = one.for_fleet(2_000, Some(8));
        assert_eq!((direct.per_query, direct.total), (query, total * 250));
        assert_eq!(direct.deadline - one.deadline, total * 249);
        // through clusterAllReplicas each 100 replicas add a server's budget, to each query too
        let fan_out = one.for_fleet(250, None);
        assert_eq!((fan_out.per_query, fan_out.total), (query * 3, total * 3));
        assert_eq!(one.for_fleet(1, Some(8)).total, total);
        let set = Limits::new(query, total);
        assert_eq!(set.for_fleet(2_000, Some(8)).deadline, set.deadline);
    }
}
