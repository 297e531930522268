//! Why a query or a connection failed, and what kept a fact from being read.

use super::*;

#[derive(Debug, Error)]
pub enum CollectError {
    #[error("cannot reach {endpoint}: {message}")]
    Unreachable { endpoint: String, message: String },
    #[error("{endpoint} refused the login: {message}")]
    Authentication { endpoint: String, message: String },
    #[error("{purpose}: {message}")]
    Query { purpose: String, message: String, code: Option<u32> },
    #[error("{purpose}: no answer within {seconds} s")]
    Timeout { purpose: String, seconds: u64 },
    #[error("{purpose}: not sent: the audit's deadline ({seconds} s, --deadline) has passed")]
    Deadline { purpose: String, seconds: u64 },
    #[error("{purpose}: the server's answer is not JSON rows: {message}")]
    BadResponse { purpose: String, message: String },
    /// The answer passed one of chaudit's caps ([`crate::limits`]): the rest is not read.
    #[error("{purpose}: {what}")]
    TooLarge { purpose: String, what: String },
    /// The answer may have been cut by the user's own limits: see [`Guard`].
    #[error("{purpose}: {why}")]
    Cut { purpose: String, why: String },
    /// The replicas' addresses for direct connections are missing or repeat (a usage error).
    #[error("{0}")]
    Replicas(String),
    /// The --ca-cert file is not a PEM file of certificates (a usage error).
    #[error("--ca-cert {0}")]
    CaCert(String),
    #[error("{endpoint} has no cluster `{cluster}` in system.clusters")]
    UnknownCluster { endpoint: String, cluster: String },
}

impl CollectError {
    /// Why a fact could not be read, as the reports say it: what really happened first.
    pub fn reason(&self) -> String {
        format!("{}: {self}", self.kind().label())
    }

    pub fn kind(&self) -> Unread {
        match self {
            // ACCESS_DENIED, NOT_ENOUGH_PRIVILEGES, READONLY
            CollectError::Query { code: Some(497 | 241 | 164), .. } => Unread::PermissionDenied,
            // UNKNOWN_TABLE, UNKNOWN_DATABASE
            CollectError::Query { code: Some(60 | 81), .. } => Unread::Missing,
            CollectError::Timeout { .. } | CollectError::Deadline { .. } => Unread::Timeout,
            // TOO_MANY_ROWS, TOO_MANY_BYTES, TOO_MANY_ROWS_OR_BYTES: over the user's limit
            CollectError::Query { code: Some(158 | 307 | 396), .. } => Unread::Limited,
            CollectError::TooLarge { .. } | CollectError::Cut { .. } => Unread::Limited,
            CollectError::BadResponse { .. } => Unread::BadResponse,
            CollectError::Unreachable { .. } | CollectError::Authentication { .. } | CollectError::CaCert(_) => {
                Unread::Unreachable
            }
            CollectError::Query { code: None, .. } => Unread::Unreachable,
            CollectError::Query { .. } | CollectError::UnknownCluster { .. } | CollectError::Replicas(_) => {
                Unread::QueryFailed
            }
        }
    }
}

/// What kept a fact from being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    PermissionDenied,
    /// The table does not exist (on this server or in its version): no evidence, no failure.
    Missing,
    Timeout,
    BadResponse,
    Unreachable,
    QueryFailed,
    /// The answer is over a limit (the user's, or chaudit's), or may have been cut by one.
    Limited,
    /// A row policy filters the table for the auditing user: its rows are not all there are.
    Filtered,
}

impl Unread {
    pub fn label(self) -> &'static str {
        match self {
            Unread::PermissionDenied => "permission denied",
            Unread::Missing => "missing table",
            Unread::Timeout => "timeout",
            Unread::BadResponse => "bad response",
            Unread::Unreachable => "server unreachable",
            Unread::QueryFailed => "query failed",
            Unread::Limited => "over a limit",
            Unread::Filtered => "filtered by a row policy",
        }
    }

    /// The kind of a reason written by [`CollectError::reason`] (a snapshot keeps reasons as text).
    pub fn of_reason(reason: &str) -> Option<Unread> {
        [
            Unread::PermissionDenied,
            Unread::Missing,
            Unread::Timeout,
            Unread::BadResponse,
            Unread::Unreachable,
            Unread::QueryFailed,
            Unread::Limited,
            Unread::Filtered,
        ]
        .into_iter()
        .find(|kind| reason.strip_prefix(kind.label()).is_some_and(|rest| rest.starts_with(':')))
    }
}

pub(super) fn query_error(purpose: &str, e: clickhouse::error::Error) -> CollectError {
    let message = e.to_string();
    // "Code: 497. DB::Exception: ..." -> 497
    let code =
        message.split("Code: ").nth(1).and_then(|rest| rest.split(['.', ' ']).next()).and_then(|c| c.parse().ok());
    let message = match e {
        // the cause is at the end of the chain ("invalid peer certificate: UnknownIssuer")
        clickhouse::error::Error::Network(inner) => {
            let mut text = format!("network error: {inner}");
            let mut source = inner.source();
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            if text.contains("InvalidContentType") {
                text.push_str(
                    " (the server answered in plain HTTP, not TLS: this is its http_port; use http:// \
                     and no --secure, or the server's https_port, 8443 by default)",
                );
            }
            text
        }
        // the server repeats the whole query after "In scope"; the purpose already names it;
        // the server's own words start at "Code: "
        _ => {
            let server = message.find("Code: ").map_or(message.as_str(), |at| &message[at..]);
            server.split(". In scope").next().unwrap_or(server).trim().to_string()
        }
    };
    // the server's (or a proxy's) words: their control characters are written out
    let message = crate::mask::without_controls(&message).into_owned();
    CollectError::Query { purpose: purpose.to_string(), message, code }
}
