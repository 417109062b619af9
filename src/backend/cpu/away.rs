//! The working-set solver's away candidates on the CPU: every point of the support scored by
//! [`away_score`] from g, Q_ii and s's cached column, the rows in order (the support's own
//! order would read all three at random), eight at a time, by chunks on the team's threads.
//! Plain rows are scored and offered to the selection in one pass ([`offer`]): the scores stay
//! in registers, and a selection that has to look at every pair scores the rows again rather
//! than reading stored scores back — the pass is bound by memory, and this reads g, the
//! column and the membership once each, Q_ii not at all where every point has the same.

use crate::backend::away_score;
use crate::backend::select::Keep;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// One chunk's inputs: g, Q_ii and Q[·, s] over its rows (f32 entries), and s's g_s and Q_ss.
pub(super) struct Rows<'a> {
    pub g: &'a [f64],
    pub diag: Diag<'a>,
    pub col: &'a [f32],
    pub g_s: f64,
    pub q_ss: f64,
}

/// Q_ii over a chunk's rows: one value for every row (the RBF kernel without weights: 2 + 1/C),
/// or each row's own.
#[derive(Clone, Copy)]
pub(super) enum Diag<'a> {
    All(f64),
    Each(&'a [f64]),
}

impl Diag<'_> {
    fn at(&self, k: usize) -> f64 {
        match *self {
            Diag::All(d) => d,
            Diag::Each(d) => d[k],
        }
    }
}

/// Offers `keep` the pairs (score, i0 + k) of the chunk's rows k whose point is in the support
/// (`positions[k]` ≠ [`ActiveSet::OUT`]) and whose score passes the bounded selection's test
/// against `t` ([`Keep::offer_members`]'s): the pairs [`Keep::offer_run`] would offer given the
/// rows' [`away_score`]s, in the same order, without storing the scores.
///
/// [`ActiveSet::OUT`]: crate::active::ActiveSet::OUT
pub(super) fn offer(r: &Rows<'_>, positions: &[u32], i0: usize, t: f64, keep: &mut Keep<'_>) {
    let n = r.g.len();
    assert!(
        r.col.len() == n && positions.len() == n,
        "one entry per row"
    );
    if let Diag::Each(d) = r.diag {
        assert_eq!(d.len(), n, "one entry per row");
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") {
        // SAFETY: the CPU has AVX-512F and AVX-512VL; every slice holds n entries (checked).
        unsafe { offer_avx512(r, positions, i0, t, keep) };
        return;
    }
    offer_portable(r, positions, i0, t, keep);
}

/// [`offer`] without vector instructions.
fn offer_portable(r: &Rows<'_>, positions: &[u32], i0: usize, t: f64, keep: &mut Keep<'_>) {
    let n = r.g.len();
    let mut v = [0.0f64; 8];
    for b in (0..n).step_by(8) {
        let len = (n - b).min(8);
        let member = crate::backend::select::member_bits(&positions[b..b + len]);
        if member == 0 {
            continue;
        }
        for (k, o) in v[..len].iter_mut().enumerate() {
            let i = b + k;
            *o = away_score(r.g[i], r.g_s, r.q_ss, r.diag.at(i), r.col[i] as f64);
        }
        keep.offer_members(&v[..len], member, i0 + b, t);
    }
}

/// [`offer`] with AVX-512: [`score8`] and [`Keep::offer_run`]'s test on eight rows a step.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512VL; `positions`, the column and Q_ii (when per row) hold as
/// many entries as g.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn offer_avx512(r: &Rows<'_>, positions: &[u32], i0: usize, t: f64, keep: &mut Keep<'_>) {
    let n = r.g.len();
    let every = t.is_nan();
    let t0 = if every { f64::INFINITY } else { t };
    let out = _mm256_set1_epi32(crate::active::ActiveSet::OUT as i32);
    let mut v = [0.0f64; 8];
    let mut b = 0;
    while b < n {
        let m: __mmask8 = if n - b >= 8 {
            0xff
        } else {
            (1u8 << (n - b)) - 1
        };
        // SAFETY: lanes at and past n are masked off; the slices hold n entries each.
        unsafe {
            let pv = _mm256_maskz_loadu_epi32(m, positions.as_ptr().add(b).cast());
            let member = _mm256_mask_cmpneq_epi32_mask(m, pv, out);
            if member != 0 {
                let s = score8(r, b, m);
                // The kept pairs' threshold falls as the pass goes on.
                let tv = _mm512_set1_pd(t0.min(keep.threshold()));
                let mut hits = member
                    & if every {
                        _mm512_cmp_pd_mask::<_CMP_NGT_UQ>(s, tv)
                    } else {
                        _mm512_cmp_pd_mask::<_CMP_LE_OQ>(s, tv)
                    };
                if hits != 0 {
                    _mm512_storeu_pd(v.as_mut_ptr(), s);
                }
                while hits != 0 {
                    let k = hits.trailing_zeros() as usize;
                    hits &= hits - 1;
                    keep.push((v[k], i0 + b + k));
                }
            }
        }
        b += 8;
    }
}

