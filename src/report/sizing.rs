//! A document's size as an upload limit counts it, learned as it is written: held while it is
//! under the limit (then written as is), else only gzip-compressed to count its bytes, so a
//! document of 25,000 SARIF results is never held whole.

use std::io::Write;

/// A document's text while it is at most `limit` bytes, then only its gzip-compressed size:
/// the text is compressed in blocks (the compressor called for each JSON token cost four
/// times the whole report's CPU).
pub(crate) struct Sizing {
    limit: usize,
    held: Vec<u8>,
    gzip: Option<flate2::write::GzEncoder<Counted>>,
}

/// What a document came to.
pub(crate) enum Sized {
    /// Its text, at most the limit.
    Held(Vec<u8>),
    /// Its gzip-compressed size, the text being over the limit.
    Compressed(usize),
}

/// How much text is compressed at once.
const GZIP_BLOCK: usize = 1 << 16;

impl Sizing {
    pub(crate) fn new(limit: usize) -> Sizing {
        Sizing { limit, held: Vec::new(), gzip: None }
    }

    pub(crate) fn finish(self) -> std::io::Result<Sized> {
        let Some(mut gzip) = self.gzip else { return Ok(Sized::Held(self.held)) };
        gzip.write_all(&self.held)?;
        Ok(Sized::Compressed(gzip.finish()?.0))
    }
}

impl Write for Sizing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.held.extend_from_slice(bytes);
        match &mut self.gzip {
            Some(gzip) if self.held.len() >= GZIP_BLOCK => {
                gzip.write_all(&self.held)?;
                self.held.clear();
            }
            None if self.held.len() > self.limit => {
                let mut gzip = flate2::write::GzEncoder::new(Counted(0), flate2::Compression::default());
                gzip.write_all(&self.held)?;
                self.held = Vec::with_capacity(2 * GZIP_BLOCK);
                self.gzip = Some(gzip);
            }
            _ => {}
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Counts the bytes written to it.
struct Counted(usize);

impl Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::{Sized, Sizing};

    #[test]
    fn text_under_the_limit_is_held_and_over_it_only_counted() {
        let mut small = Sizing::new(10);
        small.write_all(b"0123456789").unwrap();
        assert!(matches!(small.finish().unwrap(), Sized::Held(text) if text == b"0123456789"));
        let mut big = Sizing::new(10);
        for _ in 0..100_000 {
            big.write_all(b"0123456789").unwrap();
        }
        let Sized::Compressed(size) = big.finish().unwrap() else { panic!("held over the limit") };
        assert!(size > 0 && size < 100_000, "{size}");
    }
}
