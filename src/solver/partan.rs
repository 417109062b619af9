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
//! The first iteration is a plain FW step. W is re-read exactly every iteration as αᵀg⁻ over
//! the active set (the reduction returns it), so the recursion cannot drift.

use super::{State, Step, StepKind, Variant, apply_toward, steps};
use crate::active::ActiveSet;
use crate::backend::{Backend, Reduction, Update};
use crate::error::Result;

/// The PARTAN variant.
#[derive(Default)]
pub struct Partan {
    prev: Option<ActiveSet>,
    spare: Option<ActiveSet>,
    f_prev: f64,
    buf: [f64; 1],
}

impl Variant for Partan {
    fn prepare(&mut self, be: &mut dyn Backend) {
        be.enable_prev();
    }

    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Backend) -> Result<Step> {
        let s = red.s;
        let f = state.f;
        let q_ss = be.q_diag(s);
        let (lambda, f_t) = steps::toward(f, red.g_s, q_ss);
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
            self.f_prev = f;
            return Ok(Step {
                kind: StepKind::Toward,
                size: lambda,
            });
        };
        let spare = self.spare.get_or_insert_with(|| ActiveSet::new(state.alpha.dim()));
        be.gather_prev(&[s], &mut self.buf)?;
        let w = red.alpha_g_prev;
        let w_t = (1.0 - lambda) * w + lambda * self.buf[0];
        // μ_max over the support of α⁻, with α̃ = (1−λ)α + λe_s.
        let (mut mu_max, mut bind) = (f64::INFINITY, usize::MAX);
        for (i, ap) in prev.iter() {
            let at = (1.0 - lambda) * state.alpha.get(i) + if i == s { lambda } else { 0.0 };
            if ap > at {
                let r = at / (ap - at);
                if r < mu_max || (r == mu_max && i < bind) {
                    mu_max = r;
                    bind = i;
                }
            }
        }
        let (mu, _) = steps::partan(f_t, w_t, self.f_prev, mu_max);
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
        self.f_prev = f;
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
