//! KDD Cup 1999 converter: raw connection records to LIBSVM files.
//!
//! A raw record has 42 comma-separated fields: 41 features and a label such as
//! `normal.` or `smurf.`. The converter drops the three symbolic features
//! (0-based columns 1, 2, 3: `protocol_type`, `service`, `flag`), keeps the other 38
//! numeric ones in file order, and labels `normal.` as +1 and every attack as -1.
//!
//! [`convert_kdd99`] shuffles the rows with a seeded generator and splits them into
//! `<prefix>.train` and `<prefix>.test`; the test part has ⌈m·f⌉ rows, the training
//! part ⌊m·(1−f)⌋, which for the 494,021 rows of `kddcup.data_10_percent` and
//! f = 0.2 gives the 395,216 / 98,805 split used in the Frank–Wolfe SVM papers.
//! [`convert_kdd99_all`] writes every row, in file order, to one file (for the
//! `corrected` test set). Output files are written atomically.

use super::compress::{for_each_line_chunk, open_with_format};
use super::{Dataset, write_libsvm};
use crate::error::{Error, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Fields in a raw record (41 features + label).
pub const RAW_FIELDS: usize = 42;
/// Numeric features kept.
pub const N_FEATURES: usize = 38;
/// 0-based raw columns dropped (symbolic).
pub const DROPPED_COLUMNS: [usize; 3] = [1, 2, 3];

/// Rows and class counts of one written file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSummary {
    /// The file written.
    pub path: PathBuf,
    /// Number of rows.
    pub rows: usize,
    /// Rows labelled +1 (`normal.`).
    pub positives: usize,
    /// Rows labelled -1 (attacks).
    pub negatives: usize,
}

/// What a conversion wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KddSummary {
    /// Rows read from the raw file.
    pub total_rows: usize,
    /// Number of features written (38).
    pub n_features: usize,
    /// The training file (every row for [`convert_kdd99_all`]).
    pub train: PartSummary,
    /// The test file; `None` when no test rows were asked for.
    pub test: Option<PartSummary>,
}

impl std::fmt::Display for PartSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} rows ({} normal = +1, {} attack = -1)",
            self.path.display(),
            self.rows,
            self.positives,
            self.negatives
        )
    }
}

impl std::fmt::Display for KddSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rows, {} features\n{}",
            self.total_rows, self.n_features, self.train
        )?;
        if let Some(t) = &self.test {
            write!(f, "\n{t}")?;
        }
        Ok(())
    }
}

/// Reads a raw KDD Cup 99 file (plain or compressed) into a dataset with 38 features
/// and ±1 labels, rows in file order. Blank lines are skipped; a malformed record
/// gives [`Error::Parse`] naming the file and line.
pub fn read_kdd99_raw(path: &Path) -> Result<Dataset> {
    let (mut reader, format) = open_with_format(path)?;
    let mut line_no = 0usize;
    let mut indptr = vec![0usize];
    let mut indices: Vec<u32> = Vec::new();
    let mut values: Vec<f32> = Vec::new();
    let mut labels: Vec<f64> = Vec::new();
    let err = |line: usize, msg: String| Error::Parse {
        path: path.to_path_buf(),
        line,
        msg,
    };
    for_each_line_chunk(&mut *reader, path, format, |chunk| {
        for line in chunk[..chunk.len() - 1].split(|&c| c == b'\n') {
            line_no += 1;
            let line = line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            let n = line.iter().filter(|&&c| c == b',').count() + 1;
            if n != RAW_FIELDS {
                return Err(err(
                    line_no,
                    format!(
                        "a KDD Cup 99 record has {RAW_FIELDS} comma-separated fields, this line has {n}"
                    ),
                ));
            }
            let mut j = 0u32;
            for (c, field) in line.split(|&c| c == b',').enumerate() {
                if DROPPED_COLUMNS.contains(&c) {
                    continue;
                }
                let f = field.trim_ascii();
                if c == RAW_FIELDS - 1 {
                    let name = f.strip_suffix(b".").unwrap_or(f);
                    if name.is_empty() {
                        return Err(err(
                            line_no,
                            "empty label in field 42: expected e.g. `normal.` or `smurf.`".into(),
                        ));
                    }
                    labels.push(if name == b"normal" { 1.0 } else { -1.0 });
                    continue;
                }
                let v = match fast_float2::parse::<f32, _>(f) {
                    Ok(v) if v.is_finite() => v,
                    _ => {
                        return Err(err(
                            line_no,
                            format!(
                                "malformed value `{}` in field {}: expected a finite number",
                                String::from_utf8_lossy(&f[..f.len().min(40)]),
                                c + 1
                            ),
                        ));
                    }
                };
                if v != 0.0 {
                    indices.push(j);
                    values.push(v);
                }
                j += 1;
            }
            indptr.push(indices.len());
        }
        Ok::<(), Error>(())
    })?;
    if labels.is_empty() {
        return Err(Error::InvalidData {
            path: path.to_path_buf(),
            msg: "no data rows".into(),
        });
    }
    Ok(Dataset::from_csr(
        N_FEATURES, indptr, indices, values, labels,
    ))
}