/// The scores of rows b.. b + 8 (the lanes of mask `m`; the others are +∞ or NaN, never read):
/// [`away_score`]'s operations on eight lanes.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512VL; the lanes of `m` lie within the slices of `r`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
#[inline]
unsafe fn score8(r: &Rows<'_>, b: usize, m: __mmask8) -> __m512d {
    let (gs, qss) = (_mm512_set1_pd(r.g_s), _mm512_set1_pd(r.q_ss));
    let floor = _mm512_set1_pd(crate::backend::AWAY_CURVATURE_FLOOR);
    let sign = _mm512_set1_epi64(i64::MIN);
    let (two, zero, inf) = (
        _mm512_set1_pd(2.0),
        _mm512_setzero_pd(),
        _mm512_set1_pd(f64::INFINITY),
    );
    // SAFETY: the caller's conditions.
    unsafe {
        let g = _mm512_maskz_loadu_pd(m, r.g.as_ptr().add(b));
        let qii = match r.diag {
            Diag::All(d) => _mm512_set1_pd(d),
            Diag::Each(d) => _mm512_maskz_loadu_pd(m, d.as_ptr().add(b)),
        };
        let qsi = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, r.col.as_ptr().add(b)));
        let d = _mm512_sub_pd(g, gs);
        let c = _mm512_sub_pd(_mm512_add_pd(qss, qii), _mm512_mul_pd(two, qsi));
        let c = _mm512_max_pd(c, floor);
        // −x by the sign bit, as the scalar negation (0 − x would give +0 for x = 0).
        let q = _mm512_castpd_si512(_mm512_div_pd(_mm512_mul_pd(d, d), c));
        let v = _mm512_castsi512_pd(_mm512_xor_si512(q, sign));
        let pos = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(d, zero);
        _mm512_mask_blend_pd(pos, inf, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::active::ActiveSet;

    /// The fused pass offers the pairs the scalar scores and [`Keep::offer_run`] offer — the
    /// same scores to the bit, NaNs, ties with g_s, curvatures below the floor, points outside
    /// the support and a partial last block included — at a bound, at NaN (every pair), with Q_ii
    /// per row and for all rows, by the vector copy and the portable one.
    #[test]
    fn fused_offers_are_the_scored_ones() {
        let n = 45;
        let mut g: Vec<f64> = (0..n).map(|i| ((i * 37) % 11) as f64 * 0.3 - 1.0).collect();
        g[3] = f64::NAN;
        let each: Vec<f64> = (0..n).map(|i| 2.0 + (i % 3) as f64 * 0.1).collect();
        let mut col: Vec<f32> = (0..n).map(|i| ((i * 13) % 7) as f32 * 0.21).collect();
        col[5] = 1.0; // Q_ss + Q_ii − 2 Q_si = 0 below: the floor
        let mut each5 = each.clone();
        each5[5] = 2.0;
        let positions: Vec<u32> = (0..n)
            .map(|i| if i % 4 == 1 { ActiveSet::OUT } else { i as u32 })
            .collect();
        for diag in [Diag::Each(&each5), Diag::All(2.0)] {
            let r = Rows {
                g: &g,
                diag,
                col: &col,
                g_s: -0.4,
                q_ss: 0.0,
            };
            let scores: Vec<f64> = (0..n)
                .map(|k| away_score(g[k], -0.4, 0.0, diag.at(k), col[k] as f64))
                .collect();
            assert!(scores.iter().any(|x| x.is_infinite()) && scores.iter().any(|&x| x < 0.0));
            for t in [f64::NAN, -0.5, 0.0] {
                // A cap small enough that pruning happens within the pass.
                let run = |f: &dyn Fn(&mut Keep<'_>)| {
                    let mut out = Vec::new();
                    f(&mut Keep::new(&mut out, 3, 6));
                    out.iter()
                        .map(|&(v, i)| (v.to_bits(), i))
                        .collect::<Vec<_>>()
                };
                let want = run(&|k| k.offer_run(&scores, Some(&positions), 7, t));
                assert!(!want.is_empty());
                assert_eq!(run(&|k| offer(&r, &positions, 7, t, k)), want, "t {t}");
                assert_eq!(
                    run(&|k| offer_portable(&r, &positions, 7, t, k)),
                    want,
                    "t {t}"
                );
            }
        }
        assert_eq!(
            away_score(g[5], -0.4, 0.0, 2.0, 1.0),
            -((g[5] + 0.4).powi(2) / crate::backend::AWAY_CURVATURE_FLOOR)
        );
    }
}
