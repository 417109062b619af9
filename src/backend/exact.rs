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

mod cached;
mod incremental;
pub use cached::certify_from_columns;
pub use incremental::{Certified, certify_incremental};

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
    if panel_gradient(prob, alpha, None, out) {
        return;
    }
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    let d = prob.data.n_features();
    if d <= MAX_DENSE_D {
        let mut xa = Array2::<f64>::zeros((na, d));
        for (r, &j) in act.iter().enumerate() {
            prob.data
                .row(j)
                .scatter_f64(xa.row_mut(r).as_slice_mut().expect("contiguous"));
        }
        let xat = xa.t();
        let budget = crate::budget::current();
        out.par_chunks_mut(BLOCK)
            .enumerate()
            .for_each(|(b, chunk)| {
                if budget.spent() {
                    return;
                }
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
                    *g = prob.y[i] * s + alpha.get(i) * prob.inv_c(i);
                }
            });
    } else {
        let post = super::gram::Postings::new(prob.data, &act);
        let budget = crate::budget::current();
        out.par_iter_mut().enumerate().for_each_init(
            || vec![0.0f64; na],
            |dots, (i, g)| {
                if budget.spent() {
                    return;
                }
                pair_dots(post.as_ref(), prob.data, i, &act, dots);
                let s = kernel_row_sum(prob.kernel, dots, &nj, &coef, prob.norms[i]);
                *g = prob.y[i] * s + alpha.get(i) * prob.inv_c(i);
            },
        );
    }
}

/// g_i for i = rows\[k\] into out\[k\], exactly, by the fastest product that applies: the panel
/// products of [`full_gradient`] (the same numbers it gives those rows), else
/// [`gradient_rows`].
pub fn gradient_on_rows(prob: &Problem<'_>, alpha: &ActiveSet, rows: &[usize], out: &mut [f64]) {
    if !alpha.is_empty() && panel_gradient(prob, alpha, Some(rows), out) {
        return;
    }
    gradient_rows(prob, alpha, rows, out);
}

/// g_i for i = rows[k] into out[k] (every row when `rows` is None) by the panel products of
/// [`full_gradient`] — per distinct row, the binary product or the f64 panel, whichever it
/// takes — so a row gets the same number to the bit whichever rows are asked for. False (and
/// `out` untouched) when none applies.
fn panel_gradient(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    rows: Option<&[usize]>,
    out: &mut [f64],
) -> bool {
    let act = alpha.indices();
    let row = |k: usize| rows.map_or(k, |r| r[k]);
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    let finish = |out: &mut [f64]| {
        for (k, g) in out.iter_mut().enumerate() {
            let i = row(k);
            *g = prob.y[i] * *g + alpha.get(i) * prob.inv_c(i);
        }
    };
    if let Some(crate::problem::DistinctRows { rows: drows, rep }) = prob.distinct_rows() {
        // Repeated rows (KDD99: 30 % distinct): the kernel sum depends on x alone, so it is
        // computed once per distinct row, against the support vectors merged by their rows:
        // in the order of α's points, each merged column where its first point stands, its
        // coefficients summed in that order — an order that does not depend on how the rows
        // are numbered, so a rank holding some of the rows merges them as one process does.
        let mut slot_of: rustc_hash::FxHashMap<u32, usize> =
            rustc_hash::FxHashMap::with_capacity_and_hasher(act.len(), Default::default());
        let (mut cols, mut cf, mut cn) = (Vec::new(), Vec::<f64>::new(), Vec::new());
        for (&j, &c) in act.iter().zip(&coef) {
            match slot_of.entry(rep[j]) {
                std::collections::hash_map::Entry::Occupied(e) => cf[*e.get()] += c,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(cols.len());
                    cols.push(j);
                    cf.push(c);
                    cn.push(prob.norms[j]);
                }
            }
        }
        // Sums per distinct row, spread to the rows asked for.
        let per_distinct = |out: &mut [f64], sums_of: &dyn Fn(&[usize], &mut [f64])| match rows {
            None => {
                let mut sums = vec![0.0; drows.len()];
                sums_of(drows, &mut sums);
                for (i, g) in out.iter_mut().enumerate() {
                    *g = sums[rep[i] as usize];
                }
            }
            Some(r) => {
                let data_rows: Vec<usize> = r.iter().map(|&i| drows[rep[i] as usize]).collect();
                sums_of(&data_rows, out);
            }
        };
        // Binary data with repeats (w8a: 73 % distinct) take the binary product.
        if let Some(panel) = super::binary::BinaryPanel::new(prob.kernel, prob.data, &cols, &cf) {
            per_distinct(out, &|r, o| panel.row_sums(prob.data, Some(r), o));
            finish(out);
            return true;
        }
        if let Some(panel) = Panel::new(prob.kernel, prob.data, &cols, &cf, &cn) {
            per_distinct(out, &|r, o| {
                panel.row_sums(prob.data, &prob.norms, Some(r), o)
            });
            finish(out);
            return true;
        }
    }
    if let Some(panel) = super::binary::BinaryPanel::new(prob.kernel, prob.data, act, &coef) {
        panel.row_sums(prob.data, rows, out);
        finish(out);
        return true;
    }
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    if let Some(panel) = Panel::new(prob.kernel, prob.data, act, &coef, &nj) {
        panel.row_sums(prob.data, &prob.norms, rows, out);
        finish(out);
        return true;
    }
    false
}

