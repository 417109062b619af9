//! The certification from the columns a backend already holds.
//!
//! When every column of α's support is resident in the CPU backend's cache — the solver
//! computed them, and small problems (the class pairs of a multi-class set) keep them all —
//! the screened certification's f32 pass ([`super::certify_screened`]) is a product the
//! solver has already paid for: g_i = Σ_{j∈A} α_j Q_ij for a row off A is a weighted sum of
//! cached entries, |A| multiply-adds instead of |A| kernel evaluations over d features. The
//! cached entries are approximations (f32 products, an f32 exponential, f32 storage), so each
//! row gets an interval from a rigorous bound on every entry's error, and the end is the
//! screened certification's ([`super::certify_by_intervals`]): every row of A, the rows of
//! lowest upper bound and every row whose interval reaches their minimum computed exactly in
//! f64 by the same panel as the full pass. The certificate is therefore the full f64 pass's
//! number, to the bit; only how many rows it computes in f64 depends on the bound.
//!
//! **The bound** (RBF kernel, u = 2⁻²⁴, the entry Q̃_ij = y_i·y_j·fl32(k̃′ + 1) of
//! [`crate::backend::simd`]'s column passes, each of whose paths forms it in these steps):
//!
//! * the dot product x_i·x_j over at most n = d features, in f32 with fused multiply-adds or
//!   in f64, in any order: within 1.01·n·u·Σ|x_f z_f| ≤ 1.01·n·u·N/2 of the exact one, with
//!   N = ‖x_i‖² + ‖x_j‖² (the features are f32, so the operands are exact); the norms are
//!   summed in f64 over n squares, within (n + 4)·2⁻⁵³·N together;
//! * the exponent, in base 2, t̃ = fl32(fma(s̃, fl(−2·ng), fl(ng·‖x_i‖²) + fl(ng·‖x_j‖²))) with
//!   ng = −γ·log₂e (each factor formed in f64 and rounded once) and s̃ the dot, plus the bit
//!   count of hybrid rows, rounded to f32, clamped to [−124, 0]: with |s̃| ≤ N/2 each rounding
//!   before the last moves t by at most γ·log₂e·N·u — s̃'s, the factor −2·ng's, the two
//!   norms' products' and their sum's (2u), the product's own where there is no fused
//!   multiply-add —, which the 5.1·u·γ·N term below covers (in natural units; with the
//!   factors' own f64 roundings); the dot's error moves t by at most γ·log₂e·1.01·n·u·N;
//!   where not clamped |t̃| ≤ 124, so the last rounding is within 124·ln 2·u < 85.96·u in
//!   natural units, and ln 2·|t̃ − t| ≤ Δ = 86.1·u + γ·N·((1.01·n + 5.1)·u + (n + 4)·2⁻⁵³)
//!   (N bounded per row by ‖x_i‖² + max_j ‖x_j‖²); a clamped exponent has k and k̃′ below
//!   10⁻³⁷;
//! * k̃′ = exp2_nonpos_f32(t̃) within [`EXP2_32_ERR`]·2^t̃ of 2^t̃, and |2^t̃ − 2^t| ≤
//!   2^t̃·1.006·Δ while Δ ≤ 0.01; the table lookup of bit rows, fl32(e^{−γh} + 1), is within
//!   these too;
//! * fl32(k̃′ + 1) ∈ [1, 2] within u of k̃′ + 1, and the labels' sign is exact.
//!
//! Hence, with k̃′ ≤ |Q̃_ij| − 1 + u and 2^t̃ ≤ k̃′/(1 − EXP2_32_ERR),
//! |Q̃_ij − Q_ij| ≤ u + (|Q̃_ij| − 1 + u)·(EXP2_32_ERR + 1.006·Δ)/(1 − EXP2_32_ERR) + 10⁻³⁷, and
//! the row's sum in f64 adds at most |A|·2⁻⁵²·Σ_j α_j|Q̃_ij|. Rows whose Δ exceeds 0.01 get an
//! unbounded interval (computed in f64).

use super::*;
use crate::backend::simd::{EXP2_32_ERR, Elem};

/// Rows per parallel task of the weighted sums.
const CHUNK: usize = 2048;

/// u = 2⁻²⁴, the unit roundoff of f32.
const U: f64 = 1.0 / 16_777_216.0;

/// The certified gap of α, (f, 2f − min g, argmin) exactly as [`certify`] computes it, from
/// `cols[k]` = the column Q\[:, act\[k\]\] of every point of α's support (act = α's indices in
/// order) as the CPU backend's column passes store it (m entries each). None where it does
/// not apply (a kernel other than RBF, a column of another length, binary rows, whose full
/// pass takes their bit counts and so other f64 sums than the panel's) or an exact part fails.
pub fn certify_from_columns<T: Elem>(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    cols: &[&[T]],
) -> Option<(f64, f64, usize)> {
    if crate::backend::binary::applies(prob.kernel, prob.data) {
        return None;
    }
    let (lo, hi, rest) = intervals(prob, alpha, cols)?;
    let act = alpha.indices();
    let coef: Vec<f64> = act.iter().map(|&j| alpha.get(j) * prob.y[j]).collect();
    let nj: Vec<f64> = act.iter().map(|&j| prob.norms[j]).collect();
    // The f64 rows go through the same panel as the full pass, so they are the same numbers.
    let panel = Panel::new(prob.kernel, prob.data, act, &coef, &nj)?;
    let exact_rows = panel_rows(prob, alpha, &panel);
    certify_by_intervals(alpha, &rest, &lo, &hi, exact_rows, None, None).map(|(r, _)| r)
}

