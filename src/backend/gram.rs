//! Exact kernel-weighted row sums against a fixed set of columns, compute-bound:
//!
//! ```text
//! out[k] = Σ_{j ∈ cols} coef_j · (k(x_{rows[k]}, z_j) + 1)
//! ```
//!
//! (or without the + 1, for decision values)
//!
//! in f64 (the same arithmetic as the exact per-entry kernel, so "exact" keeps its meaning):
//! the gradient g = Qα from scratch (certification, the rebuild after shrinking, the start),
//! the sampled iterations' kernel blocks, and prediction. The columns are laid out once as a
//! feature-major panel Zᵀ (one row per feature that any column uses, the columns padded to a
//! multiple of [`TILE`]); each row x_i is reduced to its non-zeros among those features, and a
//! tile of `TILE` dots is accumulated in registers as `acc += x_if · Zᵀ[f, tile]`, then turned
//! into kernel values and summed while still in registers. The work is 2·nnz(x_i)·|cols|
//! multiply-adds per row instead of the 2·d·|cols| of a dense product (a9a: 14 of 123
//! features), the tile of Zᵀ stays in L1 across a block of rows, and the loops are written so
//! LLVM vectorizes them: compiled for AVX-512, AVX2+FMA and the baseline, chosen at run time.

use super::aligned::Aligned;
use crate::data::{Dataset, Row};
use crate::kernel::Kernel;
use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
use super::simd::avx2::hsum_pd;
use super::simd::exp_nonpos;
use super::simd::{LN2_HI64, LN2_LO64, POLY64, SHIFT64};

pub(super) mod symmetric;

/// Columns per register tile (4 × 8 f64 lanes with AVX-512, 8 × 4 with AVX2).
pub const TILE: usize = 32;
/// Rows per parallel task: the panel's tile is reused across them while it is in L1.
const ROW_BLOCK: usize = 128;
/// Largest panel built (bytes); wider problems (very high-dimensional sparse data) use the
/// caller's pairwise fallback.
const MAX_PANEL_BYTES: usize = 1 << 30;

/// The column side of the products, laid out once.
pub struct Panel {
    kernel: Kernel,
    /// Added to each kernel value: 1 for Q's (k + 1), 0 for plain kernel sums (prediction).
    offset: f64,
    /// Columns, padded to a multiple of TILE.
    width: usize,
    /// For each original feature, its row in `zt`, or u32::MAX when no column uses it.
    fmap: Vec<u32>,
    /// Feature-major panel: `zt[r * width + j]` = feature (fmap⁻¹ r) of column j.
    zt: Aligned<f64>,
    /// ‖z_j‖² (0 for padding).
    nj: Aligned<f64>,
    /// Weights (0 for padding, so padded columns add nothing).
    coef: Aligned<f64>,
    /// The columns' points.
    cols: Vec<usize>,
}

impl Panel {
    /// Lays out columns `cols` of `data` with weights `coef` and squared norms `norms` (both
    /// indexed like `cols`). None when the panel would exceed `MAX_PANEL_BYTES`.
    pub fn new(
        kernel: Kernel,
        data: &Dataset,
        cols: &[usize],
        coef: &[f64],
        norms: &[f64],
    ) -> Option<Panel> {
        assert_eq!(cols.len(), coef.len());
        assert_eq!(cols.len(), norms.len());
        let (fmap, used) = feature_map(data, cols);
        let width = cols.len().next_multiple_of(TILE).max(TILE);
        let bytes = (used as usize).checked_mul(width)?.checked_mul(8)?;
        if bytes > MAX_PANEL_BYTES {
            return None;
        }
        let mut zt = Aligned::zeroed(used as usize * width);
        for (c, &j) in cols.iter().enumerate() {
            for_nonzeros(data.row(j), |f, v| {
                zt[fmap[f] as usize * width + c] = v;
            });
        }
        let mut nj = Aligned::zeroed(width);
        nj[..cols.len()].copy_from_slice(norms);
        let mut cf = Aligned::zeroed(width);
        cf[..cols.len()].copy_from_slice(coef);
        Some(Panel {
            kernel,
            offset: 1.0,
            width,
            fmap,
            zt,
            nj,
            coef: cf,
            cols: cols.to_vec(),
        })
    }

    /// Sums of coef_j · k(x_i, z_j) without the +1 of Q (decision values).
    pub fn without_offset(mut self) -> Panel {
        self.offset = 0.0;
        self
    }

    /// Number of columns including padding.
    pub fn width(&self) -> usize {
        self.width
    }

    /// out\[k\] = Σ_j coef_j (k(x_i, z_j) + 1) for i = rows\[k\] (or i = k when `rows` is None)
    /// of `data`, whose squared row norms are `norms`. Rows in parallel.
    pub fn row_sums(&self, data: &Dataset, norms: &[f64], rows: Option<&[usize]>, out: &mut [f64]) {
        if let Some(r) = rows {
            assert_eq!(r.len(), out.len());
        } else {
            assert_eq!(data.len(), out.len());
        }
        let kind = Isa::detect();
        let budget = crate::budget::current();
        out.par_chunks_mut(ROW_BLOCK).enumerate().for_each_init(
            || Scratch::new(ROW_BLOCK),
            |scratch, (b, chunk)| {
                if budget.spent() {
                    return;
                }
                let r0 = b * ROW_BLOCK;
                scratch.load(self, data, norms, chunk.len(), |k| match rows {
                    Some(r) => r[r0 + k],
                    None => r0 + k,
                });
                kind.block(self, scratch, chunk);
            },
        );
    }
}

