//! Working-set Frank–Wolfe: pairwise steps on a block of q kernel columns per outer iteration.
//!
//! The per-iteration variants pay one kernel column and one sweep over all m gradients for
//! every step. Here an outer iteration
//!
//! 1. picks a working set W of q points from the Frank–Wolfe candidates of the whole problem:
//!    the global FW vertex s = argmin g and away vertex v = argmax_{α>0} g first, then the
//!    lowest gradients over all points (toward vertices) and the points of the support from
//!    which a pairwise step to s decreases f most, (g_v − g_s)²/(Q_ss + Q_vv − 2Q_sv) (away
//!    vertices: the second-order choice of LIBSVM's working sets with s fixed; the highest
//!    gradients on a GPU, where s's column costs a round trip), alternately,
//!    after the previous W's support vectors (whose columns are still cached; at most q/2 of
//!    them, those the previous inner solve moved first);
//! 2. forms the q×q block Q_WW on the host ([`Columns::block`](crate::backend::Columns::block)): W's columns in batched
//!    passes over the data, or, where the backend defers them, the cached ones read and only
//!    W's entries of the others computed;
//! 3. solves the problem restricted to W — α outside W fixed, Σ_{i∈W} α_i unchanged, α ≥ 0 —
//!    with SWAP-2o steps on the block: s' = argmin_{W} g, v' = the point of W ∩ A with the
//!    largest exact pairwise decrease, λ = clip((g_v' − g_s')/(Q_s's' + Q_v'v' − 2Q_s'v'), 0,
//!    α_v'), g_W += λ(Q[W,s'] − Q[W,v']), until the pairwise gap on W, max_{W∩A} g −
//!    min_W g, is a tenth of what it was (or a tenth of the outer stop rule's gap) — in
//!    whole-block passes that vectorize ([`block_steps`]);
//! 4. updates every g_i once: g += Σ_{j∈W} Δα_j Q[:, j] ([`Columns::update_many`](crate::backend::Columns::update_many)),
//!    computing in that pass the columns the block deferred, for the points whose α moved.
//!
//! Each inner step is a pairwise Frank–Wolfe step of the full problem (d = e_s' − e_v', both
//! vertices of the simplex, exact line search) whose vertices are chosen over W instead of over
//! all points, so f decreases monotonically and α stays on the simplex; the outer stop rule is
//! the duality gap of the whole problem, as for every variant. With the simplex's single
//! equality constraint and no upper bounds, this is the decomposition scheme of SMO-type
//! solvers (ThunderSVM's batched working sets, LIBSVM's second-order choice) on the CVM form.
//!
//! **Working-set size.** q = `--ws-size` when given; otherwise the power of two nearest above
//! m/512, between 64 (256 on a hardware GPU: [`crate::backend::Hints::ws_floor`]) and 1024, and never more
//! than m or half the columns the backend can hold at once. An outer iteration has O(m) work
//! besides its columns (the reduction, the selection of W, the update's sweep over g); q ∝ m
//! keeps that a fixed share of the columns' cost. Of q = 64, 256 and 1024, sets of
//! 30,000–50,000 points (a9a, w8a, ijcnn1) train fastest at 64 on the CPU, and KDD99 (395,216
//! points) trains faster at 1024 than at 64. On a GPU each outer iteration also waits for two
//! round trips, and its columns cost little: there 256 trains a9a and KDD99 fastest.
//!
//! Where most points are support vectors (|A| ≥ 2m/3, checked every outer iteration) the CPU
//! takes q = [`Q_MANY_SV`] = 32 whatever m. Every point then moves with every other, a large
//! block's inner solve buys little progress per column, and each column applied costs a pass
//! over all m rows of g: the total of columns applied falls as q does (covtype's first 50,000
//! rows, 86 % support vectors: 192,000 columns applied at q = 128, 109,000 at 32), while the
//! O(m) work per outer iteration sets the floor. covtype's 464,810 points converge in 275 s at
//! q = 32, where q = 1024 had not reached the stop rule after 540 s (docs/BENCHMARKS.md).

use super::{State, Step, StepKind, Variant, block_steps};
use crate::backend::{LoopSettings, Reduction, Solvable};
use crate::error::Result;

/// The command line's default `--rel-eps` for ws: the duality gap at most a tenth of 2f. On
/// a9a, ijcnn1, w8a and KDD99 the test accuracy then lies within 0.1 point of the converged
/// model's (see docs/METHODS.md, "The default stop").
pub const REL_EPS: f64 = 0.1;

