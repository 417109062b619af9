//! The working-set solver's inner solve: SWAP-2o pairwise steps on a cached q×q block
//! ([`super::ws`]), written as whole-block passes the compiler vectorizes.
//!
//! Each step is the scalar rule of [`super::steps::pairwise`]: s = argmin_W g, v = the point
//! of W ∩ A with g_v > g_s and the largest exact decrease (ties to the lower point), λ its
//! clipped step, g_W += λ(Q\[W,s\] − Q\[W,v\]). A step costs a few passes over q values instead of
//! one loop with branches and a division per point: the decreases of every candidate (a
//! masked pass), their maximum, the lowest point that reaches it, the update of g and the
//! next s and max g. The arithmetic of each value is the scalar rule's, in the same order, and
//! maxima and minima are exact, so the steps — and the models — are bit for bit those of the
//! one-loop form; the passes run in AVX2 or AVX-512 registers where the CPU has them (no
//! fused multiply-adds: the compiler does not contract Rust's separate products and sums).

use super::steps;

/// Lanes of the passes' independent accumulators (the widest f64 vector, AVX-512).
const LANES: usize = 8;

/// The block's data and the step state, borrowed from the working-set solver.
pub struct Block<'a> {
    /// Q_WW, row-major n×n (row k = column k: the block is symmetric).
    pub q: &'a [f64],
    /// g on W.
    pub g: &'a mut [f64],
    /// α on W.
    pub a: &'a mut [f64],
    /// W's points (ties go to the lower point).
    pub w: &'a [usize],
}

/// Buffers of the inner solve, kept between outer iterations.
#[derive(Default)]
pub struct Workspace {
    diag: Vec<f64>,
    dec: Vec<f64>,
}

