//! Dense comma-separated numbers, one row per line, one column holding the label.
//!
//! * Fields are separated by `,`; blanks around a field and surrounding double
//!   quotes are removed.
//! * A header is recognised when the first non-blank, non-comment line has a field
//!   that is not a number; it is skipped.
//! * Every row must have as many fields as the first line (header included).
//! * Blank lines and lines starting with `#` are ignored; CRLF is fine.
//! * Labels are f64, features f32; NaN and infinite values are errors.

use super::Dataset;
use super::compress::{for_each_line_chunk, open_with_format};
use crate::error::{Error, Result};
use std::path::Path;

/// Reads a CSV file (plain, gzip, bzip2 or xz) whose label is in column `label_col`
/// (0-based; negative counts from the end, -1 = last column). The other columns are
/// the features, in file order.
///
/// Errors: [`Error::Parse`] naming the line (and field and token) for a malformed
/// row, [`Error::InvalidData`] for a file without data rows or a `label_col` outside
/// the rows, plus the I/O and decompression errors of every reader.
pub fn read_csv(path: &Path, label_col: i64) -> Result<Dataset> {
    let (mut reader, format) = open_with_format(path)?;
    let mut st = CsvState {
        path,
        label_col,
        line: 0,
        first: None,
        label: 0,
        indptr: vec![0],
        indices: Vec::new(),
        values: Vec::new(),
        labels: Vec::new(),
    };
    for_each_line_chunk(&mut *reader, path, format, |chunk| {
        // `chunk` ends with '\n': drop it so `split` yields exactly the lines.
        for line in chunk[..chunk.len() - 1].split(|&c| c == b'\n') {
            st.line += 1;
            st.row(line)?;
        }
        Ok::<(), Error>(())
    })?;
    if st.labels.is_empty() {
        return Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: "no data rows".into(),
        });
    }
    let n_features = st.first.map_or(0, |(n, _)| n - 1);
    Ok(Dataset::from_csr(
        n_features, st.indptr, st.indices, st.values, st.labels,
    ))
}

struct CsvState<'a> {
    path: &'a Path,
    label_col: i64,
    /// 1-based number of the current line.
    line: usize,
    /// (number of fields, line it was set on), from the first non-blank line.
    first: Option<(usize, usize)>,
    /// Resolved 0-based label column.
    label: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
    labels: Vec<f64>,
}

/// A field without surrounding blanks and double quotes.
fn clean(field: &[u8]) -> &[u8] {
    let f = field.trim_ascii();
    if f.len() >= 2 && f[0] == b'"' && f[f.len() - 1] == b'"' {
        f[1..f.len() - 1].trim_ascii()
    } else {
        f
    }
}

fn show(t: &[u8]) -> String {
    const MAX: usize = 40;
    if t.len() > MAX {
        format!("{}…", String::from_utf8_lossy(&t[..MAX]))
    } else {
        String::from_utf8_lossy(t).into_owned()
    }
}

