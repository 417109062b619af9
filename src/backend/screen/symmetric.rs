//! The screen's row sums over its own columns with each kernel value computed once.
//!
//! A starting gradient (the warm start's, over every point of the first working set) is the
//! screen's sums over rows that include every column of the panel: on covtype, 372,407
//! support vectors among 464,810 rows, so the block of the panel's own points is most of the
//! pass. Its kernel values serve both of their points: blocks of [`BLOCK`] positions above the
//! diagonal are computed once, each value's term added to its row (sixteen lanes in f32 over
//! the block, then f64) and to its column's row (eight f32 partial sums per point over the
//! block, then f64). The value k̃(x_i, z_j) is formed from row i's side, k̃(x_j, z_i) would
//! differ from it by rounding alone (the panel holds its columns scaled), so the sums are the
//! screen's to within its error — the values only: no bound (the certification takes the
//! row-at-a-time sums and their bound).

use super::*;
use std::sync::Mutex;

/// Positions per block (eight vectors of sixteen lanes).
const BLOCK: usize = TILE;

/// Below this many columns the row-at-a-time sums are kept: their pass takes a few hundredths
/// of a second there (KDD99's 3,247 starting support vectors against 5,640 rows: 0.005 s),
/// and a start that differs by rounding only moves such a run's outer iterations up or down by
/// chance (KDD99: one more rebuild, +8 %; ijcnn1: 4 % fewer iterations).
const MIN_COLS: usize = 8192;

impl Screen {
    /// S̃ of the panel's own points without their bound: out\[k\] ≈ Σ_j c_j k(x_i, z_j) for
    /// i = cols\[k\], `cols` being the columns the panel was built from (in that order) and
    /// `data`, `norms` the dataset and squared norms it was built from, within the screen's
    /// error (see the module documentation). False, `out` untouched, where it does not apply
    /// (other columns, too few of them, no AVX-512).
    pub fn own_sums(&self, data: &Dataset, norms: &[f64], cols: &[usize], out: &mut [f64]) -> bool {
        cols.len() >= MIN_COLS && self.own_sums_of_any_size(data, norms, cols, out)
    }

    /// [`own_sums`](Self::own_sums) whatever the number of columns.
    fn own_sums_of_any_size(
        &self,
        data: &Dataset,
        norms: &[f64],
        cols: &[usize],
        out: &mut [f64],
    ) -> bool {
        assert_eq!(cols.len(), out.len());
        let n = cols.len();
        if n == 0 || self.cols != cols {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        if self.isa == Isa::Avx512 {
            let points: Vec<usize> = self.order.iter().map(|&o| cols[o]).collect();
            let mut s = Rows::default();
            s.load(self, data, norms, &points, false);
            if let Some(&last) = s.feat.iter().max() {
                assert!(
                    last + self.width <= self.zt.len(),
                    "panel offsets out of range"
                );
            }
            let nb = n.div_ceil(BLOCK);
            let totals: Vec<Mutex<[f64; BLOCK]>> =
                (0..nb).map(|_| Mutex::new([0.0; BLOCK])).collect();
            crate::backend::gram::symmetric::by_anti_diagonals(&totals, |ab, ta, tb| {
                // SAFETY: the CPU has AVX-512 (`isa`); the offsets of `s` were checked against
                // the panel above, and blocks a, b lie within the n ≤ width positions.
                unsafe { pair_avx512(self, &s, n, ab, ta, tb) }
            });
            for (p, &o) in self.order.iter().enumerate() {
                out[o] = totals[p / BLOCK].lock().expect("no task panics holding it")[p % BLOCK];
            }
            return true;
        }
        let _ = (data, norms);
        false
    }
}

/// The pair of blocks (a, b), a ≤ b: every kernel value of block a's points (rows) against
/// block b's (columns), its term added to the row's total (`ta`) and, when a < b, to the
/// column's (`tb`).
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ, AVX2 and FMA; every offset of `s` plus the panel's width
/// lies within the panel; `n` ≤ the panel's width is the number of its columns (the rows of
/// `s`, in the panel's order).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn pair_avx512(
    p: &Screen,
    s: &Rows,
    n: usize,
    (a, b): (usize, usize),
    ta: &mut [f64; BLOCK],
    tb: Option<&mut [f64; BLOCK]>,
) {
    use std::arch::x86_64::*;
    let (r0, c0) = (a * BLOCK, b * BLOCK);
    let rows = BLOCK.min(n - r0);
    let cols = BLOCK.min(n - c0);
    let vectors = cols.div_ceil(16);
    // Per column of the block, eight partial sums (by the row's position mod 8), in f32.
    let mut part = [0.0f32; 8 * BLOCK];
    let with_cols = tb.is_some();
    // SAFETY: the caller's conditions bound every panel read (c0 + 16·vectors ≤ width) and
    // `part` holds eight rows of BLOCK.
    unsafe {
        let c = Cols {
            zt: p.zt.as_ptr().add(c0),
            gnj: p.gnj.as_ptr().add(c0),
            cf: p.coef.as_ptr().add(c0),
        };
        for (r, total) in ta[..rows].iter_mut().enumerate() {
            let k = r0 + r;
            let row = RowAt {
                feat: &s.feat[s.ptr[k]..s.ptr[k + 1]],
                val: &s.val[s.ptr[k]..s.ptr[k + 1]],
                gni: _mm512_set1_ps(s.gni[k]),
                cr: _mm512_set1_ps(*p.coef.as_ptr().add(k)),
                part: with_cols.then(|| part.as_mut_ptr().add((r % 8) * BLOCK)),
            };
            let mut sum = _mm512_setzero_ps();
            let mut q = 0;
            while q + 8 <= vectors {
                vectors_avx512::<8>(&c, &row, q, &mut sum);
                q += 8;
            }
            if q + 4 <= vectors {
                vectors_avx512::<4>(&c, &row, q, &mut sum);
                q += 4;
            }
            if q + 2 <= vectors {
                vectors_avx512::<2>(&c, &row, q, &mut sum);
                q += 2;
            }
            if q < vectors {
                vectors_avx512::<1>(&c, &row, q, &mut sum);
            }
            *total += _mm512_reduce_add_ps(sum) as f64;
        }
    }
    if let Some(tb) = tb {
        for (j, t) in tb[..cols].iter_mut().enumerate() {
            *t += (0..8).map(|l| part[l * BLOCK + j] as f64).sum::<f64>();
        }
    }
}

