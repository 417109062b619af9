//! The gradient update and argmin of one chunk of rows, the CPU backend's other hot loop:
//!
//! ```text
//! g_i ← scale·g_i + pc·g⁻_i + a_0·col_0[i] + a_1·col_1[i]      (g⁻_i ← old g_i if rotate)
//! ```
//!
//! with the columns read either directly (full columns: Q entries) or through each row's
//! distinct row (deduplicated columns: k + 1, the labels applied here as a_u·y_i, a_u carrying
//! y_j, and the 1/C diagonal added by the caller). The terms are added in that order, as a
//! plain scalar loop adds them, so results are the same bit for bit on every instruction set
//! (no contraction into fused multiply-adds). Every case is its own branch-free loop, and the
//! whole is compiled for AVX-512, AVX2+FMA and the baseline, chosen at run time: compiled only
//! for the baseline inside rayon's closure, the loop runs as scalar SSE2 code and becomes a
//! large part of the training time. The minimum is found after the update in a second,
//! vectorizable pass (value, then the first row holding it).

use super::simd::Elem;

/// One update's columns and factors for a chunk of rows.
pub struct ChunkUpdate<'a, T> {
    /// Factor on g.
    pub scale: f64,
    /// Factor on g⁻ (with `prev`).
    pub pc: f64,
    /// Whether g⁻ takes the old g.
    pub rotate: bool,
    /// Up to two (column, factor): rows of this chunk, or distinct rows when `rep` is given.
    pub cols: [(&'a [T], f64); 2],
    /// Columns used (0, 1 or 2).
    pub nu: usize,
    /// Each row's distinct row, its label's sign in the top bit (set for y_i = −1)
    /// (deduplicated columns). Every index must be below `distinct`.
    pub rep: Option<&'a [u32]>,
    /// Number of distinct rows (the columns' length) when `rep` is given.
    pub distinct: usize,
    /// With `rep`: the distinct row that entry 0 of the columns holds (the columns cover
    /// distinct rows base..base + distinct).
    pub base: u32,
}

/// Applies `u` to `g` (and `gp` when it is not empty: the previous gradient is kept).
pub fn apply<T: Elem>(g: &mut [f64], gp: &mut [f64], u: &ChunkUpdate<'_, T>) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features the copy is compiled for.
            unsafe { apply_avx512(g, gp, u) };
            return;
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            unsafe { apply_avx2(g, gp, u) };
            return;
        }
    }
    apply_impl(g, gp, u)
}

/// (min g, first row holding it), or (∞, usize::MAX) when no entry is below +∞.
pub fn argmin(g: &[f64]) -> (f64, usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: as above.
            return unsafe { argmin_avx512(g) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { argmin_avx2(g) };
        }
    }
    argmin_impl(g)
}

/// min h_k over the k with `closed[k] == 0` (+∞ when none; NaN never compares below).
pub fn min_open(h: &[f64], closed: &[u8]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: as above.
            return unsafe { min_open_avx512(h, closed) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { min_open_avx2(h, closed) };
        }
    }
    min_open_impl(h, closed)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512bw,avx2")]
