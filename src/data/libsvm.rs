//! LIBSVM sparse text: one `label index:value index:value ...` row per line.
//!
//! The reader streams the (possibly compressed) file straight out of the read buffer
//! and parses bytes by hand: no per-line allocation, no UTF-8 validation, floats with
//! `fast_float2`. Rules:
//!
//! * the label is any finite number (`+1`, `-1.0`, `2`, `3.5e0`), kept as f64;
//! * indices are 1-based, strictly ascending integers; values are finite numbers,
//!   stored as f32 (exact zeros are dropped from the sparse storage, but still count
//!   towards the number of features);
//! * blank lines, lines starting with `#` and anything after a `#` are ignored;
//!   spaces, tabs and CRLF line ends are all fine;
//! * a malformed line gives [`Error::Parse`] with its 1-based line number and a
//!   message naming the offending token and what was expected.

use super::Dataset;
use super::compress::{for_each_line_chunk, open_with_format};
use crate::error::{Error, Result};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Reads a LIBSVM file (plain, gzip, bzip2 or xz).
///
/// The number of features is the largest index seen. Errors: [`Error::Io`] when the
/// file cannot be read, [`Error::Decompress`] for corrupt or truncated compressed
/// data, [`Error::Parse`] for a malformed line, [`Error::InvalidData`] when the file
/// holds no data rows.
pub fn read_libsvm(path: &Path) -> Result<Dataset> {
    read_libsvm_noted(path).map(|(ds, _)| ds)
}

/// [`read_libsvm`], with a note when the file's lines carry svmlight query ids (`qid:N`
/// after the label, which scikit-learn's reader also accepts): they are skipped, since they
/// only group rows for ranking.
pub fn read_libsvm_noted(path: &Path) -> Result<(Dataset, Option<String>)> {
    let (mut reader, format) = open_with_format(path)?;
    let parts = parse_lines(&mut *reader, path, format, 0..usize::MAX, true)?;
    if parts.labels.is_empty() {
        return Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: "no data rows".into(),
        });
    }
    let note = match parts.qid {
        (0, _) => None,
        (n, first) => Some(format!(
            "{}: {n} line{} carr{} an svmlight query id (`qid:N`, first on line {first}); \
             skipped: query ids group rows for ranking, which classification does not use",
            path.display(),
            if n == 1 { "" } else { "s" },
            if n == 1 { "ies" } else { "y" },
        )),
    };
    Ok((parts.into_dataset(None), note))
}

/// The rows of a LIBSVM text read so far, in CSR parts.
#[derive(Debug)]
pub(crate) struct Parts {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
    /// Labels, one per row.
    pub labels: Vec<f64>,
    /// The largest feature index seen.
    pub max_index: usize,
    /// Lines read (parsed or skipped) before the reading stopped.
    pub lines: usize,
    /// Lines carrying an svmlight `qid:N` token (skipped: query ids group rows for ranking,
    /// which classification does not use), and the first of them (1-based; 0 when none).
    pub qid: (usize, usize),
}

impl Parts {
    /// The dataset, with `n_features` features (at least the largest index seen).
    pub fn into_dataset(self, n_features: Option<usize>) -> Dataset {
        Dataset::from_csr(
            n_features.unwrap_or(self.max_index).max(self.max_index),
            self.indptr,
            self.indices,
            self.values,
            self.labels,
        )
    }

    /// Non-zeros parsed.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// [`into_dataset`](Self::into_dataset) with `n_features` features and the layout given.
    pub fn into_dataset_as(self, n_features: usize, dense: bool) -> Dataset {
        Dataset::from_csr_as(
            n_features.max(self.max_index),
            self.indptr,
            self.indices,
            self.values,
            self.labels,
            dense,
        )
    }
}

/// How the line walk ended early.
enum Flow {
    /// Past the last wanted line.
    Done,
    /// A malformed line or a read error.
    Fail(Error),
}

impl From<Error> for Flow {
    fn from(e: Error) -> Self {
        Flow::Fail(e)
    }
}

/// Parses the lines of `reader` whose 0-based index lies in `wanted` (the others are only
/// counted) and stops after the last; errors name the 1-based line counted from the reader's
/// start. `at_file_start`: the reader begins at the file's first byte (a byte-order mark may
/// open it).
pub(crate) fn parse_lines(
    reader: &mut dyn std::io::BufRead,
    path: &Path,
    format: super::compress::Compression,
    wanted: std::ops::Range<usize>,
    at_file_start: bool,
) -> Result<Parts> {
    parse_lines_up_to(
        reader,
        path,
        format,
        wanted,
        at_file_start,
        crate::util::max_features(),
    )
}

