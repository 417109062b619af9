//! Lane-parallel inner loops of the CPU backend, written so LLVM vectorizes them, and compiled
//! twice: once for the baseline target and once with AVX2+FMA (selected at run time).
//!
//! Dense data are stored in an "array of structures of arrays" layout: blocks of [`LANES`]
//! rows, feature-major inside a block, so one kernel column is a stream of
//! `acc[l] += x[b][f][l] · q[f]` with no horizontal sums. Dots accumulate in f64 from the f32
//! data, so every product is exact and the column agrees with the host's exact kernel.

use super::aligned::Aligned;
use crate::kernel::Kernel;
use std::borrow::Cow;

pub(super) mod avx2;
mod fused;
mod hamming;
mod layout;
mod tiles;
pub use hamming::{
    RbfTable, binary_rbf_entries, binary_rbf_entries_against, binary_rbf_entry, push_bit_row,
};
use hamming::{hamming_any, query_bits};
pub use layout::Layout;
#[cfg(target_arch = "x86_64")]
pub(crate) use tiles::exp_nonpos_f64_x;

/// Rows per AoSoA block.
pub const LANES: usize = 8;

/// Element type of cached kernel columns.
pub trait Elem: Copy + Send + Sync + Default + std::fmt::Debug + 'static {
    /// Whether this is f32: RBF entries are then finished in f32 arithmetic (see [`finish`]).
    const SINGLE: bool;
    /// Rounds an f64 to this type.
    fn from_f64(x: f64) -> Self;
    /// Widens to f64.
    fn to_f64(self) -> f64;
    /// The slice as f32 values, when this is f32.
    fn as_f32(s: &[Self]) -> Option<&[f32]>;
}

impl Elem for f32 {
    const SINGLE: bool = true;
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn as_f32(s: &[Self]) -> Option<&[f32]> {
        Some(s)
    }
}

impl Elem for f64 {
    const SINGLE: bool = false;
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }
}

#[inline(always)]
fn fmadd<const F: bool>(a: f64, b: f64, c: f64) -> f64 {
    if F { a.mul_add(b, c) } else { a * b + c }
}

/// ln 2 split in two for [`exp_nonpos`]'s reduction (k · LN2_HI64 is exact), and the rest.
pub const LN2_HI64: f64 = 6.931_471_803_691_238e-1;
/// See [`LN2_HI64`].
pub const LN2_LO64: f64 = 1.908_214_929_270_587_7e-10;
/// 1.5 · 2^52: adding it rounds an f64 to an integer held in the low mantissa bits.
pub const SHIFT64: f64 = 6_755_399_441_055_744.0;
/// [`exp_nonpos`]'s polynomial for e^r on |r| ≤ ln2/2, highest degree (10) first: 1 + r +
/// r²·P(r) with P of least weighted error (Remez exchange in 60-digit arithmetic, then rounded),
/// relative error 2.9e-16 before rounding, 4.0e-16 in f64 steps (Taylor needs degree 12).
pub const POLY64: [f64; 11] = [
    2.747_680_048_409_551_5e-7,
    2.763_499_075_697_824_7e-6,
    2.480_193_170_810_392e-5,
    1.984_118_523_626_433e-4,
    1.388_888_851_623_632_3e-3,
    8.333_333_370_870_067e-3,
    4.166_666_666_813_645e-2,
    1.666_666_666_661_155_4e-1,
    4.999_999_999_999_832_4e-1,
    1.0,
    1.0,
];

/// e^x for x ≤ 0 (clamped below at −708), branch-free so it vectorizes; relative error
/// below 5e-16 on the range used (after reduction to |r| ≤ ln2/2, the degree-10 polynomial of
/// [`POLY64`]).
#[inline(always)]
pub fn exp_nonpos<const F: bool>(x: f64) -> f64 {
    let x = x.clamp(-708.0, 0.0);
    let t = fmadd::<F>(x, std::f64::consts::LOG2_E, SHIFT64);
    let k = t - SHIFT64;
    let r = fmadd::<F>(-k, LN2_HI64, x);
    let r = fmadd::<F>(-k, LN2_LO64, r);
    let mut p = POLY64[0];
    for &c in &POLY64[1..] {
        p = fmadd::<F>(p, r, c);
    }
    // k is an integer stored in the low mantissa bits of t: add it to p's exponent.
    let kbits = t.to_bits().wrapping_sub(SHIFT64.to_bits());
    f64::from_bits(p.to_bits().wrapping_add(kbits << 52))
}

/// 2^x for x ≤ 0 in f32 arithmetic, the exponential of the f32 kernel values (the columns'
/// and the screen's, whose vector copies, [`exp2_x`], take the same steps): x clamped to
/// [[`EXP2_32_LO`], 0], k = x rounded to the nearest integer, ties to even (by adding and
/// taking away 1.5·2²³; the vector copies round in one step), f = x − k (exact: |f| ≤ 1/2 and
/// x has at most 17 fraction bits there), 2^f by the polynomial [`POLY2_32`], k added to the
/// exponent. The callers fold log₂e into their exponent's factors (−γ·log₂e, in f64, before
/// each factor's one rounding to f32), so there is no
/// reduction by ln 2 to round. Relative error below [`EXP2_32_ERR`]. `F`: the polynomial by
/// fused multiply-adds (the vector copies' steps) or by separate products and sums (CPUs
/// without FMA).
#[inline(always)]
pub fn exp2_nonpos_f32<const F: bool>(x: f32) -> f32 {
    let x = x.clamp(EXP2_32_LO, 0.0);
    let k = (x + SHIFT32) - SHIFT32;
    let f = x - k;
    let mut p = POLY2_32[0];
    for &c in &POLY2_32[1..] {
        p = if F { p.mul_add(f, c) } else { p * f + c };
    }
    // k ∈ [−124, 0] and p ∈ [0.7, 1.5]: the result is a normal f32.
    f32::from_bits(p.to_bits().wrapping_add(((k as i32) << 23) as u32))
}

/// [`exp2_nonpos_f32`]'s steps (with fused multiply-adds) on `N` vectors of sixteen lanes,
/// taken across the vectors one at a time (2^k applied by `vscalefps`: q·2^k is exact, a
/// normal result): each lane is that function's number, and the `N` independent chains
/// interleave in the instruction stream, so one's latency does not idle the units. `N` at most
/// eight: sixteen spill the registers (the dense screen ran three times slower).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) fn exp2_x<const N: usize>(
    x: [std::arch::x86_64::__m512; N],
) -> [std::arch::x86_64::__m512; N] {
    const { assert!(N <= 8, "more vectors spill") };
    use std::arch::x86_64::*;
    let (lo, zero) = (_mm512_set1_ps(EXP2_32_LO), _mm512_setzero_ps());
    let x = x.map(|x| _mm512_min_ps(_mm512_max_ps(x, lo), zero));
    // Rounded to the nearest integer, ties to even: (x + SHIFT32) − SHIFT32 in one step.
    let k = x.map(|x| _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x));
    let f: [__m512; N] = std::array::from_fn(|v| _mm512_sub_ps(x[v], k[v]));
    let mut q = [_mm512_set1_ps(POLY2_32[0]); N];
    for &c in &POLY2_32[1..] {
        let c = _mm512_set1_ps(c);
        for v in 0..N {
            q[v] = _mm512_fmadd_ps(q[v], f[v], c);
        }
    }
    std::array::from_fn(|v| _mm512_scalef_ps(q[v], k[v]))
}

/// Where [`exp2_nonpos_f32`] clamps its argument (2⁻¹²⁴ times the polynomial stays normal).
pub const EXP2_32_LO: f32 = -124.0;
/// Bound on the relative error of [`exp2_nonpos_f32`] over [−124, 0]: 3.5 units of f32
/// roundoff. The result is 2^k·p(f) with 2^k exact and f = x − k exact, so its relative error is
/// p's at f ∈ [−1/2, 1/2]; a test takes p at every f32 there (about 2.1·10⁹ arguments) against
/// f64, with and without fused multiply-adds: at most 2.88 and 3.25 units.
pub const EXP2_32_ERR: f64 = 3.5 / 16_777_216.0;
/// 2^f on |f| ≤ 1/2, highest degree first: the degree-5 polynomial with constant term 1 of
/// least relative error, 9.1e-8, fitted by Lawson's iteration.
#[allow(clippy::excessive_precision)]
pub const POLY2_32: [f32; 6] = [
    0.001_326_472_874_690_502_7,
    0.009_671_513_181_931_057,
    0.055_507_337_445_211_86,
    0.240_222_420_771_125_6,
    0.693_146_977_595_105_8,
    1.0,
];

/// 1.5 · 2^23: adding it rounds an f32 to an integer held in the low mantissa bits.
pub const SHIFT32: f32 = 12_582_912.0;

/// Dot products of the query `q` (length d) with the rows of `nblk` consecutive AoSoA blocks,
/// the products formed in f32 where `f32` ([`dense_dots_f32`]), else in f64.
#[inline(always)]
fn dense_dots<const F: bool>(xb: &[f32], d: usize, q: &[f64], f32: bool, out: &mut [f64]) {
    if f32 {
        dense_dots_f32::<F, 1>(xb, d, &[q], 0, out);
        return;
    }
    for (blk, o) in xb.chunks_exact(d * LANES).zip(out.chunks_exact_mut(LANES)) {
        let mut acc = [0.0f64; LANES];
        for (xf, &qf) in blk.chunks_exact(LANES).zip(q.iter()) {
            for l in 0..LANES {
                acc[l] = fmadd::<F>(xf[l] as f64, qf, acc[l]);
            }
        }
        o.copy_from_slice(&acc);
    }
}

/// The same for K queries at once, reading each block once: query c's dots go to
/// `out[c * stride ..]` (in f32 where the flag beside the stride says so). Every query's sums
/// are formed in the same order as [`dense_dots`], so a batched column equals the single one
/// bit for bit.
#[inline(always)]
fn dense_dots_batch<const F: bool, const K: usize>(
    xb: &[f32],
    d: usize,
    q: &[&[f64]],
    (stride, f32): (usize, bool),
    out: &mut [f64],
) {
    if f32 {
        dense_dots_f32::<F, K>(xb, d, q, stride, out);
        return;
    }
    let q: [&[f64]; K] = std::array::from_fn(|c| &q[c][..d]);
    for (b, blk) in xb.chunks_exact(d * LANES).enumerate() {
        let mut acc = [[0.0f64; LANES]; K];
        for f in 0..d {
            let xf = &blk[f * LANES..(f + 1) * LANES];
            for c in 0..K {
                let qc = q[c][f];
                for l in 0..LANES {
                    acc[c][l] = fmadd::<F>(xf[l] as f64, qc, acc[c][l]);
                }
            }
        }
        for (c, a) in acc.iter().enumerate() {
            let o = c * stride + b * LANES;
            out[o..o + LANES].copy_from_slice(a);
        }
    }
}

/// A query's parts for the hybrid layout: its continuous features in block order (into
/// `qc`) and its binary features' bits (into `qb`); false when some binary feature of the
/// query is neither 0 nor 1 (the popcount would not be its dot).
#[inline(always)]
fn hybrid_query(cont: &[u32], bin: &[u32], q: &[f64], qc: &mut [f64], qb: &mut [u64]) -> bool {
    for (o, &f) in qc.iter_mut().zip(cont) {
        *o = q[f as usize];
    }
    qb.iter_mut().for_each(|w| *w = 0);
    let mut binary = true;
    for (k, &f) in bin.iter().enumerate() {
        let v = q[f as usize];
        binary &= v == 0.0 || v == 1.0;
        if v == 1.0 {
            qb[k / 64] |= 1u64 << (k % 64);
        }
    }
    binary
}

