//! RBF columns in f32, fused in registers (AVX-512): dense and hybrid rows.
//!
//! The portable path of [`super::columns_chunk`] forms each column's dots into a buffer and
//! finishes them in three loops over it (the exponent in f64, the exponential in f32, the
//! labels' sign), so every entry travels through memory four times. Here sixteen rows at a
//! time stay in registers from the first multiply-add to the stored f32 entry: the dots of up
//! to [`BATCH`] columns in f64 (two vectors of eight rows each), the bit part's popcounts
//! added (hybrid rows), the exponent formed and rounded to f32, and the exponential taken on
//! all sixteen lanes. Every operation is the one the portable path performs, in the same
//! order — the same fused multiply-adds over the features from zero, the popcount added as an
//! f64, d² = max(fma(−2, dot, ‖x_i‖² + ‖x_j‖²), 0), (−γ·log₂e·d²) rounded to f32, the
//! exponential's steps of [`super::exp2_nonpos_f32`], + 1, and the sign of y_i·y_j (±1, so the
//! f32 product is the f64 one) — so the entries are the same, bit for bit.

use super::{BATCH, ColumnArgs, F32_DOTS_MIN_D, LANES, Layout, MAX_HYBRID_WORDS, hybrid_query};

/// Most continuous features of the rows this path takes: from [`F32_DOTS_MIN_D`] on the
/// products are formed in f32 by the portable pass instead, and the queries' scratch on the
/// stack (cleared for every call) stays this small.
const MAX_CONT: usize = F32_DOTS_MIN_D - 1;
use crate::kernel::Kernel;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Computes the columns `cols` over rows r0..r0+n (n = each output's length) into `outs`
/// when the fused path applies — RBF kernel, dense or hybrid rows, AVX-512 with vector
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
        let dc = match a.layout {
            Layout::Dense { d, .. } => *d,
            Layout::Hybrid { cont, .. } => cont.len(),
            _ => return false,
        };
        // Products formed in f32 (many features) are the portable pass's own, not these; dense
        // rows whose products are exact in f32 go to the f32 tiles (the same entries).
        if super::f32_dots(dc) || dc > MAX_CONT || super::tiles_take_exact(a.layout) {
            return false;
        }
        let n = outs[0].len();
        let mut qc = [[0.0f64; MAX_CONT]; BATCH];
        let mut qb = [[0u64; MAX_HYBRID_WORDS]; BATCH];
        let (xb, dc, bits, words): (&[f32], usize, &[u64], usize) = match a.layout {
            Layout::Dense { d, xb, .. } => {
                for (c, &(_, q)) in cols.iter().enumerate() {
                    qc[c][..*d].copy_from_slice(&q[..*d]);
                }
                (xb, *d, &[], 0)
            }
            Layout::Hybrid {
                cont,
                bin,
                xb,
                words,
                bits,
            } => {
                for (c, &(_, q)) in cols.iter().enumerate() {
                    let dc = cont.len();
                    if !hybrid_query(cont, bin, q, &mut qc[c][..dc], &mut qb[c][..*words]) {
                        return false;
                    }
                }
                (xb, cont.len(), bits, *words)
            }
            _ => return false,
        };
        let b0 = r0 / LANES;
        let nb = n.div_ceil(LANES);
        let job = Job {
            xb: &xb[b0 * dc * LANES..(b0 + nb) * dc * LANES],
            dc,
            bits: &bits[b0 * words * LANES..(b0 + nb) * words * LANES],
            words,
            norms: &a.norms[r0..r0 + n],
            y: &a.y[r0..r0 + n],
            ng: super::rbf_factor(gamma),
        };
        let mut nj = [0.0; BATCH];
        let mut yj = [0.0; BATCH];
        for (c, &(j, _)) in cols.iter().enumerate() {
            nj[c] = a.norms[j];
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
                1 => columns::<1, 8, 4>(&job, &q, outs),
                2 => columns::<2, 4, 2>(&job, &q, outs),
                3 => columns::<3, 2, 1>(&job, &q, outs),
                4 => columns::<4, 2, 1>(&job, &q, outs),
                5 => columns::<5, 2, 1>(&job, &q, outs),
                6 => columns::<6, 2, 1>(&job, &q, outs),
                7 => columns::<7, 2, 1>(&job, &q, outs),
                _ => columns::<8, 2, 1>(&job, &q, outs),
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
/// and labels, and −γ.
struct Job<'a> {
    xb: &'a [f32],
    dc: usize,
    bits: &'a [u64],
    words: usize,
    norms: &'a [f64],
    y: &'a [f64],
    ng: f64,
}

/// The queries: continuous parts, bits, norms and labels.
struct Queries<'a> {
    qc: &'a [[f64; MAX_CONT]; BATCH],
    qb: &'a [[u64; MAX_HYBRID_WORDS]; BATCH],
    nj: &'a [f64; BATCH],
    yj: &'a [f64; BATCH],
}

/// 2^x + 1 for x ≤ 0 on `K` vectors of sixteen lanes: [`super::exp2_x`] (the steps of
/// [`super::exp2_nonpos_f32`], the `K` independent chains interleaved), + 1.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn exp_plus_one_x<const K: usize>(x: [__m512; K]) -> [__m512; K] {
    let one = _mm512_set1_ps(1.0);
    super::exp2_x(x).map(|e| _mm512_add_ps(e, one))
}

