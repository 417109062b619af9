//! The panel's row sums over its own columns with each kernel value computed once.
//!
//! The certification needs g exactly on every support vector, that is the row sums of the
//! panel of α's support over the rows of that same support: Σ_j c_j (k(x_i, x_j) + 1) for
//! i, j ∈ A. The kernel block is symmetric, and its entries are the same numbers whichever
//! side computes them — the dot accumulates the products of the features both rows share, in
//! ascending feature order, the others adding exact zeros, and the norms are added
//! commutatively — so one exponential serves entry (i, j) and entry (j, i). This computes the
//! upper triangle of blocks ([`BLOCK`] rows by [`BLOCK`] columns) once and adds each value to
//! both of its rows, which halves the kernel evaluations of a certification on sets where the
//! support is most of the data (covtype: 43,175 support vectors of 50,000 points).
//!
//! **Every sum is [`Panel::row_sums`]'s to the bit.** A row's sum there is eight lanes, lane ℓ
//! adding the terms c_j (k + offset) of the columns at positions ≡ ℓ (mod 8) in ascending
//! order, reduced at the end by one fixed tree. Here the blocks are multiples of eight
//! positions, so a column keeps its lane, and the pairs of blocks (a, b), a ≤ b, run by
//! anti-diagonals a + b = 0, 1, 2, …: a block's rows receive the column blocks below the
//! diagonal (as the columns of pairs (a′, b), a′ ascending) before the diagonal pair and the
//! blocks after it, in ascending order, so every lane adds its terms in the order of the row
//! alone. The pairs of one anti-diagonal share no block, so they run in parallel. A block's
//! lanes are held by lane while its rows are the columns of a pair (each row's term then adds
//! to one lane of eight consecutive rows: one vector), and by row from its diagonal pair on.
//! Four consecutive rows that hold every feature of the panel (a dense set's rows) go
//! together, each load of the panel feeding their four chains of multiply-adds, and each of
//! them adds its terms in the order it takes alone (their lanes of a column block are four
//! different ones): the same sums.

use super::*;
use std::sync::Mutex;

/// Rows (and columns) per block: a multiple of eight positions.
const BLOCK: usize = 128;

impl Panel {
    /// out\[k\] = Σ_j coef_j (k(x_i, z_j) + offset) for i = cols\[k\], where `cols` are the
    /// columns this panel was built from (in the same order) and `data`, `norms` the dataset
    /// and squared norms it was built from: [`Panel::row_sums`] over the panel's own points,
    /// the same numbers to the bit, with each kernel value of the RBF kernel computed once
    /// where AVX-512 is available (see the module documentation).
    pub fn own_row_sums(&self, data: &Dataset, norms: &[f64], cols: &[usize], out: &mut [f64]) {
        assert_eq!(cols.len(), out.len());
        #[cfg(target_arch = "x86_64")]
        if let (Isa::Avx512, Kernel::Rbf { gamma }) = (Isa::detect(), self.kernel)
            && cols.len() > BLOCK
            && self.cols == cols
        {
            symmetric_avx512(self, data, norms, cols, out, gamma);
            return;
        }
        self.row_sums(data, norms, Some(cols), out);
    }
}

/// The eight lanes of one block's rows.
struct Lanes {
    /// By lane (`v[ℓ * BLOCK + r]`) while `by_row` is false, then by row (`v[r * 8 + ℓ]`).
    v: Vec<f64>,
    by_row: bool,
}

impl Lanes {
    /// From by lane to by row.
    fn hold_by_row(&mut self) {
        if self.by_row {
            return;
        }
        let t: [f64; 8 * BLOCK] = std::array::from_fn(|k| self.v[(k % 8) * BLOCK + k / 8]);
        self.v.copy_from_slice(&t);
        self.by_row = true;
    }
}

/// [`Panel::own_row_sums`] for the RBF kernel with AVX-512: the pairs of blocks by
/// anti-diagonals (see the module documentation).
#[cfg(target_arch = "x86_64")]
fn symmetric_avx512(
    p: &Panel,
    data: &Dataset,
    norms: &[f64],
    cols: &[usize],
    out: &mut [f64],
    gamma: f64,
) {
    let n = cols.len();
    let mut s = Scratch::new(n);
    s.load(p, data, norms, n, |k| cols[k]);
    if let Some(&last) = s.feat.iter().max() {
        assert!(last + p.width <= p.zt.len(), "panel offsets out of range");
    }
    assert!(n <= p.width, "the panel's own columns");
    let nb = n.div_ceil(BLOCK);
    let lanes: Vec<Mutex<Lanes>> = (0..nb)
        .map(|_| {
            Mutex::new(Lanes {
                v: vec![0.0; 8 * BLOCK],
                by_row: false,
            })
        })
        .collect();
    by_anti_diagonals(&lanes, |(a, b), la, lb| {
        if lb.is_none() {
            la.hold_by_row();
        }
        // SAFETY: the CPU has AVX-512 (the caller's dispatch); the offsets of `s` were checked
        // against the panel above, and blocks a, b lie within the n ≤ width columns.
        unsafe { pair_avx512(p, &s, n, (a, b), la, lb, gamma) }
    });
    let budget = crate::budget::current();
    if budget.spent() {
        return;
    }
    for (a, chunk) in out.chunks_mut(BLOCK).enumerate() {
        let la = lanes[a].lock().expect("no task panics holding it");
        // SAFETY: the CPU has AVX-512.
        unsafe { reduce_rows_avx512(&la.v, chunk) };
    }
}

