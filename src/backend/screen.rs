//! RBF row sums in f32 with a rigorous bound on their error, for the certification.
//!
//! The certified gap needs 2f = αᵀg, which only rows in A enter, and min_i g_i over all m rows.
//! Almost every row's gradient is far above the minimum, and proving g_i > U for a known value
//! U ≥ min g does not need g_i exactly: an interval does. This module computes, for every row,
//!
//! ```text
//! S̃_i ≈ S_i = Σ_j c_j k(x_i, z_j)    and    B_i ≥ |S̃_i − S_i|
//! ```
//!
//! in f32 (sixteen lanes of AVX-512 or twice eight of AVX2, a shorter exponential), twice the
//! throughput of the f64
//! product of [`super::gram`]; the caller computes g exactly (f64) only for the rows in A and
//! for the rows whose interval does not clear U, so the certificate is the same number the full
//! f64 pass gives.
//!
//! **The bound.** With u = 2⁻²⁴ and n = the row's non-zeros among the panel's features (the
//! features are f32 in the dataset, so x and z are exact), the exponent is computed as
//! t̃ = 2γ·(x·z) + (−γ‖x‖² − γ‖z‖²) in f32:
//!
//! * the dot x·z accumulated by n fused multiply-adds is within 1.01·n·u·Σ|x_f z_f| ≤
//!   1.01·n·u·(‖x‖² + ‖z‖²)/2 of the real one: 1.01·n·u·γ(‖x‖² + ‖z‖²) in t;
//! * 2γ rounded to f32: u·2γ|x·z| ≤ u·γ(‖x‖² + ‖z‖²); −γ‖x‖² and −γ‖z‖² (γ, the product and
//!   the f64 norm rounded, 3u each) and their sum (u): 4u·γ(‖x‖² + ‖z‖²); the final fused add,
//!   u·|t̃| ≤ 2u·γ(‖x‖² + ‖z‖²)(1 + 10u). So |t̃ − t| ≤ δ = γ·u·(n + 15)·(‖x‖² + max_j ‖z_j‖²),
//!   the same for every column of the row (t̃ > 0 is clamped to 0, which only helps);
//! * the exponential (the vector form of [`exp_nonpos_f32`]) has relative error at most
//!   [`EXP32_ERR`]
//!   (tested against f64 over its range), so |k̃ − k| ≤ k̃·(1.01·δ + 2.01·EXP32_ERR) while
//!   δ ≤ 0.01; exponents below −86 are clamped (k̃ = e⁻⁸⁶ for a true k below it: at most 1e-37
//!   off);
//! * c_j rounded to f32 (u), the products added in f32 over a tile of 64 columns (four terms
//!   per lane: 4u) and the tiles in f64 per lane: 9u·Σ|c_j| k̃_j covers them.
//!
//! Hence B_i = W_i·(1.01·δ + 2.01·EXP32_ERR + 9u)·(1 + 10⁻³) + 10⁻³⁶·Σ|c|, with
//! W_i = Σ_j |c_j| k̃_j accumulated beside S̃_i in f32 (tiles + 8 roundings per lane, so it is
//! scaled up by (1 + (tiles + 8)·1.01u) first). Rows for which δ > 0.01 get B_i = +∞ (decided
//! in f64).

use crate::data::Dataset;
use rayon::prelude::*;

use super::gram::{feature_map, for_nonzeros};
#[cfg(doc)]
use super::simd::exp_nonpos_f32;
use super::simd::{EXP32_ERR, EXP32_LO, LN2_HI32, LN2_LO32, POLY32, SHIFT32};

/// Columns per tile: four vectors of sixteen f32 lanes.
const TILE: usize = 64;
/// Rows per parallel task.
const ROW_BLOCK: usize = 128;
/// u = 2⁻²⁴, the unit roundoff of f32.
const U: f64 = 1.0 / 16_777_216.0;

/// The column side in f32, laid out once (feature-major, columns padded to a multiple of
/// [`TILE`] with zero weight).
pub struct Screen {
    gamma: f64,
    width: usize,
    fmap: Vec<u32>,
    zt: Vec<f32>,
    /// −γ‖z_j‖² (f32).
    gnj: Vec<f32>,
    coef: Vec<f32>,
    abs_coef: Vec<f32>,
    /// max_j ‖z_j‖² (f64).
    nz_max: f64,
    /// Which compiled copy of the block runs.
    isa: Isa,
    /// Σ_j |c_j|.
    abs_sum: f64,
}