/// The certified duality gap of α: (f, gap, s) with f = ½αᵀQα, gap = 2f − min_i g_i, from the
/// exact gradient.
pub fn certify(prob: &Problem<'_>, alpha: &ActiveSet) -> (f64, f64, usize) {
    if let Some((r, _)) = certify_screened(prob, alpha, None) {
        return r;
    }
    let mut g = vec![0.0; prob.len()];
    full_gradient(prob, alpha, &mut g);
    gap_of(alpha, &g)
}

/// [`certify`], leaving in `g` (m entries) the gradient the pass computed on the way: exact
/// where the full f64 pass runs; with the screen, exact on every row it computed in f64 (A,
/// the probes, every row whose interval reached the minimum) and the screen's f32 value,
/// within its rigorous bound (about 1e-6 of each term), on the rest — rows well above
/// min g. A gradient to go on from where exact passes follow (the rebuild of the set-aside
/// gradients between working-set rounds), for the price of the certification alone.
pub fn certify_with_gradient(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    g: &mut [f64],
) -> (f64, f64, usize) {
    assert_eq!(g.len(), prob.len());
    if let Some((r, _)) = certify_screened(prob, alpha, Some(&mut *g)) {
        return r;
    }
    full_gradient(prob, alpha, g);
    gap_of(alpha, g)
}

/// (f, 2f − min g, argmin) from the whole gradient.
fn gap_of(alpha: &ActiveSet, g: &[f64]) -> (f64, f64, usize) {
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

/// At most this many rows off A (those of lowest upper bound below A's least value) have their
/// exact gradient computed first to set the screen's threshold.
const PROBES: usize = 64;

/// [`certify`] without the full f64 product, for the RBF kernel with AVX-512 or AVX2 (None
/// otherwise): g exactly (f64, the same arithmetic as the full pass) on A, which gives 2f; an
/// f32 pass with a rigorous error bound (`super::screen`) over every row; then g exactly on
/// the rows of lowest upper bound below A's least value (at most `PROBES`), the least of all
/// of them U bounding min g from above, and on
/// every row whose lower bound does not clear U. A row left out has g_i > U ≥ min g, so the
/// minimum, the row holding it and the gap are those of the full f64 pass, to the bit. Also
/// returns how many rows were computed in f64. With `grad`, leaves there the gradient of
/// [`certify_with_gradient`].
pub fn certify_screened(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    grad: Option<&mut [f64]>,
) -> Option<((f64, f64, usize), usize)> {
    certify_screened_bounded(prob, alpha, grad.map(|g| (g, None)))
}

/// [`certify_screened`], also leaving in `err` (with `grad`) a bound on |g_i − grad_i| for
/// every row: 0 where computed in f64, the screen's half-width (and [`SLACK`]) elsewhere.
fn certify_screened_bounded(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    grad: Option<(&mut [f64], Option<&mut [f64]>)>,
) -> Option<((f64, f64, usize), usize)> {
    let m = prob.len();
    let act = alpha.indices();
    // Small products are cheap in f64 (and [`screened_parts`] says where else the full pass
    // is the faster).
    if m < 4 * PROBES || act.len() < PROBES || !screened_sums_apply(prob) {
        return None;
    }
    let rest = rows_off(m, act);
    // The f64 rows go through the same panel as the full pass, so they are the same numbers.
    let parts = screened_parts(prob, alpha, &rest)?;
    let exact_rows = |rows: &[usize], out: &mut [f64]| parts.exact(rows, out);
    let (lo, hi) = (&parts.lo, &parts.hi);
    let (mut grad, mut err) = match grad {
        Some((g, e)) => (Some(g), e),
        None => (None, None),
    };
    if let Some(g) = grad.as_deref_mut() {
        // The screen's value (α_i = 0 off A), overwritten below where computed exactly.
        for (k, &i) in rest.iter().enumerate() {
            g[i] = parts.centre(k);
        }
    }
    if let Some(e) = err.as_deref_mut() {
        e.iter_mut().for_each(|v| *v = 0.0);
        for (k, &i) in rest.iter().enumerate() {
            e[i] = 0.5 * (hi[k] - lo[k] - SLACK) + SLACK;
        }
    }
    certify_by_intervals(alpha, &rest, lo, hi, exact_rows, grad, err)
}

/// The parts of a screened certification for a caller that combines them over several
/// processes (`crate::dist`): every row of `rest`'s interval [lo, hi] ∋ g_i (the screen's,
/// widened by [`SLACK`]) and the exact rows of the full pass ([`ScreenedParts::exact`]).
pub(crate) struct ScreenedParts<'p> {
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    prob: &'p Problem<'p>,
    alpha: &'p ActiveSet,
    panel: Panel,
}