/// The features the rows `cols` of `data` use, numbered in order of first use: for each
/// original feature its panel row (u32::MAX when unused), and how many are used.
pub(super) fn feature_map(data: &Dataset, cols: &[usize]) -> (Vec<u32>, u32) {
    let mut fmap = vec![u32::MAX; data.n_features()];
    let mut used = 0u32;
    for &j in cols {
        for_nonzeros(data.row(j), |f, _| {
            if fmap[f] == u32::MAX {
                fmap[f] = used;
                used += 1;
            }
        });
    }
    (fmap, used)
}

/// Calls `f(feature, value)` for the non-zero entries of a row.
#[inline]
pub(super) fn for_nonzeros(row: Row<'_>, mut f: impl FnMut(usize, f64)) {
    match row {
        Row::Dense(v) => {
            for (j, &x) in v.iter().enumerate() {
                if x != 0.0 {
                    f(j, x as f64);
                }
            }
        }
        Row::Sparse(ix, v) => {
            for (&j, &x) in ix.iter().zip(v) {
                if x != 0.0 {
                    f(j as usize, x as f64);
                }
            }
        }
    }
}

/// One task's rows, reduced to their non-zeros among the panel's features.
struct Scratch {
    /// Row start offsets into `feat`/`val` (rows + 1).
    ptr: Vec<usize>,
    /// Offsets into the panel (`row * width`).
    feat: Vec<usize>,
    val: Vec<f64>,
    /// ‖x_i‖² per row.
    ni: Vec<f64>,
    /// Whether the row has every feature of the panel (then its offsets are the panel's
    /// features in order, the same for every such row).
    full: Vec<bool>,
    /// The panel offsets of features 0, 1, … of a dense row, when the panel holds every
    /// feature (else empty): a dense row without zeros takes them whole.
    dense: Vec<usize>,
}

impl Scratch {
    fn new(rows: usize) -> Self {
        Scratch {
            ptr: Vec::with_capacity(rows + 1),
            feat: Vec::new(),
            val: Vec::new(),
            ni: Vec::with_capacity(rows),
            full: Vec::with_capacity(rows),
            dense: Vec::new(),
        }
    }

    fn load(
        &mut self,
        p: &Panel,
        data: &Dataset,
        norms: &[f64],
        n: usize,
        row: impl Fn(usize) -> usize,
    ) {
        self.ptr.clear();
        self.feat.clear();
        self.val.clear();
        self.ni.clear();
        self.full.clear();
        self.ptr.push(0);
        let used = p.zt.len() / p.width;
        // Room for every entry the rows can hold, reserved once: at most min(d, used) a dense
        // row, its stored entries a sparse one.
        let room = match &data.features {
            crate::data::Features::Dense { n_features, .. } => n * used.min(*n_features),
            crate::data::Features::Sparse { indptr, .. } => {
                (0..n).map(|k| indptr[row(k) + 1] - indptr[row(k)]).sum()
            }
        };
        self.feat.reserve(room);
        self.val.reserve(room);
        self.dense.clear();
        if matches!(data.features, crate::data::Features::Dense { .. })
            && p.fmap.iter().all(|&r| r != u32::MAX)
        {
            self.dense
                .extend(p.fmap.iter().map(|&r| r as usize * p.width));
        }
        for k in 0..n {
            let i = row(k);
            if let Row::Dense(v) = data.row(i)
                && !self.dense.is_empty()
                && v.len() <= self.dense.len()
            {
                // Every feature held by the panel (a row with features past the panel's,
                // which its columns never use, goes by for_nonzeros below): for_nonzeros's
                // entries in order, each feature's offset read from `dense`.
                let start = self.feat.len();
                if v.iter().all(|&x| x != 0.0) {
                    self.feat.extend_from_slice(&self.dense[..v.len()]);
                    self.val.extend(v.iter().map(|&x| x as f64));
                } else {
                    // Every entry written to the next free slot, which moves past the non-zeros
                    // only (no branch for a zero to mispredict); the room reserved above holds
                    // a whole row more.
                    let (at, d) = (self.feat.len(), v.len());
                    let fs = &mut self.feat.spare_capacity_mut()[..d];
                    let vs = &mut self.val.spare_capacity_mut()[..d];
                    let mut kept = 0;
                    for (&x, &off) in v.iter().zip(&self.dense) {
                        fs[kept].write(off);
                        vs[kept].write(x as f64);
                        kept += usize::from(x != 0.0);
                    }
                    // SAFETY: the slots at..at + kept were written above (kept ≤ d of them).
                    unsafe {
                        self.feat.set_len(at + kept);
                        self.val.set_len(at + kept);
                    }
                }
                self.ptr.push(self.feat.len());
                self.full.push(self.feat.len() - start == used);
                self.ni.push(norms[i]);
                continue;
            }
            let (feat, val) = (&mut self.feat, &mut self.val);
            // Whether the row's features strictly increase (always, but for a CSR row whose
            // indices repeat): then holding `used` of the panel's features means holding each
            // once, in the order every such row has.
            let increasing = match data.row(i) {
                Row::Dense(_) => true,
                Row::Sparse(ix, _) => ix.windows(2).all(|w| w[0] < w[1]),
            };
            for_nonzeros(data.row(i), |f, v| {
                if let Some(&r) = p.fmap.get(f)
                    && r != u32::MAX
                {
                    feat.push(r as usize * p.width);
                    val.push(v);
                }
            });
            self.ptr.push(self.feat.len());
            self.full
                .push(increasing && self.feat.len() - self.ptr[self.ptr.len() - 2] == used);
            self.ni.push(norms[i]);
        }
    }
}

/// Which compiled copy of the inner loops runs.
#[derive(Clone, Copy)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Baseline,
}

impl Isa {
    fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("fma")
            {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Baseline
    }