/// [`parse_lines`] with feature indices up to `limit` (a renumbering reads any u32 index).
fn parse_lines_up_to(
    reader: &mut dyn std::io::BufRead,
    path: &Path,
    format: super::compress::Compression,
    wanted: std::ops::Range<usize>,
    at_file_start: bool,
    limit: usize,
) -> Result<Parts> {
    if wanted == (0..usize::MAX) && rayon::current_num_threads() > 1 {
        return parse_all_lines(reader, path, format, at_file_start, limit);
    }
    let mut b = Builder {
        limit,
        ..Builder::default()
    };
    let mut line = 0usize;
    let mut first_qid = 0usize;
    let walk = for_each_line_chunk(&mut *reader, path, format, |chunk| {
        let mut p = 0;
        if at_file_start && line == 0 && chunk.starts_with(b"\xEF\xBB\xBF") {
            p = 3; // UTF-8 byte-order mark
        }
        while p < chunk.len() {
            if line >= wanted.end {
                return Err(Flow::Done);
            }
            line += 1;
            if line <= wanted.start {
                p = chunk[p..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(chunk.len(), |k| p + k + 1);
                continue;
            }
            let had = b.qid_lines;
            match parse_line(chunk, p, &mut b) {
                Ok(next) => {
                    p = next;
                    if had == 0 && b.qid_lines == 1 {
                        first_qid = line;
                    }
                }
                Err(msg) => {
                    return Err(Flow::Fail(Error::Parse {
                        path: path.to_path_buf(),
                        line,
                        msg,
                    }));
                }
            }
        }
        Ok(())
    });
    match walk {
        Ok(()) | Err(Flow::Done) => {}
        Err(Flow::Fail(e)) => return Err(e),
    }
    Ok(Parts {
        indptr: b.indptr,
        indices: b.indices,
        values: b.values,
        labels: b.labels,
        max_index: b.max_index,
        lines: line,
        qid: (b.qid_lines, first_qid),
    })
}

/// Bytes of complete lines gathered before they are parsed side by side.
const PARALLEL_BATCH: usize = 8 << 20;

/// [`parse_lines_up_to`] for every line of `reader`, a batch of complete lines at a time, each
/// batch cut at line ends into pieces parsed side by side, and the pieces joined in order at
/// the end: the same rows, values and errors (the first malformed line's, numbered from the
/// reader's start) as the line-by-line walk.
fn parse_all_lines(
    reader: &mut dyn std::io::BufRead,
    path: &Path,
    format: super::compress::Compression,
    at_file_start: bool,
    limit: usize,
) -> Result<Parts> {
    let mut pieces: Vec<Builder> = Vec::new();
    let (mut line, mut first_qid) = (0usize, 0usize);
    let mut batch: Vec<u8> = Vec::new();
    let mut flush = |batch: &mut Vec<u8>, pieces: &mut Vec<Builder>| -> Result<()> {
        let start = at_file_start && line == 0;
        for piece in parse_pieces(batch, start, limit) {
            let (b, lines, qid, err) = piece;
            if let Some((at, msg)) = err {
                return Err(Error::Parse {
                    path: path.to_path_buf(),
                    line: line + at,
                    msg,
                });
            }
            if first_qid == 0 && qid > 0 {
                first_qid = line + qid;
            }
            line += lines;
            pieces.push(b);
        }
        batch.clear();
        Ok(())
    };
    for_each_line_chunk(&mut *reader, path, format, |chunk| {
        batch.extend_from_slice(chunk);
        if batch.len() >= PARALLEL_BATCH {
            flush(&mut batch, &mut pieces)?;
        }
        Ok::<(), Error>(())
    })?;
    flush(&mut batch, &mut pieces)?;
    let all = join(pieces);
    Ok(Parts {
        indptr: all.indptr,
        indices: all.indices,
        values: all.values,
        labels: all.labels,
        max_index: all.max_index,
        lines: line,
        qid: (all.qid_lines, first_qid),
    })
}

/// The pieces' rows one after another, each piece copied into its place side by side.
pub(crate) fn join(pieces: Vec<Builder>) -> Builder {
    use rayon::prelude::*;
    let (rows, nnz) = pieces.iter().fold((0, 0), |(r, n), b| {
        (r + b.labels.len(), n + b.indices.len())
    });
    let mut all = Builder {
        indptr: vec![0; rows + 1],
        indices: vec![0; nnz],
        values: vec![0.0; nnz],
        labels: vec![0.0; rows],
        max_index: pieces.iter().map(|b| b.max_index).max().unwrap_or(0),
        limit: pieces.first().map_or(0, |b| b.limit),
        qid_lines: pieces.iter().map(|b| b.qid_lines).sum(),
    };
    // Each piece's share of the four arrays, and where its entries start.
    let mut places = Vec::with_capacity(pieces.len());
    let (mut ptr, mut idx, mut val, mut lab) = (
        &mut all.indptr[1..],
        &mut all.indices[..],
        &mut all.values[..],
        &mut all.labels[..],
    );
    let mut offset = 0;
    for b in &pieces {
        let (r, n) = (b.labels.len(), b.indices.len());
        let (p, p_rest) = std::mem::take(&mut ptr).split_at_mut(r);
        let (i, i_rest) = std::mem::take(&mut idx).split_at_mut(n);
        let (v, v_rest) = std::mem::take(&mut val).split_at_mut(n);
        let (l, l_rest) = std::mem::take(&mut lab).split_at_mut(r);
        (ptr, idx, val, lab) = (p_rest, i_rest, v_rest, l_rest);
        places.push((b, offset, p, i, v, l));
        offset += n;
    }
    places.into_par_iter().for_each(|(b, offset, p, i, v, l)| {
        for (o, &x) in p.iter_mut().zip(&b.indptr[1..]) {
            *o = x + offset;
        }
        i.copy_from_slice(&b.indices);
        v.copy_from_slice(&b.values);
        l.copy_from_slice(&b.labels);
    });
    all
}

/// Where `text` (complete lines, each ending with `\n`) is cut into at most `pieces` pieces of
/// about equal size at line ends (at least 4 KiB each): 0, the cuts, `text.len()`.
pub(crate) fn cut_at_lines(text: &[u8], pieces: usize) -> Vec<usize> {
    let n = pieces.min(text.len() / 4096).max(1);
    let mut cuts = vec![0];
    for k in 1..n {
        let at = (k * text.len() / n).max(*cuts.last().unwrap_or(&0));
        let end = text[at..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(text.len(), |e| at + e + 1);
        if end > *cuts.last().unwrap_or(&0) && end < text.len() {
            cuts.push(end);
        }
    }
    cuts.push(text.len());
    cuts
}

/// The line ends and colons of `text`, counted in blocks of 255 bytes in byte lanes.
fn lines_and_colons(text: &[u8]) -> (usize, usize) {
    let (mut lines, mut colons) = (0, 0);
    for block in text.chunks(255) {
        let (mut l, mut c) = (0u8, 0u8);
        for &b in block {
            l += u8::from(b == b'\n');
            c += u8::from(b == b':');
        }
        lines += usize::from(l);
        colons += usize::from(c);
    }
    (lines, colons)
}

/// A piece of lines parsed: its rows, its lines, its first line with a query id (1-based
/// within the piece; 0 when none) and its first malformed line (1-based within the piece)
/// with the message.
type Piece = (Builder, usize, usize, Option<(usize, String)>);

/// The complete lines of `text` (ending with `\n`) cut at line ends into about four pieces a
/// thread and parsed side by side, in order; `file_start`: `text` opens the file (a
/// byte-order mark may open it). Each piece's arrays are sized first from its line ends and
/// colons (at least its rows and entries), so they never grow.
fn parse_pieces(text: &[u8], file_start: bool, limit: usize) -> Vec<Piece> {
    use rayon::prelude::*;
    cut_at_lines(text, 4 * rayon::current_num_threads())
        .par_windows(2)
        .enumerate()
        .map(|(k, w)| {
            let chunk = &text[w[0]..w[1]];
            let (lines, colons) = lines_and_colons(chunk);
            let mut b = Builder {
                limit,
                ..Builder::with_capacity(lines, colons)
            };
            let (mut p, mut line, mut qid) = (0, 0, 0);
            if file_start && k == 0 && chunk.starts_with(b"\xEF\xBB\xBF") {
                p = 3; // UTF-8 byte-order mark
            }
            while p < chunk.len() {
                line += 1;
                let had = b.qid_lines;
                match parse_line(chunk, p, &mut b) {
                    Ok(next) => {
                        p = next;
                        if had == 0 && b.qid_lines == 1 {
                            qid = line;
                        }
                    }
                    Err(msg) => return (b, line, qid, Some((line, msg))),
                }
            }
            (b, line, qid, None)
        })
        .collect()
}

/// The LIBSVM file `path` with its feature indices renumbered 1, 2, … (any index up to
/// 2³² − 1 is read), and each new index's old one. Without `map`, the indices the file uses
/// are numbered in ascending order (so every row stays ascending); with the `map` of an
/// earlier renumbering (old indices, 0-based, by new index), its indices keep their new
/// numbers and the others — features the mapped file never used, which then only enter the
/// rows' norms — follow them in ascending order.
pub fn renumber_features(path: &Path, map: Option<&[u32]>) -> Result<(Dataset, Vec<u32>)> {
    let (mut reader, format) = open_with_format(path)?;
    let parts = parse_lines_up_to(
        &mut *reader,
        path,
        format,
        0..usize::MAX,
        true,
        u32::MAX as usize,
    )?;
    if parts.labels.is_empty() {
        return Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: "no data rows".into(),
        });
    }
    let mut old: Vec<u32> = map.map(<[u32]>::to_vec).unwrap_or_default();
    let known: std::collections::HashMap<u32, u32> = old
        .iter()
        .enumerate()
        .map(|(k, &f)| (f, k as u32))
        .collect();
    let mut fresh: Vec<u32> = parts
        .indices
        .iter()
        .copied()
        .filter(|f| !known.contains_key(f))
        .collect();
    fresh.sort_unstable();
    fresh.dedup();
    old.extend_from_slice(&fresh);
    let base = known.len() as u32;
    let indices: Vec<u32> = parts
        .indices
        .iter()
        .map(|f| match known.get(f) {
            Some(&k) => k,
            None => base + fresh.binary_search(f).expect("collected above") as u32,
        })
        .collect();
    // Mapped features keep their numbers, new ones follow: a row may now be out of order.
    let mut values = parts.values;
    let mut indices = indices;
    for r in 0..parts.labels.len() {
        let (a, b) = (parts.indptr[r], parts.indptr[r + 1]);
        if indices[a..b].windows(2).any(|w| w[0] > w[1]) {
            let mut pairs: Vec<(u32, f32)> = indices[a..b]
                .iter()
                .copied()
                .zip(values[a..b].iter().copied())
                .collect();
            pairs.sort_unstable_by_key(|p| p.0);
            for (t, (f, v)) in pairs.into_iter().enumerate() {
                indices[a + t] = f;
                values[a + t] = v;
            }
        }
    }
    let ds = Dataset::from_csr_as(
        old.len(),
        parts.indptr,
        indices,
        values,
        parts.labels,
        false,
    );
    Ok((ds, old))
}