impl ScreenedParts<'_> {
    /// g_i exactly for `rows` into `out`: the full pass's numbers (the support's own rows
    /// first, as the certification asks for them).
    pub(crate) fn exact(&self, rows: &[usize], out: &mut [f64]) -> bool {
        panel_rows(self.prob, self.alpha, &self.panel)(rows, out)
    }

    /// The screen's value of the `k`-th row of `rest` (the middle of its interval).
    pub(crate) fn centre(&self, k: usize) -> f64 {
        0.5 * (self.lo[k] + SLACK + self.hi[k])
    }
}

/// [`ScreenedParts`] of α for the rows `rest` (off α's support) of `prob`, where the screen
/// applies (the RBF kernel, AVX-512 or AVX2, neither grouped nor binary rows, the panel within
/// its size); None where it does not. g_i = y_i (S_i + Σ_j c_j) + α_i/C (α_i = 0 off A): each
/// row's interval is the screen's, widened by [`SLACK`] for the f64 pass's own rounding.
pub(crate) fn screened_parts<'p>(
    prob: &'p Problem<'p>,
    alpha: &'p ActiveSet,
    rest: &[usize],
) -> Option<ScreenedParts<'p>> {
    let crate::kernel::Kernel::Rbf { gamma } = prob.kernel else {
        return None;
    };
    let act = alpha.indices();
    if act.is_empty() || !screened_sums_apply(prob) {
        return None;
    }
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    let screen = super::screen::Screen::new(gamma, prob.data, act, &coef, &nj, SCREEN_MAX_BYTES)?;
    let panel = Panel::new(prob.kernel, prob.data, act, &coef, &nj)?;
    let (mut lo, mut hi) = (vec![0.0; rest.len()], vec![0.0; rest.len()]);
    screen.row_sums(prob.data, &prob.norms, rest, &mut lo, &mut hi);
    let c1: f64 = coef.iter().sum();
    for (k, (l, h)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let centre = prob.y[rest[k]] * (*l + c1);
        (*l, *h) = (centre - *h - SLACK, centre + *h);
    }
    Some(ScreenedParts {
        lo,
        hi,
        prob,
        alpha,
        panel,
    })
}

/// Rows off α's support that a screened certification computes exactly first, at most.
pub(crate) const SCREEN_PROBES: usize = PROBES;

