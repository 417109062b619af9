//! Trained models: support vectors, coefficients and biases in LIBSVM's layout, read and
//! written in LIBSVM's model text format (so `svm-predict` and the LIBSVM bindings load our
//! models), and prediction (one-versus-one voting, ties to the class listed first).
//!
//! For a binary L2-SVM with solution α: `sv_coef_i = α_i y_i` and `rho = −Σ α_i y_i`, so that
//! LIBSVM's decision `Σ sv_coef_i k(x_i, x) − rho` equals F(x) = Σ α_i y_i (k(x_i, x) + 1).

use crate::backend::dot_f64 as dot;
use crate::data::{Dataset, Row};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use ndarray::Array2;
use rayon::prelude::*;
use std::io::{BufRead, Write};
use std::path::Path;

/// A trained (possibly multi-class) SVM.
#[derive(Debug, Clone)]
pub struct Model {
    /// Kernel.
    pub kernel: Kernel,
    /// Class labels in model order.
    pub labels: Vec<f64>,
    /// Number of SVs of each class (SVs are stored grouped by class, in label order).
    pub nr_sv: Vec<usize>,
    /// The support vectors (the dataset's labels hold each SV's class label).
    pub sv: Dataset,
    /// (nr_class − 1) rows × total_sv coefficients, LIBSVM's layout.
    pub sv_coef: Vec<Vec<f64>>,
    /// One bias per class pair (0,1), (0,2), …, (1,2), …
    pub rho: Vec<f64>,
    /// Platt's sigmoid per class pair, P(first class | f) = 1 / (1 + e^{A f + B}) (LIBSVM's
    /// `probA`, `probB`; see [`crate::probability`]); empty unless trained with probabilities.
    pub prob_a: Vec<f64>,
    /// The B of each pair's sigmoid (with `prob_a`).
    pub prob_b: Vec<f64>,
    /// A one-class model (LIBSVM's `svm_type one_class`): labels are [+1, −1] (inside,
    /// outside), every SV counts as +1, one coefficient row and one rho; prediction is +1
    /// where Σ coef_i k(x_i, x) − rho > 0, as for a binary model whose −1 class has no SVs.
    pub one_class: bool,
    /// Each SV's row in the training data, in SV order (scikit-learn's `support_`); empty for
    /// a model read from a file, which does not keep them.
    pub sv_rows: Vec<usize>,
}

fn fmt_f64(x: f64) -> String {
    format!("{x}")
}

/// Entries (support vectors × features) past which prediction reads sparse support vectors
/// through their postings instead of a dense copy (16M f64: 128 MB).
const DENSE_SV_MAX: usize = 1 << 24;
/// Fewest kernel values (rows × SVs) for which [`Model::predict`] screens in f32: below, the
/// f64 panel alone is quick.
const SCREEN_MIN_WORK: usize = 1 << 20;
/// Largest f32 panel of support vectors the screened prediction builds (bytes).
const SCREEN_MAX_BYTES: usize = 1 << 30;
/// The unit roundoff of f64, 2⁻⁵³.
const U64: f64 = f64::EPSILON / 2.0;

/// Most classes whose votes [`settled_vote`] counts (more go to the f64 path).
const MAX_SETTLED_CLASSES: usize = 64;

/// The class that LIBSVM's one-versus-one vote ([`Model::vote`]) elects whatever the pairs
/// left open decide, or None when they could change it. `sides[p]` is 1 when pair p = (i, j)
/// (in the order of the decision values) votes for i, −1 for j, 0 when open. The class w with
/// the most settled votes (the first on ties) is elected whatever the open pairs give when,
/// for every other class c, w's settled votes exceed c's settled and open ones together, or
/// equal them with w listed first (the vote's ties go to the class listed first).
fn settled_vote(k: usize, sides: &[i8]) -> Option<usize> {
    const MAX: usize = MAX_SETTLED_CLASSES;
    if k > MAX {
        return None;
    }
    let (mut won, mut open) = ([0u32; MAX], [0u32; MAX]);
    for_each_pair(k, |p, i, j| match sides[p] {
        1 => won[i] += 1,
        -1 => won[j] += 1,
        _ => {
            open[i] += 1;
            open[j] += 1;
        }
    });
    let w = most_voted(&won[..k]);
    (0..k)
        .filter(|&c| c != w)
        .all(|c| {
            let most = won[c] + open[c];
            won[w] > most || (won[w] == most && w < c)
        })
        .then_some(w)
}

/// A pair's side in [`Model`]'s screened votes before it is decided (1, −1 or 0 after).
const UNDECIDED: i8 = i8::MIN;

/// The index among the decision values of class pair (i, j), i < j, of `k` classes (the
/// order of [`for_each_pair`]).
fn pair_index(k: usize, i: usize, j: usize) -> usize {
    debug_assert!(i < j && j < k);
    i * (2 * k - i - 1) / 2 + (j - i - 1)
}

/// The position of the largest value (the first of equal ones; 0 when empty or all NaN, or
/// when the first value is NaN), as a scan that moves to each value above the best so far
/// finds it. One pass the compiler vectorises — each lane keeps its largest value and the
/// first chunk that held it — instead of that scan's chain of dependent loads and compares: a
/// multi-class prediction takes it once per row over every support vector's kernel value
/// (pendigits: 1,456 a row, a fifth of `fwsvm predict`'s time as a scan).
fn nearest(kv: &[f32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { nearest_avx512(kv) };
    }
    nearest_lanes(kv)
}

/// [`nearest`] compiled for AVX-512 (one vector a chunk).
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn nearest_avx512(kv: &[f32]) -> usize {
    nearest_lanes(kv)
}

/// [`nearest`] by lanes, inlined into each compiled copy.
#[inline(always)]
fn nearest_lanes(kv: &[f32]) -> usize {
    const L: usize = 16;
    const NONE: u32 = u32::MAX;
    let Some(&first) = kv.first() else {
        return 0;
    };
    if first.is_nan() {
        return 0;
    }
    // Lane l's largest value and the first chunk that held it (NONE while nothing was above
    // −∞; a NaN is never above anything, as in the scan).
    let mut top = [f32::NEG_INFINITY; L];
    let mut at = [NONE; L];
    let mut chunks = kv.chunks_exact(L);
    for (k, c) in (&mut chunks).enumerate() {
        for l in 0..L {
            let above = c[l] > top[l];
            top[l] = if above { c[l] } else { top[l] };
            at[l] = if above { k as u32 } else { at[l] };
        }
    }
    // The first value, then each lane's (ties to the earlier position), then the remainder,
    // whose positions come after every lane's.
    let (mut best, mut pos) = (first, 0);
    for l in 0..L {
        if at[l] == NONE {
            continue;
        }
        let p = at[l] as usize * L + l;
        if top[l] > best || (top[l] == best && p < pos) {
            (best, pos) = (top[l], p);
        }
    }
    let tail = kv.len() - chunks.remainder().len();
    for (j, &v) in chunks.remainder().iter().enumerate() {
        if v > best {
            (best, pos) = (v, tail + j);
        }
    }
    pos
}

/// The class whose support vectors (from `starts[c]` on, grouped by class) hold position `j`.
fn class_of(starts: &[usize], j: usize) -> usize {
    starts.partition_point(|&s| s <= j).saturating_sub(1)
}

/// Calls `f(p, i, j)` for every class pair (i, j), i < j, p its index among the decision
/// values (LIBSVM's order: (0, 1), (0, 2), …).
fn for_each_pair(k: usize, mut f: impl FnMut(usize, usize, usize)) {
    let mut p = 0;
    for i in 0..k {
        for j in i + 1..k {
            f(p, i, j);
            p += 1;
        }
    }
}

/// The class with the most votes, the first listed on ties (LIBSVM's vote).
fn most_voted(votes: &[u32]) -> usize {
    let mut best = 0;
    for c in 1..votes.len() {
        if votes[c] > votes[best] {
            best = c;
        }
    }
    best
}

/// (Σ c_j v_j, Σ |c_j| v_j) in f64, in partial sums (vectorised where the CPU has AVX-512 or
/// AVX2: the sums' order does not enter the bounds that use them).
fn signed_and_absolute_sums(coef: &[f64], vals: &[f32]) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { sums_avx512(coef, vals) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { sums_avx2(coef, vals) };
    }
    sums(coef, vals)
}