/// Calls `pair((a, b), block a, block b)` for every pair of blocks a ≤ b (block b given when
/// a < b), the pairs of each anti-diagonal a + b in parallel (they share no block) and the
/// anti-diagonals in order: every block meets the blocks after it, and the blocks before it as
/// their column side, in ascending order. Pairs left once the budget is spent are skipped.
pub(in crate::backend) fn by_anti_diagonals<T: Send>(
    blocks: &[Mutex<T>],
    pair: impl Fn((usize, usize), &mut T, Option<&mut T>) + Sync,
) {
    let nb = blocks.len();
    let budget = crate::budget::current();
    for wave in 0..(2 * nb).saturating_sub(1) {
        let first = wave.saturating_sub(nb - 1);
        (first..=wave / 2).into_par_iter().for_each(|a| {
            if budget.spent() {
                return;
            }
            let b = wave - a;
            let mut ta = blocks[a].lock().expect("no task panics holding it");
            if a == b {
                pair((a, b), &mut ta, None);
            } else {
                let mut tb = blocks[b].lock().expect("no task panics holding it");
                pair((a, b), &mut ta, Some(&mut tb));
            }
        });
    }
}

/// out\[r\] = the sum of row r's eight lanes, by the tree of `_mm512_reduce_add_pd`.
///
/// # Safety
/// The CPU has AVX-512F; `v` holds 8 entries per row of `out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn reduce_rows_avx512(v: &[f64], out: &mut [f64]) {
    use std::arch::x86_64::*;
    assert!(v.len() >= 8 * out.len());
    for (r, o) in out.iter_mut().enumerate() {
        // SAFETY: r·8 + 8 ≤ v's length, checked above.
        *o = unsafe { _mm512_reduce_add_pd(_mm512_loadu_pd(v.as_ptr().add(8 * r))) };
    }
}

