//! Min-max feature scaling the way LIBSVM's `svm-scale` does it, with its
//! restore-file format:
//!
//! ```text
//! x
//! -1 1
//! 1 0 100
//! 2 0.5 3
//! ```
//!
//! (the line `x`, then `lower upper`, then `index min max` per feature, 1-based).
//!
//! Behaviour copied from svm-scale:
//! * the minimum and maximum of a feature include the implicit zeros of the rows that
//!   do not list it;
//! * a feature's minimum maps exactly to `lower`, its maximum exactly to `upper`, and
//!   values in between linearly; values outside the fitted range are **not** clipped
//!   (they map outside `[lower, upper]`);
//! * single-valued features (max == min) are dropped: they become 0, and are not
//!   written to the restore file. Features the parameters do not cover (beyond the
//!   last fitted one) are dropped too;
//! * labels are left alone (no `y` scaling).
//!
//! With `lower != 0` the zeros of sparse data become non-zero; [`ScaleParams::apply`]
//! stores the result densely when it becomes dense enough (see [`Dataset::from_csr`]).

use super::{Dataset, Features};
use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Per-feature scaling parameters (what svm-scale's `-s` file holds).
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleParams {
    /// Scaled value of each feature's minimum.
    pub lower: f64,
    /// Scaled value of each feature's maximum.
    pub upper: f64,
    /// Per-feature minimum (0-based feature index).
    pub min: Vec<f64>,
    /// Per-feature maximum (0-based feature index).
    pub max: Vec<f64>,
}

/// The feature widths (max − min) of a dataset, as [`ScaleParams::spread`] finds them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The widest feature (1-based, as in the file).
    pub feature: usize,
    /// Its width.
    pub widest: f64,
    /// The median width of the features that vary.
    pub median: f64,
}

impl Spread {
    /// True when the widest feature is at least 100 times the median one: an RBF or
    /// polynomial kernel then sees little but that feature.
    pub fn is_uneven(&self) -> bool {
        self.widest >= 100.0 * self.median
    }
}

impl ScaleParams {
    /// Finds each feature's range in `ds` (implicit zeros included) for scaling to
    /// `[lower, upper]`. Fails with [`Error::InvalidParam`] unless
    /// `lower < upper`, both finite.
    pub fn fit(ds: &Dataset, lower: f64, upper: f64) -> Result<Self> {
        if !(lower.is_finite() && upper.is_finite() && lower < upper) {
            return Err(Error::param(format!(
                "scaling range [{lower}, {upper}] is invalid: lower must be below upper"
            )));
        }
        let d = ds.n_features();
        let m = ds.len();
        let mut min = vec![f64::INFINITY; d];
        let mut max = vec![f64::NEG_INFINITY; d];
        match &ds.features {
            Features::Dense { values, .. } => {
                for row in values.chunks_exact(d.max(1)) {
                    for (j, &x) in row.iter().enumerate() {
                        let x = x as f64;
                        min[j] = min[j].min(x);
                        max[j] = max[j].max(x);
                    }
                }
            }
            Features::Sparse {
                indices, values, ..
            } => {
                let mut count = vec![0usize; d];
                for (&j, &x) in indices.iter().zip(values) {
                    let (j, x) = (j as usize, x as f64);
                    min[j] = min[j].min(x);
                    max[j] = max[j].max(x);
                    count[j] += 1;
                }
                // Rows that do not list a feature hold a zero there.
                for j in 0..d {
                    if count[j] < m {
                        min[j] = min[j].min(0.0);
                        max[j] = max[j].max(0.0);
                    }
                }
            }
        }
        for j in 0..d {
            if min[j] > max[j] {
                // No rows at all.
                min[j] = 0.0;
                max[j] = 0.0;
            }
        }
        Ok(ScaleParams {
            lower,
            upper,
            min,
            max,
        })
    }

    /// How unevenly the features are spread: the widest feature and the median width, over
    /// the features that vary. None when fewer than two features vary.
    pub fn spread(&self) -> Option<Spread> {
        let mut widths: Vec<(f64, usize)> = (0..self.min.len())
            .filter(|&j| self.active(j))
            .map(|j| (self.max[j] - self.min[j], j))
            .collect();
        if widths.len() < 2 {
            return None;
        }
        widths.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (widest, feature) = widths[widths.len() - 1];
        Some(Spread {
            feature: feature + 1,
            widest,
            median: widths[widths.len() / 2].0,
        })
    }

