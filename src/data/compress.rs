//! Transparent decompression: gzip, bzip2 and xz files are recognised by their magic
//! bytes (not by their names) and decoded on the fly.
//!
//! Decoder failures (a corrupt or truncated stream) only show up while reading, as
//! `std::io::Error`s; readers turn them into [`Error::Decompress`] with [`read_error`].
//! All three decoders report a stream that ends early as an error (never as a short,
//! successful read), which the tests check.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// Size of the buffers put in front of (and behind) the decoders.
const BUF_SIZE: usize = 1 << 20;

/// Compression of an input file, detected from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    Plain,
    /// gzip (`1f 8b`), possibly several concatenated members.
    Gzip,
    /// bzip2 (`BZh`), possibly several concatenated streams.
    Bzip2,
    /// xz (`FD 37 7A 58 5A 00`), possibly several concatenated streams.
    Xz,
}

impl Compression {
    /// Detects the format from the first bytes of a file (fewer than 6 is fine).
    pub fn from_magic(head: &[u8]) -> Self {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(b"BZh") && head.get(3).is_none_or(|c| (b'1'..=b'9').contains(c))
        {
            Compression::Bzip2
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else {
            Compression::Plain
        }
    }

    /// Short lower-case name: `"plain"`, `"gzip"`, `"bzip2"` or `"xz"`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Plain => "plain",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
        }
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Opens `path` for buffered reading, decompressing gzip, bzip2 and xz data on the fly.
///
/// A file that cannot be opened gives [`Error::Io`] naming the path.
pub fn open_maybe_compressed(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    open_with_format(path).map(|(r, _)| r)
}

/// Like [`open_maybe_compressed`], also returning the detected compression.
pub fn open_with_format(path: &Path) -> Result<(Box<dyn BufRead + Send>, Compression)> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(Error::io(
            path,
            io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
        ));
    }
    // Read the magic bytes without seeking, so pipes and FIFOs work too.
    let mut head = [0u8; 6];
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    let format = Compression::from_magic(&head[..n]);
    let raw = Cursor::new(head[..n].to_vec()).chain(file);
    let reader: Box<dyn BufRead + Send> = match format {
        Compression::Plain => Box::new(BufReader::with_capacity(BUF_SIZE, raw)),
        Compression::Gzip => {
            let inner = BufReader::with_capacity(BUF_SIZE, raw);
            Box::new(BufReader::with_capacity(
                BUF_SIZE,
                flate2::bufread::MultiGzDecoder::new(inner),
            ))
        }
        Compression::Bzip2 => {
            let inner = BufReader::with_capacity(BUF_SIZE, raw);
            Box::new(BufReader::with_capacity(
                BUF_SIZE,
                bzip2::bufread::MultiBzDecoder::new(inner),
            ))
        }
        Compression::Xz => {
            let inner = BufReader::with_capacity(BUF_SIZE, raw);
            Box::new(BufReader::with_capacity(
                BUF_SIZE,
                xz2::bufread::XzDecoder::new_multi_decoder(inner),
            ))
        }
    };
    Ok((reader, format))
}

/// Maps an I/O error met while reading `path` to the library error: [`Error::Io`] for
/// plain files, [`Error::Decompress`] (corrupt or truncated data) for compressed ones.
pub(crate) fn read_error(path: &Path, format: Compression, e: io::Error) -> Error {
    match format {
        Compression::Plain => Error::io(path, e),
        _ => Error::Decompress {
            path: path.to_path_buf(),
            format: format.name(),
            msg: e.to_string(),
        },
    }
}