/// [`sums`] in AVX-512 (eight f64 lanes, two vectors of partial sums each).
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sums_avx512(coef: &[f64], vals: &[f32]) -> (f64, f64) {
    use std::arch::x86_64::*;
    let n = coef.len().min(vals.len());
    let (c, v) = (coef.as_ptr(), vals.as_ptr());
    let zero = _mm512_setzero_pd();
    let (mut s, mut w) = ([zero; 2], [zero; 2]);
    let mut j = 0;
    // SAFETY: every load reads entries j .. j + 16 ≤ n of both slices.
    unsafe {
        while j + 16 <= n {
            for h in 0..2 {
                let x = _mm512_cvtps_pd(_mm256_loadu_ps(v.add(j + 8 * h)));
                let cj = _mm512_loadu_pd(c.add(j + 8 * h));
                s[h] = _mm512_fmadd_pd(cj, x, s[h]);
                w[h] = _mm512_fmadd_pd(_mm512_abs_pd(cj), x, w[h]);
            }
            j += 16;
        }
    }
    let mut st = _mm512_reduce_add_pd(_mm512_add_pd(s[0], s[1]));
    let mut wt = _mm512_reduce_add_pd(_mm512_add_pd(w[0], w[1]));
    for (cj, &x) in coef[j..n].iter().zip(&vals[j..n]) {
        st += cj * f64::from(x);
        wt += cj.abs() * f64::from(x);
    }
    (st, wt)
}

/// [`sums`] in AVX2 (four f64 lanes, two vectors of partial sums each).
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sums_avx2(coef: &[f64], vals: &[f32]) -> (f64, f64) {
    use std::arch::x86_64::*;
    let n = coef.len().min(vals.len());
    let (c, v) = (coef.as_ptr(), vals.as_ptr());
    let sign = _mm256_set1_pd(-0.0);
    let zero = _mm256_setzero_pd();
    let (mut s, mut w) = ([zero; 2], [zero; 2]);
    let mut j = 0;
    // SAFETY: every load reads entries j .. j + 8 ≤ n of both slices.
    unsafe {
        while j + 8 <= n {
            for h in 0..2 {
                let x = _mm256_cvtps_pd(_mm_loadu_ps(v.add(j + 4 * h)));
                let cj = _mm256_loadu_pd(c.add(j + 4 * h));
                s[h] = _mm256_fmadd_pd(cj, x, s[h]);
                w[h] = _mm256_fmadd_pd(_mm256_andnot_pd(sign, cj), x, w[h]);
            }
            j += 8;
        }
    }
    let lanes = |a: __m256d, b: __m256d| {
        let mut out = [0.0; 4];
        // SAFETY: `out` holds four f64.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), _mm256_add_pd(a, b)) };
        (out[0] + out[1]) + (out[2] + out[3])
    };
    let (mut st, mut wt) = (lanes(s[0], s[1]), lanes(w[0], w[1]));
    for (cj, &x) in coef[j..n].iter().zip(&vals[j..n]) {
        st += cj * f64::from(x);
        wt += cj.abs() * f64::from(x);
    }
    (st, wt)
}

/// The portable copy of [`signed_and_absolute_sums`].
fn sums(coef: &[f64], vals: &[f32]) -> (f64, f64) {
    const L: usize = 8;
    let (mut s, mut w) = ([0.0f64; L], [0.0f64; L]);
    let (cl, vl) = (coef.chunks_exact(L), vals.chunks_exact(L));
    let (ct, vt) = (cl.remainder(), vl.remainder());
    for (c, v) in cl.zip(vl) {
        for l in 0..L {
            let x = f64::from(v[l]);
            s[l] += c[l] * x;
            w[l] += c[l].abs() * x;
        }
    }
    for (c, &v) in ct.iter().zip(vt) {
        s[0] += c * f64::from(v);
        w[0] += c.abs() * f64::from(v);
    }
    (s.iter().sum(), w.iter().sum())
}

impl Model {
    /// The one-class model of the support `support` (points ascending, with their α), whose
    /// rows are `sv` in that order, from the solve's objective f: every SV counts as +1 and
    /// ρ = 2f − 1 (docs/METHODS.md, one-class).
    pub fn one_class(kernel: Kernel, support: &[(usize, f64)], sv: Dataset, f: f64) -> Model {
        Model {
            kernel,
            labels: vec![1.0, -1.0],
            nr_sv: vec![support.len(), 0],
            sv,
            sv_coef: vec![support.iter().map(|&(_, a)| a).collect()],
            rho: vec![2.0 * f - 1.0],
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            one_class: true,
            sv_rows: support.iter().map(|&(i, _)| i).collect(),
        }
    }

    /// Number of classes.
    pub fn n_classes(&self) -> usize {
        self.labels.len()
    }

    /// Whether the model carries Platt sigmoids (one per class pair) for probabilities.
    pub fn has_probabilities(&self) -> bool {
        let pairs = self.n_classes() * (self.n_classes().saturating_sub(1)) / 2;
        pairs > 0 && self.prob_a.len() == pairs && self.prob_b.len() == pairs
    }

    /// Predicted labels and, per row, one probability per class (in label order), as LIBSVM's
    /// `svm_predict_probability`: each pair's decision value through its sigmoid (clipped to
    /// [10⁻⁷, 1 − 10⁻⁷]), coupled by Wu, Lin and Weng's method for more than two classes; the
    /// label is the most probable class (the first on ties). None without sigmoids.
    pub fn predict_probabilities(&self, ds: &Dataset) -> Option<(Vec<f64>, Vec<Vec<f64>>)> {
        if !self.has_probabilities() {
            return None;
        }
        let (_, dec) = self.predict_with_decisions(ds);
        Some(self.probabilities_from_decisions(&dec))
    }

    /// [`predict_probabilities`](Self::predict_probabilities) from decision values already
    /// computed (one row of k(k−1)/2 values per point).
    pub fn probabilities_from_decisions(&self, dec: &[Vec<f64>]) -> (Vec<f64>, Vec<Vec<f64>>) {
        let k = self.n_classes();
        let probs: Vec<Vec<f64>> = dec
            .iter()
            .map(|d| crate::probability::class_probabilities(k, d, &self.prob_a, &self.prob_b))
            .collect();
        let labels = probs
            .iter()
            .map(|p| {
                let mut best = 0;
                for c in 1..k {
                    if p[c] > p[best] {
                        best = c;
                    }
                }
                self.labels[best]
            })
            .collect();
        (labels, probs)
    }

    /// Total number of support vectors.
    pub fn total_sv(&self) -> usize {
        self.sv.len()
    }

    /// Highest feature index (1-based) used by any SV.
    pub fn n_features(&self) -> usize {
        self.sv.n_features()
    }

    /// Index of each class's first SV.
    pub fn starts(&self) -> Vec<usize> {
        let mut s = vec![0; self.nr_sv.len()];
        for c in 1..s.len() {
            s[c] = s[c - 1] + self.nr_sv[c - 1];
        }
        s
    }

    /// Decision values (one per pair) and predicted label from the kernel values of x
    /// against every SV.
    fn decide(&self, kvalue: &[f64], starts: &[usize], dec: &mut [f64], vote: &mut [u32]) -> f64 {
        let k = self.n_classes();
        let mut p = 0;
        for i in 0..k {
            for j in i + 1..k {
                let (si, sj) = (starts[i], starts[j]);
                let coef1 = &self.sv_coef[j - 1];
                let coef2 = &self.sv_coef[i];
                let (ni, nj) = (self.nr_sv[i], self.nr_sv[j]);
                let sum = dot(&coef1[si..si + ni], &kvalue[si..si + ni])
                    + dot(&coef2[sj..sj + nj], &kvalue[sj..sj + nj])
                    - self.rho[p];
                dec[p] = sum;
                p += 1;
            }
        }
        self.vote(dec, vote)
    }

    /// LIBSVM's one-versus-one vote from the k(k−1)/2 decision values of one row (pair
    /// (i, j) votes for i when its value is positive); ties go to the class listed first.
    pub fn vote(&self, dec: &[f64], vote: &mut [u32]) -> f64 {
        let k = self.n_classes();
        vote.iter_mut().for_each(|v| *v = 0);
        for_each_pair(k, |p, i, j| vote[if dec[p] > 0.0 { i } else { j }] += 1);
        self.labels[most_voted(&vote[..k])]
    }

