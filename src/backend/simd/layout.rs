//! How the CPU backend stores the rows: dense AoSoA blocks, bit rows, a hybrid of the two,
//! or CSR — chosen by what a column pass over them costs.

use super::*;

/// Data as the CPU backend stores it.
pub enum Layout<'a> {
    /// AoSoA blocks; rows padded with zeros to a multiple of LANES.
    Dense {
        /// d
        d: usize,
        /// blocks × d × LANES values
        xb: Aligned<f32>,
    },
    /// AoSoA blocks of the features that take other values than 0 and 1, plus the 0/1
    /// features (one-hot categories: ijcnn1's first 10 of 22) as bit sets per row: the dot
    /// of a row with a query is the continuous part's plus a popcount.
    Hybrid {
        /// Original index of each continuous feature, in block order.
        cont: Vec<u32>,
        /// Original index of the binary feature at each bit.
        bin: Vec<u32>,
        /// blocks × cont.len() × LANES values.
        xb: Aligned<f32>,
        /// u64 words of bits per row.
        words: usize,
        /// blocks × words × LANES: word w of row l of block b at (b·words + w)·LANES + l.
        bits: Aligned<u64>,
    },
    /// Rows whose every stored value is 1 (one-hot and other binary features: a9a, w8a) as
    /// bit sets, `words` u64 per row: ⟨x_i, x_j⟩ is a popcount of x_i ∧ x_j.
    Binary {
        /// u64 words per row (⌈d / 64⌉).
        words: usize,
        /// blocks × words × LANES: word w of row l of block b at (b·words + w)·LANES + l
        /// (rows padded with empty sets to a multiple of LANES), so a block's word w of its
        /// LANES rows is one vector load.
        bits: Aligned<u64>,
    },
    /// CSR, borrowed from the dataset (or owned, for a selection of its rows).
    Sparse {
        /// m+1 offsets
        indptr: Cow<'a, [usize]>,
        /// 0-based indices
        indices: Cow<'a, [u32]>,
        /// values
        values: Cow<'a, [f32]>,
    },
}

/// Binary rows as bit sets when every value is 1 and the bit set is smaller than the CSR rows.
fn binary_pays(d: usize, nnz: usize, m: usize, values: &[f32]) -> bool {
    let words = d.div_ceil(64);
    m > 0
        && words <= MAX_BINARY_WORDS
        && 8 * words * m < 8 * nnz + 8 * m
        && values.iter().all(|&v| v == 1.0)
}

/// The rows `rows` of a binary CSR matrix as bit sets of `words` words each.
fn binary_bits<'r>(words: usize, rows: impl Iterator<Item = &'r [u32]>) -> Aligned<u64> {
    let mut bits = Vec::new();
    for (i, ix) in rows.enumerate() {
        let (b, l) = (i / LANES, i % LANES);
        if l == 0 {
            bits.resize((b + 1) * words * LANES, 0u64);
        }
        for &f in ix {
            bits[(b * words + f as usize / 64) * LANES + l] |= 1u64 << (f % 64);
        }
    }
    Aligned::from(&bits[..])
}

/// Whether sparse rows are copied dense (see [`Layout::new_as`]): for passes of one column at
/// a time while the copy is at most 2.5× the CSR bytes; for a solver that computes its columns
/// in batched blocks (`batched`: the working-set solver) while at most
/// [`BATCHED_DENSE_FACTOR`]× and [`BATCHED_DENSE_MAX_BYTES`].
fn dense_pays(d: usize, m: usize, nnz: usize, batched: bool) -> bool {
    let dense_bytes = 4 * d * m;
    let csr_bytes = 8 * nnz + 8 * m;
    m > 0
        && (dense_bytes * 2 <= csr_bytes * 5
            || batched
                && dense_bytes <= csr_bytes * BATCHED_DENSE_FACTOR
                && dense_bytes <= BATCHED_DENSE_MAX_BYTES)
}

/// How much larger than the CSR rows a dense copy may be for batched blocks. A batch of
/// columns shares every dense row it reads among its queries (the register tiles); a CSR
/// batch reads a row's non-zeros once for its queries too, but each non-zero's products cost
/// a vector operation per eight queries where a dense feature costs one per sixteen rows.
/// Measured with `fwsvm bench kernels --backend cpu --layouts csr` and `--layouts dense` (a
/// 2-core Xeon with AVX-512, f32, q = 64), one column of a batch, CSR against dense: d = 784
/// (20,000 rows) at 19 % non-zeros 333 µs against 159, at 10 % 178 against 162, at 5 % 97
/// against 151; d = 300 (100,000 rows) at 10 % 350 against 319, at 5 % 228 against 304; d =
/// 123 at 10 % 198 against 153, at 5 % 156 against 155. Whole ws trainings of 784-feature digits
/// (usps upsampled, 7,291 rows, ten classes) from CSR against the dense copy: 8.5 % non-zeros
/// (the copy 5.8× the CSR bytes) 0.43 s against 0.54, 14 % (3.5×) 0.52 against 0.53, 19 %
/// (2.6×) 0.53 against 0.47: the block's other work (W's entries, single columns) favours CSR
/// beyond the batched products.
const BATCHED_DENSE_FACTOR: usize = 4;