/// Converts `raw` to `<out_prefix>.train` and `<out_prefix>.test` (LIBSVM format):
/// rows shuffled with `seed`, ⌈m·test_fraction⌉ of them in the test file. With
/// `test_fraction` 0 only `<out_prefix>.train` is written. `test_fraction` must be in
/// `[0, 1)`.
pub fn convert_kdd99(
    raw: &Path,
    out_prefix: &Path,
    seed: u64,
    test_fraction: f64,
) -> Result<KddSummary> {
    if !(0.0..1.0).contains(&test_fraction) {
        return Err(Error::param(format!(
            "test fraction {test_fraction} must be at least 0 and below 1"
        )));
    }
    let ds = read_kdd99_raw(raw)?;
    let m = ds.len();
    let n_test = split_test_rows(m, test_fraction);
    let mut perm: Vec<usize> = (0..m).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..m).rev() {
        let k = rng.below(i as u64 + 1) as usize;
        perm.swap(i, k);
    }
    let (train_rows, test_rows) = perm.split_at(m - n_test);
    let train = write_part(&ds.subset(train_rows), &with_suffix(out_prefix, ".train"))?;
    let test = if n_test > 0 {
        Some(write_part(
            &ds.subset(test_rows),
            &with_suffix(out_prefix, ".test"),
        )?)
    } else {
        None
    };
    Ok(KddSummary {
        total_rows: m,
        n_features: ds.n_features(),
        train,
        test,
    })
}

/// Converts every row of `raw`, in file order, to the LIBSVM file `out`.
pub fn convert_kdd99_all(raw: &Path, out: &Path) -> Result<KddSummary> {
    let ds = read_kdd99_raw(raw)?;
    let train = write_part(&ds, out)?;
    Ok(KddSummary {
        total_rows: ds.len(),
        n_features: ds.n_features(),
        train,
        test: None,
    })
}

