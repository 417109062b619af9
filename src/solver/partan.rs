//! PARTAN-accelerated Frank–Wolfe (Frandi, Ñanculef, Suykens, *A PARTAN-Accelerated Frank-Wolfe
//! Algorithm for Large-Scale SVM Classification*, 2015).
//!
//! Each iteration takes a FW step α → α̃, then a second exact line search along the
//! "parallel tangent" p = α̃ − α⁻ through the previous iterate α⁻. With W = αᵀQα⁻ and the
//! previous gradient g⁻ = Qα⁻ kept on the backend, everything is closed form:
//!
//! ```text
//! 1. λ, f̃ from the FW step;          g̃ = (1−λ)g + λQ[:,s]
//! 2. W̃ = (1−λ)W + λg⁻_s
//! 3. μ = clip((W̃ − 2f̃) / (2f̃ − 2W̃ + 2f⁻), 0, μ_max),  μ_max = min_{α⁻_i > α̃_i} α̃_i / (α⁻_i − α̃_i)
//! 4. α⁺ = (1+μ)α̃ − μα⁻,   g⁺ = (1+μ)g̃ − μg⁻  (one fused pass, then g⁻ ← g)
//! ```
//! The first iteration is a plain FW step.
//!
//! Numerics: near convergence α̃ ≈ α⁻, and the paper's closed forms for ∇f(α̃)ᵀp = 2f̃ − W̃ and
//! pᵀQp = 2f̃ − 2W̃ + 2f⁻ cancel O(f) terms down to O(‖p‖²): evaluated that way μ becomes noise
//! and f can increase (seen on small problems at gaps below 1e-6). So both are accumulated
//! directly over the supports, ∇f(α̃)ᵀp = Σ p_i (g̃_i − 2f) (Σp_i = 0) and pᵀQp = Σ p_i (g̃_i − g⁻_i) with
//! g̃_i = (1−λ)g_i + λQ_is, from g, g⁻ and Q[·,s] gathered on supp(α) ∪ supp(α⁻) ∪ {s} —
//! O(|A|) host work and no extra kernel column (the update reuses column s). The closed forms
//! stay in [`steps::partan`], where the tests check them against brute force.

use super::{State, Step, StepKind, Variant, steps};
use crate::active::ActiveSet;
use crate::backend::{Reduction, Solvable, Update};
use crate::error::Result;

/// The PARTAN variant.
///
/// The host work is O(|A|) per iteration and, on problems with thousands of support vectors
/// (ijcnn1), a large share of the run, so it runs over arrays aligned with `idx` (supp α
/// first, in α's storage order, then supp α⁻ \ supp α, then s): α⁻ is a dense m-vector read
/// once per entry, and α is rewritten in place through [`ActiveSet::weights_mut`].
#[derive(Default)]
pub struct Partan {
    /// α⁻ over all m points (0 off its support); empty before the first step.
    prev_w: Vec<f64>,
    /// supp α⁻.
    prev_idx: Vec<usize>,
    idx: Vec<usize>,
    g: Vec<f64>,
    gp: Vec<f64>,
    qs: Vec<f64>,
    /// α̃ and α⁻ on idx.
    at: Vec<f64>,
    ap: Vec<f64>,
    /// Entries of α⁺ that leave the support, and entries that join it.
    leave: Vec<usize>,
    join: Vec<(usize, f64)>,
}

impl Partan {
    /// α⁻ ← α (before the step): every entry of idx is in supp α ∪ supp α⁻, so writing α's
    /// weights (0 past its support) over idx replaces the old α⁻ completely.
    fn remember(&mut self, alpha: &ActiveSet) {
        let w = alpha.weights();
        for (k, &i) in self.idx.iter().enumerate() {
            self.prev_w[i] = w.get(k).copied().unwrap_or(0.0);
        }
        self.prev_idx.clear();
        self.prev_idx.extend_from_slice(alpha.indices());
    }
}

impl Partan {
    /// The first iteration: a plain FW step; g⁻ ← g.
    fn first_step(
        &mut self,
        alpha: &mut ActiveSet,
        s: usize,
        lambda: f64,
        be: &mut dyn Solvable,
    ) -> Result<Step> {
        self.prev_w = vec![0.0; alpha.dim()];
        self.idx.clear();
        self.idx.extend_from_slice(alpha.indices());
        self.remember(alpha);
        super::apply_toward(alpha, s, lambda);
        be.update(&Update {
            scale: 1.0 - lambda,
            cols: [Some((s, lambda)), None],
            prev_coef: 0.0,
            rotate: true,
        })?;
        Ok(Step {
            kind: StepKind::Toward,
            size: lambda,
        })
    }

    /// idx = supp α, then supp α⁻ \ supp α, then s if in neither; α̃ = (1−λ)α + λe_s and α⁻
    /// on idx. Returns s's position in idx.
    fn align(&mut self, alpha: &ActiveSet, s: usize, lambda: f64) -> usize {
        let na = alpha.len();
        self.idx.clear();
        self.idx.extend_from_slice(alpha.indices());
        let mut ks = alpha.position(s);
        for &i in &self.prev_idx {
            if !alpha.contains(i) {
                if i == s {
                    ks = Some(self.idx.len());
                }
                self.idx.push(i);
            }
        }
        let ks = ks.unwrap_or_else(|| {
            self.idx.push(s);
            self.idx.len() - 1
        });
        let n = self.idx.len();
        for v in [
            &mut self.g,
            &mut self.gp,
            &mut self.qs,
            &mut self.at,
            &mut self.ap,
        ] {
            v.resize(n, 0.0);
        }
        let w = alpha.weights();
        #[allow(clippy::needless_range_loop)] // k indexes idx, w and the step at once
        for k in 0..n {
            // α̃ = (1−λ)α + λe_s (λ = 1: e_s exactly, as apply_toward).
            let a = if k < na { w[k] } else { 0.0 };
            self.at[k] = if lambda >= 1.0 {
                if k == ks { 1.0 } else { 0.0 }
            } else {
                (1.0 - lambda) * a + if k == ks { lambda } else { 0.0 }
            };
            self.ap[k] = self.prev_w[self.idx[k]];
        }
        ks
    }