/// Writes `ds` in LIBSVM format: labels and values as `{}` writes them, f64 and f32 (the
/// shortest text that reads back as the same number, so `1.0` prints `1`; formatted by
/// `crate::decimal`), 1-based indices, zeros skipped. Reading the output with
/// [`read_libsvm`] gives the same labels and values. The lines are formatted in parallel, a
/// batch of chunks of rows at a time, and written in order.
pub fn write_libsvm<W: Write>(w: &mut W, ds: &Dataset) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 16, w);
    crate::output::write_lines_in_order(&mut w, ds.len(), 1024, |i, text| push_row(text, ds, i))?;
    w.flush()
}

/// Appends row `i` of `ds` as one line of LIBSVM text ([`write_libsvm`]).
fn push_row(line: &mut Vec<u8>, ds: &Dataset, i: usize) {
    use crate::decimal::{push_f32, push_f64, push_usize};
    push_f64(line, ds.labels[i]);
    let mut feature = |j: usize, x: f32| {
        if x != 0.0 {
            line.push(b' ');
            push_usize(line, j + 1);
            line.push(b':');
            push_f32(line, x);
        }
    };
    match ds.row(i) {
        super::Row::Dense(v) => v.iter().enumerate().for_each(|(j, &x)| feature(j, x)),
        super::Row::Sparse(ix, v) => ix.iter().zip(v).for_each(|(&j, &x)| feature(j as usize, x)),
    }
    line.push(b'\n');
}

