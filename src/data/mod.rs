//! Datasets in memory and the readers that build them.
//!
//! Features are stored as f32, dense row-major when the data are dense enough
//! (nnz / (m·d) ≥ [`DENSE_THRESHOLD`]), CSR otherwise. Labels keep their original
//! values (as f64, the way LIBSVM reads them).

pub(crate) mod compress;
mod csv;
pub mod kdd;
pub(crate) mod libsvm;
pub mod scale;
mod stats;
pub mod synth;

pub use compress::{Compression, open_maybe_compressed, open_with_format};
pub use csv::read_csv;
pub use libsvm::{read_libsvm, renumber_features, write_libsvm};
pub(crate) use stats::LayoutStats;

use crate::error::Result;
use std::path::Path;

/// Fraction of non-zeros above which a dataset is stored dense.
pub const DENSE_THRESHOLD: f64 = 0.5;

/// True when `nnz` non-zeros over `rows` × `n_features` cells are stored dense.
pub fn dense_enough(nnz: usize, rows: usize, n_features: usize) -> bool {
    let cells = rows as f64 * n_features as f64;
    cells > 0.0 && nnz as f64 >= DENSE_THRESHOLD * cells
}

/// Feature storage.
#[derive(Debug, Clone, PartialEq)]
pub enum Features {
    /// Row-major m × d.
    Dense {
        /// Number of columns d.
        n_features: usize,
        /// m·d values, row i at `i*d .. (i+1)*d`.
        values: Vec<f32>,
    },
    /// Compressed sparse rows, 0-based ascending column indices.
    Sparse {
        /// Number of columns d (max index seen, or larger when asked).
        n_features: usize,
        /// m+1 offsets into `indices`/`values`.
        indptr: Vec<usize>,
        /// Column indices (0-based), ascending within a row.
        indices: Vec<u32>,
        /// Non-zero values.
        values: Vec<f32>,
    },
}

/// A borrowed row.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// All d values.
    Dense(&'a [f32]),
    /// (0-based indices, values).
    Sparse(&'a [u32], &'a [f32]),
}

/// A row that owns its values (a copy of a [`Row`], e.g. one received from another process).
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedRow {
    /// Dense values.
    Dense(Vec<f32>),
    /// Sparse (ascending indices, values).
    Sparse(Vec<u32>, Vec<f32>),
}

impl OwnedRow {
    /// The row as a [`Row`] view (the same layout it was copied from, so dot products give
    /// the same numbers).
    pub fn as_row(&self) -> Row<'_> {
        match self {
            OwnedRow::Dense(v) => Row::Dense(v),
            OwnedRow::Sparse(i, v) => Row::Sparse(i, v),
        }
    }

    /// Little-endian bytes: a tag (0 dense, 1 sparse), the length, then indices and values.
    pub fn to_bytes(&self, out: &mut Vec<u8>) {
        match self {
            OwnedRow::Dense(v) => {
                out.push(0);
                out.extend_from_slice(&(v.len() as u64).to_le_bytes());
                v.iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
            }
            OwnedRow::Sparse(ix, v) => {
                out.push(1);
                out.extend_from_slice(&(v.len() as u64).to_le_bytes());
                ix.iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                v.iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
            }
        }
    }

    /// Reads what [`to_bytes`](Self::to_bytes) wrote at the start of `b`; returns the row and
    /// the bytes it took (None when `b` is too short or the tag is unknown).
    pub fn from_bytes(b: &[u8]) -> Option<(OwnedRow, usize)> {
        let tag = *b.first()?;
        let mut w = [0u8; 8];
        w.copy_from_slice(b.get(1..9)?);
        let n = u64::from_le_bytes(w) as usize;
        let word = |k: usize| -> Option<[u8; 4]> {
            let mut v = [0u8; 4];
            v.copy_from_slice(b.get(k..k + 4)?);
            Some(v)
        };
        match tag {
            0 => {
                let v = (0..n)
                    .map(|k| word(9 + 4 * k).map(f32::from_le_bytes))
                    .collect::<Option<Vec<f32>>>()?;
                Some((OwnedRow::Dense(v), 9 + 4 * n))
            }
            1 => {
                let ix = (0..n)
                    .map(|k| word(9 + 4 * k).map(u32::from_le_bytes))
                    .collect::<Option<Vec<u32>>>()?;
                let v = (0..n)
                    .map(|k| word(9 + 4 * (n + k)).map(f32::from_le_bytes))
                    .collect::<Option<Vec<f32>>>()?;
                Some((OwnedRow::Sparse(ix, v), 9 + 8 * n))
            }
            _ => None,
        }
    }
}

