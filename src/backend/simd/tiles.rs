//! AVX-512 micro-kernels for the dense products of a batch of columns: register tiles of
//! rows × queries, as a GEMM micro-kernel blocks them (BLIS's shape: a panel of rows against
//! a few broadcast query values, every accumulator live for the whole sum over the features).
//!
//! The AVX2 loops hold eight accumulators, which leaves the two FMA pipes waiting on the
//! four-cycle latency of each sum; AVX-512 has thirty-two registers, and a tile here holds
//! up to twenty-four. Every (row, query) sum is still formed from zero over the features in
//! order with one fused multiply-add each, as [`super::dense_dots_batch`] and
//! [`super::dense_dots_f32`] form it, so the tiles give the same numbers bit for bit as the
//! AVX2 and portable loops: the columns do not depend on the CPU's vector width.
//!
//! The f32 tiles put sixteen rows (two AoSoA blocks of [`LANES`]) in one register, joined by
//! one insert per feature; the f64 tiles put one block in a register.

use super::LANES;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Whether the tiles run on this CPU.
#[inline]
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// f32 products of K queries with the rows of the whole blocks in `xb`; query c's dots,
/// widened to f64, go to `out[c * stride ..]`. `q32` holds the queries packed feature-major
/// (`q32[f * K + c]` is feature f of query c: the tile's broadcasts then come from one
/// pointer, as a GEMM packs its B panel).
///
/// # Safety
/// [`available`] is true; `q32` holds K·d values; `xb` holds whole blocks of d features;
/// `out` has (K − 1)·stride + the rows' entries.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
pub(super) unsafe fn dots_f32<const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    stride: usize,
    out: &mut [f64],
) {
    assert!(q32.len() >= K * d);
    let nblk = xb.len() / (d * LANES);
    assert!(out.len() >= (K - 1) * stride + nblk * LANES);
    let mut b = 0;
    // SAFETY: for every call below, blocks b.. lie in xb, K queries in q32, and the rows'
    // entries of every query in out (checked above); the caller has the CPU's features.
    unsafe {
        match K {
            1 | 2 => {
                while b + 8 <= nblk {
                    tile_f32::<4, K>(xb, d, q32, b, stride, out);
                    b += 8;
                }
            }
            3..=5 => {
                while b + 6 <= nblk {
                    tile_f32::<3, K>(xb, d, q32, b, stride, out);
                    b += 6;
                }
            }
            _ => {
                while b + 4 <= nblk {
                    tile_f32::<2, K>(xb, d, q32, b, stride, out);
                    b += 4;
                }
            }
        }
        while b + 2 <= nblk {
            tile_f32::<1, K>(xb, d, q32, b, stride, out);
            b += 2;
        }
        if b < nblk {
            last_block_f32::<K>(xb, d, q32, b, stride, out);
        }
    }
}

/// Blocks b..b+2R (R registers of sixteen rows) against the K queries.
///
/// # Safety
/// As [`dots_f32`], with b + 2R ≤ the blocks in `xb`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)] // c and r index the accumulators and the rows alike
unsafe fn tile_f32<const R: usize, const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    b: usize,
    stride: usize,
    out: &mut [f64],
) {
    // SAFETY: the caller's contract bounds every pointer below.
    unsafe {
        let acc = accumulate_f32::<R, K>(xb, d, q32, b);
        let po = out.as_mut_ptr();
        for c in 0..K {
            for r in 0..R {
                let a = acc[c][r];
                let dst = po.add(c * stride + (b + 2 * r) * LANES);
                _mm512_storeu_pd(dst, _mm512_cvtps_pd(_mm512_castps512_ps256(a)));
                _mm512_storeu_pd(
                    dst.add(LANES),
                    _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(a)),
                );
            }
        }
    }
}

/// The sums of blocks b..b+2R (R registers of sixteen rows: lanes 0–7 block b + 2r, lanes
/// 8–15 block b + 2r + 1) with the K queries, `acc[c][r]`: each (row, query) sum formed from
/// zero over the features in order with one fused multiply-add each.
///
/// # Safety
/// As [`dots_f32`], with b + 2R ≤ the blocks in `xb`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)] // c and r index the accumulators and the rows alike
unsafe fn accumulate_f32<const R: usize, const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    b: usize,
) -> [[__m512; R]; K] {
    debug_assert!((b + 2 * R) * d * LANES <= xb.len());
    // SAFETY: the caller's contract bounds every pointer below.
    unsafe {
        let x0 = xb.as_ptr().add(b * d * LANES);
        let next = d * LANES;
        let mut acc = [[_mm512_setzero_ps(); R]; K];
        let mut qf = q32.as_ptr();
        let mut xp = x0;
        for _ in 0..d {
            let mut xv = [_mm512_setzero_ps(); R];
            for (r, v) in xv.iter_mut().enumerate() {
                let lo = _mm256_loadu_ps(xp.add(2 * r * next));
                let hi = _mm256_loadu_ps(xp.add((2 * r + 1) * next));
                *v = _mm512_insertf32x8::<1>(_mm512_castps256_ps512(lo), hi);
            }
            for c in 0..K {
                let qv = _mm512_set1_ps(*qf.add(c));
                for r in 0..R {
                    acc[c][r] = _mm512_fmadd_ps(xv[r], qv, acc[c][r]);
                }
            }
            qf = qf.add(K);
            xp = xp.add(LANES);
        }
        // The accumulators pass through memory once, after the loop: without this LLVM
        // carried the widened halves of the stores that follow into the loop, kept half of
        // the accumulators on the stack and rotated the rest through register moves.
        std::hint::black_box(acc)
    }
}