impl Screen {
    /// The panel of columns `cols` of `data` with weights `coef` and squared norms `norms`, for
    /// the RBF kernel exp(−γ‖x − z‖²). None when the CPU lacks AVX2+FMA or the panel would be
    /// larger than `max_bytes`.
    pub fn new(
        gamma: f64,
        data: &Dataset,
        cols: &[usize],
        coef: &[f64],
        norms: &[f64],
        max_bytes: usize,
    ) -> Option<Screen> {
        let isa = Isa::detect()?;
        if !(gamma > 0.0) || !gamma.is_finite() {
            return None;
        }
        let (fmap, used) = feature_map(data, cols);
        let width = cols.len().next_multiple_of(TILE).max(TILE);
        if (used as usize).checked_mul(width)?.checked_mul(4)? > max_bytes {
            return None;
        }
        let mut zt = vec![0.0f32; used as usize * width];
        for (c, &j) in cols.iter().enumerate() {
            for_nonzeros(data.row(j), |f, v| {
                zt[fmap[f] as usize * width + c] = v as f32;
            });
        }
        let pad = |v: &[f64]| -> Vec<f32> {
            let mut o = vec![0.0f32; width];
            for (a, &b) in o.iter_mut().zip(v) {
                *a = b as f32;
            }
            o
        };
        let abs: Vec<f64> = coef.iter().map(|c| c.abs()).collect();
        Some(Screen {
            gamma,
            width,
            fmap,
            zt,
            gnj: pad(&norms.iter().map(|n| -gamma * n).collect::<Vec<_>>()),
            coef: pad(coef),
            abs_coef: pad(&abs),
            nz_max: norms.iter().copied().fold(0.0, f64::max),
            isa,
            abs_sum: abs.iter().sum(),
        })
    }

    /// For the rows `rows` of `data` (squared norms `norms`): `sum[k]` = S̃_i and `bound[k]` =
    /// B_i for i = rows[k] (see the module documentation).
    pub fn row_sums(
        &self,
        data: &Dataset,
        norms: &[f64],
        rows: &[usize],
        sum: &mut [f64],
        bound: &mut [f64],
    ) {
        assert_eq!(sum.len(), rows.len());
        assert_eq!(bound.len(), rows.len());
        sum.par_chunks_mut(ROW_BLOCK)
            .zip(bound.par_chunks_mut(ROW_BLOCK))
            .zip(rows.par_chunks(ROW_BLOCK))
            .for_each_init(Rows::default, |scratch, ((s, e), rs)| {
                scratch.load(self, data, norms, rs);
                // SAFETY: `new` chose the copy from what the CPU has.
                #[cfg(target_arch = "x86_64")]
                match self.isa {
                    Isa::Avx512 => unsafe { block_avx512(self, scratch, s, e) },
                    Isa::Avx2 => unsafe { block_avx2(self, scratch, s, e) },
                }
                #[cfg(not(target_arch = "x86_64"))]
                match self.isa {}
                for (k, ek) in e.iter_mut().enumerate().take(s.len()) {
                    *ek = self.bound(*ek, scratch.nnz(k), scratch.ni[k]);
                }
            });
    }

    /// B_i from W_i, the row's non-zeros n and ‖x_i‖².
    fn bound(&self, w: f64, n: usize, ni: f64) -> f64 {
        let delta = self.gamma * U * (n as f64 + 15.0) * (ni + self.nz_max);
        if !(delta <= 0.01) {
            return f64::INFINITY;
        }
        let tiles = (self.width / TILE) as f64;
        let w = w * (1.0 + (tiles + 8.0) * 1.01 * U);
        w * (1.01 * delta + 2.01 * EXP32_ERR + 9.0 * U) * (1.0 + 1e-3) + 1e-36 * self.abs_sum
    }
}

/// The vector copies of the block; the screen is not used without one of them.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    fn detect() -> Option<Isa> {
        #[cfg(target_arch = "x86_64")]
        {
            let fma = std::is_x86_feature_detected!("fma");
            if fma && std::is_x86_feature_detected!("avx512f") {
                return Some(Isa::Avx512);
            }
            if fma && std::is_x86_feature_detected!("avx2") {
                return Some(Isa::Avx2);
            }
        }
        None
    }
}

/// One task's rows, reduced to their non-zeros among the panel's features.
#[derive(Default)]
struct Rows {
    ptr: Vec<usize>,
    /// Offsets into the panel (feature row · width).
    feat: Vec<usize>,
    val: Vec<f32>,
    /// ‖x‖² (f64) and −γ‖x‖² (f32).
    ni: Vec<f64>,
    gni: Vec<f32>,
}

