//! The files a configuration was read from, and positions inside them.
//!
//! Every node of a merged tree carries an [`Origin`] (file + byte offset). Line and
//! column are computed on demand from the file's line index, so loading thousands of
//! fragments stays cheap. Once parsed, a file's text is kept compressed: only diagnostics
//! and report snippets read it again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Index of a file in a [`SourceMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// Where a node came from: a file and the byte offset of its first character.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Origin {
    pub file: FileId,
    pub offset: u32,
}

/// A resolved position, 1-based line and column (column counted in characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Location {
    pub file: String,
    pub line: u32,
    pub column: u32,
}

/// `file:line:column`.
impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

#[derive(Debug)]
pub struct SourceFile {
    /// Absolute or as-resolved path (what ClickHouse would list in its header comment).
    pub path: PathBuf,
    /// How the file is shown to the user: relative to the main config's directory when possible.
    pub display: String,
    text: Text,
    /// The text's length in bytes.
    len: usize,
    line_starts: Box<[u32]>,
}

/// A file's text: whole while it is parsed, then compressed (2,000 fragments' texts would
/// otherwise be the largest part of a loaded config's memory, for the few lines that a
/// diagnostic quotes).
#[derive(Debug)]
enum Text {
    Held(Arc<String>),
    /// ASCII only (a column is then a byte count, read without the text), LZ4-compressed with
    /// its length in front.
    Packed(Box<[u8]>),
}

impl SourceFile {
    pub fn new(path: PathBuf, display: String, text: String) -> Self {
        let mut line_starts = vec![0u32];
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| (i + 1) as u32));
        let len = text.len();
        SourceFile { path, display, text: Text::Held(Arc::new(text)), len, line_starts: line_starts.into() }
    }

    /// The file's text (the same bytes that were parsed; unpacked anew when packed, not kept).
    pub fn text(&self) -> Arc<String> {
        match &self.text {
            Text::Held(text) => Arc::clone(text),
            Text::Packed(packed) => {
                let bytes = lz4_flex::block::decompress_size_prepended(packed)
                    .expect("the bytes were compressed by `pack` in this process");
                Arc::new(String::from_utf8(bytes).expect("only ASCII text is packed"))
            }
        }
    }

    /// Compresses the text once the file is parsed, when it is ASCII only (a file with other
    /// characters keeps its text: its columns count characters, read from the text).
    pub fn pack(&mut self, packer: &mut Packer) {
        let Text::Held(text) = &self.text else { return };
        if !text.is_ascii() {
            return;
        }
        // the length first, as `decompress_size_prepended` reads it
        let needed = 4 + lz4_flex::block::get_maximum_output_size(text.len());
        if packer.out.len() < needed {
            packer.out.resize(needed, 0);
        }
        packer.out[..4].copy_from_slice(&(text.len() as u32).to_le_bytes());
        let out = &mut packer.out[4..needed];
        // a text that does not compress (it cannot fail: `out` has the room) stays whole
        if let Ok(written) = lz4_flex::block::compress_into_with_table(text.as_bytes(), out, &mut packer.table) {
            self.text = Text::Packed(packer.out[..4 + written].into());
        }
    }

    /// 1-based line and column of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line_index = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line_index] as usize;
        let end = (offset as usize).min(self.len);
        // a column counts characters; in ASCII text (most configs, and every packed one) they
        // are its bytes, checked a word at a time
        let column = match &self.text {
            Text::Held(text) => {
                text.get(start..end).map_or(end - start, |s| if s.is_ascii() { s.len() } else { s.chars().count() })
            }
            Text::Packed(_) => end - start,
        };
        (line_index as u32 + 1, column as u32 + 1)
    }

    /// File, line and column of a byte offset.
    pub fn locate(&self, offset: u32) -> Location {
        let (line, column) = self.line_col(offset);
        Location { file: self.display.clone(), line, column }
    }

    /// `file:line:column` of a byte offset, as [`Location`] shows it (without copying the
    /// file's name first: a config fact holds one per setting of 2,000 profiles).
    pub fn at(&self, offset: u32) -> String {
        let (line, column) = self.line_col(offset);
        // written piece by piece: `format!` cost four times as much, and the users facts of
        // 2,000 profiles format 24,000 locations
        let (mut line_digits, mut column_digits) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (line, column) = (line_digits.format(line), column_digits.format(column));
        let mut at = String::with_capacity(self.display.len() + line.len() + column.len() + 2);
        for part in [self.display.as_str(), ":", line, ":", column] {
            at.push_str(part);
        }
        at
    }
}

/// What [`SourceFile::pack`] compresses with, kept from one file to the next: its table and
/// buffer are not allocated and zeroed again for each of 2,000 files.
#[derive(Default)]
pub struct Packer {
    table: lz4_flex::block::CompressTable,
    out: Vec<u8>,
}

/// Every file that contributed to a loaded configuration, in the order read.
#[derive(Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
    /// Directory that display paths are made relative to.
    base_dir: PathBuf,
}

impl SourceMap {
    pub fn new(base_dir: PathBuf) -> Self {
        SourceMap { files: Vec::new(), base_dir }
    }

    pub fn add(&mut self, path: PathBuf, text: String) -> FileId {
        let display = display_path(&self.base_dir, &path);
        self.push(SourceFile::new(path, display, text))
    }

    /// Adds a file read elsewhere (see [`SourceMap::next_id`]).
    pub fn push(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    /// The id the next file added will get: files read on other threads are numbered ahead.
    pub fn next_id(&self) -> FileId {
        FileId(self.files.len() as u32)
    }

    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn file_mut(&mut self, id: FileId) -> &mut SourceFile {
        &mut self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }

    pub fn locate(&self, origin: Origin) -> Location {
        self.file(origin.file).locate(origin.offset)
    }
}

/// `path` relative to `base` when it lies below it, else as given.
/// A file name with a control character (an escape sequence) has it written out: the name is
/// printed in reports and errors, and must not drive the terminal.
pub fn display_path(base: &Path, path: &Path) -> String {
    let shown = path.strip_prefix(base).unwrap_or(path).display().to_string();
    crate::mask::without_controls(&shown).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based_and_count_characters() {
        let f = SourceFile::new("a".into(), "a".into(), "ab\ncé<x>\n".into());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        // 'é' is two bytes but one column
        assert_eq!(f.line_col(6), (2, 3));
    }

    #[test]
    fn a_packed_file_keeps_its_text_and_positions() {
        let text = "<a>\n  <b>1</b>\n</a>\n";
        let mut f = SourceFile::new("a".into(), "a".into(), text.into());
        let held: Vec<_> = (0..text.len() as u32 + 2).map(|o| f.line_col(o)).collect();
        // one packer for every file: a large text, then a smaller one in its buffer
        let mut packer = Packer::default();
        let large = "<a>\n".repeat(40_000);
        let mut l = SourceFile::new("l".into(), "l".into(), large.clone());
        l.pack(&mut packer);
        f.pack(&mut packer);
        assert!(matches!(f.text, Text::Packed(_)));
        assert_eq!(f.text().as_str(), text);
        assert_eq!(l.text().as_str(), large);
        assert_eq!((0..text.len() as u32 + 2).map(|o| f.line_col(o)).collect::<Vec<_>>(), held);
        // other characters keep the text whole: their columns are read from it
        let mut g = SourceFile::new("g".into(), "g".into(), "cé<x>".into());
        g.pack(&mut packer);
        assert!(matches!(g.text, Text::Held(_)));
        assert_eq!(g.line_col(4), (1, 4));
    }
}