/// What the RBF entries of [`rbf_f32`] need besides the products: the chunk's rows' squared
/// norms and labels (one per row), the K columns' norms and labels, and the exponent's factor:
/// −γ·log₂e for f32 entries ([`super::rbf_factor`], base 2), −γ for f64 ones.
pub(super) struct RbfEpilogue<'a, const K: usize> {
    pub norms: &'a [f64],
    pub y: &'a [f64],
    pub nj: [f64; K],
    pub yj: [f64; K],
    pub ng: f64,
}

/// f32 RBF entries of K columns over the rows of the blocks in `xb` (the epilogue's rows),
/// written to `outs[c]`: the products of [`dots_f32`] finished in registers, each entry by the
/// steps of [`super::finish_rbf_f32`] — the base-2 exponent t = min(fma(dot, fl(−2·ng),
/// fl(ng·‖x_i‖²) + fl(ng·‖x_j‖²)), 0) in f32 (ng = −γ·log₂e), its exponential
/// [`super::exp2_nonpos_f32`] plus 1, the labels' sign (±1) — so every entry is the same
/// number, without the dots' round trip through memory.
///
/// # Safety
/// [`available`] is true; `q32` holds K·d values packed as for [`dots_f32`]; `xb` holds the
/// whole blocks of the epilogue's rows (rounded up to [`LANES`]); every `outs[c]`, c < K, holds
/// at least as many entries as rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
pub(super) unsafe fn rbf_f32<const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    e: &RbfEpilogue<'_, K>,
    outs: &mut [&mut [f32]],
) {
    let n = e.norms.len();
    let nblk = n.div_ceil(LANES);
    const { assert!(K <= super::BATCH, "at most a batch of queries") };
    assert!(q32.len() >= K * d && e.y.len() == n && xb.len() >= nblk * d * LANES);
    assert!(outs.len() >= K && outs[..K].iter().all(|o| o.len() >= n));
    let po: [*mut f32; K] = std::array::from_fn(|c| outs[c].as_mut_ptr());
    let mut b = 0;
    // SAFETY: for every call below, blocks b.. lie in xb, K queries in q32, and rows of every
    // output up to n (checked above); the caller has the CPU's features.
    unsafe {
        match K {
            1 | 2 => {
                while b + 8 <= nblk {
                    rbf_tile::<4, K>(xb, d, q32, b, e, &po);
                    b += 8;
                }
            }
            3..=5 => {
                while b + 6 <= nblk {
                    rbf_tile::<3, K>(xb, d, q32, b, e, &po);
                    b += 6;
                }
            }
            _ => {
                while b + 4 <= nblk {
                    rbf_tile::<2, K>(xb, d, q32, b, e, &po);
                    b += 4;
                }
            }
        }
        while b + 2 <= nblk {
            rbf_tile::<1, K>(xb, d, q32, b, e, &po);
            b += 2;
        }
        if b < nblk {
            // The last, odd block: its dots through memory, finished by the reference loop.
            let mut dots = [0.0f64; LANES * super::BATCH];
            last_block_f32::<K>(&xb[b * d * LANES..], d, q32, 0, LANES, &mut dots);
            let r0 = b * LANES;
            for c in 0..K {
                let out = std::slice::from_raw_parts_mut(po[c].add(r0), n - r0);
                super::finish_rbf_f32::<true>(
                    e.ng,
                    &dots[c * LANES..c * LANES + n - r0],
                    &e.norms[r0..],
                    &e.y[r0..],
                    (e.nj[c], e.yj[c]),
                    out,
                );
            }
        }
    }
}

/// Blocks b..b+2R against the K queries, finished into RBF entries (see [`rbf_f32`]).
///
/// # Safety
/// As [`rbf_f32`], with b + 2R ≤ the blocks in `xb`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)] // c and r index the accumulators and the outputs alike
unsafe fn rbf_tile<const R: usize, const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    b: usize,
    e: &RbfEpilogue<'_, K>,
    po: &[*mut f32; K],
) {
    // SAFETY: the caller's contract bounds the blocks.
    unsafe { finish_tile::<R, K>(accumulate_f32::<R, K>(xb, d, q32, b), b, e, po) }
}

