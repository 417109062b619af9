//! The exact gradient g = Qα over all m points, in f64, by blocked matrix products
//! (X_block · X_Aᵀ with ndarray's GEMM) — compute-bound instead of |A| memory-bound column
//! passes. Used to start from an arbitrary α and to certify the final duality gap.

use crate::active::ActiveSet;
use crate::problem::Problem;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::gram::Panel;
use super::simd::kernel_row_sum;

const BLOCK: usize = 256;
/// Above this many features the rows are not densified; pairwise sparse dots are used.
const MAX_DENSE_D: usize = 4096;

/// X_block · X_Aᵀ in row-major (C) order, whatever the operands' shapes: `xb.dot(&xat)` picks
/// column-major output when one feature makes `xb` both C- and F-contiguous, and the rows of
/// the result are then not slices.
fn block_dots(xb: &Array2<f64>, xat: &ArrayView2<'_, f64>) -> Array2<f64> {
    let mut dots = Array2::<f64>::zeros((xb.nrows(), xat.ncols()));
    general_mat_mul(1.0, xb, xat, 0.0, &mut dots);
    dots
}

/// Writes g_i = Σ_{j∈A} α_j Q_ij into `out` (length m).
pub fn full_gradient(prob: &Problem<'_>, alpha: &ActiveSet, out: &mut [f64]) {
    let m = prob.len();
    assert_eq!(out.len(), m);
    let act: Vec<usize> = alpha.indices().to_vec();
    let na = act.len();
    if na == 0 {
        out.iter_mut().for_each(|g| *g = 0.0);
        return;
    }
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    let d = prob.data.n_features();
    let inv_c = 1.0 / prob.c;

    if let Some(crate::problem::DistinctRows { rows, rep }) = prob.distinct_rows() {
        // Repeated rows (KDD99: 30 % distinct): the kernel sum depends on x alone, so it is
        // computed once per distinct row, against the support vectors merged by their rows.
        let mut merged: Vec<(u32, usize, f64)> = act
            .iter()
            .zip(&coef)
            .map(|(&j, &c)| (rep[j], j, c))
            .collect();
        merged.sort_by_key(|&(r, j, _)| (r, j));
        let (mut cols, mut cf, mut cn) = (Vec::new(), Vec::<f64>::new(), Vec::new());
        for (k, &(r, j, c)) in merged.iter().enumerate() {
            if k > 0 && merged[k - 1].0 == r {
                *cf.last_mut().expect("a column") += c;
            } else {
                cols.push(j);
                cf.push(c);
                cn.push(prob.norms[j]);
            }
        }
        if let Some(panel) = Panel::new(prob.kernel, prob.data, &cols, &cf, &cn) {
            let mut sums = vec![0.0; rows.len()];
            panel.row_sums(prob.data, &prob.norms, Some(&rows), &mut sums);
            for (i, g) in out.iter_mut().enumerate() {
                *g = prob.y[i] * sums[rep[i] as usize] + alpha.get(i) * inv_c;
            }
            return;
        }
    }
    if let Some(panel) = Panel::new(prob.kernel, prob.data, &act, &coef, &nj) {
        panel.row_sums(prob.data, &prob.norms, None, out);
        for (i, g) in out.iter_mut().enumerate() {
            *g = prob.y[i] * *g + alpha.get(i) * inv_c;
        }
        return;
    }
    if d <= MAX_DENSE_D {
        let mut xa = Array2::<f64>::zeros((na, d));
        for (r, &j) in act.iter().enumerate() {
            prob.data
                .row(j)
                .scatter_f64(xa.row_mut(r).as_slice_mut().expect("contiguous"));
        }
        let xat = xa.t();
        out.par_chunks_mut(BLOCK)
            .enumerate()
            .for_each(|(b, chunk)| {
                let r0 = b * BLOCK;
                let n = chunk.len();
                let mut xb = Array2::<f64>::zeros((n, d));
                for r in 0..n {
                    prob.data
                        .row(r0 + r)
                        .scatter_f64(xb.row_mut(r).as_slice_mut().expect("contiguous"));
                }
                let dots = block_dots(&xb, &xat);
                for (r, g) in chunk.iter_mut().enumerate() {
                    let i = r0 + r;
                    let row = dots.row(r);
                    let s = kernel_row_sum(
                        prob.kernel,
                        row.as_slice().expect("contiguous"),
                        &nj,
                        &coef,
                        prob.norms[i],
                    );
                    *g = prob.y[i] * s + alpha.get(i) * inv_c;
                }
            });
    } else {
        out.par_iter_mut().enumerate().for_each_init(
            || vec![0.0f64; na],
            |dots, (i, g)| {
                let xi = prob.data.row(i);
                for (k, &j) in act.iter().enumerate() {
                    dots[k] = xi.dot(&prob.data.row(j));
                }
                let s = kernel_row_sum(prob.kernel, dots, &nj, &coef, prob.norms[i]);
                *g = prob.y[i] * s + alpha.get(i) * inv_c;
            },
        );
    }
}

/// The certified duality gap of α: (f, gap, s) with f = ½αᵀQα, gap = 2f − min_i g_i, from the
/// exact gradient.
pub fn certify(prob: &Problem<'_>, alpha: &ActiveSet) -> (f64, f64, usize) {
    let mut g = vec![0.0; prob.len()];
    full_gradient(prob, alpha, &mut g);
    let f = 0.5 * alpha.iter().map(|(i, a)| a * g[i]).sum::<f64>();
    let (mut s, mut gs) = (0, f64::INFINITY);
    for (i, &v) in g.iter().enumerate() {
        if v < gs {
            gs = v;
            s = i;
        }
    }
    (f, 2.0 * f - gs, s)
}