    /// Predicted labels and, per row, the k(k−1)/2 decision values.
    pub fn predict_with_decisions(&self, ds: &Dataset) -> (Vec<f64>, Vec<Vec<f64>>) {
        let n = ds.len();
        let nsv = self.total_sv();
        let k = self.n_classes();
        let npairs = k * (k - 1) / 2;
        let d = self.n_features();
        let starts = self.starts();
        let sv_norms: Vec<f64> = (0..nsv).map(|j| self.sv.row(j).sq_norm()).collect();
        if k == 2
            && let Some(p) = self.binary_panel(&sv_norms)
        {
            let norms: Vec<f64> = (0..n).map(|i| ds.row(i).sq_norm()).collect();
            let mut dec = vec![0.0; n];
            p.row_sums(ds, &norms, None, &mut dec);
            let mut vote = [0u32; 2];
            return dec
                .into_iter()
                .map(|s| {
                    let v = [s - self.rho[0]];
                    (self.vote(&v, &mut vote), v.to_vec())
                })
                .unzip();
        }
        const BLOCK: usize = 256;
        // Wide sparse support vectors (text-like data): dots through the SVs' postings by
        // feature rather than a dense nsv × d copy of them.
        // (Dense support vectors hold nsv × d values already: their copy is the GEMM's.)
        let sparse_sv = matches!(self.sv.features, crate::data::Features::Sparse { .. });
        if sparse_sv && nsv.saturating_mul(d) > DENSE_SV_MAX {
            // (No postings, for more non-zeros than u32 counts: the pairwise dots.)
            let post = crate::backend::gram::Postings::new(&self.sv, &(0..nsv).collect::<Vec<_>>());
            return (0..n)
                .into_par_iter()
                .map_init(
                    || (vec![0.0; nsv], vec![0.0; nsv], vec![0u32; k]),
                    |(dots, kv, vote), r| {
                        let x = ds.row(r);
                        match (&post, x) {
                            (Some(p), crate::data::Row::Sparse(ix, v)) => p.dots(ix, v, dots),
                            _ => {
                                for (j, dj) in dots.iter_mut().enumerate() {
                                    *dj = x.dot(&self.sv.row(j));
                                }
                            }
                        }
                        crate::backend::kernel_values(
                            self.kernel,
                            dots,
                            &sv_norms,
                            x.sq_norm(),
                            kv,
                        );
                        let mut dec = vec![0.0; npairs];
                        let label = self.decide(kv, &starts, &mut dec, vote);
                        (label, dec)
                    },
                )
                .collect::<Vec<_>>()
                .into_iter()
                .unzip();
        }
        let mut svd = Array2::<f64>::zeros((nsv, d));
        for j in 0..nsv {
            self.sv
                .row(j)
                .scatter_f64(svd.row_mut(j).as_slice_mut().unwrap_or(&mut []));
        }
        let svt = svd.t();
        let results: Vec<(f64, Vec<f64>)> = (0..n.div_ceil(BLOCK))
            .into_par_iter()
            .flat_map_iter(|b| {
                let r0 = b * BLOCK;
                let r1 = (r0 + BLOCK).min(n);
                let mut xb = Array2::<f64>::zeros((r1 - r0, d));
                for r in r0..r1 {
                    ds.row(r)
                        .scatter_f64(xb.row_mut(r - r0).as_slice_mut().unwrap_or(&mut []));
                }
                let dots = xb.dot(&svt);
                let (mut kv, mut buf) = (vec![0.0; nsv], Vec::new());
                let mut vote = vec![0u32; k];
                let mut out = Vec::with_capacity(r1 - r0);
                for r in r0..r1 {
                    let row = dots.row(r - r0);
                    let dr = match row.as_slice() {
                        Some(s) => s,
                        None => {
                            buf.clear();
                            buf.extend(row.iter());
                            &buf[..]
                        }
                    };
                    let nx = ds.row(r).sq_norm();
                    crate::backend::kernel_values(self.kernel, dr, &sv_norms, nx, &mut kv);
                    let mut dec = vec![0.0; npairs];
                    let label = self.decide(&kv, &starts, &mut dec, &mut vote);
                    out.push((label, dec));
                }
                out
            })
            .collect();
        results.into_iter().unzip()
    }

    /// A two-class model's support vectors as one exact product panel (decision value =
    /// Σ_j sv_coef_j k(x, sv_j) − rho); None when too wide for a panel.
    fn binary_panel(&self, sv_norms: &[f64]) -> Option<crate::backend::gram::Panel> {
        let cols: Vec<usize> = (0..self.total_sv()).collect();
        crate::backend::gram::Panel::new(self.kernel, &self.sv, &cols, &self.sv_coef[0], sv_norms)
            .map(|p| p.without_offset())
    }

    /// Predicted labels: those of [`predict_with_decisions`](Self::predict_with_decisions),
    /// for RBF models through the screens below where they apply (two classes:
    /// `screened_labels`; more: `screened_votes`).
    pub fn predict(&self, ds: &Dataset) -> Vec<f64> {
        match self.screened_labels(ds) {
            Some(labels) => labels,
            None => self.predict_with_decisions(ds).0,
        }
    }

    /// An RBF model's labels by a screen in f32, the same labels as the f64 path's; more than
    /// two classes go to [`screened_votes`](Self::screened_votes). Two classes: the labels
    /// from the decision values in f32 with a rigorous bound
    /// on their error ([`crate::backend::screen`]: sixteen lanes and a shorter exponential,
    /// about twice the f64 panel's rate): a row whose interval lies on one side of zero, with
    /// room for the f64 panel's own rounding, takes that side — the sign the exact panel
    /// gives it —, and the rows near the boundary (or without a bound) are computed by the
    /// exact panel. None where the screen does not apply (other models, small products, a
    /// CPU without AVX2 and FMA, a panel over [`SCREEN_MAX_BYTES`]).
    fn screened_labels(&self, ds: &Dataset) -> Option<Vec<f64>> {
        let Kernel::Rbf { gamma } = self.kernel else {
            return None;
        };
        let (n, nsv) = (ds.len(), self.total_sv());
        if n.saturating_mul(nsv) < SCREEN_MIN_WORK || nsv > 10_000_000 {
            return None;
        }
        if self.n_classes() > 2 {
            return self.screened_votes(ds, gamma);
        }
        if self.n_classes() != 2 {
            return None;
        }
        let sv_norms: Vec<f64> = (0..nsv).map(|j| self.sv.row(j).sq_norm()).collect();
        let cols: Vec<usize> = (0..nsv).collect();
        let coef = &self.sv_coef[0];
        let screen = crate::backend::screen::Screen::new(
            gamma,
            &self.sv,
            &cols,
            coef,
            &sv_norms,
            SCREEN_MAX_BYTES,
        )?;
        let norms: Vec<f64> = (0..n).map(|i| ds.row(i).sq_norm()).collect();
        let (mut dec, mut bound) = (vec![0.0; n], vec![0.0; n]);
        let rows: Vec<usize> = (0..n).collect();
        screen.row_sums(ds, &norms, &rows, &mut dec, &mut bound);
        let rho = self.rho[0];
        let mut near = Vec::new();
        for (i, (v, &b)) in dec.iter_mut().zip(&bound).enumerate() {
            // The f64 panel's value is within about nsv/8 · 2⁻⁵³ of Σ|c_j| k_j of the exact
            // sum, and B ≥ 10⁻⁶ times that sum (the f32 exponential's error and the f32 sums'
            // roundings alone): a thousandth of B covers it below 10⁷ support vectors; the
            // subtraction's rounding is the last term.
            let margin = b * (1.0 + 1e-3) + 4.0 * f64::EPSILON * (v.abs() + rho.abs());
            *v -= rho;
            if !(v.abs() > margin) {
                near.push(i);
            }
        }
        if !near.is_empty() {
            let panel = self.binary_panel(&sv_norms)?;
            let mut exact = vec![0.0; near.len()];
            panel.row_sums(ds, &norms, Some(&near), &mut exact);
            for (&i, e) in near.iter().zip(exact) {
                dec[i] = e - rho;
            }
        }
        let mut vote = [0u32; 2];
        Some(dec.iter().map(|&v| self.vote(&[v], &mut vote)).collect())
    }