/// A column block's side of [`pair_avx512`].
#[cfg(target_arch = "x86_64")]
struct Cols {
    zt: *const f32,
    gnj: *const f32,
    cf: *const f32,
}

/// A row's side of [`pair_avx512`]: its non-zeros (panel offsets and values), −γ·log₂e·‖x‖²,
/// weight, and its partial sums of the column block's points (when they take its terms).
#[cfg(target_arch = "x86_64")]
struct RowAt<'s> {
    feat: &'s [usize],
    val: &'s [f32],
    gni: std::arch::x86_64::__m512,
    cr: std::arch::x86_64::__m512,
    part: Option<*mut f32>,
}

/// The row's kernel values at the `V` vectors of sixteen columns from vector `q`, as
/// [`block_avx512`] forms them: the dots as `V` independent chains of multiply-adds, the
/// exponent x·z' + (−γ·log₂e·‖x‖² − γ·log₂e·‖z‖²), the exponential's steps; each value's term
/// added to `sum` and, when the columns' points take them, the row's term to their partial
/// sums.
///
/// # Safety
/// As [`pair_avx512`]; 16·(q + V) lies within the column block's positions.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
unsafe fn vectors_avx512<const V: usize>(
    c: &Cols,
    row: &RowAt<'_>,
    q: usize,
    sum: &mut std::arch::x86_64::__m512,
) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's conditions.
    unsafe {
        let zero = _mm512_setzero_ps();
        let mut acc = [zero; V];
        for (&off, &x) in row.feat.iter().zip(row.val) {
            let z = c.zt.add(off + 16 * q);
            let x = _mm512_set1_ps(x);
            for (v, aq) in acc.iter_mut().enumerate() {
                *aq = _mm512_fmadd_ps(x, _mm512_loadu_ps(z.add(16 * v)), *aq);
            }
        }
        let x: [__m512; V] = std::array::from_fn(|v| {
            let arg = _mm512_add_ps(row.gni, _mm512_loadu_ps(c.gnj.add(16 * (q + v))));
            _mm512_add_ps(acc[v], arg)
        });
        for (v, &e) in super::exp2_x(x).iter().enumerate() {
            let at = 16 * (q + v);
            *sum = _mm512_fmadd_ps(_mm512_loadu_ps(c.cf.add(at)), e, *sum);
            if let Some(pt) = row.part {
                let t = pt.add(at);
                _mm512_storeu_ps(t, _mm512_fmadd_ps(row.cr, e, _mm512_loadu_ps(t)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The symmetric sums agree with the row-at-a-time sums within the latter's rigorous
    /// bound (each is within it of the exact sum, so twice the bound covers their distance):
    /// dense and sparse rows, weights of both signs, counts that are not multiples of a block.
    #[test]
    fn own_sums_are_the_screen_sums_within_its_bound() {
        if Isa::detect() != Some(Isa::Avx512) {
            eprintln!("no AVX-512 here: own_sums does not apply, and is not tested");
            return;
        }
        for (ds, tag) in [
            (
                crate::backend::gram::tests::data(700, 9, 0.8, 21, true),
                "dense",
            ),
            (
                crate::backend::gram::tests::data(650, 54, 0.2, 22, false),
                "sparse",
            ),
            (
                super::super::tests::offset_rows(
                    &mut crate::rng::SplitMix64::new(23),
                    640,
                    (10, 30),
                )
                .0,
                "centred",
            ),
        ] {
            let nm = crate::backend::gram::tests::norms(&ds);
            for (ncols, gamma) in [(100usize, 0.7), (301, 0.05), (600, 2.0)] {
                let cols: Vec<usize> = (0..ds.len()).filter(|i| i % 9 != 4).take(ncols).collect();
                let coef: Vec<f64> = (0..cols.len())
                    .map(|k| (0.3 + (k % 11) as f64) * if k % 3 == 0 { -1.0 } else { 1.0 })
                    .collect();
                let cn: Vec<f64> = cols.iter().map(|&j| nm[j]).collect();
                let sc = Screen::new(gamma, &ds, &cols, &coef, &cn, 1 << 29).unwrap();
                assert_eq!(
                    !sc.shift.is_empty(),
                    tag == "centred",
                    "{tag}: centred or not"
                );
                let (mut want, mut bound) = (vec![0.0; cols.len()], vec![0.0; cols.len()]);
                sc.row_sums(&ds, &nm, &cols, &mut want, &mut bound);
                let mut got = vec![f64::NAN; cols.len()];
                assert!(
                    sc.own_sums_of_any_size(&ds, &nm, &cols, &mut got),
                    "{tag}: applies"
                );
                for (k, ((g, w), b)) in got.iter().zip(&want).zip(&bound).enumerate() {
                    assert!(
                        (g - w).abs() <= 2.0 * b,
                        "{tag}, {ncols} columns, γ = {gamma}, point {k}: {g} vs {w} ± {b}"
                    );
                }
                // Other columns than the panel's: refused.
                assert!(!sc.own_sums_of_any_size(&ds, &nm, &cols[1..], &mut got[1..]));
            }
        }
    }
}