    fn block(self, p: &Panel, s: &Scratch, out: &mut [f64]) {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => match p.kernel {
                // SAFETY: detect() chose Avx512 because the CPU has its features.
                Kernel::Rbf { gamma } => unsafe { block_rbf_avx512(p, s, out, gamma) },
                // SAFETY: as above.
                _ => unsafe { block_avx512(p, s, out) },
            },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => match p.kernel {
                // SAFETY: detect() chose Avx2 because the CPU has AVX2 and FMA.
                Kernel::Rbf { gamma } => unsafe { block_rbf_avx2(p, s, out, gamma) },
                // SAFETY: as above.
                _ => unsafe { block_avx2(p, s, out) },
            },
            Isa::Baseline => block_impl::<false>(p, s, out, dots_portable::<false>),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
fn block_avx512(p: &Panel, s: &Scratch, out: &mut [f64]) {
    block_impl::<true>(p, s, out, |f, v, z, a| dots_avx512(f, v, z, a))
}

/// The RBF block written out in AVX-512: the dots of 64 columns (the last 32 when the width
/// is an odd number of tiles) stay in registers as eight independent chains of multiply-adds
/// (four rows with every feature of the panel at once: four rows by 32 columns, sixteen),
/// their kernel values are summed into one vector per row, and the rows' vectors are reduced
/// once at the end; the exponential's constants are loaded once per block (as compiled from
/// [`block_impl`], LLVM reloaded them and spilled the dots for every row and tile). The
/// exponential is [`exp_nonpos`] step for step, so every kernel value is the same number; only
/// the order of the additions differs.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ, AVX2 and FMA (the caller's dispatch checked it); `s` was
/// loaded from `p`, so every row's indices lie within the panel and `out` holds one entry per
/// row of `s`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn block_rbf_avx512(p: &Panel, s: &Scratch, out: &mut [f64], gamma: f64) {
    use std::arch::x86_64::*;
    let rows = out.len();
    assert!(rows <= ROW_BLOCK);
    if let Some(&last) = s.feat[..s.ptr[rows]].iter().max() {
        assert!(last + p.width <= p.zt.len(), "panel offsets out of range");
    }
    // SAFETY: the panel offsets are checked above; rbf_tiles_avx512 reads columns t .. t + 8V
    // ≤ width of each.
    unsafe {
        let mut sums = [_mm512_setzero_pd(); ROW_BLOCK];
        let sums = &mut sums[..rows];
        // The columns in order, eight vectors at a time, then the rest in as few vectors as
        // hold them: the padding past the last column (whose terms are zeros) is skipped, and
        // each lane adds its columns' terms in the same order.
        let n = p.cols.len();
        let mut t = 0;
        while t + 2 * TILE <= n {
            rbf_tiles_avx512::<8, 4>(p, s, t, gamma, sums);
            t += 2 * TILE;
        }
        if n - t > TILE {
            rbf_tiles_avx512::<4, 4>(p, s, t, gamma, sums);
            t += TILE;
        }
        match (n - t).div_ceil(8) {
            0 => {}
            1 => rbf_tiles_avx512::<1, 1>(p, s, t, gamma, sums),
            2 => rbf_tiles_avx512::<2, 2>(p, s, t, gamma, sums),
            3 => rbf_tiles_avx512::<3, 3>(p, s, t, gamma, sums),
            _ => rbf_tiles_avx512::<4, 4>(p, s, t, gamma, sums),
        }
        for (o, v) in out.iter_mut().zip(sums.iter()) {
            *o = _mm512_reduce_add_pd(*v);
        }
    }
}

/// Adds to `sums[r]` (eight lanes) Σ coef_j (k(x_r, z_j) + offset) over the 8·`V` columns
/// from `t`, for every row r of `s`, `G` vectors at a time for four rows at once.
///
/// # Safety
/// The CPU has AVX-512F, DQ and FMA; t + 8·`V` ≤ the panel's width, and every offset in `s`
/// plus the width lies within the panel.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
unsafe fn rbf_tiles_avx512<const V: usize, const G: usize>(
    p: &Panel,
    s: &Scratch,
    t: usize,
    gamma: f64,
    sums: &mut [std::arch::x86_64::__m512d],
) {
    use std::arch::x86_64::*;
    const {
        assert!(
            G >= 1 && G <= 4 && V.is_multiple_of(G),
            "whole groups of G vectors"
        )
    };
    // SAFETY: the caller's conditions.
    unsafe {
        let zero = _mm512_setzero_pd();
        let ng = _mm512_set1_pd(-gamma);
        let m2 = _mm512_set1_pd(-2.0);
        let offset = _mm512_set1_pd(p.offset);
        let (nj, cf) = (p.nj.as_ptr().add(t), p.coef.as_ptr().add(t));
        let base = p.zt.as_ptr().add(t);
        // The exponent of the kernel value at vector q from its dot, and its term from the
        // exponential (taken for several vectors at once: `exp_nonpos_f64_x`).
        let arg = |q: usize, ni: __m512d, dot: __m512d| -> __m512d {
            let n = _mm512_add_pd(ni, _mm512_loadu_pd(nj.add(8 * q)));
            _mm512_mul_pd(ng, _mm512_max_pd(_mm512_fmadd_pd(m2, dot, n), zero))
        };
        let term = |q: usize, e: __m512d| -> __m512d {
            _mm512_mul_pd(_mm512_loadu_pd(cf.add(8 * q)), _mm512_add_pd(e, offset))
        };
        let rows = sums.len();
        let mut r = 0;
        while r < rows {
            if r + 4 <= rows && s.full[r..r + 4].iter().all(|&f| f) {
                // Four rows with every feature of the panel (the same offsets): each load of
                // the panel serves four rows' multiply-adds. Every row's dots and terms are
                // formed and added in the order one row alone takes.
                let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                let vals: [*const f64; 4] =
                    std::array::from_fn(|k| s.val.as_ptr().add(s.ptr[r + k]));
                let ni: [__m512d; 4] = std::array::from_fn(|k| _mm512_set1_pd(s.ni[r + k]));
                for h in (0..V).step_by(G) {
                    let mut acc = [[zero; G]; 4];
                    for (n, &off) in s.feat[a..b].iter().enumerate() {
                        let z = base.add(off + 8 * h);
                        let zv: [__m512d; G] =
                            std::array::from_fn(|g| _mm512_loadu_pd(z.add(8 * g)));
                        for (ak, vk) in acc.iter_mut().zip(&vals) {
                            let v = _mm512_set1_pd(*vk.add(n));
                            for (a, &zg) in ak.iter_mut().zip(&zv) {
                                *a = _mm512_fmadd_pd(v, zg, *a);
                            }
                        }
                    }
                    for (k, ak) in acc.iter().enumerate() {
                        let x: [__m512d; G] = std::array::from_fn(|g| arg(h + g, ni[k], ak[g]));
                        let e = super::simd::exp_nonpos_f64_x(x);
                        for (g, &e) in e.iter().enumerate() {
                            sums[r + k] = _mm512_add_pd(sums[r + k], term(h + g, e));
                        }
                    }
                }
                r += 4;
                continue;
            }
            let sum = &mut sums[r];
            let (a, b) = (s.ptr[r], s.ptr[r + 1]);
            let mut acc = [zero; V];
            for (&off, &v) in s.feat[a..b].iter().zip(&s.val[a..b]) {
                let z = base.add(off);
                let v = _mm512_set1_pd(v);
                for (q, aq) in acc.iter_mut().enumerate() {
                    *aq = _mm512_fmadd_pd(v, _mm512_loadu_pd(z.add(8 * q)), *aq);
                }
            }
            let ni = _mm512_set1_pd(s.ni[r]);
            let x: [__m512d; V] = std::array::from_fn(|q| arg(q, ni, acc[q]));
            for (q, &e) in super::simd::exp_nonpos_f64_x(x).iter().enumerate() {
                *sum = _mm512_add_pd(*sum, term(q, e));
            }
            r += 1;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_avx2(p: &Panel, s: &Scratch, out: &mut [f64]) {
    block_impl::<true>(p, s, out, |f, v, z, a| dots_avx2(f, v, z, a))
}

/// The RBF block in AVX2+FMA, as [`block_rbf_avx512`] with eight 4-lane accumulators per tile:
/// the dots stay in registers, and each 4-lane group is turned into kernel values and summed
/// before the next (as compiled from [`block_impl`], LLVM stored the 32 dots, evaluated the
/// exponential from memory and spilled: half of a working-set run's time on an AVX2 machine).
/// Every kernel value is [`exp_nonpos`]'s number; only the order of the final additions
/// differs.
///
/// # Safety
/// The CPU has AVX2 and FMA (the caller's dispatch checked it); `s` and `out` as for
/// [`block_rbf_avx512`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_rbf_avx2(p: &Panel, s: &Scratch, out: &mut [f64], gamma: f64) {
    use std::arch::x86_64::*;
    out.iter_mut().for_each(|o| *o = 0.0);
    let rows = out.len();
    if let Some(&last) = s.feat[..s.ptr[rows]].iter().max() {
        assert!(last + p.width <= p.zt.len(), "panel offsets out of range");
    }
    // SAFETY: every zt load reads zt[off + t .. off + t + TILE] with off ≤ last and
    // t + TILE ≤ width (checked above); nj and coef have `width` entries.
    unsafe {
        let zero = _mm256_setzero_pd();
        let exp = |x: __m256d| -> __m256d {
            let x = _mm256_min_pd(_mm256_max_pd(x, _mm256_set1_pd(-708.0)), zero);
            let shift = _mm256_set1_pd(SHIFT64);
            let t = _mm256_fmadd_pd(x, _mm256_set1_pd(std::f64::consts::LOG2_E), shift);
            let k = _mm256_sub_pd(t, shift);
            let r = _mm256_fnmadd_pd(k, _mm256_set1_pd(LN2_HI64), x);
            let r = _mm256_fnmadd_pd(k, _mm256_set1_pd(LN2_LO64), r);
            let mut q = _mm256_set1_pd(POLY64[0]);
            for &c in &POLY64[1..] {
                q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(c));
            }
            let kbits = _mm256_sub_epi64(
                _mm256_castpd_si256(t),
                _mm256_set1_epi64x(SHIFT64.to_bits() as i64),
            );
            _mm256_castsi256_pd(_mm256_add_epi64(
                _mm256_castpd_si256(q),
                _mm256_slli_epi64::<52>(kbits),
            ))
        };
        let ng = _mm256_set1_pd(-gamma);
        let m2 = _mm256_set1_pd(-2.0);
        let offset = _mm256_set1_pd(p.offset);
        let zt = p.zt.as_ptr();
        for t in (0..p.width).step_by(TILE) {
            let nj = p.nj.as_ptr().add(t);
            let cf = p.coef.as_ptr().add(t);
            let base = zt.add(t);
            let term = |q: usize, ni: __m256d, dot: __m256d| -> __m256d {
                let n = _mm256_add_pd(ni, _mm256_loadu_pd(nj.add(4 * q)));
                let d2 = _mm256_max_pd(_mm256_fmadd_pd(m2, dot, n), zero);
                let e = exp(_mm256_mul_pd(ng, d2));
                _mm256_mul_pd(_mm256_loadu_pd(cf.add(4 * q)), _mm256_add_pd(e, offset))
            };
            let mut r = 0;
            while r < rows {
                if r + 4 <= rows && s.full[r..r + 4].iter().all(|&f| f) {
                    // Four rows with every feature of the panel (the same offsets): eight
                    // columns of four rows share each load of the panel; every row's terms
                    // are added in the same order as one row alone adds them.
                    let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                    let vals: [*const f64; 4] =
                        std::array::from_fn(|k| s.val.as_ptr().add(s.ptr[r + k]));
                    let ni: [__m256d; 4] = std::array::from_fn(|k| _mm256_set1_pd(s.ni[r + k]));
                    let mut sum = [zero; 4];
                    for q in (0..TILE / 4).step_by(2) {
                        let mut acc = [[zero; 2]; 4];
                        for (n, &off) in s.feat[a..b].iter().enumerate() {
                            let z = base.add(off + 4 * q);
                            let z0 = _mm256_loadu_pd(z);
                            let z1 = _mm256_loadu_pd(z.add(4));
                            for (ak, vk) in acc.iter_mut().zip(&vals) {
                                let v = _mm256_broadcast_sd(&*vk.add(n));
                                ak[0] = _mm256_fmadd_pd(v, z0, ak[0]);
                                ak[1] = _mm256_fmadd_pd(v, z1, ak[1]);
                            }
                        }
                        for k in 0..4 {
                            sum[k] = _mm256_add_pd(sum[k], term(q, ni[k], acc[k][0]));
                            sum[k] = _mm256_add_pd(sum[k], term(q + 1, ni[k], acc[k][1]));
                        }
                    }
                    for k in 0..4 {
                        out[r + k] += hsum_pd(sum[k]);
                    }
                    r += 4;
                    continue;
                }
                let (a, b) = (s.ptr[r], s.ptr[r + 1]);
                let mut acc = [zero; TILE / 4];
                for (&off, &v) in s.feat[a..b].iter().zip(&s.val[a..b]) {
                    let z = base.add(off);
                    let v = _mm256_set1_pd(v);
                    for (q, aq) in acc.iter_mut().enumerate() {
                        *aq = _mm256_fmadd_pd(v, _mm256_loadu_pd(z.add(4 * q)), *aq);
                    }
                }
                let ni = _mm256_set1_pd(s.ni[r]);
                let mut sum = zero;
                for (q, aq) in acc.iter().enumerate() {
                    sum = _mm256_add_pd(sum, term(q, ni, *aq));
                }
                out[r] += hsum_pd(sum);
                r += 1;
            }
        }
    }
}

#[inline(always)]
fn fmadd<const F: bool>(a: f64, b: f64, c: f64) -> f64 {
    if F { a.mul_add(b, c) } else { a * b + c }
}

/// The rows of one task against every tile of the panel: tile-outer so that the tile's part
/// of the panel stays in L1 while all rows of the block use it.
#[inline(always)]
fn block_impl<const F: bool>(
    p: &Panel,
    s: &Scratch,
    out: &mut [f64],
    dots: impl Fn(&[usize], &[f64], &[f64], &mut [f64; TILE]),
) {
    out.iter_mut().for_each(|o| *o = 0.0);
    let mut acc = [0.0f64; TILE];
    for t in (0..p.width).step_by(TILE) {
        let nj: &[f64; TILE] = p.nj[t..t + TILE].try_into().expect("tile");
        let coef: &[f64; TILE] = p.coef[t..t + TILE].try_into().expect("tile");
        // The panel from this tile's first column: row offsets in `feat` then land on it.
        let zt = &p.zt[t..];
        for (r, o) in out.iter_mut().enumerate() {
            let (a, b) = (s.ptr[r], s.ptr[r + 1]);
            dots(&s.feat[a..b], &s.val[a..b], zt, &mut acc);
            *o += tile_sum::<F>(p.kernel, p.offset, &acc, nj, coef, s.ni[r]);
        }
    }
}

/// acc[l] = Σ_k val[k] · zt[feat[k] + l], portable (LLVM vectorizes what it can).
#[inline(always)]
fn dots_portable<const F: bool>(feat: &[usize], val: &[f64], zt: &[f64], acc: &mut [f64; TILE]) {
    *acc = [0.0; TILE];
    for (&off, &v) in feat.iter().zip(val) {
        let z: &[f64; TILE] = zt[off..off + TILE].try_into().expect("tile");
        for l in 0..TILE {
            acc[l] = fmadd::<F>(v, z[l], acc[l]);
        }
    }
}

/// The same with AVX-512: four independent 8-lane accumulators held in registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn dots_avx512(feat: &[usize], val: &[f64], zt: &[f64], acc: &mut [f64; TILE]) {
    use std::arch::x86_64::*;
    if let Some(&last) = feat.iter().max() {
        assert!(last + TILE <= zt.len(), "panel offsets out of range");
    }
    // SAFETY: every load reads zt[off .. off + TILE] with off ≤ last, checked above; the
    // stores write acc's 32 elements.
    unsafe {
        let (mut a0, mut a1, mut a2, mut a3) = (
            _mm512_setzero_pd(),
            _mm512_setzero_pd(),
            _mm512_setzero_pd(),
            _mm512_setzero_pd(),
        );
        let base = zt.as_ptr();
        for (&off, &v) in feat.iter().zip(val) {
            let p = base.add(off);
            let v = _mm512_set1_pd(v);
            a0 = _mm512_fmadd_pd(v, _mm512_loadu_pd(p), a0);
            a1 = _mm512_fmadd_pd(v, _mm512_loadu_pd(p.add(8)), a1);
            a2 = _mm512_fmadd_pd(v, _mm512_loadu_pd(p.add(16)), a2);
            a3 = _mm512_fmadd_pd(v, _mm512_loadu_pd(p.add(24)), a3);
        }
        let o = acc.as_mut_ptr();
        _mm512_storeu_pd(o, a0);
        _mm512_storeu_pd(o.add(8), a1);
        _mm512_storeu_pd(o.add(16), a2);
        _mm512_storeu_pd(o.add(24), a3);
    }
}

/// The same with AVX2+FMA: eight 4-lane accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn dots_avx2(feat: &[usize], val: &[f64], zt: &[f64], acc: &mut [f64; TILE]) {
    use std::arch::x86_64::*;
    if let Some(&last) = feat.iter().max() {
        assert!(last + TILE <= zt.len(), "panel offsets out of range");
    }
    // SAFETY: as in dots_avx512.
    unsafe {
        let mut a = [_mm256_setzero_pd(); TILE / 4];
        let base = zt.as_ptr();
        for (&off, &v) in feat.iter().zip(val) {
            let p = base.add(off);
            let v = _mm256_set1_pd(v);
            for (q, aq) in a.iter_mut().enumerate() {
                *aq = _mm256_fmadd_pd(v, _mm256_loadu_pd(p.add(4 * q)), *aq);
            }
        }
        let o = acc.as_mut_ptr();
        for (q, aq) in a.iter().enumerate() {
            _mm256_storeu_pd(o.add(4 * q), *aq);
        }
    }
}