impl From<Row<'_>> for OwnedRow {
    fn from(r: Row<'_>) -> Self {
        match r {
            Row::Dense(v) => OwnedRow::Dense(v.to_vec()),
            Row::Sparse(i, v) => OwnedRow::Sparse(i.to_vec(), v.to_vec()),
        }
    }
}

impl Row<'_> {
    /// Squared Euclidean norm, accumulated in f64.
    pub fn sq_norm(&self) -> f64 {
        let v = match self {
            Row::Dense(v) => v,
            Row::Sparse(_, v) => v,
        };
        v.iter().map(|&x| (x as f64) * (x as f64)).sum()
    }

    /// Inner product with another row, accumulated in f64.
    pub fn dot(&self, other: &Row<'_>) -> f64 {
        match (self, other) {
            (Row::Dense(a), Row::Dense(b)) => a
                .iter()
                .zip(b.iter())
                .map(|(&x, &y)| x as f64 * y as f64)
                .sum(),
            (Row::Dense(a), Row::Sparse(ix, v)) | (Row::Sparse(ix, v), Row::Dense(a)) => ix
                .iter()
                .zip(v.iter())
                .filter(|(j, _)| (**j as usize) < a.len())
                .map(|(&j, &x)| a[j as usize] as f64 * x as f64)
                .sum(),
            (Row::Sparse(ia, va), Row::Sparse(ib, vb)) => {
                let (mut p, mut q, mut s) = (0usize, 0usize, 0f64);
                while p < ia.len() && q < ib.len() {
                    match ia[p].cmp(&ib[q]) {
                        std::cmp::Ordering::Less => p += 1,
                        std::cmp::Ordering::Greater => q += 1,
                        std::cmp::Ordering::Equal => {
                            s += va[p] as f64 * vb[q] as f64;
                            p += 1;
                            q += 1;
                        }
                    }
                }
                s
            }
        }
    }

    /// Writes the row, widened to f64, into a dense buffer (indices beyond `out` are ignored;
    /// zeros elsewhere are the caller's).
    pub fn scatter_f64(&self, out: &mut [f64]) {
        match self {
            Row::Dense(v) => {
                for (o, &x) in out.iter_mut().zip(v.iter()) {
                    *o = x as f64;
                }
            }
            Row::Sparse(ix, v) => {
                for (&j, &x) in ix.iter().zip(v.iter()) {
                    if let Some(o) = out.get_mut(j as usize) {
                        *o = x as f64;
                    }
                }
            }
        }
    }

    /// Writes the row into a dense buffer of length ≥ d (zeros elsewhere are the caller's).
    pub fn scatter_into(&self, out: &mut [f32]) {
        match self {
            Row::Dense(v) => {
                let n = v.len().min(out.len());
                out[..n].copy_from_slice(&v[..n]);
            }
            Row::Sparse(ix, v) => {
                for (&j, &x) in ix.iter().zip(v.iter()) {
                    if let Some(slot) = out.get_mut(j as usize) {
                        *slot = x;
                    }
                }
            }
        }
    }
}

/// A labelled dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Feature matrix.
    pub features: Features,
    /// One label per row, original values.
    pub labels: Vec<f64>,
}

impl Dataset {
    /// This dataset with `extra` rows appended (the same layout: extra rows were copied from
    /// datasets read the same way).
    pub(crate) fn with_rows(&self, extra: &[&OwnedRow], labels: &[f64]) -> Dataset {
        let mut out = self.clone();
        out.append_rows(extra.iter().copied(), labels);
        out
    }