/// Adds the binary features' part of the dots to `out` (LANES rows per block): popcounts
/// against the query's bits, or (`popcount` false) the sum of the query's values over each
/// row's bits.
#[inline(always)]
fn hybrid_add_bits(
    bits: &[u64],
    words: usize,
    bin: &[u32],
    q: &[f64],
    qb: &[u64],
    popcount: bool,
    out: &mut [f64],
) {
    for (blk, o) in bits
        .chunks_exact(words * LANES)
        .zip(out.chunks_exact_mut(LANES))
    {
        if popcount {
            let mut cnt = [0u64; LANES];
            for w in 0..words {
                let bw = &blk[w * LANES..(w + 1) * LANES];
                for l in 0..LANES {
                    cnt[l] += (bw[l] & qb[w]).count_ones() as u64;
                }
            }
            for l in 0..LANES {
                o[l] += cnt[l] as f64;
            }
        } else {
            for l in 0..LANES {
                let mut sum = 0.0;
                for w in 0..words {
                    let mut x = blk[w * LANES + l];
                    while x != 0 {
                        sum += q[bin[w * 64 + x.trailing_zeros() as usize] as usize];
                        x &= x - 1;
                    }
                }
                o[l] += sum;
            }
        }
    }
}

/// From this many features on (and up to [`F32_DOTS_MAX_D`]), the dense products of f32
/// columns are formed in f32 ([`dense_dots_f32`]; f64 columns keep f64 products): there they
/// are the column's cost, and f32 products run at twice the vector width without a conversion
/// per feature. Below it, the rows are narrow ([`narrow_f32`]): their products are formed in
/// f32 too, by the fused kernel. An f32 product over d
/// features is within about d·u·Σ|x_f z_f| of the exact one (u = 2⁻²⁴), which moves γ‖x−z‖²
/// by as much: the columns stay an approximation that the exact f64 passes correct
/// (certification, rebuilds), as every f32 column is.
pub const F32_DOTS_MIN_D: usize = 32;
/// The most features [`dense_dots_f32`] takes (its queries in f32 are a thread's scratch).
pub const F32_DOTS_MAX_D: usize = 1 << 16;

/// Whether a blocked pass's batches of `d` dense features are worth packing once for the
/// f32 tiles ([`pack_queries`]): products formed in f32 by the tiles (narrow rows' columns are
/// the fused kernel's).
pub(crate) fn packs_queries(d: usize) -> bool {
    f32_dots(d) && tiles::available()
}

#[inline(always)]
fn f32_dots(d: usize) -> bool {
    (F32_DOTS_MIN_D..=F32_DOTS_MAX_D).contains(&d)
}

/// Whether f32 RBF columns over these rows are narrow: dense rows of fewer than
/// [`F32_DOTS_MIN_D`] features, or hybrid rows with fewer than that many continuous ones.
/// Their products over the continuous features are formed in f32 by fused multiply-adds from
/// zero in feature order, the bit part's count added in f32 (one rounding), and the exponent
/// as every f32 RBF entry's ([`finish_rbf_f32`]): products in f64 would be most of such a
/// column's operations (covtype's ten measurements beside its bits: 58 vector operations per
/// sixteen entries against 36). The kernel of `simd::fused` computes these columns in
/// registers.
#[inline(always)]
pub(crate) fn narrow_f32(kernel: Kernel, layout: &Layout<'_>) -> bool {
    matches!(kernel, Kernel::Rbf { .. }) && narrow_rows(layout)
}

/// Narrow rows: dense rows of fewer than [`F32_DOTS_MIN_D`] features, hybrid rows of fewer
/// than that many continuous ones ([`narrow_f32`]'s rows, whatever the kernel).
#[inline(always)]
pub(crate) fn narrow_rows(layout: &Layout<'_>) -> bool {
    match layout {
        Layout::Dense { d, .. } => *d < F32_DOTS_MIN_D,
        Layout::Hybrid { cont, .. } => cont.len() < F32_DOTS_MIN_D,
        _ => false,
    }
}

#[inline(always)]
fn fmadd32<const F: bool>(a: f32, b: f32, c: f32) -> f32 {
    if F { a.mul_add(b, c) } else { a * b + c }
}

/// A thread's queries in f32, packed feature-major for the AVX-512 tiles, with the f64 values
/// they were packed from and their shape (queries, features): a batch equal bit for bit to
/// the last one, in the same shape, is not packed again (a pass over many chunks sends the
/// same batch to each; blocked passes pack their full batches themselves, [`pack_queries`]).
struct Packed {
    src: Vec<f64>,
    shape: (usize, usize),
    q32: Vec<f32>,
}

impl Packed {
    const fn new() -> Packed {
        Packed {
            src: Vec::new(),
            shape: (0, 0),
            q32: Vec::new(),
        }
    }

    /// The queries `q` (d features each) packed: `q32[f * k + c]` is feature f of query c.
    fn pack(&mut self, q: &[&[f64]], d: usize) -> &[f32] {
        let k = q.len();
        // Compared as bits (a memcmp: NaN and −0 compare as what they are).
        let bits = |v: &[f64]| -> &[u64] {
            // SAFETY: f64 and u64 have the same size and alignment, and every bit pattern is
            // a valid u64.
            unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u64>(), v.len()) }
        };
        let same = self.shape == (k, d)
            && self.src.len() == k * d
            && q.iter()
                .zip(self.src.chunks_exact(d.max(1)))
                .all(|(qc, s)| bits(&qc[..d]) == bits(s));
        if !same {
            self.src.clear();
            for qc in q {
                self.src.extend_from_slice(&qc[..d]);
            }
            pack_queries(q, d, &mut self.q32);
            self.shape = (k, d);
        }
        &self.q32
    }
}

thread_local! {
    /// This thread's last batch of queries packed for the AVX-512 tiles.
    static PACKED: std::cell::RefCell<Packed> = const { std::cell::RefCell::new(Packed::new()) };
}

/// The queries `q` (d features each) in f32, packed feature-major into `q32`: `q32[f * k + c]`
/// is feature f of query c (k = `q.len()`), as the AVX-512 tiles read them.
pub fn pack_queries(q: &[&[f64]], d: usize, q32: &mut Vec<f32>) {
    let k = q.len();
    q32.clear();
    q32.resize(k * d, 0.0);
    for (c, qc) in q.iter().enumerate() {
        for (t, &v) in q32[c..].iter_mut().step_by(k.max(1)).zip(&qc[..d]) {
            *t = v as f32;
        }
    }
}

/// [`dense_dots_batch`] in f32 (see [`F32_DOTS_MIN_D`]): each row's sum over the features
/// from zero in order, the same for a query alone or in a batch.
#[inline(always)]
fn dense_dots_f32<const F: bool, const K: usize>(
    xb: &[f32],
    d: usize,
    q: &[&[f64]],
    stride: usize,
    out: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    if F && tiles::available() {
        PACKED.with_borrow_mut(|p| {
            let q32 = p.pack(&q[..K], d);
            // SAFETY: the CPU has the features; q32 holds K queries of d features, packed.
            unsafe { tiles::dots_f32::<K>(xb, d, q32, stride, out) };
        });
        return;
    }
    dense_dots_f32_unpacked::<F, K>(xb, d, q, stride, out);
}

/// [`dense_dots_f32`] with the queries already packed by [`pack_queries`] (`q32`), used by the
/// AVX-512 tiles as they are; the other paths take the f64 queries `q` as before.
#[inline(always)]
fn dense_dots_f32_packed<const F: bool, const K: usize>(
    xb: &[f32],
    d: usize,
    (q, q32): (&[&[f64]], &[f32]),
    stride: usize,
    out: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    if F && tiles::available() {
        assert_eq!(q32.len(), K * d, "packed queries");
        // SAFETY: the CPU has the features; q32 holds K queries of d features, packed.
        unsafe { tiles::dots_f32::<K>(xb, d, q32, stride, out) };
        return;
    }
    dense_dots_f32_unpacked::<F, K>(xb, d, q, stride, out);
}

/// [`dense_dots_f32`] without the AVX-512 tiles: the AVX2 and portable loops.
#[inline(always)]
fn dense_dots_f32_unpacked<const F: bool, const K: usize>(
    xb: &[f32],
    d: usize,
    q: &[&[f64]],
    stride: usize,
    out: &mut [f64],
) {
    thread_local! {
        static Q32: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    Q32.with_borrow_mut(|q32| {
        q32.clear();
        for qc in q.iter().take(K) {
            q32.extend(qc[..d].iter().map(|&x| x as f32));
        }
        #[cfg(target_arch = "x86_64")]
        if F && std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features; q32 holds K queries of d features.
            unsafe { dense_dots_f32_avx2::<K>(xb, d, q32, stride, out) };
            return;
        }
        dense_dots_f32_portable::<F, K>(xb, d, q32, stride, out);
    });
}

/// [`dense_dots_f32`] in AVX2 registers, register-blocked as a GEMM micro-kernel: R blocks
/// of eight rows (one vector each) against G queries at a time, R·G accumulators, so that a
/// feature costs R loads of rows and G broadcasts for R·G fused multiply-adds.
/// Every (row, query) sum is still formed from zero over the features in order with fused
/// multiply-adds, as the portable loop forms it: the same numbers for any blocking.
///
/// # Safety
/// The CPU has AVX2 and FMA; `q32` holds K queries of `d` features, one after the other;
/// `xb` holds whole blocks of `d` features; `out` has `(K − 1)·stride` + the rows' entries.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dense_dots_f32_avx2<const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    stride: usize,
    out: &mut [f64],
) {
    assert!(q32.len() >= K * d);
    let nblk = xb.len() / (d * LANES);
    let mut b = 0;
    // SAFETY: for every call below, blocks b.. are within xb, queries c0..c0+G within q32,
    // and the rows' entries within out for every query (the caller's contract).
    unsafe {
        match K {
            8 => {
                while b + 2 <= nblk {
                    dots_f32_tile::<2, 4>(xb, d, q32, b, 0, stride, out);
                    dots_f32_tile::<2, 4>(xb, d, q32, b, 4, stride, out);
                    b += 2;
                }
                while b < nblk {
                    dots_f32_tile::<1, 8>(xb, d, q32, b, 0, stride, out);
                    b += 1;
                }
            }
            4 => {
                while b + 2 <= nblk {
                    dots_f32_tile::<2, 4>(xb, d, q32, b, 0, stride, out);
                    b += 2;
                }
                while b < nblk {
                    dots_f32_tile::<1, 4>(xb, d, q32, b, 0, stride, out);
                    b += 1;
                }
            }
            _ => {
                while b + 4 <= nblk {
                    dots_f32_tile::<4, K>(xb, d, q32, b, 0, stride, out);
                    b += 4;
                }
                while b < nblk {
                    dots_f32_tile::<1, K>(xb, d, q32, b, 0, stride, out);
                    b += 1;
                }
            }
        }
    }
}

/// One tile of [`dense_dots_f32_avx2`]: blocks b..b+R against queries c0..c0+G.
///
/// # Safety
/// As [`dense_dots_f32_avx2`], with b + R ≤ the blocks in `xb` and c0 + G ≤ the queries.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn dots_f32_tile<const R: usize, const G: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    b: usize,
    c0: usize,
    stride: usize,
    out: &mut [f64],
) {
    use std::arch::x86_64::*;
    debug_assert!((b + R) * d * LANES <= xb.len() && (c0 + G) * d <= q32.len());
    // SAFETY: the caller's contract bounds every pointer below.
    unsafe {
        let x: [*const f32; R] = std::array::from_fn(|r| xb.as_ptr().add((b + r) * d * LANES));
        let q: [*const f32; G] = std::array::from_fn(|c| q32.as_ptr().add((c0 + c) * d));
        let mut acc = [[_mm256_setzero_ps(); R]; G];
        for f in 0..d {
            let xv: [__m256; R] = std::array::from_fn(|r| _mm256_loadu_ps(x[r].add(f * LANES)));
            for (ac, qc) in acc.iter_mut().zip(&q) {
                let qv = _mm256_broadcast_ss(&*qc.add(f));
                for (a, &xr) in ac.iter_mut().zip(&xv) {
                    *a = _mm256_fmadd_ps(xr, qv, *a);
                }
            }
        }
        for (c, ac) in acc.iter().enumerate() {
            for (r, a) in ac.iter().enumerate() {
                let o = (c0 + c) * stride + (b + r) * LANES;
                let dst = &mut out[o..o + LANES];
                _mm256_storeu_pd(
                    dst.as_mut_ptr(),
                    _mm256_cvtps_pd(_mm256_castps256_ps128(*a)),
                );
                _mm256_storeu_pd(
                    dst.as_mut_ptr().add(4),
                    _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(*a)),
                );
            }
        }
    }
}

