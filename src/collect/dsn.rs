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

/// `scheme://[user[:password]@]host[:port][/database]`, parsed by the `url` crate (percent
/// escapes, IPv6 literals). No message shows the credentials: they are cut out of the DSN
/// before it is echoed.
fn parse_dsn(dsn: &str) -> Result<Endpoint, String> {
    let shown = redact(dsn);
    let (scheme, _) =
        dsn.split_once("://").ok_or_else(|| format!("`{shown}`: a DSN looks like http://user@host:8123/db"))?;
    let secure = match scheme {
        "http" | "clickhouse" => false,
        "https" | "clickhouses" => true,
        other => return Err(format!("unknown DSN scheme `{other}` (http, https, clickhouse)")),
    };
    let url = url::Url::parse(dsn).map_err(|e| {
        let hint = if dsn.contains('@')
            && matches!(e, url::ParseError::InvalidPort | url::ParseError::InvalidDomainCharacter)
        {
            " (a `/`, `?`, `#` or `@` in the user or password must be percent-encoded: %2F, %3F, %23, %40)"
        } else {
            ""
        };
        format!("`{shown}`: {e}{hint}")
    })?;
    let host = match url.host() {
        Some(url::Host::Ipv6(address)) => address.to_string(),
        Some(url::Host::Ipv4(address)) => address.to_string(),
        Some(url::Host::Domain(name)) if !name.is_empty() => decoded(name, "host", &shown)?,
        _ => return Err(format!("`{shown}`: no host")),
    };
    let port = url.port().unwrap_or(if secure { 8443 } else { 8123 });
    let user = decoded(url.username(), "user", &shown)?;
    let password = Secret::new(decoded(url.password().unwrap_or_default(), "password", &shown)?);
    let database = decoded(url.path().trim_start_matches('/'), "database", &shown)?;
    let database = Some(database).filter(|d| !d.is_empty());
    Ok(Endpoint { secure, host, port, user, password, database, ca_cert: None })
}

/// A DSN part with its percent escapes decoded; its text is never in the error.
fn decoded(part: &str, what: &str, shown: &str) -> Result<String, String> {
    percent_encoding::percent_decode_str(part)
        .decode_utf8()
        .map(|text| text.into_owned())
        .map_err(|_| format!("`{shown}`: the {what} is not UTF-8 once its %-escapes are decoded"))
}

/// A DSN with everything between `://` and the last `@` (user and password) replaced, for
/// messages: the DSN may be malformed, so no guess is made about where the password ends.
pub fn redact(dsn: &str) -> String {
    let start = dsn.find("://").map_or(0, |s| s + 3);
    match dsn.rfind('@') {
        Some(at) if at >= start => format!("{}***{}", &dsn[..start], &dsn[at..]),
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
        assert_eq!(redact("http://bob:hunter2@h:8123"), "http://***@h:8123");
        assert_eq!(redact("bob:hunter2@h:8123"), "***@h:8123");
    }

    #[test]
    fn malformed_credentials_are_errors_that_hide_them() {
        // a lone `%a` and a non-ASCII byte: was a panic (UTF-8 slicing) showing the password
        let e = dsn("http://bob:%aé@h").unwrap();
        assert_eq!(e.password.expose(), "%aé");
        // an unescaped `/` in the password: was "bad port `hunter`"
        let err = dsn("http://bob:hunter/2@h:8123").unwrap_err();
        assert!(!err.contains("hunter") && err.contains("percent-encoded"), "{err}");
        let err = dsn("http://bob:%ff%fe@h").unwrap_err();
        assert!(err.contains("password is not UTF-8") && !err.contains("%ff"), "{err}");
    }

    #[test]
    fn ipv6_and_escapes() {
        let e = dsn("https://al%69ce:p%2Fw@[2001:db8::1]:9443/my%20db").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.user.as_str()), ("2001:db8::1", 9443, "alice"));
        assert_eq!((e.password.expose(), e.database.as_deref()), ("p/w", Some("my db")));
        assert_eq!(e.url(), "https://[2001:db8::1]:9443");
        assert!(dsn("http://bob@[::1:8123").unwrap_err().contains("invalid IPv6"));
        assert!(dsn("http://h:99999").unwrap_err().contains("invalid port"));
    }
}