/// The certified duality gap of α restricted to `rows` ⊇ supp(α): (f, 2f − min_{i∈rows} g_i,
/// argmin), exactly. Sparse FW solves the L2-SVM of a subsample; this is its gap there.
pub fn certify_rows(prob: &Problem<'_>, alpha: &ActiveSet, rows: &[usize]) -> (f64, f64, usize) {
    let mut all: Vec<usize> = rows.to_vec();
    let mut listed = vec![false; prob.len()];
    rows.iter().for_each(|&i| listed[i] = true);
    all.extend(alpha.indices().iter().copied().filter(|&i| !listed[i]));
    let mut g = vec![0.0; all.len()];
    gradient_rows(prob, alpha, &all, &mut g);
    let f = 0.5
        * all
            .iter()
            .zip(&g)
            .map(|(&i, gi)| alpha.get(i) * gi)
            .sum::<f64>();
    let (mut s, mut gs) = (all.first().copied().unwrap_or(0), f64::INFINITY);
    for (k, &i) in all.iter().enumerate() {
        if g[k] < gs || (g[k] == gs && i < s) {
            gs = g[k];
            s = i;
        }
    }
    (f, 2.0 * f - gs, s)
}

/// out[k] = g_{rows[k]} = Σ_{j∈A} α_j Q_{rows[k], j}, exactly (f64), for a few rows: the
/// |rows|×|A| kernel block of the sampled iterations (ALGORITHMS.md §3). Rows in parallel.
pub fn gradient_rows(prob: &Problem<'_>, alpha: &ActiveSet, rows: &[usize], out: &mut [f64]) {
    assert_eq!(rows.len(), out.len());
    let act = alpha.indices();
    if act.is_empty() {
        out.iter_mut().for_each(|g| *g = 0.0);
        return;
    }
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    let inv_c = 1.0 / prob.c;
    let d = prob.data.n_features();
    if rows.len() * act.len() >= 4096
        && let Some(panel) = Panel::new(prob.kernel, prob.data, act, &coef, &nj)
    {
        panel.row_sums(prob.data, &prob.norms, Some(rows), out);
        for (g, &i) in out.iter_mut().zip(rows) {
            *g = prob.y[i] * *g + alpha.get(i) * inv_c;
        }
        return;
    }
    // Enough dot products for a GEMM to pay for densifying the rows involved.
    if d <= MAX_DENSE_D && rows.len() * act.len() >= 4096 {
        let mut xa = Array2::<f64>::zeros((act.len(), d));
        for (r, &j) in act.iter().enumerate() {
            prob.data
                .row(j)
                .scatter_f64(xa.row_mut(r).as_slice_mut().expect("contiguous"));
        }
        let xat = xa.t();
        const RB: usize = 64;
        out.par_chunks_mut(RB)
            .zip(rows.par_chunks(RB))
            .for_each(|(chunk, rs)| {
                let mut xb = Array2::<f64>::zeros((rs.len(), d));
                for (r, &i) in rs.iter().enumerate() {
                    prob.data
                        .row(i)
                        .scatter_f64(xb.row_mut(r).as_slice_mut().expect("contiguous"));
                }
                let dots = block_dots(&xb, &xat);
                for (r, g) in chunk.iter_mut().enumerate() {
                    let i = rs[r];
                    let row = dots.row(r);
                    let s = kernel_row_sum(
                        prob.kernel,
                        row.as_slice().expect("contiguous"),
                        &nj,
                        &coef,
                        prob.norms[i],
                    );
                    *g = prob.y[i] * s + alpha.get(i) * inv_c;
                }
            });
        return;
    }
    out.par_iter_mut().zip(rows.par_iter()).for_each_init(
        || vec![0.0f64; act.len()],
        |dots, (g, &i)| {
            let xi = prob.data.row(i);
            for (k, &j) in act.iter().enumerate() {
                dots[k] = xi.dot(&prob.data.row(j));
            }
            let s = kernel_row_sum(prob.kernel, dots, &nj, &coef, prob.norms[i]);
            *g = prob.y[i] * s + alpha.get(i) * inv_c;
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::rng::SplitMix64;

    /// Rows repeated many times (so the gradient is computed per distinct row, against
    /// support vectors merged by row): the same g as the definition, row by row.
    #[test]
    fn repeated_rows_give_the_exact_gradient() {
        let mut r = SplitMix64::new(3);
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..30 {
            for f in 0..6 {
                if r.next_f64() < 0.6 {
                    ix.push(f as u32);
                    vs.push((r.next_f64() * 2.0 - 1.0) as f32);
                }
            }
            ip.push(ix.len());
        }
        let pat = Dataset::from_csr(6, ip, ix, vs, vec![1.0; 30]);
        let rows: Vec<usize> = (0..6000).map(|_| r.below(30)).collect();
        let mut ds = pat.subset(&rows);
        ds.labels = (0..6000)
            .map(|_| if r.next_f64() < 0.4 { 1.0 } else { -1.0 })
            .collect();
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.6 }, 2.0).unwrap();
        assert!(prob.distinct_rows().is_some());
        let mut a = ActiveSet::new(prob.len());
        for (k, i) in [5usize, 17, 900, 901, 4000, 5999].into_iter().enumerate() {
            a.set(i, 1.0 + k as f64);
        }
        let total = a.sum();
        a.scale(1.0 / total);
        let mut g = vec![0.0; prob.len()];
        full_gradient(&prob, &a, &mut g);
        for i in (0..prob.len()).step_by(7).chain([5, 17, 900, 5999]) {
            let want: f64 = a.iter().map(|(j, aj)| aj * prob.q(i, j)).sum();
            assert!((g[i] - want).abs() < 1e-13, "row {i}: {} vs {want}", g[i]);
        }
    }
}