/// g_i exactly for the rows asked, from `panel` (α's support with weights α_j·y_j): y_i times
/// the panel's row sum, plus α_i/C — the full pass's numbers. The screened certifications'
/// `exact_rows`.
fn panel_rows<'p>(
    prob: &'p Problem<'_>,
    alpha: &'p ActiveSet,
    panel: &'p Panel,
) -> impl Fn(&[usize], &mut [f64]) -> bool + 'p {
    move |rows, out| {
        // The support's own rows first (the certifications ask for them so): each of their
        // kernel values once, the same sums.
        let act = alpha.indices();
        let own = if rows.len() >= act.len() && rows[..act.len()] == *act {
            act.len()
        } else {
            0
        };
        panel.own_row_sums(prob.data, &prob.norms, &rows[..own], &mut out[..own]);
        panel.row_sums(prob.data, &prob.norms, Some(&rows[own..]), &mut out[own..]);
        for (g, &i) in out.iter_mut().zip(rows) {
            *g = prob.y[i] * *g + alpha.get(i) * prob.inv_c(i);
        }
        true
    }
}

/// Slack for the f64 passes' own rounding in the screen's comparisons (|g| ≤ 2 there, so their
/// error is well below it).
const SLACK: f64 = 1e-11;

/// g_i = (Qα)_i for i = rows\[k\] into out\[k\] in f32 arithmetic (the screen's row sums, about
/// 1e-6 of each term off), where the screen applies (RBF kernel, AVX-512 or AVX2, neither grouped
/// nor binary rows): a starting gradient for runs whose exact passes come later (the warm
/// start's). False, with `out` untouched, where it does not apply.
pub fn screened_gradient_rows(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    rows: &[usize],
    out: &mut [f64],
) -> bool {
    screened_rows(prob, alpha, rows, out, None)
}

/// [`screened_gradient_rows`], also leaving in `err` (when given) a bound on each row's
/// error: the screen's, and [`SLACK`].
fn screened_rows(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    rows: &[usize],
    out: &mut [f64],
    err: Option<&mut [f64]>,
) -> bool {
    let act = alpha.indices();
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    if !screened_sums(prob, act, &coef, rows, out, err) {
        return false;
    }
    for (&i, g) in rows.iter().zip(out.iter_mut()) {
        *g += alpha.get(i) * prob.inv_c(i);
    }
    true
}

/// Whether the screen computes `prob`'s row sums ([`screened_sums`]): the RBF kernel, on rows
/// that are neither repeated (their sums are per distinct row) nor binary (their f64 product
/// by bit counts costs less than the screen) — short of the panel's size and the CPU's vector
/// instructions, which [`screened_sums`] checks.
pub(super) fn screened_sums_apply(prob: &Problem<'_>) -> bool {
    matches!(prob.kernel, crate::kernel::Kernel::Rbf { .. })
        && prob.distinct_rows().is_none()
        && !super::binary::applies(prob.kernel, prob.data)
}

/// y_i Σ_j coef_j (k(x_i, x_j) + 1) for i = rows\[k\] into out\[k\] by the screen (signed
/// coefficients: the product of α, or of a change of α, with the labels), with
/// [`screened_rows`]'s bound in `err`; false, `out` untouched, where the screen does not apply.
fn screened_sums(
    prob: &Problem<'_>,
    act: &[usize],
    coef: &[f64],
    rows: &[usize],
    out: &mut [f64],
    err: Option<&mut [f64]>,
) -> bool {
    let crate::kernel::Kernel::Rbf { gamma } = prob.kernel else {
        return false;
    };
    if act.is_empty() || !screened_sums_apply(prob) {
        return false;
    }
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    let build = if err.is_some() {
        super::screen::Screen::new
    } else {
        super::screen::Screen::estimates
    };
    let Some(screen) = build(gamma, prob.data, act, coef, &nj, SCREEN_MAX_BYTES) else {
        return false;
    };
    let mut bound = vec![0.0; rows.len()];
    if err.is_some() || !own_then_rest(prob, &screen, act, rows, out) {
        screen.row_sums(prob.data, &prob.norms, rows, out, &mut bound);
    }
    let c1: f64 = coef.iter().sum();
    for (&i, g) in rows.iter().zip(out.iter_mut()) {
        *g = prob.y[i] * (*g + c1);
    }
    if let Some(e) = err {
        for (e, b) in e.iter_mut().zip(&bound) {
            *e = b + SLACK;
        }
    }
    true
}

