//! SWAP second order (SWAP-2o: Ñanculef, Frandi, Sartori, Allende, *A Novel Frank-Wolfe
//! Algorithm. Analysis and Applications to Large-Scale SVM Training*, 2014).
//!
//! Like [SWAP](super::swap), but the away vertex is the active j that maximises the exact
//! decrease of the pairwise step toward s, not merely the largest gradient:
//!
//! ```text
//! decrease(j) = λ_j(g_j − g_s) − ½λ_j²(Q_ss + Q_jj − 2Q_sj),
//! λ_j = clip((g_j − g_s) / (Q_ss + Q_jj − 2Q_sj), 0, α_j)
//! ```
//! It needs g and Q[s,·] restricted to the active set: the column of s, which the step computes
//! anyway, so the choice costs O(|A|) on the host. The best pairwise step is then compared with
//! the toward step, as in SWAP.

use super::fw::toward_step;
use super::swap::apply_pairwise;
use super::{State, Step, Variant, steps};
use crate::backend::{Reduction, Solvable};
use crate::error::Result;

/// The SWAP-2o variant (owns its host buffers so no iteration allocates once warm).
#[derive(Default)]
pub struct Swap2 {
    idx: Vec<usize>,
    g: Vec<f64>,
    qs: Vec<f64>,
}

impl Swap2 {
    /// The step with the best pairwise decrease found by each process over the points it
    /// holds ([`Ranks::fold_entries`](crate::backend::Ranks::fold_entries): a distributed run's partial sums), then g and Q[s, ·]
    /// of the winner alone.
    fn step_by_fold(
        &mut self,
        state: &mut State,
        red: &Reduction,
        be: &mut dyn Solvable,
    ) -> Result<Step> {
        let s = red.s;
        let q_ss = be.q_diag(s);
        let (idx, alpha) = (&self.idx, &state.alpha);
        let ask = crate::backend::FoldAsk {
            prev: false,
            col: Some(s),
            diag: true,
            min: false,
        };
        let fold = be.fold_entries(idx, ask, &mut |k, e| {
            let j = idx[k];
            if j == s || e.g <= red.g_s {
                return ([0.0; 2], None);
            }
            let (_, dec) = steps::pairwise(red.g_s, e.g, q_ss, e.qd, e.q, alpha.get(j));
            ([0.0; 2], (dec > 0.0).then_some(dec))
        })?;
        let (_, f_toward) = steps::toward(state.f, red.g_s, q_ss);
        if let Some((dec, j)) = fold.best
            && dec > state.f - f_toward
        {
            let (mut g, mut q) = ([0.0], [0.0]);
            be.gather(&[j], &mut g)?;
            be.column_entries(s, &[j], &mut q)?;
            let (lam, _) =
                steps::pairwise(red.g_s, g[0], q_ss, be.q_diag(j), q[0], state.alpha.get(j));
            if lam > 0.0 {
                return apply_pairwise(state, be, s, j, lam);
            }
        }
        toward_step(state, red, be)
    }
}

impl Variant for Swap2 {
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step> {
        let s = red.s;
        self.idx.clear();
        self.idx.extend_from_slice(state.alpha.indices());
        if be.hints().partial_sums {
            return self.step_by_fold(state, red, be);
        }
        let n = self.idx.len();
        self.g.resize(n, 0.0);
        self.qs.resize(n, 0.0);
        be.gather(&self.idx, &mut self.g)?;
        be.column_entries(s, &self.idx, &mut self.qs)?;
        let q_ss = be.q_diag(s);
        let (mut best_j, mut best_dec, mut best_lam) = (usize::MAX, 0.0, 0.0);
        for k in 0..n {
            let j = self.idx[k];
            if j == s || self.g[k] <= red.g_s {
                continue;
            }
            let (lam, dec) = steps::pairwise(
                red.g_s,
                self.g[k],
                q_ss,
                be.q_diag(j),
                self.qs[k],
                state.alpha.get(j),
            );
            if dec > best_dec || (dec == best_dec && dec > 0.0 && j < best_j) {
                best_j = j;
                best_dec = dec;
                best_lam = lam;
            }
        }
        let (_, f_toward) = steps::toward(state.f, red.g_s, q_ss);
        if best_j != usize::MAX && best_dec > state.f - f_toward && best_lam > 0.0 {
            apply_pairwise(state, be, s, best_j, best_lam)
        } else {
            toward_step(state, red, be)
        }
    }
}
