//! The exact RBF product for binary data (every stored value 1: one-hot and other indicator
//! features, as a9a and w8a), by popcounts and tables held in registers (AVX-512) or in L1
//! (AVX2).
//!
//! For rows whose values are all 1, ‖x‖² = n (the row's ones) and ⟨x_i, z_j⟩ = c_ij =
//! popcount(x_i ∧ z_j), so
//!
//! ```text
//! k(x_i, z_j) = e^{−γ n_i} · e^{−γ n_j} · e^{2γ c_ij},    e^{2γc} = H[c >> 4] · L[c & 15]
//! ```
//!
//! with H[a] = e^{32γa} (8 entries) and L[b] = e^{2γb} (16 entries) computed once in f64 and
//! looked up by register permutes (no exponential, no gather; with AVX2, popcounts by nibble
//! lookups and the 128 products H·L gathered from a table of the same f64 numbers). The row sum
//! Σ_j coef_j (k + 1) = e^{−γ n_i} · Σ_j (coef_j e^{−γ n_j}) · H·L + Σ_j coef_j is an f64
//! evaluation with a relative error of a few units in the last place per term — exact in the
//! sense of [`super::gram`] (which is used instead when the CPU lacks AVX2, a row
//! has 128 ones or more, or γ is large enough for the factors to leave f64's range).

use crate::data::{Dataset, Row};
use crate::kernel::Kernel;
use rayon::prelude::*;

/// Widest rows handled (u64 words: 512 features).
const MAX_WORDS: usize = 8;
/// Most ones per row (c = 16a + b with a < 8).
const MAX_ONES: usize = 127;
/// Rows per parallel task.
const ROW_BLOCK: usize = 64;
/// Columns per vector.
const L: usize = 8;

/// The support vectors as bit sets, laid out once.
pub struct BinaryPanel {
    gamma: f64,
    words: usize,
    /// Columns padded to a multiple of [`L`].
    width: usize,
    /// Word-major bits: `bits[w * width + j]` is word w of column j.
    bits: Vec<u64>,
    /// coef_j · e^{−γ n_j} (0 for padding).
    cb: Vec<f64>,
    /// Σ_j coef_j (Q's +1).
    coef_sum: f64,
    hi: [f64; 8],
    lo: [f64; 16],
    /// H[c >> 4]·L[c & 15] for c = 0..=MAX_ONES (the AVX2 copy's table).
    hl: [f64; MAX_ONES + 1],
    isa: Isa,
}

/// Which compiled copy of the row sum runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

fn ones_of(r: Row<'_>) -> Option<usize> {
    match r {
        Row::Sparse(ix, v) => (v.iter().all(|&x| x == 1.0)
            && ix.iter().all(|&f| (f as usize) < 64 * MAX_WORDS))
        .then_some(ix.len()),
        Row::Dense(_) => None,
    }
}

/// Fills `out` (words long) with the bits of a binary row.
fn row_bits(r: Row<'_>, out: &mut [u64]) {
    out.iter_mut().for_each(|w| *w = 0);
    if let Row::Sparse(ix, _) = r {
        for &f in ix {
            out[f as usize / 64] |= 1u64 << (f % 64);
        }
    }
}

fn available() -> Option<Isa> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vpopcntdq")
        {
            return Some(Isa::Avx512);
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return Some(Isa::Avx2);
        }
    }
    None
}

/// Whether [`BinaryPanel::new`] builds a panel for `data` with `kernel` (any columns).
pub fn applies(kernel: Kernel, data: &Dataset) -> bool {
    let Kernel::Rbf { gamma } = kernel else {
        return false;
    };
    available().is_some()
        && !data.is_dense()
        && gamma > 0.0
        && gamma * 2.0 * MAX_ONES as f64 <= 600.0
        && (0..data.len()).all(|i| ones_of(data.row(i)).is_some_and(|n| n <= MAX_ONES))
}