/// The RBF entries of rows (b + 2r)·8 … + 16 of the K columns from their dots `acc[c][r]`
/// (see [`rbf_f32`]), stored to `po[c]` under a mask past the epilogue's rows.
///
/// # Safety
/// The CPU has the features; rows from b·8 that exist (< the epilogue's n) have entries in
/// every `po[c]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)] // c and r index the accumulators and the outputs alike
unsafe fn finish_tile<const R: usize, const K: usize>(
    acc: [[__m512; R]; K],
    b: usize,
    e: &RbfEpilogue<'_, K>,
    po: &[*mut f32; K],
) {
    let n = e.norms.len();
    // SAFETY: norms, labels and outputs are read and written under a mask past n.
    unsafe {
        // The exponent as `super::finish_rbf_f32` forms it: fma(dot, fl(−2·ng), fl(ng·‖x_i‖²)
        // + fl(ng·‖x_j‖²)); its min(·, 0) is the exponential's own clamp (`exp2_x`).
        let (c2, sign, ng) = (
            _mm512_set1_ps((-2.0 * e.ng) as f32),
            _mm512_set1_ps(-0.0),
            _mm512_set1_pd(e.ng),
        );
        let bj: [__m512; K] = std::array::from_fn(|c| _mm512_set1_ps((e.ng * e.nj[c]) as f32));
        for r in 0..R {
            let row0 = (b + 2 * r) * LANES;
            let rows = (n - row0).min(2 * LANES);
            let m16: u16 = if rows == 2 * LANES {
                u16::MAX
            } else {
                (1u16 << rows) - 1
            };
            let (mlo, mhi) = (m16 as u8, (m16 >> 8) as u8);
            let ni_lo = _mm512_maskz_loadu_pd(mlo, e.norms.as_ptr().add(row0));
            let ni_hi = _mm512_maskz_loadu_pd(mhi, e.norms.as_ptr().add(row0 + LANES));
            // The labels are ±1: their products in f32 are the f64 products rounded.
            let yi = _mm512_insertf32x8::<1>(
                _mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_maskz_loadu_pd(
                    mlo,
                    e.y.as_ptr().add(row0),
                ))),
                _mm512_cvtpd_ps(_mm512_maskz_loadu_pd(mhi, e.y.as_ptr().add(row0 + LANES))),
            );
            let bi = _mm512_insertf32x8::<1>(
                _mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_mul_pd(ng, ni_lo))),
                _mm512_cvtpd_ps(_mm512_mul_pd(ng, ni_hi)),
            );
            let t: [__m512; K] =
                std::array::from_fn(|c| _mm512_fmadd_ps(acc[c][r], c2, _mm512_add_ps(bi, bj[c])));
            // The K exponentials interleaved (each a chain of dependent steps).
            let ek = super::exp2_x(t);
            let yn = _mm512_xor_ps(yi, sign);
            for c in 0..K {
                let s = if e.yj[c] < 0.0 { yn } else { yi };
                let v = super::fused::signed_plus_one(ek[c], s);
                _mm512_mask_storeu_ps(po[c].add(row0), m16, v);
            }
        }
    }
}

/// The rows of the whole blocks in `xb` (d features each, eight-row AoSoA blocks) packed as
/// panels of sixteen rows, `out[(p·d + f)·16 + l]` = feature f of row 16p + l (zeros past the
/// last row): what a GEMM does to its A operand, so that the tiles load each register of
/// sixteen rows whole, without joining two blocks, and read one stream per register.
#[cfg(target_arch = "x86_64")]
pub(super) fn pack_panels(xb: &[f32], d: usize, out: &mut crate::backend::aligned::Aligned<f32>) {
    let nblk = xb.len() / (d * LANES).max(1);
    let len = nblk.div_ceil(2) * d * 2 * LANES;
    if out.len() < len {
        *out = crate::backend::aligned::Aligned::zeroed(len);
    }
    let whole = nblk / 2;
    if available() {
        // SAFETY: the CPU has the features; panels 0..whole join blocks 2p and 2p + 1 of xb,
        // and `out` holds `len` ≥ whole panels.
        unsafe { pack_whole_panels(xb, d, whole, &mut out[..len]) };
    } else {
        for (p, dst) in out[..whole * d * 2 * LANES]
            .chunks_exact_mut(d * 2 * LANES)
            .enumerate()
        {
            let (lo, hi) = xb[2 * p * d * LANES..(2 * p + 2) * d * LANES].split_at(d * LANES);
            for (f, to) in dst.chunks_exact_mut(2 * LANES).enumerate() {
                to[..LANES].copy_from_slice(&lo[f * LANES..(f + 1) * LANES]);
                to[LANES..].copy_from_slice(&hi[f * LANES..(f + 1) * LANES]);
            }
        }
    }
    if nblk % 2 == 1 {
        // The last panel: the odd block and eight rows of zeros.
        let lo = &xb[(nblk - 1) * d * LANES..nblk * d * LANES];
        let dst = &mut out[whole * d * 2 * LANES..len];
        for (f, to) in dst.chunks_exact_mut(2 * LANES).enumerate() {
            to[..LANES].copy_from_slice(&lo[f * LANES..(f + 1) * LANES]);
            to[LANES..].fill(0.0);
        }
    }
}

