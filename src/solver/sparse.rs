//! Sparse re-weighted Frank–Wolfe, "M-FW" (Alaíz, Fanuel, Suykens, *Modified Frank-Wolfe
//! Algorithm for Enhanced Sparsity in Support Vector Machine Classifiers*, 2017;
//! docs/METHODS.md, sparse re-weighted FW).
//!
//! The vectors are split into active ones (in the simplex: the working set W) and inactive
//! ones (weight 0 in the re-weighted SVM: their coordinate could grow without taking mass from
//! the others, which lowers f only when g_i < 0, i.e. y_iF(x_i) < 0 — the point is
//! misclassified). Each iteration:
//!
//! ```text
//! i  = argmin over inactive g_i;   if g_i < 0: W ← W ∪ {i}
//! s  = argmin over W g,   v = argmax over W with α_v > 0
//! λ  = clip((g_v − g_s) / (Q_ss + Q_vv − 2Q_sv), 0, α_v);   α_s += λ, α_v −= λ
//! stop when g_v − g_s ≤ ε (and ≤ rel-eps · 2f) and no inactive g_i < 0
//! ```
//!
//! The result is the exact L2-SVM of the subsample W (the paper's Lemma): fewer support
//! vectors and iterations, and less sensitivity to C. The two minima come from one marked
//! reduction on the backend (inactive = [`mark::LOW`], W = [`mark::MID`]); v and αᵀg from the
//! ordinary one. The certified gap at the end is the gap of the sub-problem on W. The run
//! starts from the solver's initial point (`--init-size` random points solved exactly; the
//! paper's single starting vector is `--init-size 1`), whose sample forms the first W.

use super::swap::apply_pairwise;
use super::{State, Step, StepKind, VariantOn, steps};
use crate::backend::{Marks, Reduction, mark};
use crate::error::Result;

/// The sparse re-weighted FW variant.
#[derive(Default)]
pub struct SparseFw {
    /// The active vectors W (in order of activation).
    working: Vec<usize>,
    in_w: Vec<bool>,
    /// The inactive vector to activate in the coming step.
    activate: Option<usize>,
}

impl SparseFw {
    /// A fresh sparse FW.
    pub fn new(_params: &super::SolverParams) -> Self {
        SparseFw::default()
    }

    fn join(&mut self, i: usize) {
        if !self.in_w[i] {
            self.in_w[i] = true;
            self.working.push(i);
        }
    }
}

impl<'a> VariantOn<dyn Marks + 'a> for SparseFw {
    fn prepare(&mut self, _be: &mut (dyn Marks + 'a)) {}

    fn open(&mut self, state: &State, be: &mut (dyn Marks + 'a)) -> Result<(Reduction, f64, bool)> {
        if self.in_w.is_empty() {
            self.in_w = vec![false; be.len()];
            be.fill_marks(mark::LOW)?;
            let init: Vec<usize> = state.alpha.indices().to_vec();
            for &i in &init {
                self.join(i);
            }
            let marks: Vec<(usize, u8)> = init.iter().map(|&i| (i, mark::MID)).collect();
            be.set_marks(&marks)?;
        }
        let mut red = be.reduce(&state.alpha)?;
        let mr = be.reduce_marked(0.0)?;
        let (mut s, mut g_s) = mr.mid;
        self.activate = None;
        let violator = mr.low.0 != usize::MAX && mr.low.1 < 0.0;
        if violator {
            self.activate = Some(mr.low.0);
            let (i, gi) = mr.low;
            if gi < g_s || (gi == g_s && i < s) {
                (s, g_s) = (i, gi);
            }
        }
        red.s = s;
        red.g_s = g_s;
        let gap = if red.v == usize::MAX {
            0.0
        } else {
            (red.g_v - g_s).max(0.0)
        };
        Ok((red, gap, !violator))
    }

    fn step(
        &mut self,
        state: &mut State,
        red: &Reduction,
        be: &mut (dyn Marks + 'a),
    ) -> Result<Step> {
        let activated = self.activate.take();
        if let Some(i) = activated {
            self.join(i);
            be.set_marks(&[(i, mark::MID)])?;
        }
        let (s, v) = (red.s, red.v);
        let mut step = if v == usize::MAX || v == s {
            Step {
                kind: StepKind::Swap,
                size: 0.0,
            }
        } else {
            let (lambda, _) = steps::pairwise(
                red.g_s,
                red.g_v,
                be.q_diag(s),
                be.q_diag(v),
                be.q(s, v),
                state.alpha.get(v),
            );
            if lambda > 0.0 {
                apply_pairwise(state, be, s, v, lambda)?
            } else {
                Step {
                    kind: StepKind::Swap,
                    size: 0.0,
                }
            }
        };
        if activated.is_some() {
            step.kind = StepKind::Activate;
        }
        Ok(step)
    }

    fn certify_over(&self) -> Option<Vec<usize>> {
        Some(self.working.clone())
    }
}