    /// The slope ∇f(α̃)ᵀp and curvature pᵀQp along p = α̃ − α⁻, and (μ_max, the point that
    /// binds it): the largest μ keeping (1+μ)α̃ − μα⁻ on the simplex.
    fn slope_and_bound(
        &mut self,
        be: &mut dyn Solvable,
        s: usize,
        lambda: f64,
        shift: f64,
    ) -> Result<([f64; 2], f64, usize)> {
        // Point k's part of the slope and curvature, and the μ at which it leaves the simplex.
        // Σp_i = 0, so subtracting a constant (`shift`) from g̃ leaves the slope unchanged in
        // exact arithmetic and removes the O(‖p‖·|g|·ulp) rounding that otherwise swamps it
        // near the optimum (where all active g_i are ≈ 2f).
        let (at, ap) = (&self.at, &self.ap);
        let term = |k: usize, g: f64, gp: f64, q: f64| -> ([f64; 2], Option<f64>) {
            let p = at[k] - ap[k];
            let gt = (1.0 - lambda) * g + lambda * q;
            let bound = (ap[k] > at[k]).then(|| at[k] / (ap[k] - at[k]));
            ([p * (gt - shift), p * (gt - gp)], bound)
        };
        if be.hints().partial_sums {
            // Each process over the points it holds (a distributed run's partial sums).
            let ask = crate::backend::FoldAsk {
                prev: true,
                col: Some(s),
                diag: false,
                min: true,
            };
            let fold = be.fold_entries(&self.idx, ask, &mut |k, e| term(k, e.g, e.gp, e.q))?;
            let (mu_max, bind) = fold.best.unwrap_or((f64::INFINITY, usize::MAX));
            return Ok((fold.sums, mu_max, bind));
        }
        be.gather_fused(
            &self.idx,
            &mut self.g,
            Some(&mut self.gp),
            Some((s, &mut self.qs)),
        )?;
        let (mut slope, mut curv) = (0.0, 0.0);
        let (mut mu_max, mut bind) = (f64::INFINITY, usize::MAX);
        for k in 0..self.idx.len() {
            let ([ds, dc], bound) = term(k, self.g[k], self.gp[k], self.qs[k]);
            slope += ds;
            curv += dc;
            if let Some(r) = bound {
                let i = self.idx[k];
                if r < mu_max || (r == mu_max && i < bind) {
                    mu_max = r;
                    bind = i;
                }
            }
        }
        Ok(([slope, curv], mu_max, bind))
    }

    /// α ← α⁺ = (1+μ)α̃ − μα⁻ on idx: rewritten in place over supp α (its first `na`
    /// entries), collected past it; `bind` leaves exactly when μ reaches μ_max.
    fn apply(&mut self, alpha: &mut ActiveSet, na: usize, mu: f64, mu_max: f64, bind: usize) {
        let value = |k: usize| -> f64 {
            if mu > 0.0 {
                if self.idx[k] == bind && mu >= mu_max {
                    0.0
                } else {
                    self.at[k] * (1.0 + mu) - mu * self.ap[k]
                }
            } else {
                self.at[k]
            }
        };
        self.leave.clear();
        self.join.clear();
        let wm = alpha.weights_mut();
        for (k, wk) in wm.iter_mut().enumerate() {
            let v = value(k);
            *wk = v;
            if v <= 0.0 {
                self.leave.push(self.idx[k]);
            }
        }
        for k in na..self.idx.len() {
            let v = value(k);
            if v > 0.0 {
                self.join.push((self.idx[k], v));
            }
        }
        for &i in &self.leave {
            alpha.remove(i);
        }
        for &(i, v) in &self.join {
            alpha.set(i, v);
        }
    }
}

impl Variant for Partan {
    fn prepare(&mut self, be: &mut dyn Solvable) {
        be.enable_prev();
    }

    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step> {
        let s = red.s;
        let q_ss = be.q_diag(s);
        let (lambda, _) = steps::toward(state.f, red.g_s, q_ss);
        let alpha = &mut state.alpha;
        if self.prev_w.is_empty() {
            return self.first_step(alpha, s, lambda, be);
        }
        let na = alpha.len();
        self.align(alpha, s, lambda);
        let ([slope, curv], mu_max, bind) = self.slope_and_bound(be, s, lambda, red.alpha_g)?;
        let mu = if slope < 0.0 && curv > 0.0 {
            (-slope / curv).min(mu_max)
        } else {
            0.0
        };
        self.remember(alpha);
        self.apply(alpha, na, mu, mu_max, bind);
        be.update(&Update {
            scale: (1.0 + mu) * (1.0 - lambda),
            cols: [Some((s, (1.0 + mu) * lambda)), None],
            prev_coef: -mu,
            rotate: true,
        })?;
        Ok(if mu > 0.0 {
            Step {
                kind: StepKind::Partan,
                size: mu,
            }
        } else {
            Step {
                kind: StepKind::Toward,
                size: lambda,
            }
        })
    }
}
