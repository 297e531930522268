//! Where and how to connect, from the forms people type: `http(s)://user:pass@host:8123/db`,
//! clickhouse-client's `clickhouse://...`, or `--host --port --user --password --secure` like
//! clickhouse-client, completed by CLICKHOUSE_HOST / _PORT / _USER / _PASSWORD from the environment.
//! The password is kept apart and never displayed.

use std::fmt;

/// A password that prints as `***`, and that no output of the run shows (it is registered
/// with [`crate::redact`] when made: a server's error may echo it).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        let secret = Secret(s.into());
        crate::redact::register_credential(&secret.0);
        secret
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

/// Connection options as given on the command line.
#[derive(Debug, Default, Clone)]
pub struct ConnectOptions {
    pub dsn: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub secure: bool,
    pub ca_cert: Option<std::path::PathBuf>,
    /// CLICKHOUSE_HOST, CLICKHOUSE_PORT, CLICKHOUSE_USER, CLICKHOUSE_PASSWORD.
    pub env: Environment,
}

/// clickhouse-client's environment variables. They complete a connection that was asked
/// for; they never ask for one.
#[derive(Debug, Default, Clone)]
pub struct Environment {
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
    pub password: Option<Secret>,
}

impl Environment {
    pub fn read() -> Environment {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Environment {
            host: var("CLICKHOUSE_HOST"),
            port: var("CLICKHOUSE_PORT"),
            user: var("CLICKHOUSE_USER"),
            password: var("CLICKHOUSE_PASSWORD").map(Secret::new),
        }
    }
}

/// Where to connect, and what was assumed on the way (a native port read as its HTTP
/// counterpart): the caller shows the notes.
#[derive(Debug)]
pub struct Resolved {
    pub endpoint: Endpoint,
    pub notes: Vec<String>,
}

/// clickhouse-client's native ports and the HTTP ports a stock server pairs them with.
const NATIVE_TO_HTTP: [(u16, u16, bool); 2] = [(9000, 8123, false), (9440, 8443, true)];