    /// Appends `extra` rows (labels `labels`), in this dataset's layout.
    pub(crate) fn append_rows<'r>(
        &mut self,
        extra: impl Iterator<Item = &'r OwnedRow>,
        labels: &[f64],
    ) {
        match &mut self.features {
            Features::Dense { n_features, values } => {
                for r in extra {
                    let start = values.len();
                    values.resize(start + *n_features, 0.0);
                    r.as_row().scatter_into(&mut values[start..]);
                }
            }
            Features::Sparse {
                indptr,
                indices,
                values,
                ..
            } => {
                for r in extra {
                    match r {
                        OwnedRow::Sparse(ix, v) => {
                            indices.extend_from_slice(ix);
                            values.extend_from_slice(v);
                        }
                        OwnedRow::Dense(v) => {
                            for (k, &x) in v.iter().enumerate() {
                                if x != 0.0 {
                                    indices.push(k as u32);
                                    values.push(x);
                                }
                            }
                        }
                    }
                    indptr.push(indices.len());
                }
            }
        }
        self.labels.extend_from_slice(labels);
    }

    /// Number of rows m.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of feature columns d.
    pub fn n_features(&self) -> usize {
        match &self.features {
            Features::Dense { n_features, .. } | Features::Sparse { n_features, .. } => *n_features,
        }
    }

    /// Number of stored values (m·d for dense).
    pub fn nnz(&self) -> usize {
        match &self.features {
            Features::Dense { values, .. } | Features::Sparse { values, .. } => values.len(),
        }
    }

    /// True for the dense layout.
    pub fn is_dense(&self) -> bool {
        matches!(self.features, Features::Dense { .. })
    }

    /// Row i.
    pub fn row(&self, i: usize) -> Row<'_> {
        match &self.features {
            Features::Dense { n_features, values } => {
                Row::Dense(&values[i * n_features..(i + 1) * n_features])
            }
            Features::Sparse {
                indptr,
                indices,
                values,
                ..
            } => {
                let (a, b) = (indptr[i], indptr[i + 1]);
                Row::Sparse(&indices[a..b], &values[a..b])
            }
        }
    }

    /// Builds a dataset from CSR parts, choosing dense storage when the data are dense enough
    /// ([`dense_enough`]).
    pub fn from_csr(
        n_features: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f32>,
        labels: Vec<f64>,
    ) -> Self {
        let dense = dense_enough(values.len(), labels.len(), n_features);
        Self::from_csr_as(n_features, indptr, indices, values, labels, dense)
    }

    /// [`from_csr`](Self::from_csr) with the layout chosen by the caller (a slice of a file
    /// takes the layout the whole file would get).
    pub fn from_csr_as(
        n_features: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f32>,
        labels: Vec<f64>,
        dense: bool,
    ) -> Self {
        let m = labels.len();
        let features = if dense {
            let mut dense = vec![0f32; m * n_features];
            for i in 0..m {
                let row = &mut dense[i * n_features..(i + 1) * n_features];
                for k in indptr[i]..indptr[i + 1] {
                    row[indices[k] as usize] = values[k];
                }
            }
            Features::Dense {
                n_features,
                values: dense,
            }
        } else {
            Features::Sparse {
                n_features,
                indptr,
                indices,
                values,
            }
        };
        Dataset { features, labels }
    }

    /// The rows `rows` (in that order) as a new dataset with the same layout.
    pub fn subset(&self, rows: &[usize]) -> Dataset {
        let labels = rows.iter().map(|&i| self.labels[i]).collect();
        let features = match &self.features {
            Features::Dense { n_features, values } => {
                let d = *n_features;
                let mut out = Vec::with_capacity(rows.len() * d);
                for &i in rows {
                    out.extend_from_slice(&values[i * d..(i + 1) * d]);
                }
                Features::Dense {
                    n_features: d,
                    values: out,
                }
            }
            Features::Sparse {
                n_features,
                indptr,
                indices,
                values,
            } => {
                let mut ip = Vec::with_capacity(rows.len() + 1);
                let nnz: usize = rows.iter().map(|&i| indptr[i + 1] - indptr[i]).sum();
                let (mut ix, mut vs) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
                ip.push(0);
                for &i in rows {
                    ix.extend_from_slice(&indices[indptr[i]..indptr[i + 1]]);
                    vs.extend_from_slice(&values[indptr[i]..indptr[i + 1]]);
                    ip.push(ix.len());
                }
                Features::Sparse {
                    n_features: *n_features,
                    indptr: ip,
                    indices: ix,
                    values: vs,
                }
            }
        };
        Dataset { features, labels }
    }

    /// Distinct labels in order of first appearance (LIBSVM's class order).
    pub fn classes(&self) -> Vec<f64> {
        let mut out: Vec<f64> = Vec::new();
        for &y in &self.labels {
            if !out.contains(&y) {
                out.push(y);
            }
        }
        out
    }
}

/// Input file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// LIBSVM sparse text: `label idx:val ...`.
    #[default]
    Libsvm,
    /// Dense comma-separated values.
    Csv,
}

/// How to read a data file.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// File format.
    pub format: Format,
    /// CSV only: 0-based column holding the label (negative counts from the end: -1 = last).
    pub label_col: i64,
}

/// Reads a dataset from `path` (plain, gzip, bzip2 or xz, detected by magic bytes).
pub fn read_dataset(path: &Path, opts: &ReadOptions) -> Result<Dataset> {
    read_dataset_noted(path, opts).map(|(ds, _)| ds)
}

/// [`read_dataset`], with what the reader skipped and the user should hear about (svmlight
/// query ids), as sentences naming the file.
pub fn read_dataset_noted(path: &Path, opts: &ReadOptions) -> Result<(Dataset, Vec<String>)> {
    match opts.format {
        Format::Libsvm => {
            let (ds, note) = libsvm::read_libsvm_noted(path)?;
            Ok((ds, note.into_iter().collect()))
        }
        Format::Csv => Ok((read_csv(path, opts.label_col)?, Vec::new())),
    }
}
