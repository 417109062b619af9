//! RBF columns of narrow rows in f32, fused in registers (AVX-512): dense and hybrid rows.
//!
//! The portable path of [`super::columns_chunk`] forms each column's dots into a buffer and
//! finishes them in three loops over it (the exponent, the exponential in f32, the labels'
//! sign), so every entry travels through memory four times. Here sixteen rows at a time stay
//! in registers from the first multiply-add to the stored f32 entry, for the narrow rows of
//! [`super::narrow_f32`] (fewer than [`F32_DOTS_MIN_D`] continuous features), whose columns
//! are formed in f32 throughout: the products of up to [`BATCH`] columns by fused
//! multiply-adds from zero in feature order (one vector of sixteen rows each, the rows of two
//! eight-row blocks side by side), the bit part's popcounts added as one f32 sum (hybrid
//! rows), the base-2 exponent t = min(fma(s, fl(−2·ng), fl(ng·‖x_i‖²) + fl(ng·‖x_j‖²)), 0)
//! with ng = −γ·log₂e, the exponential's steps of [`super::exp2_nonpos_f32`] on all sixteen
//! lanes, then + 1 and the sign of y_i·y_j (±1) in one fused multiply-add,
//! [`signed_plus_one`] (the portable path's product by the sign is a sign flip). Every
//! rounding is the portable path's, in the same order, so the entries are the same, bit for
//! bit.

use super::{BATCH, ColumnArgs, F32_DOTS_MIN_D, LANES, Layout, MAX_HYBRID_WORDS, hybrid_query};

/// Most continuous features of the rows this path takes (narrow rows: below
/// [`F32_DOTS_MIN_D`]); the queries' scratch on the stack (cleared for every call) stays this
/// small.
const MAX_CONT: usize = F32_DOTS_MIN_D - 1;
use crate::kernel::Kernel;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Computes the columns `cols` over rows r0..r0+n (n = each output's length) into `outs`
/// when the fused path applies — RBF kernel, narrow dense or hybrid rows, AVX-512 with vector
/// popcounts, and for hybrid rows queries whose binary features are 0 or 1 —
/// and returns whether it did.
pub(super) fn rbf_f32(
    a: &ColumnArgs<'_>,
    cols: &[(usize, &[f64])],
    r0: usize,
    outs: &mut [&mut [f32]],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let Kernel::Rbf { gamma } = a.kernel else {
            return false;
        };
        if cols.is_empty()
            || cols.len() > BATCH
            || cols.len() != outs.len()
            || !r0.is_multiple_of(LANES)
        {
            return false;
        }
        if !(std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vpopcntdq")
            && std::is_x86_feature_detected!("fma"))
        {
            return false;
        }
        if !super::narrow_f32(a.kernel, a.layout) {
            return false;
        }
        let n = outs[0].len();
        let mut qc = [[0.0f32; MAX_CONT]; BATCH];
        let mut qb = [[0u64; MAX_HYBRID_WORDS]; BATCH];
        let (xb, dc, bits, words): (&[f32], usize, &[u64], usize) = match a.layout {
            Layout::Dense { d, xb, .. } if *d <= MAX_CONT => {
                for (c, &(_, q)) in cols.iter().enumerate() {
                    for (o, &v) in qc[c].iter_mut().zip(&q[..*d]) {
                        *o = v as f32;
                    }
                }
                (xb, *d, &[], 0)
            }
            Layout::Hybrid {
                cont,
                bin,
                xb,
                words,
                bits,
            } if cont.len() <= MAX_CONT => {
                let dc = cont.len();
                let mut q64 = [0.0f64; MAX_CONT];
                for (c, &(_, q)) in cols.iter().enumerate() {
                    if !hybrid_query(cont, bin, q, &mut q64[..dc], &mut qb[c][..*words]) {
                        return false;
                    }
                    for (o, &v) in qc[c].iter_mut().zip(&q64[..dc]) {
                        *o = v as f32;
                    }
                }
                (xb, dc, bits, *words)
            }
            _ => return false,
        };
        let b0 = r0 / LANES;
        let nb = n.div_ceil(LANES);
        let ng = super::rbf_factor(gamma);
        let job = Job {
            xb: &xb[b0 * dc * LANES..(b0 + nb) * dc * LANES],
            dc,
            bits: &bits[b0 * words * LANES..(b0 + nb) * words * LANES],
            words,
            norms: &a.norms[r0..r0 + n],
            y: &a.y[r0..r0 + n],
            ng,
        };
        let mut nj = [0.0f32; BATCH];
        let mut yj = [0.0; BATCH];
        for (c, &(j, _)) in cols.iter().enumerate() {
            nj[c] = (ng * a.norms[j]) as f32;
            yj[c] = a.y[j];
        }
        let q = Queries {
            qc: &qc,
            qb: &qb,
            nj: &nj,
            yj: &yj,
        };
        // SAFETY: the features were detected above; `Job`'s slices cover the chunk's blocks.
        unsafe {
            match cols.len() {
                1 => columns::<1, 8, 8>(&job, &q, outs),
                2 => columns::<2, 4, 8>(&job, &q, outs),
                3 => columns::<3, 2, 6>(&job, &q, outs),
                4 => columns::<4, 2, 8>(&job, &q, outs),
                5 => columns::<5, 1, 5>(&job, &q, outs),
                6 => columns::<6, 1, 6>(&job, &q, outs),
                7 => columns::<7, 1, 7>(&job, &q, outs),
                _ => columns::<8, 1, 8>(&job, &q, outs),
            }
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, cols, r0, outs);
        false
    }
}