/// Σ_l coef_l (k + offset) over one tile of dots.
#[inline(always)]
fn tile_sum<const F: bool>(
    kernel: Kernel,
    offset: f64,
    dots: &[f64; TILE],
    nj: &[f64; TILE],
    coef: &[f64; TILE],
    ni: f64,
) -> f64 {
    let mut terms = [0.0f64; TILE];
    match kernel {
        Kernel::Rbf { gamma } => {
            for l in 0..TILE {
                let d2 = fmadd::<F>(-2.0, dots[l], ni + nj[l]).max(0.0);
                terms[l] = coef[l] * (exp_nonpos::<F>(-gamma * d2) + offset);
            }
        }
        Kernel::Linear => {
            for l in 0..TILE {
                terms[l] = coef[l] * (dots[l] + offset);
            }
        }
        Kernel::Poly {
            gamma,
            coef0,
            degree,
        } => {
            for l in 0..TILE {
                terms[l] =
                    coef[l] * (fmadd::<F>(gamma, dots[l], coef0).powi(degree as i32) + offset);
            }
        }
        Kernel::Sigmoid { gamma, coef0 } => {
            for l in 0..TILE {
                terms[l] = coef[l] * (fmadd::<F>(gamma, dots[l], coef0).tanh() + offset);
            }
        }
    }
    // Pairwise halving: vectorizes and keeps the rounding error at log2(TILE) steps.
    let mut w = TILE / 2;
    while w > 0 {
        for l in 0..w {
            terms[l] += terms[l + w];
        }
        w /= 2;
    }
    terms[0]
}