/// The screen's sums S̃ (no bound) for `rows` ⊇ `act`, the panel's columns: those of `act` by
/// [`super::screen::Screen::own_sums`] (each kernel value among them computed once), the
/// others row by row. False, `out` untouched, where `rows` miss a column or the symmetric
/// sums do not apply.
fn own_then_rest(
    prob: &Problem<'_>,
    screen: &super::screen::Screen,
    act: &[usize],
    rows: &[usize],
    out: &mut [f64],
) -> bool {
    let mut at = vec![u32::MAX; prob.len()];
    for (k, &i) in rows.iter().enumerate() {
        at[i] = k as u32;
    }
    if act.iter().any(|&j| at[j] == u32::MAX) {
        return false;
    }
    let mut own = vec![0.0; act.len()];
    if !screen.own_sums(prob.data, &prob.norms, act, &mut own) {
        return false;
    }
    let mut is_own = vec![false; rows.len()];
    for (&j, &s) in act.iter().zip(&own) {
        out[at[j] as usize] = s;
        is_own[at[j] as usize] = true;
    }
    let rest: Vec<usize> = (0..rows.len()).filter(|&k| !is_own[k]).collect();
    let rest_rows: Vec<usize> = rest.iter().map(|&k| rows[k]).collect();
    let (mut s, mut b) = (vec![0.0; rest.len()], vec![0.0; rest.len()]);
    screen.row_sums(prob.data, &prob.norms, &rest_rows, &mut s, &mut b);
    for (&k, v) in rest.iter().zip(s) {
        out[k] = v;
    }
    true
}

/// (Q(up − down))_i for i = rows\[k\] into out\[k\] by one screened pass over the change's
/// points (`up` and `down` ≥ 0 with no point in both), its bound in `err`; false where the
/// screen does not apply.
pub(super) fn screened_change(
    prob: &Problem<'_>,
    (up, down): (&ActiveSet, &ActiveSet),
    rows: &[usize],
    out: &mut [f64],
    err: &mut [f64],
) -> bool {
    let mut act: Vec<usize> = up.indices().iter().chain(down.indices()).copied().collect();
    act.sort_unstable();
    let change = |j: usize| up.get(j) - down.get(j);
    let coef: Vec<f64> = act.iter().map(|&j| change(j) * prob.y[j]).collect();
    if !screened_sums(prob, &act, &coef, rows, out, Some(&mut *err)) {
        return false;
    }
    for (&i, g) in rows.iter().zip(out.iter_mut()) {
        *g += change(i) * prob.inv_c(i);
    }
    true
}

/// The rows 0..m not in `act`, ascending.
fn rows_off(m: usize, act: &[usize]) -> Vec<usize> {
    let mut on = vec![false; m];
    act.iter().for_each(|&i| on[i] = true);
    (0..m).filter(|&i| !on[i]).collect()
}

/// The end of a screened certification: every row of A is computed exactly by `exact_rows`,
/// which gives 2f and their least value U₀; then the (at most [`PROBES`]) rows of `rest` (the
/// rows off A) whose upper bound `hi` lies below U₀, lowest first, which gives an upper bound
/// U ≥ min g; then every other row whose lower bound `lo` does not clear U. A row left out has
/// g_i > U, so it holds neither the minimum nor a tie with it: (f, gap, argmin) are the full
/// pass's, provided `exact_rows` gives each row the full pass's number. None when `exact_rows`
/// returns false or every g is NaN. Every row computed exactly is also written to `grad`
/// (indexed by row) when given.
fn certify_by_intervals(
    alpha: &ActiveSet,
    rest: &[usize],
    lo: &[f64],
    hi: &[f64],
    exact_rows: impl Fn(&[usize], &mut [f64]) -> bool,
    grad: Option<&mut [f64]>,
    err: Option<&mut [f64]>,
) -> Option<((f64, f64, usize), usize)> {
    let act = alpha.indices();
    let mut rows: Vec<usize> = act.to_vec();
    let mut g = vec![0.0; rows.len()];
    if !exact_rows(&rows, &mut g) {
        return None;
    }
    let f = 0.5
        * act
            .iter()
            .zip(&g)
            .map(|(&i, gi)| alpha.get(i) * gi)
            .sum::<f64>();
    // Only a row that may lie below every row of A can lower U.
    let u0 = g.iter().copied().fold(f64::INFINITY, f64::min);
    let mut probes: Vec<(f64, usize)> = hi
        .iter()
        .enumerate()
        .filter(|&(_, &h)| !(h >= u0))
        .map(|(k, &h)| (h, k))
        .collect();
    let np = PROBES.min(probes.len());
    if np > 0 {
        probes.select_nth_unstable_by(np - 1, |x, y| x.0.total_cmp(&y.0));
    }
    let mut probed = vec![false; rest.len()];
    for &(_, k) in &probes[..np] {
        probed[k] = true;
        rows.push(rest[k]);
    }
    g.resize(rows.len(), 0.0);
    if np > 0 && !exact_rows(&rows[act.len()..], &mut g[act.len()..]) {
        return None;
    }
    let upper = g.iter().copied().fold(f64::INFINITY, f64::min);
    let undecided: Vec<usize> = (0..rest.len())
        .filter(|&k| !probed[k] && !(lo[k] > upper))
        .map(|k| rest[k])
        .collect();
    let mut gu = vec![0.0; undecided.len()];
    if !undecided.is_empty() && !exact_rows(&undecided, &mut gu) {
        return None;
    }
    let (mut best, mut gs) = (usize::MAX, f64::INFINITY);
    for (&i, &v) in rows.iter().zip(&g).chain(undecided.iter().zip(&gu)) {
        if v < gs || (v == gs && i < best) {
            (best, gs) = (i, v);
        }
    }
    if best == usize::MAX {
        // NaN everywhere: the full pass reports it the same way.
        return None;
    }
    if let Some(out) = grad {
        for (&i, &v) in rows.iter().zip(&g).chain(undecided.iter().zip(&gu)) {
            out[i] = v;
        }
    }
    if let Some(e) = err {
        for &i in rows.iter().chain(&undecided) {
            e[i] = 0.0;
        }
    }
    Some(((f, 2.0 * f - gs, best), rows.len() + undecided.len()))
}