/// CSR parts accumulated while reading.
pub(crate) struct Builder {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
    labels: Vec<f64>,
    max_index: usize,
    /// The highest index this machine holds per-feature arrays for
    /// ([`crate::util::max_features`]).
    limit: usize,
    /// Lines whose svmlight `qid:N` token was skipped.
    qid_lines: usize,
}

impl Builder {
    /// An empty builder with room for `rows` rows and `entries` entries.
    fn with_capacity(rows: usize, entries: usize) -> Builder {
        let mut indptr = Vec::with_capacity(rows + 1);
        indptr.push(0);
        Builder {
            indptr,
            indices: Vec::with_capacity(entries),
            values: Vec::with_capacity(entries),
            labels: Vec::with_capacity(rows),
            max_index: 0,
            limit: crate::util::max_features(),
            qid_lines: 0,
        }
    }

    /// Closes the row whose features were parsed last, with its label.
    pub(crate) fn end_row(&mut self, label: f64) {
        self.labels.push(label);
        self.indptr.push(self.indices.len());
    }

    /// Rows closed so far.
    pub(crate) fn rows(&self) -> usize {
        self.labels.len()
    }

    /// The rows' labels.
    pub(crate) fn labels_mut(&mut self) -> &mut [f64] {
        &mut self.labels
    }

    /// The rows as a sparse dataset over the highest index seen.
    pub(crate) fn into_dataset(self) -> Dataset {
        Dataset::from_csr(
            self.max_index,
            self.indptr,
            self.indices,
            self.values,
            self.labels,
        )
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder::with_capacity(0, 0)
    }
}

/// Blanks inside a line (the line end `\n` is not one of them).
#[inline(always)]
fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

/// Bytes that may follow a number: a blank, the line end or a comment.
#[inline(always)]
fn ends_token(c: u8) -> bool {
    is_blank(c) || c == b'\n' || c == b'#'
}

/// Parses the line starting at `b[p]`; `b` ends with `\n`, so every line does.
/// Returns the position just after the line's `\n`, or the error message.
#[inline]
fn parse_line(b: &[u8], mut p: usize, out: &mut Builder) -> std::result::Result<usize, String> {
    while is_blank(b[p]) {
        p += 1;
    }
    match b[p] {
        b'\n' => return Ok(p + 1),
        b'#' => return Ok(skip_line(b, p)),
        _ => {}
    }

    // Label.
    let (y, n) = match fast_float2::parse_partial::<f64, _>(&b[p..]) {
        Ok(r) => r,
        Err(_) => return Err(bad_label(b, p)),
    };
    if !ends_token(b[p + n]) {
        return Err(bad_label(b, p));
    }
    if !y.is_finite() {
        return Err(format!("label `{}` is not a finite number", token(b, p)));
    }
    p += n;

    // svmlight's query id (`qid:N` after the label, as scikit-learn's reader accepts): skipped.
    let mut q = p;
    while is_blank(b[q]) {
        q += 1;
    }
    if b[q..].starts_with(b"qid:") {
        let mut e = q + 4;
        while b[e].is_ascii_digit() {
            e += 1;
        }
        if e == q + 4 || !ends_token(b[e]) {
            return Err(format!(
                "malformed query id `{}`: expected qid:N with N a non-negative integer",
                token(b, q)
            ));
        }
        out.qid_lines += 1;
        p = e;
    }

    let p = parse_features(b, p, out)?;
    out.end_row(y);
    Ok(p)
}