/// One chunk's rows: their blocks (continuous part and bits, starting at the chunk), norms
/// and labels, and ng = −γ·log₂e.
struct Job<'a> {
    xb: &'a [f32],
    dc: usize,
    bits: &'a [u64],
    words: usize,
    norms: &'a [f64],
    y: &'a [f64],
    ng: f64,
}

/// The queries: continuous parts in f32, bits, fl(ng·‖x_j‖²) and labels.
struct Queries<'a> {
    qc: &'a [[f32; MAX_CONT]; BATCH],
    qb: &'a [[u64; MAX_HYBRID_WORDS]; BATCH],
    nj: &'a [f32; BATCH],
    yj: &'a [f64; BATCH],
}

/// s·(e + 1) rounded once, for signs s = ±1: fma(e, s, s), the number fl(e + 1) with s's
/// sign (rounding to nearest is symmetric), in one step instead of a sum and a product.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[inline]
pub(super) fn signed_plus_one(e: __m512, s: __m512) -> __m512 {
    _mm512_fmadd_ps(e, s, s)
}

/// K columns over the job's rows, `G` groups of sixteen rows per step (N = G·K vectors of
/// entries): one group for many columns, more for few, so that the step holds enough
/// independent chains (a column's dot over one group is a chain of dependent multiply-adds).
/// The exponents come from [`exponents`] as values (every array indexed by constants only), so
/// they stay in registers: an array indexed at run time lives on the stack.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ, VPOPCNTDQ, AVX2 and FMA (the caller's dispatch checked
/// it); the job's slices cover its blocks, and every output holds the job's rows.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)] // v indexes the exponents, signs and outputs
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq,avx2,fma")]
unsafe fn columns<const K: usize, const G: usize, const N: usize>(
    job: &Job<'_>,
    q: &Queries<'_>,
    outs: &mut [&mut [f32]],
) {
    const {
        assert!(
            N == G * K && N <= 8,
            "G·K vectors of entries a step, at most eight"
        )
    };
    let n = job.norms.len();
    let nb = n.div_ceil(LANES);
    // The labels are ±1, so y_i·y_j·(e + 1) is e + 1 with its sign flipped where the labels
    // differ: y_i (one vector a group), negated once for the columns with y_j < 0.
    let neg: [bool; K] = std::array::from_fn(|c| q.yj[c] < 0.0);
    let sign = _mm512_set1_ps(-0.0);
    let mut b = 0;
    while b < nb {
        // SAFETY: b < nb.
        let t = unsafe { exponents::<K, G, N>(job, q, b, nb) };
        let ek = super::exp2_x::<N>(t);
        for g in 0..G {
            let r0 = (b + 2 * g) * LANES;
            if r0 >= n {
                break;
            }
            let rows = (n - r0).min(2 * LANES);
            let m16 = if rows == 2 * LANES {
                u16::MAX
            } else {
                ((1u32 << rows) - 1) as u16
            };
            // SAFETY: labels are read under the mask; outs[c] holds n entries, and rows
            // r0 .. r0 + rows are within it.
            unsafe {
                let (mlo, mhi) = (m16 as u8, (m16 >> 8) as u8);
                let yi = _mm512_insertf32x8::<1>(
                    _mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_maskz_loadu_pd(
                        mlo,
                        job.y.as_ptr().add(r0),
                    ))),
                    _mm512_cvtpd_ps(_mm512_maskz_loadu_pd(mhi, job.y.as_ptr().add(r0 + LANES))),
                );
                let sn = _mm512_xor_ps(yi, sign);
                for c in 0..K {
                    let e = signed_plus_one(ek[g * K + c], if neg[c] { sn } else { yi });
                    _mm512_mask_storeu_ps(outs[c].as_mut_ptr().add(r0), m16, e);
                }
            }
        }
        b += 2 * G;
    }
}

