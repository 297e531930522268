//! `chaudit man`: clap's sections (options, subcommands) and the ones a manual page owes its
//! reader: exit status, environment, examples.

use std::io::Write;

/// The manual page in roff.
pub fn render(command: clap::Command) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(command);
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    man.render_subcommands_section(&mut out)?;
    out.write_all(SECTIONS.as_bytes())?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

const SECTIONS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
Every selected rule judged; no active finding at or above \fB\-\-fail\-on\fR; for \fBdiff\fR, the two sides are equal.
.TP
\fB1\fR
Findings at or above \fB\-\-fail\-on\fR (default high); for \fBfix\fR, a finding at or above it remains after the fix; for \fBupgrade\fR, a breaking setting or known issue survives the upgrade; for \fBrules test\fR, a fixture failed; for \fBdiff\fR, the two sides differ.
.TP
\fB2\fR
Nothing was audited: a usage error, an invalid rule or suppressions file, an input that is not a regular file or is past its cap, an output that names an input, a configuration ClickHouse refuses (the message names file, line and column; \fB\-\-format sarif\fR, \fBjunit\fR and \fBjson\fR still write a report carrying the error, \fBopenmetrics\fR the verdict), or \fBcheck \-\-snapshot\fR with a flag that reads a server; for \fBdiff\fR, a side that cannot be loaded.
.TP
\fB3\fR
The run failed or could not judge what it was asked: a server that cannot be read (for \fBdiff\fR, either side), output that cannot be written, a rule that errored, or evidence that could not be read (\fIinconclusive\fR) without \fB\-\-allow\-inconclusive\fR.
.SH ENVIRONMENT
The variables of clickhouse\-client complete a live audit asked for with \fB\-\-host\fR, \fB\-\-port\fR or \fB\-\-dsn\fR; they never turn an offline run live.
.TP
\fBCLICKHOUSE_HOST\fR
The server, when \fB\-\-port\fR is given without \fB\-\-host\fR.
.TP
\fBCLICKHOUSE_PORT\fR
The HTTP(S) port, when \fB\-\-host\fR is given without \fB\-\-port\fR (9000 and 9440 are read as 8123 and 8443).
.TP
\fBCLICKHOUSE_USER\fR, \fBCLICKHOUSE_PASSWORD\fR
The user and password when neither the command line nor the DSN gives them.
.TP
\fBCLICKHOUSE_CA_CERT\fR
Extra CA certificates (PEM) to trust for HTTPS, as \fB\-\-ca\-cert\fR.
.TP
\fBNO_COLOR\fR, \fBCOLUMNS\fR
No color in text output; the width prose is wrapped at.
.SH EXAMPLES
.TP
\fBchaudit \-\-config /etc/clickhouse\-server\fR
Audit the config files (config.xml, config.d/, users.xml, users.d/).
.TP
\fBchaudit \-\-config deploy/config.xml \-\-format sarif \-o chaudit.sarif\fR
A report for GitHub code scanning.
.TP
\fBchaudit \-\-config deploy/config.xml \-\-root /etc/clickhouse\-server=deploy\fR
A checkout of /etc/clickhouse\-server whose config names its files by their absolute paths
(include_from, users_config): those paths are read from deploy/.
.TP
\fBchaudit \-\-config chi.yaml\fR
A Kubernetes manifest of the Altinity operator (ClickHouseInstallation).
.TP
\fBchaudit \-h ch1 \-u auditor \-\-password\fR
Audit a running server, read\-only; the password is asked for on the terminal.
.TP
\fBchaudit \-\-dsn http://auditor@ch1:8123 \-\-cluster prod\fR
Audit every replica of a cluster.
.TP
\fBchaudit upgrade \-\-config /etc/clickhouse\-server/config.xml \-\-from 25.8 \-\-to 26.9\fR
Review an upgrade offline.
.TP
\fBchaudit rules explain default\-user\-open\fR
What a rule checks, and why.
.TP
\fBchaudit diff before.json after.json\fR
The drift between two snapshots (or config trees, or servers); nothing printed when equal.
"#;