/// Panels 0..`whole` of [`pack_panels`]: blocks 2p and 2p + 1 joined feature by feature.
///
/// # Safety
/// [`available`] is true; `xb` holds 2·whole blocks of d features and `out` whole panels.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn pack_whole_panels(xb: &[f32], d: usize, whole: usize, out: &mut [f32]) {
    assert!(xb.len() >= whole * 2 * d * LANES && out.len() >= whole * d * 2 * LANES);
    // SAFETY: the reads stay within 2·whole blocks of xb, the writes within whole panels.
    unsafe {
        let (src, dst) = (xb.as_ptr(), out.as_mut_ptr());
        for p in 0..whole {
            let lo = src.add(2 * p * d * LANES);
            let hi = lo.add(d * LANES);
            let to = dst.add(p * d * 2 * LANES);
            for f in 0..d {
                let v = _mm512_insertf32x8::<1>(
                    _mm512_castps256_ps512(_mm256_loadu_ps(lo.add(f * LANES))),
                    _mm256_loadu_ps(hi.add(f * LANES)),
                );
                _mm512_storeu_ps(to.add(f * 2 * LANES), v);
            }
        }
    }
}

/// [`rbf_f32`] over rows packed by [`pack_panels`] (`panels`: the epilogue's rows, rounded up
/// to sixteen): the same entries bit for bit, each (row, query) sum formed from zero over the
/// features in order with one fused multiply-add each and finished by the same steps.
///
/// # Safety
/// [`available`] is true; `q32` holds K·d values packed as for [`dots_f32`]; `panels` holds
/// the epilogue's rows in panels of sixteen; every `outs[c]`, c < K, holds at least as many
/// entries as rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
pub(super) unsafe fn rbf_panels_f32<const K: usize>(
    panels: &[f32],
    d: usize,
    q32: &[f32],
    e: &RbfEpilogue<'_, K>,
    outs: &mut [&mut [f32]],
) {
    let n = e.norms.len();
    let np = n.div_ceil(2 * LANES);
    const { assert!(K <= super::BATCH, "at most a batch of queries") };
    assert!(q32.len() >= K * d && e.y.len() == n && panels.len() >= np * d * 2 * LANES);
    assert!(outs.len() >= K && outs[..K].iter().all(|o| o.len() >= n));
    let po: [*mut f32; K] = std::array::from_fn(|c| outs[c].as_mut_ptr());
    let mut p = 0;
    // SAFETY: for every call below, panels p.. lie in `panels`, K queries in q32, and rows of
    // every output up to n (checked above); the caller has the CPU's features.
    unsafe {
        macro_rules! tile {
            ($r:literal) => {{
                let acc = accumulate_panels_f32::<$r, K>(panels, d, q32, p);
                finish_tile::<$r, K>(acc, 2 * p, e, &po);
                p += $r;
            }};
        }
        match K {
            1 | 2 => {
                while p + 8 <= np {
                    tile!(8)
                }
            }
            3..=5 => {
                while p + 4 <= np {
                    tile!(4)
                }
            }
            _ => {
                while p + 3 <= np {
                    tile!(3)
                }
            }
        }
        while p < np {
            tile!(1)
        }
    }
}

/// The sums of panels p..p+R (R registers of sixteen rows) with the K queries, `acc[c][r]`,
/// each formed from zero over the features in order with one fused multiply-add each.
///
/// # Safety
/// As [`rbf_panels_f32`], with p + R ≤ the panels in `panels`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)] // c and r index the accumulators and the rows alike
unsafe fn accumulate_panels_f32<const R: usize, const K: usize>(
    panels: &[f32],
    d: usize,
    q32: &[f32],
    p: usize,
) -> [[__m512; R]; K] {
    debug_assert!((p + R) * d * 2 * LANES <= panels.len());
    // SAFETY: the caller's contract bounds every pointer below.
    unsafe {
        let next = d * 2 * LANES;
        let mut acc = [[_mm512_setzero_ps(); R]; K];
        let mut qf = q32.as_ptr();
        let mut xp = panels.as_ptr().add(p * next);
        for _ in 0..d {
            let mut xv = [_mm512_setzero_ps(); R];
            for (r, v) in xv.iter_mut().enumerate() {
                *v = _mm512_loadu_ps(xp.add(r * next));
            }
            for c in 0..K {
                let qv = _mm512_set1_ps(*qf.add(c));
                for r in 0..R {
                    acc[c][r] = _mm512_fmadd_ps(xv[r], qv, acc[c][r]);
                }
            }
            qf = qf.add(K);
            xp = xp.add(2 * LANES);
        }
        // As in accumulate_f32: the accumulators leave the loop through memory once.
        std::hint::black_box(acc)
    }
}