    /// A multi-class RBF model's labels by its one-versus-one vote, every pair's decision value
    /// summed in f64 from the f32 kernel values of [`Screen::kernel_values`] (each computed
    /// once for all the pairs of its class) with a rigorous bound on its error. A pair whose
    /// interval lies on one side of zero, with room for the f64 path's own rounding, casts the
    /// exact decision value's vote; the others are open, and a row takes the label its settled
    /// votes elect whatever the open pairs give ([`settled_vote`]) — the exact path's label.
    /// The rows whose open pairs could change it (or without a bound) take the exact path of
    /// [`predict_with_decisions`](Self::predict_with_decisions). None where the screen does
    /// not apply (as for the two-class screen, or more than 64 classes).
    ///
    /// [`Screen::kernel_values`]: crate::backend::screen::Screen::kernel_values
    fn screened_votes(&self, ds: &Dataset, gamma: f64) -> Option<Vec<f64>> {
        use crate::backend::screen::{ROWS, RowScratch, Screen, VALUE_FLOOR};
        let (n, nsv, k) = (ds.len(), self.total_sv(), self.n_classes());
        if k > MAX_SETTLED_CLASSES {
            return None;
        }
        let sv_norms: Vec<f64> = (0..nsv).map(|j| self.sv.row(j).sq_norm()).collect();
        let cols: Vec<usize> = (0..nsv).collect();
        let screen = Screen::values(gamma, &self.sv, &cols, &sv_norms, SCREEN_MAX_BYTES)?;
        let norms: Vec<f64> = (0..n).map(|i| ds.row(i).sq_norm()).collect();
        let starts = self.starts();
        // Each pair (i, j)'s two runs of support vectors (start, count, coefficients) and Σ|c|.
        let mut pairs = Vec::with_capacity(k * (k - 1) / 2);
        for i in 0..k {
            for j in i + 1..k {
                let (si, sj) = (starts[i], starts[j]);
                let (ni, nj) = (self.nr_sv[i], self.nr_sv[j]);
                let runs = [
                    (si, &self.sv_coef[j - 1][si..si + ni]),
                    (sj, &self.sv_coef[i][sj..sj + nj]),
                ];
                let abs: f64 = runs.iter().flat_map(|r| r.1.iter()).map(|c| c.abs()).sum();
                pairs.push((runs, abs));
            }
        }
        let stride = screen.stride();
        // Rows a task: its values in about 4 MB.
        let per_task = ((4 << 20) / (4 * stride)).clamp(1, ROWS);
        let rows: Vec<usize> = (0..n).collect();
        let labels: Vec<Option<f64>> = rows
            .par_chunks(per_task)
            .map_init(
                || {
                    let buf = (vec![0.0f32; per_task * stride], vec![0.0; per_task]);
                    (RowScratch::default(), buf, vec![0i8; pairs.len()])
                },
                |(scratch, (vals, rel), sides), rs| {
                    let (vals, rel) = (&mut vals[..rs.len() * stride], &mut rel[..rs.len()]);
                    screen.kernel_values(ds, &norms, rs, scratch, vals, rel);
                    let mut out = Vec::with_capacity(rs.len());
                    for (r, &eps) in rel.iter().enumerate() {
                        if !eps.is_finite() {
                            out.push(None);
                            continue;
                        }
                        let kv = &vals[r * stride..(r + 1) * stride];
                        let decide = |p: usize| -> i8 {
                            let ((runs, abs), rho) = (&pairs[p], self.rho[p]);
                            let (mut sum, mut w, mut terms) = (0.0, 0.0, 0);
                            for &(start, coef) in runs {
                                let (s1, w1) =
                                    signed_and_absolute_sums(coef, &kv[start..start + coef.len()]);
                                sum += s1;
                                w += w1;
                                terms += coef.len();
                            }
                            // |sum − exact| ≤ ε·W + floor·Σ|c| from the values, and
                            // (terms + 1)·2⁻⁵³·W from the f64 sums; a thousandth more covers
                            // the exact path's own rounding, as in the two-class screen.
                            let bound = (w * (eps + 1.01 * (terms + 1) as f64 * U64)
                                + VALUE_FLOOR * abs)
                                * (1.0 + 1e-3);
                            let v = sum - rho;
                            let margin =
                                bound * (1.0 + 1e-3) + 4.0 * f64::EPSILON * (sum.abs() + rho.abs());
                            if v > margin {
                                1
                            } else if v < -margin {
                                -1
                            } else {
                                0
                            }
                        };
                        // The class of the nearest support vector first: when it wins each of
                        // its k − 1 pairs it has k − 1 votes and every other class at most
                        // k − 2, so it is elected whatever the other pairs give (the vote
                        // `settled_vote` would cast from all of them) — most rows end here.
                        let w = class_of(&starts, nearest(&kv[..nsv]));
                        sides.fill(UNDECIDED);
                        let mut won = true;
                        for c in (0..k).filter(|&c| c != w) {
                            let (i, j) = (w.min(c), w.max(c));
                            let p = pair_index(k, i, j);
                            sides[p] = decide(p);
                            won &= sides[p] == if w == i { 1 } else { -1 };
                            if !won {
                                break;
                            }
                        }
                        if won {
                            out.push(Some(self.labels[w]));
                            continue;
                        }
                        // The pairs not decided above.
                        for (p, side) in sides.iter_mut().enumerate() {
                            if *side == UNDECIDED {
                                *side = decide(p);
                            }
                        }
                        out.push(settled_vote(k, sides).map(|c| self.labels[c]));
                    }
                    out
                },
            )
            .flatten_iter()
            .collect();
        let near: Vec<usize> = (0..n).filter(|&i| labels[i].is_none()).collect();
        let exact = if near.is_empty() {
            Vec::new()
        } else {
            self.predict_with_decisions(&ds.subset(&near)).0
        };
        let mut exact = exact.into_iter();
        Some(
            labels
                .into_iter()
                .map(|l| l.unwrap_or_else(|| exact.next().unwrap_or(f64::NAN)))
                .collect(),
        )
    }

    /// Writes the model in LIBSVM's text format.
    pub fn write<W: Write>(&self, w: &mut W) -> std::io::Result<()> {
        writeln!(
            w,
            "svm_type {}",
            if self.one_class { "one_class" } else { "c_svc" }
        )?;
        writeln!(w, "kernel_type {}", self.kernel.libsvm_name())?;
        match self.kernel {
            Kernel::Linear => {}
            Kernel::Rbf { gamma } => writeln!(w, "gamma {}", fmt_f64(gamma))?,
            Kernel::Poly {
                gamma,
                coef0,
                degree,
            } => {
                writeln!(w, "degree {degree}")?;
                writeln!(w, "gamma {}", fmt_f64(gamma))?;
                writeln!(w, "coef0 {}", fmt_f64(coef0))?;
            }
            Kernel::Sigmoid { gamma, coef0 } => {
                writeln!(w, "gamma {}", fmt_f64(gamma))?;
                writeln!(w, "coef0 {}", fmt_f64(coef0))?;
            }
        }
        writeln!(w, "nr_class {}", self.n_classes())?;
        writeln!(w, "total_sv {}", self.total_sv())?;
        let join = |v: &[f64]| v.iter().map(|x| fmt_f64(*x)).collect::<Vec<_>>().join(" ");
        writeln!(w, "rho {}", join(&self.rho))?;
        // LIBSVM's one-class layout has neither labels nor per-class counts.
        if !self.one_class {
            writeln!(w, "label {}", join(&self.labels))?;
            if self.has_probabilities() {
                writeln!(w, "probA {}", join(&self.prob_a))?;
                writeln!(w, "probB {}", join(&self.prob_b))?;
            }
            writeln!(
                w,
                "nr_sv {}",
                self.nr_sv
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            )?;
        }
        writeln!(w, "SV")?;
        // The lines formatted in parallel and written in order.
        crate::output::write_lines_in_order(w, self.total_sv(), 256, |j, text| {
            self.write_sv_line(j, text)
        })?;
        Ok(())
    }

    /// Appends support vector j's line (its coefficients, then its non-zero features) to
    /// `line`.
    fn write_sv_line(&self, j: usize, line: &mut Vec<u8>) {
        use crate::decimal::{push_f32, push_f64, push_usize};
        for c in &self.sv_coef {
            push_f64(line, c[j]);
            line.push(b' ');
        }
        let mut feature = |f: usize, x: f32| {
            push_usize(line, f + 1);
            line.push(b':');
            push_f32(line, x);
            line.push(b' ');
        };
        match self.sv.row(j) {
            Row::Dense(v) => {
                for (f, &x) in v.iter().enumerate() {
                    if x != 0.0 {
                        feature(f, x);
                    }
                }
            }
            Row::Sparse(ix, v) => {
                for (&f, &x) in ix.iter().zip(v) {
                    feature(f as usize, x);
                }
            }
        }
        line.push(b'\n');
    }

