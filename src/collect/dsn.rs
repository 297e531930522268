//! Where and how to connect, from the forms people type: `http(s)://user:pass@host:8123/db`,
//! `clickhouse://...`, or `--host --port --user --password --secure` like clickhouse-client,
//! with CLICKHOUSE_HOST / CLICKHOUSE_USER / CLICKHOUSE_PASSWORD from the environment.
//! The password is kept apart and never displayed.

use std::fmt;

/// A password that prints as `***`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub secure: bool,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Secret,
    pub database: Option<String>,
    /// Extra CA certificates (PEM) to trust for HTTPS, beside the public roots.
    pub ca_cert: Option<std::path::PathBuf>,
}

impl Endpoint {
    /// The HTTP(S) URL without credentials.
    pub fn url(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("{}://{host}:{}", if self.secure { "https" } else { "http" }, self.port)
    }
}

/// `user@url`: how an endpoint is named in reports (never with the password).
impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.user, self.url())
    }
}

/// Connection options as given on the command line and in the environment.
#[derive(Debug, Default, Clone)]
pub struct ConnectOptions {
    pub dsn: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub secure: bool,
    pub ca_cert: Option<std::path::PathBuf>,
}

const NATIVE_PORTS: [u16; 2] = [9000, 9440];

pub fn resolve(options: &ConnectOptions) -> Result<Endpoint, String> {
    let mut endpoint = match &options.dsn {
        Some(dsn) => parse_dsn(dsn)?,
        None => {
            let host = options
                .host
                .clone()
                .or_else(|| std::env::var("CLICKHOUSE_HOST").ok())
                .unwrap_or_else(|| "localhost".into());
            let port = options.port.unwrap_or(if options.secure { 8443 } else { 8123 });
            Endpoint {
                secure: options.secure,
                host,
                port,
                user: String::new(),
                password: Secret::default(),
                database: None,
                ca_cert: None,
            }
        }
    };
    if let Some(user) = &options.user {
        endpoint.user = user.clone();
    }
    if endpoint.user.is_empty() {
        endpoint.user = std::env::var("CLICKHOUSE_USER").unwrap_or_else(|_| "default".into());
    }
    if let Some(password) = &options.password {
        endpoint.password = password.clone();
    } else if endpoint.password.expose().is_empty()
        && let Ok(p) = std::env::var("CLICKHOUSE_PASSWORD")
    {
        endpoint.password = Secret::new(p);
    }
    endpoint.ca_cert = options.ca_cert.clone();
    if NATIVE_PORTS.contains(&endpoint.port) {
        return Err(format!(
            "port {} is ClickHouse's native protocol; chaudit speaks HTTP: use port {} (the server's http_port{})",
            endpoint.port,
            if endpoint.port == 9440 { 8443 } else { 8123 },
            if endpoint.port == 9440 { "/https_port" } else { "" }
        ));
    }
    Ok(endpoint)
}

/// `scheme://[user[:password]@]host[:port][/database]`.
fn parse_dsn(dsn: &str) -> Result<Endpoint, String> {
    let (scheme, rest) =
        dsn.split_once("://").ok_or_else(|| format!("`{}`: a DSN looks like http://user@host:8123/db", redact(dsn)))?;
    let secure = match scheme {
        "http" | "clickhouse" => false,
        "https" | "clickhouses" => true,
        other => return Err(format!("unknown DSN scheme `{other}` (http, https, clickhouse)")),
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let (credentials, address) = match authority.rsplit_once('@') {
        Some((c, a)) => (Some(c), a),
        None => (None, authority),
    };
    let (user, password) = match credentials {
        Some(c) => match c.split_once(':') {
            Some((u, p)) => (percent_decode(u), Secret::new(percent_decode(p))),
            None => (percent_decode(c), Secret::default()),
        },
        None => (String::new(), Secret::default()),
    };
    let (host, port) = split_host_port(address)?;
    let port = port.unwrap_or(if secure { 8443 } else { 8123 });
    if host.is_empty() {
        return Err(format!("`{}`: no host", redact(dsn)));
    }
    let database = Some(path.to_string()).filter(|d| !d.is_empty());
    Ok(Endpoint { secure, host, port, user, password, database, ca_cert: None })
}

fn split_host_port(address: &str) -> Result<(String, Option<u16>), String> {
    if let Some(rest) = address.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("unclosed [ in the host")?;
        let port = after.strip_prefix(':').map(|p| p.parse().map_err(|_| format!("bad port `{p}`"))).transpose()?;
        return Ok((host.to_string(), port));
    }
    match address.rsplit_once(':') {
        Some((host, port)) => Ok((host.to_string(), Some(port.parse().map_err(|_| format!("bad port `{port}`"))?))),
        None => Ok((address.to_string(), None)),
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A DSN with its password replaced, for messages.
pub fn redact(dsn: &str) -> String {
    match (dsn.find("://"), dsn.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let credentials = &dsn[s + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &dsn[..s + 3], &dsn[at..]),
                None => dsn.to_string(),
            }
        }
        _ => dsn.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dsn(s: &str) -> Result<Endpoint, String> {
        resolve(&ConnectOptions { dsn: Some(s.into()), ..Default::default() })
    }

    #[test]
    fn dsn_forms() {
        let e = dsn("https://alice:p%40ss@ch.example.com/analytics").unwrap();
        assert_eq!((e.secure, e.host.as_str(), e.port, e.user.as_str()), (true, "ch.example.com", 8443, "alice"));
        assert_eq!(e.password.expose(), "p@ss");
        assert_eq!(e.database.as_deref(), Some("analytics"));
        assert_eq!(e.to_string(), "alice@https://ch.example.com:8443");
        let e = dsn("clickhouse://[::1]:18123").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 18123));
        assert_eq!(e.url(), "http://[::1]:18123");
    }

    #[test]
    fn native_ports_are_refused_with_the_http_port() {
        let err = dsn("clickhouse://host:9000").unwrap_err();
        assert!(err.contains("native protocol") && err.contains("8123"), "{err}");
    }

    #[test]
    fn passwords_never_print() {
        let e = dsn("http://bob:hunter2@h:8123").unwrap();
        assert!(!format!("{e} {e:?}").contains("hunter2"));
        assert_eq!(redact("http://bob:hunter2@h:8123"), "http://bob:***@h:8123");
    }
}