/// Smallest and largest automatic working-set sizes.
pub const Q_MIN: usize = 64;
/// See [`Q_MIN`] (the backends' largest block, [`crate::backend::MAX_BLOCK`]).
pub const Q_MAX: usize = crate::backend::MAX_BLOCK;
/// The automatic q on a backend without a floor (the CPU) while most points are support
/// vectors: at least [`MANY_SV_NUM`]/[`MANY_SV_DEN`] of them (see the module's doc).
pub const Q_MANY_SV: usize = 32;
/// See [`Q_MANY_SV`].
pub const MANY_SV_NUM: usize = 2;
/// See [`Q_MANY_SV`].
pub const MANY_SV_DEN: usize = 3;

/// The working-set variant (owns its buffers: an outer iteration allocates nothing once warm).
pub struct WorkingSet {
    /// Fixed size, or 0 for the automatic rule.
    fixed: usize,
    eps: f64,
    rel_eps: f64,
    /// Current W (points), and the previous one's buffer.
    w: Vec<usize>,
    prev: Vec<usize>,
    /// Membership marks of the points (m bytes).
    mark: Vec<bool>,
    qww: Vec<f64>,
    gw: Vec<f64>,
    aw: Vec<f64>,
    a0: Vec<f64>,
    low: Vec<(f64, usize)>,
    /// The best away candidates over A as (score, i), lowest first, and (q, the bound) of the
    /// last choice.
    high: Vec<(f64, usize)>,
    high_bound: (usize, f64),
    cols: Vec<(usize, f64)>,
    /// The away candidates' buffers (for a backend that does not score them in place; Q_ii
    /// of this backend's points: a variant lives for one solve).
    away: crate::backend::AwayScratch,

    /// The inner solve's buffers.
    inner: block_steps::Workspace,
    /// The run's iteration cap, and the reduction a device batch ended at (the next
    /// iteration opens with it instead of a reduction of its own).
    max_iter: u64,
    device_red: Option<Reduction>,
    /// The stop rule is the duality gap's (the one the device loop tests).
    gap_rule: bool,
    /// Inner steps taken so far (diagnostics).
    pub inner_steps: u64,
    /// Sum of |W| over outer iterations (diagnostics).
    pub sizes: u64,
}

impl WorkingSet {
    /// A working-set solver with the solver's tolerances and `--ws-size` (0 = automatic).
    pub fn new(params: &super::SolverParams) -> Self {
        WorkingSet {
            fixed: params.ws_size,
            eps: params.eps,
            rel_eps: params.rel_eps(),
            w: Vec::new(),
            prev: Vec::new(),
            mark: Vec::new(),
            qww: Vec::new(),
            gw: Vec::new(),
            aw: Vec::new(),
            a0: Vec::new(),
            low: Vec::new(),
            high: Vec::new(),
            high_bound: (0, f64::NEG_INFINITY),
            cols: Vec::new(),
            away: Default::default(),

            inner: block_steps::Workspace::default(),
            max_iter: params.max_iter,
            device_red: None,
            gap_rule: params.stop == crate::stop::StopRule::Gap,
            inner_steps: 0,
            sizes: 0,
        }
    }

    /// q for this outer iteration (see the module's doc); `floor` = the backend's smallest
    /// automatic q ([`Backend::ws_floor`]), `support` = |A|.
    fn size(&self, m: usize, capacity: usize, floor: usize, support: usize) -> usize {
        let q = if self.fixed > 0 {
            self.fixed
        } else if floor == 0 && support * MANY_SV_DEN >= m * MANY_SV_NUM {
            Q_MANY_SV
        } else {
            (m / 512)
                .next_power_of_two()
                .clamp(floor.clamp(Q_MIN, Q_MAX), Q_MAX)
        };
        q.min(m).min((capacity / 2).saturating_sub(1).max(2)).max(1)
    }