/// The last, odd block (eight rows) against the K queries.
///
/// # Safety
/// As [`dots_f32`], with block b in `xb`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
unsafe fn last_block_f32<const K: usize>(
    xb: &[f32],
    d: usize,
    q32: &[f32],
    b: usize,
    stride: usize,
    out: &mut [f64],
) {
    // SAFETY: the caller's contract bounds every pointer below.
    unsafe {
        let x = xb.as_ptr().add(b * d * LANES);
        let mut acc = [_mm256_setzero_ps(); K];
        for f in 0..d {
            let xv = _mm256_loadu_ps(x.add(f * LANES));
            for (c, a) in acc.iter_mut().enumerate() {
                *a = _mm256_fmadd_ps(xv, _mm256_set1_ps(*q32.get_unchecked(f * K + c)), *a);
            }
        }
        for (c, a) in acc.iter().enumerate() {
            _mm512_storeu_pd(
                out.as_mut_ptr().add(c * stride + b * LANES),
                _mm512_cvtps_pd(*a),
            );
        }
    }
}

/// f64 products (f32 data widened, exact) of K queries (`q[c]`: d values each) with the rows
/// of the whole blocks in `xb`; query c's dots go to `out[c * stride ..]`.
///
/// # Safety
/// [`available`] is true; every `q[c]` holds d values; `xb` holds whole blocks of d features;
/// `out` has (K − 1)·stride + the rows' entries.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
pub(super) unsafe fn dots_f64<const K: usize>(
    xb: &[f32],
    d: usize,
    q: &[&[f64]],
    stride: usize,
    out: &mut [f64],
) {
    assert!(q.len() >= K && q[..K].iter().all(|qc| qc.len() >= d));
    let nblk = xb.len() / (d * LANES);
    assert!(out.len() >= (K - 1) * stride + nblk * LANES);
    let qp: [*const f64; K] = std::array::from_fn(|c| q[c].as_ptr());
    let mut b = 0;
    // SAFETY: for every call below, as for dots_f32: the blocks, queries and outputs were
    // checked above, and the caller has the CPU's features.
    unsafe {
        match K {
            1 | 2 => {
                while b + 8 <= nblk {
                    tile_f64::<8, K>(xb, d, &qp, b, stride, out);
                    b += 8;
                }
            }
            3..=5 => {
                while b + 4 <= nblk {
                    tile_f64::<4, K>(xb, d, &qp, b, stride, out);
                    b += 4;
                }
            }
            _ => {
                while b + 3 <= nblk {
                    tile_f64::<3, K>(xb, d, &qp, b, stride, out);
                    b += 3;
                }
            }
        }
        while b < nblk {
            tile_f64::<1, K>(xb, d, &qp, b, stride, out);
            b += 1;
        }
    }
}

/// f64 RBF entries of K columns over the rows of the blocks in `xb` (the epilogue's rows),
/// written to `outs[c]`: the products of [`dots_f64`] finished in registers, each entry by the
/// steps of the f64 branch of [`super::finish`] — d² = max(fma(−2, dot, ‖x_i‖² + ‖x_j‖²), 0),
/// y_i·y_j·(e^(−γ·d²) + 1) with the exponential of [`super::exp_nonpos`] — so every entry is
/// the same number, without the dots' round trip through memory.
///
/// # Safety
/// [`available`] is true; every `q[c]`, c < K, holds d values; `xb` holds the whole blocks of
/// the epilogue's rows (rounded up to [`LANES`]); every `outs[c]`, c < K, holds at least as
/// many entries as rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
pub(super) unsafe fn rbf_f64<const K: usize, X: Widen>(
    xb: &[X],
    d: usize,
    q: &[&[f64]],
    e: &RbfEpilogue<'_, K>,
    outs: &mut [&mut [f64]],
) {
    let n = e.norms.len();
    let nblk = n.div_ceil(LANES);
    assert!(q.len() >= K && q[..K].iter().all(|qc| qc.len() >= d));
    assert!(e.y.len() == n && xb.len() >= nblk * d * LANES);
    assert!(outs.len() >= K && outs[..K].iter().all(|o| o.len() >= n));
    let qp: [*const f64; K] = std::array::from_fn(|c| q[c].as_ptr());
    let po: [*mut f64; K] = std::array::from_fn(|c| outs[c].as_mut_ptr());
    let mut b = 0;
    // SAFETY: for every call below, blocks b.. lie in xb, K queries of d values in q, and
    // rows of every output up to n (checked above); the caller has the CPU's features.
    unsafe {
        match K {
            1 | 2 => {
                while b + 8 <= nblk {
                    rbf_tile_f64::<8, K, X>(xb, d, &qp, b, e, &po);
                    b += 8;
                }
            }
            3..=5 => {
                while b + 4 <= nblk {
                    rbf_tile_f64::<4, K, X>(xb, d, &qp, b, e, &po);
                    b += 4;
                }
            }
            _ => {
                while b + 3 <= nblk {
                    rbf_tile_f64::<3, K, X>(xb, d, &qp, b, e, &po);
                    b += 3;
                }
            }
        }
        while b < nblk {
            rbf_tile_f64::<1, K, X>(xb, d, &qp, b, e, &po);
            b += 1;
        }
    }
}