/// Largest f32 panel the screened certification builds (bytes).
const SCREEN_MAX_BYTES: usize = 1 << 29;

/// The certified duality gap of α restricted to `rows` ⊇ supp(α): (f, 2f − min_{i∈rows} g_i,
/// argmin), exactly. Sparse FW solves the L2-SVM of a subsample; this is its gap there.
pub fn certify_rows(prob: &Problem<'_>, alpha: &ActiveSet, rows: &[usize]) -> (f64, f64, usize) {
    let mut all: Vec<usize> = rows.to_vec();
    let mut listed = vec![false; prob.len()];
    rows.iter().for_each(|&i| listed[i] = true);
    all.extend(alpha.indices().iter().copied().filter(|&i| !listed[i]));
    let mut g = vec![0.0; all.len()];
    gradient_rows(prob, alpha, &all, &mut g);
    gap_over(alpha, &all, &g)
}

/// (f, 2f − min g, argmin) of α from the exact gradient `g` at the points `all` ⊇ supp(α):
/// f summed in the points' order, ties to the lowest point.
pub(crate) fn gap_over(alpha: &ActiveSet, all: &[usize], g: &[f64]) -> (f64, f64, usize) {
    let f = 0.5
        * all
            .iter()
            .zip(g)
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

/// out\[k\] = g_{rows\[k\]} = Σ_{j∈A} α_j Q_{rows\[k\], j}, exactly (f64), for a few rows: the
/// |rows|×|A| kernel block of the sampled iterations (docs/METHODS.md). Rows in parallel.
pub fn gradient_rows(prob: &Problem<'_>, alpha: &ActiveSet, rows: &[usize], out: &mut [f64]) {
    gradient_rows_of_block(prob, alpha, rows, out, rows.len());
}

/// [`gradient_rows`] for `rows`, part of a block of `block_rows` rows: the method (panel,
/// GEMM or row by row) is the one the whole block takes, and each row's value is computed on
/// its own, so a block split over ranks gives every row the bits one process gives it.
pub fn gradient_rows_of_block(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    rows: &[usize],
    out: &mut [f64],
    block_rows: usize,
) {
    assert_eq!(rows.len(), out.len());
    let act = alpha.indices();
    if act.is_empty() {
        out.iter_mut().for_each(|g| *g = 0.0);
        return;
    }
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    let d = prob.data.n_features();
    if block_rows * act.len() >= 4096
        && let Some(panel) = Panel::new(prob.kernel, prob.data, act, &coef, &nj)
    {
        panel.row_sums(prob.data, &prob.norms, Some(rows), out);
        for (g, &i) in out.iter_mut().zip(rows) {
            *g = prob.y[i] * *g + alpha.get(i) * prob.inv_c(i);
        }
        return;
    }
    // Enough dot products for a GEMM to pay for densifying the rows involved.
    if d <= MAX_DENSE_D && block_rows * act.len() >= 4096 {
        let mut xa = Array2::<f64>::zeros((act.len(), d));
        for (r, &j) in act.iter().enumerate() {
            prob.data
                .row(j)
                .scatter_f64(xa.row_mut(r).as_slice_mut().expect("contiguous"));
        }
        let xat = xa.t();
        const RB: usize = 64;
        let budget = crate::budget::current();
        out.par_chunks_mut(RB)
            .zip(rows.par_chunks(RB))
            .for_each(|(chunk, rs)| {
                if budget.spent() {
                    return;
                }
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
                    *g = prob.y[i] * s + alpha.get(i) * prob.inv_c(i);
                }
            });
        return;
    }
    let post = super::gram::Postings::new(prob.data, act);
    let budget = crate::budget::current();
    out.par_iter_mut().zip(rows.par_iter()).for_each_init(
        || vec![0.0f64; act.len()],
        |dots, (g, &i)| {
            if budget.spent() {
                return;
            }
            pair_dots(post.as_ref(), prob.data, i, act, dots);
            let s = kernel_row_sum(prob.kernel, dots, &nj, &coef, prob.norms[i]);
            *g = prob.y[i] * s + alpha.get(i) * prob.inv_c(i);
        },
    );
}