    /// Writes the model to `path` atomically (temporary file in the same directory, then
    /// rename): an existing file is replaced only by a complete model.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::output::write_output(path, |w| self.write(w))
    }

    /// Reads a LIBSVM model file (c_svc, nu_svc or one_class; linear, polynomial, rbf or
    /// sigmoid kernel).
    pub fn load(path: &Path) -> Result<Model> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Self::read(std::io::BufReader::new(file), path)
    }

    /// [`load`](Self::load) from any reader; `path` names the source in error messages.
    pub fn read<R: BufRead>(mut reader: R, path: &Path) -> Result<Model> {
        let src = Source(path);
        let mut text = Vec::new();
        reader
            .read_to_end(&mut text)
            .map_err(|e| Error::io(path, e))?;
        if text.last().is_some_and(|&c| c != b'\n') {
            text.push(b'\n');
        }
        let (mut h, body, first) = Header::parse(&text, src)?;
        let kernel = h.kernel(src)?;
        let (k, total) = h.counts(src)?;
        let (sv, sv_coef) = read_support_vectors(&text[body..], first, src, &h, k, total)?;
        h.check_probabilities(src, k * (k - 1) / 2)?;
        Ok(Model {
            kernel,
            labels: h.labels,
            nr_sv: h.nr_sv,
            sv,
            sv_coef,
            rho: h.rho,
            prob_a: h.prob_a,
            prob_b: h.prob_b,
            one_class: h.one_class,
            sv_rows: Vec::new(),
        })
    }
}

/// A model file's name, for its errors.
#[derive(Clone, Copy)]
struct Source<'a>(&'a Path);

impl Source<'_> {
    /// The error at `line` (0: the file as a whole).
    fn bad(self, line: usize, msg: String) -> Error {
        Error::Model {
            path: self.0.to_path_buf(),
            line,
            msg,
        }
    }

    /// A finite number, or the error naming `key`.
    fn num(self, line: usize, key: &str, tok: &str) -> Result<f64> {
        tok.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.bad(line, format!("`{key}` expects numbers, found `{tok}`")))
    }

    /// An integer, or the error naming `key`.
    fn int<T: std::str::FromStr>(self, line: usize, key: &str, tok: &str) -> Result<T> {
        tok.parse()
            .map_err(|_| self.bad(line, format!("`{key}` expects an integer, found `{tok}`")))
    }
}

/// The lines of a model file, numbered from 0.
/// A model file's header, as written (checked by the methods that read it).
#[derive(Default)]
struct Header {
    svm_type: Option<String>,
    kernel_type: Option<String>,
    gamma: Option<f64>,
    coef0: f64,
    degree: Option<u32>,
    /// Lines of `gamma` and `degree`, for the kernel's checks once its type is known.
    gamma_line: usize,
    degree_line: usize,
    nr_class: Option<usize>,
    total_sv: Option<usize>,
    rho: Vec<f64>,
    labels: Vec<f64>,
    nr_sv: Vec<usize>,
    prob_a: Vec<f64>,
    prob_b: Vec<f64>,
    one_class: bool,
}

impl Header {
    /// The `key value…` lines of `text` (which ends with `\n`) up to and including `SV`;
    /// with the header, where the lines after `SV` start and the (1-based) number of the
    /// first of them.
    fn parse(text: &[u8], src: Source<'_>) -> Result<(Header, usize, usize)> {
        let mut h = Header::default();
        let (mut at, mut ln) = (0, 0);
        while at < text.len() {
            let end = at + text[at..].iter().position(|&c| c == b'\n').unwrap_or(0);
            ln += 1;
            let line = String::from_utf8_lossy(&text[at..end]);
            at = end + 1;
            let mut toks = line.split_whitespace();
            let Some(key) = toks.next() else { continue };
            let rest: Vec<&str> = toks.collect();
            if key == "SV" {
                h.svm_type(src)?;
                return Ok((h, at, ln + 1));
            }
            h.set(src, ln, key, &rest)?;
        }
        Err(src.bad(0, "no `SV` section (is this a LIBSVM model file?)".into()))
    }

    /// One header line: `key` and its values.
    fn set(&mut self, src: Source<'_>, ln: usize, key: &str, rest: &[&str]) -> Result<()> {
        let one = || {
            rest.first()
                .copied()
                .ok_or_else(|| src.bad(ln, format!("`{key}` needs a value")))
        };
        let nums = || {
            rest.iter()
                .map(|t| src.num(ln, key, t))
                .collect::<Result<Vec<f64>>>()
        };
        match key {
            "svm_type" => self.svm_type = Some(one()?.to_string()),
            "kernel_type" => self.kernel_type = Some(one()?.to_string()),
            "gamma" => {
                self.gamma = Some(src.num(ln, key, one()?)?);
                self.gamma_line = ln;
            }
            "coef0" => self.coef0 = src.num(ln, key, one()?)?,
            "degree" => {
                self.degree = Some(src.int(ln, key, one()?)?);
                self.degree_line = ln;
            }
            "nr_class" => self.nr_class = Some(src.int(ln, key, one()?)?),
            "total_sv" => self.total_sv = Some(src.int(ln, key, one()?)?),
            "rho" => self.rho = nums()?,
            "label" => self.labels = nums()?,
            "nr_sv" => {
                self.nr_sv = rest
                    .iter()
                    .map(|t| {
                        t.parse().map_err(|_| {
                            src.bad(ln, format!("`nr_sv` expects integers, found `{t}`"))
                        })
                    })
                    .collect::<Result<_>>()?
            }
            "probA" => self.prob_a = nums()?,
            "probB" => self.prob_b = nums()?,
            "prob_density_marks" => {}
            other => {
                return Err(src.bad(
                    ln,
                    format!("unknown header key `{other}` (is this a LIBSVM model file?)"),
                ));
            }
        }
        Ok(())
    }

    /// Checks `svm_type` (c_svc, nu_svc, one_class).
    fn svm_type(&mut self, src: Source<'_>) -> Result<()> {
        match self.svm_type.as_deref() {
            Some("c_svc") | Some("nu_svc") => Ok(()),
            Some("one_class") => {
                self.one_class = true;
                Ok(())
            }
            Some(t) => Err(src.bad(
                0,
                format!(
                    "svm_type `{t}` is not supported (c_svc and nu_svc classifiers, one_class)"
                ),
            )),
            None => Err(src.bad(0, "missing `svm_type`".into())),
        }
    }

    /// The kernel. What training refuses, a model may not hold: γ ≤ 0 makes every RBF entry
    /// 1 (one class everywhere), a polynomial of degree 0 is a constant.
    fn kernel(&self, src: Source<'_>) -> Result<Kernel> {
        let name = self.kernel_type.as_deref();
        let gamma = || {
            let g = self.gamma.ok_or_else(|| {
                src.bad(
                    0,
                    format!("{} kernel without `gamma`", name.unwrap_or_default()),
                )
            })?;
            if g <= 0.0 {
                return Err(src.bad(
                    self.gamma_line,
                    format!(
                        "`gamma {g}` for the {} kernel: it must be positive",
                        name.unwrap_or_default()
                    ),
                ));
            }
            Ok(g)
        };
        let kernel = match name {
            Some("linear") => Kernel::Linear,
            Some("rbf") => Kernel::Rbf { gamma: gamma()? },
            Some("polynomial") => Kernel::Poly {
                gamma: gamma()?,
                coef0: self.coef0,
                degree: self.degree.unwrap_or(3),
            },
            Some("sigmoid") => Kernel::Sigmoid {
                gamma: gamma()?,
                coef0: self.coef0,
            },
            Some(t) => return Err(src.bad(0, format!("kernel_type `{t}` is not supported"))),
            None => return Err(src.bad(0, "missing `kernel_type`".into())),
        };
        if matches!(kernel, Kernel::Poly { degree: 0, .. }) {
            return Err(src.bad(
                self.degree_line,
                "`degree 0` for the polynomial kernel: it must be at least 1".into(),
            ));
        }
        Ok(kernel)
    }

    /// (nr_class, total_sv), checked against the labels, nr_sv and rho (a one-class model's
    /// labels and nr_sv are set here: inside (+1) and outside (−1), every SV inside).
    fn counts(&mut self, src: Source<'_>) -> Result<(usize, usize)> {
        let k = self
            .nr_class
            .ok_or_else(|| src.bad(0, "missing `nr_class`".into()))?;
        let total = self
            .total_sv
            .ok_or_else(|| src.bad(0, "missing `total_sv`".into()))?;
        if k < 2 {
            return Err(src.bad(0, format!("nr_class must be at least 2, found {k}")));
        }
        if self.one_class {
            if k != 2 || self.rho.len() != 1 {
                return Err(src.bad(
                    0,
                    format!(
                        "one_class model with nr_class {k} and {} rho (expected 2 and 1)",
                        self.rho.len()
                    ),
                ));
            }
            self.labels = vec![1.0, -1.0];
            self.nr_sv = vec![total, 0];
        }
        let pairs = k * (k - 1) / 2;
        if self.labels.len() != k || self.nr_sv.len() != k || self.rho.len() != pairs {
            return Err(src.bad(
                0,
                format!(
                    "inconsistent header: nr_class {k} but {} labels, {} nr_sv, {} rho (expected {pairs})",
                    self.labels.len(),
                    self.nr_sv.len(),
                    self.rho.len(),
                ),
            ));
        }
        let sum: usize = self.nr_sv.iter().sum();
        if sum != total {
            return Err(src.bad(0, format!("nr_sv sums to {sum} but total_sv is {total}")));
        }
        Ok((k, total))
    }