/// Blocks b..b+R against the K queries in f64, finished into RBF entries (see [`rbf_f64`]).
///
/// # Safety
/// As [`rbf_f64`], with b + R ≤ the blocks in `xb`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
unsafe fn rbf_tile_f64<const R: usize, const K: usize, X: Widen>(
    xb: &[X],
    d: usize,
    q: &[*const f64; K],
    b: usize,
    e: &RbfEpilogue<'_, K>,
    po: &[*mut f64; K],
) {
    // SAFETY: the caller's contract bounds the blocks and queries.
    unsafe { finish_tile_f64::<R, K>(accumulate_f64::<R, K, X>(xb, d, q, b), b, e, po) }
}

/// The f64 RBF entries of rows (b + r)·8 … + 8 of the K columns from their dots `acc[c][r]`
/// (see [`rbf_f64`]), stored to `po[c]` under a mask past the epilogue's rows.
///
/// # Safety
/// The CPU has the features; rows from b·8 that exist (< the epilogue's n) have entries in
/// every `po[c]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)] // r and c index the accumulators and the outputs alike
unsafe fn finish_tile_f64<const R: usize, const K: usize>(
    acc: [[__m512d; R]; K],
    b: usize,
    e: &RbfEpilogue<'_, K>,
    po: &[*mut f64; K],
) {
    let n = e.norms.len();
    // SAFETY: norms, labels and outputs are read and written under a mask past n.
    unsafe {
        let (m2, zero, ng, one) = (
            _mm512_set1_pd(-2.0),
            _mm512_setzero_pd(),
            _mm512_set1_pd(e.ng),
            _mm512_set1_pd(1.0),
        );
        for r in 0..R {
            let row0 = (b + r) * LANES;
            let rows = (n - row0).min(LANES);
            let mask: __mmask8 = if rows == LANES {
                u8::MAX
            } else {
                (1u8 << rows) - 1
            };
            let ni = _mm512_maskz_loadu_pd(mask, e.norms.as_ptr().add(row0));
            let yi = _mm512_maskz_loadu_pd(mask, e.y.as_ptr().add(row0));
            let x: [__m512d; K] = std::array::from_fn(|c| {
                let nj = _mm512_set1_pd(e.nj[c]);
                let d2 = _mm512_fmadd_pd(m2, acc[c][r], _mm512_add_pd(ni, nj));
                _mm512_mul_pd(ng, _mm512_max_pd(d2, zero))
            });
            let ex = exp_nonpos_f64_x(x);
            for c in 0..K {
                let s = _mm512_mul_pd(yi, _mm512_set1_pd(e.yj[c]));
                let v = _mm512_mul_pd(s, _mm512_add_pd(ex[c], one));
                _mm512_mask_storeu_pd(po[c].add(row0), mask, v);
            }
        }
    }
}

/// A row value the f64 tiles read eight at a time as one register of f64: the layout's f32
/// (widened, exactly) or rows already widened by [`pack_panels_f64`].
#[cfg(target_arch = "x86_64")]
pub(super) trait Widen: Copy {
    /// Eight values from `p`, in f64.
    ///
    /// # Safety
    /// `p` points at eight values; called only from the tiles (the CPU has AVX-512).
    unsafe fn eight(p: *const Self) -> __m512d;
}

#[cfg(target_arch = "x86_64")]
impl Widen for f32 {
    #[inline(always)]
    unsafe fn eight(p: *const f32) -> __m512d {
        // SAFETY: the caller's contract.
        unsafe { _mm512_cvtps_pd(_mm256_loadu_ps(p)) }
    }
}

#[cfg(target_arch = "x86_64")]
impl Widen for f64 {
    #[inline(always)]
    unsafe fn eight(p: *const f64) -> __m512d {
        // SAFETY: the caller's contract.
        unsafe { _mm512_loadu_pd(p) }
    }
}

/// The rows of the whole blocks in `xb` widened to f64 in the same order (eight-row AoSoA
/// blocks, feature-major within a block), for [`rbf_f64`]: the widening leaves the
/// tiles' inner loop.
#[cfg(target_arch = "x86_64")]
pub(super) fn pack_panels_f64(
    xb: &[f32],
    d: usize,
    out: &mut crate::backend::aligned::Aligned<f64>,
) {
    let len = xb.len() / (d * LANES).max(1) * d * LANES;
    if out.len() < len {
        *out = crate::backend::aligned::Aligned::zeroed(len);
    }
    for (o, &x) in out[..len].iter_mut().zip(&xb[..len]) {
        *o = x as f64;
    }
}

