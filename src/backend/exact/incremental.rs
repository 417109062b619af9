//! Certification from the last one: g(α¹) = g(α⁰) + Q(α¹ − α⁰).
//!
//! Between two exact passes of a run by working-set rounds (a rebuild and the final
//! certification, or two rebuilds) only part of α changes: measured, a9a 461 of its 20,234
//! support vectors, ijcnn1 2,726 of 7,997. g is linear in α, so the new gradient is the old one
//! plus the product with the change Δ = α¹ − α⁰ — |D| columns of every row instead of |A¹|.
//! The change is split into its rises and its falls (two vectors ≥ 0, which the exact products
//! take as they take α): a sum of f64 products differs from one product over A¹ by rounding
//! alone, about 1e-16 of Σ_j |α_j| ≤ 2 — far inside the slack the screened certification
//! already allows the f64 passes. The pass:
//!
//! * g⁰ in f64 at the change's points D (those that entered the support may be known as
//!   intervals: computed over A⁰), and (QΔ)_i in f64 on D's rows, which gives
//!   2f¹ = α¹ᵀQα¹ = α⁰ᵀg⁰ + 2Δᵀg⁰ + ΔᵀQΔ (every term in f64) and g¹ = g⁰ + QΔ on D's rows;
//! * every other row by the change's screened product (one pass over D with signed
//!   coefficients; the screen's bound holds for any sign) added to what the last pass knew:
//!   its f64 value or its interval, the bounds adding;
//! * then as in the screened certification ([`super::certify_screened`]): U = the least value
//!   known in f64 after the [`PROBES`] rows of lowest upper bound are computed, and in f64
//!   every row whose interval reaches U. A row left out has g_i > U, so the minimum and the gap
//!   are those of the exact gradient.
//!
//! The rows the last pass knew in f64 — A⁰'s, which the next pass needs exact at A¹ — are then
//! known within an interval only; their f64 value and the change are kept, and their f64
//! product with the change (|A⁰| × |D|, the largest f64 part of the pass: ijcnn1 7,160 rows by
//! 3,093 points) is computed only when the run goes on ([`Certified::settle_below`]) or the next
//! pass starts: a run that stops here does not pay it. When the change has more than half the
//! support's points, the full certification runs instead.

use super::*;

/// What a certification leaves for the next one: α, its gradient on every row, and a bound on
/// each row's error (0 where the row was computed in f64).
pub struct Certified {
    alpha: ActiveSet,
    g: Vec<f64>,
    err: Vec<f64>,
    /// Rows known in f64 before the last change and only within an interval after it.
    pending: Option<Pending>,
}

/// Rows whose f64 product with the change is still to be added (see the module
/// documentation).
struct Pending {
    /// The row's f64 gradient before the change (NaN for other rows).
    g0: Vec<f64>,
    /// The change: its rises and its falls.
    up: ActiveSet,
    down: ActiveSet,
}

impl Pending {
    fn has(&self, i: usize) -> bool {
        !self.g0[i].is_nan()
    }
}

impl Certified {
    /// Computes in f64 (over all of α's support) every row whose interval reaches `level` and
    /// is wider than `width` on either side, and copies them into `g`: a rebuild's rows near
    /// 2f that the next certification would otherwise compute over all of its support, and
    /// now brings forward exactly, by the change alone. That next certification ends a run
    /// whose gap is at most `width` (the stop rule's), so its least exact value U lies at most
    /// `width` below its 2f: a row that stays near 2f with an interval wider than that still
    /// reaches U then, while a narrower one is decided by its screened change alone (ijcnn1:
    /// half-widths 2.0e-6 against a gap of 3.0e-6; KDD99: 3.8e-6 against 1.1e-6). First the
    /// rows left pending by the certification are made exact again (also copied into `g`).
    pub fn settle_below(&mut self, prob: &Problem<'_>, level: f64, width: f64, g: &mut [f64]) {
        for i in self.finish_pending(prob) {
            g[i] = self.g[i];
        }
        let rows: Vec<usize> = (0..self.g.len())
            .filter(|&i| {
                let e = self.err[i];
                e != 0.0 && e > width && !(self.g[i] - e > level)
            })
            .collect();
        exact_into(prob, &self.alpha, &rows, &mut self.g, &mut self.err);
        for &i in &rows {
            g[i] = self.g[i];
        }
    }