impl Rows {
    fn load(&mut self, p: &Screen, data: &Dataset, norms: &[f64], rows: &[usize]) {
        self.ptr.clear();
        self.feat.clear();
        self.val.clear();
        self.ni.clear();
        self.gni.clear();
        self.ptr.push(0);
        for &i in rows {
            let (feat, val) = (&mut self.feat, &mut self.val);
            for_nonzeros(data.row(i), |f, v| {
                if let Some(&r) = p.fmap.get(f)
                    && r != u32::MAX
                {
                    feat.push(r as usize * p.width);
                    val.push(v as f32);
                }
            });
            self.ptr.push(self.feat.len());
            self.ni.push(norms[i]);
            self.gni.push((-p.gamma * norms[i]) as f32);
        }
    }

    fn nnz(&self, k: usize) -> usize {
        self.ptr[k + 1] - self.ptr[k]
    }
}

/// The rows' S̃ into `sum` and W into `wsum` (the caller turns W into B).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn block_avx512(p: &Screen, s: &Rows, sum: &mut [f64], wsum: &mut [f64]) {
    use std::arch::x86_64::*;
    sum.iter_mut().for_each(|o| *o = 0.0);
    wsum.iter_mut().for_each(|o| *o = 0.0);
    let rows = sum.len();
    if let Some(&last) = s.feat[..s.ptr[rows]].iter().max() {
        assert!(last + p.width <= p.zt.len(), "panel offsets out of range");
    }
    // SAFETY: every zt load reads zt[off + t .. off + t + TILE] with off ≤ last and
    // t + TILE ≤ width (checked above); nj, coef and abs_coef have `width` entries.
    unsafe {
        let lo = _mm512_set1_ps(EXP32_LO);
        let zero = _mm512_setzero_ps();
        let log2e = _mm512_set1_ps(std::f32::consts::LOG2_E);
        let shift = _mm512_set1_ps(SHIFT32);
        let ln2_hi = _mm512_set1_ps(LN2_HI32);
        let ln2_lo = _mm512_set1_ps(LN2_LO32);
        let poly = POLY32.map(|c| _mm512_set1_ps(c));
        let exp = |x: __m512| -> __m512 {
            let x = _mm512_min_ps(_mm512_max_ps(x, lo), zero);
            let t = _mm512_fmadd_ps(x, log2e, shift);
            let k = _mm512_sub_ps(t, shift);
            let r = _mm512_fnmadd_ps(k, ln2_hi, x);
            let r = _mm512_fnmadd_ps(k, ln2_lo, r);
            let mut q = poly[0];
            for &c in &poly[1..] {
                q = _mm512_fmadd_ps(q, r, c);
            }
            // q·2^k exactly (k ∈ [−125, 0], q ∈ [0.7, 1.5]: a normal result), as adding k to
            // q's exponent bits does, in one instruction.
            _mm512_scalef_ps(q, k)
        };
        let zt = p.zt.as_ptr();
        let two_g = _mm512_set1_ps(2.0 * p.gamma as f32);
        // Per row: S̃ in two f64 vectors (one per half of the lanes), W in one f32 vector.
        let mut sacc = [[_mm512_setzero_pd(); 2]; ROW_BLOCK];
        let mut wacc = [zero; ROW_BLOCK];
        assert!(rows <= ROW_BLOCK);
        for t in (0..p.width).step_by(TILE) {
            let ld = |v: &Vec<f32>| [0, 16, 32, 48].map(|o| _mm512_loadu_ps(v.as_ptr().add(t + o)));
            let (gnj, cf, af) = (ld(&p.gnj), ld(&p.coef), ld(&p.abs_coef));
            let base = zt.add(t);
            for r in 0..rows {
                let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                let mut acc = [zero; 4];
                for (&off, &v) in s.feat[a..b].iter().zip(&s.val[a..b]) {
                    let z = base.add(off);
                    let v = _mm512_set1_ps(v);
                    for (q, aq) in acc.iter_mut().enumerate() {
                        *aq = _mm512_fmadd_ps(v, _mm512_loadu_ps(z.add(16 * q)), *aq);
                    }
                }
                // −γ‖x − z‖² = 2γ·x·z + (−γ‖x‖² − γ‖z‖²), clamped at 0 inside the exponential.
                let gni = _mm512_set1_ps(s.gni[r]);
                let (mut sv, mut wv) = (zero, zero);
                for q in 0..4 {
                    let e = exp(_mm512_fmadd_ps(two_g, acc[q], _mm512_add_ps(gni, gnj[q])));
                    sv = _mm512_fmadd_ps(cf[q], e, sv);
                    wv = _mm512_fmadd_ps(af[q], e, wv);
                }
                let lo_half = _mm512_cvtps_pd(_mm512_castps512_ps256(sv));
                let hi_half = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
                    _mm512_castps_pd(sv),
                )));
                sacc[r][0] = _mm512_add_pd(sacc[r][0], lo_half);
                sacc[r][1] = _mm512_add_pd(sacc[r][1], hi_half);
                wacc[r] = _mm512_add_ps(wacc[r], wv);
            }
        }
        for r in 0..rows {
            sum[r] = _mm512_reduce_add_pd(_mm512_add_pd(sacc[r][0], sacc[r][1]));
            wsum[r] = _mm512_reduce_add_ps(wacc[r]) as f64;
        }
    }
}

