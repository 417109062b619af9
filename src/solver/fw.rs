//! Plain Frank–Wolfe (toward steps only), as specialised to the L2-SVM by the Core Vector
//! Machine line of work (Frandi, Gasparo, Lodi, Ñanculef, Sartori, *Training Support Vector
//! Machines Using Frank-Wolfe Optimization Methods*, IJPRAI 2013).
//!
//! ```text
//! s = argmin_i g_i,  Δ = 2f − g_s,  λ = clip(Δ / (Q_ss − 2g_s + 2f), 0, 1)
//! α ← (1−λ)α + λe_s,   g ← (1−λ)g + λQ[:,s]
//! ```
//! One kernel column per iteration.

use super::{State, Step, StepKind, Variant, apply_toward, steps};
use crate::backend::{Reduction, Solvable, Update};
use crate::error::Result;

/// The FW variant.
pub struct Fw;

/// The toward step shared by every variant that may fall back to it.
pub(crate) fn toward_step(
    state: &mut State,
    red: &Reduction,
    be: &mut dyn Solvable,
) -> Result<Step> {
    let s = red.s;
    let (lambda, _) = steps::toward(state.f, red.g_s, be.q_diag(s));
    apply_toward(&mut state.alpha, s, lambda);
    be.update(&Update::one(1.0 - lambda, s, lambda))?;
    Ok(Step {
        kind: StepKind::Toward,
        size: lambda,
    })
}

impl Variant for Fw {
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step> {
        toward_step(state, red, be)
    }
}