/// The sums of blocks b..b+R (one register of eight rows each) with the K queries in f64,
/// `acc[c][r]`: each formed from zero over the features in order with one fused multiply-add
/// each (the f32 data widened, exactly).
///
/// # Safety
/// As [`dots_f64`], with b + R ≤ the blocks in `xb`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
unsafe fn accumulate_f64<const R: usize, const K: usize, X: Widen>(
    xb: &[X],
    d: usize,
    q: &[*const f64; K],
    b: usize,
) -> [[__m512d; R]; K] {
    debug_assert!((b + R) * d * LANES <= xb.len());
    // SAFETY: the caller's contract bounds every pointer below.
    unsafe {
        let x: [*const X; R] = std::array::from_fn(|r| xb.as_ptr().add((b + r) * d * LANES));
        let mut acc = [[_mm512_setzero_pd(); R]; K];
        for f in 0..d {
            let xv: [__m512d; R] = std::array::from_fn(|r| X::eight(x[r].add(f * LANES)));
            for (ac, qc) in acc.iter_mut().zip(q) {
                let qv = _mm512_set1_pd(*qc.add(f));
                for (a, &xr) in ac.iter_mut().zip(&xv) {
                    *a = _mm512_fmadd_pd(xr, qv, *a);
                }
            }
        }
        std::hint::black_box(acc) // as in accumulate_f32
    }
}

/// e^x for x ≤ 0 on `V` vectors of eight f64 lanes: the steps of [`super::exp_nonpos`]
/// (clamped below at −708, 2^k·p(r) with the degree-10 polynomial [`super::POLY64`]) taken
/// across the vectors one at a time, so each lane is that function's number, and the `V`
/// independent chains interleave in the instruction stream: the multiply-adds of one wait on
/// their latency while the others' issue (one vector's exponential is a chain of some twenty
/// dependent operations). `V` at most eight: more spill. Every lane must hold x ≤ 0 or
/// −0 (the callers' −γ·max(d², 0)): exp_nonpos's upper clamp at 0 is left out (for −0 it
/// gives the same 1 as +0).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,fma")]
#[inline]
pub(crate) fn exp_nonpos_f64_x<const V: usize>(x: [__m512d; V]) -> [__m512d; V] {
    const { assert!(V <= 8, "more vectors spill") };
    use super::{LN2_HI64, LN2_LO64, POLY64, SHIFT64};
    let lo = _mm512_set1_pd(-708.0);
    let shift = _mm512_set1_pd(SHIFT64);
    let x = x.map(|x| _mm512_max_pd(x, lo));
    let t: [__m512d; V] = std::array::from_fn(|v| {
        _mm512_fmadd_pd(x[v], _mm512_set1_pd(std::f64::consts::LOG2_E), shift)
    });
    let k = t.map(|t| _mm512_sub_pd(t, shift));
    let r: [__m512d; V] =
        std::array::from_fn(|v| _mm512_fnmadd_pd(k[v], _mm512_set1_pd(LN2_HI64), x[v]));
    let r: [__m512d; V] =
        std::array::from_fn(|v| _mm512_fnmadd_pd(k[v], _mm512_set1_pd(LN2_LO64), r[v]));
    let mut p = [_mm512_set1_pd(POLY64[0]); V];
    for &c in &POLY64[1..] {
        let c = _mm512_set1_pd(c);
        for v in 0..V {
            p[v] = _mm512_fmadd_pd(p[v], r[v], c);
        }
    }
    let bias = _mm512_set1_epi64(SHIFT64.to_bits() as i64);
    std::array::from_fn(|v| {
        let kbits = _mm512_sub_epi64(_mm512_castpd_si512(t[v]), bias);
        _mm512_castsi512_pd(_mm512_add_epi64(
            _mm512_castpd_si512(p[v]),
            _mm512_slli_epi64::<52>(kbits),
        ))
    })
}