/// [`block_avx512`] in AVX2: each 16-lane vector of that copy is two 8-lane halves here, the
/// low half from the even groups of eight columns and the high half from the odd ones, so every
/// lane sums the same columns in the same order and the bound's rounding count (four terms per
/// lane per tile, the tiles in f64, sixteen lanes reduced at the end) is unchanged.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2(p: &Screen, s: &Rows, sum: &mut [f64], wsum: &mut [f64]) {
    use super::simd::avx2::hsum_pd;
    use std::arch::x86_64::*;
    sum.iter_mut().for_each(|o| *o = 0.0);
    wsum.iter_mut().for_each(|o| *o = 0.0);
    let rows = sum.len();
    if let Some(&last) = s.feat[..s.ptr[rows]].iter().max() {
        assert!(last + p.width <= p.zt.len(), "panel offsets out of range");
    }
    // SAFETY: as in block_avx512.
    unsafe {
        let zero = _mm256_setzero_ps();
        let exp = |x: __m256| -> __m256 {
            let x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP32_LO)), zero);
            let shift = _mm256_set1_ps(SHIFT32);
            let t = _mm256_fmadd_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E), shift);
            let k = _mm256_sub_ps(t, shift);
            let r = _mm256_fnmadd_ps(k, _mm256_set1_ps(LN2_HI32), x);
            let r = _mm256_fnmadd_ps(k, _mm256_set1_ps(LN2_LO32), r);
            let mut q = _mm256_set1_ps(POLY32[0]);
            for &c in &POLY32[1..] {
                q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(c));
            }
            let kbits = _mm256_sub_epi32(
                _mm256_castps_si256(t),
                _mm256_set1_epi32(SHIFT32.to_bits() as i32),
            );
            _mm256_castsi256_ps(_mm256_add_epi32(
                _mm256_castps_si256(q),
                _mm256_slli_epi32::<23>(kbits),
            ))
        };
        let zt = p.zt.as_ptr();
        let two_g = _mm256_set1_ps(2.0 * p.gamma as f32);
        // Per row: S̃ in four f64 vectors (the sixteen lanes), W in two f32 vectors.
        let mut sacc = [[_mm256_setzero_pd(); 4]; ROW_BLOCK];
        let mut wacc = [[zero; 2]; ROW_BLOCK];
        assert!(rows <= ROW_BLOCK);
        for t in (0..p.width).step_by(TILE) {
            let (gnj, cf, af) = (
                p.gnj.as_ptr().add(t),
                p.coef.as_ptr().add(t),
                p.abs_coef.as_ptr().add(t),
            );
            let base = zt.add(t);
            for r in 0..rows {
                let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                let mut acc = [zero; TILE / 8];
                for (&off, &v) in s.feat[a..b].iter().zip(&s.val[a..b]) {
                    let z = base.add(off);
                    let v = _mm256_set1_ps(v);
                    for (q, aq) in acc.iter_mut().enumerate() {
                        *aq = _mm256_fmadd_ps(v, _mm256_loadu_ps(z.add(8 * q)), *aq);
                    }
                }
                let gni = _mm256_set1_ps(s.gni[r]);
                let (mut sv, mut wv) = ([zero; 2], [zero; 2]);
                for (q, aq) in acc.iter().enumerate() {
                    let arg = _mm256_add_ps(gni, _mm256_loadu_ps(gnj.add(8 * q)));
                    let e = exp(_mm256_fmadd_ps(two_g, *aq, arg));
                    let h = q % 2;
                    sv[h] = _mm256_fmadd_ps(_mm256_loadu_ps(cf.add(8 * q)), e, sv[h]);
                    wv[h] = _mm256_fmadd_ps(_mm256_loadu_ps(af.add(8 * q)), e, wv[h]);
                }
                for h in 0..2 {
                    let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(sv[h]));
                    let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(sv[h]));
                    sacc[r][2 * h] = _mm256_add_pd(sacc[r][2 * h], lo);
                    sacc[r][2 * h + 1] = _mm256_add_pd(sacc[r][2 * h + 1], hi);
                    wacc[r][h] = _mm256_add_ps(wacc[r][h], wv[h]);
                }
            }
        }
        for r in 0..rows {
            let [a, b, c, d] = sacc[r];
            sum[r] = hsum_pd(_mm256_add_pd(_mm256_add_pd(a, c), _mm256_add_pd(b, d)));
            // Sixteen lanes to one in four rounded steps, as _mm512_reduce_add_ps.
            let w = _mm256_add_ps(wacc[r][0], wacc[r][1]);
            let w = _mm_add_ps(_mm256_castps256_ps128(w), _mm256_extractf128_ps::<1>(w));
            let w = _mm_add_ps(w, _mm_movehl_ps(w, w));
            let w = _mm_add_ss(w, _mm_movehdup_ps(w));
            wsum[r] = _mm_cvtss_f32(w) as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use crate::rng::SplitMix64;

    /// Every row's S̃ is within B of the f64 sum, on dense and sparse data and several γ; the
    /// bound is not vacuous (well below the sum's scale).
    #[test]
    fn row_sums_are_within_their_bounds() {
        if Isa::detect().is_none() {
            eprintln!("SKIPPED: neither AVX-512 nor AVX2 on this CPU (the screen is not used)");
            return;
        }
        let mut r = SplitMix64::new(9);
        for (dense, gamma) in [(true, 0.4), (false, 0.05), (true, 3.0), (false, 20.0)] {
            let (m, d) = (700, 30);
            let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
            for _ in 0..m {
                for f in 0..d {
                    if dense || r.next_f64() < 0.2 {
                        ix.push(f as u32);
                        vs.push((r.next_f64() * 2.0 - 1.0) as f32);
                    }
                }
                ip.push(ix.len());
            }
            let ds = Dataset::from_csr(d, ip, ix, vs, vec![1.0; m]);
            let norms: Vec<f64> = (0..m).map(|i| ds.row(i).dot(&ds.row(i))).collect();
            let cols: Vec<usize> = (0..m).step_by(3).collect();
            let coef: Vec<f64> = cols
                .iter()
                .map(|_| (r.next_f64() - 0.4) / cols.len() as f64)
                .collect();
            let nj: Vec<f64> = cols.iter().map(|&j| norms[j]).collect();
            let mut sc = Screen::new(gamma, &ds, &cols, &coef, &nj, 1 << 30).expect("a vector CPU");
            let all: Vec<usize> = (0..m).collect();
            let mut sums = Vec::new();
            for isa in copies() {
                sc.isa = isa;
                let (mut s, mut b) = (vec![0.0; m], vec![0.0; m]);
                sc.row_sums(&ds, &norms, &all, &mut s, &mut b);
                for i in 0..m {
                    let exact: f64 = cols
                        .iter()
                        .zip(&coef)
                        .map(|(&j, c)| {
                            let d2 =
                                (norms[i] + norms[j] - 2.0 * ds.row(i).dot(&ds.row(j))).max(0.0);
                            c * (-gamma * d2).exp()
                        })
                        .sum();
                    assert!(
                        (s[i] - exact).abs() <= b[i],
                        "{isa:?} γ {gamma} row {i}: {} vs {exact}, bound {}",
                        s[i],
                        b[i]
                    );
                    assert!(b[i] < 1e-3, "bound {} too loose to be of use", b[i]);
                }
                sums.push(s);
            }
            // The copies sum the same columns per lane in the same order: they differ at most
            // in the f64 reduction of the sixteen lanes.
            for s in &sums[1..] {
                for (a, b) in s.iter().zip(&sums[0]) {
                    assert!((a - b).abs() <= 1e-14 * (1.0 + b.abs()), "{a} vs {b}");
                }
            }
        }
    }

    /// Every copy of the block this CPU can run.
    fn copies() -> Vec<Isa> {
        let mut v = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if Isa::detect() == Some(Isa::Avx512) {
                v.push(Isa::Avx512);
            }
            v.push(Isa::Avx2);
        }
        v
    }
}