/// Parses the `index:value` pairs from `b[p]` to the line's end (indices from 1, ascending,
/// at most the builder's limit; finite values, zeros skipped) into the builder's indices and
/// values, and raises its highest index. Returns the position just after the line's `\n`
/// (`b` ends with one), or the error message. The model reader parses its support vectors
/// with it too.
pub(crate) fn parse_features(
    b: &[u8],
    mut p: usize,
    out: &mut Builder,
) -> std::result::Result<usize, String> {
    let mut last: u64 = 0;
    loop {
        while is_blank(b[p]) {
            p += 1;
        }
        match b[p] {
            b'\n' => {
                p += 1;
                break;
            }
            b'#' => {
                p = skip_line(b, p);
                break;
            }
            _ => {}
        }
        let tok = p;
        let mut idx: u64 = 0;
        while b[p].is_ascii_digit() {
            idx = idx * 10 + (b[p] - b'0') as u64;
            if idx > u32::MAX as u64 {
                return Err(format!(
                    "index too large in `{}`: at most {} is supported",
                    token(b, tok),
                    u32::MAX
                ));
            }
            p += 1;
        }
        if p == tok || b[p] != b':' {
            return Err(bad_index(b, tok));
        }
        if idx == 0 {
            return Err(format!(
                "index 0 in `{}`: indices start at 1",
                token(b, tok)
            ));
        }
        if idx as usize > out.limit {
            return Err(format!(
                "feature index {idx} in `{}`: {}",
                token(b, tok),
                crate::util::too_many_features(idx as usize)
            ));
        }
        if idx <= last {
            return Err(format!(
                "index {idx} after {last}: indices must be ascending (at `{}`)",
                token(b, tok)
            ));
        }
        p += 1;
        let (v, n) = match short_decimal(b, p) {
            Some(r) => r,
            None => match fast_float2::parse_partial::<f32, _>(&b[p..]) {
                Ok(r) if ends_token(b[p + r.1]) => r,
                _ => {
                    return Err(format!(
                        "malformed value `{}` in `{}`: expected a number",
                        token(b, p),
                        token(b, tok)
                    ));
                }
            },
        };
        if !v.is_finite() {
            return Err(format!(
                "value `{}` in `{}` is not a finite number (f32 range is ±3.4e38)",
                token(b, p),
                token(b, tok)
            ));
        }
        p += n;
        last = idx;
        if v != 0.0 {
            out.indices.push((idx - 1) as u32);
            out.values.push(v);
        }
    }
    if last as usize > out.max_index {
        out.max_index = last as usize;
    }
    Ok(p)
}

/// Fast path for the common values `1`, `-1`, `0.5`, `-0.631`, `0.0000014883708`…: an
/// optional `-`, then digits with at most one `.` among them, at most nineteen digits, ending
/// the token. With m the digits' value and k the digits after the point:
///
/// * m ≤ 2²⁴ and k ≤ 10: m and 10^k are exact in f32, so m / 10^k rounded once is the
///   correctly rounded value (Clinger's fast path);
/// * else m ≤ 2⁵³ (k ≤ 19): the quotient q is correctly rounded in f64 (both exact there),
///   and rounding q to f32 rounds the exact value the same way unless q lies within one f64
///   unit of a midpoint between two f32 values (its 29 bits below f32's precision 2²⁸ ± 1),
///   where the general parser decides.
///
/// So the value is the general parser's, bit for bit. `None` sends the caller to the general
/// parser (exponents, longer mantissas, `+`, `inf`, malformed tokens).
#[inline(always)]
fn short_decimal(b: &[u8], p: usize) -> Option<(f32, usize)> {
    let neg = b[p] == b'-';
    let mut n = usize::from(neg);
    let (mut m, mut digits, mut frac) = (0u64, 0usize, None);
    loop {
        let c = b[p + n];
        let d = c.wrapping_sub(b'0');
        if d <= 9 {
            if digits == 19 {
                return None;
            }
            m = m * 10 + u64::from(d);
            digits += 1;
        } else if c == b'.' && frac.is_none() {
            frac = Some(digits);
        } else {
            break;
        }
        n += 1;
    }
    if digits == 0 || !ends_token(b[p + n]) {
        return None;
    }
    let k = digits - frac.unwrap_or(digits);
    use crate::decimal::{POW10_F32, POW10_F64};
    let v = if m <= 1 << 24 && k <= 10 {
        m as f32 / POW10_F32[k]
    } else if m <= 1 << 53 {
        let q = m as f64 / POW10_F64[k];
        let low = q.to_bits() & ((1 << 29) - 1);
        if low.abs_diff(1 << 28) <= 1 {
            return None;
        }
        q as f32
    } else {
        return None;
    };
    Some((if neg { -v } else { v }, n))
}

/// Position after the `\n` that ends the line containing `b[p]`.
#[inline]
fn skip_line(b: &[u8], p: usize) -> usize {
    p + b[p..]
        .iter()
        .position(|&c| c == b'\n')
        .unwrap_or(b.len() - p - 1)
        + 1
}

/// The whitespace-delimited token starting at `b[p]`, for messages (shortened if long).
#[cold]
fn token(b: &[u8], p: usize) -> String {
    let end = b[p..]
        .iter()
        .position(|&c| is_blank(c) || c == b'\n')
        .map_or(b.len(), |k| p + k);
    let t = &b[p..end];
    const MAX: usize = 40;
    if t.len() > MAX {
        format!("{}…", String::from_utf8_lossy(&t[..MAX]))
    } else {
        String::from_utf8_lossy(t).into_owned()
    }
}

#[cold]
fn bad_label(b: &[u8], p: usize) -> String {
    let t = token(b, p);
    if t.contains(':') {
        format!("malformed label `{t}`: expected a number (is the label missing?)")
    } else {
        format!("malformed label `{t}`: expected a number")
    }
}