/// The pair of blocks (a, b), a ≤ b: every kernel value of block a's rows against block b's
/// columns, its term added to the row's lanes (`la`, by row) and, when a < b, to the lanes of
/// the column's row (`lb`, by lane).
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ and FMA; every offset of `s` plus the panel's width lies
/// within the panel; `n` ≤ the panel's width is the number of its columns (the rows of `s`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn pair_avx512(
    p: &Panel,
    s: &Scratch,
    n: usize,
    (a, b): (usize, usize),
    la: &mut Lanes,
    lb: Option<&mut Lanes>,
    gamma: f64,
) {
    use std::arch::x86_64::*;
    debug_assert!(la.by_row && lb.as_ref().is_none_or(|l| !l.by_row));
    let (r0, c0) = (a * BLOCK, b * BLOCK);
    let rows = BLOCK.min(n - r0);
    // Vectors of positions of the column block (padding has weight 0 and adds +0).
    let vectors = BLOCK.min(n - c0).div_ceil(8);
    // SAFETY: the caller's conditions bound every panel read (c0 + 8·vectors ≤ the panel's
    // width) and `la`, `lb` hold BLOCK rows of eight lanes.
    unsafe {
        let col = Cols {
            zt: p.zt.as_ptr().add(c0),
            nj: p.nj.as_ptr().add(c0),
            cf: p.coef.as_ptr().add(c0),
            ng: _mm512_set1_pd(-gamma),
            offset: _mm512_set1_pd(p.offset),
        };
        let lanes_at = lb.map(|l| l.v.as_mut_ptr());
        let mut r = 0;
        while r < rows {
            let k = r0 + r;
            if r + 4 <= rows && s.full[k..k + 4].iter().all(|&f| f) {
                // Four rows with every feature of the panel (the same offsets): each load of
                // the panel serves four rows' multiply-adds, and every row's dots, terms and
                // lane updates are formed and added in the order one row alone takes (the
                // four rows' lanes of the column block are four different ones).
                let mut four = Four {
                    feat: &s.feat[s.ptr[k]..s.ptr[k + 1]],
                    val: [0, 1, 2, 3].map(|i| s.val.as_ptr().add(s.ptr[k + i])),
                    ni: [0, 1, 2, 3].map(|i| _mm512_set1_pd(s.ni[k + i])),
                    cr: [0, 1, 2, 3].map(|i| _mm512_set1_pd(*p.coef.as_ptr().add(k + i))),
                    lanes: [0, 1, 2, 3].map(|i| lanes_at.map(|l| l.add(((r + i) % 8) * BLOCK))),
                    sums: [0, 1, 2, 3].map(|i| _mm512_loadu_pd(la.v.as_ptr().add(8 * (r + i)))),
                };
                let mut q = 0;
                while q + 4 <= vectors {
                    four_avx512::<4>(&col, &mut four, q);
                    q += 4;
                }
                while q < vectors {
                    four_avx512::<1>(&col, &mut four, q);
                    q += 1;
                }
                for (i, &sum) in four.sums.iter().enumerate() {
                    _mm512_storeu_pd(la.v.as_mut_ptr().add(8 * (r + i)), sum);
                }
                r += 4;
                continue;
            }
            let row = RowAt {
                feat: &s.feat[s.ptr[k]..s.ptr[k + 1]],
                val: &s.val[s.ptr[k]..s.ptr[k + 1]],
                ni: _mm512_set1_pd(s.ni[k]),
                cr: _mm512_set1_pd(*p.coef.as_ptr().add(k)),
                lanes: lanes_at.map(|l| l.add((r % 8) * BLOCK)),
            };
            let sum_at = la.v.as_mut_ptr().add(8 * r);
            let mut sum = _mm512_loadu_pd(sum_at);
            let mut q = 0;
            while q + 8 <= vectors {
                vectors_avx512::<8>(&col, &row, q, &mut sum);
                q += 8;
            }
            if q + 4 <= vectors {
                vectors_avx512::<4>(&col, &row, q, &mut sum);
                q += 4;
            }
            if q + 2 <= vectors {
                vectors_avx512::<2>(&col, &row, q, &mut sum);
                q += 2;
            }
            if q < vectors {
                vectors_avx512::<1>(&col, &row, q, &mut sum);
            }
            _mm512_storeu_pd(sum_at, sum);
            r += 1;
        }
    }
}

/// Four rows of [`pair_avx512`] that hold every feature of the panel: their shared offsets,
/// each one's values, norm, weight, lane of the column block's rows (when they take its
/// terms) and running sum.
#[cfg(target_arch = "x86_64")]
struct Four<'s> {
    feat: &'s [usize],
    val: [*const f64; 4],
    ni: [std::arch::x86_64::__m512d; 4],
    cr: [std::arch::x86_64::__m512d; 4],
    lanes: [Option<*mut f64>; 4],
    sums: [std::arch::x86_64::__m512d; 4],
}

/// [`vectors_avx512`] for four rows at once at the `G` vectors of columns from vector `q`:
/// each load of the panel feeds the four rows' chains of multiply-adds; then row by row the
/// same exponent, exponential, term and lane update as one row alone.
///
/// # Safety
/// As [`pair_avx512`]; 8·(q + G) lies within the column block's positions, and each row's
/// values hold the offsets' count.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)]
unsafe fn four_avx512<const G: usize>(c: &Cols, f: &mut Four<'_>, q: usize) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's conditions.
    unsafe {
        let zero = _mm512_setzero_pd();
        let mut acc = [[zero; G]; 4];
        for (n, &off) in f.feat.iter().enumerate() {
            let z = c.zt.add(off + 8 * q);
            let mut zv = [zero; G];
            for g in 0..G {
                zv[g] = _mm512_loadu_pd(z.add(8 * g));
            }
            for i in 0..4 {
                let x = _mm512_set1_pd(*f.val[i].add(n));
                for g in 0..G {
                    acc[i][g] = _mm512_fmadd_pd(x, zv[g], acc[i][g]);
                }
            }
        }
        for i in 0..4 {
            let mut x = [zero; G];
            for g in 0..G {
                let nn = _mm512_add_pd(f.ni[i], _mm512_loadu_pd(c.nj.add(8 * (q + g))));
                let d2 = _mm512_max_pd(_mm512_fmadd_pd(_mm512_set1_pd(-2.0), acc[i][g], nn), zero);
                x[g] = _mm512_mul_pd(c.ng, d2);
            }
            let e = super::super::simd::exp_nonpos_f64_x(x);
            for g in 0..G {
                let at = 8 * (q + g);
                let ek = _mm512_add_pd(e[g], c.offset);
                f.sums[i] =
                    _mm512_add_pd(f.sums[i], _mm512_mul_pd(_mm512_loadu_pd(c.cf.add(at)), ek));
                if let Some(l) = f.lanes[i] {
                    let t = l.add(at);
                    _mm512_storeu_pd(
                        t,
                        _mm512_add_pd(_mm512_loadu_pd(t), _mm512_mul_pd(f.cr[i], ek)),
                    );
                }
            }
        }
    }
}