/// SWAP-2o steps on `b` until the pairwise gap on W (max_{W∩A} g − min_W g) is at most
/// `tol` or `max` steps were taken; returns the steps taken.
pub fn solve(b: Block<'_>, tol: f64, max: usize, ws: &mut Workspace) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            return unsafe { solve_avx512(b, tol, max, ws) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { solve_avx2(b, tol, max, ws) };
        }
    }
    solve_body(b, tol, max, ws)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn solve_avx512(b: Block<'_>, tol: f64, max: usize, ws: &mut Workspace) -> usize {
    solve_body(b, tol, max, ws)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn solve_avx2(b: Block<'_>, tol: f64, max: usize, ws: &mut Workspace) -> usize {
    solve_body(b, tol, max, ws)
}

#[inline(always)]
fn solve_body(b: Block<'_>, tol: f64, max: usize, ws: &mut Workspace) -> usize {
    let Block { q, g, a, w } = b;
    let n = w.len();
    ws.diag.clear();
    ws.diag.extend((0..n).map(|k| q[k * n + k]));
    ws.dec.resize(n, 0.0);
    let (diag, dec) = (&ws.diag[..], &mut ws.dec[..]);
    let mut s = lowest(g, w);
    let mut gmax = max_over_support(g, a);
    let mut taken = 0;
    while taken < max {
        if gmax - g[s] <= tol {
            break;
        }
        let qs = &q[s * n..(s + 1) * n];
        decreases(g, a, qs, diag, s, dec);
        let Some(v) = best_candidate(dec, w) else {
            break;
        };
        let (lam, _) = steps::pairwise(g[s], g[v], diag[s], diag[v], qs[v], a[v]);
        if lam <= 0.0 {
            break;
        }
        let (av, as_) = (a[v], a[s]);
        // A step too small to change α in f64: the block is solved as far as the
        // arithmetic allows.
        if as_ + lam == as_ && lam < av && av - lam == av {
            break;
        }
        a[s] = as_ + lam;
        a[v] = if lam >= av { 0.0 } else { av - lam };
        let qv = &q[v * n..(v + 1) * n];
        for ((gk, &x), &y) in g.iter_mut().zip(qs).zip(qv) {
            *gk += lam * (x - y);
        }
        s = lowest(g, w);
        gmax = max_over_support(g, a);
        taken += 1;
    }
    taken
}

/// The exact decrease of the pairwise step from s to each k ([`steps::pairwise`]'s
/// arithmetic), −∞ where k is no candidate (k = s, α_k = 0, or g_k ≤ g_s). Selects instead of
/// branches (a quotient whose curvature is not positive is computed and discarded), and
/// `min` spelled as a comparison, so the loop vectorizes: for the candidates the values are
/// those of the branches.
#[inline(always)]
fn decreases(g: &[f64], a: &[f64], qs: &[f64], diag: &[f64], s: usize, dec: &mut [f64]) {
    let (gs, qss) = (g[s], diag[s]);
    let n = dec.len();
    let (g, a, qs, diag) = (&g[..n], &a[..n], &qs[..n], &diag[..n]);
    for k in 0..n {
        let (gain, ak) = (g[k] - gs, a[k]);
        let curv = qss + diag[k] - 2.0 * qs[k];
        let r = gain / curv;
        let clipped = if r < ak { r } else { ak };
        let lam = if curv > 0.0 { clipped } else { ak };
        let d = lam * gain - 0.5 * lam * lam * curv;
        dec[k] = if ak > 0.0 && gain > 0.0 {
            d
        } else {
            f64::NEG_INFINITY
        };
    }
    dec[s] = f64::NEG_INFINITY;
}

/// The candidate with the largest positive decrease, ties to the lower point; None when no
/// decrease is positive.
#[inline(always)]
fn best_candidate(dec: &[f64], w: &[usize]) -> Option<usize> {
    let top = lane_max(dec);
    if !(top > 0.0) {
        return None;
    }
    Some(lowest_point_at(dec, top, w))
}

/// argmin g, ties to the lower point.
#[inline(always)]
fn lowest(g: &[f64], w: &[usize]) -> usize {
    let min = lane_min(g);
    if min == f64::INFINITY {
        return 0;
    }
    lowest_point_at(g, min, w)
}

/// The k with x_k = `value` whose point w_k is lowest (`value` occurs in x): a vector test
/// per chunk of lanes, the chunk's lanes looked at only where one matches (ties are rare).
#[inline(always)]
fn lowest_point_at(x: &[f64], value: f64, w: &[usize]) -> usize {
    let mut k_best = usize::MAX;
    let mut consider = |k: usize| {
        if k_best == usize::MAX || w[k] < w[k_best] {
            k_best = k;
        }
    };
    let (xc, xr) = x.as_chunks::<LANES>();
    for (c, xv) in xc.iter().enumerate() {
        let mut hit = false;
        for &v in xv {
            hit |= v == value;
        }
        if hit {
            for (l, &v) in xv.iter().enumerate() {
                if v == value {
                    consider(c * LANES + l);
                }
            }
        }
    }
    let tail = xc.len() * LANES;
    for (l, &v) in xr.iter().enumerate() {
        if v == value {
            consider(tail + l);
        }
    }
    k_best
}

/// max g over the points with α > 0 (−∞ when none).
#[inline(always)]
fn max_over_support(g: &[f64], a: &[f64]) -> f64 {
    let mut acc = [f64::NEG_INFINITY; LANES];
    let (gc, gr) = g.as_chunks::<LANES>();
    let (ac, ar) = a[..g.len()].as_chunks::<LANES>();
    for (gv, av) in gc.iter().zip(ac) {
        for l in 0..LANES {
            let v = if av[l] > 0.0 {
                gv[l]
            } else {
                f64::NEG_INFINITY
            };
            acc[l] = if v > acc[l] { v } else { acc[l] };
        }
    }
    for (&v, &ak) in gr.iter().zip(ar) {
        if ak > 0.0 && v > acc[0] {
            acc[0] = v;
        }
    }
    lane_max(&acc)
}

/// The largest of `x` in independent lanes (−∞ when empty; NaN never wins).
#[inline(always)]
fn lane_max(x: &[f64]) -> f64 {
    lane_extreme::<true>(x)
}

/// The smallest of `x` in independent lanes (+∞ when empty; NaN never wins).
#[inline(always)]
fn lane_min(x: &[f64]) -> f64 {
    lane_extreme::<false>(x)
}

/// The largest (`MAX`) or smallest of `x`, lane by lane, then across the lanes.
#[inline(always)]
fn lane_extreme<const MAX: bool>(x: &[f64]) -> f64 {
    let better = |v: f64, than: f64| if MAX { v > than } else { v < than };
    let none = if MAX {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let mut acc = [none; LANES];
    let (xc, xr) = x.as_chunks::<LANES>();
    for xv in xc {
        for l in 0..LANES {
            acc[l] = if better(xv[l], acc[l]) { xv[l] } else { acc[l] };
        }
    }
    for &v in xr {
        if better(v, acc[0]) {
            acc[0] = v;
        }
    }
    acc.iter()
        .fold(none, |m, &v| if better(v, m) { v } else { m })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The inner solve written as one loop with branches, as in the papers' per-iteration
    /// SWAP-2o: the reference the vectorized passes must match bit for bit.
    fn reference(
        q: &[f64],
        g: &mut [f64],
        a: &mut [f64],
        w: &[usize],
        tol: f64,
        max: usize,
    ) -> usize {
        let n = w.len();
        let (mut s, mut gmax) = (0, f64::NEG_INFINITY);
        for k in 0..n {
            if g[k] < g[s] || (g[k] == g[s] && w[k] < w[s]) {
                s = k;
            }
            if a[k] > 0.0 && g[k] > gmax {
                gmax = g[k];
            }
        }
        let mut taken = 0;
        while taken < max && gmax - g[s] > tol {
            let qs = &q[s * n..(s + 1) * n];
            let (mut v, mut best, mut lam) = (usize::MAX, 0.0, 0.0);
            for k in 0..n {
                if a[k] <= 0.0 || k == s || g[k] <= g[s] {
                    continue;
                }
                let (l, dec) = steps::pairwise(g[s], g[k], qs[s], q[k * n + k], qs[k], a[k]);
                if dec > best || (dec == best && v != usize::MAX && w[k] < w[v]) {
                    (best, v, lam) = (dec, k, l);
                }
            }
            if v == usize::MAX || lam <= 0.0 {
                break;
            }
            let (av, as_) = (a[v], a[s]);
            if as_ + lam == as_ && lam < av && av - lam == av {
                break;
            }
            a[s] = as_ + lam;
            a[v] = if lam >= av { 0.0 } else { av - lam };
            let qv = &q[v * n..(v + 1) * n];
            let mut s_next = 0;
            gmax = f64::NEG_INFINITY;
            for k in 0..n {
                g[k] += lam * (qs[k] - qv[k]);
                if g[k] < g[s_next] || (g[k] == g[s_next] && w[k] < w[s_next]) {
                    s_next = k;
                }
                if a[k] > 0.0 && g[k] > gmax {
                    gmax = g[k];
                }
            }
            s = s_next;
            taken += 1;
        }
        taken
    }

    /// Random RBF blocks of every size around the lane width, with zero and tied α and
    /// repeated points (equal columns, so equal gradients and tied decreases): the same
    /// steps, α and g to the bit as the one-loop form.
    #[test]
    fn the_vectorized_steps_are_the_one_loop_steps() {
        let mut r = SplitMix64::new(7);
        for n in [1usize, 2, 3, 7, 8, 9, 17, 64, 100] {
            for trial in 0..4 {
                let x: Vec<f64> = (0..n)
                    .map(|k| {
                        if trial == 3 {
                            (k / 2) as f64
                        } else {
                            r.next_f64() * 3.0
                        }
                    })
                    .collect();
                let y: Vec<f64> = (0..n)
                    .map(|k| if k % 3 == 0 { -1.0 } else { 1.0 })
                    .collect();
                let mut q = vec![0.0; n * n];
                for i in 0..n {
                    for j in 0..n {
                        let k = (-(x[i] - x[j]).powi(2)).exp();
                        q[i * n + j] = y[i] * y[j] * (k + 1.0) + if i == j { 0.1 } else { 0.0 };
                    }
                }
                let w: Vec<usize> = (0..n).map(|k| (k * 7919) % 1009).collect();
                let a0: Vec<f64> = (0..n)
                    .map(|k| if k % 4 == 1 { 0.0 } else { r.next_f64() })
                    .collect();
                let sum: f64 = a0.iter().sum();
                let a0: Vec<f64> = a0.iter().map(|v| v / sum).collect();
                let g0: Vec<f64> = (0..n)
                    .map(|i| {
                        (0..n).map(|j| q[i * n + j] * a0[j]).sum::<f64>() + trial as f64 * 0.01
                    })
                    .collect();
                let (mut g1, mut a1) = (g0.clone(), a0.clone());
                let t1 = reference(&q, &mut g1, &mut a1, &w, 1e-9, 500);
                let (mut g2, mut a2) = (g0.clone(), a0.clone());
                let mut ws = Workspace::default();
                let b = Block {
                    q: &q,
                    g: &mut g2,
                    a: &mut a2,
                    w: &w,
                };
                let t2 = solve(b, 1e-9, 500, &mut ws);
                assert_eq!(t1, t2, "steps, n = {n}, trial {trial}");
                assert!(t1 > 0 || n < 3, "no step taken, n = {n}");
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&g1), bits(&g2), "g, n = {n}, trial {trial}");
                assert_eq!(bits(&a1), bits(&a2), "α, n = {n}, trial {trial}");
            }
        }
    }
}