/// The exponents of K columns over blocks `blk` .. `blk` + 2G (eight rows each, two to a
/// vector), entry g·K + c for group g and column c: the products accumulated in one pass over
/// the features (G·K independent chains of multiply-adds), the popcounts added, then t.
/// Rows past the job's end (a last, partial block) read as zero; a block at or past `nb`
/// reads block `nb` − 1 again (its values are not stored). Compiled with [`columns`]' target
/// features, which the closures inside inherit: without them an intrinsic in a closure that
/// the optimiser left out of line is a call per vector (a build measured so ran pendigits at
/// half speed); inlined into [`columns`] (a call would pass the arrays through memory).
///
/// # Safety
/// `blk` < `nb`, the job's block count; called only from [`columns`] (the CPU has its
/// features).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq,avx2,fma")]
#[inline]
unsafe fn exponents<const K: usize, const G: usize, const N: usize>(
    job: &Job<'_>,
    q: &Queries<'_>,
    blk: usize,
    nb: usize,
) -> [__m512; N] {
    let n = job.norms.len();
    // SAFETY: the CPU has the features (the caller's contract); every block read is < nb and
    // lies in the job's slices (the caller sliced them to its blocks); norms are read under a
    // mask past n.
    unsafe {
        let at = |k: usize| (blk + k).min(nb - 1);
        let mut acc = [_mm512_setzero_ps(); N];
        let xp: [[*const f32; 2]; G] = std::array::from_fn(|g| {
            [0, 1].map(|h| job.xb.as_ptr().add(at(2 * g + h) * job.dc * LANES))
        });
        for f in 0..job.dc {
            for g in 0..G {
                let x = _mm512_insertf32x8::<1>(
                    _mm512_castps256_ps512(_mm256_loadu_ps(xp[g][0].add(f * LANES))),
                    _mm256_loadu_ps(xp[g][1].add(f * LANES)),
                );
                for c in 0..K {
                    let qf = _mm512_set1_ps(*q.qc[c].get_unchecked(f));
                    acc[g * K + c] = _mm512_fmadd_ps(x, qf, acc[g * K + c]);
                }
            }
        }
        if job.words > 0 {
            let low = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            for g in 0..G {
                let bp = [0, 1].map(|h| job.bits.as_ptr().add(at(2 * g + h) * job.words * LANES));
                for c in 0..K {
                    let mut cnt = [_mm512_setzero_si512(); 2];
                    for w in 0..job.words {
                        let qw = _mm512_set1_epi64(q.qb[c][w] as i64);
                        for h in 0..2 {
                            let v = _mm512_loadu_si512(bp[h].add(w * LANES).cast());
                            cnt[h] = _mm512_add_epi64(
                                cnt[h],
                                _mm512_popcnt_epi64(_mm512_and_si512(v, qw)),
                            );
                        }
                    }
                    // The counts (at most 256) are their lanes' low halves: the two vectors' low
                    // halves side by side, then converted.
                    let cf = _mm512_cvtepi32_ps(_mm512_permutex2var_epi32(cnt[0], low, cnt[1]));
                    acc[g * K + c] = _mm512_add_ps(acc[g * K + c], cf);
                }
            }
        }
        // Loops, not closures: a closure the optimiser leaves out of line is a call per
        // vector.
        let c2 = _mm512_set1_ps((-2.0 * job.ng) as f32);
        let ngv = _mm512_set1_pd(job.ng);
        let zero = _mm512_setzero_ps();
        let mut out = [zero; N];
        for g in 0..G {
            let r0 = at(2 * g) * LANES;
            let mut half = [_mm256_setzero_ps(); 2];
            for h in 0..2 {
                let r = r0 + h * LANES;
                let rows = n.saturating_sub(r).min(LANES);
                let mask: __mmask8 = if rows == LANES {
                    0xff
                } else {
                    ((1u32 << rows) - 1) as u8
                };
                let ni = _mm512_maskz_loadu_pd(mask, job.norms.as_ptr().add(r.min(n)));
                half[h] = _mm512_cvtpd_ps(_mm512_mul_pd(ngv, ni));
            }
            let a = _mm512_insertf32x8::<1>(_mm512_castps256_ps512(half[0]), half[1]);
            for c in 0..K {
                let ab = _mm512_add_ps(a, _mm512_set1_ps(q.nj[c]));
                // min(t, 0) is the exponential's own clamp (`exp2_x`).
                out[g * K + c] = _mm512_fmadd_ps(acc[g * K + c], c2, ab);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_columns_equal_the_portable_pass_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if !(std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vpopcntdq")
            && std::is_x86_feature_detected!("fma"))
        {
            eprintln!("SKIPPED: the fused path needs AVX-512 with VPOPCNTDQ");
            return;
        }
        for hybrid in [true, false] {
            let ds = super::super::tests::mixed_rows(301, 23, 17, hybrid);
            let layout = Layout::new(&ds);
            assert_eq!(matches!(layout, Layout::Hybrid { .. }), hybrid);
            assert_eq!(matches!(layout, Layout::Dense { .. }), !hybrid);
            super::super::tests::assert_finished_in_registers::<f32>(
                &ds,
                &[0.05, 0.7, 40.0],
                rbf_f32,
            );
        }
    }
}
