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
//! **The bound.** The exponent is computed in base 2: the panel holds z' = 2γ·log₂e·z and
//! −γ·log₂e·‖z‖², each row −γ·log₂e·‖x‖² (all rounded to f32 from f64), so that
//! t̃ = (x·z') + (−γ·log₂e·‖x‖² − γ·log₂e·‖z‖²) ≈ −γ‖x − z‖²·log₂e and k̃ = 2^t̃ needs no
//! reduction by ln 2. With u = 2⁻²⁴, n = the row's non-zeros among the panel's features (the
//! features are f32 in the dataset, so x and z are exact) and N = ‖x‖² + ‖z‖², in base-2 units:
//!
//! * the dot x·z' accumulated by n fused multiply-adds from 0 is within 1.01·n·u·Σ|x_f z'_f| ≤
//!   1.01·n·u·γ·log₂e·N of its exact value, and z' rounded adds u·γ·log₂e·N;
//! * the two norms rounded, u·γ·log₂e·N; their sum and the final sum, whose magnitudes are at
//!   most 2γ·log₂e·N, 4u·γ·log₂e·N.
//!
//! So |t̃ − t·log₂e| ≤ δ_j/ln 2 with δ_j = k·(‖x‖² + ‖z_j‖²), k = γ·u·(1.01·n + 7) (t̃ > 0 is
//! clamped to 0, which only helps), and:
//!
//! * the exponential ([`exp2_nonpos_f32`], whose steps the vector code takes) has relative
//!   error at most [`EXP2_32_ERR`] (checked against f64 at every argument its polynomial
//!   takes), so |k̃_j − k_j| ≤ k̃_j·(1.01·δ_j + 2.01·EXP2_32_ERR) while δ_j ≤ 0.01; exponents
//!   below −124 are clamped (k̃ ≤ 2⁻¹²⁴·1.5 for a true k below it: at most 1e-37 off);
//! * c_j rounded to f32 (u), the products added in f32 over a tile of 128 columns (eight
//!   terms per lane: 1.01·8u) and the tiles in f64 per lane: 10u·Σ|c_j| k̃_j covers them.
//!
//! Summed over the columns, with W_i = Σ_j |c_j| k̃_j and V_i = Σ_j |c_j| k̃_j ‖z_j‖²:
//! B_i = (W_i·(1.01·k·‖x‖² + 2.01·EXP2_32_ERR + 10u) + 1.01·k·V_i)·(1 + 10⁻³) + 10⁻³⁶·Σ|c|.
//! W_i is accumulated beside S̃_i in f32 (8 roundings per lane in a tile, one per tile, 4 in
//! the final sum of the lanes, so it is scaled up by (1 + (tiles + 12)·1.01u) first), and V_i
//! as Σ_t n_t·W_it over the tiles t, n_t the largest ‖z_j‖² of the tile's columns (rounded up
//! to f32: V_i is bounded from above, with the same roundings as W_i). The columns of a panel
//! of more than two tiles are ordered by their norms within a sign, so n_t is close to each of
//! its columns' norms (covtype's test set against its 371,007 support vectors: 19 % fewer rows
//! left to the f64 panel than with the largest norm of all columns in every term). Rows for
//! which k·(‖x‖² + max_j ‖z_j‖²) > 0.01 get B_i = +∞ (decided in f64).
//!
//! **The centre.** δ grows with the squared norms, and ‖x − z‖² does not depend on where the
//! points are measured from: the panel may measure both sides from a centre μ instead of the
//! origin, t = −γ(‖x − μ‖² + ‖z − μ‖² − 2(x − μ)·(z − μ)). μ_f is the columns' mean of feature
//! f (an f32 value) on the features that at least half of the columns hold, chosen when it
//! shrinks δ's factor (1.01·n + 7)·(‖x‖² + max ‖z‖²), the columns standing for the rows, to at
//! most 0.8 of itself without adding more than a quarter to a row's entries (each a multiply-
//! add per column): features far from zero on most points (covtype's ten [0, 1]-scaled
//! measurements, every pixel of a digit image whose background is −1). A centred feature is an
//! entry of every row, x_f − μ_f and z_f − μ_f computed in f64 and rounded to f32 — a relative
//! error u more on each factor of the dot's terms than the exact features have — and the
//! squared norms are ‖x − μ‖² = ‖x‖² + Σ_f μ_f(μ_f − 2x_f) in f64. So for a centred panel
//! δ_j = γ·u·(1.01·n + 8.5)·(‖x − μ‖² + ‖z_j − μ‖²), n counting the centred features
//! (covtype's factor falls from about 230 to 110–130: its ten measurements are centred, its
//! one-hot features, each on few points, are not).
//!
//! **The values.** [`Screen::kernel_values`] writes the k̃ themselves (the columns in the order
//! given) with the bound ε = 1.01·δ + 2.01·EXP2_32_ERR on their relative error, δ taking the
//! largest ‖z_j − μ‖² (plus 10⁻³⁷ for clamped exponents),
//! for callers that combine one row's values in several sums (a multi-class model's pairs).
//!
//! **The sums.** The columns are ordered by the sign of c_j, so every tile but one holds
//! weights of one sign; there S̃ = ±W on the tile and one multiply-add per column gives both.

use crate::data::{Dataset, Row};
use rayon::prelude::*;

use super::aligned::Aligned;
use super::gram::{feature_map, for_nonzeros};
#[cfg(doc)]
use super::simd::exp2_nonpos_f32;
#[cfg(target_arch = "x86_64")]
use super::simd::exp2_x;
use super::simd::{EXP2_32_ERR, EXP2_32_LO, POLY2_32, SHIFT32};

mod symmetric;

/// Columns per tile: eight vectors of sixteen f32 lanes (eight independent chains of
/// multiply-adds per row; measured, 64 columns took 16 % more time per kernel value, 256 9 %).
const TILE: usize = 128;
/// Rows per parallel task.
const ROW_BLOCK: usize = 128;
/// Rows of a tile of the AVX-512 copy when they all have every feature of the panel (sixteen
/// accumulators of sixteen lanes: eight rows by 32 columns).
const FULL_ROWS: usize = 8;
/// u = 2⁻²⁴, the unit roundoff of f32.
const U: f64 = 1.0 / 16_777_216.0;