    /// Makes every pending row exact: its earlier f64 value plus the change's f64 product.
    /// Returns the rows.
    fn finish_pending(&mut self, prob: &Problem<'_>) -> Vec<usize> {
        let Some(p) = self.pending.take() else {
            return Vec::new();
        };
        let rows: Vec<usize> = (0..self.g.len()).filter(|&i| p.has(i)).collect();
        self.exact_from_pending(prob, &p, &rows);
        rows
    }

    /// Rows of the pending set `p` in f64: the earlier value plus the change's product.
    fn exact_from_pending(&mut self, prob: &Problem<'_>, p: &Pending, rows: &[usize]) {
        for &i in rows {
            self.g[i] = p.g0[i];
            self.err[i] = 0.0;
        }
        add_exact(prob, &p.up, &p.down, rows, &mut self.g);
    }
}

/// The change's points, as a fraction of |A¹|, above which the full certification runs.
const MAX_CHANGE: f64 = 0.5;

/// The certified gap of α, (f, 2f − min g, argmin), leaving the whole gradient in `g` (as
/// [`super::certify_with_gradient`]): brought forward from `last` where α changed little since
/// it (see the module documentation), else computed in full. `last` becomes this
/// certification.
pub fn certify_incremental(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    last: &mut Option<Certified>,
    g: &mut [f64],
) -> (f64, f64, usize) {
    let m = prob.len();
    assert_eq!(g.len(), m);
    let mut prev = last.take().filter(|c| c.alpha.dim() == m);
    if let Some(c) = prev.as_mut() {
        c.finish_pending(prob);
    }
    let (result, mut c) = match prev.map(|c| (change(&c.alpha, alpha), c)) {
        Some(((up, down), mut c))
            if (up.len() + down.len()) as f64 <= MAX_CHANGE * alpha.len() as f64 =>
        {
            let r = bring_forward(prob, alpha, up, down, &mut c);
            g.copy_from_slice(&c.g);
            (r, c)
        }
        _ => {
            let mut err = vec![0.0; m];
            let r = full(prob, alpha, g, &mut err);
            let c = Certified {
                alpha: alpha.clone(),
                g: g.to_vec(),
                err,
                pending: None,
            };
            (r, c)
        }
    };
    c.alpha.copy_from(alpha);
    *last = Some(c);
    result
}

/// The full certification, with each row's error bound.
fn full(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    g: &mut [f64],
    err: &mut [f64],
) -> (f64, f64, usize) {
    if let Some((r, _)) = certify_screened_bounded(prob, alpha, Some((&mut *g, Some(&mut *err)))) {
        return r;
    }
    full_gradient(prob, alpha, g);
    err.iter_mut().for_each(|e| *e = 0.0);
    gap_of(alpha, g)
}

/// α¹ − α⁰ as its rises and its falls.
fn change(old: &ActiveSet, new: &ActiveSet) -> (ActiveSet, ActiveSet) {
    let m = new.dim();
    let (mut up, mut down) = (ActiveSet::new(m), ActiveSet::new(m));
    for (i, a) in new.iter() {
        let d = a - old.get(i);
        if d > 0.0 {
            up.set(i, d);
        } else if d < 0.0 {
            down.set(i, -d);
        }
    }
    for (i, a) in old.iter() {
        if !new.contains(i) {
            down.set(i, a);
        }
    }
    (up, down)
}

