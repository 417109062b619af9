//! The working-set solver's away candidates on the CPU: every point of the support scored by
//! [`away_score`] from g, Q_ii and s's cached column, the rows in order (the support's own
//! order would read all three at random), eight at a time, by chunks on the team's threads.

use crate::backend::away_score;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// One chunk's inputs: g, Q_ii and Q[·, s] over its rows (f32 entries), and s's g_s and Q_ss.
pub(super) struct Rows<'a> {
    pub g: &'a [f64],
    pub diag: &'a [f64],
    pub col: &'a [f32],
    pub g_s: f64,
    pub q_ss: f64,
}

/// Scores of the chunk's rows into `out` (one per row), the same numbers as [`away_score`]
/// row by row: AVX-512 where the CPU has it.
pub(super) fn scores(r: &Rows<'_>, out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") {
        // SAFETY: the CPU has AVX-512F and AVX-512VL.
        unsafe { scores_avx512(r, out) };
        return;
    }
    scores_scalar(r, out);
}

fn scores_scalar(r: &Rows<'_>, out: &mut [f64]) {
    for (k, o) in out.iter_mut().enumerate() {
        *o = away_score(r.g[k], r.g_s, r.q_ss, r.diag[k], r.col[k] as f64);
    }
}

/// [`away_score`]'s operations on eight lanes: d = g − g_s; c = max((Q_ss + Q_ii) − 2·Q_si,
/// floor) (max returns the floor for a NaN, as f64::max does); −(d·d / c) where d > 0, +∞
/// elsewhere (a NaN d included). (The masked load of eight f32 entries is AVX-512VL's: without
/// it enabled here the load is a call per eight rows.)
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
fn scores_avx512(r: &Rows<'_>, out: &mut [f64]) {
    let n = out.len();
    let (gs, qss) = (_mm512_set1_pd(r.g_s), _mm512_set1_pd(r.q_ss));
    let floor = _mm512_set1_pd(crate::backend::AWAY_CURVATURE_FLOOR);
    let sign = _mm512_set1_epi64(i64::MIN);
    let (two, zero, inf) = (
        _mm512_set1_pd(2.0),
        _mm512_setzero_pd(),
        _mm512_set1_pd(f64::INFINITY),
    );
    let mut k = 0;
    while k < n {
        let m: __mmask8 = if n - k >= 8 {
            0xff
        } else {
            (1u8 << (n - k)) - 1
        };
        // SAFETY: lanes at and past n are masked off; the slices hold n entries each.
        unsafe {
            let g = _mm512_maskz_loadu_pd(m, r.g.as_ptr().add(k));
            let qii = _mm512_maskz_loadu_pd(m, r.diag.as_ptr().add(k));
            let qsi = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, r.col.as_ptr().add(k)));
            let d = _mm512_sub_pd(g, gs);
            let c = _mm512_sub_pd(_mm512_add_pd(qss, qii), _mm512_mul_pd(two, qsi));
            let c = _mm512_max_pd(c, floor);
            // −x by the sign bit, as the scalar negation (0 − x would give +0 for x = 0).
            let q = _mm512_castpd_si512(_mm512_div_pd(_mm512_mul_pd(d, d), c));
            let v = _mm512_castsi512_pd(_mm512_xor_si512(q, sign));
            let pos = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(d, zero);
            let v = _mm512_mask_blend_pd(pos, inf, v);
            _mm512_mask_storeu_pd(out.as_mut_ptr().add(k), m, v);
        }
        k += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector scores are the scalar ones bit for bit, NaNs, ties with g_s, curvatures
    /// below the floor and a partial last block included.
    #[test]
    fn vector_scores_are_the_scalar_ones() {
        let n = 45;
        let g: Vec<f64> = (0..n).map(|i| ((i * 37) % 11) as f64 * 0.3 - 1.0).collect();
        let mut g = g;
        g[3] = f64::NAN;
        let diag: Vec<f64> = (0..n).map(|i| 2.0 + (i % 3) as f64 * 0.1).collect();
        let mut col: Vec<f32> = (0..n).map(|i| ((i * 13) % 7) as f32 * 0.21).collect();
        col[5] = 1.0; // Q_ss + Q_ii − 2 Q_si = 0 below: the floor
        let r = Rows {
            g: &g,
            diag: &diag,
            col: &col,
            g_s: -0.4,
            q_ss: 0.0,
        };
        let mut diag5 = diag.clone();
        diag5[5] = 2.0;
        let r = Rows { diag: &diag5, ..r };
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        scores(&r, &mut a);
        scores_scalar(&r, &mut b);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b));
        assert!(b.iter().any(|x| x.is_infinite()) && b.iter().any(|&x| x < 0.0));
        assert_eq!(
            b[5],
            -((g[5] + 0.4).powi(2) / crate::backend::AWAY_CURVATURE_FLOOR)
        );
    }
}