/// The non-zeros of a set of points (α's) indexed by feature, for the pairwise fallback on
/// sparse data too wide for a panel (text-like data: news20's 1.3M features): a row then meets
/// only the points that share a feature with it, instead of merging its indices with every
/// point's. Each dot gets the products [`crate::data::Row::dot`]'s merge adds, in the same
/// ascending feature order from 0.0, so the same number.
pub(crate) struct Postings {
    /// Entries of feature f: `start[f]..start[f + 1]`.
    start: Vec<u32>,
    /// Position of the entry's point among the points, and its value.
    point: Vec<u32>,
    value: Vec<f32>,
}

impl Postings {
    /// The points `act` of `data`; None for dense rows or more entries than u32 counts. Its
    /// start array takes 4 bytes per feature index, within what the readers allow per index
    /// ([`crate::util::BYTES_PER_FEATURE`]).
    pub(crate) fn new(data: &crate::data::Dataset, act: &[usize]) -> Option<Postings> {
        let crate::data::Features::Sparse { .. } = &data.features else {
            return None;
        };
        let d = data.n_features();
        let rows: Vec<(&[u32], &[f32])> = act
            .iter()
            .map(|&j| match data.row(j) {
                crate::data::Row::Sparse(ix, v) => Some((ix, v)),
                crate::data::Row::Dense(_) => None,
            })
            .collect::<Option<_>>()?;
        let nnz: usize = rows.iter().map(|r| r.0.len()).sum();
        if nnz >= u32::MAX as usize {
            return None;
        }
        let mut start = vec![0u32; d + 1];
        for (ix, _) in &rows {
            for &f in *ix {
                start[f as usize + 1] += 1;
            }
        }
        for f in 0..d {
            start[f + 1] += start[f];
        }
        let mut fill: Vec<u32> = start[..d].to_vec();
        let (mut point, mut value) = (vec![0u32; nnz], vec![0f32; nnz]);
        for (k, (ix, v)) in rows.iter().enumerate() {
            for (&f, &x) in ix.iter().zip(*v) {
                let t = fill[f as usize] as usize;
                point[t] = k as u32;
                value[t] = x;
                fill[f as usize] += 1;
            }
        }
        Some(Postings {
            start,
            point,
            value,
        })
    }