/// [`dense_dots_f32`] in portable code (the same sums as the AVX2 copy where F).
#[inline(always)]
fn dense_dots_f32_portable<const F: bool, const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    stride: usize,
    out: &mut [f64],
) {
    for (b, blk) in xb.chunks_exact(d * LANES).enumerate() {
        let mut acc = [[0.0f32; LANES]; K];
        for f in 0..d {
            let xf = &blk[f * LANES..(f + 1) * LANES];
            for c in 0..K {
                let qc = q32[c * d + f];
                for l in 0..LANES {
                    acc[c][l] = fmadd32::<F>(xf[l], qc, acc[c][l]);
                }
            }
        }
        for (c, a) in acc.iter().enumerate() {
            let o = c * stride + b * LANES;
            for (t, &v) in out[o..o + LANES].iter_mut().zip(a) {
                *t = v as f64;
            }
        }
    }
}

/// [`dense_dots_batch`] over any number of queries (at most [`BATCH`]), split into batches
/// of 8, 4, 2 and 1: query c's dots go to `out[c * stride ..]`, in f32 where `stride.1`.
#[inline(always)]
fn dense_dots_split<const F: bool>(
    xb: &[f32],
    d: usize,
    (qs, q32): (&[&[f64]], Option<&[f32]>),
    stride: (usize, bool),
    out: &mut [f64],
) {
    // f64 products take at most four queries a batch: eight rows by four queries are eight
    // accumulator registers, where eight queries' sixteen spilled to the stack (AVX2 has
    // sixteen registers). Each sum is the same either way.
    let wide = stride.1;
    #[cfg(target_arch = "x86_64")]
    if F && !wide && tiles::available() {
        // SAFETY: the CPU has the features; every query holds d values, and out the rows'
        // entries of every query (the caller's contract).
        unsafe {
            match qs.len() {
                0 => {}
                1 => tiles::dots_f64::<1>(xb, d, qs, stride.0, out),
                2 => tiles::dots_f64::<2>(xb, d, qs, stride.0, out),
                3 => tiles::dots_f64::<3>(xb, d, qs, stride.0, out),
                4 => tiles::dots_f64::<4>(xb, d, qs, stride.0, out),
                5 => tiles::dots_f64::<5>(xb, d, qs, stride.0, out),
                6 => tiles::dots_f64::<6>(xb, d, qs, stride.0, out),
                7 => tiles::dots_f64::<7>(xb, d, qs, stride.0, out),
                _ => tiles::dots_f64::<8>(xb, d, qs, stride.0, out),
            }
        }
        return;
    }
    let mut c0 = 0;
    while c0 < qs.len() {
        let o = &mut out[c0 * stride.0..];
        c0 += match qs.len() - c0 {
            8.. if wide => {
                match q32.filter(|_| c0 == 0) {
                    Some(q32) => dense_dots_f32_packed::<F, 8>(xb, d, (&qs[..8], q32), stride.0, o),
                    None => dense_dots_batch::<F, 8>(xb, d, &qs[c0..], stride, o),
                }
                8
            }
            8.. => {
                dense_dots_batch::<F, 4>(xb, d, &qs[c0..], stride, o);
                4
            }
            4..=7 => {
                dense_dots_batch::<F, 4>(xb, d, &qs[c0..], stride, o);
                4
            }
            2..=3 => {
                dense_dots_batch::<F, 2>(xb, d, &qs[c0..], stride, o);
                2
            }
            _ => {
                dense_dots_batch::<F, 1>(xb, d, &qs[c0..], stride, o);
                1
            }
        };
    }
}

/// Sparse dots: row i's values against the dense query `q` (x_j scattered, zeros elsewhere).
#[inline(always)]
fn sparse_dots(indptr: &[usize], indices: &[u32], values: &[f32], q: &[f64], out: &mut [f64]) {
    for (r, o) in out.iter_mut().enumerate() {
        let (a, b) = (indptr[r], indptr[r + 1]);
        let mut s = 0.0;
        for (&j, &v) in indices[a..b].iter().zip(values[a..b].iter()) {
            s += v as f64 * q[j as usize];
        }
        *o = s;
    }
}

/// [`sparse_dots`] of every query of `qs` at once: query c's dots to `out[c * stride ..]`.
/// Each query's sum is the single loop's (its products in the row's order, each rounded, then
/// added), so the columns are the same bit for bit; the queries' sums are independent chains
/// that run side by side where the single loop waits on one addition per non-zero.
#[inline(always)]
fn sparse_dots_batch(
    indptr: &[usize],
    (indices, values): (&[u32], &[f32]),
    qs: &[&[f64]],
    stride: usize,
    out: &mut [f64],
) {
    match qs.len() {
        8 => sparse_dots_k::<8>(indptr, (indices, values), qs, stride, out),
        7 => sparse_dots_k::<7>(indptr, (indices, values), qs, stride, out),
        6 => sparse_dots_k::<6>(indptr, (indices, values), qs, stride, out),
        5 => sparse_dots_k::<5>(indptr, (indices, values), qs, stride, out),
        4 => sparse_dots_k::<4>(indptr, (indices, values), qs, stride, out),
        3 => sparse_dots_k::<3>(indptr, (indices, values), qs, stride, out),
        2 => sparse_dots_k::<2>(indptr, (indices, values), qs, stride, out),
        _ => {
            for (c, q) in qs.iter().enumerate() {
                let n = indptr.len() - 1;
                sparse_dots(
                    indptr,
                    indices,
                    values,
                    q,
                    &mut out[c * stride..c * stride + n],
                );
            }
        }
    }
}

thread_local! {
    /// This thread's batch of sparse-row queries packed feature-major ([`sparse_dots_k`]).
    static SPARSE_PACKED: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`sparse_dots_batch`] for K queries. Where the rows' non-zeros outnumber the queries'
/// features four to one, the queries are first packed feature-major (`qp[f·K + c]`), so that a
/// non-zero's K products and sums are one vector operation each instead of K scalar ones.
#[inline(always)]
fn sparse_dots_k<const K: usize>(
    indptr: &[usize],
    (indices, values): (&[u32], &[f32]),
    qs: &[&[f64]],
    stride: usize,
    out: &mut [f64],
) {
    let q: [&[f64]; K] = std::array::from_fn(|c| qs[c]);
    let n = indptr.len() - 1;
    assert!(out.len() >= (K - 1) * stride + n);
    let d = q.iter().map(|qc| qc.len()).min().unwrap_or(0);
    let rows = (indptr, (indices, values));
    if 4 * d <= indptr[n] - indptr[0] {
        SPARSE_PACKED.with_borrow_mut(|qp| {
            qp.clear();
            qp.resize(d * K, 0.0);
            for (c, qc) in q.iter().enumerate() {
                for (f, &v) in qc[..d].iter().enumerate() {
                    qp[f * K + c] = v;
                }
            }
            sparse_sums::<K>(rows, stride, out, |j| {
                qp[j * K..j * K + K].try_into().expect("K values")
            });
        });
    } else {
        sparse_sums::<K>(rows, stride, out, |j| std::array::from_fn(|c| q[c][j]));
    }
}

/// The rows' K sums Σ v · q_c[j] over their non-zeros (j, v), in the row's order, query c's
/// to `out[c * stride + r]`; `at(j)` gives feature j of the K queries.
#[inline(always)]
fn sparse_sums<const K: usize>(
    (indptr, (indices, values)): (&[usize], (&[u32], &[f32])),
    stride: usize,
    out: &mut [f64],
    at: impl Fn(usize) -> [f64; K],
) {
    for r in 0..indptr.len() - 1 {
        let (a, b) = (indptr[r], indptr[r + 1]);
        let mut s = [0.0f64; K];
        for (&j, &v) in indices[a..b].iter().zip(values[a..b].iter()) {
            let (qj, v) = (at(j as usize), v as f64);
            for c in 0..K {
                s[c] += v * qj[c];
            }
        }
        for (c, &sc) in s.iter().enumerate() {
            out[c * stride + r] = sc;
        }
    }
}

/// Dots of bit-set rows with the query `q` (x_j scattered over d): a popcount of the two bit
/// sets when q is binary too (every query taken from the data is), else the sum of q over
/// the row's bits. Either way the exact integer the CSR loop sums (1.0 · q_f, in order), so
/// the columns are those of the CSR layout, bit for bit.
#[inline(always)]
fn binary_dots(bits: &[u64], words: usize, q: &[f64], out: &mut [f64]) {
    let mut qb = [0u64; MAX_BINARY_WORDS];
    let mut binary = true;
    for (f, &v) in q.iter().enumerate() {
        if v != 0.0 {
            binary &= v == 1.0;
            qb[f / 64] |= 1u64 << (f % 64);
        }
    }
    let n = out.len();
    for (b, blk) in bits.chunks_exact(words * LANES).enumerate() {
        let r0 = b * LANES;
        if r0 >= n {
            break;
        }
        let mut dot = [0.0f64; LANES];
        if binary {
            let mut cnt = [0u64; LANES];
            for (w, &qw) in qb[..words].iter().enumerate() {
                let bw = &blk[w * LANES..(w + 1) * LANES];
                for l in 0..LANES {
                    cnt[l] += (bw[l] & qw).count_ones() as u64;
                }
            }
            for l in 0..LANES {
                dot[l] = cnt[l] as f64;
            }
        } else {
            for (l, d) in dot.iter_mut().enumerate() {
                for w in 0..words {
                    let mut x = blk[w * LANES + l];
                    while x != 0 {
                        *d += q[w * 64 + x.trailing_zeros() as usize];
                        x &= x - 1;
                    }
                }
            }
        }
        let k = LANES.min(n - r0);
        out[r0..r0 + k].copy_from_slice(&dot[..k]);
    }
}

/// Turns dots into Q entries: out[i] = y_i y_j (k(x_i,x_j) + 1) (+ 1/C on the diagonal,
/// added by the caller).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn finish<const F: bool, T: Elem>(
    kernel: Kernel,
    dots: &[f64],
    norms: &[f64],
    y: &[f64],
    nj: f64,
    yj: f64,
    out: &mut [T],
) {
    match kernel {
        // f32 entries: the exponent formed in f32 from the dot and the exponential taken in
        // f32 (twice the lanes): its error, under EXP2_32_ERR (2.1e-7) of k ≤ 1, is within
        // about an ulp of the stored k + 1.
        Kernel::Rbf { gamma } if T::SINGLE => {
            // SAFETY: T is f32 (SINGLE), the same size and layout.
            let out: &mut [f32] =
                unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), out.len()) };
            finish_rbf_f32::<F>(rbf_factor(gamma), dots, norms, y, (nj, yj), out);
        }
        Kernel::Rbf { gamma } => {
            let ng = -gamma;
            for (((o, &dt), &n), &yi) in out.iter_mut().zip(dots).zip(norms).zip(y) {
                let d2 = fmadd::<F>(-2.0, dt, n + nj).max(0.0);
                *o = T::from_f64(yi * yj * (exp_nonpos::<F>(ng * d2) + 1.0));
            }
        }
        Kernel::Linear => {
            for ((o, &dt), &yi) in out.iter_mut().zip(dots).zip(y) {
                *o = T::from_f64(yi * yj * (dt + 1.0));
            }
        }
        Kernel::Poly {
            gamma,
            coef0,
            degree,
        } => {
            for ((o, &dt), &yi) in out.iter_mut().zip(dots).zip(y) {
                *o =
                    T::from_f64(yi * yj * (fmadd::<F>(gamma, dt, coef0).powi(degree as i32) + 1.0));
            }
        }
        Kernel::Sigmoid { gamma, coef0 } => {
            for ((o, &dt), &yi) in out.iter_mut().zip(dots).zip(y) {
                *o = T::from_f64(yi * yj * (fmadd::<F>(gamma, dt, coef0).tanh() + 1.0));
            }
        }
    }
}

/// The factor of the f32 RBF entries' exponent, −γ·log₂e (f64): the exponent t = −γ·log₂e·d²
/// is in base 2, for [`exp2_nonpos_f32`].
#[inline(always)]
pub(crate) fn rbf_factor(gamma: f64) -> f64 {
    -gamma * std::f64::consts::LOG2_E
}

