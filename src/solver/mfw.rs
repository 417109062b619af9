//! Modified Frank–Wolfe (MFW): Wolfe's away steps, as used for the L2-SVM by Frandi, Gasparo,
//! Lodi, Ñanculef, Sartori, *Training Support Vector Machines Using Frank-Wolfe Optimization
//! Methods* (IJPRAI 2013) and compared against by Ñanculef, Frandi, Sartori, Allende, *A Novel
//! Frank-Wolfe Algorithm. Analysis and Applications to Large-Scale SVM Training* (2014).
//!
//! Each iteration compares the FW gap Δ = 2f − g_s with the away gap g_v − 2f
//! (v = argmax of g over the active set) and takes the larger:
//!
//! ```text
//! away: d = α − e_v,  λ_max = α_v / (1 − α_v),  λ = clip((g_v − 2f) / (Q_vv − 2g_v + 2f), 0, λ_max)
//!       α ← (1+λ)α − λe_v,  g ← (1+λ)g − λQ[:,v];  λ = λ_max drops v (α_v = 0 exactly)
//! ```

use super::fw::toward_step;
use super::{State, Step, StepKind, Variant, steps};
use crate::backend::{Reduction, Solvable, Update};
use crate::error::Result;

/// The MFW variant.
pub struct Mfw;

impl Variant for Mfw {
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step> {
        let two_f = 2.0 * state.f;
        let fw_gap = two_f - red.g_s;
        let away_gap = red.g_v - two_f;
        if red.v != usize::MAX && away_gap > fw_gap {
            let v = red.v;
            let av = state.alpha.get(v);
            if av < 1.0 {
                let (lambda, lambda_max, _) = steps::away(state.f, red.g_v, be.q_diag(v), av);
                state.alpha.scale(1.0 + lambda);
                let kind = if lambda >= lambda_max {
                    state.alpha.remove(v);
                    StepKind::Drop
                } else {
                    let a = state.alpha.get(v);
                    state.alpha.set(v, a - lambda);
                    StepKind::Away
                };
                be.update(&Update::one(1.0 + lambda, v, -lambda))?;
                return Ok(Step { kind, size: lambda });
            }
        }
        toward_step(state, red, be)
    }
}