/// A column block's side of [`pair_avx512`].
#[cfg(target_arch = "x86_64")]
struct Cols {
    zt: *const f64,
    nj: *const f64,
    cf: *const f64,
    ng: std::arch::x86_64::__m512d,
    offset: std::arch::x86_64::__m512d,
}

/// A row's side of [`pair_avx512`]: its non-zeros (panel offsets and values), norm, weight,
/// and where its lane of the column block's rows starts (when they take its terms).
#[cfg(target_arch = "x86_64")]
struct RowAt<'s> {
    feat: &'s [usize],
    val: &'s [f64],
    ni: std::arch::x86_64::__m512d,
    cr: std::arch::x86_64::__m512d,
    lanes: Option<*mut f64>,
}

/// The row's kernel values at the `V` vectors of columns from vector `q`: the dots as `V`
/// independent chains of multiply-adds, then each value's term added to `sum` and, when the
/// columns' rows take them, the row's term to their lane — [`rbf_tiles_avx512`]'s steps.
///
/// # Safety
/// As [`pair_avx512`]; 8·(q + V) lies within the column block's positions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
unsafe fn vectors_avx512<const V: usize>(
    c: &Cols,
    row: &RowAt<'_>,
    q: usize,
    sum: &mut std::arch::x86_64::__m512d,
) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's conditions.
    unsafe {
        let zero = _mm512_setzero_pd();
        let mut acc = [zero; V];
        for (&off, &x) in row.feat.iter().zip(row.val) {
            let z = c.zt.add(off + 8 * q);
            let x = _mm512_set1_pd(x);
            for (v, aq) in acc.iter_mut().enumerate() {
                *aq = _mm512_fmadd_pd(x, _mm512_loadu_pd(z.add(8 * v)), *aq);
            }
        }
        let x: [__m512d; V] = std::array::from_fn(|v| {
            let nn = _mm512_add_pd(row.ni, _mm512_loadu_pd(c.nj.add(8 * (q + v))));
            let d2 = _mm512_max_pd(_mm512_fmadd_pd(_mm512_set1_pd(-2.0), acc[v], nn), zero);
            _mm512_mul_pd(c.ng, d2)
        });
        let e = super::super::simd::exp_nonpos_f64_x(x);
        for (v, &e) in e.iter().enumerate() {
            let at = 8 * (q + v);
            let ek = _mm512_add_pd(e, c.offset);
            *sum = _mm512_add_pd(*sum, _mm512_mul_pd(_mm512_loadu_pd(c.cf.add(at)), ek));
            if let Some(l) = row.lanes {
                let t = l.add(at);
                _mm512_storeu_pd(
                    t,
                    _mm512_add_pd(_mm512_loadu_pd(t), _mm512_mul_pd(row.cr, ek)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, norms};
    use super::*;

    /// The symmetric sums equal the row-at-a-time sums bit for bit: dense and sparse rows,
    /// counts that are and are not multiples of a block, weights of both signs.
    #[test]
    fn own_row_sums_are_the_row_sums_bit_for_bit() {
        let fast = cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("avx512dq");
        if !fast {
            eprintln!("no AVX-512 here: own_row_sums takes row_sums itself");
        }
        for (ds, tag) in [
            (data(900, 9, 0.8, 11, true), "dense"),
            (data(700, 54, 0.2, 12, false), "sparse"),
            (data(600, 40, 1.0, 13, true), "full"),
        ] {
            let nm = norms(&ds);
            for (ncols, gamma) in [(256usize, 0.7), (300, 0.05), (555, 2.0)] {
                let cols: Vec<usize> = (0..ds.len()).filter(|i| i % 7 != 3).take(ncols).collect();
                let coef: Vec<f64> = (0..cols.len())
                    .map(|k| (0.3 + (k % 11) as f64) * if k % 3 == 0 { -1.0 } else { 1.0 })
                    .collect();
                let cn: Vec<f64> = cols.iter().map(|&j| nm[j]).collect();
                let kernel = Kernel::Rbf { gamma };
                let p = Panel::new(kernel, &ds, &cols, &coef, &cn).unwrap();
                let mut want = vec![0.0; cols.len()];
                p.row_sums(&ds, &nm, Some(&cols), &mut want);
                let mut got = vec![0.0; cols.len()];
                p.own_row_sums(&ds, &nm, &cols, &mut got);
                for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g.to_bits(), w.to_bits(), "{tag}, {ncols} columns, row {k}");
                }
            }
        }
    }
}