/// RBF entries in f32: three loops over the chunk (L1-resident), so that the exponential runs
/// on sixteen f32 lanes instead of the eight an f64 exponent would give the whole loop. The
/// base-2 exponent is formed in f32 from the dot s (plus the bit count of hybrid rows)
/// rounded to f32: t = min(fma(fl(s), fl(−2·ng), fl(ng·‖x_i‖²) + fl(ng·‖x_j‖²)), 0) with
/// `ng` = [`rbf_factor`], each factor formed in f64 and rounded once; then 2^t + 1 in f32,
/// then the labels' sign (±1: exact). The same values as one fused loop, bit for bit, and as
/// the tiles' and the fused kernel's registers. In f64 the exponent would be a large part of
/// an entry's operations where the rows are short (at 54 features, 13 vector operations per
/// sixteen entries against 4, beside 54 multiply-adds); in f32 it moves γ‖x − z‖² by at most
/// γ·u·(‖x‖² + ‖z‖²)·5.1 beyond the products' own rounding, of about d·u·(‖x‖² + ‖z‖²)/2
/// (the certification's bound on cached entries takes it in, `exact::cached`).
#[inline(always)]
fn finish_rbf_f32<const F: bool>(
    ng: f64,
    dots: &[f64],
    norms: &[f64],
    y: &[f64],
    (nj, yj): (f64, f64),
    out: &mut [f32],
) {
    let (c, b) = ((-2.0 * ng) as f32, (ng * nj) as f32);
    for ((o, &dt), &n) in out.iter_mut().zip(dots).zip(norms) {
        *o = fmadd32::<F>(dt as f32, c, (ng * n) as f32 + b).min(0.0);
    }
    for o in out.iter_mut() {
        *o = exp2_nonpos_f32::<F>(*o) + 1.0;
    }
    for (o, &yi) in out.iter_mut().zip(y) {
        *o = ((yi * yj) * *o as f64) as f32;
    }
}

/// Widest bit set kept per row (4,096 features).
const MAX_BINARY_WORDS: usize = 64;
/// Most continuous features of the hybrid layout (the queries' continuous part lives on the
/// stack).
const MAX_HYBRID_CONT: usize = 128;
/// Most bit-set words per row of the hybrid layout.
const MAX_HYBRID_WORDS: usize = 4;

/// Everything a column pass over one chunk needs.
pub struct ColumnArgs<'a> {
    /// Data.
    pub layout: &'a Layout<'a>,
    /// Kernel.
    pub kernel: Kernel,
    /// ‖x_i‖² for all rows.
    pub norms: &'a [f64],
    /// ±1 labels.
    pub y: &'a [f64],
    /// The [`RbfTable`] of [`Layout::Binary`] rows under the RBF kernel (None otherwise):
    /// f32 columns of bit rows are then read from it.
    pub rbf_table: Option<&'a RbfTable>,
}

/// Computes Q[r0..r0+out.len(), j] (without the 1/C diagonal term) into `out`, using `q`
/// (x_j as f64: dense values for the dense layout, scattered over d for CSR) and `dots` as
/// scratch of at least out.len() rounded up to LANES. `r0` must be a multiple of LANES.
/// A batch of one: [`columns_chunk`] (the backend calls that directly).
#[cfg(test)]
pub fn column_chunk<T: Elem>(
    a: &ColumnArgs<'_>,
    j: usize,
    q: &[f64],
    r0: usize,
    dots: &mut [f64],
    out: &mut [T],
) {
    columns_chunk(a, &[(j, q)], r0, dots, &mut [out]);
}

/// One column, one query at a time: the CSR loop of the batched pass, and the dense loop as
/// the reference the batched one is tested against.
#[inline(always)]
fn column_chunk_impl<const F: bool, T: Elem>(
    a: &ColumnArgs<'_>,
    j: usize,
    q: &[f64],
    r0: usize,
    dots: &mut [f64],
    out: &mut [T],
) {
    let n = out.len();
    let narrow = T::SINGLE && narrow_f32(a.kernel, a.layout);
    match a.layout {
        Layout::Dense { d, xb, .. } => {
            let nb = n.div_ceil(LANES);
            let b0 = r0 / LANES;
            let d = *d;
            dense_dots::<F>(
                &xb[b0 * d * LANES..(b0 + nb) * d * LANES],
                d,
                q,
                T::SINGLE && (f32_dots(d) || narrow),
                &mut dots[..nb * LANES],
            );
        }
        Layout::Sparse {
            indptr,
            indices,
            values,
        } => sparse_dots(&indptr[r0..r0 + n + 1], indices, values, q, &mut dots[..n]),
        Layout::Binary { words, bits } => {
            let (b0, nb) = (r0 / LANES, n.div_ceil(LANES));
            let bits = &bits[b0 * words * LANES..(b0 + nb) * words * LANES];
            let mut qb = [0u64; MAX_BINARY_WORDS];
            if let Some(table) = a.rbf_table.filter(|_| T::SINGLE)
                && query_bits(q, &mut qb)
            {
                // SAFETY: T is f32 (SINGLE), the same size and layout.
                let out32: &mut [f32] =
                    unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast(), n) };
                let y = &a.y[r0..r0 + n];
                if hamming_any(bits, *words, &qb, table, y, a.y[j], out32) {
                    return;
                }
            }
            binary_dots(bits, *words, q, &mut dots[..n])
        }
        Layout::Hybrid {
            cont,
            bin,
            xb,
            words,
            bits,
        } => {
            let nb = n.div_ceil(LANES);
            let b0 = r0 / LANES;
            let (dc, w) = (cont.len(), *words);
            let mut qc = [0.0f64; MAX_HYBRID_CONT];
            let mut qb = [0u64; MAX_HYBRID_WORDS];
            let pop = hybrid_query(cont, bin, q, &mut qc[..dc], &mut qb[..w]);
            let out = &mut dots[..nb * LANES];
            dense_dots::<F>(
                &xb[b0 * dc * LANES..(b0 + nb) * dc * LANES],
                dc,
                &qc[..dc],
                T::SINGLE && (f32_dots(dc) || narrow),
                out,
            );
            let bb = &bits[b0 * w * LANES..(b0 + nb) * w * LANES];
            hybrid_add_bits(bb, w, bin, q, &qb[..w], pop, out);
        }
    }
    finish::<F, T>(
        a.kernel,
        &dots[..n],
        &a.norms[r0..r0 + n],
        &a.y[r0..r0 + n],
        a.norms[j],
        a.y[j],
        out,
    );
}

/// A batch of columns to compute: each column's (j, query as f64), and, for a full batch of
/// [`BATCH`] over dense rows, the same queries packed by [`pack_queries`] once for many chunks.
pub type Batch<'a> = (&'a [(usize, &'a [f64])], Option<&'a [f32]>);

/// Most columns one batched call computes (queries beyond it are split into several calls).
pub const BATCH: usize = 8;

/// Computes Q[r0..r0+n, j_c] for every (j_c, q_c) of `cols` (at most [`BATCH`]) into
/// `outs[c]` (each of length n), as [`column_chunk`] would one by one, but reading the chunk's
/// rows once for all of them: the dense loop then does `cols.len()` multiply-adds per value
/// read instead of one (compute-bound instead of bound by the memory bus). `dots` must hold
/// `cols.len()` × (n rounded up to LANES).
pub fn columns_chunk<T: Elem>(
    a: &ColumnArgs<'_>,
    cols: &[(usize, &[f64])],
    r0: usize,
    dots: &mut [f64],
    outs: &mut [&mut [T]],
) {
    columns_chunk_packed(a, (cols, None), r0, dots, outs);
}

/// [`columns_chunk`] with the batch's queries also given in f32, packed by [`pack_queries`]
/// (`Some` only for a full batch of [`BATCH`] queries over dense rows): a pass that sends the
/// same batch through many blocks of rows packs it once instead of once per block. The
/// entries are the same numbers.
pub fn columns_chunk_packed<T: Elem>(
    a: &ColumnArgs<'_>,
    (cols, q32): Batch<'_>,
    r0: usize,
    dots: &mut [f64],
    outs: &mut [&mut [T]],
) {
    if T::SINGLE {
        // SAFETY: T is f32 (SINGLE): the same layout.
        let outs32 = unsafe { &mut *(outs as *mut [&mut [T]] as *mut [&mut [f32]]) };
        if fused::rbf_f32(a, cols, r0, outs32) || wide_rbf_f32(a, (cols, q32), r0, outs32) {
            return;
        }
    } else {
        assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<f64>());
        // SAFETY: T is f64 (not SINGLE: the only other Elem, a crate-private trait; its size
        // checked above): the same layout.
        let outs64 = unsafe { &mut *(outs as *mut [&mut [T]] as *mut [&mut [f64]]) };
        if rbf_f64_in_registers(a, cols, r0, outs64) {
            return;
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("popcnt")
            && std::is_x86_feature_detected!("avx512vpopcntdq")
        {
            // SAFETY: the CPU supports the features the function is compiled for.
            unsafe { columns_chunk_avx512_vpopcnt(a, (cols, q32), r0, dots, outs) };
            return;
        }
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU supports the features the function is compiled for.
            unsafe { columns_chunk_avx512(a, (cols, q32), r0, dots, outs) };
            return;
        }
        if std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: as above.
            unsafe { columns_chunk_avx2(a, (cols, q32), r0, dots, outs) };
            return;
        }
    }
    columns_chunk_impl::<false, T>(a, (cols, q32), r0, dots, outs);
}

/// A chunk's batch of RBF columns over dense rows, as the AVX-512 tiles take it: the rows'
/// whole blocks, their norms and labels, and γ.
#[cfg(target_arch = "x86_64")]
struct DenseRbf<'a> {
    xb: &'a [f32],
    d: usize,
    /// The tiles form the products in f32: from [`F32_DOTS_MIN_D`] features.
    f32: bool,
    norms: &'a [f64],
    y: &'a [f64],
    gamma: f64,
}

#[cfg(target_arch = "x86_64")]
impl<'a> DenseRbf<'a> {
    /// The batch of `k` columns over rows r0.. (as many as each output of `lens` holds), when
    /// the tiles take it: RBF kernel, dense rows, AVX-512, 1 ≤ k ≤ [`BATCH`] outputs of one
    /// length, r0 on a block's start. None otherwise.
    fn of(a: &ColumnArgs<'a>, k: usize, r0: usize, lens: &[usize]) -> Option<DenseRbf<'a>> {
        let (Kernel::Rbf { gamma }, Layout::Dense { d, xb }) = (a.kernel, a.layout) else {
            return None;
        };
        let n = *lens.first()?;
        if !tiles::available()
            || k == 0
            || k > BATCH
            || k != lens.len()
            || lens.iter().any(|&l| l != n)
            || !r0.is_multiple_of(LANES)
        {
            return None;
        }
        let (d, b0, nb) = (*d, r0 / LANES, n.div_ceil(LANES));
        Some(DenseRbf {
            xb: &xb[b0 * d * LANES..(b0 + nb) * d * LANES],
            d,
            f32: f32_dots(d),
            norms: &a.norms[r0..r0 + n],
            y: &a.y[r0..r0 + n],
            gamma,
        })
    }

    /// The tiles' epilogue for the K columns `cols`, f32 entries (`single`: the exponent in
    /// base 2, [`rbf_factor`]) or f64 ones (−γ).
    fn epilogue<const K: usize>(
        &self,
        a: &ColumnArgs<'_>,
        cols: &[(usize, &[f64])],
        single: bool,
    ) -> tiles::RbfEpilogue<'a, K> {
        tiles::RbfEpilogue {
            norms: self.norms,
            y: self.y,
            nj: std::array::from_fn(|c| a.norms[cols[c].0]),
            yj: std::array::from_fn(|c| a.y[cols[c].0]),
            ng: if single {
                rbf_factor(self.gamma)
            } else {
                -self.gamma
            },
        }
    }
}