impl CsvState<'_> {
    fn err(&self, msg: String) -> Error {
        Error::Parse {
            path: self.path.to_path_buf(),
            line: self.line,
            msg,
        }
    }

    fn row(&mut self, raw: &[u8]) -> Result<()> {
        let mut line = raw.trim_ascii();
        if self.first.is_none() {
            // A UTF-8 byte-order mark would make a numeric first line look like a header.
            line = line
                .strip_prefix(b"\xEF\xBB\xBF")
                .unwrap_or(line)
                .trim_ascii();
        }
        if line.is_empty() || line[0] == b'#' {
            return Ok(());
        }
        let n = line.iter().filter(|&&c| c == b',').count() + 1;
        if self.is_header_or_checked(line, n)? {
            return Ok(());
        }
        let mut label = 0.0;
        for (c, field) in line.split(|&c| c == b',').enumerate() {
            let f = clean(field);
            if f.is_empty() {
                return Err(self.err(format!(
                    "field {} of {n} is empty: expected a number",
                    c + 1
                )));
            }
            if c == self.label {
                label = self.number::<f64>(f, c, "label", "")?;
            } else {
                let v: f32 = self.number(f, c, "value", " (f32 range is ±3.4e38)")?;
                if v != 0.0 {
                    let j = if c > self.label { c - 1 } else { c };
                    self.indices.push(j as u32);
                    self.values.push(v);
                }
            }
        }
        self.labels.push(label);
        self.indptr.push(self.indices.len());
        Ok(())
    }

    /// On the first line, the label column (checked against its fields) and whether the
    /// line is a header (true: skip it); on the others, the field count checked against the
    /// first line's.
    fn is_header_or_checked(&mut self, line: &[u8], n: usize) -> Result<bool> {
        match self.first {
            None => {
                self.first = Some((n, self.line));
                let n_i = n as i64;
                let col = if self.label_col < 0 {
                    n_i + self.label_col
                } else {
                    self.label_col
                };
                if !(0..n_i).contains(&col) {
                    return Err(Error::InvalidData {
                        path: self.path.to_path_buf(),
                        msg: format!(
                            "label column {} is out of range: line {} has {n} field{} \
                             (columns are 0-based, negative ones count from the end)",
                            self.label_col,
                            self.line,
                            if n == 1 { "" } else { "s" }
                        ),
                    });
                }
                self.label = col as usize;
                let is_header = line
                    .split(|&c| c == b',')
                    .map(clean)
                    .any(|f| !f.is_empty() && fast_float2::parse::<f64, _>(f).is_err());
                return Ok(is_header);
            }
            Some((expected, first_line)) => {
                if n != expected {
                    return Err(self.err(format!(
                        "line has {n} fields, expected {expected} (as on line {first_line})"
                    )));
                }
            }
        }
        Ok(false)
    }

    /// The field's number: the label (f64) or a feature value (f32), finite, or the error
    /// naming field c (0-based).
    fn number<F: fast_float2::FastFloat + Into<f64>>(
        &self,
        f: &[u8],
        c: usize,
        what: &str,
        range: &str,
    ) -> Result<F> {
        match fast_float2::parse::<F, _>(f) {
            Ok(v) if v.into().is_finite() => Ok(v),
            Ok(_) => Err(self.err(format!(
                "{what} `{}` in field {} is not a finite number{range}",
                show(f),
                c + 1
            ))),
            Err(_) => Err(self.err(format!(
                "malformed {what} `{}` in field {}: expected a number",
                show(f),
                c + 1
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Features;
    use crate::data::compress::Compression;
    use crate::data::compress::tests::write_compressed;

    fn parse(text: &str, label_col: i64) -> Result<Dataset> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.csv");
        std::fs::write(&p, text).unwrap();
        read_csv(&p, label_col)
    }

    fn dense(ds: &Dataset) -> (usize, Vec<f32>) {
        match &ds.features {
            Features::Dense { n_features, values } => (*n_features, values.clone()),
            Features::Sparse { .. } => panic!("expected dense"),
        }
    }

    fn parse_err(text: &str, label_col: i64, line: usize, needles: &[&str]) {
        match parse(text, label_col) {
            Err(Error::Parse { line: l, msg, .. }) => {
                assert_eq!(l, line, "{msg}");
                for n in needles {
                    assert!(msg.contains(n), "`{msg}` lacks `{n}`");
                }
            }
            other => panic!("{text:?}: expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn label_last_without_header() {
        let ds = parse("1.5, 2 ,1\n3,4,-1\r\n", -1).unwrap();
        assert_eq!(ds.labels, vec![1.0, -1.0]);
        assert_eq!(dense(&ds), (2, vec![1.5, 2.0, 3.0, 4.0]));
    }

    #[test]
    fn label_first_and_middle() {
        let text = "1,2,3\n-1,5,6\n";
        let ds = parse(text, 0).unwrap();
        assert_eq!(ds.labels, vec![1.0, -1.0]);
        assert_eq!(dense(&ds), (2, vec![2.0, 3.0, 5.0, 6.0]));
        let ds = parse(text, 1).unwrap();
        assert_eq!(ds.labels, vec![2.0, 5.0]);
        assert_eq!(dense(&ds), (2, vec![1.0, 3.0, -1.0, 6.0]));
        let ds = parse(text, -3).unwrap();
        assert_eq!(ds.labels, vec![1.0, -1.0]);
    }

    #[test]
    fn header_is_detected_and_skipped() {
        let text = "# comment\n\n\"a\",b,label\n1,2,1\n\n3,4,-1\n";
        let ds = parse(text, -1).unwrap();
        assert_eq!(ds.len(), 2);
        assert_eq!(dense(&ds), (2, vec![1.0, 2.0, 3.0, 4.0]));
        // A numeric first line is data.
        let ds = parse("1,2,1\n3,4,-1\n", -1).unwrap();
        assert_eq!(ds.len(), 2);
        // A byte-order mark does not make a header.
        let ds = parse("\u{feff}1,2,1\n3,4,-1\n", -1).unwrap();
        assert_eq!(ds.len(), 2);
        // Quoted numbers are numbers.
        let ds = parse("\"1\",\"2\",1\n", -1).unwrap();
        assert_eq!(ds.len(), 1);
    }

    #[test]
    fn sparse_csv_is_stored_sparse() {
        let mut text = String::new();
        for i in 0..10 {
            text.push_str(&format!("{},0,0,0,0,0,0,0,0,{}\n", i % 2, i));
        }
        let ds = parse(&text, 0).unwrap();
        assert!(!ds.is_dense());
        assert_eq!(ds.n_features(), 9);
        assert_eq!(ds.nnz(), 9);
    }

    #[test]
    fn errors() {
        parse_err("1,2,3\n1,2\n", -1, 2, &["2 fields", "expected 3", "line 1"]);
        parse_err(
            "a,b,c\n1,2,3\n1,2,3,4\n",
            -1,
            3,
            &["4 fields", "expected 3"],
        );
        parse_err("1,2,3\n1,x,3\n", -1, 2, &["`x`", "field 2"]);
        parse_err("1,2,3\n1,2,abc\n", -1, 2, &["`abc`", "label", "field 3"]);
        parse_err("1,2,3\n1,nan,3\n", -1, 2, &["`nan`", "finite"]);
        parse_err("1,2,3\n1,2,inf\n", -1, 2, &["`inf`", "label"]);
        parse_err("1,2,3\n\n1,,3\n", -1, 3, &["field 2", "empty"]);
        parse_err("1,2,3\n1,1e40,3\n", -1, 2, &["`1e40`"]);
        // An empty field on the first line is an error, not a header.
        parse_err("1,,3\n1,2,3\n", -1, 1, &["field 2", "empty"]);
    }

    #[test]
    fn bad_label_col_and_empty_file() {
        for col in [3, -4] {
            match parse("1,2,3\n", col) {
                Err(Error::InvalidData { msg, .. }) => {
                    assert!(msg.contains("out of range"), "{msg}")
                }
                other => panic!("{other:?}"),
            }
        }
        for text in ["", "a,b\n", "# x\n\n"] {
            match parse(text, -1) {
                Err(Error::InvalidData { msg, .. }) => assert!(msg.contains("no data rows")),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn compressed_csv_reads_identically() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("f1,f2,y\n");
        for i in 0..3000 {
            text.push_str(&format!("{}.5,{},{}\n", i, i % 7, i % 2));
        }
        let p = dir.path().join("plain.csv");
        std::fs::write(&p, &text).unwrap();
        let plain = read_csv(&p, -1).unwrap();
        assert_eq!(plain.len(), 3000);
        for fmt in [Compression::Gzip, Compression::Bzip2, Compression::Xz] {
            let q = dir.path().join(format!("c.{}", fmt.name()));
            write_compressed(&q, text.as_bytes(), fmt);
            assert_eq!(read_csv(&q, -1).unwrap(), plain);
        }
    }
}