/// The certification of `alpha` (α¹) from `c` (α⁰, whose rows of A⁰ are exact) and the change
/// `up` − `down` (see the module documentation); `c` becomes α¹'s.
fn bring_forward(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    up: ActiveSet,
    down: ActiveSet,
    c: &mut Certified,
) -> (f64, f64, usize) {
    let m = prob.len();
    let mut d: Vec<usize> = up.indices().iter().chain(down.indices()).copied().collect();
    d.sort_unstable();
    let delta = |i: usize| up.get(i) - down.get(i);
    // g⁰ in f64 on D: its points off A⁰ may be intervals.
    let entering: Vec<usize> = d.iter().copied().filter(|&i| c.err[i] != 0.0).collect();
    exact_into(prob, &c.alpha, &entering, &mut c.g, &mut c.err);
    let two_f0: f64 = c.alpha.iter().map(|(i, a)| a * c.g[i]).sum();
    let dg: f64 = d.iter().map(|&i| delta(i) * c.g[i]).sum();
    // h = QΔ in f64, on D's rows at least: g¹ = g⁰ + h there, and ΔᵀQΔ = Σ_D Δ_i h_i.
    let mut h = vec![0.0; m];
    // The earlier f64 values of the rows left pending, when the screen brings them forward.
    let mut kept = None;
    if screened_sums_apply(prob) {
        add_exact(prob, &up, &down, &d, &mut h);
        for &i in &d {
            c.g[i] += h[i];
        }
        // Every other row by the screened change; those known in f64 keep their value for
        // later.
        let mut in_d = vec![false; m];
        d.iter().for_each(|&i| in_d[i] = true);
        let rest: Vec<usize> = (0..m).filter(|&i| !in_d[i]).collect();
        let n = rest.len();
        let (mut v, mut e) = (vec![0.0; n], vec![0.0; n]);
        if screened_change(prob, (&up, &down), &rest, &mut v, &mut e) {
            let mut g0 = vec![f64::NAN; m];
            for (k, &i) in rest.iter().enumerate() {
                if c.err[i] == 0.0 {
                    g0[i] = c.g[i];
                }
                c.g[i] += v[k];
                c.err[i] += e[k];
            }
            kept = Some(g0);
        } else {
            add_exact(prob, &up, &down, &rest, &mut c.g);
        }
    } else {
        // No screen for these rows (binary data, repeated rows: their f64 products cost less):
        // the change's product in f64 on every row, an interval staying one, as wide.
        let mut p = vec![0.0; m];
        for (part, sign) in [(&up, 1.0), (&down, -1.0)] {
            if !part.is_empty() {
                full_gradient(prob, part, &mut p);
                h.iter_mut().zip(&p).for_each(|(h, v)| *h += sign * v);
            }
        }
        c.g.iter_mut().zip(&h).for_each(|(g, v)| *g += v);
    }
    let dqd: f64 = d.iter().map(|&i| delta(i) * h[i]).sum();
    c.pending = kept.map(|g0| Pending { g0, up, down });
    settle(prob, alpha, two_f0 + 2.0 * dg + dqd, c)
}

/// g\[rows\[k\]\] += (Q(up − down))_{rows\[k\]} in f64.
fn add_exact(prob: &Problem<'_>, up: &ActiveSet, down: &ActiveSet, rows: &[usize], g: &mut [f64]) {
    let mut d = vec![0.0; rows.len()];
    for (part, sign) in [(up, 1.0), (down, -1.0)] {
        if !part.is_empty() && !rows.is_empty() {
            gradient_on_rows(prob, part, rows, &mut d);
            for (&i, v) in rows.iter().zip(&d) {
                g[i] += sign * v;
            }
        }
    }
}

/// Computes in f64 (over all of A) the rows `rows`, whose error becomes 0.
fn exact_into(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    rows: &[usize],
    g: &mut [f64],
    err: &mut [f64],
) {
    if rows.is_empty() {
        return;
    }
    let mut v = vec![0.0; rows.len()];
    gradient_on_rows(prob, alpha, rows, &mut v);
    for (&i, x) in rows.iter().zip(v) {
        g[i] = x;
        err[i] = 0.0;
    }
}

/// Computes `rows` of `c` in f64: a pending row by its earlier value and the change, any
/// other over all of α's support.
fn exact_rows(prob: &Problem<'_>, alpha: &ActiveSet, c: &mut Certified, rows: &[usize]) {
    let (pend, other): (Vec<usize>, Vec<usize>) = rows
        .iter()
        .partition(|&&i| c.pending.as_ref().is_some_and(|p| p.has(i)));
    if let Some(mut p) = c.pending.take() {
        c.exact_from_pending(prob, &p, &pend);
        pend.iter().for_each(|&i| p.g0[i] = f64::NAN);
        c.pending = Some(p);
    }
    exact_into(prob, alpha, &other, &mut c.g, &mut c.err);
}