    /// `probA` and `probB`: both absent, or one value per class pair each.
    fn check_probabilities(&self, src: Source<'_>, pairs: usize) -> Result<()> {
        for (key, v) in [("probA", &self.prob_a), ("probB", &self.prob_b)] {
            if !(v.is_empty() || v.len() == pairs) {
                return Err(src.bad(
                    0,
                    format!(
                        "`{key}` has {} values, expected {pairs} (one per class pair)",
                        v.len()
                    ),
                ));
            }
        }
        if self.prob_a.len() != self.prob_b.len() {
            return Err(src.bad(0, "`probA` and `probB` must come together".into()));
        }
        Ok(())
    }
}

/// The support vectors of the lines `body` (the file's after `SV`, ending with `\n`; the
/// first is line `first`): each line's k − 1 coefficients, then its features. The lines are
/// cut into pieces parsed side by side; errors are the line-by-line reading's (the first line
/// in the file that breaks a rule, with its rule's message).
fn read_support_vectors(
    body: &[u8],
    first: usize,
    src: Source<'_>,
    h: &Header,
    k: usize,
    total: usize,
) -> Result<(Dataset, Vec<Vec<f64>>)> {
    use crate::data::libsvm::{Builder, cut_at_lines, join};
    /// A piece's support vectors, their coefficients (k − 1 per row), each row's line within
    /// the piece (1-based), its lines, and its first malformed line with the message.
    type Piece = (
        Builder,
        Vec<f64>,
        Vec<usize>,
        usize,
        Option<(usize, String)>,
    );
    let cuts = cut_at_lines(body, 4 * rayon::current_num_threads());
    let pieces: Vec<Piece> = cuts
        .par_windows(2)
        .map(|w| {
            let text = &body[w[0]..w[1]];
            let (mut rows, mut coef, mut at) = (Builder::default(), Vec::new(), Vec::new());
            let (mut p, mut ln) = (0, 0);
            while p < text.len() {
                ln += 1;
                match sv_line(text, p, k - 1, &mut rows, &mut coef) {
                    Ok((next, row)) => {
                        p = next;
                        if row {
                            at.push(ln);
                        }
                    }
                    Err(msg) => return (rows, coef, at, ln, Some((ln, msg))),
                }
            }
            (rows, coef, at, ln, None)
        })
        .collect();
    // The line of the support vector after the `total`-th, where reading stops; then the
    // first malformed line before it, if any.
    let (mut before, mut line0) = (0, first);
    for (rows, _, at, lines, err) in &pieces {
        let n = rows.rows();
        if before + n > total {
            return Err(too_many(src, line0 + at[total - before] - 1, total));
        }
        if let Some((ln, msg)) = err {
            if before + n == total {
                return Err(too_many(src, line0 + ln - 1, total));
            }
            return Err(src.bad(line0 + ln - 1, msg.clone()));
        }
        before += n;
        line0 += lines;
    }
    if before != total {
        return Err(src.bad(
            0,
            format!("expected {total} support vectors, found {before} (truncated file?)"),
        ));
    }
    let mut sv_coef = vec![Vec::with_capacity(total); k - 1];
    for (_, coef, ..) in &pieces {
        for c in coef.chunks_exact(k - 1) {
            for (to, &v) in sv_coef.iter_mut().zip(c) {
                to.push(v);
            }
        }
    }
    let mut rows = join(pieces.into_iter().map(|p| p.0).collect());
    // Each SV's class: the first class whose running count of nr_sv it falls below.
    let mut ends = h.nr_sv.iter().scan(0, |acc, &n| {
        *acc += n;
        Some(*acc)
    });
    let (mut class, mut end) = (0, ends.next().unwrap_or(0));
    for (j, label) in rows.labels_mut().iter_mut().enumerate() {
        while j >= end && class + 1 < k {
            class += 1;
            end = ends.next().unwrap_or(end);
        }
        *label = h.labels[class];
    }
    Ok((rows.into_dataset(), sv_coef))
}

/// The error of a support vector past `total_sv`, on line `ln`.
fn too_many(src: Source<'_>, ln: usize, total: usize) -> Error {
    src.bad(ln, format!("more than total_sv = {total} support vectors"))
}

/// One line of a model's support vectors from `text[p]`: nothing for a blank line, else its
/// `coefs` coefficients (into `coef`) and its features (a row of `rows`, label 0). Returns
/// the position after the line's `\n` and whether it held a support vector, or the message.
fn sv_line(
    text: &[u8],
    mut p: usize,
    coefs: usize,
    rows: &mut crate::data::libsvm::Builder,
    coef: &mut Vec<f64>,
) -> std::result::Result<(usize, bool), String> {
    let blank = |c: u8| c.is_ascii_whitespace() && c != b'\n';
    while blank(text[p]) {
        p += 1;
    }
    if text[p] == b'\n' {
        return Ok((p + 1, false));
    }
    for _ in 0..coefs {
        while blank(text[p]) {
            p += 1;
        }
        let start = p;
        while !text[p].is_ascii_whitespace() {
            p += 1;
        }
        if p == start {
            return Err(format!("expected {coefs} coefficients"));
        }
        let tok = &text[start..p];
        match fast_float2::parse::<f64, _>(tok) {
            Ok(v) if v.is_finite() => coef.push(v),
            _ => {
                return Err(format!(
                    "`SV coefficient` expects numbers, found `{}`",
                    String::from_utf8_lossy(tok)
                ));
            }
        }
    }
    let next = crate::data::libsvm::parse_features(text, p, rows)?;
    rows.end_row(0.0);
    Ok((next, true))
}