/// K columns over the job's rows, `G` groups of sixteen rows (B = 2G blocks) per step: one
/// group for many columns, more for one or two, so that the step holds enough independent
/// chains (a column's dot over one block is a chain of dependent multiply-adds). The blocks'
/// exponents come from [`blocks`] as values (every array indexed by constants only), so they
/// stay in registers: an array indexed at run time lives on the stack, and reading its two
/// 256-bit halves back as one 512-bit vector cannot be forwarded from the stores.
///
/// # Safety
/// The CPU has AVX-512F, AVX-512DQ, VPOPCNTDQ, AVX2 and FMA (the caller's dispatch checked
/// it); the job's slices cover its blocks, and every output holds the job's rows.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)] // c indexes the exponents, signs and outputs
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq,avx2,fma")]
unsafe fn columns<const K: usize, const B: usize, const G: usize>(
    job: &Job<'_>,
    q: &Queries<'_>,
    outs: &mut [&mut [f32]],
) {
    const {
        assert!(
            B == 2 * G && (G == 1 || G * K == 4),
            "two blocks a group; several groups only for one or two columns"
        )
    };
    let n = job.norms.len();
    let nb = n.div_ceil(LANES);
    // y_j as ±1 in f32: y_i·y_j is then one f32 product per sixteen rows, the f64 product's
    // value (±1, or 0 past the job's rows).
    let yj: [__m512; K] = std::array::from_fn(|c| _mm512_set1_ps(q.yj[c] as f32));
    let mut b = 0;
    while b < nb {
        // SAFETY: b < nb.
        let t = unsafe { blocks::<K, B>(job, q, b, nb) };
        let tt: [[__m512; K]; G] = std::array::from_fn(|g| {
            std::array::from_fn(|c| {
                _mm512_insertf32x8::<1>(_mm512_castps256_ps512(t[2 * g][c]), t[2 * g + 1][c])
            })
        });
        // The step's G·K exponentials together (G > 1 only where G·K = 4).
        let ek: [[__m512; K]; G] = if G == 1 {
            [exp_plus_one_x(tt[0]); G]
        } else {
            let e = exp_plus_one_x::<4>(std::array::from_fn(|v| tt[v / K][v % K]));
            std::array::from_fn(|g| std::array::from_fn(|c| e[g * K + c]))
        };
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
                for c in 0..K {
                    let e = _mm512_mul_ps(ek[g][c], _mm512_mul_ps(yi, yj[c]));
                    _mm512_mask_storeu_ps(outs[c].as_mut_ptr().add(r0), m16, e);
                }
            }
        }
        b += 2 * G;
    }
}

/// Blocks `blk` .. `blk` + B (eight rows each) of K columns: the exponents (−γ·d², rounded to
/// f32), the B blocks' dots accumulated in one pass over the features (B·K independent chains
/// of multiply-adds). Rows past the job's end (a last, partial block) read as zero; a block at
/// or past `nb` reads block `nb` − 1 again (its values are not stored). Compiled with
/// [`columns`]' target features, which the closures inside inherit: without them an
/// intrinsic in a closure that the optimiser left out of line is a call per vector (a build
/// measured so ran pendigits at half speed); inlined into [`columns`] (a call would pass the
/// arrays through memory).
///
/// # Safety
/// `blk` < `nb`, the job's block count; called only from [`columns`] (the CPU has its
/// features).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f,avx512dq,avx512vpopcntdq,avx2,fma")]
#[inline]
unsafe fn blocks<const K: usize, const B: usize>(
    job: &Job<'_>,
    q: &Queries<'_>,
    blk: usize,
    nb: usize,
) -> [[__m256; K]; B] {
    let n = job.norms.len();
    let at: [usize; B] = std::array::from_fn(|k| (blk + k).min(nb - 1));
    // SAFETY: the CPU has the features (the caller's contract); every block read is < nb and
    // lies in the job's slices (the caller sliced them to its blocks); norms are read under a
    // mask past n.
    unsafe {
        let mut acc = [[_mm512_setzero_pd(); K]; B];
        let xp: [*const f32; B] = at.map(|k| job.xb.as_ptr().add(k * job.dc * LANES));
        for f in 0..job.dc {
            for k in 0..B {
                let x = _mm512_cvtps_pd(_mm256_loadu_ps(xp[k].add(f * LANES)));
                for c in 0..K {
                    acc[k][c] =
                        _mm512_fmadd_pd(x, _mm512_set1_pd(*q.qc[c].get_unchecked(f)), acc[k][c]);
                }
            }
        }
        if job.words > 0 {
            for k in 0..B {
                let bp = job.bits.as_ptr().add(at[k] * job.words * LANES);
                for c in 0..K {
                    let mut cnt = _mm512_setzero_si512();
                    for w in 0..job.words {
                        let v = _mm512_loadu_si512(bp.add(w * LANES).cast());
                        let m = _mm512_and_si512(v, _mm512_set1_epi64(q.qb[c][w] as i64));
                        cnt = _mm512_add_epi64(cnt, _mm512_popcnt_epi64(m));
                    }
                    acc[k][c] = _mm512_add_pd(acc[k][c], _mm512_cvtepi64_pd(cnt));
                }
            }
        }
        // Loops, not closures: a closure the optimiser leaves out of line is a call per
        // vector.
        let mut out = [[_mm256_setzero_ps(); K]; B];
        for k in 0..B {
            let rows = (n - at[k] * LANES).min(LANES);
            let mask: __mmask8 = if rows == LANES {
                0xff
            } else {
                (1u8 << rows) - 1
            };
            let ni = _mm512_maskz_loadu_pd(mask, job.norms.as_ptr().add(at[k] * LANES));
            for c in 0..K {
                let sum = _mm512_add_pd(ni, _mm512_set1_pd(q.nj[c]));
                let d2 = _mm512_fmadd_pd(_mm512_set1_pd(-2.0), acc[k][c], sum);
                let d2 = _mm512_max_pd(d2, _mm512_setzero_pd());
                out[k][c] = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_set1_pd(job.ng), d2));
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