/// Test rows for `m` rows and fraction `f`: ⌈m·f⌉ (with a little slack against
/// rounding, so exact products are not rounded up).
pub fn split_test_rows(m: usize, f: f64) -> usize {
    ((m as f64 * f - 1e-9).ceil().max(0.0) as usize).min(m)
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s: OsString = prefix.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Writes `ds` to `path` through [`crate::output`] (atomic replacement of regular files).
fn write_part(ds: &Dataset, path: &Path) -> Result<PartSummary> {
    crate::output::write_output(path, |w| write_libsvm(w, ds))?;
    let positives = ds.labels.iter().filter(|&&y| y > 0.0).count();
    Ok(PartSummary {
        path: path.to_path_buf(),
        rows: ds.len(),
        positives,
        negatives: ds.len() - positives,
    })
}

/// SplitMix64 (Steele, Lea & Flood 2014): tiny, fast, deterministic across platforms.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by Lemire's unbiased multiply-and-reject.
    fn below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let r = (self.next_u64() as u128) * (n as u128);
            if (r as u64) >= threshold {
                return (r >> 64) as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::compress::Compression;
    use crate::data::compress::tests::write_compressed;
    use crate::data::read_libsvm;

    const NORMAL: &str = "0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,1.00,0.00,0.00,9,9,1.00,0.00,0.11,0.00,0.00,0.00,0.00,0.00,normal.";
    const SMURF: &str = "0,icmp,ecr_i,SF,1032,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,511,511,0.00,0.00,0.00,0.00,1.00,0.00,0.00,255,255,1.00,0.00,1.00,0.00,0.00,0.00,0.00,0.00,smurf.";
    const NEPTUNE: &str = "0,tcp,private,S0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,123,6,1.00,1.00,0.00,0.00,0.05,0.07,0.00,255,26,0.10,0.05,0.00,0.00,1.00,1.00,0.00,0.00,neptune.";

    /// Ten records: rows 0, 3, 6, 9 normal; the rest attacks. Field 0 holds the row
    /// number so rows can be told apart after shuffling.
    fn sample() -> String {
        let mut s = String::new();
        for i in 0..10 {
            let base = match i % 3 {
                0 => NORMAL,
                1 => SMURF,
                _ => NEPTUNE,
            };
            s.push_str(&format!("{}{}\n", i + 1, &base[1..]));
        }
        s
    }

    #[test]
    fn reads_raw_records() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("raw");
        std::fs::write(&p, format!("{}\n\n", sample())).unwrap();
        let ds = read_kdd99_raw(&p).unwrap();
        assert_eq!(ds.len(), 10);
        assert_eq!(ds.n_features(), 38);
        assert_eq!(
            ds.labels,
            vec![1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0]
        );
        let mut r = vec![0f32; 38];
        ds.row(0).scatter_into(&mut r);
        // Columns 0, 4, 5, ... of the first record.
        assert_eq!(&r[..4], &[1.0, 181.0, 5450.0, 0.0]);
        assert_eq!(r[11 - 3], 1.0); // raw column 11 (logged_in)
        assert_eq!(r[22 - 3], 8.0); // raw column 22 (count)
        assert_eq!(r[35 - 3], 0.11); // raw column 35 (dst_host_same_src_port_rate)
        assert_eq!(r[37], 0.0);
    }

    #[test]
    fn split_sizes() {
        assert_eq!(split_test_rows(494_021, 0.2), 98_805);
        assert_eq!(494_021 - split_test_rows(494_021, 0.2), 395_216);
        assert_eq!(split_test_rows(10, 0.2), 2);
        assert_eq!(split_test_rows(10, 0.3), 3);
        assert_eq!(split_test_rows(10, 0.0), 0);
        assert_eq!(split_test_rows(3, 0.5), 2);
    }

    #[test]
    fn converts_and_splits() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("kdd.gz");
        write_compressed(&raw, sample().as_bytes(), Compression::Gzip);
        let prefix = dir.path().join("out").join("kdd");
        std::fs::create_dir(dir.path().join("out")).unwrap();
        let s = convert_kdd99(&raw, &prefix, 7, 0.2).unwrap();
        assert_eq!(s.total_rows, 10);
        assert_eq!(s.n_features, 38);
        assert_eq!(s.train.rows, 8);
        let test = s.test.clone().unwrap();
        assert_eq!(test.rows, 2);
        assert_eq!(s.train.positives + test.positives, 4);
        assert_eq!(s.train.negatives + test.negatives, 6);
        assert_eq!(s.train.path, dir.path().join("out/kdd.train"));
        assert_eq!(test.path, dir.path().join("out/kdd.test"));

        let tr = read_libsvm(&s.train.path).unwrap();
        let te = read_libsvm(&test.path).unwrap();
        assert_eq!((tr.len(), te.len()), (8, 2));
        assert!(tr.n_features() <= 38 && te.n_features() <= 38);
        assert!(
            tr.labels
                .iter()
                .chain(&te.labels)
                .all(|&y| y == 1.0 || y == -1.0)
        );
        assert_eq!(
            tr.labels.iter().filter(|&&y| y > 0.0).count(),
            s.train.positives
        );
        // Every original row appears exactly once (field 0 is the row number), and
        // labels stayed with their rows.
        let mut ids: Vec<(u32, f64)> = Vec::new();
        for d in [&tr, &te] {
            for i in 0..d.len() {
                let mut r = vec![0f32; d.n_features()];
                d.row(i).scatter_into(&mut r);
                ids.push((r[0] as u32, d.labels[i]));
            }
        }
        let shuffled: Vec<u32> = ids.iter().map(|x| x.0).collect();
        assert_ne!(
            shuffled,
            (1..=10).collect::<Vec<_>>(),
            "rows were not shuffled"
        );
        ids.sort_by_key(|x| x.0);
        for (k, (id, y)) in ids.iter().enumerate() {
            assert_eq!(*id as usize, k + 1);
            assert_eq!(*y, if k % 3 == 0 { 1.0 } else { -1.0 });
        }

        // Same seed, same files; another seed, another order.
        let a = std::fs::read(&s.train.path).unwrap();
        convert_kdd99(&raw, &prefix, 7, 0.2).unwrap();
        assert_eq!(std::fs::read(&s.train.path).unwrap(), a);
        convert_kdd99(&raw, &prefix, 8, 0.2).unwrap();
        assert_ne!(std::fs::read(&s.train.path).unwrap(), a);
        // No temporary files left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn convert_all_keeps_order_and_zero_fraction_writes_train_only() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("corrected");
        std::fs::write(&raw, sample()).unwrap();
        let out = dir.path().join("kdd.t");
        let s = convert_kdd99_all(&raw, &out).unwrap();
        assert_eq!(
            (s.train.rows, s.train.positives, s.train.negatives),
            (10, 4, 6)
        );
        assert!(s.test.is_none());
        let ds = read_libsvm(&out).unwrap();
        assert_eq!(ds.labels, read_kdd99_raw(&raw).unwrap().labels);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.starts_with("1 1:1 2:181 3:5450 "), "{text}");

        let s = convert_kdd99(&raw, &dir.path().join("p"), 1, 0.0).unwrap();
        assert_eq!(s.train.rows, 10);
        assert!(s.test.is_none());
        assert!(!dir.path().join("p.test").exists());
        assert!(matches!(
            convert_kdd99(&raw, &dir.path().join("p"), 1, 1.0),
            Err(Error::InvalidParam(_))
        ));
    }

    #[test]
    fn malformed_records_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        let bad_field = NORMAL.replacen(",181,", ",18x1,", 1);
        let short = NORMAL.replacen(",normal.", "", 1);
        for (text, line, needle) in [
            (format!("{NORMAL}\n{bad_field}\n"), 2, "`18x1`"),
            (format!("{NORMAL}\n\n{short}\n"), 3, "41"),
            (
                format!("{NORMAL}\n{}\n", NORMAL.replacen("normal.", ".", 1)),
                2,
                "label",
            ),
        ] {
            std::fs::write(&raw, &text).unwrap();
            match read_kdd99_raw(&raw) {
                Err(e) => {
                    let shown = e.to_string();
                    let Error::Parse { path, line: l, msg } = e else {
                        panic!("{shown}")
                    };
                    assert_eq!(path, raw);
                    assert_eq!(l, line, "{msg}");
                    assert!(msg.contains(needle), "{msg}");
                    assert!(shown.contains(&format!("raw:{line}:")), "{shown}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn below_is_in_range_and_deterministic() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for n in 1..1000u64 {
            let x = a.below(n);
            assert!(x < n);
            assert_eq!(x, b.below(n));
        }
    }
}