/// Builds a model's SV dataset with the layout of `like` (dense stays dense).
pub(crate) fn sv_dataset(src: &Dataset, rows: &[usize], labels: Vec<f64>) -> Dataset {
    let mut ds = src.subset(rows);
    ds.labels = labels;
    ds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pair_index` numbers the pairs as `for_each_pair` visits them; `class_of` finds the
    /// class of a support vector, classes without support vectors skipped.
    #[test]
    fn pairs_and_classes_are_found_by_position() {
        for k in 2..9 {
            for_each_pair(k, |p, i, j| {
                assert_eq!(pair_index(k, i, j), p, "k {k} ({i}, {j})")
            });
        }
        // Classes of 2, 0, 3 and 1 support vectors.
        let starts = [0, 2, 2, 5];
        let want = [0, 0, 2, 2, 2, 3];
        for (j, &c) in want.iter().enumerate() {
            assert_eq!(class_of(&starts, j), c, "position {j}");
        }
        assert_eq!(nearest(&[0.1, 0.7, 0.7, 0.2]), 1);
    }

    /// The vectorised `nearest` is the scan that moves to each value above the best so far:
    /// at every length around the lanes' width, with ties, NaNs (first or not) and infinities.
    #[test]
    fn nearest_is_the_first_largest_value_as_a_scan_finds_it() {
        let scan = |kv: &[f32]| {
            let mut best = 0;
            for (j, &v) in kv.iter().enumerate() {
                if v > kv[best] {
                    best = j;
                }
            }
            best
        };
        let mut r = crate::rng::SplitMix64::new(5);
        for n in [0usize, 1, 2, 15, 16, 17, 31, 32, 33, 100, 1456] {
            for case in 0..6 {
                let mut kv: Vec<f32> = (0..n)
                    .map(|_| (r.next_f64() * 8.0).floor() as f32)
                    .collect();
                match case {
                    1 if n > 3 => kv[n / 2] = f32::NAN,
                    2 if n > 0 => kv[0] = f32::NAN,
                    3 if n > 1 => kv[n - 1] = f32::INFINITY,
                    4 => kv.iter_mut().for_each(|v| *v = f32::NAN),
                    5 if n > 2 => {
                        kv.iter_mut().for_each(|v| *v = f32::NEG_INFINITY);
                        kv[n - 2] = f32::NAN;
                    }
                    _ => {}
                }
                assert_eq!(nearest(&kv), scan(&kv), "n {n}, case {case}: {kv:?}");
            }
        }
    }

    /// The vectorised signed and absolute sums agree with the portable ones within the
    /// rounding of their different orders, at every length around the vectors' widths.
    #[test]
    fn vector_sums_agree_with_the_portable_sums() {
        for n in [0usize, 1, 3, 7, 8, 15, 16, 17, 31, 33, 100, 257] {
            let coef: Vec<f64> = (0..n)
                .map(|k| (k as f64 * 0.37).sin() * if k % 3 == 0 { -2.0 } else { 1.0 })
                .collect();
            let vals: Vec<f32> = (0..n).map(|k| ((k * 7 % 11) as f32) / 11.0).collect();
            let (s0, w0) = sums(&coef, &vals);
            let (s1, w1) = signed_and_absolute_sums(&coef, &vals);
            let tol = 1e-14 * (1.0 + w0);
            assert!((s0 - s1).abs() <= tol, "n {n}: {s0} vs {s1}");
            assert!((w0 - w1).abs() <= tol, "n {n}: {w0} vs {w1}");
            let w: f64 = coef
                .iter()
                .zip(&vals)
                .map(|(c, &v)| c.abs() * f64::from(v))
                .sum();
            assert!((w - w1).abs() <= tol, "n {n}: absolute sum {w1}, want {w}");
        }
    }

    /// Support vectors over a wide sparse feature range (3 SVs × 8M features: past the dense
    /// copy's bound) are read through their postings: the same labels and decision values as
    /// the same model over a narrow range, test rows with features no SV uses included.
    #[test]
    fn wide_sparse_support_vectors_predict_as_narrow_ones() {
        let narrow = Dataset::from_csr(
            4,
            vec![0, 2, 3, 5],
            vec![0, 1, 0, 1, 3],
            vec![0.5, -1.0, 2.0, 0.25, 1.0],
            vec![1.0, 2.0, 3.0],
        );
        let model = |sv: Dataset| Model {
            kernel: Kernel::Rbf { gamma: 0.5 },
            labels: vec![1.0, 2.0, 3.0],
            nr_sv: vec![1, 1, 1],
            sv,
            sv_coef: vec![vec![0.1, -0.2, 0.3], vec![0.4, 0.5, -0.6]],
            rho: vec![0.01, -0.02, 0.03],
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            one_class: false,
            sv_rows: Vec::new(),
        };
        let mut wide_sv = narrow.clone();
        if let crate::data::Features::Sparse { n_features, .. } = &mut wide_sv.features {
            *n_features = 8_000_000;
        }
        let (a, b) = (model(narrow), model(wide_sv));
        assert!(b.total_sv() * b.n_features() > DENSE_SV_MAX);
        let test = Dataset::from_csr(
            8_000_000,
            vec![0, 2, 4, 5, 7],
            vec![0, 1, 1, 7_999_999, 3, 0, 3],
            vec![0.4, -0.8, 0.3, 2.0, 1.0, 1.5, 0.9],
            vec![0.0; 4],
        );
        let narrow_test = Dataset::from_csr(
            4,
            vec![0, 2, 3, 4, 6],
            vec![0, 1, 1, 3, 0, 3],
            vec![0.4, -0.8, 0.3, 1.0, 1.5, 0.9],
            vec![0.0; 4],
        );
        let (la, da) = a.predict_with_decisions(&narrow_test);
        let (lb, db) = b.predict_with_decisions(&test);
        assert_eq!(la, lb);
        for (r, (x, y)) in da.iter().zip(&db).enumerate() {
            for (u, v) in x.iter().zip(y) {
                // Row 1's feature 7,999,999 (2.0) only adds 4 to its squared norm.
                if r != 1 {
                    assert!((u - v).abs() < 1e-12, "row {r}: {x:?} vs {y:?}");
                }
            }
        }
    }

    /// A two-class RBF model's screened labels are its exact labels: random support vectors
    /// and weights, rho at the median decision value (half the rows within a whisker of the
    /// boundary's side), and one row's exact decision value made 0 by its rho (the tie goes to
    /// the second class on both paths).
    #[test]
    fn screened_labels_are_the_exact_labels() {
        let points = |n: usize, seed: u64| {
            let mut r = crate::rng::SplitMix64::new(seed);
            let values: Vec<f32> = (0..4 * n).map(|_| r.next_f64() as f32).collect();
            let indptr = (0..=n).map(|i| 4 * i).collect();
            let indices = (0..n).flat_map(|_| [0u32, 1, 2, 3]).collect();
            Dataset::from_csr(4, indptr, indices, values, vec![0.0; n])
        };
        let nsv = 1100;
        let mut r = crate::rng::SplitMix64::new(7);
        let coef: Vec<f64> = (0..nsv)
            .map(|j| (r.next_f64() - 0.4) * (1.0 + j as f64 % 3.0))
            .collect();
        let mut model = Model {
            kernel: Kernel::Rbf { gamma: 2.0 },
            labels: vec![1.0, -1.0],
            nr_sv: vec![nsv / 2, nsv - nsv / 2],
            sv: points(nsv, 1),
            sv_coef: vec![coef],
            rho: vec![0.0],
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            one_class: false,
            sv_rows: Vec::new(),
        };
        let test = points(1000, 2);
        assert!(test.len() * nsv >= SCREEN_MIN_WORK);
        let (_, dec) = model.predict_with_decisions(&test);
        let mut d: Vec<f64> = dec.iter().map(|v| v[0]).collect();
        d.sort_by(f64::total_cmp);
        for rho in [d[500], dec[17][0]] {
            model.rho = vec![rho];
            let (exact, dec) = model.predict_with_decisions(&test);
            let screened = model.screened_labels(&test).expect("the screen applies");
            assert_eq!(screened, exact, "rho {rho}");
            assert_eq!(model.predict(&test), exact);
            let near = dec.iter().filter(|v| v[0].abs() < 1e-4).count();
            assert!(near > 0, "no row near the boundary at rho {rho}");
        }
        assert_eq!(model.predict_with_decisions(&test).1[17][0], 0.0);
        assert_eq!(model.predict(&test)[17], -1.0);
    }

    /// A multi-class RBF model's screened labels are its exact labels: four classes of random
    /// support vectors and weights, every pair's rho at the median of its decision values (so
    /// half the rows sit within a whisker of each pair's boundary), and one row's decision
    /// value of one pair made exactly 0 by its rho.
    #[test]
    fn screened_votes_are_the_exact_labels() {
        let points = |n: usize, seed: u64| {
            let mut r = crate::rng::SplitMix64::new(seed);
            let values: Vec<f32> = (0..4 * n).map(|_| r.next_f64() as f32).collect();
            let indptr = (0..=n).map(|i| 4 * i).collect();
            let indices = (0..n).flat_map(|_| [0u32, 1, 2, 3]).collect();
            Dataset::from_csr(4, indptr, indices, values, vec![0.0; n])
        };
        let (k, per) = (4, 300);
        let nsv = k * per;
        let mut r = crate::rng::SplitMix64::new(11);
        let sv_coef: Vec<Vec<f64>> = (0..k - 1)
            .map(|_| {
                (0..nsv)
                    .map(|j| (r.next_f64() - 0.45) * (1.0 + (j % 3) as f64))
                    .collect()
            })
            .collect();
        let mut model = Model {
            kernel: Kernel::Rbf { gamma: 2.0 },
            labels: vec![3.0, 1.0, 4.0, 2.0],
            nr_sv: vec![per; k],
            sv: points(nsv, 3),
            sv_coef,
            rho: vec![0.0; k * (k - 1) / 2],
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            one_class: false,
            sv_rows: Vec::new(),
        };
        let test = points(1000, 4);
        assert!(test.len() * nsv >= SCREEN_MIN_WORK);
        let (_, dec) = model.predict_with_decisions(&test);
        model.rho = (0..dec[0].len())
            .map(|p| {
                let mut d: Vec<f64> = dec.iter().map(|v| v[p]).collect();
                d.sort_by(f64::total_cmp);
                d[d.len() / 2]
            })
            .collect();
        for tie in [false, true] {
            if tie {
                model.rho[2] += model.predict_with_decisions(&test).1[17][2];
            }
            let (exact, dec) = model.predict_with_decisions(&test);
            let screened = model.screened_labels(&test).expect("the screen applies");
            assert_eq!(screened, exact, "tie {tie}");
            assert_eq!(model.predict(&test), exact);
            let near = dec
                .iter()
                .filter(|v| v.iter().any(|d| d.abs() < 1e-4))
                .count();
            assert!(near > 0, "no row near a boundary");
            if tie {
                assert_eq!(dec[17][2], 0.0);
            }
        }
    }

    /// The vote is settled when no outcome of the open pairs can change its winner, ties to
    /// the class listed first included.
    #[test]
    fn a_vote_is_settled_only_when_the_open_pairs_cannot_change_it() {
        // Three classes, pairs (0,1), (0,2), (1,2).
        assert_eq!(settled_vote(3, &[1, 1, 0]), Some(0));
        assert_eq!(settled_vote(3, &[-1, -1, 1]), Some(1));
        // 0 and 2 hold one settled vote each, (0, 1) open: 0 gets two, or all three tie at
        // one and the first listed, 0, is elected.
        assert_eq!(settled_vote(3, &[0, 1, -1]), Some(0));
        // (0, 2) open with 0 and 2 at one vote each besides: the open pair decides.
        assert_eq!(settled_vote(3, &[1, 0, -1]), None);
        // Everything open.
        assert_eq!(settled_vote(3, &[0, 0, 0]), None);
        // Four classes (pairs (0,1), (0,2), (0,3), (1,2), (1,3), (2,3)): 3 holds three
        // settled votes and nobody else can reach three.
        assert_eq!(settled_vote(4, &[0, 0, -1, 0, -1, -1]), Some(3));
        // 3 at two, 0 at one with (0, 2) and (0, 3) open: 0 can reach three.
        assert_eq!(settled_vote(4, &[1, 0, 0, 0, -1, -1]), None);
        // 3 at two, 0 at one with (0, 2) open: 0 can tie with 3, and is listed first.
        assert_eq!(settled_vote(4, &[1, 0, -1, 1, -1, 1]), None);
    }

    /// probA/probB survive a write and a load (bit for bit), sit where LIBSVM puts them (after
    /// `label`), and a count that does not match the class pairs is refused with its line.
    #[test]
    fn probabilities_round_trip_through_the_model_file() {
        let sv = Dataset::from_csr(
            2,
            vec![0, 2, 3, 4],
            vec![0, 1, 0, 1],
            vec![0.5, -1.0, 2.0, 0.25],
            vec![1.0, 2.0, 3.0],
        );
        let model = Model {
            kernel: Kernel::Rbf { gamma: 0.5 },
            labels: vec![1.0, 2.0, 3.0],
            nr_sv: vec![1, 1, 1],
            sv,
            sv_coef: vec![vec![0.1, -0.2, 0.3], vec![0.4, 0.5, -0.6]],
            rho: vec![0.01, -0.02, 0.03],
            prob_a: vec![-1.5, -2.25, -0.1 / 3.0],
            prob_b: vec![0.125, -1e-9, 7.0],
            one_class: false,
            sv_rows: Vec::new(),
        };
        assert!(model.has_probabilities());
        let dir = std::env::temp_dir().join(format!("fwsvm-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.model");
        model.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let (l, a) = (
            text.find("\nlabel ").unwrap(),
            text.find("\nprobA ").unwrap(),
        );
        assert!(l < a && a < text.find("\nprobB ").unwrap() && a < text.find("\nnr_sv").unwrap());
        let back = Model::load(&path).unwrap();
        assert_eq!(back.prob_a, model.prob_a);
        assert_eq!(back.prob_b, model.prob_b);
        std::fs::write(&path, text.replace("probA -1.5 ", "probA ")).unwrap();
        let err = Model::load(&path).unwrap_err().to_string();
        assert!(err.contains("`probA` has 2 values, expected 3"), "{err}");
        // A feature index past u32 (the data reader's limit) is refused with its line, not
        // truncated into another index, nor its size allocated by prediction.
        let huge = text.replacen(" 2:-1 ", " 14294967296:-1 ", 1);
        assert_ne!(huge, text);
        std::fs::write(&path, huge).unwrap();
        let err = Model::load(&path).unwrap_err().to_string();
        assert!(
            err.contains(":12:") && err.contains("index too large in `14294967296:-1`"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A model of many support vectors (cut into pieces read side by side) reads back as
    /// written, with or without a final newline and with blank lines among its support
    /// vectors; each broken line is reported with its own line number and the first rule it
    /// breaks, as a line-by-line reading finds it (a support vector past `total_sv` before a
    /// later malformed line is the error, a malformed line before it is).
    #[test]
    fn support_vectors_are_read_in_pieces_with_their_line_numbers() {
        let mut r = crate::rng::SplitMix64::new(21);
        let (n, d) = (3_000, 12);
        let (mut ip, mut ix, mut vs) = (vec![0], Vec::new(), Vec::new());
        for _ in 0..n {
            for f in 0..d {
                if r.next_f64() < 0.5 {
                    ix.push(f as u32);
                    vs.push((r.next_f64() * 4.0 - 2.0) as f32);
                }
            }
            ip.push(ix.len());
        }
        let labels = [1.0, 2.0, 3.0];
        let nr_sv = vec![1_000, 1_200, 800];
        let sv_labels = (0..n)
            .map(|j| labels[usize::from(j >= 1_000) + usize::from(j >= 2_200)])
            .collect();
        let mut coef = |_| (0..n).map(|_| r.next_f64() - 0.5).collect::<Vec<f64>>();
        let sv_coef = vec![coef(0), coef(1)];
        let model = Model {
            kernel: Kernel::Rbf { gamma: 0.25 },
            labels: labels.to_vec(),
            nr_sv,
            sv: Dataset::from_csr(d, ip, ix, vs, sv_labels),
            sv_coef,
            rho: vec![0.1, -0.2, 0.3],
            prob_a: Vec::new(),
            prob_b: Vec::new(),
            one_class: false,
            sv_rows: Vec::new(),
        };
        let mut text = Vec::new();
        model.write(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let read = |t: &str| Model::read(std::io::Cursor::new(t.as_bytes()), Path::new("m"));
        let same = |b: &Model| {
            assert_eq!(b.sv_coef, model.sv_coef);
            assert_eq!(b.nr_sv, model.nr_sv);
            assert_eq!(b.sv.labels, model.sv.labels);
            assert_eq!(b.sv.n_features(), model.sv.n_features());
            for j in 0..n {
                assert_eq!(b.sv.row(j).sq_norm(), model.sv.row(j).sq_norm(), "row {j}");
                assert_eq!(b.sv.row(j).dot(&model.sv.row(j)), model.sv.row(j).sq_norm());
            }
        };
        same(&read(&text).unwrap());
        same(&read(text.trim_end()).unwrap());
        let lines: Vec<&str> = text.lines().collect();
        let first = lines.iter().position(|l| *l == "SV").unwrap() + 2;
        let edit = |at: usize, with: &[&str]| {
            let mut l = lines.clone();
            l.splice(at - 1..at, with.iter().copied());
            l.join("\n") + "\n"
        };
        same(&read(&edit(first + 1_500, &["", "  ", lines[first + 1_499]])).unwrap());
        let err = |t: &str| read(t).unwrap_err().to_string();
        let e = err(&edit(first + 2_345, &["0.5 x 1:1"]));
        assert!(
            e.contains(&format!(":{}:", first + 2_345)) && e.contains("found `x`"),
            "{e}"
        );
        let e = err(&edit(first + 17, &["0.5"]));
        assert!(
            e.contains(&format!(":{}:", first + 17)) && e.contains("2 coefficients"),
            "{e}"
        );
        let e = err(&edit(first + 2_900, &["0.5 0.5 3:1 2:1"]));
        assert!(
            e.contains(&format!(":{}:", first + 2_900)) && e.contains("ascending"),
            "{e}"
        );
        let e = err(&edit(first + 100, &[]));
        assert!(
            e.contains("expected 3000 support vectors, found 2999"),
            "{e}"
        );
        // A problem of the file as a whole names the file alone, no line.
        assert!(e.starts_with("m: not a valid model file: "), "{e}");
        // One support vector too many, then a malformed line: the first is the error.
        let extra = edit(first + 1_200, &[lines[first + 1_199], lines[first + 1_199]]);
        let e = err(&(extra.clone() + "nonsense\n"));
        assert!(
            e.contains(&format!(":{}:", first + n)) && e.contains("more than total_sv"),
            "{e}"
        );
        let e = err(&extra);
        assert!(e.contains(&format!(":{}:", first + n)), "{e}");
        // A malformed line before the one too many is the error.
        let e = err(&(edit(first + 10, &["bad"]) + lines[first] + "\n"));
        assert!(
            e.contains(&format!(":{}:", first + 10)) && e.contains("found `bad`"),
            "{e}"
        );
    }
}