impl BinaryPanel {
    /// The panel of columns `cols` of `data` with weights `coef`; None unless the kernel is
    /// RBF, every row of `data` is binary with fewer than 128 ones, γ keeps every factor in
    /// f64's normal range, and the CPU has AVX-512 VPOPCNTDQ or AVX2.
    pub fn new(kernel: Kernel, data: &Dataset, cols: &[usize], coef: &[f64]) -> Option<Self> {
        let Kernel::Rbf { gamma } = kernel else {
            return None;
        };
        let isa = available()?;
        if data.is_dense() || !(gamma > 0.0) {
            return None;
        }
        let mut widest = 0;
        for i in 0..data.len() {
            widest = widest.max(ones_of(data.row(i))?);
        }
        if widest > MAX_ONES || gamma * 2.0 * MAX_ONES as f64 > 600.0 {
            // (the same conditions as `applies`)
            return None;
        }
        let words = data.n_features().div_ceil(64).max(1);
        let width = cols.len().next_multiple_of(L).max(L);
        let mut bits = vec![0u64; words * width];
        let mut cb = vec![0.0; width];
        let mut rb = [0u64; MAX_WORDS];
        for (c, &j) in cols.iter().enumerate() {
            let r = data.row(j);
            let n = ones_of(r)?;
            row_bits(r, &mut rb[..words]);
            for w in 0..words {
                bits[w * width + c] = rb[w];
            }
            cb[c] = coef[c] * (-gamma * n as f64).exp();
        }
        let hi: [f64; 8] = std::array::from_fn(|a| (32.0 * gamma * a as f64).exp());
        let lo: [f64; 16] = std::array::from_fn(|b| (2.0 * gamma * b as f64).exp());
        Some(BinaryPanel {
            gamma,
            words,
            width,
            bits,
            cb,
            coef_sum: coef.iter().sum(),
            hi,
            lo,
            hl: std::array::from_fn(|c| hi[c >> 4] * lo[c & 15]),
            isa,
        })
    }

    /// out[k] = Σ_j coef_j (k(x_i, z_j) + 1) for i = rows[k] (or i = k when `rows` is None).
    pub fn row_sums(&self, data: &Dataset, rows: Option<&[usize]>, out: &mut [f64]) {
        if let Some(r) = rows {
            assert_eq!(r.len(), out.len());
        } else {
            assert_eq!(data.len(), out.len());
        }
        let budget = crate::budget::current();
        out.par_chunks_mut(ROW_BLOCK)
            .enumerate()
            .for_each(|(b, chunk)| {
                if budget.spent() {
                    return;
                }
                let mut rb = [0u64; MAX_WORDS];
                for (k, o) in chunk.iter_mut().enumerate() {
                    let i = match rows {
                        Some(r) => r[b * ROW_BLOCK + k],
                        None => b * ROW_BLOCK + k,
                    };
                    let r = data.row(i);
                    let n = match r {
                        Row::Sparse(ix, _) => ix.len(),
                        Row::Dense(v) => v.len(),
                    };
                    row_bits(r, &mut rb[..self.words]);
                    #[cfg(target_arch = "x86_64")]
                    let s = match self.isa {
                        // SAFETY: `new` chose this copy because the CPU has AVX-512.
                        Isa::Avx512 => unsafe { self.row_sum_avx512(&rb[..self.words]) },
                        // SAFETY: `new` chose this copy because the CPU has AVX2.
                        Isa::Avx2 => unsafe { self.row_sum_avx2(&rb[..self.words]) },
                    };
                    #[cfg(not(target_arch = "x86_64"))]
                    let s: f64 = match self.isa {};
                    *o = (-self.gamma * n as f64).exp() * s + self.coef_sum;
                }
            });
    }