/// dots[k] = x_i · x_{act[k]}: through the postings where there are some, else pair by pair.
fn pair_dots(
    post: Option<&super::gram::Postings>,
    data: &crate::data::Dataset,
    i: usize,
    act: &[usize],
    dots: &mut [f64],
) {
    let xi = data.row(i);
    if let (Some(p), crate::data::Row::Sparse(ix, v)) = (post, xi) {
        p.dots(ix, v, dots);
        return;
    }
    for (k, &j) in act.iter().enumerate() {
        dots[k] = xi.dot(&data.row(j));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;

    /// The postings' dots are Row::dot's merge, bit for bit (wide sparse rows sharing a few
    /// features, explicit zeros included), and dense data take no postings.
    #[test]
    fn postings_dots_are_the_merged_dots() {
        let mut r = SplitMix64::new(17);
        let (m, d) = (300, 50_000);
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for _ in 0..m {
            let mut f: Vec<u32> = (0..40).map(|_| r.below(d) as u32).collect();
            f.extend([1, 7, 9]);
            f.sort_unstable();
            f.dedup();
            for &j in &f {
                ix.push(j);
                vs.push(if r.next_f64() < 0.05 {
                    0.0
                } else {
                    (r.next_f64() - 0.5) as f32
                });
            }
            ip.push(ix.len());
        }
        let ds = Dataset::from_csr(d, ip, ix, vs, vec![1.0; m]);
        let act: Vec<usize> = (0..m).step_by(3).collect();
        let post = crate::backend::gram::Postings::new(&ds, &act).expect("sparse rows");
        let mut dots = vec![0.0; act.len()];
        for i in 0..m {
            pair_dots(Some(&post), &ds, i, &act, &mut dots);
            for (k, &j) in act.iter().enumerate() {
                assert_eq!(
                    dots[k].to_bits(),
                    ds.row(i).dot(&ds.row(j)).to_bits(),
                    "row {i}, point {j}"
                );
            }
        }
        let dense = Dataset::from_csr_as(3, vec![0, 1], vec![0], vec![1.0], vec![1.0], true);
        assert!(crate::backend::gram::Postings::new(&dense, &[0]).is_none());
    }
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

    /// Binary rows with repeats in every proportion the dedup takes or leaves (so the
    /// gradient goes per distinct row or not, by the binary product where the CPU has it):
    /// the definition's g, and a row gets the same number to the bit whichever rows are asked
    /// for (what the screened certification relies on).
    #[test]
    fn binary_rows_with_repeats_give_the_exact_gradient_row_by_row() {
        let mut r = SplitMix64::new(8);
        for (patterns, m) in [(40usize, 5000usize), (5000, 5000)] {
            let d = 150;
            let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
            for _ in 0..patterns {
                for f in 0..d {
                    if r.next_f64() < 0.06 {
                        ix.push(f as u32);
                        vs.push(1.0f32);
                    }
                }
                ip.push(ix.len());
            }
            let pat = Dataset::from_csr(d, ip, ix, vs, vec![1.0; patterns]);
            // Drawn with repeats, or each pattern once (then almost all distinct).
            let rows: Vec<usize> = if patterns < m {
                (0..m).map(|_| r.below(patterns)).collect()
            } else {
                (0..m).collect()
            };
            let mut ds = pat.subset(&rows);
            ds.labels = (0..m)
                .map(|_| if r.next_f64() < 0.4 { 1.0 } else { -1.0 })
                .collect();
            let prob =
                Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.05 }, 3.0).unwrap();
            assert_eq!(prob.distinct_rows().is_some(), patterns < m);
            let mut a = ActiveSet::new(m);
            for k in 0..300 {
                a.set((k * 53 + 7) % m, 1.0 + (k % 4) as f64);
            }
            let total = a.sum();
            a.scale(1.0 / total);
            let mut g = vec![0.0; m];
            full_gradient(&prob, &a, &mut g);
            for i in (0..m).step_by(11) {
                let want: f64 = a.iter().map(|(j, aj)| aj * prob.q(i, j)).sum();
                assert!((g[i] - want).abs() < 1e-13, "row {i}: {} vs {want}", g[i]);
            }
            let ask: Vec<usize> = (0..m).rev().step_by(3).collect();
            let mut part = vec![0.0; ask.len()];
            assert!(panel_gradient(&prob, &a, Some(&ask), &mut part));
            for (k, &i) in ask.iter().enumerate() {
                assert_eq!(part[k].to_bits(), g[i].to_bits(), "row {i}");
            }
        }
    }

    /// The screened certification gives the full pass's (f, gap, argmin) to the bit, on dense
    /// and sparse data, with α spread and α concentrated, and computes fewer rows in f64
    /// when the gradients spread out.
    #[test]
    fn screened_certification_equals_the_full_pass() {
        let mut r = SplitMix64::new(21);
        let mut screened_any = false;
        for (dense, gamma, c) in [(true, 0.5, 10.0), (false, 0.1, 1.0), (true, 4.0, 100.0)] {
            let (m, d) = (3000, 16);
            let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
            let mut y = Vec::new();
            for _ in 0..m {
                let mut s = 0.0;
                for f in 0..d {
                    if dense || r.next_f64() < 0.3 {
                        let v = (r.next_f64() * 2.0 - 1.0) as f32;
                        s += v as f64 * if f % 2 == 0 { 1.0 } else { -0.5 };
                        ix.push(f as u32);
                        vs.push(v);
                    }
                }
                ip.push(ix.len());
                y.push(if s + 0.3 * (r.next_f64() - 0.5) > 0.0 {
                    1.0
                } else {
                    -1.0
                });
            }
            let ds = Dataset::from_csr(d, ip, ix, vs, y.clone());
            let prob = Problem::new(&ds, y, Kernel::Rbf { gamma }, c).unwrap();
            for spread in [300usize, 80] {
                let mut a = ActiveSet::new(m);
                for k in 0..spread {
                    a.set((k * 37 + 11) % m, 1.0 + (k % 5) as f64);
                }
                let total = a.sum();
                a.scale(1.0 / total);
                let mut exact = vec![0.0; m];
                full_gradient(&prob, &a, &mut exact);
                let full = gap_of(&a, &exact);
                let mut g = vec![f64::NAN; m];
                match certify_screened(&prob, &a, Some(&mut g)) {
                    Some((got, rows)) => {
                        assert_eq!(got, full, "dense {dense} γ {gamma} |A| {spread}");
                        assert!(rows <= m);
                        screened_any |= rows < m;
                        // The gradient left behind: exact on A, within the screen's
                        // error elsewhere.
                        for i in 0..m {
                            if a.contains(i) {
                                assert_eq!(g[i], exact[i], "row {i} of A");
                            }
                            assert!((g[i] - exact[i]).abs() <= 1e-5 * (1.0 + exact[i].abs()));
                        }
                        assert_eq!(certify_with_gradient(&prob, &a, &mut g), full);
                    }
                    None => assert!(
                        !std::is_x86_feature_detected!("avx2"),
                        "no screen with AVX2"
                    ),
                }
            }
        }
        if std::is_x86_feature_detected!("avx2") {
            assert!(screened_any, "the screen never spared a row");
        }
    }
}