#[cold]
fn bad_index(b: &[u8], p: usize) -> String {
    let t = token(b, p);
    match t.split_once(':') {
        None => format!("expected `index:value`, found `{t}`"),
        Some((i, _)) => format!("malformed index `{i}` in `{t}`: expected a positive integer"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Features;
    use crate::data::compress::Compression;
    use crate::data::compress::tests::write_compressed;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn parse(text: &str) -> Result<Dataset> {
        let dir = tempfile::tempdir().unwrap();
        read_libsvm(&write(&dir, "d.txt", text))
    }

    /// The short-decimal fast path gives the general parser's f32 bit for bit wherever it
    /// accepts a token (random mantissas of one to nineteen digits, the point anywhere, signs,
    /// the bounds 2²⁴, 2⁵³ and nineteen digits, decimals next to midpoints between f32
    /// values), and takes most such tokens.
    #[test]
    fn short_decimals_are_the_general_parsers_values() {
        let mut taken = 0usize;
        let mut check = |t: &str| {
            let b = format!("{t} ");
            let general = fast_float2::parse_partial::<f32, _>(b.as_bytes())
                .ok()
                .filter(|r| r.1 == t.len());
            if let Some((v, n)) = short_decimal(b.as_bytes(), 0) {
                let (w, m) = general.unwrap_or_else(|| panic!("`{t}` taken, not a number"));
                assert_eq!((v.to_bits(), n), (w.to_bits(), m), "`{t}`");
                taken += 1;
            }
        };
        let mut r = crate::rng::SplitMix64::new(11);
        for _ in 0..400_000 {
            let digits = 1 + r.below(19);
            let mut t: String = (0..digits)
                .map(|_| char::from(b'0' + r.below(10) as u8))
                .collect();
            if r.next_f64() < 0.8 {
                t.insert(r.below(digits + 1), '.');
            }
            if r.next_f64() < 0.5 {
                t.insert(0, '-');
            }
            check(&t);
        }
        for t in [
            "0",
            "-0",
            "1",
            "-1",
            "0.5",
            ".5",
            "5.",
            "-.25",
            "16777216",
            "16777217",
            "1677721.6",
            "0.000000001",
            "123456789",
            "1234567890",
            "1e-3",
            "+1",
            "inf",
            "nan",
            "-",
            ".",
            "1.2.3",
            "0.0000000001",
            "9007199254740992",
            "9007199254740993",
            "0.0000014883708",
            "1234567890123456789",
            "12345678901234567890",
            "0.00000000000000000000001",
        ] {
            check(t);
        }
        // Decimals on and next to the midpoint between an f32 and the next one.
        for x in [1.0f32, 0.75, 3.5, 1024.0, 0.015625, 0.1] {
            let mid = (f64::from(x) + f64::from(f32::from_bits(x.to_bits() + 1))) / 2.0;
            for digits in 8..=17 {
                check(&format!("{mid:.digits$}"));
                check(&format!("{:.digits$}", mid * (1.0 + 1e-15)));
                check(&format!("{:.digits$}", mid * (1.0 - 1e-15)));
            }
        }
        assert!(taken > 300_000, "the fast path took {taken} tokens");
        assert_eq!(
            short_decimal(b"-0 ", 0).map(|(v, _)| v.to_bits()),
            Some((-0.0f32).to_bits())
        );
        for t in [&b"- "[..], b". ", b"1e5 ", b"+1 ", b"12345678901234567890 "] {
            assert!(short_decimal(t, 0).is_none());
        }
    }

    /// A file large enough to be cut into pieces parsed side by side (blank, comment and
    /// query-id lines among them, a byte-order mark, no final newline) reads as the
    /// line-by-line walk reads it, and a malformed line deep inside gives its own line number.
    #[test]
    fn pieces_parsed_side_by_side_join_as_the_line_walk() {
        let mut text = String::from("\u{FEFF}");
        let mut r = crate::rng::SplitMix64::new(3);
        for i in 0..20_000 {
            match i % 997 {
                5 => text.push_str("# a comment\n"),
                6 => text.push('\n'),
                7 => text.push_str("1 qid:4 2:0.5\n"),
                _ => {
                    text.push_str(if r.next_f64() < 0.5 { "-1" } else { "+1" });
                    for f in 1..=12 {
                        if r.next_f64() < 0.6 {
                            text.push_str(&format!(" {f}:{:.4}", r.next_f64()));
                        }
                    }
                    text.push('\n');
                }
            }
        }
        text.pop();
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, "big.txt", &text);
        let read = |wanted: std::ops::Range<usize>| {
            let (mut reader, format) = open_with_format(&path).unwrap();
            parse_lines(&mut *reader, &path, format, wanted, true).unwrap()
        };
        // The whole file (pieces when there are threads) and all but an unreachable last
        // line (the line walk).
        let (all, walk) = (read(0..usize::MAX), read(0..usize::MAX - 1));
        assert_eq!(all.indptr, walk.indptr);
        assert_eq!(all.indices, walk.indices);
        assert_eq!(all.values, walk.values);
        assert_eq!(all.labels, walk.labels);
        assert_eq!(all.max_index, walk.max_index);
        assert_eq!((all.lines, all.qid), (walk.lines, walk.qid));
        assert_eq!(all.lines, 20_000);
        assert_eq!(all.qid, (21, 8));
        // A malformed line past the first pieces.
        let mut lines: Vec<&str> = text.lines().collect();
        lines[15_321] = "+1 3:0.5 2:0.25";
        parse_err(&lines.join("\n"), 15_322, &["ascending"]);
    }

    /// Expects a parse error on `line` whose message contains every one of `needles`.
    fn parse_err(text: &str, line: usize, needles: &[&str]) {
        match parse(text) {
            Err(Error::Parse { line: l, msg, .. }) => {
                assert_eq!(l, line, "line of error `{msg}` for {text:?}");
                for n in needles {
                    assert!(msg.contains(n), "message `{msg}` lacks `{n}` for {text:?}");
                }
            }
            Err(e) => panic!("expected a parse error for {text:?}, got {e}"),
            Ok(d) => panic!("expected a parse error for {text:?}, got {d:?}"),
        }
    }

    fn sparse_parts(ds: &Dataset) -> (Vec<usize>, Vec<u32>, Vec<f32>) {
        match &ds.features {
            Features::Sparse {
                indptr,
                indices,
                values,
                ..
            } => (indptr.clone(), indices.clone(), values.clone()),
            Features::Dense { .. } => panic!("expected sparse"),
        }
    }

    #[test]
    fn reads_basic_sparse_file() {
        let ds = parse("+1 3:0.5 10:2\n-1 1:1\n2 \n-1.0 2:-3e-2 9:4\n").unwrap();
        assert_eq!(ds.labels, vec![1.0, -1.0, 2.0, -1.0]);
        assert_eq!(ds.n_features(), 10);
        assert!(!ds.is_dense());
        let (ip, ix, v) = sparse_parts(&ds);
        assert_eq!(ip, vec![0, 2, 3, 3, 5]);
        assert_eq!(ix, vec![2, 9, 0, 1, 8]);
        assert_eq!(v, vec![0.5, 2.0, 1.0, -0.03, 4.0]);
    }

    #[test]
    fn comments_blanks_tabs_crlf() {
        let text = "# header comment\r\n\r\n   \n1\t1:1   2:2 # trailing comment 3:x\r\n\t# indented comment\n-1 2:5#glued\n1 1:.5 2:5. # x\n";
        let ds = parse(text).unwrap();
        assert_eq!(ds.labels, vec![1.0, -1.0, 1.0]);
        assert_eq!(ds.n_features(), 2);
        assert_eq!(ds.row(0).sq_norm(), 5.0);
        let mut r = [0f32; 2];
        ds.row(1).scatter_into(&mut r);
        assert_eq!(r, [0.0, 5.0]);
        ds.row(2).scatter_into(&mut r);
        assert_eq!(r, [0.5, 5.0]);
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let ds = parse("\u{feff}1 2:1\n-1 1:1\n").unwrap();
        assert_eq!(ds.labels, vec![1.0, -1.0]);
    }

    #[test]
    fn no_final_newline_and_label_only_rows() {
        let ds = parse("1 4:1\n-1").unwrap();
        assert_eq!(ds.labels, vec![1.0, -1.0]);
        assert_eq!(ds.n_features(), 4);
        assert_eq!(ds.row(1).sq_norm(), 0.0);
    }

    #[test]
    fn explicit_zeros_are_dropped_but_count_for_width() {
        let ds = parse("1 1:0 2:1 7:0\n-1 3:0\n").unwrap();
        assert_eq!(ds.n_features(), 7);
        assert_eq!(ds.nnz(), 1);
    }

    #[test]
    fn dense_enough_data_is_stored_dense() {
        let ds = parse("1 1:1 2:2 3:3\n-1 1:4 3:6\n").unwrap();
        assert!(ds.is_dense());
        assert_eq!(
            ds.features,
            Features::Dense {
                n_features: 3,
                values: vec![1.0, 2.0, 3.0, 4.0, 0.0, 6.0]
            }
        );
        let ds = parse("1 1:1\n-1 100:1\n").unwrap();
        assert!(!ds.is_dense());
    }

    #[test]
    fn empty_files_are_invalid_data() {
        for text in ["", "\n\n", "# only a comment\n  \n"] {
            match parse(text) {
                Err(Error::InvalidData { msg, .. }) => assert!(msg.contains("no data rows")),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn error_cases_name_line_and_token() {
        parse_err("1 1:1\nabc 1:1\n", 2, &["`abc`", "label"]);
        parse_err("1:0.5 2:1\n", 1, &["`1:0.5`", "label"]);
        parse_err("1 1:1\n\n# c\n1 2:3 foo\n", 4, &["`foo`", "index:value"]);
        parse_err("1 x:1\n", 1, &["`x`", "index"]);
        parse_err("1 -2:1\n", 1, &["`-2`", "index"]);
        parse_err("1 1.5:1\n", 1, &["`1.5`", "index"]);
        parse_err("1 0:1\n", 1, &["`0:1`", "start at 1"]);
        parse_err(
            "1 1:1\n1 5:1 3:0.5\n",
            2,
            &["index 3 after 5: indices must be ascending", "`3:0.5`"],
        );
        parse_err("1 2:1 2:1\n", 1, &["index 2 after 2", "`2:1`"]);
        parse_err("1 2:abc\n", 1, &["`abc`", "value", "number"]);
        parse_err("1 2:\n", 1, &["`2:`", "value"]);
        parse_err("1 2:1:3\n", 1, &["`2:1:3`", "value"]);
        parse_err("1 2:nan\n", 1, &["`nan`", "finite"]);
        parse_err("1 2:inf\n", 1, &["`inf`", "finite"]);
        parse_err("1 2:1e39\n", 1, &["`1e39`", "finite"]);
        parse_err("nan 2:1\n", 1, &["`nan`", "label", "finite"]);
        parse_err("-inf 2:1\n", 1, &["`-inf`", "label"]);
        parse_err("1 99999999999:1\n", 1, &["`99999999999:1`", "too large"]);
        // An index past what this machine holds per-feature arrays for: said, with the
        // line, before any such array is allocated.
        let big = crate::util::max_features() + 1;
        if big <= u32::MAX as usize {
            parse_err(
                &format!("1 1:1\n-1 {big}:1\n"),
                2,
                &[&format!("feature index {big}"), "renumber the features"],
            );
        }
        parse_err("1 1:1\r\n-1 2:x\r\n", 2, &["`x`"]);
    }

    #[test]
    fn error_line_numbers_across_buffer_chunks() {
        // Enough lines to span several 1 MiB buffers, error near the end.
        let mut text = String::new();
        for i in 0..200_000 {
            text.push_str(&format!("{} 1:{} 2:0.25 3:1\n", i % 2, i));
        }
        text.push_str("1 1:1 2:bad\n");
        parse_err(&text, 200_001, &["`bad`"]);
    }

    fn sample() -> String {
        let mut text = String::new();
        for i in 0..5000u32 {
            let y = if i % 3 == 0 { "+1" } else { "-1" };
            text.push_str(&format!(
                "{y} {}:{} {}:0.{} 40:{}e-3\n",
                i % 7 + 1,
                i,
                i % 13 + 9,
                i % 10,
                i
            ));
        }
        text
    }

    #[test]
    fn compressed_files_read_identically() {
        let dir = tempfile::tempdir().unwrap();
        let text = sample();
        let plain = read_libsvm(&write(&dir, "plain", &text)).unwrap();
        assert_eq!(plain.len(), 5000);
        for fmt in [Compression::Gzip, Compression::Bzip2, Compression::Xz] {
            let p = dir.path().join(format!("f.{}", fmt.name()));
            write_compressed(&p, text.as_bytes(), fmt);
            assert_eq!(read_libsvm(&p).unwrap(), plain, "{fmt}");
        }
    }

    #[test]
    fn truncated_compressed_files_are_decompress_errors() {
        let dir = tempfile::tempdir().unwrap();
        let text = sample();
        for fmt in [Compression::Gzip, Compression::Bzip2, Compression::Xz] {
            let p = dir.path().join("full");
            write_compressed(&p, text.as_bytes(), fmt);
            let bytes = std::fs::read(&p).unwrap();
            let t = dir.path().join("trunc");
            std::fs::write(&t, &bytes[..bytes.len() * 2 / 3]).unwrap();
            match read_libsvm(&t) {
                Err(Error::Decompress { format, path, .. }) => {
                    assert_eq!(format, fmt.name());
                    assert_eq!(path, t);
                }
                other => panic!("{fmt}: {other:?}"),
            }
        }
    }

    #[test]
    fn write_then_read_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        // Awkward values: shortest round-trip printing must keep them exact.
        let text =
            "1 1:0.1 3:3.4028235e38 5:-1.1754944e-38\n-1 2:0.3333333 4:16777217\n2.5 6:1e-45\n-7\n";
        let ds = read_libsvm(&write(&dir, "a", text)).unwrap();
        let mut buf = Vec::new();
        write_libsvm(&mut buf, &ds).unwrap();
        let out = String::from_utf8(buf).unwrap();
        assert!(out.starts_with("1 1:0.1 3:"), "{out}");
        assert!(out.contains("\n-7\n"));
        let back = read_libsvm(&write(&dir, "b", &out)).unwrap();
        assert_eq!(back, ds);

        // Dense datasets write the same text as their sparse equivalent.
        let dense = read_libsvm(&write(&dir, "c", "1 1:1 2:2\n-1 1:3 2:0.5\n")).unwrap();
        assert!(dense.is_dense());
        let mut buf = Vec::new();
        write_libsvm(&mut buf, &dense).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "1 1:1 2:2\n-1 1:3 2:0.5\n");
    }

    /// Many rows (several batches of parallel chunks) come out in order, each line the one a
    /// row alone gives.
    #[test]
    fn many_rows_are_written_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let n = 3 * 4 * 1024 * rayon::current_num_threads().max(1) + 17;
        let text: String = (0..n)
            .map(|i| {
                format!(
                    "{} {}:{} 9:{}\n",
                    i % 3,
                    i % 7 + 1,
                    i as f32 * 0.37,
                    -(i as f32)
                )
            })
            .collect();
        let ds = read_libsvm(&write(&dir, "many", &text)).unwrap();
        let mut buf = Vec::new();
        write_libsvm(&mut buf, &ds).unwrap();
        let mut want = Vec::new();
        for i in 0..n {
            push_row(&mut want, &ds, i);
        }
        assert_eq!(buf, want);
        assert_eq!(
            read_libsvm(&write(&dir, "back", &String::from_utf8(buf).unwrap())).unwrap(),
            ds
        );
    }

    #[test]
    fn long_tokens_are_shortened_in_messages() {
        let long = "x".repeat(500);
        match parse(&format!("1 1:{long}\n")) {
            Err(Error::Parse { msg, .. }) => assert!(msg.len() < 200, "{msg}"),
            other => panic!("{other:?}"),
        }
    }
}