/// Calls `$f::<K>($args)` for K = `$k` in 1..=[`BATCH`] (8 for anything above 7).
#[cfg(target_arch = "x86_64")]
macro_rules! for_batch {
    ($k:expr, $f:ident($($args:expr),*)) => {
        match $k {
            1 => $f::<1>($($args),*),
            2 => $f::<2>($($args),*),
            3 => $f::<3>($($args),*),
            4 => $f::<4>($($args),*),
            5 => $f::<5>($($args),*),
            6 => $f::<6>($($args),*),
            7 => $f::<7>($($args),*),
            _ => $f::<8>($($args),*),
        }
    };
}

/// Rows of a dense layout packed in panels of sixteen ([`tiles::pack_panels`]) for the f32
/// tiles while a blocked pass runs its batches of columns over them ([`with_row_panels`]).
#[derive(Default)]
struct RowPanels {
    /// The packed rows' blocks in the layout (start, length) and whether they were widened to
    /// f64 (else packed in f32 panels), while a pass holds them.
    src: Option<(usize, usize, bool)>,
    data: Aligned<f32>,
    wide: Aligned<f64>,
}

impl RowPanels {
    /// The f32 panels of the rows `xb` (a slice of the layout's blocks), when these are the
    /// rows packed.
    fn of(&self, xb: &[f32]) -> Option<&[f32]> {
        (self.src == Some((xb.as_ptr() as usize, xb.len(), false))).then_some(&self.data[..])
    }

    /// The rows `xb` widened to f64, when these are the rows packed so.
    fn wide_of(&self, xb: &[f32]) -> Option<&[f64]> {
        (self.src == Some((xb.as_ptr() as usize, xb.len(), true))).then_some(&self.wide[..])
    }
}

thread_local! {
    /// This thread's rows packed for the f32 tiles, while [`with_row_panels`] runs.
    static PANELS: std::cell::RefCell<RowPanels> = std::cell::RefCell::new(RowPanels::default());
}

/// Runs `f` (batches of columns over rows r0..r0+n: [`columns_chunk_packed`] calls) with
/// those rows packed for the tiles that will take them (RBF, dense rows, AVX-512, r0 on a
/// block's start), as a GEMM packs the operand it reuses: for f32 columns (`single`) of at
/// least [`F32_DOTS_MIN_D`] features in panels of sixteen, each batch then loading a register
/// of sixteen rows whole; for f64 columns widened to f64, the widening then out of the tiles'
/// loop. The entries are the same bit for bit. Worth it when `f` runs many batches.
pub fn with_row_panels<R>(
    a: &ColumnArgs<'_>,
    (r0, n): (usize, usize),
    single: bool,
    f: impl FnOnce() -> R,
) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        let rows = DenseRbf::of(a, 1, r0, &[n])
            .filter(|job| !single || (job.f32 && !narrow_f32(a.kernel, a.layout)));
        if let Some(job) = rows {
            /// Lets the panels go when `f` returns or unwinds.
            struct Held;
            impl Drop for Held {
                fn drop(&mut self) {
                    PANELS.with_borrow_mut(|p| p.src = None);
                }
            }
            PANELS.with_borrow_mut(|p| {
                if single {
                    tiles::pack_panels(job.xb, job.d, &mut p.data);
                } else {
                    tiles::pack_panels_f64(job.xb, job.d, &mut p.wide);
                }
                p.src = Some((job.xb.as_ptr() as usize, job.xb.len(), !single));
            });
            let _held = Held;
            return f();
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (a, r0, n, single);
    f()
}

/// The f32 tiles' own rate on this thread, in FLOP/s of the products (2·d per entry): full
/// batches of eight RBF columns finished in registers over one block of dense rows held in
/// the core's cache and packed in panels, as a blocked pass runs them, repeated for at least
/// `min_time`. None where the tiles do not run (no AVX-512, or d below [`F32_DOTS_MIN_D`]).
/// What the working-set block's rate is judged against beside the FMA peak: the rest of the
/// block is the pass's other work (packing, the update of g, the cache).
pub fn tile_rate(d: usize, min_time: std::time::Duration) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        if !tiles::available() || !f32_dots(d) {
            return None;
        }
        let rows = (192 * 1024 / (4 * d) / (2 * LANES) * (2 * LANES)).max(2 * LANES);
        let xb: Vec<f32> = (0..rows * d).map(|i| (i % 97) as f32 / 97.0).collect();
        let q32: Vec<f32> = (0..BATCH * d).map(|i| (i % 89) as f32 / 89.0).collect();
        let (norms, y) = (vec![1.0f64; rows], vec![1.0f64; rows]);
        let e = tiles::RbfEpilogue::<BATCH> {
            norms: &norms,
            y: &y,
            nj: [1.0; BATCH],
            yj: [1.0; BATCH],
            ng: rbf_factor(1.0 / d as f64),
        };
        let mut panels = Aligned::default();
        tiles::pack_panels(&xb, d, &mut panels);
        let mut cols = vec![vec![0.0f32; rows]; BATCH];
        let start = std::time::Instant::now();
        let mut reps = 0u64;
        while reps < 3 || start.elapsed() < min_time {
            for _ in 0..16 {
                let mut outs: [&mut [f32]; BATCH] = {
                    let mut it = cols.iter_mut();
                    std::array::from_fn(|_| &mut it.next().expect("BATCH columns")[..])
                };
                // SAFETY: the tiles run here (checked above); q32 holds BATCH packed queries
                // of d features, the panels `rows` rows, every output `rows` entries.
                unsafe { tiles::rbf_panels_f32::<BATCH>(&panels, d, &q32, &e, &mut outs) };
                std::hint::black_box(&mut outs);
            }
            reps += 16;
        }
        let flops = 2.0 * (rows * d * BATCH) as f64 * reps as f64;
        Some(flops / start.elapsed().as_secs_f64())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (d, min_time);
        None
    }
}

/// Asks the core's L2 for part `part` of `parts` of rows r0..r0+n of a dense layout (the next
/// block of a blocked pass, fetched piece by piece while the current block's batches run, so
/// that packing it finds it in cache); nothing for other layouts.
pub fn prefetch_rows(a: &ColumnArgs<'_>, r0: usize, n: usize, (part, parts): (usize, usize)) {
    #[cfg(target_arch = "x86_64")]
    if let Layout::Dense { d, xb, .. } = a.layout {
        use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
        let (lo, hi) = ((r0 * d).min(xb.len()), ((r0 + n) * d).min(xb.len()));
        let lines = (hi - lo).div_ceil(16);
        let per = lines.div_ceil(parts.max(1));
        for l in (part * per..lines.min((part + 1) * per)).map(|l| lo + 16 * l) {
            // SAFETY: l < xb.len() (lo + 16·l < hi ≤ len): the address lies in the layout; a
            // prefetch reads nothing architecturally.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(xb.as_ptr().add(l) as *const i8) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (a, r0, n, part, parts);
}

/// f32 RBF columns over dense rows whose products are formed in f32 ([`F32_DOTS_MIN_D`]
/// features or more: narrow rows, [`narrow_f32`], go to the fused kernel) by the AVX-512
/// tiles with the entries finished in registers ([`tiles::rbf_f32`]): the same entries as
/// [`columns_chunk_impl`]. Returns whether it computed them (false: not this kernel, layout
/// or CPU).
fn wide_rbf_f32(
    a: &ColumnArgs<'_>,
    (cols, q32): Batch<'_>,
    r0: usize,
    outs: &mut [&mut [f32]],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if outs.len() > BATCH {
            return false;
        }
        let lens: [usize; BATCH] = std::array::from_fn(|c| outs.get(c).map_or(0, |o| o.len()));
        let k = cols.len();
        let Some(job) = DenseRbf::of(a, k, r0, &lens[..outs.len()]) else {
            return false;
        };
        // Narrow rows form the exponent in f32 too (the fused kernel's columns).
        if !job.f32 || narrow_f32(a.kernel, a.layout) {
            return false;
        }
        fn run<const K: usize>(
            job: &DenseRbf<'_>,
            q32: &[f32],
            a: &ColumnArgs<'_>,
            cols: &[(usize, &[f64])],
            outs: &mut [&mut [f32]],
        ) {
            let e = job.epilogue::<K>(a, cols, true);
            PANELS.with_borrow(|p| match p.of(job.xb) {
                // SAFETY: the tiles run on this CPU (DenseRbf::of checked it); q32 holds K
                // packed queries of d features, the panels the rows packed, every output n
                // entries.
                Some(panels) => unsafe { tiles::rbf_panels_f32::<K>(panels, job.d, q32, &e, outs) },
                // SAFETY: as above, with xb the rows' whole blocks.
                None => unsafe { tiles::rbf_f32::<K>(job.xb, job.d, q32, &e, outs) },
            })
        }
        let d = job.d;
        match q32.filter(|p| k == BATCH && p.len() == BATCH * d) {
            Some(q32) => for_batch!(k, run(&job, q32, a, cols, outs)),
            None => {
                let qs: [&[f64]; BATCH] =
                    std::array::from_fn(|c| cols.get(c).map_or(&[][..], |x| x.1));
                PACKED.with_borrow_mut(|p| {
                    let q32 = p.pack(&qs[..k], d);
                    for_batch!(k, run(&job, q32, a, cols, outs))
                })
            }
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, cols, q32, r0, outs);
        false
    }
}

/// f64 RBF columns over dense rows by the AVX-512 tiles with the entries finished in
/// registers ([`tiles::rbf_f64`]): the same entries as [`columns_chunk_impl`]. Returns whether
/// it computed them (false: not this kernel, layout or CPU).
fn rbf_f64_in_registers(
    a: &ColumnArgs<'_>,
    cols: &[(usize, &[f64])],
    r0: usize,
    outs: &mut [&mut [f64]],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if outs.len() > BATCH {
            return false;
        }
        let lens: [usize; BATCH] = std::array::from_fn(|c| outs.get(c).map_or(0, |o| o.len()));
        let k = cols.len();
        let Some(job) = DenseRbf::of(a, k, r0, &lens[..outs.len()]) else {
            return false;
        };
        let qs: [&[f64]; BATCH] =
            std::array::from_fn(|c| cols.get(c).map_or(&[][..], |x| &x.1[..job.d]));
        fn run<const K: usize>(
            job: &DenseRbf<'_>,
            qs: &[&[f64]],
            a: &ColumnArgs<'_>,
            cols: &[(usize, &[f64])],
            outs: &mut [&mut [f64]],
        ) {
            let e = job.epilogue::<K>(a, cols, false);
            PANELS.with_borrow(|p| match p.wide_of(job.xb) {
                // SAFETY: the tiles run on this CPU (DenseRbf::of checked it); every query
                // holds d values, the widened rows the rows' whole blocks, every output n
                // entries.
                Some(x64) => unsafe { tiles::rbf_f64::<K, f64>(x64, job.d, qs, &e, outs) },
                // SAFETY: as above, with xb the rows' whole blocks.
                None => unsafe { tiles::rbf_f64::<K, f32>(job.xb, job.d, qs, &e, outs) },
            })
        }
        for_batch!(k, run(&job, &qs[..k], a, cols, outs));
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, cols, r0, outs);
        false
    }
}