    /// Σ_j cb_j · e^{2γ c_ij} for the row with bits `rb`.
    ///
    /// # Safety
    /// The CPU has AVX-512F, AVX-512DQ and VPOPCNTDQ (the caller's dispatch checked it); `rb`
    /// holds the panel's words per row.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq")]
    unsafe fn row_sum_avx512(&self, rb: &[u64]) -> f64 {
        use std::arch::x86_64::*;
        assert_eq!(rb.len(), self.words);
        assert_eq!(self.bits.len(), self.words * self.width);
        // SAFETY: every load reads 8 entries at j0 < width (a multiple of 8) of a row of
        // `bits` (words × width) or of `cb` (width).
        unsafe {
            let hi = _mm512_loadu_pd(self.hi.as_ptr());
            let lo0 = _mm512_loadu_pd(self.lo.as_ptr());
            let lo1 = _mm512_loadu_pd(self.lo.as_ptr().add(8));
            let fifteen = _mm512_set1_epi64(15);
            let mut acc = _mm512_setzero_pd();
            let mut acc2 = _mm512_setzero_pd();
            let mut x = [_mm512_setzero_si512(); MAX_WORDS];
            for (w, xw) in x.iter_mut().enumerate().take(self.words) {
                *xw = _mm512_set1_epi64(rb[w] as i64);
            }
            let mut j0 = 0;
            while j0 < self.width {
                let mut c = _mm512_setzero_si512();
                for (w, xw) in x.iter().enumerate().take(self.words) {
                    let z = _mm512_loadu_si512(self.bits.as_ptr().add(w * self.width + j0).cast());
                    c = _mm512_add_epi64(c, _mm512_popcnt_epi64(_mm512_and_si512(*xw, z)));
                }
                let h = _mm512_permutexvar_pd(_mm512_srli_epi64::<4>(c), hi);
                let l = _mm512_permutex2var_pd(lo0, _mm512_and_si512(c, fifteen), lo1);
                let cb = _mm512_loadu_pd(self.cb.as_ptr().add(j0));
                if (j0 / L).is_multiple_of(2) {
                    acc = _mm512_fmadd_pd(cb, _mm512_mul_pd(h, l), acc);
                } else {
                    acc2 = _mm512_fmadd_pd(cb, _mm512_mul_pd(h, l), acc2);
                }
                j0 += L;
            }
            _mm512_reduce_add_pd(_mm512_add_pd(acc, acc2))
        }
    }
}