/// The certification's end on a gradient known within `c.err`, 2f given: U = the least value
/// known in f64 once the [`PROBES`] rows of lowest upper bound below it are computed, every row
/// whose interval reaches U in f64; then (f, 2f − min g, argmin) over the rows known in f64
/// (ties to the lower row), which hold the minimum.
fn settle(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    two_f: f64,
    c: &mut Certified,
) -> (f64, f64, usize) {
    let least = |c: &Certified| {
        c.g.iter()
            .zip(&c.err)
            .filter(|(_, e)| **e == 0.0)
            .fold(f64::INFINITY, |u, (v, _)| u.min(*v))
    };
    let u0 = least(c);
    let mut probes: Vec<(f64, usize)> = (0..c.g.len())
        .filter(|&i| c.err[i] != 0.0 && c.g[i] + c.err[i] < u0)
        .map(|i| (c.g[i] + c.err[i], i))
        .collect();
    if probes.len() > PROBES {
        probes.select_nth_unstable_by(PROBES - 1, |x, y| x.0.total_cmp(&y.0));
        probes.truncate(PROBES);
    }
    let probes: Vec<usize> = probes.into_iter().map(|(_, i)| i).collect();
    exact_rows(prob, alpha, c, &probes);
    let upper = least(c);
    let undecided: Vec<usize> = (0..c.g.len())
        .filter(|&i| c.err[i] != 0.0 && !(c.g[i] - c.err[i] > upper))
        .collect();
    exact_rows(prob, alpha, c, &undecided);
    let (mut best, mut gs) = (0, f64::INFINITY);
    for (i, (&v, &e)) in c.g.iter().zip(c.err.iter()).enumerate() {
        if e == 0.0 && v < gs {
            (best, gs) = (i, v);
        }
    }
    (0.5 * two_f, two_f - gs, best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Kernel;

    /// A problem of `m` rows: dense continuous features, or binary ones (the binary product),
    /// with every other row repeated when `repeats` (the distinct-row product).
    fn data(m: usize, kind: &str) -> crate::data::Dataset {
        let mut r = crate::rng::SplitMix64::new(23);
        let d = 14;
        let mut vals = Vec::with_capacity(m * d);
        let mut last = Vec::new();
        for i in 0..m {
            if kind == "repeats" && i % 2 == 1 {
                vals.extend_from_slice(&last);
                continue;
            }
            last.clear();
            for _ in 0..d {
                last.push(match kind {
                    "binary" => f32::from(r.next_f64() < 0.3),
                    _ => (r.next_f64() * 2.0 - 1.0) as f32,
                });
            }
            vals.extend_from_slice(&last);
        }
        let y: Vec<f64> = (0..m)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
        for i in 0..m {
            for f in 0..d {
                let v = vals[i * d + f];
                if v != 0.0 {
                    ix.push(f as u32);
                    vs.push(v);
                }
            }
            ip.push(ix.len());
        }
        crate::data::Dataset::from_csr(d, ip, ix, vs, y)
    }

    /// α on `support` points from `r`, normalised.
    fn alpha_on(m: usize, support: &[usize], r: &mut crate::rng::SplitMix64) -> ActiveSet {
        let mut a = ActiveSet::new(m);
        for &i in support {
            a.set(i, 0.1 + r.next_f64());
        }
        let s = a.sum();
        a.scale(1.0 / s);
        a
    }

    #[test]
    fn incremental_certification_equals_the_full_pass() {
        let m = 1500;
        for kind in ["continuous", "binary", "repeats"] {
            let ds = data(m, kind);
            let prob =
                Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.3 }, 2.0).unwrap();
            let mut r = crate::rng::SplitMix64::new(5);
            let first: Vec<usize> = (0..m).filter(|i| i % 4 == 0).collect();
            let a0 = alpha_on(m, &first, &mut r);
            let mut last = None;
            let mut g = vec![0.0; m];
            let r0 = certify_incremental(&prob, &a0, &mut last, &mut g);
            let mut full_g = vec![0.0; m];
            full_gradient(&prob, &a0, &mut full_g);
            assert_eq!(
                r0,
                gap_of(&a0, &full_g),
                "{kind}: the first pass is the full one"
            );
            let screened = last.as_ref().unwrap().err.iter().any(|&e| e > 0.0);
            // The rows whose interval reaches a level (here the median value) and is wider
            // than a width (here the median half-width) become exact and are handed to `g`;
            // the rest keep their intervals.
            let mut sorted = g.clone();
            sorted.sort_by(f64::total_cmp);
            let level = sorted[m / 2];
            let before = last.as_ref().unwrap().err.clone();
            let mut widths: Vec<f64> = before.iter().copied().filter(|&e| e != 0.0).collect();
            widths.sort_by(f64::total_cmp);
            let width = widths.get(widths.len() / 2).copied().unwrap_or(0.0);
            last.as_mut()
                .unwrap()
                .settle_below(&prob, level, width, &mut g);
            let c = last.as_ref().unwrap();
            for i in 0..m {
                if before[i] > width && !(c.g[i] - before[i] > level) {
                    assert_eq!(c.err[i], 0.0, "{kind}: row {i} settled");
                    assert!((g[i] - full_g[i]).abs() <= 1e-13, "{kind}: row {i} exact");
                } else {
                    assert_eq!(c.err[i], before[i], "{kind}: row {i} kept");
                }
            }
            // The screen (AVX-512) leaves intervals on continuous rows: both kinds of row are
            // brought forward.
            #[cfg(target_arch = "x86_64")]
            if kind == "continuous" && std::is_x86_feature_detected!("avx512f") {
                assert!(screened, "the screen applies here");
            }
            // A few points change, some leave the support and some join it: brought forward.
            let mut a2 = a0.clone();
            for &i in first.iter().step_by(9) {
                a2.set(i, a0.get(i) * (0.5 + r.next_f64()));
            }
            for &i in first.iter().skip(3).step_by(23) {
                a2.remove(i);
            }
            for i in (1..m).step_by(97) {
                a2.set(i, 1e-3 * (1.0 + r.next_f64()));
            }
            let (up, down) = change(&a0, &a2);
            assert!(up.len() + down.len() > 0);
            assert!(((up.len() + down.len()) as f64) <= MAX_CHANGE * a2.len() as f64);
            let (f, gap, s_inc) = certify_incremental(&prob, &a2, &mut last, &mut g);
            full_gradient(&prob, &a2, &mut full_g);
            let (ff, fgap, fs) = gap_of(&a2, &full_g);
            assert!((f - ff).abs() <= 1e-14, "{kind}: f {f} vs {ff}");
            assert!((gap - fgap).abs() <= 1e-13, "{kind}: gap {gap} vs {fgap}");
            assert_eq!(s_inc, fs, "{kind}: the same minimising row");
            // Every row: within its bound of the f64 gradient (exact rows within rounding).
            let c = last.as_ref().unwrap();
            for i in 0..m {
                assert!(
                    (g[i] - full_g[i]).abs() <= c.err[i] + 1e-13,
                    "{kind}: row {i}: {} vs {} (bound {})",
                    g[i],
                    full_g[i],
                    c.err[i]
                );
            }
            // Going on from here (a rebuild) makes the rows left pending exact again: every
            // row of A² among them, which the next pass brings forward by the change alone.
            let before = c.err.clone();
            if screened {
                assert!(c.pending.is_some(), "{kind}: A¹'s rows left pending");
            }
            last.as_mut()
                .unwrap()
                .settle_below(&prob, f64::NEG_INFINITY, f64::INFINITY, &mut g);
            let c = last.as_ref().unwrap();
            assert!(c.pending.is_none());
            for (i, _) in a2.iter() {
                assert_eq!(c.err[i], 0.0, "{kind}: row {i} of A² exact");
                assert!((g[i] - full_g[i]).abs() <= 1e-13, "{kind}: row {i} exact");
            }
            for (i, (e, b)) in c.err.iter().zip(&before).enumerate() {
                assert!(e <= b, "{kind}: row {i} no wider");
            }
            // Two changes in a row, the first one's pending rows finished by the second.
            let mut a4 = a2.clone();
            for &i in first.iter().skip(1).step_by(11) {
                if a4.contains(i) {
                    a4.set(i, a4.get(i) * 1.3);
                }
            }
            let mut a5 = a4.clone();
            for &i in first.iter().skip(2).step_by(13) {
                if a5.contains(i) {
                    a5.set(i, a5.get(i) * 0.7);
                }
            }
            for (a, what) in [(&a4, "first"), (&a5, "second")] {
                let r = certify_incremental(&prob, a, &mut last, &mut g);
                full_gradient(&prob, a, &mut full_g);
                let (ff, fgap, fs) = gap_of(a, &full_g);
                assert!(
                    (r.0 - ff).abs() <= 1e-14,
                    "{kind} {what}: f {} vs {ff}",
                    r.0
                );
                assert!(
                    (r.1 - fgap).abs() <= 1e-13,
                    "{kind} {what}: gap {} vs {fgap}",
                    r.1
                );
                assert_eq!(r.2, fs, "{kind} {what}: the same minimising row");
                let c = last.as_ref().unwrap();
                for i in 0..m {
                    assert!(
                        (g[i] - full_g[i]).abs() <= c.err[i] + 1e-13,
                        "{kind} {what}: row {i}"
                    );
                }
            }
            // A large change runs the full pass.
            let a3 = alpha_on(
                m,
                &(0..m).filter(|i| i % 5 == 1).collect::<Vec<_>>(),
                &mut r,
            );
            let r3 = certify_incremental(&prob, &a3, &mut last, &mut g);
            full_gradient(&prob, &a3, &mut full_g);
            let (f3, gap3, s3) = gap_of(&a3, &full_g);
            assert!((r3.0 - f3).abs() <= 1e-14 && (r3.1 - gap3).abs() <= 1e-13 && r3.2 == s3);
        }
    }
}