/// For every row off α's support (ascending, returned third): an interval [lo, hi] that holds
/// its exact g_i, from the cached columns (see the module documentation).
#[allow(clippy::type_complexity)]
fn intervals<T: Elem>(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    cols: &[&[T]],
) -> Option<(Vec<f64>, Vec<f64>, Vec<usize>)> {
    let crate::kernel::Kernel::Rbf { gamma } = prob.kernel else {
        return None;
    };
    let m = prob.len();
    let act = alpha.indices();
    if cols.len() != act.len() || cols.iter().any(|c| c.len() != m) || alpha.dim() != m {
        return None;
    }
    let a: Vec<f64> = act.iter().map(|&j| alpha.get(j)).collect();
    let (mut s, mut w) = (vec![0.0; m], vec![0.0; m]);
    let budget = crate::budget::current();
    s.par_chunks_mut(CHUNK)
        .zip(w.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, (s, w))| {
            if budget.spent() {
                return;
            }
            weighted_sums(cols, &a, c * CHUNK, s, w);
        });
    let sum_a: f64 = a.iter().sum();
    let nz_max = act.iter().map(|&j| prob.norms[j]).fold(0.0, f64::max);
    let n = prob.data.n_features() as f64;
    let f64_u = f64::EPSILON / 2.0;
    let rest = rows_off(m, act);
    let (mut lo, mut hi) = (
        Vec::with_capacity(rest.len()),
        Vec::with_capacity(rest.len()),
    );
    let terms = act.len() as f64;
    for &i in &rest {
        let big_n = prob.norms[i] + nz_max;
        let delta = 86.1 * U + gamma * big_n * ((1.01 * n + 5.1) * U + (n + 4.0) * f64_u);
        let bound = if delta <= 0.01 {
            // W_i = Σ α_j (|Q̃| − 1 + u) ≥ Σ α_j k̃′; its own f64 rounding is far below 10⁻⁹.
            let wi = w[i] * (1.0 + 1e-9);
            U * sum_a
                + wi * (EXP2_32_ERR + 1.006 * delta) / (1.0 - EXP2_32_ERR)
                + 1e-37 * sum_a
                + terms * 2.0 * f64_u * (wi + 2.0 * sum_a)
        } else {
            f64::INFINITY
        };
        lo.push(s[i] - bound - SLACK);
        hi.push(s[i] + bound);
    }
    Some((lo, hi, rest))
}

/// s_i += Σ_k a_k Q̃_ik and w_i += Σ_k a_k (|Q̃_ik| − 1 + u)⁺ over the rows r0.. of `s` and `w`
/// (one chunk), the columns four at a time (each row's sums loaded and stored once per four
/// columns instead of once per column), compiled for AVX-512 where the CPU has it. The order
/// of the additions does not enter the bound that uses the sums (an f64 sum of |A| terms in
/// any order).
fn weighted_sums<T: Elem>(cols: &[&[T]], a: &[f64], r0: usize, s: &mut [f64], w: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        unsafe { weighted_sums_avx512(cols, a, r0, s, w) };
        return;
    }
    weighted_sums_by_four(cols, a, r0, s, w);
}

/// [`weighted_sums`] compiled for AVX-512.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn weighted_sums_avx512<T: Elem>(
    cols: &[&[T]],
    a: &[f64],
    r0: usize,
    s: &mut [f64],
    w: &mut [f64],
) {
    weighted_sums_by_four(cols, a, r0, s, w);
}