/// The AVX-512 copy with vector popcounts (the bit-set layouts' dots, eight rows at once).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq,avx2,fma,popcnt")]
fn columns_chunk_avx512_vpopcnt<T: Elem>(
    a: &ColumnArgs<'_>,
    cols: Batch<'_>,
    r0: usize,
    dots: &mut [f64],
    outs: &mut [&mut [T]],
) {
    columns_chunk_impl::<true, T>(a, cols, r0, dots, outs);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma,popcnt")]
fn columns_chunk_avx512<T: Elem>(
    a: &ColumnArgs<'_>,
    cols: Batch<'_>,
    r0: usize,
    dots: &mut [f64],
    outs: &mut [&mut [T]],
) {
    columns_chunk_impl::<true, T>(a, cols, r0, dots, outs);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,popcnt")]
fn columns_chunk_avx2<T: Elem>(
    a: &ColumnArgs<'_>,
    cols: Batch<'_>,
    r0: usize,
    dots: &mut [f64],
    outs: &mut [&mut [T]],
) {
    columns_chunk_impl::<true, T>(a, cols, r0, dots, outs);
}

#[inline(always)]
fn columns_chunk_impl<const F: bool, T: Elem>(
    a: &ColumnArgs<'_>,
    (cols, q32): Batch<'_>,
    r0: usize,
    dots: &mut [f64],
    outs: &mut [&mut [T]],
) {
    assert!(cols.len() <= BATCH && cols.len() == outs.len());
    let Some(first) = outs.first() else {
        return;
    };
    let n = first.len();
    if let Layout::Hybrid {
        cont,
        bin,
        xb,
        words,
        bits,
    } = a.layout
    {
        hybrid_batch::<F, T>(a, (cont, bin, xb, *words, bits), cols, r0, dots, outs);
        return;
    }
    let qs: [&[f64]; BATCH] = std::array::from_fn(|c| cols.get(c).map_or(&[][..], |x| x.1));
    if let Layout::Sparse {
        indptr,
        indices,
        values,
    } = a.layout
        && cols.len() > 1
    {
        let stride = n;
        sparse_dots_batch(
            &indptr[r0..r0 + n + 1],
            (indices, values),
            &qs[..cols.len()],
            stride,
            dots,
        );
        finish_batch::<F, T>(a, cols, (r0, n, stride), dots, outs);
        return;
    }
    let Layout::Dense { d, xb, .. } = a.layout else {
        // Bit rows, and a single CSR column: one pass per query.
        for (&(j, q), out) in cols.iter().zip(outs.iter_mut()) {
            column_chunk_impl::<F, T>(a, j, q, r0, dots, out);
        }
        return;
    };
    let d = *d;
    let nb = n.div_ceil(LANES);
    let stride = nb * LANES;
    let b0 = r0 / LANES;
    let xb = &xb[b0 * d * LANES..(b0 + nb) * d * LANES];
    let q32 = q32.filter(|p| cols.len() == BATCH && p.len() == BATCH * d);
    let f32 = T::SINGLE && (f32_dots(d) || narrow_f32(a.kernel, a.layout));
    dense_dots_split::<F>(xb, d, (&qs[..cols.len()], q32), (stride, f32), dots);
    finish_batch::<F, T>(a, cols, (r0, n, stride), dots, outs);
}

/// The batch's entries from their dots (column c's n dots at `dots[c * stride ..]`) over rows
/// r0..r0 + n.
#[inline(always)]
fn finish_batch<const F: bool, T: Elem>(
    a: &ColumnArgs<'_>,
    cols: &[(usize, &[f64])],
    (r0, n, stride): (usize, usize, usize),
    dots: &[f64],
    outs: &mut [&mut [T]],
) {
    for (c, (&(j, _), out)) in cols.iter().zip(outs.iter_mut()).enumerate() {
        finish::<F, T>(
            a.kernel,
            &dots[c * stride..c * stride + n],
            &a.norms[r0..r0 + n],
            &a.y[r0..r0 + n],
            a.norms[j],
            a.y[j],
            out,
        );
    }
}

/// [`columns_chunk_impl`] over the hybrid layout: the continuous part batched as the dense
/// layout's, then each column's bits added, in the order of the single-column loop.
#[inline(always)]
fn hybrid_batch<const F: bool, T: Elem>(
    a: &ColumnArgs<'_>,
    (cont, bin, xb, words, bits): (&[u32], &[u32], &[f32], usize, &[u64]),
    cols: &[(usize, &[f64])],
    r0: usize,
    dots: &mut [f64],
    outs: &mut [&mut [T]],
) {
    let n = outs[0].len();
    let (dc, nb, b0) = (cont.len(), n.div_ceil(LANES), r0 / LANES);
    let stride = nb * LANES;
    let mut qc = [[0.0f64; MAX_HYBRID_CONT]; BATCH];
    let mut qb = [[0u64; MAX_HYBRID_WORDS]; BATCH];
    let mut pop = [true; BATCH];
    for (c, &(_, q)) in cols.iter().enumerate() {
        pop[c] = hybrid_query(cont, bin, q, &mut qc[c][..dc], &mut qb[c][..words]);
    }
    let xb = &xb[b0 * dc * LANES..(b0 + nb) * dc * LANES];
    let qs: [&[f64]; BATCH] = std::array::from_fn(|c| &qc[c][..dc]);
    let narrow = T::SINGLE && narrow_f32(a.kernel, a.layout);
    let f32 = T::SINGLE && (f32_dots(dc) || narrow);
    dense_dots_split::<F>(xb, dc, (&qs[..cols.len()], None), (stride, f32), dots);
    let bb = &bits[b0 * words * LANES..(b0 + nb) * words * LANES];
    for (c, (&(j, q), out)) in cols.iter().zip(outs.iter_mut()).enumerate() {
        hybrid_add_bits(
            bb,
            words,
            bin,
            q,
            &qb[c][..words],
            pop[c],
            &mut dots[c * stride..(c + 1) * stride],
        );
        finish::<F, T>(
            a.kernel,
            &dots[c * stride..c * stride + n],
            &a.norms[r0..r0 + n],
            &a.y[r0..r0 + n],
            a.norms[j],
            a.y[j],
            out,
        );
    }
}

/// Σ a_t b_t over eight running sums (one sum would wait on each add's latency), with FMAs
/// where the CPU has them. Prediction's per-pair decision values.
pub fn dot_f64(a: &[f64], b: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports the features the function is compiled for.
            return unsafe { dot_f64_avx2(a, b) };
        }
    }
    dot_f64_impl::<false>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn dot_f64_avx2(a: &[f64], b: &[f64]) -> f64 {
    dot_f64_impl::<true>(a, b)
}

#[inline(always)]
fn dot_f64_impl<const F: bool>(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .fold(0.0, |s, (x, y)| fmadd::<F>(*x, *y, s));
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] = fmadd::<F>(x[l], y[l], acc[l]);
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// k(x, x_j) for every j into `out`, from the dots ⟨x, x_j⟩, the norms ‖x_j‖² and ‖x‖² = `ni`:
/// [`Kernel::from_dot`] with the RBF's exponential vectorized ([`exp_nonpos`], relative error
/// below 5e-16). Used by prediction, which needs every support vector's value once per row.
pub fn kernel_values(kernel: Kernel, dots: &[f64], nj: &[f64], ni: f64, out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports the features the function is compiled for.
            return unsafe { kernel_values_avx2(kernel, dots, nj, ni, out) };
        }
    }
    kernel_values_impl::<false>(kernel, dots, nj, ni, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn kernel_values_avx2(kernel: Kernel, dots: &[f64], nj: &[f64], ni: f64, out: &mut [f64]) {
    kernel_values_impl::<true>(kernel, dots, nj, ni, out)
}

#[inline(always)]
fn kernel_values_impl<const F: bool>(
    kernel: Kernel,
    dots: &[f64],
    nj: &[f64],
    ni: f64,
    out: &mut [f64],
) {
    match kernel {
        Kernel::Rbf { gamma } => {
            for ((o, &dt), &n) in out.iter_mut().zip(dots).zip(nj) {
                *o = exp_nonpos::<F>(-gamma * fmadd::<F>(-2.0, dt, ni + n).max(0.0));
            }
        }
        _ => {
            for ((o, &dt), &n) in out.iter_mut().zip(dots).zip(nj) {
                *o = kernel.from_dot(dt, ni, n);
            }
        }
    }
}

/// Σ_j coef_j · (k(x_i, x_j) + 1) for one row i, from the dots ⟨x_i, x_j⟩, the norms ‖x_j‖²
/// and ‖x_i‖² = `ni`. Used by the exact gradient.
pub fn kernel_row_sum(kernel: Kernel, dots: &[f64], nj: &[f64], coef: &[f64], ni: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports the features the function is compiled for.
            return unsafe { kernel_row_sum_avx2(kernel, dots, nj, coef, ni) };
        }
    }
    kernel_row_sum_impl::<false>(kernel, dots, nj, coef, ni)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn kernel_row_sum_avx2(kernel: Kernel, dots: &[f64], nj: &[f64], coef: &[f64], ni: f64) -> f64 {
    kernel_row_sum_impl::<true>(kernel, dots, nj, coef, ni)
}

