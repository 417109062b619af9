//! PARTAN-accelerated Frank–Wolfe (paper 004: Frandi, Ñanculef, Suykens, *A PARTAN-Accelerated
//! Frank-Wolfe Algorithm for Large-Scale SVM Classification*, 2015).
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

use super::{State, Step, StepKind, Variant, apply_toward, steps};
use crate::active::ActiveSet;
use crate::backend::{Backend, Reduction, Update};
use crate::error::Result;

/// The PARTAN variant.
#[derive(Default)]
pub struct Partan {
    prev: Option<ActiveSet>,
    spare: Option<ActiveSet>,
    idx: Vec<usize>,
    g: Vec<f64>,
    gp: Vec<f64>,
    qs: Vec<f64>,
}

impl Variant for Partan {
    fn prepare(&mut self, be: &mut dyn Backend) {
        be.enable_prev();
    }

    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Backend) -> Result<Step> {
        let s = red.s;
        let q_ss = be.q_diag(s);
        let (lambda, _) = steps::toward(state.f, red.g_s, q_ss);
        let Some(prev) = self.prev.as_mut() else {
            // First iteration: plain FW step; g⁻ ← g.
            self.prev = Some(state.alpha.clone());
            self.spare = Some(state.alpha.clone());
            apply_toward(&mut state.alpha, s, lambda);
            be.update(&Update {
                scale: 1.0 - lambda,
                cols: [Some((s, lambda)), None],
                prev_coef: 0.0,
                rotate: true,
            })?;
            return Ok(Step {
                kind: StepKind::Toward,
                size: lambda,
            });
        };
        let spare = self
            .spare
            .get_or_insert_with(|| ActiveSet::new(state.alpha.dim()));
        // Union of the supports, then g, g⁻ and Q[·,s] there.
        self.idx.clear();
        self.idx.extend_from_slice(state.alpha.indices());
        for (i, _) in prev.iter() {
            if !state.alpha.contains(i) {
                self.idx.push(i);
            }
        }
        if !state.alpha.contains(s) && prev.get(s) == 0.0 {
            self.idx.push(s);
        }
        let n = self.idx.len();
        self.g.resize(n, 0.0);
        self.gp.resize(n, 0.0);
        self.qs.resize(n, 0.0);
        be.gather_fused(
            &self.idx,
            &mut self.g,
            Some(&mut self.gp),
            Some((s, &mut self.qs)),
        )?;
        // Σp_i = 0, so subtracting a constant from g̃ leaves the slope unchanged in exact
        // arithmetic and removes the O(‖p‖·|g|·ulp) rounding that otherwise swamps it near the
        // optimum (where all active g_i are ≈ 2f).
        let shift = red.alpha_g;
        let (mut slope, mut curv) = (0.0, 0.0);
        let (mut mu_max, mut bind) = (f64::INFINITY, usize::MAX);
        for k in 0..n {
            let i = self.idx[k];
            let at = (1.0 - lambda) * state.alpha.get(i) + if i == s { lambda } else { 0.0 };
            let ap = prev.get(i);
            let p = at - ap;
            let gt = (1.0 - lambda) * self.g[k] + lambda * self.qs[k];
            slope += p * (gt - shift);
            curv += p * (gt - self.gp[k]);
            if ap > at {
                let r = at / (ap - at);
                if r < mu_max || (r == mu_max && i < bind) {
                    mu_max = r;
                    bind = i;
                }
            }
        }
        let mu = if slope < 0.0 && curv > 0.0 {
            (-slope / curv).min(mu_max)
        } else {
            0.0
        };
        spare.copy_from(&state.alpha);
        apply_toward(&mut state.alpha, s, lambda);
        if mu > 0.0 {
            state.alpha.scale(1.0 + mu);
            for (i, ap) in prev.iter() {
                if i == bind && mu >= mu_max {
                    state.alpha.remove(i);
                } else {
                    let v = state.alpha.get(i) - mu * ap;
                    state.alpha.set(i, v);
                }
            }
        }
        std::mem::swap(prev, spare);
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
