//! Core Vector Machine (the baseline of Frandi, Gasparo, Lodi, Ñanculef, Sartori, *Training
//! Support Vector Machines Using Frank-Wolfe Optimization Methods*, IJPRAI 2013, after Tsang,
//! Kwok, Cheung's CVM; docs/METHODS.md, Core Vector Machine).
//!
//! Bădoiu–Clarkson on the same Q: a core set C, initially the support of the starting point.
//! Each outer iteration the backend's full reduction names the farthest point
//! s = argmin_i g_i (the point whose ball distance κ − 2g_s + 2f is largest); the solver's
//! stop rule (`--stop gap` or `--stop meb`) is tested on it; otherwise s joins C and the QP
//! restricted to C is re-solved, warm-started from the current α:
//!
//! ```text
//! repeat:  s' = argmin_{i∈C} g_i,   Δ_C = 2f − g_{s'} ≤ tol  → done
//!          v  = the active j maximising the exact pairwise decrease (second-order choice)
//!          λ  = clip((g_v − g_s') / (Q_s's' + Q_vv − 2Q_s'v), 0, α_v)
//!          α_s' += λ, α_v −= λ,   g_C += λ(Q[C,s'] − Q[C,v])
//! ```
//!
//! The inner steps keep g on C only, on the host, with the core block Q_CC stored on the host
//! (f32, grown by one row and column per added point from the column entries Q[C, s] the
//! backend returns — it computes and caches the column on the device): an inner solve needs no
//! device round trip. When it ends, the change of α is applied to the full gradient in one
//! [`Columns::update_many`](crate::backend::Columns::update_many); an outer iteration is thus one column, one gather of g on C, and
//! one batched update. The inner tolerance
//! is a tenth of the outer one, so a farthest point already in C (an inexact inner solve)
//! always makes progress. One outer iteration is one "iteration" in the counts; the inner
//! steps are what the FW variants avoid.

use super::{State, Step, StepKind, Variant, steps};
use crate::backend::{Reduction, Solvable};
use crate::error::Result;

/// Inner pairwise steps per outer iteration at most.
const MAX_INNER: usize = 100_000;

/// The CVM variant.
pub struct Cvm {
    eps: f64,
    rel_eps: f64,
    core: Vec<usize>,
    /// Position in `core`, or u32::MAX.
    pos: Vec<u32>,
    g: Vec<f64>,
    /// Q_CC by rows (row k: Q[core[k], core[..]]), f32.
    qcc: Vec<Vec<f32>>,
    col: Vec<f64>,
    delta: Vec<f64>,
    /// Inner steps taken so far (diagnostics).
    pub inner_steps: u64,
}

impl Cvm {
    /// A CVM with the solver's tolerances.
    pub fn new(params: &super::SolverParams) -> Self {
        Cvm {
            eps: params.eps,
            rel_eps: params.rel_eps(),
            core: Vec::new(),
            pos: Vec::new(),
            g: Vec::new(),
            qcc: Vec::new(),
            col: Vec::new(),
            delta: Vec::new(),
            inner_steps: 0,
        }
    }

    /// Adds point i to the core set, extending Q_CC by its column.
    fn add(&mut self, i: usize, be: &mut dyn Solvable) -> Result<()> {
        if self.pos[i] != u32::MAX {
            return Ok(());
        }
        self.pos[i] = self.core.len() as u32;
        self.core.push(i);
        let n = self.core.len();
        self.col.resize(n, 0.0);
        be.column_entries(i, &self.core, &mut self.col)?;
        for (row, &q) in self.qcc.iter_mut().zip(&self.col) {
            row.push(q as f32);
        }
        self.qcc.push(self.col.iter().map(|&q| q as f32).collect());
        Ok(())
    }
}

impl Variant for Cvm {
    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step> {
        if self.pos.is_empty() {
            self.pos = vec![u32::MAX; be.len()];
            for &i in state.alpha.indices() {
                self.add(i, be)?;
            }
        }
        self.add(red.s, be)?;
        let n = self.core.len();
        self.g.resize(n, 0.0);
        self.delta.clear();
        self.delta.resize(n, 0.0);
        be.gather(&self.core, &mut self.g)?;
        let tol = 0.1 * self.eps.min(self.rel_eps * red.alpha_g.abs());
        let mut two_f = red.alpha_g;
        let mut taken = 0usize;
        for _ in 0..MAX_INNER {
            // s' = argmin over C (lowest index on ties)
            let mut s = 0;
            for k in 1..n {
                let (a, b) = (self.g[k], self.g[s]);
                if a < b || (a == b && self.core[k] < self.core[s]) {
                    s = k;
                }
            }
            if two_f - self.g[s] <= tol {
                break;
            }
            let js = self.core[s];
            let qs = &self.qcc[s];
            let q_ss = qs[s] as f64;
            // v: the active vertex with the largest exact pairwise decrease
            let (mut v, mut best) = (usize::MAX, 0.0);
            let mut lam_v = 0.0;
            #[allow(clippy::needless_range_loop)] // core set position k indexes five arrays
            for k in 0..n {
                let a = state.alpha.get(self.core[k]);
                if a <= 0.0 || k == s || self.g[k] <= self.g[s] {
                    continue;
                }
                let q_jj = self.qcc[k][k] as f64;
                let (lam, dec) = steps::pairwise(self.g[s], self.g[k], q_ss, q_jj, qs[k] as f64, a);
                if dec > best {
                    best = dec;
                    v = k;
                    lam_v = lam;
                }
            }
            if v == usize::MAX || lam_v <= 0.0 {
                break;
            }
            let jv = self.core[v];
            let qv = &self.qcc[v];
            let av = state.alpha.get(jv);
            let a_s = state.alpha.get(js);
            // A step too small to change α in f64 changes nothing: the inner problem is solved
            // as far as the arithmetic allows (ill-conditioned kernels would otherwise spin
            // through MAX_INNER no-op steps per outer iteration). Tiny but real steps still
            // count: near a 1e-8 gap every decrease is below f64's resolution of f.
            if a_s + lam_v == a_s && lam_v < av && av - lam_v == av {
                break;
            }
            state.alpha.set(js, a_s + lam_v);
            if lam_v >= av {
                state.alpha.remove(jv);
            } else {
                state.alpha.set(jv, av - lam_v);
            }
            for k in 0..n {
                self.g[k] += lam_v * (qs[k] as f64 - qv[k] as f64);
            }
            self.delta[s] += lam_v;
            self.delta[v] -= lam_v;
            two_f = state
                .alpha
                .iter()
                .map(|(i, a)| a * self.g[self.pos[i] as usize])
                .sum();
            taken += 1;
        }
        self.inner_steps += taken as u64;
        let cols: Vec<(usize, f64)> = self
            .core
            .iter()
            .zip(&self.delta)
            .filter(|(_, d)| **d != 0.0)
            .map(|(&j, &d)| (j, d))
            .collect();
        be.update_many(1.0, &cols)?;
        Ok(Step {
            kind: StepKind::Core,
            size: taken as f64,
        })
    }
}