    /// Picks W (see the module's doc): s and v, the previous W's support vectors (at most
    /// half of W; those whose α the last inner solve moved first), then toward and away
    /// candidates alternately.
    fn select(
        &mut self,
        state: &State,
        red: &Reduction,
        q: usize,
        be: &mut dyn Solvable,
    ) -> Result<()> {
        let m = be.len();
        if self.mark.len() != m {
            self.mark = vec![false; m];
        }
        let hints = be.hints();
        for &i in &self.w {
            self.mark[i] = false;
        }
        std::mem::swap(&mut self.w, &mut self.prev);
        let (old, mut w) = (&self.prev, std::mem::take(&mut self.w));
        w.clear();
        let take = |i: usize, w: &mut Vec<usize>, mark: &mut [bool]| {
            if w.len() < q && i < m && !mark[i] {
                mark[i] = true;
                w.push(i);
            }
        };
        take(red.s, &mut w, &mut self.mark);
        if red.v != usize::MAX {
            take(red.v, &mut w, &mut self.mark);
        }
        for i in kept(old, &self.aw, &self.a0, &|i| state.alpha.contains(i)) {
            if w.len() >= q / 2 {
                break;
            }
            take(i, &mut w, &mut self.mark);
        }
        be.lowest(q, &mut self.low)?;
        // Away candidates: where the backend reads entries locally, the points of A from which a
        // pairwise step to s decreases f most before clipping (`away_score`), read from s's
        // column (which W needs anyway), points with g_v ≤ g_s last; on a device, the highest
        // gradients (no round trip for the column).
        if hints.entries_are_local {
            // The toward candidates W takes next (see `AwayScratch::next`).
            self.away.next.clear();
            let unmarked = self.low.iter().map(|&(_, i)| i);
            let next = unmarked
                .filter(|&i| i < m && !self.mark[i])
                .take(q - w.len());
            self.away.next.extend(next);
            be.away_candidates(
                red.s,
                red.g_s,
                &state.alpha,
                q,
                &mut self.high_bound,
                &mut self.away,
                &mut self.high,
            )?;
        } else {
            let a = state.alpha.indices();
            self.gw.resize(a.len(), 0.0);
            be.gather(a, &mut self.gw)?;
            let gw = &self.gw;
            crate::backend::select_lowest_bounded(
                || gw.iter().zip(a).map(|(&g, &i)| (-g, i)),
                a.len(),
                q,
                &mut self.high_bound,
                &mut self.high,
            );
        }
        let (mut lo, mut hi) = (self.low.iter(), self.high.iter());
        while w.len() < q {
            let (x, y) = (lo.next(), hi.next());
            if x.is_none() && y.is_none() {
                break;
            }
            if let Some(&(_, i)) = x {
                take(i, &mut w, &mut self.mark);
            }
            if let Some(&(_, i)) = y {
                take(i, &mut w, &mut self.mark);
            }
        }
        self.w = w;
        Ok(())
    }
}

/// The previous W's points (`old`) that the next W keeps, in the order it takes them: the
/// support vectors (`support`) whose α the last inner solve moved (`aw[k]` ≠ `a0[k]`, W's α
/// after and before it) first, then the other support vectors, each in `old`'s order. A point
/// the block left alone sits at its optimum against the others; one that moved is likely to
/// move again, and its column is cached. Where `aw` and `a0` are not `old`'s (the first outer
/// iteration), every point counts as moved.
fn kept<'a>(
    old: &'a [usize],
    aw: &'a [f64],
    a0: &'a [f64],
    support: &'a impl Fn(usize) -> bool,
) -> impl Iterator<Item = usize> + 'a {
    let aligned = aw.len() == old.len() && a0.len() == old.len();
    let moved = move |k: usize| !aligned || aw[k] != a0[k];
    let first = (0..old.len()).filter(move |&k| moved(k) && support(old[k]));
    let then = (0..old.len()).filter(move |&k| !moved(k) && support(old[k]));
    first.chain(then).map(move |k| old[k])
}

/// Inner steps per outer iteration at most: this many per point of W, plus a floor.
const INNER_PER_POINT: usize = 50;
const INNER_FLOOR: usize = 1000;

impl Variant for WorkingSet {
    fn open(&mut self, state: &State, be: &mut dyn Solvable) -> Result<(Reduction, f64, bool)> {
        let red = match self.device_red.take() {
            Some(red) => red,
            None => be.reduce(&state.alpha)?,
        };
        Ok((red, red.alpha_g - red.g_s, true))
    }