    /// Number of features covered.
    pub fn n_features(&self) -> usize {
        self.min.len()
    }

    /// True when feature `j` (0-based) is scaled, false when it is dropped.
    fn active(&self, j: usize) -> bool {
        j < self.min.len() && self.max[j] > self.min[j]
    }

    /// The scaled value of `x` for an active feature `j`.
    #[inline]
    fn map(&self, j: usize, x: f64) -> f64 {
        let (lo, hi) = (self.min[j], self.max[j]);
        if x == lo {
            self.lower
        } else if x == hi {
            self.upper
        } else {
            self.lower + (self.upper - self.lower) * (x - lo) / (hi - lo)
        }
    }

    /// Scaled value of feature `j` at `x` (0 for a dropped feature), as stored (f32).
    #[inline]
    fn scaled(&self, j: usize, x: f32) -> f32 {
        if self.active(j) {
            self.map(j, x as f64) as f32
        } else {
            0.0
        }
    }

    /// Scales the features of `ds` in place (labels untouched). The number of
    /// features stays the same; the layout may change from sparse to dense when
    /// zeros map to non-zeros.
    pub fn apply(&self, ds: &mut Dataset) {
        let d = ds.n_features();
        match &mut ds.features {
            Features::Dense { values, .. } => {
                for row in values.chunks_exact_mut(d.max(1)) {
                    for (j, x) in row.iter_mut().enumerate() {
                        *x = self.scaled(j, *x);
                    }
                }
            }
            Features::Sparse {
                indptr,
                indices,
                values,
                ..
            } => {
                let m = indptr.len() - 1;
                // Features whose implicit zeros become non-zero, ascending.
                let zero_nz: Vec<u32> = (0..d)
                    .filter(|&j| self.scaled(j, 0.0) != 0.0)
                    .map(|j| j as u32)
                    .collect();
                let zero_val: Vec<f32> = zero_nz
                    .iter()
                    .map(|&j| self.scaled(j as usize, 0.0))
                    .collect();
                let mut ip = Vec::with_capacity(m + 1);
                let mut ix = Vec::with_capacity(indices.len() + m * zero_nz.len());
                let mut vs = Vec::with_capacity(indices.len() + m * zero_nz.len());
                ip.push(0);
                for i in 0..m {
                    let (a, b) = (indptr[i], indptr[i + 1]);
                    let (ri, rv) = (&indices[a..b], &values[a..b]);
                    let (mut p, mut q) = (0, 0);
                    // Merge the stored entries with the features whose zero moves.
                    while p < ri.len() || q < zero_nz.len() {
                        let (j, v) = if q == zero_nz.len() || (p < ri.len() && ri[p] < zero_nz[q]) {
                            let r = (ri[p], self.scaled(ri[p] as usize, rv[p]));
                            p += 1;
                            r
                        } else if p == ri.len() || zero_nz[q] < ri[p] {
                            let r = (zero_nz[q], zero_val[q]);
                            q += 1;
                            r
                        } else {
                            let r = (ri[p], self.scaled(ri[p] as usize, rv[p]));
                            p += 1;
                            q += 1;
                            r
                        };
                        if v != 0.0 {
                            ix.push(j);
                            vs.push(v);
                        }
                    }
                    ip.push(ix.len());
                }
                let labels = std::mem::take(&mut ds.labels);
                *ds = Dataset::from_csr(d, ip, ix, vs, labels);
            }
        }
    }