impl BinaryPanel {
    /// [`Self::row_sum_avx512`] in AVX2: four columns per vector, the popcounts of x ∧ z by
    /// nibble lookups (VPSHUFB) summed per column by VPSADBW, and e^{2γc} gathered from `hl`,
    /// the products H·L the AVX-512 copy forms (so every term is the same number; the sums
    /// are grouped differently).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (the caller's dispatch checked it); `rb` as for
    /// [`Self::row_sum_avx512`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn row_sum_avx2(&self, rb: &[u64]) -> f64 {
        use super::simd::avx2::{hsum_pd, popcnt_bytes};
        use std::arch::x86_64::*;
        assert_eq!(rb.len(), self.words);
        assert_eq!(self.bits.len(), self.words * self.width);
        // SAFETY: every load reads 4 entries at j0 < width (a multiple of 8) of a row of
        // `bits` (words × width) or of `cb` (width); a count is at most the row's ones
        // (≤ MAX_ONES, checked by `new`), inside `hl`.
        unsafe {
            let mut x = [_mm256_setzero_si256(); MAX_WORDS];
            for (w, xw) in x.iter_mut().enumerate().take(self.words) {
                *xw = _mm256_set1_epi64x(rb[w] as i64);
            }
            // A count is at most the row's ones: below 16, a register lookup instead of the
            // gather.
            let narrow = rb.iter().map(|w| w.count_ones()).sum::<u32>() < 16;
            let lt: [__m256d; 4] =
                std::array::from_fn(|k| _mm256_loadu_pd(self.hl.as_ptr().add(4 * k)));
            let one = _mm256_set1_epi64x(1);
            let mut acc = [_mm256_setzero_pd(); 4];
            let mut j0 = 0;
            while j0 < self.width {
                let g = (j0 / L) % 2;
                for h in 0..2 {
                    let j = j0 + 4 * h;
                    let mut c = _mm256_setzero_si256();
                    for (w, xw) in x.iter().enumerate().take(self.words) {
                        let z =
                            _mm256_loadu_si256(self.bits.as_ptr().add(w * self.width + j).cast());
                        c = _mm256_add_epi8(c, popcnt_bytes(_mm256_and_si256(*xw, z)));
                    }
                    let c = _mm256_sad_epu8(c, _mm256_setzero_si256());
                    let e = if narrow {
                        // c < 16: hl[c] = L[c] (H[0] = 1), from four registers of four.
                        let c2 = _mm256_slli_epi64::<1>(c);
                        let idx =
                            _mm256_or_si256(c2, _mm256_slli_epi64::<32>(_mm256_add_epi64(c2, one)));
                        let pick = |t: __m256d| {
                            _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(t), idx))
                        };
                        let b2 = _mm256_castsi256_pd(_mm256_slli_epi64::<61>(c));
                        let b3 = _mm256_castsi256_pd(_mm256_slli_epi64::<60>(c));
                        let lo = _mm256_blendv_pd(pick(lt[0]), pick(lt[1]), b2);
                        let hi = _mm256_blendv_pd(pick(lt[2]), pick(lt[3]), b2);
                        _mm256_blendv_pd(lo, hi, b3)
                    } else {
                        _mm256_i64gather_pd::<8>(self.hl.as_ptr(), c)
                    };
                    let cb = _mm256_loadu_pd(self.cb.as_ptr().add(j));
                    acc[2 * g + h] = _mm256_fmadd_pd(cb, e, acc[2 * g + h]);
                }
                j0 += L;
            }
            hsum_pd(_mm256_add_pd(
                _mm256_add_pd(acc[0], acc[2]),
                _mm256_add_pd(acc[1], acc[3]),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The register-table sums equal the entry-by-entry kernel sums to rounding, for all
    /// rows and a selection; other kernels, non-binary data and large γ get no panel.
    #[test]
    fn binary_sums_match_the_kernel() {
        if available().is_none() {
            eprintln!("SKIPPED: neither AVX-512 VPOPCNTDQ nor AVX2 on this CPU (no panel)");
            return;
        }
        let mut r = SplitMix64::new(12);
        for (d, density, gamma) in [(130usize, 0.1, 0.15), (300, 0.04, 0.05), (60, 0.5, 1.0)] {
            let m = 400usize;
            let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
            for _ in 0..m {
                for f in 0..d {
                    if r.next_f64() < density {
                        ix.push(f as u32);
                        vs.push(1.0f32);
                    }
                }
                ip.push(ix.len());
            }
            let ds = Dataset::from_csr(d, ip, ix, vs, vec![1.0; m]);
            let kernel = Kernel::Rbf { gamma };
            let cols: Vec<usize> = (0..m).step_by(3).collect();
            let coef: Vec<f64> = cols
                .iter()
                .map(|&j| ((j % 11) as f64 - 4.0) / 100.0)
                .collect();
            let mut p = BinaryPanel::new(kernel, &ds, &cols, &coef).expect("binary data");
            for isa in copies() {
                p.isa = isa;
                let mut out = vec![0.0; m];
                p.row_sums(&ds, None, &mut out);
                let rows = [5usize, 399, 0, 250];
                let mut sel = vec![0.0; rows.len()];
                p.row_sums(&ds, Some(&rows), &mut sel);
                for (i, &got) in out.iter().enumerate().take(m) {
                    let want: f64 = cols
                        .iter()
                        .zip(&coef)
                        .map(|(&j, c)| c * (kernel.eval(&ds.row(i), &ds.row(j)) + 1.0))
                        .sum();
                    assert!(
                        (got - want).abs() < 1e-13,
                        "d {d} γ {gamma} row {i}: {} vs {want}",
                        out[i]
                    );
                }
                for (k, &i) in rows.iter().enumerate() {
                    assert_eq!(sel[k], out[i]);
                }
            }
            assert!(BinaryPanel::new(Kernel::Linear, &ds, &cols, &coef).is_none());
            assert!(BinaryPanel::new(Kernel::Rbf { gamma: 50.0 }, &ds, &cols, &coef).is_none());
        }
        let ds = Dataset::from_csr(
            3,
            vec![0, 2, 3],
            vec![0, 2, 1],
            vec![1.0, 0.5, 1.0],
            vec![1.0, -1.0],
        );
        assert!(BinaryPanel::new(Kernel::Rbf { gamma: 0.1 }, &ds, &[0], &[1.0]).is_none());
    }

    /// Every copy of the row sum this CPU can run.
    fn copies() -> Vec<Isa> {
        let mut v = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if available() == Some(Isa::Avx512) {
                v.push(Isa::Avx512);
            }
            v.push(Isa::Avx2);
        }
        v
    }
}