fn min_open_avx512(h: &[f64], closed: &[u8]) -> f64 {
    min_open_impl(h, closed)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn min_open_avx2(h: &[f64], closed: &[u8]) -> f64 {
    min_open_impl(h, closed)
}

#[inline(always)]
fn min_open_impl(h: &[f64], closed: &[u8]) -> f64 {
    let closed = &closed[..h.len()];
    let mut lanes = [f64::INFINITY; 8];
    let mut hc = h.chunks_exact(8);
    let mut cc = closed.chunks_exact(8);
    for (hb, cb) in (&mut hc).zip(&mut cc) {
        for l in 0..8 {
            let v = if cb[l] == 0 { hb[l] } else { f64::INFINITY };
            lanes[l] = if v < lanes[l] { v } else { lanes[l] };
        }
    }
    let mut m = f64::INFINITY;
    for &v in &lanes {
        if v < m {
            m = v;
        }
    }
    for (&v, &c) in hc.remainder().iter().zip(cc.remainder()) {
        if c == 0 && v < m {
            m = v;
        }
    }
    m
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
fn apply_avx512<T: Elem>(g: &mut [f64], gp: &mut [f64], u: &ChunkUpdate<'_, T>) {
    apply_impl(g, gp, u)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn apply_avx2<T: Elem>(g: &mut [f64], gp: &mut [f64], u: &ChunkUpdate<'_, T>) {
    apply_impl(g, gp, u)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx2")]
fn argmin_avx512(g: &[f64]) -> (f64, usize) {
    argmin_impl(g)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn argmin_avx2(g: &[f64]) -> (f64, usize) {
    argmin_impl(g)
}

#[inline(always)]
fn argmin_impl(g: &[f64]) -> (f64, usize) {
    // Eight running minima: a reduction LLVM vectorizes (NaN never compares below).
    let mut lanes = [f64::INFINITY; 8];
    let mut chunks = g.chunks_exact(8);
    for c in &mut chunks {
        for l in 0..8 {
            lanes[l] = if c[l] < lanes[l] { c[l] } else { lanes[l] };
        }
    }
    let mut m = f64::INFINITY;
    for &v in lanes.iter().chain(chunks.remainder()) {
        if v < m {
            m = v;
        }
    }
    if m == f64::INFINITY {
        return (m, usize::MAX);
    }
    // The first row holding it: eight at a time (a branch-free compare per block).
    let mut chunks = g.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let mut hit = false;
        for &v in c {
            hit |= v == m;
        }
        if hit {
            let k = c.iter().position(|&v| v == m).unwrap_or(0);
            return (m, base + k);
        }
        base += 8;
    }
    let k = chunks.remainder().iter().position(|&v| v == m);
    (m, k.map_or(usize::MAX, |k| base + k))
}

#[inline(always)]
fn apply_impl<T: Elem>(g: &mut [f64], gp: &mut [f64], u: &ChunkUpdate<'_, T>) {
    let prev = !gp.is_empty();
    match (prev, u.rep) {
        (false, None) => full::<T, false>(g, gp, u),
        (true, None) => full::<T, true>(g, gp, u),
        (false, Some(rep)) => distinct::<T, false>(g, gp, u, rep),
        (true, Some(rep)) => distinct::<T, true>(g, gp, u, rep),
    }
}

/// g_i ← extra(i, scale·g_i [+ pc·g⁻_i]) over the chunk (g⁻_i ← old g_i if rotate): the loop
/// shared by both column kinds, `extra` adding the columns' terms in order.
#[inline(always)]
fn sweep<const PREV: bool>(
    g: &mut [f64],
    gp: &mut [f64],
    u: &ChunkUpdate<'_, impl Elem>,
    extra: impl Fn(usize, f64) -> f64,
) {
    let (scale, pc, n) = (u.scale, u.pc, g.len());
    if PREV {
        let gp = &mut gp[..n];
        if u.rotate {
            for i in 0..n {
                let old = g[i];
                g[i] = extra(i, scale * old + pc * gp[i]);
                gp[i] = old;
            }
        } else {
            for i in 0..n {
                g[i] = extra(i, scale * g[i] + pc * gp[i]);
            }
        }
    } else {
        for (i, gi) in g.iter_mut().enumerate().take(n) {
            *gi = extra(i, scale * *gi);
        }
    }
}

/// Full columns: entry i of each column is Q's.
#[inline(always)]
fn full<T: Elem, const PREV: bool>(g: &mut [f64], gp: &mut [f64], u: &ChunkUpdate<'_, T>) {
    let ((c0, a0), (c1, a1)) = (u.cols[0], u.cols[1]);
    let n = g.len();
    match u.nu {
        0 => sweep::<PREV>(g, gp, u, |_i: usize, v: f64| v),
        1 => {
            let c0 = &c0[..n];
            sweep::<PREV>(g, gp, u, |i: usize, v: f64| v + a0 * c0[i].to_f64())
        }
        _ => {
            let (c0, c1) = (&c0[..n], &c1[..n]);
            sweep::<PREV>(g, gp, u, |i: usize, v: f64| {
                v + a0 * c0[i].to_f64() + a1 * c1[i].to_f64()
            })
        }
    }
}

/// The sign bit of a packed distinct index: set for rows labelled −1.
pub const NEGATIVE: u32 = 1 << 31;

/// Deduplicated columns: row i reads entry rep[i] (k + 1), times y_i (the packed sign) and the
/// factor (which carries y_j). y_i = ±1, so a_u·y_i is exact and the sums are those of
/// `a_u * y[i] * c`, without reading a label array.
#[inline(always)]
fn distinct<T: Elem, const PREV: bool>(
    g: &mut [f64],
    gp: &mut [f64],
    u: &ChunkUpdate<'_, T>,
    rep: &[u32],
) {
    let ((c0, a0), (c1, a1)) = (u.cols[0], u.cols[1]);
    let n = g.len();
    let rep = &rep[..n];
    let sign = |r: u32| if r & NEGATIVE != 0 { -1.0 } else { 1.0 };
    // Every distinct index is in base..base + distinct (the CPU backend passes the groups of
    // those distinct rows; its deduplication never changes), and every column read holds
    // `distinct` entries (checked here), so the loops read without bounds checks and
    // vectorize as gathers.
    assert!(
        c0.len() >= u.distinct || u.nu == 0,
        "column shorter than the distinct rows"
    );
    assert!(
        c1.len() >= u.distinct || u.nu < 2,
        "column shorter than the distinct rows"
    );
    let base = u.base;
    assert!(
        rep.iter()
            .all(|&r| ((r & !NEGATIVE).wrapping_sub(base) as usize) < u.distinct),
        "a distinct row outside the columns"
    );
    let at = |c: &[T], r: u32| {
        // SAFETY: r − base < u.distinct ≤ the length of every column read (asserted above).
        unsafe { c.get_unchecked((r & !NEGATIVE).wrapping_sub(base) as usize) }.to_f64()
    };
    match u.nu {
        0 => sweep::<PREV>(g, gp, u, |_i: usize, v: f64| v),
        1 => sweep::<PREV>(g, gp, u, |i: usize, v: f64| {
            v + a0 * sign(rep[i]) * at(c0, rep[i])
        }),
        _ => sweep::<PREV>(g, gp, u, |i: usize, v: f64| {
            let y = sign(rep[i]);
            v + a0 * y * at(c0, rep[i]) + a1 * y * at(c1, rep[i])
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(g: &mut [f64], gp: &mut [f64], u: &ChunkUpdate<'_, f32>) {
        for i in 0..g.len() {
            let old = g[i];
            let mut v = u.scale * old;
            if !gp.is_empty() {
                v += u.pc * gp[i];
                if u.rotate {
                    gp[i] = old;
                }
            }
            for k in 0..u.nu {
                let (c, a) = u.cols[k];
                v += match u.rep {
                    None => a * c[i] as f64,
                    Some(rep) => {
                        let y = if rep[i] & NEGATIVE != 0 { -1.0 } else { 1.0 };
                        a * y * c[(rep[i] & !NEGATIVE) as usize] as f64
                    }
                };
            }
            g[i] = v;
        }
    }

    #[test]
    fn every_case_matches_the_formula() {
        let n = 37;
        let c0: Vec<f32> = (0..n).map(|i| 0.5 + i as f32 * 0.01).collect();
        let c1: Vec<f32> = (0..n).map(|i| 1.5 - i as f32 * 0.02).collect();
        // Distinct rows 0..11, every third row labelled −1.
        let rep: Vec<u32> = (0..n)
            .map(|i| (i * 7 % 11) as u32 | if i % 3 == 0 { NEGATIVE } else { 0 })
            .collect();
        for nu in 0..3 {
            for prev in [false, true] {
                for rotate in [false, true] {
                    for dedup in [false, true] {
                        let u = ChunkUpdate {
                            scale: 0.9,
                            pc: -0.2,
                            rotate,
                            cols: [(&c0[..], 0.3), (&c1[..], -0.7)],
                            nu,
                            rep: dedup.then_some(&rep[..]),
                            distinct: 11,
                            base: 0,
                        };
                        let g0: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
                        let gp0: Vec<f64> = if prev {
                            (0..n).map(|i| (i as f64 * 0.11).cos()).collect()
                        } else {
                            Vec::new()
                        };
                        let (mut g, mut gp) = (g0.clone(), gp0.clone());
                        apply(&mut g, &mut gp, &u);
                        let (mut gr, mut gpr) = (g0, gp0);
                        reference(&mut gr, &mut gpr, &u);
                        for i in 0..n {
                            assert!(
                                (g[i] - gr[i]).abs() < 1e-15,
                                "nu {nu} prev {prev} rotate {rotate} dedup {dedup} row {i}"
                            );
                        }
                        assert_eq!(gp, gpr);
                    }
                }
            }
        }
    }

    #[test]
    fn argmin_takes_the_first_minimum_and_skips_nan() {
        let mut g: Vec<f64> = (0..45).map(|i| 10.0 - (i % 13) as f64).collect();
        g[3] = f64::NAN;
        let (m, i) = argmin(&g);
        assert_eq!((m, i), (-2.0, 12));
        assert_eq!(
            argmin(&[f64::NAN, f64::INFINITY]),
            (f64::INFINITY, usize::MAX)
        );
        assert_eq!(argmin(&[]), (f64::INFINITY, usize::MAX));
    }
}