/// Calls `f` with each chunk of complete lines of `reader`, every chunk ending with
/// `\n` (a missing final newline is supplied). Lines are never split across chunks;
/// chunks are read straight from the reader's buffer, so most bytes are not copied.
///
/// `f` returns `Ok(())` to go on; its error is passed through. I/O errors are mapped
/// with [`read_error`].
pub(crate) fn for_each_line_chunk<E>(
    reader: &mut dyn BufRead,
    path: &Path,
    format: Compression,
    mut f: impl FnMut(&[u8]) -> std::result::Result<(), E>,
) -> std::result::Result<(), E>
where
    E: From<Error>,
{
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let buf = loop {
            match reader.fill_buf() {
                Ok(b) => break b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(path, format, e).into()),
            }
        };
        if buf.is_empty() {
            if !carry.is_empty() {
                carry.push(b'\n');
                f(&carry)?;
            }
            return Ok(());
        }
        let len = buf.len();
        if !carry.is_empty() {
            // Complete the line begun in an earlier buffer.
            match buf.iter().position(|&c| c == b'\n') {
                Some(k) => {
                    carry.extend_from_slice(&buf[..=k]);
                    reader.consume(k + 1);
                    f(&carry)?;
                    carry.clear();
                }
                None => {
                    carry.extend_from_slice(buf);
                    reader.consume(len);
                }
            }
            continue;
        }
        match buf.iter().rposition(|&c| c == b'\n') {
            Some(k) => {
                let res = f(&buf[..=k]);
                reader.consume(k + 1);
                res?;
            }
            None => {
                carry.extend_from_slice(buf);
                reader.consume(len);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// Writes `data` compressed with `format` to `path`.
    pub(crate) fn write_compressed(path: &Path, data: &[u8], format: Compression) {
        let mut out = File::create(path).unwrap();
        match format {
            Compression::Plain => out.write_all(data).unwrap(),
            Compression::Gzip => {
                let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap();
            }
            Compression::Bzip2 => {
                let mut e = bzip2::write::BzEncoder::new(out, bzip2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap();
            }
            Compression::Xz => {
                let mut e = xz2::write::XzEncoder::new(out, 6);
                e.write_all(data).unwrap();
                e.finish().unwrap();
            }
        }
    }

    fn sample_text() -> Vec<u8> {
        let mut s = Vec::new();
        for i in 0..20000 {
            writeln!(
                s,
                "{} 1:{} 7:{}.5 123:{}",
                if i % 3 == 0 { 1 } else { -1 },
                i,
                i % 17,
                i * 7
            )
            .unwrap();
        }
        s
    }

    fn read_all(path: &Path) -> Result<(Vec<u8>, Compression)> {
        let (mut r, fmt) = open_with_format(path)?;
        let mut out = Vec::new();
        r.read_to_end(&mut out)
            .map_err(|e| read_error(path, fmt, e))?;
        Ok((out, fmt))
    }

    const ALL: [Compression; 4] = [
        Compression::Plain,
        Compression::Gzip,
        Compression::Bzip2,
        Compression::Xz,
    ];

    #[test]
    fn detects_and_decodes_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let text = sample_text();
        for fmt in ALL {
            // The name deliberately says nothing about the format.
            let p = dir.path().join(format!("data-{}", fmt.name()));
            write_compressed(&p, &text, fmt);
            let (out, got) = read_all(&p).unwrap();
            assert_eq!(got, fmt);
            assert_eq!(out, text, "{fmt}");
        }
    }

    #[test]
    fn concatenated_members_are_all_read() {
        let dir = tempfile::tempdir().unwrap();
        for fmt in [Compression::Gzip, Compression::Bzip2, Compression::Xz] {
            let a = dir.path().join("a");
            let b = dir.path().join("b");
            write_compressed(&a, b"1 1:1\n", fmt);
            write_compressed(&b, b"-1 2:2\n", fmt);
            let mut both = std::fs::read(&a).unwrap();
            both.extend(std::fs::read(&b).unwrap());
            let c = dir.path().join("c");
            std::fs::write(&c, both).unwrap();
            let (out, _) = read_all(&c).unwrap();
            assert_eq!(out, b"1 1:1\n-1 2:2\n", "{fmt}");
        }
    }

    #[test]
    fn truncated_streams_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let text = sample_text();
        for fmt in [Compression::Gzip, Compression::Bzip2, Compression::Xz] {
            let p = dir.path().join("full");
            write_compressed(&p, &text, fmt);
            let bytes = std::fs::read(&p).unwrap();
            for cut in [bytes.len() - 1, bytes.len() - 9, bytes.len() / 2, 10] {
                let t = dir.path().join("cut");
                std::fs::write(&t, &bytes[..cut]).unwrap();
                match read_all(&t) {
                    Err(Error::Decompress { format, .. }) => assert_eq!(format, fmt.name()),
                    Err(e) => panic!("{fmt} cut at {cut}: unexpected error {e}"),
                    Ok((out, _)) => panic!("{fmt} cut at {cut}: read {} bytes Ok", out.len()),
                }
            }
        }
    }

    #[test]
    fn corrupt_stream_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let text = sample_text();
        for fmt in [Compression::Gzip, Compression::Bzip2, Compression::Xz] {
            let p = dir.path().join("full");
            write_compressed(&p, &text, fmt);
            let mut bytes = std::fs::read(&p).unwrap();
            let mid = bytes.len() / 2;
            for b in &mut bytes[mid..mid + 16] {
                *b ^= 0x5a;
            }
            std::fs::write(&p, &bytes).unwrap();
            assert!(
                matches!(read_all(&p), Err(Error::Decompress { .. })),
                "{fmt}"
            );
        }
    }

    #[test]
    fn missing_file_is_io_error_with_path() {
        let p = Path::new("/nonexistent/dir/file.txt");
        match open_maybe_compressed(p) {
            Err(Error::Io { path, source }) => {
                assert_eq!(path, p);
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
            }
            Err(e) => panic!("unexpected {e}"),
            Ok(_) => panic!("opened a missing file"),
        }
    }

    #[test]
    fn short_files_are_plain() {
        let dir = tempfile::tempdir().unwrap();
        for content in [&b""[..], b"1", b"BZ", b"BZhx 1:2\n"] {
            let p = dir.path().join("s");
            std::fs::write(&p, content).unwrap();
            let (out, fmt) = read_all(&p).unwrap();
            assert_eq!(fmt, Compression::Plain);
            assert_eq!(out, content);
        }
    }

    #[test]
    fn line_chunks_cover_all_lines_across_buffer_boundaries() {
        // A tiny BufReader forces lines to span buffers.
        let text = b"a b\nlong line here\n\nlast-no-newline";
        for cap in [1, 2, 3, 5, 64] {
            let mut r = BufReader::with_capacity(cap, &text[..]);
            let mut seen = Vec::new();
            for_each_line_chunk::<Error>(&mut r, Path::new("x"), Compression::Plain, |c| {
                assert_eq!(*c.last().unwrap(), b'\n');
                seen.extend_from_slice(c);
                Ok(())
            })
            .unwrap();
            assert_eq!(
                seen, b"a b\nlong line here\n\nlast-no-newline\n",
                "cap {cap}"
            );
        }
    }
}