#[inline(always)]
fn kernel_row_sum_impl<const F: bool>(
    kernel: Kernel,
    dots: &[f64],
    nj: &[f64],
    coef: &[f64],
    ni: f64,
) -> f64 {
    let mut acc = [0.0f64; LANES];
    let n = dots.len();
    let full = n / LANES * LANES;
    let term = |dt: f64, n: f64| -> f64 {
        match kernel {
            Kernel::Rbf { gamma } => {
                exp_nonpos::<F>(-gamma * fmadd::<F>(-2.0, dt, ni + n).max(0.0)) + 1.0
            }
            Kernel::Linear => dt + 1.0,
            Kernel::Poly {
                gamma,
                coef0,
                degree,
            } => fmadd::<F>(gamma, dt, coef0).powi(degree as i32) + 1.0,
            Kernel::Sigmoid { gamma, coef0 } => fmadd::<F>(gamma, dt, coef0).tanh() + 1.0,
        }
    };
    for k in (0..full).step_by(LANES) {
        for l in 0..LANES {
            acc[l] = fmadd::<F>(coef[k + l], term(dots[k + l], nj[k + l]), acc[l]);
        }
    }
    let s = (full..n).fold(0.0, |s, k| fmadd::<F>(coef[k], term(dots[k], nj[k]), s));
    acc.iter().sum::<f64>() + s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `m` rows of `d` features stored as CSR with every entry listed: a one-hot category over
    /// features 0–5 and three more 0/1 features (when `binary`), continuous ones elsewhere;
    /// labels −1 on every third row.
    pub(crate) fn mixed_rows(m: usize, d: usize, seed: u64, binary: bool) -> crate::data::Dataset {
        let mut r = crate::rng::SplitMix64::new(seed);
        let mut vals = Vec::with_capacity(m * d);
        for _ in 0..m {
            let cat = r.below(6);
            for f in 0..d {
                vals.push(match f {
                    0..6 if binary => f32::from(f == cat),
                    6..9 if binary => f32::from(r.next_f64() < 0.3),
                    _ => (r.next_f64() * 2.0 - 1.0) as f32,
                });
            }
        }
        let y: Vec<f64> = (0..m)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let ip: Vec<usize> = (0..=m).map(|i| i * d).collect();
        let ix: Vec<u32> = (0..m * d).map(|k| (k % d) as u32).collect();
        crate::data::Dataset::from_csr(d, ip, ix, vals, y)
    }

    /// `n` rows of `ds` spread over it (row (37c + 5) mod m for c < n) as dense f64 queries,
    /// with their indices.
    fn spread_queries(ds: &crate::data::Dataset, n: usize) -> Vec<(usize, Vec<f64>)> {
        let rows: Vec<usize> = (0..n).map(|c| (c * 37 + 5) % ds.len()).collect();
        queries_at(ds, &rows)
    }

    /// The rows `rows` of `ds` as dense f64 queries, with their indices.
    fn queries_at(ds: &crate::data::Dataset, rows: &[usize]) -> Vec<(usize, Vec<f64>)> {
        rows.iter()
            .map(|&j| {
                let mut q = vec![0.0; ds.n_features()];
                ds.row(j).scatter_f64(&mut q);
                (j, q)
            })
            .collect()
    }

    /// The batch `cols` over rows r0..r0 + n of `layout` by [`columns_chunk`].
    fn batched_columns<T: Elem>(
        (layout, kernel): (&Layout<'_>, Kernel),
        (norms, y): (&[f64], &[f64]),
        cols: &[(usize, &[f64])],
        (r0, n): (usize, usize),
    ) -> Vec<Vec<T>> {
        let a = ColumnArgs {
            layout,
            kernel,
            norms,
            y,
            rbf_table: None,
        };
        let mut out = vec![vec![T::default(); n]; cols.len()];
        let mut outs: Vec<&mut [T]> = out.iter_mut().map(|v| &mut v[..]).collect();
        let mut dots = vec![0.0; cols.len() * n.next_multiple_of(LANES)];
        columns_chunk(&a, cols, r0, &mut dots, &mut outs);
        out
    }

    /// Asserts that `compute`, a path that finishes the entries in registers, gives the
    /// columns of [`columns_chunk_impl`] (products stored, then finished by loops over them)
    /// bit for bit on `ds` at each of `gammas`: every batch size, chunks that start past the
    /// first row, partial last blocks and pairs of blocks. `compute` must take every batch.
    pub(super) fn assert_finished_in_registers<T: Elem>(
        ds: &crate::data::Dataset,
        gammas: &[f64],
        compute: impl Fn(&ColumnArgs<'_>, &[(usize, &[f64])], usize, &mut [&mut [T]]) -> bool,
    ) {
        let (m, d) = (ds.len(), ds.n_features());
        let layout = Layout::new(ds);
        let norms: Vec<f64> = (0..m).map(|i| ds.row(i).sq_norm()).collect();
        let queries = spread_queries(ds, BATCH);
        for &gamma in gammas {
            let args = ColumnArgs {
                layout: &layout,
                kernel: Kernel::Rbf { gamma },
                norms: &norms,
                y: &ds.labels,
                rbf_table: None,
            };
            for (r0, n) in [(0, m), (16, 150), (8, 9), (24, 16), (m - 5, 5), (40, 24)] {
                for k in 1..=BATCH {
                    let cols: Vec<(usize, &[f64])> =
                        queries[..k].iter().map(|(j, q)| (*j, &q[..])).collect();
                    let mut fused = vec![vec![T::from_f64(f64::NAN); n]; k];
                    let mut outs: Vec<&mut [T]> = fused.iter_mut().map(|v| &mut v[..]).collect();
                    assert!(
                        compute(&args, &cols, r0, &mut outs),
                        "the path took the batch"
                    );
                    let mut plain = vec![vec![T::default(); n]; k];
                    let mut outs: Vec<&mut [T]> = plain.iter_mut().map(|v| &mut v[..]).collect();
                    let mut dots = vec![0.0; k * n.next_multiple_of(LANES)];
                    columns_chunk_impl::<true, T>(&args, (&cols, None), r0, &mut dots, &mut outs);
                    for c in 0..k {
                        let bits = |v: &[T]| -> Vec<u64> {
                            v.iter().map(|x| x.to_f64().to_bits()).collect()
                        };
                        assert_eq!(
                            bits(&fused[c]),
                            bits(&plain[c]),
                            "d {d}, γ {gamma}, rows {r0}+{n}, k {k}, column {c}"
                        );
                    }
                }
            }
        }
    }

    /// The f32 RBF columns of wide dense rows, finished in the tiles' registers, equal the
    /// two-pass columns bit for bit, with a full batch packed by its pass or by the thread,
    /// and over rows packed in panels of sixteen.
    #[test]
    fn wide_columns_finished_in_registers_equal_the_two_pass_columns() {
        if !tiles::available() {
            eprintln!("SKIPPED: the tiles need AVX-512");
            return;
        }
        for d in [32usize, 45, 300] {
            let ds = mixed_rows(301, d, d as u64, false);
            assert!(matches!(Layout::new(&ds), Layout::Dense { .. }));
            for (packed_by_pass, panels) in [(false, false), (true, false), (true, true)] {
                assert_finished_in_registers::<f32>(
                    &ds,
                    &[0.5 / d as f64, 4.0 / d as f64],
                    |args, cols, r0, outs| {
                        let full = packed_by_pass && cols.len() == BATCH;
                        let mut packed = Vec::new();
                        if full {
                            let q: Vec<&[f64]> = cols.iter().map(|c| c.1).collect();
                            pack_queries(&q, d, &mut packed);
                        }
                        let n = outs[0].len();
                        let mut run =
                            || wide_rbf_f32(args, (cols, full.then_some(&packed[..])), r0, outs);
                        if panels {
                            // The rows packed in panels of sixteen (and used: checked below).
                            with_row_panels(args, (r0, n), true, || {
                                let held = PANELS.with_borrow(|p| p.src.is_some());
                                run() && held
                            })
                        } else {
                            run()
                        }
                    },
                );
            }
        }
    }

    /// The f64 RBF columns of dense rows, finished in the tiles' registers, equal the
    /// two-pass columns bit for bit, for few and many features, and over rows widened to f64
    /// once for the pass.
    #[test]
    fn f64_columns_finished_in_registers_equal_the_two_pass_columns() {
        if !tiles::available() {
            eprintln!("SKIPPED: the tiles need AVX-512");
            return;
        }
        for d in [3usize, 17, 45] {
            let ds = mixed_rows(301, d, 7 * d as u64, false);
            assert!(matches!(Layout::new(&ds), Layout::Dense { .. }));
            assert_finished_in_registers::<f64>(
                &ds,
                &[0.5 / d as f64, 6.0 / d as f64],
                rbf_f64_in_registers,
            );
            // The rows widened to f64 once for the pass (and used: checked).
            assert_finished_in_registers::<f64>(
                &ds,
                &[0.5 / d as f64, 6.0 / d as f64],
                |args, cols, r0, outs| {
                    let n = outs[0].len();
                    with_row_panels(args, (r0, n), false, || {
                        let held = PANELS.with_borrow(|p| matches!(p.src, Some((_, _, true))));
                        rbf_f64_in_registers(args, cols, r0, outs) && held
                    })
                },
            );
        }
    }

    /// Dense rows with enough 0/1 features get the hybrid layout (also for a selection of
    /// rows), and its columns equal the plain dense layout's to rounding (the sums are
    /// grouped differently), batched columns equal single ones bit for bit, and a query
    /// with other values on the binary features is summed, not popcounted.
    #[test]
    fn hybrid_rows_give_the_dense_columns() {
        let (m, d) = (250usize, 17usize);
        let ds = mixed_rows(m, d, 6, true);
        let y = ds.labels.clone();
        let hybrid = Layout::new(&ds);
        let Layout::Hybrid { ref bin, .. } = hybrid else {
            panic!("expected the hybrid layout");
        };
        assert_eq!(bin.len(), 9);
        let rows: Vec<usize> = (0..m).step_by(3).collect();
        assert!(matches!(
            Layout::of_rows(&ds, &rows, false),
            Layout::Hybrid { .. }
        ));
        let nb = m.div_ceil(LANES);
        let mut xb = vec![0f32; nb * d * LANES];
        for i in 0..m {
            let mut v = vec![0.0; d];
            ds.row(i).scatter_f64(&mut v);
            for f in 0..d {
                xb[((i / LANES) * d + f) * LANES + i % LANES] = v[f] as f32;
            }
        }
        let plain = Layout::Dense {
            d,
            xb: Aligned::from(&xb[..]),
        };
        let norms: Vec<f64> = (0..m).map(|i| ds.row(i).sq_norm()).collect();
        let mut queries = queries_at(&ds, &[0, 7, 100, 249, 31]);
        queries[4].1[2] = 0.5;
        let cols: Vec<(usize, &[f64])> = queries.iter().map(|(j, q)| (*j, &q[..])).collect();
        let (r0, n) = (16, 230);
        for kernel in [
            Kernel::Rbf { gamma: 0.4 },
            Kernel::Linear,
            Kernel::Sigmoid {
                gamma: 0.1,
                coef0: -0.2,
            },
        ] {
            let (sides, span) = ((&norms[..], &y[..]), (r0, n));
            let got: Vec<Vec<f64>> = batched_columns((&hybrid, kernel), sides, &cols, span);
            let want: Vec<Vec<f64>> = batched_columns((&plain, kernel), sides, &cols, span);
            let a = ColumnArgs {
                layout: &hybrid,
                kernel,
                norms: &norms,
                y: &y,
                rbf_table: None,
            };
            for c in 0..cols.len() {
                for i in 0..n {
                    assert!(
                        (got[c][i] - want[c][i]).abs() < 1e-12,
                        "{kernel:?} column {c} row {i}: {} vs {}",
                        got[c][i],
                        want[c][i]
                    );
                }
                let mut one = vec![0f64; n];
                let mut dots1 = vec![0.0; n.next_multiple_of(LANES)];
                column_chunk(&a, cols[c].0, cols[c].1, r0, &mut dots1, &mut one);
                for i in 0..n {
                    assert_eq!(one[i].to_bits(), got[c][i].to_bits(), "batched vs single");
                }
            }
        }
    }

    /// The CSR layout over a sparse dataset's own arrays.
    fn csr_layout(ds: &crate::data::Dataset) -> Layout<'_> {
        let crate::data::Features::Sparse {
            indptr,
            indices,
            values,
            ..
        } = &ds.features
        else {
            panic!("a sparse dataset")
        };
        Layout::Sparse {
            indptr: Cow::Borrowed(indptr),
            indices: Cow::Borrowed(indices),
            values: Cow::Borrowed(values),
        }
    }

    /// Rows whose values are all 1 are kept as bit sets (from the dataset and from a
    /// selection of its rows), and give the CSR layout's columns bit for bit, for binary
    /// queries (popcounts) and for a query with other values (sums over the bits); batches too.
    #[test]
    fn binary_rows_give_the_csr_columns() {
        let mut r = crate::rng::SplitMix64::new(4);
        let (m, d) = (300usize, 150usize);
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..m {
            for f in 0..d {
                if r.next_f64() < 0.08 {
                    ix.push(f as u32);
                    vs.push(1.0f32);
                }
            }
            ip.push(ix.len());
        }
        let y: Vec<f64> = (0..m)
            .map(|i| if i % 4 == 0 { -1.0 } else { 1.0 })
            .collect();
        let ds = crate::data::Dataset::from_csr(d, ip, ix, vs, y.clone());
        let binary = Layout::new(&ds);
        assert!(matches!(binary, Layout::Binary { words: 3, .. }));
        let rows: Vec<usize> = (0..m).rev().step_by(2).collect();
        assert!(matches!(
            Layout::of_rows(&ds, &rows, false),
            Layout::Binary { .. }
        ));
        let csr = csr_layout(&ds);
        let norms: Vec<f64> = (0..m).map(|i| ds.row(i).sq_norm()).collect();
        for kernel in [Kernel::Rbf { gamma: 0.2 }, Kernel::Linear] {
            let mut queries: Vec<(usize, Vec<f64>)> = [3usize, 77, 150, 299]
                .iter()
                .map(|&j| {
                    let mut q = vec![0.0; d];
                    ds.row(j).scatter_f64(&mut q);
                    (j, q)
                })
                .collect();
            // Not a row of the data: values other than 1.
            queries.push((
                5,
                (0..d)
                    .map(|f| if f % 7 == 0 { 0.25 } else { 0.0 })
                    .collect(),
            ));
            let cols: Vec<(usize, &[f64])> = queries.iter().map(|(j, q)| (*j, &q[..])).collect();
            let (r0, n) = (8, 280);
            let mut got = vec![vec![0f64; n]; cols.len()];
            let mut want = vec![vec![0f64; n]; cols.len()];
            for (layout, out) in [(&binary, &mut got), (&csr, &mut want)] {
                let a = ColumnArgs {
                    layout,
                    kernel,
                    norms: &norms,
                    y: &y,
                    rbf_table: None,
                };
                let mut outs: Vec<&mut [f64]> = out.iter_mut().map(|v| &mut v[..]).collect();
                let mut dots = vec![0.0; cols.len() * n.next_multiple_of(LANES)];
                columns_chunk(&a, &cols, r0, &mut dots, &mut outs);
            }
            for c in 0..cols.len() {
                for i in 0..n {
                    assert_eq!(
                        got[c][i].to_bits(),
                        want[c][i].to_bits(),
                        "{kernel:?} column {c} row {i}"
                    );
                }
            }
        }
    }

    /// A batch of columns equals the columns one by one, bit for bit, for every batch size
    /// the dispatch splits differently (1, 2, 3, 5, 8), dense and CSR, on a chunk that does
    /// not start at row 0 and ends inside a block.
    #[test]
    fn batched_columns_equal_single_columns() {
        let mut r = crate::rng::SplitMix64::new(9);
        let m = 203usize;
        // d = 40 and 300 take the f32 products' register-blocked tiles (19 blocks of rows in
        // the chunk below: pairs and a remainder).
        // CSR rows at 5 % and 1 % non-zeros: a batch packs its queries where the rows' non-zeros
        // outnumber their features four to one (d = 11 and 300 at 5 %), not at d = 300 and 1 %.
        for (dense, d, density) in [
            (true, 11usize, 1.0),
            (false, 11, 0.05),
            (true, 40, 1.0),
            (true, 300, 1.0),
            (false, 300, 0.05),
            (false, 300, 0.01),
        ] {
            let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
            for _ in 0..m {
                for f in 0..d {
                    if dense || r.next_f64() < density {
                        ix.push(f as u32);
                        vs.push((r.next_f64() * 2.0 - 1.0) as f32);
                    }
                }
                ip.push(ix.len());
            }
            let y: Vec<f64> = (0..m)
                .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
                .collect();
            let ds = crate::data::Dataset::from_csr(d, ip, ix, vs, y.clone());
            let layout = Layout::new(&ds);
            assert_eq!(matches!(layout, Layout::Dense { .. }), dense);
            let norms: Vec<f64> = (0..m).map(|i| ds.row(i).sq_norm()).collect();
            let args = ColumnArgs {
                layout: &layout,
                kernel: Kernel::Rbf { gamma: 0.3 },
                norms: &norms,
                y: &y,
                rbf_table: None,
            };
            let queries = spread_queries(&ds, 8);
            let (r0, n) = (16, 150);
            for k in [1usize, 2, 3, 5, 8] {
                let cols: Vec<(usize, &[f64])> =
                    queries[..k].iter().map(|(j, q)| (*j, &q[..])).collect();
                let mut store = vec![vec![0f32; n]; k];
                let mut outs: Vec<&mut [f32]> = store.iter_mut().map(|v| &mut v[..]).collect();
                let mut dots = vec![0.0; k * n.next_multiple_of(LANES)];
                columns_chunk(&args, &cols, r0, &mut dots, &mut outs);
                // The batched pass uses fused multiply-adds where the CPU has them (mul_add
                // is the same correctly rounded operation in software).
                #[cfg(target_arch = "x86_64")]
                let fused = std::is_x86_feature_detected!("fma")
                    && (std::is_x86_feature_detected!("avx2")
                        || std::is_x86_feature_detected!("avx512f"));
                #[cfg(not(target_arch = "x86_64"))]
                let fused = false;
                for (c, &(j, q)) in cols.iter().enumerate() {
                    let mut one = vec![0f32; n];
                    let mut dots1 = vec![0.0; n.next_multiple_of(LANES)];
                    if fused {
                        column_chunk_impl::<true, f32>(&args, j, q, r0, &mut dots1, &mut one);
                    } else {
                        column_chunk_impl::<false, f32>(&args, j, q, r0, &mut dots1, &mut one);
                    }
                    assert_eq!(store[c], one, "dense {dense}, batch {k}, column {c}");
                }
            }
        }
    }

    /// The f32 products equal, bit for bit, each row's sum over the features in order from
    /// zero with fused multiply-adds, for every batch size and any number of blocks (the
    /// register-blocked tiles and their remainders).
    #[test]
    fn f32_products_are_the_ordered_fused_sums() {
        let mut r = crate::rng::SplitMix64::new(4);
        for (d, nblk) in [(37usize, 5usize), (64, 1), (300, 6)] {
            let xb: Vec<f32> = (0..nblk * d * LANES)
                .map(|_| (r.next_f64() * 2.0 - 1.0) as f32)
                .collect();
            let qs: Vec<Vec<f64>> = (0..8)
                .map(|_| (0..d).map(|_| r.next_f64() * 2.0 - 1.0).collect())
                .collect();
            let stride = nblk * LANES;
            let want = |c: usize, row: usize| -> f64 {
                let (b, l) = (row / LANES, row % LANES);
                let mut acc = 0f32;
                for f in 0..d {
                    acc = xb[(b * d + f) * LANES + l].mul_add(qs[c][f] as f32, acc);
                }
                acc as f64
            };
            let refs: Vec<&[f64]> = qs.iter().map(|q| &q[..]).collect();
            let mut out = vec![f64::NAN; 8 * stride];
            dense_dots_f32::<true, 8>(&xb, d, &refs, stride, &mut out);
            let mut out4 = vec![f64::NAN; 4 * stride];
            dense_dots_f32::<true, 4>(&xb, d, &refs[2..6], stride, &mut out4);
            let mut out1 = vec![f64::NAN; stride];
            dense_dots_f32::<true, 1>(&xb, d, &refs[7..], stride, &mut out1);
            for row in 0..stride {
                for c in 0..8 {
                    assert_eq!(out[c * stride + row].to_bits(), want(c, row).to_bits());
                }
                for c in 0..4 {
                    assert_eq!(out4[c * stride + row].to_bits(), want(c + 2, row).to_bits());
                }
                assert_eq!(out1[row].to_bits(), want(7, row).to_bits());
            }
        }
    }

    /// The largest relative error of `got` against `want` over [lo, 0]: every (−lo/2·10⁶)-th
    /// point and its neighbouring floats.
    fn worst_error(lo: f32, got: impl Fn(f32) -> f64, want: impl Fn(f64) -> f64) -> f64 {
        let mut worst: f64 = 0.0;
        let n = 2_000_000;
        for k in 0..=n {
            let x = (lo as f64 * k as f64 / n as f64) as f32;
            for x in [
                x,
                f32::from_bits(x.to_bits() + 1),
                f32::from_bits(x.to_bits().saturating_sub(1)),
            ] {
                if (lo..=0.0).contains(&x) {
                    let w = want(x as f64);
                    worst = worst.max((got(x) - w).abs() / w);
                }
            }
        }
        worst
    }

    /// The f32 base-2 exponential (columns and screen) against f64's over [−124, 0], with and
    /// without fused multiply-adds: within EXP2_32_ERR at a grid of points (the exponent's
    /// range); [`f32_exp2_polynomial_is_within_its_bound_everywhere`] checks every argument
    /// the polynomial takes.
    #[test]
    fn f32_exp2_is_within_its_bound() {
        for got in [exp2_nonpos_f32::<true>, exp2_nonpos_f32::<false>] {
            let worst = worst_error(EXP2_32_LO, |x| got(x) as f64, f64::exp2);
            assert!(worst <= EXP2_32_ERR, "relative error {worst:e}");
            assert_eq!(got(0.0), 1.0);
            assert_eq!(got(-3.0), 0.125);
            assert_eq!(got(-1e6), got(EXP2_32_LO));
        }
    }

    /// The largest relative errors of POLY2_32 (with, without fused multiply-adds) at ±f for
    /// the f32 f of bits `bits`, against 2^f by the series `coef` in f64.
    #[inline(always)]
    fn exp2_run(bits: std::ops::Range<u32>, coef: &[f64]) -> [f64; 2] {
        let poly = |f: f32, fma: bool| {
            let mut p = POLY2_32[0];
            for &c in &POLY2_32[1..] {
                p = if fma { p.mul_add(f, c) } else { p * f + c };
            }
            p as f64
        };
        let exact = |f: f64| coef.iter().rev().fold(0.0, |a, &c| a * f + c);
        // Sixteen arguments a step, each lane's worst kept apart (independent chains).
        const L: usize = 16;
        let mut w = [[0.0f64; L]; 2];
        let (start, end) = (bits.start, bits.end);
        let mut b = start;
        while b < end {
            let n = (end - b).min(L as u32) as usize;
            for sign in [1.0f32, -1.0] {
                let f: [f32; L] =
                    std::array::from_fn(|l| sign * f32::from_bits(b + (l.min(n - 1)) as u32));
                let e: [f64; L] = std::array::from_fn(|l| exact(f[l] as f64));
                for (wk, fma) in w.iter_mut().zip([true, false]) {
                    for l in 0..L {
                        wk[l] = wk[l].max((poly(f[l], fma) - e[l]).abs() / e[l]);
                    }
                }
            }
            b += n as u32;
        }
        w.map(|wk| wk.iter().copied().fold(0.0, f64::max))
    }

    /// [`exp2_run`] compiled with FMA (`mul_add` one instruction rather than a call).
    ///
    /// # Safety
    /// The CPU has FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "fma")]
    unsafe fn exp2_run_fma(bits: std::ops::Range<u32>, coef: &[f64]) -> [f64; 2] {
        exp2_run(bits, coef)
    }

    /// [`exp2_nonpos_f32`] is 2^k·p(f) with 2^k exact and f = x − k exact (|f| ≤ 1/2), so its
    /// relative error is p's: p at every f32 of [−1/2, 1/2], by fused multiply-adds and by
    /// separate products and sums, against 2^f in f64 (its Taylor series to degree 12, whose
    /// own error is below 10⁻¹⁵ relative), within EXP2_32_ERR — a proof of the bound for the
    /// arithmetic the columns, the screen and the certification's bound use.
    #[test]
    fn f32_exp2_polynomial_is_within_its_bound_everywhere() {
        use rayon::prelude::*;
        // Horner's steps of 2^f = Σ (f·ln 2)^n / n!, n ≤ 12.
        let coef: Vec<f64> = (0..=12)
            .map(|n| (1..=n).fold(1.0f64, |a, k| a * std::f64::consts::LN_2 / k as f64))
            .collect();
        // Every non-negative f32 up to 1/2 by its bits, and its negative, in runs of 2¹⁶.
        let top = 0.5f32.to_bits();
        let worst = (0..=top / 65_536)
            .into_par_iter()
            .map(|hi| {
                let bits = hi * 65_536..((hi + 1) * 65_536).min(top + 1);
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU has FMA.
                    return unsafe { exp2_run_fma(bits, &coef) };
                }
                exp2_run(bits, &coef)
            })
            .reduce(|| [0.0; 2], |a, b| [a[0].max(b[0]), a[1].max(b[1])]);
        assert!(
            worst.iter().all(|&w| w <= EXP2_32_ERR),
            "relative errors {worst:?} (with, without FMA)"
        );
        // The bound is not loose by more than a fraction of a unit.
        assert!(worst.iter().any(|&w| w > EXP2_32_ERR * 0.9), "{worst:?}");
    }

    #[test]
    fn exp_matches_std() {
        let mut worst: f64 = 0.0;
        let mut x = 0.0f64;
        while x > -700.0 {
            for f in [exp_nonpos::<false>(x), exp_nonpos::<true>(x)] {
                let e = x.exp();
                worst = worst.max(((f - e) / e).abs());
            }
            x -= 0.0137;
        }
        assert!(worst < 1e-15, "worst relative error {worst}");
        assert_eq!(exp_nonpos::<false>(0.0), 1.0);
    }

    /// A CSR dataset dense enough gets the AoSoA copy; its columns equal the CSR loop's.
    #[test]
    fn moderately_sparse_data_gets_the_dense_layout() {
        let mut r = crate::rng::SplitMix64::new(5);
        let (m, d) = (300usize, 38usize);
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..m {
            for f in 0..d {
                if r.next_f64() < 0.25 {
                    ix.push(f as u32);
                    vs.push(r.next_f64() as f32);
                }
            }
            ip.push(ix.len());
        }
        let y: Vec<f64> = (0..m)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let ds = crate::data::Dataset::from_csr(d, ip, ix, vs, y.clone());
        assert!(!ds.is_dense());
        let dense = Layout::new(&ds);
        assert!(matches!(dense, Layout::Dense { .. }));
        let csr = csr_layout(&ds);
        let norms: Vec<f64> = (0..m).map(|i| ds.row(i).sq_norm()).collect();
        let kernel = Kernel::Rbf { gamma: 0.4 };
        let j = 77;
        let mut q = vec![0.0; d];
        ds.row(j).scatter_f64(&mut q);
        let mut cols = [vec![0f64; m], vec![0f64; m]];
        for (layout, col) in [&dense, &csr].into_iter().zip(cols.iter_mut()) {
            let a = ColumnArgs {
                layout,
                kernel,
                norms: &norms,
                y: &y,
                rbf_table: None,
            };
            let mut dots = vec![0.0; m.next_multiple_of(LANES)];
            column_chunk(&a, j, &q, 0, &mut dots, col);
        }
        for (i, (a, b)) in cols[0].iter().zip(&cols[1]).enumerate().take(m) {
            assert!((a - b).abs() < 1e-12, "row {i}");
        }
        // Q_jj without the 1/C term: y_j²(k(x_j, x_j) + 1) = 2.
        assert!((cols[0][j] - 2.0).abs() < 1e-12, "{}", cols[0][j]);
    }
}