/// The column side in f32, laid out once (feature-major, columns padded to a multiple of
/// [`TILE`] with zero weight).
pub struct Screen {
    gamma: f64,
    width: usize,
    fmap: Vec<u32>,
    /// 2γ·log₂e·z, feature-major.
    zt: Aligned<f32>,
    /// −γ·log₂e·‖z_j‖² (f32).
    gnj: Aligned<f32>,
    /// Per tile: 1 when its weights are all ≥ 0, −1 when all ≤ 0, 0 when mixed.
    tile_sign: Vec<i8>,
    /// Per tile: the largest ‖z_j − μ‖² of its columns, rounded up to f32 (0 for padding).
    tile_norm: Vec<f32>,
    coef: Aligned<f32>,
    abs_coef: Aligned<f32>,
    /// max_j ‖z_j − μ‖² (f64).
    nz_max: f64,
    /// The centre μ the points are measured from (see the module documentation): for each
    /// feature with μ_f ≠ 0, in increasing feature order, (the feature, its panel offset, μ_f,
    /// an f32 value). Empty when the panel is not centred.
    shift: Vec<(usize, usize, f64)>,
    /// The constant of the dot's rounding in δ: 7 (8.5 for a centred panel, whose points are
    /// rounded to f32 once more).
    rounding: f64,
    /// Which compiled copy of the block runs.
    isa: Isa,
    /// Σ_j |c_j|.
    abs_sum: f64,
    /// The columns' points, and for each position of the panel the index into them of its
    /// column.
    cols: Vec<usize>,
    order: Vec<usize>,
    /// The panel's offsets of its features in increasing feature order (a full row's).
    offsets: Vec<usize>,
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
        Screen::build(gamma, data, cols, coef, norms, max_bytes, true, true)
    }

    /// [`Screen::new`] for sums whose bound is not asked for (estimates): the columns within a
    /// sign keep their order, which the bound alone needs sorted.
    pub fn estimates(
        gamma: f64,
        data: &Dataset,
        cols: &[usize],
        coef: &[f64],
        norms: &[f64],
        max_bytes: usize,
    ) -> Option<Screen> {
        Screen::build(gamma, data, cols, coef, norms, max_bytes, true, false)
    }

    /// [`Screen::new`], centred where that tightens the bound (`centre`) or not at all, its
    /// columns within a sign by their norms (`by_norm`) or in the order given.
    #[allow(clippy::too_many_arguments)]
    fn build(
        gamma: f64,
        data: &Dataset,
        cols: &[usize],
        coef: &[f64],
        norms: &[f64],
        max_bytes: usize,
        centre: bool,
        by_norm: bool,
    ) -> Option<Screen> {
        let isa = Isa::detect()?;
        if !(gamma > 0.0) || !gamma.is_finite() {
            return None;
        }
        // A column with a non-finite norm (a NaN or infinite feature) has no bound.
        if !norms.iter().all(|n| n.is_finite()) {
            return None;
        }
        let (fmap, used) = feature_map(data, cols);
        let width = cols.len().next_multiple_of(TILE).max(TILE);
        if (used as usize).checked_mul(width)?.checked_mul(4)? > max_bytes {
            return None;
        }
        let scale = 2.0 * gamma * std::f64::consts::LOG2_E;
        let (shift, cnorms) = if centre {
            centre_of(data, cols, &fmap, width, norms)
        } else {
            (Vec::new(), norms.to_vec())
        };
        // The columns by the sign of their weight (the sum's order does not change the bound),
        // and with `by_norm` within a sign by ‖z − μ‖², so that a tile's largest norm, which
        // its bound takes, is close to each of its columns'.
        // (A panel of two tiles or fewer gains nothing from the norms' order.)
        let mut order: Vec<usize> = (0..cols.len()).collect();
        if by_norm && cols.len() > 2 * TILE {
            // Ties by position: the stable order, from an unstable sort of distinct keys.
            order.sort_unstable_by_key(|&c| (coef[c] < 0.0, cnorms[c].to_bits(), c));
        } else {
            order.sort_by_key(|&c| coef[c] < 0.0);
        }
        let mut zt = Aligned::zeroed(used as usize * width);
        for &(_, off, mu) in &shift {
            zt[off..off + cols.len()].fill((-scale * mu) as f32);
        }
        // Each feature's μ_f (0 where it is not centred).
        let mut mu_of = vec![0.0f64; if shift.is_empty() { 0 } else { fmap.len() }];
        for &(f, _, mu) in &shift {
            mu_of[f] = mu;
        }
        for (c, &o) in order.iter().enumerate() {
            for_nonzeros(data.row(cols[o]), |f, v| {
                let mu = if shift.is_empty() { 0.0 } else { mu_of[f] };
                zt[fmap[f] as usize * width + c] = (scale * (v - mu)) as f32;
            });
        }
        let pad = |v: &dyn Fn(usize) -> f64| -> Aligned<f32> {
            let mut out = Aligned::zeroed(width);
            for (a, &o) in out.iter_mut().zip(&order) {
                *a = v(o) as f32;
            }
            out
        };
        // The panel positions of tile t's columns.
        let tile =
            |t: usize| &order[(t * TILE).min(order.len())..((t + 1) * TILE).min(order.len())];
        let tile_sign = (0..width / TILE)
            .map(|t| {
                let w = tile(t);
                let (pos, neg) = (
                    w.iter().any(|&o| coef[o] > 0.0),
                    w.iter().any(|&o| coef[o] < 0.0),
                );
                match (pos, neg) {
                    (_, false) => 1,
                    (false, true) => -1,
                    (true, true) => 0,
                }
            })
            .collect();
        let tile_norm = (0..width / TILE)
            .map(|t| {
                let m = tile(t).iter().map(|&o| cnorms[o]).fold(0.0, f64::max);
                let v = m as f32;
                if (v as f64) < m { v.next_up() } else { v }
            })
            .collect();
        let g2 = gamma * std::f64::consts::LOG2_E;
        let offsets = fmap
            .iter()
            .filter(|&&r| r != u32::MAX)
            .map(|&r| r as usize * width)
            .collect();
        Some(Screen {
            gamma,
            width,
            fmap,
            zt,
            gnj: pad(&|o| -g2 * cnorms[o]),
            tile_sign,
            tile_norm,
            coef: pad(&|o| coef[o]),
            abs_coef: pad(&|o| coef[o].abs()),
            nz_max: cnorms.iter().copied().fold(0.0, f64::max),
            rounding: if shift.is_empty() { 7.0 } else { 8.5 },
            shift,
            isa,
            abs_sum: coef.iter().map(|c| c.abs()).sum(),
            cols: cols.to_vec(),
            order,
            offsets,
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
        let budget = crate::budget::current();
        sum.par_chunks_mut(ROW_BLOCK)
            .zip(bound.par_chunks_mut(ROW_BLOCK))
            .zip(rows.par_chunks(ROW_BLOCK))
            .for_each_init(
                || (Rows::default(), Vec::new()),
                |(scratch, wv), ((s, e), rs)| {
                    if budget.spent() {
                        return;
                    }
                    scratch.load(self, data, norms, rs, true);
                    wv.clear();
                    wv.resize(s.len(), [0.0; 2]);
                    self.block(scratch, s, wv, None);
                    for (k, ek) in e.iter_mut().enumerate() {
                        *ek = self.bound(wv[k], scratch.nnz(k), scratch.ni[k]);
                    }
                },
            );
    }

    /// The kernel values themselves, for the rows `rows` of `data` (squared norms `norms`; at
    /// most [`ROWS`] of them, in the calling thread): k̃(x_i, z_j) for i = rows\[r\] into
    /// `vals[r · stride + j]` ([`stride`](Self::stride) ≥ the panel's columns; the entries past
    /// them are padding), and into `rel[r]` a bound ε on each value's relative error,
    /// |k̃ − k| ≤ ε·k̃ + [`VALUE_FLOOR`] (+∞ where the screen cannot bound the row). The panel's
    /// columns are in the order given when it was built by [`Screen::values`].
    pub fn kernel_values(
        &self,
        data: &Dataset,
        norms: &[f64],
        rows: &[usize],
        scratch: &mut RowScratch,
        vals: &mut [f32],
        rel: &mut [f64],
    ) {
        assert!(rows.len() <= ROWS, "at most ROWS rows a call");
        assert_eq!(vals.len(), rows.len() * self.width);
        assert_eq!(rel.len(), rows.len());
        let scratch = &mut scratch.0;
        scratch.load(self, data, norms, rows, true);
        let mut wsum = [[0.0; 2]; ROWS];
        let mut sum = [0.0; ROWS];
        let n = rows.len();
        self.block(scratch, &mut sum[..n], &mut wsum[..n], Some(vals));
        for (k, e) in rel.iter_mut().enumerate() {
            *e = self.relative(scratch.nnz(k), scratch.ni[k]);
        }
    }

    /// A panel of the columns `cols` of `data` (squared norms `norms`) for their kernel values
    /// alone ([`kernel_values`](Self::kernel_values)), in the order of `cols`; None as for
    /// [`Screen::new`].
    pub fn values(
        gamma: f64,
        data: &Dataset,
        cols: &[usize],
        norms: &[f64],
        max_bytes: usize,
    ) -> Option<Screen> {
        // Weights of one sign keep the columns in their order (the sort is stable).
        let coef = vec![1.0; cols.len()];
        Screen::build(gamma, data, cols, &coef, norms, max_bytes, true, false)
    }

    /// The distance between two consecutive rows of [`kernel_values`](Self::kernel_values)'
    /// output.
    pub fn stride(&self) -> usize {
        self.width
    }

    /// The copy of the block the CPU runs, with the values written to `vals` when given.
    fn block(&self, s: &Rows, sum: &mut [f64], wsum: &mut [[f64; 2]], vals: Option<&mut [f32]>) {
        #[cfg(target_arch = "x86_64")]
        match self.isa {
            // SAFETY: `new` chose this copy because the CPU has AVX-512.
            Isa::Avx512 => unsafe { block_avx512(self, s, sum, wsum, vals) },
            // SAFETY: `new` chose this copy because the CPU has AVX2 and FMA.
            Isa::Avx2 => unsafe { block_avx2(self, s, sum, wsum, vals) },
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (s, sum, wsum, vals);
            match self.isa {}
        }
    }

    /// The bound ε on the relative error of every kernel value of a row with n non-zeros among
    /// the panel's features and ‖x‖² = `ni`: 1.01·δ + 2.01·EXP2_32_ERR (module
    /// documentation); +∞ when δ > 0.01.
    fn relative(&self, n: usize, ni: f64) -> f64 {
        let delta = self.exponent_factor(n) * (ni + self.nz_max);
        if !(delta <= 0.01) {
            return f64::INFINITY;
        }
        1.01 * delta + 2.01 * EXP2_32_ERR
    }

    /// k = γ·u·(1.01·n + 7) (8.5 centred) of a row with n non-zeros among the panel's features:
    /// its exponent's error against column j is within k·(‖x − μ‖² + ‖z_j − μ‖²).
    fn exponent_factor(&self, n: usize) -> f64 {
        self.gamma * U * (1.01 * n as f64 + self.rounding)
    }

    /// B_i from (W_i, V_i), the row's non-zeros n and ‖x_i − μ‖² (module documentation).
    fn bound(&self, [w, v]: [f64; 2], n: usize, ni: f64) -> f64 {
        if self.relative(n, ni).is_infinite() {
            return f64::INFINITY;
        }
        // Terms per lane in a tile.
        const PER_LANE: f64 = (TILE / 16) as f64;
        let tiles = (self.width / TILE) as f64;
        let grow = 1.0 + (tiles + PER_LANE + 4.0) * 1.01 * U;
        let (w, v) = (w * grow, v * grow);
        // δ_ij = k·(‖x − μ‖² + ‖z_j − μ‖²).
        let k = self.exponent_factor(n);
        let per_w = 1.01 * k * ni + 2.01 * EXP2_32_ERR + (PER_LANE + 2.0) * U;
        (w * per_w + v * 1.01 * k) * (1.0 + 1e-3) + 1e-36 * self.abs_sum
    }
}

/// The absolute part of a kernel value's error bound ([`Screen::kernel_values`]): exponents
/// below the f32 exponential's range are clamped, which leaves k̃ within 10⁻³⁷ of k.
pub const VALUE_FLOOR: f64 = 1e-37;

/// Rows a call of [`Screen::kernel_values`] takes at most.
pub const ROWS: usize = ROW_BLOCK;

/// A thread's scratch for [`Screen::kernel_values`]: its rows reduced to the panel's features.
#[derive(Default)]
pub struct RowScratch(Rows);

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
            if fma
                && std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("avx2")
            {
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
    /// ‖x‖² (f64) and −γ·log₂e·‖x‖² (f32).
    ni: Vec<f64>,
    gni: Vec<f32>,
    /// Whether the row has every feature of the panel, its own or padded with zeros (then its
    /// offsets are the panel's features in order, the same for every such row).
    full: Vec<bool>,
    /// The row's entries before any padding (the n of its bound).
    count: Vec<usize>,
    /// A row's non-zeros in feature order, for [`centred`].
    entries: Vec<(usize, f64)>,
    /// A padded row's own entries while it is laid out again.
    own: Vec<(usize, f32)>,
}

impl Rows {
    /// The rows `rows` of `data` reduced to their entries among the panel's features. With
    /// `pad`, a row holding at least three quarters of the panel's features (and each once)
    /// takes the others as zeros and becomes full: the blocks' tiles of full rows then serve
    /// it, and its sums are the same numbers (each added term is an exact zero), its bound
    /// still counting its own entries.
    fn load(&mut self, p: &Screen, data: &Dataset, norms: &[f64], rows: &[usize], pad: bool) {
        self.ptr.clear();
        self.feat.clear();
        self.val.clear();
        self.ni.clear();
        self.gni.clear();
        self.full.clear();
        self.count.clear();
        self.ptr.push(0);
        let used = p.zt.len() / p.width;
        for &i in rows {
            let (feat, val) = (&mut self.feat, &mut self.val);
            // Whether the row's features strictly increase (always, but for a CSR row whose
            // indices repeat): then holding `used` of the panel's features means holding each
            // once, in the order every such row has.
            let increasing = match data.row(i) {
                Row::Dense(_) => true,
                Row::Sparse(ix, _) => ix.windows(2).all(|w| w[0] < w[1]),
            };
            let mut ni = norms[i];
            if p.shift.is_empty() {
                for_nonzeros(data.row(i), |f, v| {
                    if let Some(&r) = p.fmap.get(f)
                        && r != u32::MAX
                    {
                        feat.push(r as usize * p.width);
                        val.push(v as f32);
                    }
                });
            } else {
                ni += centred(p, data.row(i), increasing, &mut self.entries, feat, val);
                // Rounding may leave it a hair below 0; a NaN (a non-finite feature) stays,
                // and gives the row no bound.
                if ni < 0.0 {
                    ni = 0.0;
                }
            }
            let start = self.ptr[self.ptr.len() - 1];
            let count = self.feat.len() - start;
            let mut full = increasing && count == used;
            if pad && increasing && !full && 4 * count >= 3 * used {
                self.pad_row(p, start);
                full = true;
            }
            self.ptr.push(self.feat.len());
            self.full.push(full);
            self.count.push(count);
            self.ni.push(ni);
            self.gni
                .push((-p.gamma * std::f64::consts::LOG2_E * ni) as f32);
        }
    }

    /// The entries of row k before any padding.
    fn nnz(&self, k: usize) -> usize {
        self.count[k]
    }

    /// Lays the row whose entries start at `start` (the last one loaded) out again over every
    /// feature of the panel, in the panel's order (which its entries follow), with zeros where
    /// it holds none.
    fn pad_row(&mut self, p: &Screen, start: usize) {
        self.own.clear();
        self.own.extend(
            self.feat[start..]
                .iter()
                .copied()
                .zip(self.val[start..].iter().copied()),
        );
        self.feat.truncate(start);
        self.val.truncate(start);
        let mut own = self.own.iter().peekable();
        for &off in &p.offsets {
            self.feat.push(off);
            self.val
                .push(own.next_if(|&&(o, _)| o == off).map_or(0.0, |&(_, v)| v));
        }
        debug_assert!(
            own.next().is_none(),
            "a row's entries follow the panel's order"
        );
    }
}

/// The centre of a panel's columns where it tightens the screen's bound, and every column's
/// ‖z − μ‖²: μ_f is the columns' mean of feature f (rounded to f32) for the features at least
/// half of the columns hold, when measuring from it shrinks the bound's factor
/// (1.01·n + 8.5)·(‖x − μ‖² + max_j ‖z_j − μ‖²) to at most 0.8 of (1.01·n + 7)·(‖x‖² + max_j
/// ‖z_j‖²) with the columns standing for the rows (their mean n and squared norm), and adds
/// at most a quarter to the entries a row holds (each a multiply-add per column). Otherwise
/// no centre, and the norms given.
fn centre_of(
    data: &Dataset,
    cols: &[usize],
    fmap: &[u32],
    width: usize,
    norms: &[f64],
) -> (Vec<(usize, usize, f64)>, Vec<f64>) {
    let none = || (Vec::new(), norms.to_vec());
    let nc = cols.len();
    if nc < 2 {
        return none();
    }
    let (mut count, mut sum) = (vec![0usize; fmap.len()], vec![0.0f64; fmap.len()]);
    let mut entries = 0usize;
    for &j in cols {
        for_nonzeros(data.row(j), |f, v| {
            count[f] += 1;
            sum[f] += v;
            entries += 1;
        });
    }
    let shift: Vec<(usize, usize, f64)> = (0..fmap.len())
        .filter(|&f| fmap[f] != u32::MAX && 2 * count[f] >= nc)
        .map(|f| {
            (
                f,
                fmap[f] as usize * width,
                (sum[f] / nc as f64) as f32 as f64,
            )
        })
        .filter(|s| s.2 != 0.0 && s.2.is_finite())
        .collect();
    if shift.is_empty() {
        return none();
    }
    // ‖z − μ‖² = ‖z‖² + Σ_f μ_f (μ_f − 2 z_f) over the centred features (whose μ_f is not 0).
    let mu_sq: f64 = shift.iter().map(|s| s.2 * s.2).sum();
    let mut mu = vec![0.0f64; fmap.len()];
    for s in &shift {
        mu[s.0] = s.2;
    }
    let cnorms: Vec<f64> = cols
        .par_iter()
        .zip(norms)
        .map(|(&j, &n)| {
            let mut d = mu_sq;
            for_nonzeros(data.row(j), |f, v| {
                if mu[f] != 0.0 {
                    d -= 2.0 * mu[f] * v;
                }
            });
            if n + d < 0.0 { 0.0 } else { n + d }
        })
        .collect();
    let n0 = entries as f64 / nc as f64;
    let added: f64 = shift
        .iter()
        .map(|s| 1.0 - count[s.0] as f64 / nc as f64)
        .sum();
    let n1 = n0 + added;
    let size =
        |v: &[f64]| v.iter().copied().fold(0.0, f64::max) + v.iter().sum::<f64>() / nc as f64;
    let before = (1.01 * n0 + 7.0) * size(norms);
    let after = (1.01 * n1 + 8.5) * size(&cnorms);
    if after <= 0.8 * before && n1 <= 1.25 * n0 {
        (shift, cnorms)
    } else {
        none()
    }
}

/// The row's entries measured from the panel's centre into `feat`, `val` (panel offsets and
/// values): every centred feature (x_f − μ_f, rounded to f32 from f64) and the row's other
/// non-zeros among the panel's features, in feature order (a CSR row whose indices repeat has
/// its centred features' values summed first, as its dot products sum them); returns
/// ‖x − μ‖² − ‖x‖² = Σ_f μ_f (μ_f − 2 x_f) over the centred features.
fn centred(
    p: &Screen,
    row: Row<'_>,
    increasing: bool,
    entries: &mut Vec<(usize, f64)>,
    feat: &mut Vec<usize>,
    val: &mut Vec<f32>,
) -> f64 {
    entries.clear();
    for_nonzeros(row, |f, v| entries.push((f, v)));
    if !increasing {
        entries.sort_by_key(|e| e.0);
    }
    let mut d = 0.0;
    let mut next = 0;
    let sh = &p.shift;
    let mut k = 0;
    while k < entries.len() {
        let (f, mut v) = entries[k];
        k += 1;
        while next < sh.len() && sh[next].0 < f {
            let (_, off, mu) = sh[next];
            feat.push(off);
            val.push((-mu) as f32);
            d += mu * mu;
            next += 1;
        }
        if next < sh.len() && sh[next].0 == f {
            while k < entries.len() && entries[k].0 == f {
                v += entries[k].1;
                k += 1;
            }
            let (_, off, mu) = sh[next];
            feat.push(off);
            val.push((v - mu) as f32);
            d += mu * (mu - 2.0 * v);
            next += 1;
        } else if let Some(&r) = p.fmap.get(f)
            && r != u32::MAX
        {
            feat.push(r as usize * p.width);
            val.push(v as f32);
        }
    }
    for &(_, off, mu) in &sh[next..] {
        feat.push(off);
        val.push((-mu) as f32);
        d += mu * mu;
    }
    d
}

/// The rows' S̃ into `sum` and (W, V) into `wsum` (the caller turns them into B).
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ, AVX2 and FMA (the caller's dispatch checked it); `s` was
/// loaded from `p`, so every row's indices lie within the screen's panel, and `sum` and `wsum`
/// hold one entry per row of `s`; `vals`, when given, holds `width` entries per row of `s`
/// (the values are written there).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn block_avx512(
    p: &Screen,
    s: &Rows,
    sum: &mut [f64],
    wsum: &mut [[f64; 2]],
    vals: Option<&mut [f32]>,
) {
    use std::arch::x86_64::*;
    const V: usize = TILE / 16;
    sum.iter_mut().for_each(|o| *o = 0.0);
    wsum.iter_mut().for_each(|o| *o = [0.0; 2]);
    let rows = sum.len();
    let values = vals.map(|v| {
        assert_eq!(v.len(), rows * p.width, "one row of values per row");
        v.as_mut_ptr()
    });
    if let Some(&last) = s.feat[..s.ptr[rows]].iter().max() {
        assert!(last + p.width <= p.zt.len(), "panel offsets out of range");
    }
    // SAFETY: every zt load reads zt[off + t .. off + t + TILE] with off ≤ last and
    // t + TILE ≤ width (checked above); gnj, coef and abs_coef have `width` entries; a value
    // store writes values[r · width + t .. + TILE] with r < rows (checked above).
    unsafe {
        let zero = _mm512_setzero_ps();
        let zt = p.zt.as_ptr();
        // Per row: S̃ in two f64 vectors (one per half of the lanes), W and V in one f32 vector
        // each.
        let mut sacc = [[_mm512_setzero_pd(); 2]; ROW_BLOCK];
        let mut wacc = [[zero; 2]; ROW_BLOCK];
        assert!(rows <= ROW_BLOCK);
        for t in (0..p.width).step_by(TILE) {
            let (gnj, cf, af) = (
                p.gnj.as_ptr().add(t),
                p.coef.as_ptr().add(t),
                p.abs_coef.as_ptr().add(t),
            );
            let base = zt.add(t);
            let sign = p.tile_sign[t / TILE];
            let mixed = sign == 0;
            let neg = _mm512_set1_ps(f32::from(sign));
            // log₂e·(−γ‖x − z‖²) = x·z' + (−γ·log₂e·‖x‖² − γ·log₂e·‖z‖²): the exponent of
            // row r's kernel value vector (columns t + 16q ..) from its dot products.
            let arg = |r: usize, q: usize, dot: __m512| -> __m512 {
                let g = _mm512_add_ps(_mm512_set1_ps(s.gni[r]), _mm512_loadu_ps(gnj.add(16 * q)));
                _mm512_add_ps(dot, g)
            };
            // That vector's exponential `e`: its store, and the row's S̃ and W vectors of the
            // tile.
            let entry = |r: usize, q: usize, e: __m512, sw: &mut (__m512, __m512)| {
                if let Some(out) = values {
                    _mm512_storeu_ps(out.add(r * p.width + t + 16 * q), e);
                }
                if mixed {
                    sw.0 = _mm512_fmadd_ps(_mm512_loadu_ps(cf.add(16 * q)), e, sw.0);
                }
                sw.1 = _mm512_fmadd_ps(_mm512_loadu_ps(af.add(16 * q)), e, sw.1);
            };
            // A row's tile sums into its f64 and W accumulators.
            let norm = _mm512_set1_ps(p.tile_norm[t / TILE]);
            let fold =
                |sacc: &mut [__m512d; 2], wacc: &mut [__m512; 2], (sv, wv): (__m512, __m512)| {
                    // A tile of one sign: S̃ = ±W there.
                    let sv = if mixed { sv } else { _mm512_mul_ps(neg, wv) };
                    let lo_half = _mm512_cvtps_pd(_mm512_castps512_ps256(sv));
                    let hi_half = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
                        _mm512_castps_pd(sv),
                    )));
                    sacc[0] = _mm512_add_pd(sacc[0], lo_half);
                    sacc[1] = _mm512_add_pd(sacc[1], hi_half);
                    wacc[0] = _mm512_add_ps(wacc[0], wv);
                    wacc[1] = _mm512_fmadd_ps(wv, norm, wacc[1]);
                };
            let mut r = 0;
            while r < rows {
                if r + FULL_ROWS <= rows && s.full[r..r + FULL_ROWS].iter().all(|&f| f) {
                    // Rows with every feature of the panel (the same offsets): a tile of
                    // FULL_ROWS rows by 32 columns shares each load of the panel, and every
                    // lane sums the same terms in the same order as the row-at-a-time path.
                    let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                    let vals: [*const f32; FULL_ROWS] =
                        std::array::from_fn(|k| s.val.as_ptr().add(s.ptr[r + k]));
                    let mut sw = [(zero, zero); FULL_ROWS];
                    for q in (0..V).step_by(2) {
                        let mut acc = [[zero; 2]; FULL_ROWS];
                        for (n, &off) in s.feat[a..b].iter().enumerate() {
                            let z = base.add(off + 16 * q);
                            let (z0, z1) = (_mm512_loadu_ps(z), _mm512_loadu_ps(z.add(16)));
                            for (ak, vk) in acc.iter_mut().zip(&vals) {
                                let v = _mm512_set1_ps(*vk.add(n));
                                ak[0] = _mm512_fmadd_ps(v, z0, ak[0]);
                                ak[1] = _mm512_fmadd_ps(v, z1, ak[1]);
                            }
                        }
                        // Eight vectors' exponentials at a time (four rows' two).
                        const { assert!(FULL_ROWS.is_multiple_of(4)) };
                        for k0 in (0..FULL_ROWS).step_by(4) {
                            let x: [__m512; 8] = std::array::from_fn(|v| {
                                arg(r + k0 + v / 2, q + v % 2, acc[k0 + v / 2][v % 2])
                            });
                            let e = exp2_x(x);
                            for k in 0..4 {
                                entry(r + k0 + k, q, e[2 * k], &mut sw[k0 + k]);
                                entry(r + k0 + k, q + 1, e[2 * k + 1], &mut sw[k0 + k]);
                            }
                        }
                    }
                    for (k, swk) in sw.into_iter().enumerate() {
                        fold(&mut sacc[r + k], &mut wacc[r + k], swk);
                    }
                    r += FULL_ROWS;
                    continue;
                }
                let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                let mut acc = [zero; V];
                for (&off, &v) in s.feat[a..b].iter().zip(&s.val[a..b]) {
                    let z = base.add(off);
                    let v = _mm512_set1_ps(v);
                    for (q, aq) in acc.iter_mut().enumerate() {
                        *aq = _mm512_fmadd_ps(v, _mm512_loadu_ps(z.add(16 * q)), *aq);
                    }
                }
                let mut sw = (zero, zero);
                let e = exp2_x::<V>(std::array::from_fn(|q| arg(r, q, acc[q])));
                for (q, &e) in e.iter().enumerate() {
                    entry(r, q, e, &mut sw);
                }
                fold(&mut sacc[r], &mut wacc[r], sw);
                r += 1;
            }
        }
        for r in 0..rows {
            sum[r] = _mm512_reduce_add_pd(_mm512_add_pd(sacc[r][0], sacc[r][1]));
            wsum[r] = wacc[r].map(|w| _mm512_reduce_add_ps(w) as f64);
        }
    }
}

