//! Initialisation (docs/METHODS.md, "The solvers"; Ñanculef, Frandi, Sartori, Allende, *A
//! Novel Frank-Wolfe Algorithm. Analysis and Applications to Large-Scale SVM Training*, 2014,
//! use 20 points): draw p random indices, solve the problem restricted to them to a tight gap
//! with pairwise steps on the exact p×p Q, and start from that α (zero elsewhere). p = 0 or 1
//! starts from one random vertex.

use super::steps;
use crate::active::ActiveSet;
use crate::backend::Solvable;
use crate::error::Result;
use crate::problem::Problem;
use crate::rng::SplitMix64;

/// The starting α: the optimum (to gap ≤ ε/100) of the problem restricted to `p` random points.
pub fn initial_alpha(prob: &Problem<'_>, p: usize, seed: u64, eps: f64) -> ActiveSet {
    initial_alpha_by(prob.len(), p, seed, eps, &|i, j| prob.q(i, j))
}

/// [`initial_alpha`] through a backend (the same points and numbers: a backend's `q` is the
/// problem's): a distributed backend first fetches the sampled rows from their ranks.
pub fn initial_alpha_on(be: &mut dyn Solvable, p: usize, seed: u64, eps: f64) -> Result<ActiveSet> {
    let m = be.len();
    be.fetch_rows(&sample(m, p, seed))?;
    let be = &*be;
    Ok(initial_alpha_by(m, p, seed, eps, &|i, j| be.q(i, j)))
}

/// The `p` points (at least one) the start is solved on.
pub(crate) fn sample(m: usize, p: usize, seed: u64) -> Vec<usize> {
    SplitMix64::new(seed).sample_distinct(m, p.clamp(1, m))
}

/// The starting α of [`initial_alpha`] with Q_ij given by `q`.
pub(crate) fn initial_alpha_by(
    m: usize,
    p: usize,
    seed: u64,
    eps: f64,
    q: &dyn Fn(usize, usize) -> f64,
) -> ActiveSet {
    let idx = sample(m, p, seed);
    let n = idx.len();
    let mut alpha = ActiveSet::new(m);
    if n == 1 {
        alpha.set(idx[0], 1.0);
        return alpha;
    }
    let mut qm = vec![0.0; n * n];
    for a in 0..n {
        for b in a..n {
            let v = q(idx[a], idx[b]);
            qm[a * n + b] = v;
            qm[b * n + a] = v;
        }
    }
    let w = solve_small(&qm, n, (eps * 1e-2).max(1e-14), 100_000);
    for (k, &i) in idx.iter().enumerate() {
        if w[k] > 0.0 {
            alpha.set(i, w[k]);
        }
    }
    alpha
}

/// min ½wᵀQw on the simplex for a small dense Q (n×n), by pairwise steps from the uniform
/// point, until the duality gap is ≤ tol or `max_iter` steps.
pub fn solve_small(q: &[f64], n: usize, tol: f64, max_iter: usize) -> Vec<f64> {
    let mut w = vec![1.0 / n as f64; n];
    let mut g: Vec<f64> = (0..n)
        .map(|i| (0..n).map(|j| q[i * n + j] * w[j]).sum())
        .collect();
    for _ in 0..max_iter {
        let (mut s, mut v) = (0, usize::MAX);
        for i in 0..n {
            if g[i] < g[s] {
                s = i;
            }
            if w[i] > 0.0 && (v == usize::MAX || g[i] > g[v]) {
                v = i;
            }
        }
        let two_f: f64 = w.iter().zip(&g).map(|(a, b)| a * b).sum();
        if two_f - g[s] <= tol || s == v {
            break;
        }
        let (lam, _) = steps::pairwise(g[s], g[v], q[s * n + s], q[v * n + v], q[s * n + v], w[v]);
        if lam <= 0.0 {
            break;
        }
        w[s] += lam;
        if lam >= w[v] {
            w[v] = 0.0;
        } else {
            w[v] -= lam;
        }
        for i in 0..n {
            g[i] += lam * (q[i * n + s] - q[i * n + v]);
        }
    }
    w
}