    /// dots[k] = x · z_k for every point k, x a sparse row (indices past the points' features
    /// meet none of them).
    pub(crate) fn dots(&self, ix: &[u32], v: &[f32], dots: &mut [f64]) {
        dots.iter_mut().for_each(|d| *d = 0.0);
        let d = self.start.len() - 1;
        for (&f, &x) in ix.iter().zip(v) {
            if f as usize >= d {
                break;
            }
            let (a, b) = (
                self.start[f as usize] as usize,
                self.start[f as usize + 1] as usize,
            );
            for t in a..b {
                dots[self.point[t] as usize] += x as f64 * self.value[t] as f64;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn data(m: usize, d: usize, density: f64, seed: u64, dense: bool) -> Dataset {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..m {
            for f in 0..d {
                if next() < density {
                    ix.push(f as u32);
                    vs.push((next() * 2.0 - 1.0) as f32);
                }
            }
            ip.push(ix.len());
        }
        let labels = vec![1.0; m];
        let ds = Dataset::from_csr(d, ip, ix, vs, labels);
        assert_eq!(ds.is_dense(), dense, "test data layout");
        ds
    }

    pub(crate) fn norms(ds: &Dataset) -> Vec<f64> {
        (0..ds.len()).map(|i| ds.row(i).sq_norm()).collect()
    }

    /// The columns past the last one are not computed: the RBF sums of n columns are those
    /// of the same columns followed by more of weight zero, bit for bit, for every n around
    /// the vector and tile sizes (dense rows, so every panel holds every feature).
    #[test]
    fn the_last_columns_skip_their_padding() {
        let ds = data(160, 11, 1.0, 7, true);
        let nm = norms(&ds);
        let kernel = Kernel::Rbf { gamma: 0.3 };
        let rows: Vec<usize> = (0..ds.len()).collect();
        for n in [
            1usize, 5, 8, 9, 17, 24, 25, 31, 32, 33, 40, 63, 64, 65, 70, 97, 100,
        ] {
            let cols: Vec<usize> = (0..n + 40).map(|k| (k * 3) % ds.len()).collect();
            let coef: Vec<f64> = (0..n + 40)
                .map(|k| {
                    if k < n {
                        0.2 + (k % 7) as f64 * if k % 2 == 0 { 1.0 } else { -0.7 }
                    } else {
                        0.0
                    }
                })
                .collect();
            let cn: Vec<f64> = cols.iter().map(|&j| nm[j]).collect();
            let short = Panel::new(kernel, &ds, &cols[..n], &coef[..n], &cn[..n]).unwrap();
            let long = Panel::new(kernel, &ds, &cols, &coef, &cn).unwrap();
            let (mut a, mut b) = (vec![0.0; rows.len()], vec![0.0; rows.len()]);
            short.row_sums(&ds, &nm, Some(&rows), &mut a);
            long.row_sums(&ds, &nm, Some(&rows), &mut b);
            for (k, (x, y)) in a.iter().zip(&b).enumerate() {
                assert_eq!(x.to_bits(), y.to_bits(), "{n} columns, row {k}: {x} vs {y}");
            }
        }
    }

    /// Every kernel, dense and sparse rows, ragged column counts: the panel's sums equal the
    /// per-entry kernel to f64 rounding.
    #[test]
    fn row_sums_match_the_entrywise_kernel() {
        let kernels = [
            Kernel::Rbf { gamma: 0.7 },
            Kernel::Linear,
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 3,
            },
            Kernel::Sigmoid {
                gamma: 0.3,
                coef0: -0.5,
            },
        ];
        for (ds, tag) in [
            (data(300, 7, 0.9, 1, true), "dense"),
            (data(300, 40, 1.0, 4, true), "full"),
            (data(300, 60, 0.05, 2, false), "sparse"),
            (data(50, 1, 1.0, 3, true), "one feature"),
        ] {
            let nm = norms(&ds);
            for kernel in kernels {
                for ncols in [1usize, 31, 33, 97] {
                    let cols: Vec<usize> = (0..ncols).map(|k| (k * 7) % ds.len()).collect();
                    let coef: Vec<f64> = (0..ncols).map(|k| 0.1 + (k % 5) as f64).collect();
                    let cn: Vec<f64> = cols.iter().map(|&j| nm[j]).collect();
                    let p = Panel::new(kernel, &ds, &cols, &coef, &cn).unwrap();
                    let rows: Vec<usize> = (0..ds.len()).rev().step_by(3).collect();
                    let mut out = vec![0.0; rows.len()];
                    p.row_sums(&ds, &nm, Some(&rows), &mut out);
                    let mut all = vec![0.0; ds.len()];
                    p.row_sums(&ds, &nm, None, &mut all);
                    for (k, &i) in rows.iter().enumerate() {
                        let want: f64 = cols
                            .iter()
                            .zip(&coef)
                            .map(|(&j, c)| c * (kernel.eval(&ds.row(i), &ds.row(j)) + 1.0))
                            .sum();
                        let tol = 1e-12 * want.abs().max(1.0);
                        assert!(
                            (out[k] - want).abs() <= tol,
                            "{tag} {kernel:?} {ncols} cols, row {i}: {} vs {want}",
                            out[k]
                        );
                        assert_eq!(out[k], all[i]);
                        // A row alone takes the row-at-a-time path, four full rows a tile
                        // of their own: the same sum bit for bit.
                        let mut one = [0.0];
                        p.row_sums(&ds, &nm, Some(&[i]), &mut one);
                        assert_eq!(one[0].to_bits(), all[i].to_bits(), "{tag} row {i} alone");
                    }
                }
            }
        }
    }

    /// Dense rows with more features than the panel's columns use (a model whose support
    /// vectors never hold the last feature, predicting rows that do) take the row-by-row load,
    /// the features past the panel's adding nothing: the per-entry kernel's sums.
    #[test]
    fn dense_rows_past_the_panels_features() {
        let cols_ds = Dataset::from_csr(1, vec![0, 1, 2], vec![0, 0], vec![1.0, 0.5], vec![1.0; 2]);
        let rows_ds = Dataset::from_csr(
            2,
            vec![0, 2, 4],
            vec![0, 1, 0, 1],
            vec![1.0, 1.0, -0.5, 2.0],
            vec![1.0; 2],
        );
        assert!(rows_ds.is_dense(), "test data layout");
        let kernel = Kernel::Rbf { gamma: 0.7 };
        let (cols, coef) = ([0usize, 1], [0.3, -1.2]);
        let cn: Vec<f64> = norms(&cols_ds);
        let p = Panel::new(kernel, &cols_ds, &cols, &coef, &cn).unwrap();
        let nm = norms(&rows_ds);
        let mut out = vec![0.0; 2];
        p.row_sums(&rows_ds, &nm, None, &mut out);
        for (i, got) in out.iter().enumerate() {
            let want: f64 = cols
                .iter()
                .zip(&coef)
                .map(|(&j, c)| c * (kernel.eval(&rows_ds.row(i), &cols_ds.row(j)) + 1.0))
                .sum();
            assert!((got - want).abs() <= 1e-12, "row {i}: {got} vs {want}");
        }
    }

    /// A dense row without zeros, every feature in the panel, is loaded whole: the entries,
    /// offsets and flags for_nonzeros gives one by one (rows with zeros take that path).
    #[test]
    fn dense_rows_load_as_their_non_zeros() {
        for (ds, tag) in [
            (data(40, 9, 1.0, 5, true), "full"),
            (data(40, 9, 0.85, 6, true), "with zeros"),
        ] {
            let nm = norms(&ds);
            let cols: Vec<usize> = (0..ds.len()).collect();
            let coef = vec![1.0; cols.len()];
            let cn: Vec<f64> = cols.iter().map(|&j| nm[j]).collect();
            let p = Panel::new(Kernel::Rbf { gamma: 0.5 }, &ds, &cols, &coef, &cn).unwrap();
            let mut s = Scratch::new(ds.len());
            s.load(&p, &ds, &nm, ds.len(), |k| k);
            assert!(!s.dense.is_empty(), "{tag}: the panel holds every feature");
            let used = p.zt.len() / p.width;
            for (i, &ni) in nm.iter().enumerate() {
                let (mut feat, mut val) = (Vec::new(), Vec::new());
                for_nonzeros(ds.row(i), |f, v| {
                    feat.push(p.fmap[f] as usize * p.width);
                    val.push(v);
                });
                let (a, b) = (s.ptr[i], s.ptr[i + 1]);
                assert_eq!(s.feat[a..b], feat[..], "{tag} row {i}");
                assert_eq!(s.val[a..b], val[..], "{tag} row {i}");
                assert_eq!(s.full[i], feat.len() == used, "{tag} row {i}");
                assert_eq!(s.ni[i], ni);
            }
        }
    }

    #[test]
    fn without_offset_gives_plain_kernel_sums() {
        let ds = data(40, 5, 0.8, 9, true);
        let nm = norms(&ds);
        let k = Kernel::Rbf { gamma: 0.3 };
        let cols = [1usize, 5, 7];
        let coef = [0.5, -1.5, 2.0];
        let cn: Vec<f64> = cols.iter().map(|&j| nm[j]).collect();
        let p = Panel::new(k, &ds, &cols, &coef, &cn)
            .unwrap()
            .without_offset();
        let mut out = vec![0.0; 40];
        p.row_sums(&ds, &nm, None, &mut out);
        for (i, &got) in out.iter().enumerate() {
            let want: f64 = cols
                .iter()
                .zip(&coef)
                .map(|(&j, c)| c * k.eval(&ds.row(i), &ds.row(j)))
                .sum();
            assert!((got - want).abs() < 1e-13, "row {i}");
        }
    }

    /// Columns whose rows are all zero: the panel has no feature rows at all.
    #[test]
    fn columns_without_features() {
        let ds = Dataset::from_csr(3, vec![0, 0, 1, 1], vec![2], vec![4.0], vec![1.0; 3]);
        let nm = norms(&ds);
        let k = Kernel::Rbf { gamma: 0.5 };
        let p = Panel::new(k, &ds, &[0, 2], &[1.0, 2.0], &[0.0, 0.0]).unwrap();
        let mut out = vec![0.0; 3];
        p.row_sums(&ds, &nm, None, &mut out);
        for (i, &got) in out.iter().enumerate() {
            let want = (k.eval(&ds.row(i), &ds.row(0)) + 1.0)
                + 2.0 * (k.eval(&ds.row(i), &ds.row(2)) + 1.0);
            assert!((got - want).abs() < 1e-13, "row {i}");
        }
    }

    #[test]
    fn unused_features_and_empty_rows_are_harmless() {
        // Columns use features 0..2 only; rows also have features the columns never use.
        let ds = Dataset::from_csr(
            5,
            vec![0, 2, 2, 5],
            vec![0, 1, 0, 3, 4],
            vec![1.0, 2.0, -1.0, 5.0, 7.0],
            vec![1.0; 3],
        );
        let nm = norms(&ds);
        let k = Kernel::Rbf { gamma: 0.1 };
        let p = Panel::new(k, &ds, &[0], &[2.0], &[nm[0]]).unwrap();
        let mut out = vec![0.0; 3];
        p.row_sums(&ds, &nm, None, &mut out);
        for (i, &got) in out.iter().enumerate() {
            let want = 2.0 * (k.eval(&ds.row(i), &ds.row(0)) + 1.0);
            assert!((got - want).abs() < 1e-13, "row {i}: {got} vs {want}");
        }
    }
}