/// Blocks b..b+R (one register of eight rows each) against the K queries, in f64.
///
/// # Safety
/// As [`dots_f64`], with b + R ≤ the blocks in `xb`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
#[inline]
unsafe fn tile_f64<const R: usize, const K: usize>(
    xb: &[f32],
    d: usize,
    q: &[*const f64; K],
    b: usize,
    stride: usize,
    out: &mut [f64],
) {
    // SAFETY: the caller's contract bounds every pointer below.
    unsafe {
        let acc = accumulate_f64::<R, K, f32>(xb, d, q, b);
        let po = out.as_mut_ptr();
        for (c, ac) in acc.iter().enumerate() {
            for (r, a) in ac.iter().enumerate() {
                _mm512_storeu_pd(po.add(c * stride + (b + r) * LANES), *a);
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Row r's value of feature f in the AoSoA blocks of `nblk` blocks.
    fn x_at(xb: &[f32], d: usize, r: usize, f: usize) -> f32 {
        xb[(r / LANES) * d * LANES + f * LANES + r % LANES]
    }

    fn data(nblk: usize, d: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..nblk * d * LANES)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// The tiles over rows packed in panels of sixteen give the entries of the tiles over the
    /// AoSoA blocks bit for bit: every panel tile shape and tail (1 … 19 blocks, odd counts
    /// leaving half a panel of padding, and rows short of the last block), 1 … 8 queries.
    #[test]
    fn panels_give_the_blocks_entries() {
        if !available() {
            eprintln!("skipped: this CPU lacks AVX-512 (the tiles do not run here)");
            return;
        }
        fn check<const K: usize>(nblk: usize, d: usize, short: usize) {
            let xb = data(nblk, d, (nblk * 17 + d) as u64);
            let n = nblk * LANES - short;
            let q32: Vec<f32> = data(1, K * d, 77 + K as u64)[..K * d].to_vec();
            let norms: Vec<f64> = (0..n).map(|i| 0.5 + (i % 13) as f64 * 0.37).collect();
            let y: Vec<f64> = (0..n)
                .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
                .collect();
            let e = RbfEpilogue::<K> {
                norms: &norms,
                y: &y,
                nj: std::array::from_fn(|c| 0.8 + c as f64 * 0.29),
                yj: std::array::from_fn(|c| if c % 2 == 0 { 1.0 } else { -1.0 }),
                ng: -0.05,
            };
            let mut want = vec![vec![f32::NAN; n]; K];
            let mut got = vec![vec![f32::NAN; n]; K];
            let mut panels = crate::backend::aligned::Aligned::default();
            pack_panels(&xb, d, &mut panels);
            {
                let mut o: Vec<&mut [f32]> = want.iter_mut().map(|c| &mut c[..]).collect();
                // SAFETY: available() holds; the sizes are as the functions require.
                unsafe { rbf_f32::<K>(&xb, d, &q32, &e, &mut o) };
                let mut o: Vec<&mut [f32]> = got.iter_mut().map(|c| &mut c[..]).collect();
                // SAFETY: as above.
                unsafe { rbf_panels_f32::<K>(&panels, d, &q32, &e, &mut o) };
            }
            for c in 0..K {
                for r in 0..n {
                    assert_eq!(
                        got[c][r].to_bits(),
                        want[c][r].to_bits(),
                        "K {K} blocks {nblk} d {d} short {short} query {c} row {r}"
                    );
                }
            }
        }
        for nblk in 1..=19 {
            for (d, short) in [(33, 0), (54, 3), (40, 7)] {
                check::<1>(nblk, d, short);
                check::<2>(nblk, d, short);
                check::<3>(nblk, d, short);
                check::<5>(nblk, d, short);
                check::<6>(nblk, d, short);
                check::<8>(nblk, d, short);
            }
        }
    }

    /// Every tile shape and tail (1 … 13 blocks, 1 … 8 queries) gives each (row, query) sum
    /// formed from zero over the features in order with one fused multiply-add each.
    #[test]
    #[allow(clippy::needless_range_loop)]
    fn tiles_are_the_ordered_fused_sums() {
        if !available() {
            eprintln!("skipped: this CPU lacks AVX-512 (the tiles do not run here)");
            return;
        }
        fn check<const K: usize>(nblk: usize, d: usize) {
            let xb = data(nblk, d, (nblk * 31 + d) as u64);
            let qs: Vec<Vec<f64>> = (0..K)
                .map(|c| {
                    data(1, d, 1000 + c as u64)
                        .iter()
                        .take(d)
                        .map(|&v| v as f64 * 0.7)
                        .collect()
                })
                .collect();
            let rows = nblk * LANES;
            let stride = rows + 5;
            // f32: queries packed feature-major.
            let mut q32 = vec![0.0f32; K * d];
            for (c, q) in qs.iter().enumerate() {
                for f in 0..d {
                    q32[f * K + c] = q[f] as f32;
                }
            }
            let mut out = vec![f64::NAN; (K - 1) * stride + rows];
            // SAFETY: available() holds; the sizes are as the functions require.
            unsafe { dots_f32::<K>(&xb, d, &q32, stride, &mut out) };
            for c in 0..K {
                for r in 0..rows {
                    let mut acc = 0.0f32;
                    for f in 0..d {
                        acc = x_at(&xb, d, r, f).mul_add(q32[f * K + c], acc);
                    }
                    assert_eq!(
                        out[c * stride + r].to_bits(),
                        (acc as f64).to_bits(),
                        "f32 K {K} blocks {nblk} d {d} query {c} row {r}"
                    );
                }
            }
            let qr: Vec<&[f64]> = qs.iter().map(|q| &q[..]).collect();
            let mut out = vec![f64::NAN; (K - 1) * stride + rows];
            // SAFETY: as above.
            unsafe { dots_f64::<K>(&xb, d, &qr, stride, &mut out) };
            for c in 0..K {
                for r in 0..rows {
                    let mut acc = 0.0f64;
                    for f in 0..d {
                        acc = (x_at(&xb, d, r, f) as f64).mul_add(qs[c][f], acc);
                    }
                    assert_eq!(
                        out[c * stride + r].to_bits(),
                        acc.to_bits(),
                        "f64 K {K} blocks {nblk} d {d} query {c} row {r}"
                    );
                }
            }
        }
        for nblk in 1..=13 {
            for d in [1, 7, 33] {
                check::<1>(nblk, d);
                check::<2>(nblk, d);
                check::<3>(nblk, d);
                check::<4>(nblk, d);
                check::<5>(nblk, d);
                check::<6>(nblk, d);
                check::<7>(nblk, d);
                check::<8>(nblk, d);
            }
        }
    }
}