/// [`weighted_sums`]' loops, inlined into each compiled copy.
#[inline(always)]
fn weighted_sums_by_four<T: Elem>(
    cols: &[&[T]],
    a: &[f64],
    r0: usize,
    s: &mut [f64],
    w: &mut [f64],
) {
    let n = s.len().min(w.len());
    let (s, w) = (&mut s[..n], &mut w[..n]);
    let term = |q: T, ak: f64| {
        let q = q.to_f64();
        (ak * q, ak * (q.abs() - 1.0 + U).max(0.0))
    };
    let mut four = cols.chunks_exact(4).zip(a.chunks_exact(4));
    for (c, ak) in &mut four {
        let (c0, c1, c2, c3) = (
            &c[0][r0..r0 + n],
            &c[1][r0..r0 + n],
            &c[2][r0..r0 + n],
            &c[3][r0..r0 + n],
        );
        for i in 0..n {
            let (s0, w0) = term(c0[i], ak[0]);
            let (s1, w1) = term(c1[i], ak[1]);
            let (s2, w2) = term(c2[i], ak[2]);
            let (s3, w3) = term(c3[i], ak[3]);
            s[i] += (s0 + s1) + (s2 + s3);
            w[i] += (w0 + w1) + (w2 + w3);
        }
    }
    let rest = cols.len() - cols.len() % 4;
    for (col, &ak) in cols[rest..].iter().zip(&a[rest..]) {
        for ((si, wi), &q) in s.iter_mut().zip(w.iter_mut()).zip(&col[r0..r0 + n]) {
            let (sk, wk) = term(q, ak);
            *si += sk;
            *wi += wk;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::simd::{ColumnArgs, Layout, columns_chunk};
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::rng::SplitMix64;

    /// Columns as the CPU backend's passes compute them (f32 entries, 1/C on the diagonal).
    fn columns(prob: &Problem<'_>, act: &[usize]) -> Vec<Vec<f32>> {
        let layout = Layout::new(prob.data);
        let args = ColumnArgs {
            layout: &layout,
            kernel: prob.kernel,
            norms: &prob.norms,
            y: &prob.y,
            rbf_table: None,
        };
        let m = prob.len();
        act.iter()
            .map(|&j| {
                let mut q = vec![0.0; prob.data.n_features()];
                prob.data.row(j).scatter_f64(&mut q);
                let mut out = vec![0f32; m];
                let mut dots = vec![0.0; m.next_multiple_of(crate::backend::simd::LANES)];
                columns_chunk(&args, &[(j, &q[..])], 0, &mut dots, &mut [&mut out[..]]);
                out[j] = (out[j] as f64 + prob.inv_c(j)) as f32;
                out
            })
            .collect()
    }

    /// Dense rows of 40 features (the tiles' f32 products), narrow rows of 10 features and of
    /// 10 continuous beside 6 binary ones (the fused kernel's),
    /// sparse rows, several γ: every interval holds the exact f64 g_i, and the certificate is
    /// the full pass's.
    #[test]
    fn intervals_hold_and_the_certificate_is_the_full_passes() {
        let mut r = SplitMix64::new(21);
        for (dense, d, bits, gamma) in [
            (true, 40, 0, 0.05),
            (true, 10, 0, 0.8),
            (true, 16, 6, 0.5),
            (false, 60, 0, 0.3),
            (true, 40, 0, 2.0),
        ] {
            let m = 600;
            let (mut ip, mut ix, mut vs, mut y) =
                (vec![0usize], Vec::new(), Vec::new(), Vec::new());
            for i in 0..m {
                for f in 0..d {
                    if f >= d - bits {
                        // 0/1 features: the hybrid layout's bits.
                        if r.next_f64() < 0.4 {
                            ix.push(f as u32);
                            vs.push(1.0);
                        }
                    } else if dense || r.next_f64() < 0.15 {
                        ix.push(f as u32);
                        vs.push((r.next_f64() * 2.0 - 1.0) as f32);
                    }
                }
                ip.push(ix.len());
                y.push(if i % 3 == 0 { -1.0 } else { 1.0 });
            }
            let ds = Dataset::from_csr(d, ip, ix, vs, y.clone());
            assert_eq!(
                matches!(Layout::new(&ds), Layout::Hybrid { .. }),
                bits > 0,
                "the layout"
            );
            let prob = Problem::new(&ds, y, Kernel::Rbf { gamma }, 1.0).unwrap();
            let mut alpha = ActiveSet::new(m);
            let support: Vec<usize> = (0..m).step_by(7).collect();
            for (k, &j) in support.iter().enumerate() {
                alpha.set(j, 1.0 + (k % 5) as f64);
            }
            let total: f64 = alpha.iter().map(|(_, a)| a).sum();
            for &j in &support {
                alpha.set(j, alpha.get(j) / total);
            }
            let act = alpha.indices().to_vec();
            let store = columns(&prob, &act);
            let cols: Vec<&[f32]> = store.iter().map(|c| &c[..]).collect();
            let (lo, hi, rest) = intervals(&prob, &alpha, &cols).expect("rbf");
            let mut g = vec![0.0; m];
            full_gradient(&prob, &alpha, &mut g);
            for (k, &i) in rest.iter().enumerate() {
                assert!(
                    lo[k] <= g[i] && g[i] <= hi[k],
                    "d {d} γ {gamma} row {i}: {} not in [{}, {}]",
                    g[i],
                    lo[k],
                    hi[k]
                );
                assert!(
                    hi[k] - lo[k] < 1e-4,
                    "interval {} too wide to be of use",
                    hi[k] - lo[k]
                );
            }
            let want = certify(&prob, &alpha);
            let got = certify_from_columns(&prob, &alpha, &cols).expect("applies");
            assert_eq!(got.0.to_bits(), want.0.to_bits(), "f");
            assert_eq!(got.1.to_bits(), want.1.to_bits(), "gap");
            assert_eq!(got.2, want.2, "argmin");
        }
    }
}