/// The largest dense copy made for batched blocks beyond the 2.5× of single columns.
const BATCHED_DENSE_MAX_BYTES: usize = 4 << 30;

impl<'a> Layout<'a> {
    /// The dense AoSoA layout of `d` features, or the hybrid one when enough features take
    /// only the values 0 and 1 (at least 4 and a quarter of them, and some other feature).
    /// `zero_one`, where given, says which features are 0/1-valued (the whole set's, for a
    /// part of it); else they are read from `xb`.
    fn dense(d: usize, xb: Aligned<f32>, zero_one: Option<&[bool]>) -> Layout<'a> {
        let nb = xb.len() / (d * LANES).max(1);
        let binary: Vec<bool> = match zero_one {
            Some(z) => z.to_vec(),
            None => (0..d)
                .map(|f| {
                    (0..nb).all(|b| {
                        xb[(b * d + f) * LANES..(b * d + f + 1) * LANES]
                            .iter()
                            .all(|&v| v == 0.0 || v == 1.0)
                    })
                })
                .collect(),
        };
        let bin: Vec<u32> = (0..d as u32).filter(|&f| binary[f as usize]).collect();
        let cont: Vec<u32> = (0..d as u32).filter(|&f| !binary[f as usize]).collect();
        let words = bin.len().div_ceil(64);
        if bin.len() < 4
            || 4 * bin.len() < d
            || cont.is_empty()
            || cont.len() > MAX_HYBRID_CONT
            || words > MAX_HYBRID_WORDS
        {
            return Layout::Dense { d, xb };
        }
        let dc = cont.len();
        let mut xc = Aligned::zeroed(nb * dc * LANES);
        let mut bits = Aligned::zeroed(nb * words * LANES);
        for b in 0..nb {
            for (k, &f) in cont.iter().enumerate() {
                let src = (b * d + f as usize) * LANES;
                xc[(b * dc + k) * LANES..(b * dc + k + 1) * LANES]
                    .copy_from_slice(&xb[src..src + LANES]);
            }
            for (k, &f) in bin.iter().enumerate() {
                for l in 0..LANES {
                    if xb[(b * d + f as usize) * LANES + l] == 1.0 {
                        bits[(b * words + k / 64) * LANES + l] |= 1u64 << (k % 64);
                    }
                }
            }
        }
        Layout::Hybrid {
            cont,
            bin,
            xb: xc,
            words,
            bits,
        }
    }

    /// The backend's layout of a dataset: AoSoA copy when dense, borrowed CSR otherwise.
    #[cfg(test)]
    pub fn new(ds: &'a crate::data::Dataset) -> Self {
        Self::new_as(ds, None, false)
    }

    /// [`Layout::new`], the choice made from `whole` where given (the statistics of a larger
    /// set these rows are part of: [`crate::data::LayoutStats`]) instead of from the rows
    /// themselves; `batched` when the solver computes its columns in batched blocks (sparse
    /// rows are then copied dense down to a lower share of non-zeros: [`BATCHED_DENSE_FACTOR`]).
    pub fn new_as(
        ds: &'a crate::data::Dataset,
        whole: Option<&crate::data::LayoutStats>,
        batched: bool,
    ) -> Self {
        let zero_one = whole.map(|w| &w.zero_one[..]);
        if ds.n_features() == 0 {
            return Layout::featureless(ds.len());
        }
        match &ds.features {
            crate::data::Features::Dense { n_features, values } => {
                let d = *n_features;
                let m = ds.len();
                let nb = m.div_ceil(LANES);
                let mut xb = Aligned::zeroed(nb * d * LANES);
                for i in 0..m {
                    let (b, l) = (i / LANES, i % LANES);
                    for f in 0..d {
                        xb[(b * d + f) * LANES + l] = values[i * d + f];
                    }
                }
                Layout::dense(d, xb, zero_one)
            }
            crate::data::Features::Sparse {
                n_features,
                indptr,
                indices,
                values,
            } => {
                let (d, m) = (*n_features, ds.len());
                // The dense column loop streams 4·d bytes per row at close to memory speed; the
                // CSR loop reads 8 bytes per non-zero plus 8 per row but runs at well under half
                // that speed (gathers; `cargo bench --bench kernels` measures both), so a dense
                // copy wins while it is at most ~2.5× the CSR bytes (KDD99: 25 % non-zero,
                // d = 38 → 1.8×; a9a: 4.1×).
                let (rows, nnz) = whole.map_or((m, values.len()), |w| (w.rows, w.nnz));
                let ones = whole.map_or_else(|| values.iter().all(|&v| v == 1.0), |w| w.all_ones);
                if ones && binary_pays(d, nnz, rows, &[]) {
                    let words = d.div_ceil(64);
                    let rows = (0..m).map(|i| &indices[indptr[i]..indptr[i + 1]]);
                    Layout::Binary {
                        words,
                        bits: binary_bits(words, rows),
                    }
                } else if dense_pays(d, rows, nnz, batched) {
                    let nb = m.div_ceil(LANES);
                    let mut xb = Aligned::zeroed(nb * d * LANES);
                    for i in 0..m {
                        let (b, l) = (i / LANES, i % LANES);
                        for k in indptr[i]..indptr[i + 1] {
                            xb[(b * d + indices[k] as usize) * LANES + l] = values[k];
                        }
                    }
                    Layout::dense(d, xb, zero_one)
                } else {
                    Layout::Sparse {
                        indptr: Cow::Borrowed(indptr),
                        indices: Cow::Borrowed(indices),
                        values: Cow::Borrowed(values),
                    }
                }
            }
        }
    }

    /// `m` rows without features (a file of labels alone): empty CSR rows, which every pass
    /// reads without a zero-width block.
    fn featureless(m: usize) -> Layout<'static> {
        Layout::Sparse {
            indptr: Cow::Owned(vec![0; m + 1]),
            indices: Cow::Owned(Vec::new()),
            values: Cow::Owned(Vec::new()),
        }
    }

    /// Rows `rows` of this layout in that order into `out`, as an owned layout of the same
    /// kind and the same features (the hybrid's continuous and binary ones included), so a
    /// column's entry at a gathered row is computed with the arithmetic it has at the row's
    /// own place. `out`'s buffers are reused when they have the size the rows need (a working
    /// set of the same size as the last one), so a steady caller allocates nothing.
    pub fn gather_into(&self, rows: &[usize], out: &mut Option<Layout<'static>>) {
        // Lane l of block b of an AoSoA array of `per` items a row, into `dst` (reused when
        // it has the length the rows need).
        fn lanes<T: crate::backend::aligned::Plain + Default>(
            src: &[T],
            per: usize,
            rows: &[usize],
            dst: Option<Aligned<T>>,
        ) -> Aligned<T> {
            let len = rows.len().div_ceil(LANES) * per * LANES;
            let mut dst = match dst {
                Some(d) if d.len() == len => d,
                _ => Aligned::zeroed(len),
            };
            dst.fill(T::default());
            for (r, &i) in rows.iter().enumerate() {
                let (b, l) = (r / LANES, r % LANES);
                let (sb, sl) = (i / LANES, i % LANES);
                for f in 0..per {
                    dst[(b * per + f) * LANES + l] = src[(sb * per + f) * LANES + sl];
                }
            }
            dst
        }
        let old = out.take();
        *out = Some(match self {
            Layout::Dense { d, xb } => Layout::Dense {
                d: *d,
                xb: lanes(
                    xb,
                    *d,
                    rows,
                    match old {
                        Some(Layout::Dense { xb, .. }) => Some(xb),
                        _ => None,
                    },
                ),
            },
            Layout::Hybrid {
                cont,
                bin,
                xb,
                words,
                bits,
            } => {
                let (ox, ob) = match old {
                    Some(Layout::Hybrid { xb, bits, .. }) => (Some(xb), Some(bits)),
                    _ => (None, None),
                };
                Layout::Hybrid {
                    cont: cont.clone(),
                    bin: bin.clone(),
                    xb: lanes(xb, cont.len(), rows, ox),
                    words: *words,
                    bits: lanes(bits, *words, rows, ob),
                }
            }
            Layout::Binary { words, bits } => Layout::Binary {
                words: *words,
                bits: lanes(
                    bits,
                    *words,
                    rows,
                    match old {
                        Some(Layout::Binary { bits, .. }) => Some(bits),
                        _ => None,
                    },
                ),
            },
            Layout::Sparse {
                indptr,
                indices,
                values,
            } => {
                let (mut ip, mut ix, mut vs) = match old {
                    Some(Layout::Sparse {
                        indptr: Cow::Owned(ip),
                        indices: Cow::Owned(ix),
                        values: Cow::Owned(vs),
                    }) => (ip, ix, vs),
                    _ => (Vec::new(), Vec::new(), Vec::new()),
                };
                ip.clear();
                ix.clear();
                vs.clear();
                ip.push(0);
                for &i in rows {
                    let (a, b) = (indptr[i], indptr[i + 1]);
                    ix.extend_from_slice(&indices[a..b]);
                    vs.extend_from_slice(&values[a..b]);
                    ip.push(ix.len());
                }
                Layout::Sparse {
                    indptr: Cow::Owned(ip),
                    indices: Cow::Owned(ix),
                    values: Cow::Owned(vs),
                }
            }
        });
    }

    /// The layout of rows `rows` of `ds` in that order (an owned copy), chosen as
    /// [`Layout::new`] chooses.
    pub fn of_rows(ds: &crate::data::Dataset, rows: &[usize], batched: bool) -> Layout<'static> {
        Self::of_rows_as(ds, rows, None, batched)
    }

    /// [`Layout::of_rows`], the choice made from `whole` where given (as [`Layout::new_as`]).
    pub fn of_rows_as(
        ds: &crate::data::Dataset,
        rows: &[usize],
        whole: Option<&crate::data::LayoutStats>,
        batched: bool,
    ) -> Layout<'static> {
        use crate::data::Row;
        let d = ds.n_features();
        let m = rows.len();
        if d == 0 {
            return Layout::featureless(m);
        }
        let nnz: usize = rows
            .iter()
            .map(|&i| match ds.row(i) {
                Row::Dense(v) => v.len(),
                Row::Sparse(ix, _) => ix.len(),
            })
            .sum();
        let (m_as, nnz_as) = whole.map_or((m, nnz), |w| (w.rows, w.nnz));
        if !ds.is_dense() {
            let binary = whole.map_or_else(
                || {
                    rows.iter().all(|&i| match ds.row(i) {
                        Row::Sparse(_, v) => v.iter().all(|&x| x == 1.0),
                        Row::Dense(_) => false,
                    })
                },
                |w| w.all_ones,
            );
            if binary && binary_pays(d, nnz_as, m_as, &[]) {
                let words = d.div_ceil(64);
                let ix = rows.iter().map(|&i| match ds.row(i) {
                    Row::Sparse(ix, _) => ix,
                    Row::Dense(_) => &[][..],
                });
                return Layout::Binary {
                    words,
                    bits: binary_bits(words, ix),
                };
            }
        }
        if ds.is_dense() || dense_pays(d, m_as, nnz_as, batched) {
            let nb = m.div_ceil(LANES);
            let mut xb = Aligned::zeroed(nb * d * LANES);
            for (r, &i) in rows.iter().enumerate() {
                let (b, l) = (r / LANES, r % LANES);
                match ds.row(i) {
                    Row::Dense(v) => {
                        for (f, &x) in v.iter().enumerate() {
                            xb[(b * d + f) * LANES + l] = x;
                        }
                    }
                    Row::Sparse(ix, v) => {
                        for (&f, &x) in ix.iter().zip(v) {
                            xb[(b * d + f as usize) * LANES + l] = x;
                        }
                    }
                }
            }
            return Layout::dense(d, xb, whole.map(|w| &w.zero_one[..]));
        }
        let mut indptr = Vec::with_capacity(m + 1);
        let (mut indices, mut values) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        indptr.push(0);
        for &i in rows {
            if let Row::Sparse(ix, v) = ds.row(i) {
                indices.extend_from_slice(ix);
                values.extend_from_slice(v);
            }
            indptr.push(indices.len());
        }
        Layout::Sparse {
            indptr: Cow::Owned(indptr),
            indices: Cow::Owned(indices),
            values: Cow::Owned(values),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Layout;
    use crate::data::Dataset;

    /// Rows of 200 features with 24 non-zeros (12 %, values other than 1): CSR for passes of one
    /// column at a time, the dense copy (4.0× the CSR bytes) for batched blocks; rows of 2
    /// non-zeros stay CSR either way.
    #[test]
    fn batched_blocks_copy_moderately_sparse_rows_dense() {
        let rows = |nnz: usize| {
            let (m, d) = (64, 200usize);
            let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
            for i in 0..m {
                for k in 0..nnz {
                    indices.push(((i * 7 + k * 16) % d) as u32);
                    values.push(0.25 + (k % 3) as f32);
                }
                let row = indptr.len() - 1;
                indices[row * nnz..].sort_unstable();
                indptr.push(indices.len());
            }
            Dataset::from_csr(d, indptr, indices, values, vec![1.0; m])
        };
        let twelve = rows(24);
        assert!(matches!(
            Layout::new_as(&twelve, None, false),
            Layout::Sparse { .. }
        ));
        assert!(matches!(
            Layout::new_as(&twelve, None, true),
            Layout::Dense { .. }
        ));
        // Three rows: features all zero there count as 0/1 ones (the hybrid copy).
        assert!(!matches!(
            Layout::of_rows(&twelve, &[3, 1, 2], true),
            Layout::Sparse { .. }
        ));
        let one = rows(2);
        assert!(matches!(
            Layout::new_as(&one, None, true),
            Layout::Sparse { .. }
        ));
    }
}
