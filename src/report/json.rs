//! `--format json`: the [`Report`](super::Report) as is (schema in the README).

use std::io::Write;

/// Streams the report to `out`: a report of 100,000 findings is never held whole as text.
pub fn write(report: &super::Report, out: &mut dyn Write) -> std::io::Result<()> {
    // the serializer writes a token at a time: into a buffer of a type it knows (inlined),
    // not through `dyn Write` (a call each: half the cost of writing 100,000 findings)
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer_pretty(&mut buffered, report)?;
    buffered.write_all(b"\n")?;
    buffered.flush()
}