/// [`block_avx512`] in AVX2 (the values written to `vals` as there): each 16-lane vector of that copy is two 8-lane halves here, the
/// low half from the even groups of eight columns and the high half from the odd ones (each
/// half in a pass of its own over the row's non-zeros, so that its eight accumulators stay in
/// registers), so every lane sums the same columns in the same order and the bound's rounding
/// count is unchanged.
///
/// # Safety
/// The CPU has AVX2 and FMA (the caller's dispatch checked it); `s`, `sum` and `wsum` as for
/// [`block_avx512`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2(
    p: &Screen,
    s: &Rows,
    sum: &mut [f64],
    wsum: &mut [[f64; 2]],
    vals: Option<&mut [f32]>,
) {
    use super::simd::avx2::hsum_pd;
    use std::arch::x86_64::*;
    const V: usize = TILE / 16;
    sum.iter_mut().for_each(|o| *o = 0.0);
    wsum.iter_mut().for_each(|o| *o = [0.0; 2]);
    let rows = sum.len();
    let values = vals.map(|v| {
        assert_eq!(v.len(), rows * p.width, "one row of values per row");
        v.as_mut_ptr()
    });
    if let Some(&last) = s.feat[..s.ptr[rows]].iter().max() {
        assert!(last + p.width <= p.zt.len(), "panel offsets out of range");
    }
    // SAFETY: as in block_avx512.
    unsafe {
        let zero = _mm256_setzero_ps();
        let shift = _mm256_set1_ps(SHIFT32);
        let exp2 = |x: __m256| -> __m256 {
            let x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP2_32_LO)), zero);
            let t = _mm256_add_ps(x, shift);
            let k = _mm256_sub_ps(t, shift);
            let f = _mm256_sub_ps(x, k);
            let mut q = _mm256_set1_ps(POLY2_32[0]);
            for &c in &POLY2_32[1..] {
                q = _mm256_fmadd_ps(q, f, _mm256_set1_ps(c));
            }
            // k is an integer held in t's low mantissa bits: added to q's exponent.
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
        // Per row: S̃ in four f64 vectors (the sixteen lanes), W and V in two f32 vectors each.
        let mut sacc = [[_mm256_setzero_pd(); 4]; ROW_BLOCK];
        let mut wacc = [[[zero; 2]; 2]; ROW_BLOCK];
        assert!(rows <= ROW_BLOCK);
        for t in (0..p.width).step_by(TILE) {
            let (gnj, cf, af) = (
                p.gnj.as_ptr().add(t),
                p.coef.as_ptr().add(t),
                p.abs_coef.as_ptr().add(t),
            );
            let base = zt.add(t);
            let sign = p.tile_sign[t / TILE];
            // A row's sixteen-lane sums of the tile (f32, as the other copy's vectors) into
            // its f64 and W accumulators.
            let norm = _mm256_set1_ps(p.tile_norm[t / TILE]);
            let fold = |sacc: &mut [__m256d; 4], wacc: &mut [[__m256; 2]; 2], h: usize, sv, wv| {
                let sv = match sign {
                    0 => sv,
                    1 => wv,
                    _ => _mm256_sub_ps(zero, wv),
                };
                let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(sv));
                let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(sv));
                sacc[2 * h] = _mm256_add_pd(sacc[2 * h], lo);
                sacc[2 * h + 1] = _mm256_add_pd(sacc[2 * h + 1], hi);
                wacc[0][h] = _mm256_add_ps(wacc[0][h], wv);
                wacc[1][h] = _mm256_fmadd_ps(wv, norm, wacc[1][h]);
            };
            let mut r = 0;
            while r < rows {
                if r + 4 <= rows && s.full[r..r + 4].iter().all(|&f| f) {
                    // Four rows with every feature of the panel (the same offsets): a tile of
                    // four rows by sixteen columns shares each load of the panel, and every
                    // lane sums the same terms in the same order as the row-at-a-time path.
                    let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                    let vals: [*const f32; 4] =
                        std::array::from_fn(|k| s.val.as_ptr().add(s.ptr[r + k]));
                    let gni: [__m256; 4] = std::array::from_fn(|k| _mm256_set1_ps(s.gni[r + k]));
                    let (mut sv, mut wv) = ([[zero; 2]; 4], [[zero; 2]; 4]);
                    for q in 0..V {
                        let mut acc = [[zero; 2]; 4];
                        for (n, &off) in s.feat[a..b].iter().enumerate() {
                            let z = base.add(off + 16 * q);
                            let z0 = _mm256_loadu_ps(z);
                            let z1 = _mm256_loadu_ps(z.add(8));
                            for (ak, vk) in acc.iter_mut().zip(&vals) {
                                let v = _mm256_broadcast_ss(&*vk.add(n));
                                ak[0] = _mm256_fmadd_ps(v, z0, ak[0]);
                                ak[1] = _mm256_fmadd_ps(v, z1, ak[1]);
                            }
                        }
                        for k in 0..4 {
                            for h in 0..2 {
                                let o = 16 * q + 8 * h;
                                let arg = _mm256_add_ps(gni[k], _mm256_loadu_ps(gnj.add(o)));
                                let e = exp2(_mm256_add_ps(acc[k][h], arg));
                                if let Some(out) = values {
                                    _mm256_storeu_ps(out.add((r + k) * p.width + t + o), e);
                                }
                                if sign == 0 {
                                    sv[k][h] =
                                        _mm256_fmadd_ps(_mm256_loadu_ps(cf.add(o)), e, sv[k][h]);
                                }
                                wv[k][h] = _mm256_fmadd_ps(_mm256_loadu_ps(af.add(o)), e, wv[k][h]);
                            }
                        }
                    }
                    for k in 0..4 {
                        for h in 0..2 {
                            fold(&mut sacc[r + k], &mut wacc[r + k], h, sv[k][h], wv[k][h]);
                        }
                    }
                    r += 4;
                    continue;
                }
                let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                let gni = _mm256_set1_ps(s.gni[r]);
                for h in 0..2 {
                    let mut acc = [zero; V];
                    for (&off, &v) in s.feat[a..b].iter().zip(&s.val[a..b]) {
                        let z = base.add(off + 8 * h);
                        let v = _mm256_set1_ps(v);
                        for (q, aq) in acc.iter_mut().enumerate() {
                            *aq = _mm256_fmadd_ps(v, _mm256_loadu_ps(z.add(16 * q)), *aq);
                        }
                    }
                    let (mut sv, mut wv) = (zero, zero);
                    for (q, aq) in acc.iter().enumerate() {
                        let o = 16 * q + 8 * h;
                        let arg = _mm256_add_ps(gni, _mm256_loadu_ps(gnj.add(o)));
                        let e = exp2(_mm256_add_ps(*aq, arg));
                        if let Some(out) = values {
                            _mm256_storeu_ps(out.add(r * p.width + t + o), e);
                        }
                        if sign == 0 {
                            sv = _mm256_fmadd_ps(_mm256_loadu_ps(cf.add(o)), e, sv);
                        }
                        wv = _mm256_fmadd_ps(_mm256_loadu_ps(af.add(o)), e, wv);
                    }
                    fold(&mut sacc[r], &mut wacc[r], h, sv, wv);
                }
                r += 1;
            }
        }
        for r in 0..rows {
            let [a, b, c, d] = sacc[r];
            sum[r] = hsum_pd(_mm256_add_pd(_mm256_add_pd(a, c), _mm256_add_pd(b, d)));
            // Sixteen lanes to one in four rounded steps, as _mm512_reduce_add_ps.
            wsum[r] = wacc[r].map(|[a, b]| {
                let w = _mm256_add_ps(a, b);
                let w = _mm_add_ps(_mm256_castps256_ps128(w), _mm256_extractf128_ps::<1>(w));
                let w = _mm_add_ps(w, _mm_movehl_ps(w, w));
                let w = _mm_add_ss(w, _mm_movehdup_ps(w));
                _mm_cvtss_f32(w) as f64
            });
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
            let m = 700;
            let (ds, norms) = random_rows(&mut r, (m, 30), (!dense).then_some(0.2));
            let (cols, coef, nj) = weighted_columns(&mut r, &norms, 3, 0.4);
            let mut sc = Screen::new(gamma, &ds, &cols, &coef, &nj, 1 << 30).expect("a vector CPU");
            let all: Vec<usize> = (0..m).collect();
            let mut sums = Vec::new();
            for isa in copies() {
                sc.isa = isa;
                let (mut s, mut b) = (vec![0.0; m], vec![0.0; m]);
                sc.row_sums(&ds, &norms, &all, &mut s, &mut b);
                for i in 0..m {
                    let exact = exact_sum(&ds, &norms, gamma, &cols, &coef, i);
                    assert!(
                        (s[i] - exact).abs() <= b[i],
                        "{isa:?} γ {gamma} row {i}: {} vs {exact}, bound {}",
                        s[i],
                        b[i]
                    );
                    assert!(b[i] < 1e-3, "bound {} too loose to be of use", b[i]);
                }
                // Rows alone take the row-at-a-time path, four full rows a tile of their
                // own: the same sums bit for bit.
                for i in (0..m).step_by(7) {
                    let (mut s1, mut b1) = ([0.0], [0.0]);
                    sc.row_sums(&ds, &norms, &[i], &mut s1, &mut b1);
                    assert_eq!(s1[0].to_bits(), s[i].to_bits(), "{isa:?} row {i} alone");
                    assert_eq!(b1[0].to_bits(), b[i].to_bits(), "{isa:?} row {i} alone");
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

    /// Every kernel value of [`Screen::kernel_values`] is within ε·k̃ + VALUE_FLOOR of the f64
    /// kernel, ε below 10⁻³; the values are the same bit for
    /// bit whichever rows share a call (rows of every feature go eight to a tile on AVX-512),
    /// and the same in every copy of the block.
    #[test]
    fn kernel_values_are_within_their_bounds() {
        if Isa::detect().is_none() {
            eprintln!("SKIPPED: neither AVX-512 nor AVX2 on this CPU (the screen is not used)");
            return;
        }
        let mut r = SplitMix64::new(5);
        for (dense, gamma) in [(true, 0.4), (false, 0.05), (true, 3.0)] {
            let m = 300;
            let (ds, norms) = random_rows(&mut r, (m, 40), (!dense).then_some(0.3));
            let cols: Vec<usize> = (0..m).step_by(2).collect();
            let nj: Vec<f64> = cols.iter().map(|&j| norms[j]).collect();
            let mut sc = Screen::values(gamma, &ds, &cols, &nj, 1 << 30).expect("a vector CPU");
            let w = sc.stride();
            assert!(w >= cols.len());
            let rows: Vec<usize> = (0..ROWS.min(m)).collect();
            let mut outs = Vec::new();
            for isa in copies() {
                sc.isa = isa;
                let mut scratch = RowScratch::default();
                let (mut v, mut e) = (vec![0.0f32; rows.len() * w], vec![0.0; rows.len()]);
                sc.kernel_values(&ds, &norms, &rows, &mut scratch, &mut v, &mut e);
                for (k, &i) in rows.iter().enumerate() {
                    assert!(e[k] < 1e-3, "{isa:?} γ {gamma}: ε {} of no use", e[k]);
                    for (c, &j) in cols.iter().enumerate() {
                        let d2 = (norms[i] + norms[j] - 2.0 * ds.row(i).dot(&ds.row(j))).max(0.0);
                        let exact = (-gamma * d2).exp();
                        let got = f64::from(v[k * w + c]);
                        assert!(
                            (got - exact).abs() <= e[k] * got + VALUE_FLOOR,
                            "{isa:?} γ {gamma} row {i} column {j}: {got} vs {exact}, ε {}",
                            e[k]
                        );
                    }
                }
                // A row alone: the same values, bit for bit.
                for k in (0..rows.len()).step_by(9) {
                    let (mut v1, mut e1) = (vec![0.0f32; w], [0.0]);
                    sc.kernel_values(&ds, &norms, &rows[k..k + 1], &mut scratch, &mut v1, &mut e1);
                    let (a, b) = (&v1[..cols.len()], &v[k * w..k * w + cols.len()]);
                    assert!(
                        a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
                        "{isa:?} row {k}"
                    );
                    assert_eq!(e1[0], e[k]);
                }
                outs.push(v);
            }
            for o in &outs[1..] {
                let same = (0..rows.len()).all(|k| {
                    let (a, b) = (
                        &o[k * w..k * w + cols.len()],
                        &outs[0][k * w..k * w + cols.len()],
                    );
                    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
                });
                assert!(same, "the copies' values differ");
            }
        }
    }

    /// Rows holding most but not all of the panel's features are padded with zeros to full
    /// rows: their sums, bounds and kernel values are those of the rows laid out with their
    /// own entries alone, bit for bit, in every copy of the block, on plain and centred panels.
    #[test]
    fn rows_padded_to_full_take_their_own_numbers() {
        if Isa::detect().is_none() {
            eprintln!("SKIPPED: neither AVX-512 nor AVX2 on this CPU (the screen is not used)");
            return;
        }
        let mut r = SplitMix64::new(17);
        let sets = [
            random_rows(&mut r, (500, 30), Some(0.9)),
            offset_rows(&mut r, 500, (24, 6)),
        ];
        for (ds, norms) in &sets {
            let m = ds.len();
            let (cols, coef, nj) = weighted_columns(&mut r, norms, 3, 0.4);
            let all: Vec<usize> = (0..m).collect();
            for gamma in [0.05, 0.5] {
                let mut sc = Screen::new(gamma, ds, &cols, &coef, &nj, 1 << 30).unwrap();
                let used = sc.offsets.len();
                let mut padded = Rows::default();
                padded.load(&sc, ds, norms, &all, true);
                let n_padded = (0..m)
                    .filter(|&k| padded.full[k] && padded.count[k] < used)
                    .count();
                assert!(n_padded > m / 2, "{n_padded} of {m} rows padded");
                let mut values = Screen::values(gamma, ds, &cols, &nj, 1 << 30).unwrap();
                let w = values.stride();
                for isa in copies() {
                    sc.isa = isa;
                    let (mut s, mut b) = (vec![0.0; m], vec![0.0; m]);
                    sc.row_sums(ds, norms, &all, &mut s, &mut b);
                    let mut own = Rows::default();
                    for (c, chunk) in all.chunks(ROWS).enumerate() {
                        own.load(&sc, ds, norms, chunk, false);
                        let n = chunk.len();
                        let (mut s0, mut w0) = (vec![0.0; n], vec![[0.0; 2]; n]);
                        sc.block(&own, &mut s0, &mut w0, None);
                        for k in 0..n {
                            let i = c * ROWS + k;
                            let b0 = sc.bound(w0[k], own.nnz(k), own.ni[k]);
                            assert_eq!(s[i].to_bits(), s0[k].to_bits(), "{isa:?} row {i}");
                            assert_eq!(b[i].to_bits(), b0.to_bits(), "{isa:?} row {i}");
                        }
                    }
                    values.isa = isa;
                    let rows = &all[..ROWS];
                    let mut scratch = RowScratch::default();
                    let (mut v, mut e) = (vec![0.0f32; ROWS * w], vec![0.0; ROWS]);
                    values.kernel_values(ds, norms, rows, &mut scratch, &mut v, &mut e);
                    own.load(&values, ds, norms, rows, false);
                    let (mut v0, mut s0, mut w0) =
                        (v.clone(), vec![0.0; ROWS], vec![[0.0; 2]; ROWS]);
                    v0.fill(f32::NAN);
                    values.block(&own, &mut s0, &mut w0, Some(&mut v0));
                    for k in 0..ROWS {
                        let (a, b) = (
                            &v[k * w..k * w + cols.len()],
                            &v0[k * w..k * w + cols.len()],
                        );
                        assert!(
                            a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
                            "{isa:?} row {k}'s values"
                        );
                        assert_eq!(e[k], values.relative(own.nnz(k), own.ni[k]));
                    }
                }
            }
        }
    }

    /// Columns whose norms differ by a factor of a hundred: every sum stays within its bound,
    /// which takes each term at its own tile's largest norm, and that bound lies well below the
    /// one taking the panel's largest norm for every term (V_i = W_i·max_j ‖z_j − μ‖²); the
    /// columns run by sign, then by norm.
    #[test]
    fn tile_norms_tighten_the_bound() {
        if Isa::detect().is_none() {
            eprintln!("SKIPPED: neither AVX-512 nor AVX2 on this CPU (the screen is not used)");
            return;
        }
        let mut r = SplitMix64::new(43);
        let (m, d) = (1200, 6);
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for i in 0..m {
            // Rows on five scales, 0.1 to 1: squared norms 0.01 to 1 of each other.
            let scale = 0.1 + 0.9 * (i % 5) as f64 / 4.0;
            for f in 0..d {
                ix.push(f as u32);
                vs.push((scale * (2.0 * r.next_f64() - 1.0)) as f32);
            }
            ip.push(ix.len());
        }
        let ds = Dataset::from_csr(d, ip, ix, vs, vec![1.0; m]);
        let norms: Vec<f64> = (0..m).map(|i| ds.row(i).dot(&ds.row(i))).collect();
        let (cols, coef, nj) = weighted_columns(&mut r, &norms, 2, 0.3);
        let all: Vec<usize> = (0..m).collect();
        for gamma in [0.5, 3.0] {
            let mut sc = Screen::new(gamma, &ds, &cols, &coef, &nj, 1 << 30).unwrap();
            assert!(sc.shift.is_empty(), "no feature is far from zero");
            let run: Vec<(bool, f64)> = sc.order.iter().map(|&o| (coef[o] < 0.0, nj[o])).collect();
            // Non-negative weights first, each sign by increasing norm.
            assert!(
                run.windows(2).all(|w| w[0] <= w[1]),
                "columns by sign, then norm"
            );
            for isa in copies() {
                sc.isa = isa;
                let (mut s, mut b) = (vec![0.0; m], vec![0.0; m]);
                sc.row_sums(&ds, &norms, &all, &mut s, &mut b);
                let mut rows = Rows::default();
                let mut ratio = 0.0;
                for (c, chunk) in all.chunks(ROWS).enumerate() {
                    rows.load(&sc, &ds, &norms, chunk, true);
                    let n = chunk.len();
                    let (mut s0, mut w0) = (vec![0.0; n], vec![[0.0; 2]; n]);
                    sc.block(&rows, &mut s0, &mut w0, None);
                    for (k, &[w, _]) in w0.iter().enumerate() {
                        let i = c * ROWS + k;
                        let exact = exact_sum(&ds, &norms, gamma, &cols, &coef, i);
                        assert!((s[i] - exact).abs() <= b[i], "{isa:?} γ {gamma} row {i}");
                        let widest = sc.bound([w, w * sc.nz_max], rows.nnz(k), rows.ni[k]);
                        assert!(b[i] <= widest, "{isa:?} γ {gamma} row {i}");
                        ratio += b[i] / widest / m as f64;
                    }
                }
                assert!(ratio < 0.8, "{isa:?} γ {gamma}: mean ratio {ratio}");
            }
        }
    }

    /// A panel over features far from zero (`dense` in [3, 4] on every row, then `sparse` in
    /// [−1, 1] on about 15 % of them) is centred, and its bound is within every sum's error
    /// and much tighter than the bound of the same panel uncentred; so are the kernel values'.
    #[test]
    fn a_centred_panel_bounds_its_sums_more_tightly() {
        if Isa::detect().is_none() {
            eprintln!("SKIPPED: neither AVX-512 nor AVX2 on this CPU (the screen is not used)");
            return;
        }
        let mut r = SplitMix64::new(31);
        let (ds, norms) = offset_rows(&mut r, 600, (12, 20));
        let m = ds.len();
        let (cols, coef, nj) = weighted_columns(&mut r, &norms, 2, 0.45);
        let all: Vec<usize> = (0..m).collect();
        for gamma in [0.02, 0.3] {
            let mut centred = Screen::new(gamma, &ds, &cols, &coef, &nj, 1 << 30).unwrap();
            let mut plain =
                Screen::build(gamma, &ds, &cols, &coef, &nj, 1 << 30, false, true).unwrap();
            assert_eq!(centred.shift.len(), 12, "the dense features are centred");
            assert!(plain.shift.is_empty());
            for isa in copies() {
                (centred.isa, plain.isa) = (isa, isa);
                let (mut s, mut b) = (vec![0.0; m], vec![0.0; m]);
                let (mut s0, mut b0) = (vec![0.0; m], vec![0.0; m]);
                centred.row_sums(&ds, &norms, &all, &mut s, &mut b);
                plain.row_sums(&ds, &norms, &all, &mut s0, &mut b0);
                for i in 0..m {
                    let exact = exact_sum(&ds, &norms, gamma, &cols, &coef, i);
                    assert!(
                        (s[i] - exact).abs() <= b[i],
                        "{isa:?} γ {gamma} row {i}: {} vs {exact}, bound {}",
                        s[i],
                        b[i]
                    );
                    assert!((s0[i] - exact).abs() <= b0[i]);
                    assert!(
                        b[i] <= 0.2 * b0[i],
                        "{isa:?} γ {gamma} row {i}: centred bound {} against {}",
                        b[i],
                        b0[i]
                    );
                }
            }
            // A row with a NaN feature has no bound (the certification computes it in f64).
            let mut nan_rows = ds.clone();
            match &mut nan_rows.features {
                crate::data::Features::Sparse { values, .. }
                | crate::data::Features::Dense { values, .. } => values[0] = f32::NAN,
            }
            let nan_norms: Vec<f64> = (0..m)
                .map(|i| nan_rows.row(i).dot(&nan_rows.row(i)))
                .collect();
            let (mut s1, mut b1) = ([0.0], [0.0]);
            centred.row_sums(&nan_rows, &nan_norms, &[0], &mut s1, &mut b1);
            assert_eq!(
                b1[0],
                f64::INFINITY,
                "γ {gamma}: a NaN row is bounded by {}",
                b1[0]
            );
            let values = Screen::values(gamma, &ds, &cols, &nj, 1 << 30).unwrap();
            assert!(!values.shift.is_empty());
            let w = values.stride();
            let rows: Vec<usize> = (0..ROWS).collect();
            let (mut v, mut e) = (vec![0.0f32; rows.len() * w], vec![0.0; rows.len()]);
            let mut scratch = RowScratch::default();
            values.kernel_values(&ds, &norms, &rows, &mut scratch, &mut v, &mut e);
            for (k, &i) in rows.iter().enumerate() {
                for (c, &j) in cols.iter().enumerate() {
                    let exact = exact_sum(&ds, &norms, gamma, &[j], &[1.0], i);
                    let got = f64::from(v[k * w + c]);
                    assert!(
                        (got - exact).abs() <= e[k] * got + VALUE_FLOOR,
                        "γ {gamma} row {i} column {j}: {got} vs {exact}, ε {}",
                        e[k]
                    );
                }
            }
        }
    }

    /// A CSR row whose indices repeat, and one that lacks some centred features, are measured
    /// from the centre as their dot products take them: a repeated centred feature once, with
    /// its values summed; an absent one as −μ_f.
    #[test]
    fn centred_entries_of_irregular_rows() {
        if Isa::detect().is_none() {
            eprintln!("SKIPPED: neither AVX-512 nor AVX2 on this CPU (the screen is not used)");
            return;
        }
        // Columns: feature 0 on every one (centred, μ = 3.5), feature 2 on a few.
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for k in 0..8 {
            ix.push(0);
            vs.push(if k % 2 == 0 { 3.0 } else { 4.0 });
            if k == 0 {
                ix.push(2);
                vs.push(1.0);
            }
            ip.push(ix.len());
        }
        // Row 8: feature 2 then feature 0 twice (1 + 2 = 3 in all); row 9: feature 2 only.
        ix.extend([2, 0, 0]);
        vs.extend([0.5, 1.0, 2.0]);
        ip.push(ix.len());
        ix.push(2);
        vs.push(0.25);
        ip.push(ix.len());
        let ds = Dataset::from_csr(3, ip, ix, vs, vec![1.0; 10]);
        let cols: Vec<usize> = (0..8).collect();
        let norms: Vec<f64> = (0..8)
            .map(|j| if j == 0 { 10.0 } else { [9.0, 16.0][j % 2] })
            .collect();
        let sc = Screen::new(0.1, &ds, &cols, &[1.0; 8], &norms, 1 << 20).unwrap();
        assert_eq!(sc.shift.len(), 1);
        assert_eq!(sc.shift[0].2, 3.5);
        let (mut ent, mut feat, mut val) = (Vec::new(), Vec::new(), Vec::new());
        let d = centred(&sc, ds.row(8), false, &mut ent, &mut feat, &mut val);
        assert_eq!(
            val,
            [-0.5, 0.5],
            "feature 0 once, summed: 3 − 3.5; then feature 2"
        );
        assert_eq!(feat, [sc.shift[0].1, sc.fmap[2] as usize * sc.width]);
        assert_eq!(d, 3.5 * (3.5 - 6.0));
        let (mut feat, mut val) = (Vec::new(), Vec::new());
        let d = centred(&sc, ds.row(9), true, &mut ent, &mut feat, &mut val);
        assert_eq!(val, [-3.5, 0.25], "the absent centred feature first, as −μ");
        assert_eq!(d, 3.5 * 3.5);
    }

    /// Σ_j c_j exp(−γ‖x_i − z_j‖²) in f64, the distance as the f64 paths form it.
    fn exact_sum(
        ds: &Dataset,
        norms: &[f64],
        gamma: f64,
        cols: &[usize],
        coef: &[f64],
        i: usize,
    ) -> f64 {
        cols.iter()
            .zip(coef)
            .map(|(&j, c)| {
                let d2 = (norms[i] + norms[j] - 2.0 * ds.row(i).dot(&ds.row(j))).max(0.0);
                c * (-gamma * d2).exp()
            })
            .sum()
    }

    /// `m` rows of `dense` features in [3, 4] and `sparse` more in [−1, 1] on about 15 % of
    /// the rows each, with their squared norms.
    pub(in crate::backend::screen) fn offset_rows(
        r: &mut SplitMix64,
        m: usize,
        (dense, sparse): (usize, usize),
    ) -> (Dataset, Vec<f64>) {
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..m {
            for f in 0..dense + sparse {
                if f < dense || r.next_f64() < 0.15 {
                    ix.push(f as u32);
                    let v = r.next_f64();
                    vs.push(if f < dense { 3.0 + v } else { 2.0 * v - 1.0 } as f32);
                }
            }
            ip.push(ix.len());
        }
        let ds = Dataset::from_csr(dense + sparse, ip, ix, vs, vec![1.0; m]);
        let norms = (0..m).map(|i| ds.row(i).dot(&ds.row(i))).collect();
        (ds, norms)
    }

    /// `m` rows of `d` features in [−1, 1] (each feature kept with probability `keep`, all
    /// when None) and their squared norms.
    fn random_rows(
        r: &mut SplitMix64,
        (m, d): (usize, usize),
        keep: Option<f64>,
    ) -> (Dataset, Vec<f64>) {
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..m {
            for f in 0..d {
                if keep.is_none_or(|k| r.next_f64() < k) {
                    ix.push(f as u32);
                    vs.push((r.next_f64() * 2.0 - 1.0) as f32);
                }
            }
            ip.push(ix.len());
        }
        let ds = Dataset::from_csr(d, ip, ix, vs, vec![1.0; m]);
        let norms = (0..m).map(|i| ds.row(i).dot(&ds.row(i))).collect();
        (ds, norms)
    }

    /// Every `step`-th point as a panel's columns, with weights (r − `bias`)/n of both signs
    /// and their squared norms.
    fn weighted_columns(
        r: &mut SplitMix64,
        norms: &[f64],
        step: usize,
        bias: f64,
    ) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
        let cols: Vec<usize> = (0..norms.len()).step_by(step).collect();
        let coef = cols
            .iter()
            .map(|_| (r.next_f64() - bias) / cols.len() as f64)
            .collect();
        let nj = cols.iter().map(|&j| norms[j]).collect();
        (cols, coef, nj)
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