    /// Writes the parameters in svm-scale's restore-file format (single-valued
    /// features are left out, as svm-scale does). Numbers are written so that they
    /// read back exactly.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::output::write_output(path, |w| {
            writeln!(w, "x")?;
            writeln!(w, "{} {}", self.lower, self.upper)?;
            for j in 0..self.min.len() {
                if self.active(j) {
                    writeln!(w, "{} {} {}", j + 1, self.min[j], self.max[j])?;
                }
            }
            Ok(())
        })
    }

    /// Reads a restore file written by [`ScaleParams::save`] or by svm-scale `-s`.
    /// Features it does not list are dropped by [`ScaleParams::apply`]. A file with `y`
    /// (label) scaling is refused. Malformed lines give [`Error::Parse`].
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = String::from_utf8_lossy(&text);
        let err = |line: usize, msg: String| Error::Parse {
            path: path.to_path_buf(),
            line,
            msg,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty());
        match lines.next() {
            Some((_, "x")) => {}
            Some((n, "y")) => {
                return Err(err(
                    n,
                    "label (`y`) scaling is not supported: expected `x`".into(),
                ));
            }
            Some((n, l)) => {
                return Err(err(
                    n,
                    format!("expected `x` (an svm-scale parameter file), found `{l}`"),
                ));
            }
            None => return Err(err(1, "empty file: expected `x`".into())),
        }
        let num = |line: usize, t: &str, what: &str| -> Result<f64> {
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(err(
                    line,
                    format!("malformed {what} `{t}`: expected a finite number"),
                )),
            }
        };
        let (n, l) = lines
            .next()
            .ok_or_else(|| err(2, "missing `lower upper` line".into()))?;
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() != 2 {
            return Err(err(n, format!("expected `lower upper`, found `{l}`")));
        }
        let lower = num(n, f[0], "lower bound")?;
        let upper = num(n, f[1], "upper bound")?;
        if lower >= upper {
            return Err(err(
                n,
                format!("lower bound {lower} is not below upper bound {upper}"),
            ));
        }
        let mut min = Vec::new();
        let mut max = Vec::new();
        let mut seen = Vec::new();
        for (n, l) in lines {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 3 {
                return Err(err(n, format!("expected `index min max`, found `{l}`")));
            }
            let j: usize = match f[0].parse::<u32>() {
                Ok(j) if j >= 1 => j as usize,
                _ => {
                    return Err(err(
                        n,
                        format!("malformed index `{}`: expected a positive integer", f[0]),
                    ));
                }
            };
            let lo = num(n, f[1], "minimum")?;
            let hi = num(n, f[2], "maximum")?;
            if lo > hi {
                return Err(err(n, format!("minimum {lo} is above maximum {hi}")));
            }
            if j > min.len() {
                min.resize(j, 0.0);
                max.resize(j, 0.0);
                seen.resize(j, false);
            }
            if seen[j - 1] {
                return Err(err(n, format!("index {j} is listed twice")));
            }
            seen[j - 1] = true;
            min[j - 1] = lo;
            max[j - 1] = hi;
        }
        Ok(ScaleParams {
            lower,
            upper,
            min,
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sparse(d: usize, rows: &[&[(u32, f32)]], labels: &[f64]) -> Dataset {
        let mut ip = vec![0];
        let (mut ix, mut vs) = (vec![], vec![]);
        for r in rows {
            for &(j, v) in *r {
                ix.push(j);
                vs.push(v);
            }
            ip.push(ix.len());
        }
        Dataset {
            features: Features::Sparse {
                n_features: d,
                indptr: ip,
                indices: ix,
                values: vs,
            },
            labels: labels.to_vec(),
        }
    }

    fn dense_rows(ds: &Dataset) -> Vec<Vec<f32>> {
        (0..ds.len())
            .map(|i| {
                let mut r = vec![0f32; ds.n_features()];
                ds.row(i).scatter_into(&mut r);
                r
            })
            .collect()
    }

    fn dense(rows: &[&[f32]]) -> Dataset {
        let d = rows[0].len();
        let mut ip = vec![0];
        let (mut ix, mut vs) = (vec![], vec![]);
        for r in rows {
            for (j, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    ix.push(j as u32);
                    vs.push(v);
                }
            }
            ip.push(ix.len());
        }
        Dataset::from_csr(d, ip, ix, vs, vec![1.0; rows.len()])
    }

    #[test]
    fn dense_scaling_matches_hand_computation() {
        // f0 in [0,100], f1 in [0.5,3], f2 constant 7.
        let mut ds = dense(&[&[0.0, 0.5, 7.0], &[100.0, 3.0, 7.0], &[25.0, 1.75, 7.0]]);
        assert!(ds.is_dense());
        let p = ScaleParams::fit(&ds, -1.0, 1.0).unwrap();
        assert_eq!(p.min, vec![0.0, 0.5, 7.0]);
        assert_eq!(p.max, vec![100.0, 3.0, 7.0]);
        p.apply(&mut ds);
        assert_eq!(
            dense_rows(&ds),
            vec![
                vec![-1.0, -1.0, 0.0],
                vec![1.0, 1.0, 0.0],
                vec![-0.5, 0.0, 0.0]
            ]
        );
        // Out-of-range values are not clipped.
        let mut t = dense(&[&[200.0, -2.0, 9.0]]);
        p.apply(&mut t);
        assert_eq!(dense_rows(&t), vec![vec![3.0, -3.0, 0.0]]);
    }

    #[test]
    fn sparse_implicit_zeros_count_and_move() {
        // Feature 0: stored 2 and 4, one row lacks it → range [0,4].
        // Feature 1: stored in every row (1, 3, 5) → range [1,5].
        // Feature 2: never stored → dropped. Width 3.
        let rows: &[&[(u32, f32)]] = &[&[(0, 2.0), (1, 1.0)], &[(1, 3.0)], &[(0, 4.0), (1, 5.0)]];
        let ds = sparse(3, rows, &[1.0, -1.0, 1.0]);
        let p = ScaleParams::fit(&ds, -1.0, 1.0).unwrap();
        assert_eq!(p.min, vec![0.0, 1.0, 0.0]);
        assert_eq!(p.max, vec![4.0, 5.0, 0.0]);
        let mut a = ds.clone();
        p.apply(&mut a);
        assert_eq!(a.labels, ds.labels);
        assert_eq!(a.n_features(), 3);
        assert_eq!(
            dense_rows(&a),
            vec![
                vec![0.0, -1.0, 0.0],
                vec![-1.0, 0.0, 0.0],
                vec![1.0, 1.0, 0.0]
            ]
        );

        // [0,1] keeps the zeros of feature 0 at zero: the sparse path.
        let p01 = ScaleParams::fit(&ds, 0.0, 1.0).unwrap();
        let mut b = ds.clone();
        p01.apply(&mut b);
        assert_eq!(
            dense_rows(&b),
            vec![
                vec![0.5, 0.0, 0.0],
                vec![0.0, 0.5, 0.0],
                vec![1.0, 1.0, 0.0]
            ]
        );
    }

    #[test]
    fn sparse_becomes_dense_when_zeros_fill_in() {
        let d = 4;
        let rows: Vec<Vec<(u32, f32)>> = (0..8u32).map(|i| vec![(i % 4, 1.0 + i as f32)]).collect();
        let refs: Vec<&[(u32, f32)]> = rows.iter().map(|r| r.as_slice()).collect();
        let mut ds = sparse(d, &refs, &[1.0; 8]);
        let expect: Vec<Vec<f32>> = dense_rows(&ds)
            .iter()
            .map(|r| {
                r.iter()
                    .enumerate()
                    .map(|(j, &x)| {
                        let hi = (j + 5) as f32;
                        if x == 0.0 {
                            -1.0
                        } else if x == hi {
                            1.0
                        } else {
                            (-1.0 + 2.0 * x as f64 / hi as f64) as f32
                        }
                    })
                    .collect()
            })
            .collect();
        let p = ScaleParams::fit(&ds, -1.0, 1.0).unwrap();
        p.apply(&mut ds);
        assert!(ds.is_dense());
        assert_eq!(dense_rows(&ds), expect);
    }

    #[test]
    fn dense_and_sparse_give_the_same_result() {
        let rows: &[&[f32]] = &[
            &[0.0, 3.0, 0.0, 1.0],
            &[2.0, 0.0, 0.0, 1.0],
            &[0.0, -1.0, 5.0, 1.0],
            &[0.0, 0.0, 0.0, 0.0],
        ];
        let ds = Dataset {
            features: Features::Dense {
                n_features: 4,
                values: rows.concat(),
            },
            labels: vec![1.0, -1.0, 1.0, -1.0],
        };
        let mut sp_ip = vec![0];
        let (mut ix, mut vs) = (vec![], vec![]);
        for r in rows {
            for (j, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    ix.push(j as u32);
                    vs.push(v);
                }
            }
            sp_ip.push(ix.len());
        }
        let sp = Dataset {
            features: Features::Sparse {
                n_features: 4,
                indptr: sp_ip,
                indices: ix,
                values: vs,
            },
            labels: ds.labels.clone(),
        };
        for (lo, hi) in [(-1.0, 1.0), (0.0, 1.0), (2.0, 3.0)] {
            let p = ScaleParams::fit(&ds, lo, hi).unwrap();
            assert_eq!(p, ScaleParams::fit(&sp, lo, hi).unwrap());
            let (mut a, mut b) = (ds.clone(), sp.clone());
            p.apply(&mut a);
            p.apply(&mut b);
            assert_eq!(dense_rows(&a), dense_rows(&b));
        }
    }

    #[test]
    fn features_beyond_the_fit_are_dropped() {
        let p = ScaleParams::fit(&dense(&[&[0.0, 1.0], &[2.0, 3.0]]), 0.0, 1.0).unwrap();
        let mut t = dense(&[&[1.0, 2.0, 9.0]]);
        p.apply(&mut t);
        assert_eq!(dense_rows(&t), vec![vec![0.5, 0.5, 0.0]]);
    }

    #[test]
    fn save_load_round_trip_and_format() {
        let dir = tempfile::tempdir().unwrap();
        let ds = dense(&[&[0.0, 0.5, 7.0, 0.1], &[100.0, 3.0, 7.0, 0.3]]);
        let p = ScaleParams::fit(&ds, -1.0, 1.0).unwrap();
        let f = dir.path().join("range");
        p.save(&f).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        let f1 = 0.1f32 as f64;
        let f3 = 0.3f32 as f64;
        assert_eq!(text, format!("x\n-1 1\n1 0 100\n2 0.5 3\n4 {f1} {f3}\n"));
        let q = ScaleParams::load(&f).unwrap();
        assert_eq!((q.lower, q.upper), (-1.0, 1.0));
        assert_eq!(q.min, vec![0.0, 0.5, 0.0, f1]);
        assert_eq!(q.max, vec![100.0, 3.0, 0.0, f3]);
        let (mut a, mut b) = (ds.clone(), ds.clone());
        p.apply(&mut a);
        q.apply(&mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn loads_svm_scale_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("r");
        std::fs::write(
            &f,
            "x\n0 1\n3 -2.5000000000000000 1.0000000000000000e+01\n1 0 1\n",
        )
        .unwrap();
        let p = ScaleParams::load(&f).unwrap();
        assert_eq!((p.lower, p.upper), (0.0, 1.0));
        assert_eq!(p.min, vec![0.0, 0.0, -2.5]);
        assert_eq!(p.max, vec![1.0, 0.0, 10.0]);
    }

    #[test]
    fn load_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("r");
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "expected `x`"),
            ("y\n-1 1\n0 1\nx\n", 1, "`y`"),
            ("z\n", 1, "`z`"),
            ("x\n", 2, "lower upper"),
            ("x\n-1\n", 2, "`-1`"),
            ("x\n1 -1\n", 2, "not below"),
            ("x\n-1 q\n", 2, "`q`"),
            ("x\n-1 1\n1 0 1\n0 0 1\n", 4, "`0`"),
            ("x\n-1 1\n\n1 0 1\nb 0 1\n", 5, "`b`"),
            ("x\n-1 1\n1 0\n", 3, "index min max"),
            ("x\n-1 1\n1 0 nan\n", 3, "`nan`"),
            ("x\n-1 1\n1 5 1\n", 3, "above"),
            ("x\n-1 1\n1 0 1\n1 0 2\n", 4, "twice"),
        ];
        for (text, line, needle) in cases {
            std::fs::write(&f, text).unwrap();
            match ScaleParams::load(&f) {
                Err(Error::Parse { line: l, msg, .. }) => {
                    assert_eq!(l, *line, "{text:?}: {msg}");
                    assert!(msg.contains(needle), "{text:?}: {msg}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn spread_finds_the_widest_feature() {
        let ds = dense(&[
            &[0.0, 1.0, 2000.0, 5.0],
            &[1.0, 0.0, -1000.0, 5.0],
            &[0.5, 0.5, 0.0, 5.0],
        ]);
        let s = ScaleParams::fit(&ds, -1.0, 1.0).unwrap().spread().unwrap();
        assert_eq!(s.feature, 3);
        assert_eq!(s.widest, 3000.0);
        assert_eq!(s.median, 1.0);
        assert!(s.is_uneven());
        let even = dense(&[&[0.0, 1.0], &[2.0, 0.0]]);
        let s = ScaleParams::fit(&even, -1.0, 1.0)
            .unwrap()
            .spread()
            .unwrap();
        assert!(!s.is_uneven());
        // One varying feature: nothing to compare.
        let one = dense(&[&[0.0, 7.0], &[2.0, 7.0]]);
        assert_eq!(ScaleParams::fit(&one, -1.0, 1.0).unwrap().spread(), None);
    }

    #[test]
    fn fit_rejects_bad_ranges() {
        let ds = dense(&[&[1.0]]);
        for (lo, hi) in [(1.0, 1.0), (1.0, -1.0), (f64::NAN, 1.0)] {
            assert!(matches!(
                ScaleParams::fit(&ds, lo, hi),
                Err(Error::InvalidParam(_))
            ));
        }
    }
}
