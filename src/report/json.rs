//! `--format json`: the [`Report`](super::Report) as is (schema in the README).

use std::io::Write;

/// Streams the report to `out`: a report of 100,000 findings is never held whole as text.
pub fn write(report: &super::Report, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    out.write_all(b"\n")
}
