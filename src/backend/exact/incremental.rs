//! Certification from the last one: g(α¹) = g(α⁰) + Q(α¹ − α⁰).
//!
//! Between two exact passes of a run by working-set rounds (a rebuild and the final
//! certification, or two rebuilds) only part of α changes: measured, a9a 461 of its 20,234
//! support vectors, ijcnn1 2,726 of 7,997. g is linear in α, so the new gradient is the old one
//! plus the product with the change — |D| columns of every row instead of |A¹|. Each row is
//! brought forward the way the last pass knew it:
//!
//! * a row the last pass computed in f64 gets the change's product in f64, the change split
//!   into its rises and its falls (two vectors ≥ 0, which the exact products take as they take
//!   α): the sum of f64 products differs from one product over A¹ by rounding alone, about
//!   1e-16 of Σ_j |α_j| ≤ 2 — far inside the slack the screened certification already allows
//!   the f64 passes;
//! * a row it knew as the screen's interval gets the change's screened product, one pass over
//!   the change's points with signed coefficients (the screen's bound holds for any sign; two
//!   passes read every row twice: KDD99's final certification took 0.065 s in its two screened
//!   passes, 0.044 s in one), and the two bounds add.
//!
//! Then, as in the screened certification ([`super::certify_screened`]): every row of A¹ in
//! f64 over all of A¹ where it is not known so (2f), the least f64 value U as an upper bound on
//! min g, and in f64 every row whose interval reaches U. A row left out has g_i > U, so the
//! minimum and the gap are those of the exact gradient. When the change has more than half the
//! support's points, the full certification runs instead.

use super::*;

/// What a certification leaves for the next one: α, its gradient on every row, and a bound on
/// each row's error (0 where the row was computed in f64).
pub struct Certified {
    alpha: ActiveSet,
    g: Vec<f64>,
    err: Vec<f64>,
}

impl Certified {
    /// Computes in f64 (over all of α's support) every row whose interval reaches `level` and
    /// is wider than `width` on either side, and copies them into `g`: a rebuild's rows near
    /// 2f that the next certification would otherwise compute over all of its support, and
    /// now brings forward exactly, by the change alone. That next certification ends a run
    /// whose gap is at most `width` (the stop rule's), so its least exact value U lies at most
    /// `width` below its 2f: a row that stays near 2f with an interval wider than that still
    /// reaches U then, while a narrower one is decided by its screened change alone (ijcnn1:
    /// half-widths 2.0e-6 against a gap of 3.0e-6; KDD99: 3.8e-6 against 1.1e-6).
    pub fn settle_below(&mut self, prob: &Problem<'_>, level: f64, width: f64, g: &mut [f64]) {
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
    let prev = last.take().filter(|c| c.alpha.dim() == m);
    let (result, mut c) = match prev.map(|c| (change(&c.alpha, alpha), c)) {
        Some(((up, down), mut c))
            if (up.len() + down.len()) as f64 <= MAX_CHANGE * alpha.len() as f64 =>
        {
            bring_forward(prob, &up, &down, &mut c);
            let r = settle(prob, alpha, &mut c.g, &mut c.err);
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

/// Adds Q(up − down) to `c.g`: in f64 on the rows known exactly, screened (bounds added to
/// `c.err`) on the others where the screen applies, else in f64 there too.
fn bring_forward(prob: &Problem<'_>, up: &ActiveSet, down: &ActiveSet, c: &mut Certified) {
    let m = prob.len();
    let loose: Vec<usize> = (0..m).filter(|&i| c.err[i] != 0.0).collect();
    if loose.is_empty() {
        let mut d = vec![0.0; m];
        for (part, sign) in [(up, 1.0), (down, -1.0)] {
            if !part.is_empty() {
                full_gradient(prob, part, &mut d);
                c.g.iter_mut().zip(&d).for_each(|(g, v)| *g += sign * v);
            }
        }
        return;
    }
    let exact: Vec<usize> = (0..m).filter(|&i| c.err[i] == 0.0).collect();
    add_exact(prob, up, down, &exact, &mut c.g);
    let n = loose.len();
    let (mut v, mut e) = (vec![0.0; n], vec![0.0; n]);
    if screened_change(prob, (up, down), &loose, &mut v, &mut e) {
        for (k, &i) in loose.iter().enumerate() {
            c.g[i] += v[k];
            c.err[i] += e[k];
        }
    } else {
        add_exact(prob, up, down, &loose, &mut c.g);
    }
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

/// The certification's end on a gradient known within `err`: A's rows in f64 (2f), U = the
/// least value known in f64, every row whose interval reaches U in f64; then (f, 2f − min g,
/// argmin) over the rows known in f64 (ties to the lower row), which hold the minimum.
fn settle(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    g: &mut [f64],
    err: &mut [f64],
) -> (f64, f64, usize) {
    let need: Vec<usize> = alpha
        .indices()
        .iter()
        .copied()
        .filter(|&i| err[i] != 0.0)
        .collect();
    exact_into(prob, alpha, &need, g, err);
    let f = 0.5 * alpha.iter().map(|(i, a)| a * g[i]).sum::<f64>();
    let upper = g
        .iter()
        .zip(err.iter())
        .filter(|(_, e)| **e == 0.0)
        .fold(f64::INFINITY, |u, (v, _)| u.min(*v));
    let undecided: Vec<usize> = (0..g.len())
        .filter(|&i| err[i] != 0.0 && !(g[i] - err[i] > upper))
        .collect();
    exact_into(prob, alpha, &undecided, g, err);
    let (mut best, mut gs) = (0, f64::INFINITY);
    for (i, (&v, &e)) in g.iter().zip(err.iter()).enumerate() {
        if e == 0.0 && v < gs {
            (best, gs) = (i, v);
        }
    }
    (f, 2.0 * f - gs, best)
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
