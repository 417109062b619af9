//! SWAP (Ñanculef, Frandi, Sartori, Allende, *A Novel Frank-Wolfe Algorithm. Analysis and
//! Applications to Large-Scale SVM Training*, 2014).
//!
//! Each iteration computes both the toward step and the pairwise ("swap") step that moves
//! mass from the worst active vertex v to the FW vertex s, each by exact line search, and takes
//! the one that decreases f more (a first-order comparison would always prefer the swap):
//!
//! ```text
//! swap: d = e_s − e_v,  λ = clip((g_v − g_s) / (Q_ss + Q_vv − 2Q_sv), 0, α_v)
//!       α_s += λ, α_v −= λ,  g ← g + λ(Q[:,s] − Q[:,v])
//!       decrease = λ(g_v − g_s) − ½λ²(Q_ss + Q_vv − 2Q_sv)
//! ```
//! Q_sv is one kernel value computed on the host. A swap costs two kernel columns.

use super::fw::toward_step;
use super::{State, Step, StepKind, Variant, steps};
use crate::backend::{Reduction, Solvable, Update};
use crate::error::Result;

/// The SWAP variant.
pub struct Swap;

/// Applies a pairwise step moving λ from v to s (λ ≥ α_v drops v exactly).
pub(crate) fn apply_pairwise(
    state: &mut State,
    be: &mut dyn Solvable,
    s: usize,
    v: usize,
    lambda: f64,
) -> Result<Step> {
    let av = state.alpha.get(v);
    let a_s = state.alpha.get(s);
    state.alpha.set(s, a_s + lambda);
    let kind = if lambda >= av {
        state.alpha.remove(v);
        StepKind::SwapDrop
    } else {
        state.alpha.set(v, av - lambda);
        StepKind::Swap
    };
    be.update(&Update::two(1.0, s, lambda, v, -lambda))?;
    Ok(Step { kind, size: lambda })
}

impl Variant for Swap {
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step> {
        let (s, v) = (red.s, red.v);
        if v == usize::MAX || v == s {
            return toward_step(state, red, be);
        }
        let q_ss = be.q_diag(s);
        let (_, f_toward) = steps::toward(state.f, red.g_s, q_ss);
        let dec_toward = state.f - f_toward;
        let (lambda, dec_swap) = steps::pairwise(
            red.g_s,
            red.g_v,
            q_ss,
            be.q_diag(v),
            be.q(s, v),
            state.alpha.get(v),
        );
        if dec_swap > dec_toward && lambda > 0.0 {
            apply_pairwise(state, be, s, v, lambda)
        } else {
            toward_step(state, red, be)
        }
    }
}