    fn step(&mut self, state: &mut State, red: &Reduction, be: &mut dyn Solvable) -> Result<Step> {
        let m = be.len();
        let hints = be.hints();
        let q = self.size(m, hints.column_capacity, hints.ws_floor, state.alpha.len());
        // The device tests the duality-gap rule (`--stop gap`, the default) only.
        if let Some(dl) = be.device_loop().filter(|_| self.gap_rule) {
            let settings = LoopSettings {
                q,
                eps: self.eps,
                rel_eps: self.rel_eps,
                alpha_g: red.alpha_g,
                max_iterations: self.max_iter.saturating_sub(state.iter),
                batch: None,
            };
            let done = dl.run_batch(&mut state.alpha, &settings)?;
            self.inner_steps += done.inner_steps;
            self.sizes += done.sizes;
            self.device_red = Some(done.red);
            return Ok(Step {
                kind: StepKind::DeviceBatch,
                size: done.iterations as f64,
            });
        }
        self.select(state, red, q, be)?;
        let n = self.w.len();
        self.qww.resize(n * n, 0.0);
        self.gw.resize(n, 0.0);
        be.block(&self.w, &mut self.qww, &mut self.gw)?;
        self.aw.clear();
        self.aw.extend(self.w.iter().map(|&i| state.alpha.get(i)));
        self.a0.clone_from(&self.aw);
        // The pairwise gap on W at the start, and the outer rule's gap.
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for (&g, &a) in self.gw.iter().zip(&self.aw) {
            lo = lo.min(g);
            if a > 0.0 {
                hi = hi.max(g);
            }
        }
        let target = self.eps.min(self.rel_eps * red.alpha_g.abs());
        let tol = (0.1 * (hi - lo)).max(0.1 * target);
        let block = block_steps::Block {
            q: &self.qww,
            g: &mut self.gw,
            a: &mut self.aw,
            w: &self.w,
        };
        let taken = block_steps::solve(
            block,
            tol,
            INNER_PER_POINT * n + INNER_FLOOR,
            &mut self.inner,
        );
        self.inner_steps += taken as u64;
        self.sizes += n as u64;
        self.cols.clear();
        for k in 0..n {
            let d = self.aw[k] - self.a0[k];
            if d != 0.0 {
                let i = self.w[k];
                self.cols.push((i, d));
                state.alpha.set(i, self.aw[k]);
            }
        }
        be.update_many(1.0, &self.cols)?;
        Ok(Step {
            kind: StepKind::Block,
            size: taken as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W keeps the previous W's support vectors that its inner solve moved first, then the
    /// others, each in the previous W's order; without the last step's α, in that order alone.
    #[test]
    fn kept_points_are_the_moved_support_vectors_first() {
        let old = [7, 3, 9, 4, 1, 8];
        let a0 = [0.1, 0.0, 0.2, 0.3, 0.0, 0.5];
        let aw = [0.1, 0.2, 0.25, 0.3, 0.0, 0.4];
        // Point 1 (α = 0 after the solve) is not a support vector.
        let support = |i: usize| i != 1;
        let got: Vec<usize> = kept(&old, &aw, &a0, &support).collect();
        assert_eq!(got, [3, 9, 8, 7, 4]);
        let got: Vec<usize> = kept(&old, &[], &[], &support).collect();
        assert_eq!(got, [7, 3, 9, 4, 8]);
    }

    /// The automatic q: m/512 rounded up to a power of two within the backend's floor and
    /// Q_MAX, capped by m and the cache; `--ws-size` overrides the floor.
    #[test]
    fn working_set_size_follows_the_backends_floor() {
        let auto = WorkingSet::new(&crate::solver::SolverParams::default());
        assert_eq!(auto.size(32_561, usize::MAX, 0, 0), 64);
        assert_eq!(auto.size(32_561, usize::MAX, Q_MIN, 0), 64);
        assert_eq!(auto.size(32_561, usize::MAX, 256, 0), 256);
        assert_eq!(auto.size(395_216, usize::MAX, 256, 0), 1024);
        assert_eq!(auto.size(200_000, usize::MAX, 64, 0), 512);
        assert_eq!(auto.size(100, usize::MAX, 256, 0), 100);
        assert_eq!(auto.size(32_561, 300, 256, 0), 149);
        // Most points support vectors: Q_MANY_SV on the CPU, the floor's rule on a device.
        assert_eq!(auto.size(464_810, usize::MAX, 0, 310_000), Q_MANY_SV);
        assert_eq!(auto.size(464_810, usize::MAX, 0, 309_000), 1024);
        assert_eq!(auto.size(464_810, usize::MAX, 256, 400_000), 1024);
        let fixed = WorkingSet::new(&crate::solver::SolverParams {
            ws_size: 32,
            ..Default::default()
        });
        assert_eq!(fixed.size(32_561, usize::MAX, 256, 30_000), 32);
    }
}