/// The endpoint, each part from the first place that gives it:
/// - host: `--dsn`, `--host`, CLICKHOUSE_HOST, `localhost`;
/// - port: `--dsn`, `--port`, CLICKHOUSE_PORT (only without `--dsn`), 8123 (8443 with `--secure`);
/// - user: `--user`, the DSN's user, CLICKHOUSE_USER, `default`;
/// - password: `--password`/`--password-file`, the DSN's password, CLICKHOUSE_PASSWORD, none.
///
/// A native port (9000, 9440) is read as the stock HTTP port beside it (8123, 8443) with a
/// note; `clickhouse://` is clickhouse-client's connection string, whose port is native.
pub fn resolve(options: &ConnectOptions) -> Result<Resolved, String> {
    let env = &options.env;
    let mut notes = Vec::new();
    let mut endpoint = match &options.dsn {
        Some(dsn) => parse_dsn(dsn, &mut notes)?,
        None => {
            let host = options.host.clone().or_else(|| env.host.clone()).unwrap_or_else(|| "localhost".into());
            // clickhouse-client's `--host ch1:9440` (and `[::1]:8123`): the port in the host
            let (host, port_in_host) = split_host_port(&host)?;
            if let (Some(given), Some(port)) = (options.port, port_in_host)
                && given != port
            {
                return Err(format!("--host {host}:{port} and --port {given} name two ports: give one"));
            }
            let port = match (options.port.or(port_in_host), &env.port) {
                (Some(port), _) => Some(port),
                (None, Some(text)) => {
                    Some(text.parse::<u16>().map_err(|_| format!("CLICKHOUSE_PORT `{text}` is not a port number"))?)
                }
                (None, None) => None,
            };
            let (port, secure) = match port {
                Some(port) => http_port(port, options.secure, &mut notes),
                None => (if options.secure { 8443 } else { 8123 }, options.secure),
            };
            Endpoint {
                secure,
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
        endpoint.user = env.user.clone().unwrap_or_else(|| "default".into());
    }
    if let Some(password) = &options.password {
        endpoint.password = password.clone();
    } else if endpoint.password.expose().is_empty()
        && let Some(p) = &env.password
    {
        endpoint.password = p.clone();
    }
    endpoint.ca_cert = options.ca_cert.clone();
    Ok(Resolved { endpoint, notes })
}

/// `host:port` as clickhouse-client takes it (`ch1:8123`, `[::1]:8123`); a bare IPv6 address
/// (`::1`) is a host alone.
fn split_host_port(host: &str) -> Result<(String, Option<u16>), String> {
    let port = |text: &str| text.parse::<u16>().map_err(|_| format!("--host {host}: `{text}` is not a port number"));
    if let Some(rest) = host.strip_prefix('[') {
        let (address, after) =
            rest.split_once(']').ok_or_else(|| format!("--host {host}: no `]` closes the address"))?;
        return match after.strip_prefix(':') {
            Some(text) => Ok((address.to_string(), Some(port(text)?))),
            None if after.is_empty() => Ok((address.to_string(), None)),
            None => Err(format!("--host {host}: `{after}` after the address")),
        };
    }
    match host.split_once(':') {
        Some((name, text)) if !text.contains(':') => Ok((name.to_string(), Some(port(text)?))),
        _ => Ok((host.to_string(), None)),
    }
}

/// A port as given: a native one becomes the HTTP(S) port a stock server pairs with it.
fn http_port(port: u16, secure: bool, notes: &mut Vec<String>) -> (u16, bool) {
    match NATIVE_TO_HTTP.iter().find(|(native, _, _)| *native == port) {
        Some(&(native, http, tls)) => {
            notes.push(format!(
                "port {native} is ClickHouse's native protocol (clickhouse-client's); chaudit speaks HTTP, so it \
                 connects to {http}, the stock {} (give --port with the server's own if it differs)",
                if tls { "https_port" } else { "http_port" }
            ));
            (http, secure || tls)
        }
        None => (port, secure),
    }
}

/// `scheme://[user[:password]@]host[:port][/database]`, parsed by the `url` crate (percent
/// escapes, IPv6 literals). No message shows the credentials: they are cut out of the DSN
/// before it is echoed. `clickhouse://` is clickhouse-client's connection string: its port is
/// native (9000 by default, 9440 with `?secure`), read as the HTTP port beside it; another
/// native port has no known HTTP counterpart and is refused.
fn parse_dsn(dsn: &str, notes: &mut Vec<String>) -> Result<Endpoint, String> {
    // a credential given as a query parameter (`?password=`) is masked wherever it reappears
    if let Ok(url) = url::Url::parse(dsn) {
        for (name, value) in url.query_pairs() {
            if crate::mask::is_secret_name(&name) {
                Secret::new(value.into_owned());
            }
        }
    }
    let shown = redact(dsn);
    let (scheme, _) =
        dsn.split_once("://").ok_or_else(|| format!("`{shown}`: a DSN looks like http://user@host:8123/db"))?;
    let native = match scheme {
        "http" | "https" => false,
        "clickhouse" => true,
        other => return Err(format!("unknown DSN scheme `{other}` (http, https, or clickhouse-client's clickhouse)")),
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
    let (secure, port) = if native {
        let secure = url.query_pairs().any(|(k, v)| k == "secure" && matches!(&*v, "" | "1" | "true"));
        let port = url.port().unwrap_or(if secure { 9440 } else { 9000 });
        if !NATIVE_TO_HTTP.iter().any(|(n, _, _)| *n == port) {
            return Err(format!(
                "`{shown}`: clickhouse:// is clickhouse-client's native protocol and port {port} has no known HTTP \
                 counterpart; chaudit speaks HTTP: give http://HOST:HTTP_PORT (the server's http_port)"
            ));
        }
        let (port, tls) = http_port(port, secure, notes);
        (tls, port)
    } else {
        let secure = scheme == "https";
        match url.port() {
            Some(port) => {
                let (port, tls) = http_port(port, secure, notes);
                (tls, port)
            }
            None => (secure, if secure { 8443 } else { 8123 }),
        }
    };
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
    let shown = match dsn.rfind('@') {
        Some(at) if at >= start => format!("{}***{}", &dsn[..start], &dsn[at..]),
        _ => dsn.to_string(),
    };
    // and a credential in its query (`?password=`)
    crate::mask::mask_url_credentials(&shown).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dsn(s: &str) -> Result<Endpoint, String> {
        resolve(&ConnectOptions { dsn: Some(s.into()), ..Default::default() }).map(|r| r.endpoint)
    }

    #[test]
    fn dsn_forms() {
        let e = dsn("https://alice:p%40ss@ch.example.com/analytics").unwrap();
        assert_eq!((e.secure, e.host.as_str(), e.port, e.user.as_str()), (true, "ch.example.com", 8443, "alice"));
        assert_eq!(e.password.expose(), "p@ss");
        assert_eq!(e.database.as_deref(), Some("analytics"));
        assert_eq!(e.to_string(), "alice@https://ch.example.com:8443");
        let e = dsn("http://[::1]:18123").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 18123));
        assert_eq!(e.url(), "http://[::1]:18123");
    }

    #[test]
    fn clickhouse_scheme_is_the_native_connection_string_read_as_http() {
        let resolved = resolve(&ConnectOptions { dsn: Some("clickhouse://u:pw@h/db".into()), ..Default::default() });
        let resolved = resolved.unwrap();
        assert_eq!(resolved.endpoint.url(), "http://h:8123");
        assert!(resolved.notes[0].contains("port 9000 is ClickHouse's native protocol"), "{:?}", resolved.notes);
        assert_eq!(dsn("clickhouse://h:9440").unwrap().url(), "https://h:8443");
        assert_eq!(dsn("clickhouse://h?secure").unwrap().url(), "https://h:8443");
        let err = dsn("clickhouse://u:hunter2@h:9001").unwrap_err();
        assert!(err.contains("no known HTTP counterpart") && !err.contains("hunter2"), "{err}");
        assert!(dsn("clickhouses://h").unwrap_err().contains("unknown DSN scheme"));
    }

    #[test]
    fn native_ports_become_the_stock_http_ports_with_a_note() {
        let options = ConnectOptions { host: Some("h".into()), port: Some(9440), ..Default::default() };
        let resolved = resolve(&options).unwrap();
        assert_eq!(resolved.endpoint.url(), "https://h:8443");
        assert!(resolved.notes[0].contains("https_port"), "{:?}", resolved.notes);
        assert_eq!(dsn("http://h:9000").unwrap().port, 8123);
    }

    #[test]
    fn each_part_comes_from_the_first_place_that_gives_it() {
        let env = Environment {
            host: Some("env-host".into()),
            port: Some("9000".into()),
            user: Some("env-user".into()),
            password: Some(Secret::new("env-pw")),
        };
        let with = |options: ConnectOptions| resolve(&ConnectOptions { env: env.clone(), ..options }).unwrap().endpoint;
        // the environment completes the command line
        let e = with(ConnectOptions { port: Some(18123), ..Default::default() });
        assert_eq!(
            (e.host.as_str(), e.port, e.user.as_str(), e.password.expose()),
            ("env-host", 18123, "env-user", "env-pw")
        );
        let e = with(ConnectOptions { host: Some("h".into()), ..Default::default() });
        assert_eq!((e.host.as_str(), e.port), ("h", 8123));
        // the command line wins over the DSN, the DSN over the environment
        let e = with(ConnectOptions {
            dsn: Some("http://dsn-user:dsn-pw@d:18124".into()),
            user: Some("cli-user".into()),
            ..Default::default()
        });
        assert_eq!((e.host.as_str(), e.port, e.user.as_str(), e.password.expose()), ("d", 18124, "cli-user", "dsn-pw"));
        let e = with(ConnectOptions {
            dsn: Some("http://d".into()),
            password: Some(Secret::new("cli-pw")),
            ..Default::default()
        });
        assert_eq!((e.user.as_str(), e.password.expose()), ("env-user", "cli-pw"));
        let e = resolve(&ConnectOptions { dsn: Some("http://d".into()), ..Default::default() }).unwrap().endpoint;
        assert_eq!((e.user.as_str(), e.password.expose()), ("default", ""));
        let bad = ConnectOptions {
            env: Environment { port: Some("ninety".into()), ..Default::default() },
            ..Default::default()
        };
        assert!(resolve(&bad).unwrap_err().contains("CLICKHOUSE_PORT `ninety`"));
    }

    #[test]
    fn a_port_in_the_host_as_clickhouse_client_takes_it() {
        let resolve_host = |host: &str, port: Option<u16>| {
            resolve(&ConnectOptions { host: Some(host.into()), port, ..Default::default() })
                .map(|r| (r.endpoint.host, r.endpoint.port))
        };
        assert_eq!(resolve_host("127.0.0.1:53123", None), Ok(("127.0.0.1".into(), 53123)));
        assert_eq!(resolve_host("[::1]:8124", None), Ok(("::1".into(), 8124)));
        assert_eq!(resolve_host("::1", None), Ok(("::1".into(), 8123)));
        assert_eq!(resolve_host("ch1:8123", Some(8123)), Ok(("ch1".into(), 8123)));
        // a native port in the host is read as the stock HTTP port beside it, as --port is
        assert_eq!(resolve_host("ch1:9000", None), Ok(("ch1".into(), 8123)));
        assert!(resolve_host("ch1:8123", Some(9999)).unwrap_err().contains("two ports"));
        assert!(resolve_host("ch1:http", None).unwrap_err().contains("not a port number"));
    }

    #[test]
    fn passwords_never_print() {
        let e = dsn("http://bob:hunter2@h:8123").unwrap();
        assert!(!format!("{e} {e:?}").contains("hunter2"));
        assert_eq!(redact("http://bob:hunter2@h:8123"), "http://***@h:8123");
        assert_eq!(redact("bob:hunter2@h:8123"), "***@h:8123");
        assert_eq!(redact("clickhouse://bob@h?password=hunter2&secure"), "clickhouse://***@h?password=******&secure");
        let err = dsn("clickhouse://bob@h:1?password=query-pw-7").unwrap_err();
        assert!(!err.contains("query-pw-7"), "{err}");
        assert_eq!(crate::redact::redact("echoed query-pw-7"), "echoed ******");
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
