//! Working-set shrinking with an exact finish.
//!
//! Most points of a large problem never matter: at the optimum of the L2-SVM on the simplex
//! every point has g_i ≥ 2f* (the KKT condition; docs/METHODS.md), with equality on the
//! support vectors, and a point whose g_i stays well above 2f is never the FW vertex
//! argmin g and never enters α. The iterations therefore run on a working set W: the points
//! with α_i > 0 and those whose exact gradient is below (1 + ρ)·2f (ρ = `margin`, 0.5 by
//! default: a point set aside has a margin y_iF(x_i) + α_i/C at least 1.5 times the support
//! vectors'), at least `min_size` of them (the lowest g). This is the FW analogue of
//! LIBSVM's shrinking (Fan, Chen and Lin 2005, as in `Solver::do_shrinking`), with the same
//! safety net: when the run converges on W, the stop rule is tested on the whole set from an
//! exact certification of α ([`crate::backend::exact::certify_with_gradient`]), and if it
//! fails the gradient of every point is rebuilt from the same pass (exact on the support and
//! near the minimum, within the f32 screen's rigorous bound elsewhere), the points that break
//! the optimality condition (g_i < 2f) join W, pinned, and the run resumes from the same α.
//! Pinned points stay, so the rounds end; the last exact pass is the
//! certification, so the stop rule and the certified gap mean exactly what they mean without
//! shrinking.
//!
//! A warm-started run ([`super::warm`]) does not compute its starting gradient on every point:
//! its first W is the starting support and the points the subsample's solution puts closest
//! to the margin (`FIRST_W` = 1.5 times the support in all), and the first round's exact pass
//! brings in whatever that left out.
//!
//! Each round solves the L2-SVM restricted to W — the same quadratic on the simplex, with Q's
//! rows and columns outside W removed — on a backend built for W's rows (on a GPU, a view of
//! the data uploaded once when the device shares it), warm-started from α.

use super::rounds::{ExactPasses, Found, RoundCtx, RoundHost};
pub use super::rounds::{SHRINK_MIN_POINTS, ShrinkParams, ShrinkStats, WS_MIN_POINTS, applies_to};
use super::{Observer, SolveResult, SolverParams, StopReason, StopRule, init, solve_from};
use crate::active::ActiveSet;
use crate::backend::{Backends, ColumnExport, CpuConfig};
use crate::comm::{Comm, RowSlice, SelfComm};
use crate::error::Result;
use crate::problem::Problem;
use std::time::Instant;

/// W = the support of α and the points of lowest `est` outside it (ties to the lower index),
/// `size` points in all over every process (every point when `size` ≥ m); this process's
/// marks (rows `slice`) in `in_w`. Collective.
fn first_working_set(
    comm: &dyn Comm,
    slice: &RowSlice,
    in_w: &mut [bool],
    est: &[f64],
    alpha: &ActiveSet,
    size: usize,
) -> Result<()> {
    for &j in alpha.indices() {
        if slice.range().contains(&j) {
            in_w[j - slice.first] = true;
        }
    }
    let k = size.saturating_sub(alpha.len());
    if k == 0 {
        return Ok(());
    }
    let rest: Vec<(f64, usize)> = (0..est.len())
        .filter(|&i| !in_w[i])
        .map(|i| (est[i], slice.first + i))
        .collect();
    for j in super::rounds::lowest(comm, rest, k)? {
        in_w[j - slice.first] = true;
    }
    Ok(())
}

/// One process's rounds: each round's backend built for W's rows (on a GPU, a view of the data
/// uploaded once when the device shares it), reusing the last round's column cache; each exact
/// pass brought forward from the last where α changed little since
/// ([`crate::backend::exact::certify_incremental`]), else the full pass
/// ([`crate::backend::exact::certify_with_gradient`]: screened where it can be).
struct OneProcess<'p, 'a> {
    prob: &'p Problem<'a>,
    backends: &'p dyn Backends,
    cpu: CpuConfig,
    /// The last pass, which the next one brings forward.
    last: Option<crate::backend::exact::Certified>,
    /// The last round's column cache restricted to the next W (after a shrink): the next round
    /// starts with the columns computed so far instead of computing them again.
    carried: Option<ColumnExport>,
}

impl ExactPasses for OneProcess<'_, '_> {
    fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<Option<(f64, f64)>> {
        g.resize(self.prob.len(), 0.0);
        let (f, gap, _) =
            crate::backend::exact::certify_incremental(self.prob, alpha, &mut self.last, g);
        Ok(self.whole().then_some((f, gap)))
    }

    fn settle_below(&mut self, g: &mut [f64], level: f64, width: f64) -> Result<bool> {
        if let Some(c) = self.last.as_mut() {
            c.settle_below(self.prob, level, width, g);
        }
        Ok(self.whole())
    }
}

impl OneProcess<'_, '_> {
    /// Whether the pass just made ran whole; if the budget cut it, the state it left for the
    /// next pass to bring forward is dropped.
    fn whole(&mut self) -> bool {
        if crate::budget::current().cut() {
            self.last = None;
            return false;
        }
        true
    }
}

impl RoundHost for OneProcess<'_, '_> {
    fn round(
        &mut self,
        ctx: &RoundCtx<'_>,
        start: (ActiveSet, Vec<f64>),
        found: &mut Found,
        observers: &mut [&mut dyn Observer],
    ) -> Result<SolveResult> {
        let (rows, n) = (ctx.rows, ctx.round.total);
        // The round's problem: W's rows (the whole problem when W is everything).
        let sub;
        let sub_prob;
        let on_rows;
        let (round_prob, round_be): (&Problem<'_>, &dyn Backends) = if n == self.prob.len() {
            (self.prob, self.backends)
        } else {
            sub = self.prob.data.subset(rows);
            sub_prob = self.prob.restricted(&sub, rows)?;
            on_rows = self.backends.on_rows(rows);
            (&sub_prob, on_rows.as_ref())
        };
        let mut be = round_be.open(round_prob, self.cpu, self.carried.take())?;
        let mut check = ctx.check(found);
        let r = solve_from(
            round_prob,
            be.as_mut(),
            ctx.params,
            observers,
            Some((start.0, Some(start.1))),
            Some(ctx.yield_check(&mut check)),
        )?;
        drop(check);
        found.keep_gradient(ctx, self.prob.len(), &r, be.as_mut())?;
        if r.stop == StopReason::Yielded
            && let Some(mask) = &found.smaller
        {
            let keep: Vec<usize> = (0..n).filter(|&k| mask[rows[k]]).collect();
            self.carried = be.export_columns(&keep);
        } else if r.stop == StopReason::Converged {
            // No column survives a grown W, but the cache's memory does.
            self.carried = be.export_columns(&[]);
        }
        Ok(r)
    }
}

/// Runs `params.algorithm` (an FW variant or CVM) on `prob` by working-set rounds on
/// `backends` (see the module documentation).
pub fn solve(
    prob: &Problem<'_>,
    backends: &dyn Backends,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: &ShrinkParams,
    observers: &mut [&mut dyn Observer],
    sub: &super::warm::SubSolve<'_>,
) -> Result<SolveResult> {
    params.check()?;
    let start = Instant::now();
    let m = prob.len();
    let kappa = match params.stop {
        StopRule::Gap => 0.0,
        StopRule::Meb => super::check_meb_kernel(prob).map(|()| prob.q_diag(0))?,
    };
    let mut first = OneStart(super::warm::OneProcess {
        prob,
        backends,
        solve: sub,
    });
    let (alpha, warm, g, in_w) =
        match starting_point(&SelfComm, every_row(m), &mut first, params, sp)? {
            Start::Ready(s) => s,
            Start::Stopped(w) => return Ok(w.stopped_result(start)),
        };
    let mut host = OneProcess {
        prob,
        backends,
        cpu,
        last: None,
        carried: None,
    };
    let result = super::rounds::run(
        &SelfComm,
        every_row(m),
        &mut host,
        (alpha, g, in_w),
        kappa,
        start,
        params,
        sp,
        observers,
    )?;
    Ok(with_warm(result, warm))
}

/// A run's result after its warm start `warm`: reported with it, and the subsample's solution
/// instead where the run was stopped before it improved on it ([`super::warm::Warm::best_of`]).
pub(crate) fn with_warm(mut result: SolveResult, warm: Option<super::warm::Warm>) -> SolveResult {
    match warm {
        Some(w) => w.best_of(result),
        None => {
            result.warm = None;
            result
        }
    }
}

/// Where a run by rounds starts: α, the warm start (its report and the subsample's solution
/// to fall back on), α's gradient on this process's rows of the first W and the first W (this
/// process's marks); or, when the time limit or a stop request ended the warm start or the
/// first gradient pass, the warm start alone (the run ends with the subsample's solution).
pub(crate) enum Start {
    Ready((ActiveSet, Option<super::warm::Warm>, Vec<f64>, Vec<bool>)),
    Stopped(super::warm::Warm),
}

/// One process's slice: every row.
fn every_row(m: usize) -> RowSlice {
    RowSlice {
        first: 0,
        rows: m,
        total: m,
    }
}

/// What a run by rounds needs to find its start ([`starting_point`]) from the process(es)
/// running it, beyond its warm start's.
pub(crate) trait StartHost: super::warm::WarmHost {
    /// The cold start: the initial vertex's α (alike on every process) and its exact gradient
    /// on this process's rows. Collective.
    fn cold(&mut self, params: &SolverParams) -> Result<(ActiveSet, Vec<f64>)>;
}

/// One process's start: its warm start, and passes over its own problem.
struct OneStart<'p, 'a, 's>(super::warm::OneProcess<'p, 'a, 's>);

impl super::warm::WarmHost for OneStart<'_, '_, '_> {
    fn solve_subset(&mut self, rows: &[usize], params: &SolverParams) -> Result<SolveResult> {
        self.0.solve_subset(rows, params)
    }

    fn gradient(&mut self, alpha: &ActiveSet, g: &mut [f64]) -> Result<()> {
        self.0.gradient(alpha, g)
    }

    fn gradient_on_rows(
        &mut self,
        alpha: &ActiveSet,
        rows: &[usize],
        total: usize,
        out: &mut [f64],
    ) -> Result<()> {
        self.0.gradient_on_rows(alpha, rows, total, out)
    }

    fn inv_c(&self, i: usize) -> f64 {
        self.0.inv_c(i)
    }
}

impl StartHost for OneStart<'_, '_, '_> {
    fn cold(&mut self, params: &SolverParams) -> Result<(ActiveSet, Vec<f64>)> {
        let prob = self.0.prob;
        let alpha = init::initial_alpha(prob, params.init_size, params.seed, params.eps);
        let mut g = vec![0.0; prob.len()];
        crate::backend::exact::full_gradient(prob, &alpha, &mut g);
        Ok((alpha, g))
    }
}

/// The run's start (see [`Start`]) over the processes of `comm`, this one holding rows
/// `slice`: warm-started where [`super::warm::applies`], else from the initial vertex.
/// Collective.
pub(crate) fn starting_point(
    comm: &dyn Comm,
    slice: RowSlice,
    host: &mut dyn StartHost,
    params: &SolverParams,
    sp: &ShrinkParams,
) -> Result<Start> {
    let m = slice.total;
    let (alpha, mut warm, estimate, g) = if super::warm::applies(params, m) {
        let mut w = super::warm::start_over(comm, slice, host, params)?;
        if w.stats.stopped.is_some() {
            return Ok(Start::Stopped(w));
        }
        let a = std::mem::replace(&mut w.alpha, ActiveSet::new(0));
        let est = std::mem::take(&mut w.estimate);
        (a, Some(w), Some(est), vec![0.0; slice.rows])
    } else {
        let (a, g) = host.cold(params)?;
        (a, None, None, g)
    };
    let mut g = g;
    let mut in_w = vec![false; slice.rows];
    match estimate {
        // The first W from the subsample's margins, and α's gradient on W alone: the points
        // the subsample puts far outside the margin are never computed against α's support
        // unless the first round's certification says they matter. The warm start's
        // gradient need not be exact (the rounds' exact passes follow): in f32 where the
        // screen applies, twice as fast as the f64 product.
        Some(est) => {
            let share = warm.as_ref().map_or(0, |w| w.stats.share());
            let size = sp
                .min_size
                .max((FIRST_W * alpha.len() as f64) as usize)
                .max(share);
            first_working_set(comm, &slice, &mut in_w, &est, &alpha, size)?;
            let rows: Vec<usize> = (0..slice.rows).filter(|&i| in_w[i]).collect();
            let total = super::rounds::round_slice(comm, rows.len())?.total;
            let mut gw = vec![0.0; rows.len()];
            let pass = Instant::now();
            match warm.as_ref().and_then(|w| w.extension.as_ref()) {
                // The subsample's gradient is known: only the added points' part is a pass.
                Some(x) => {
                    host.gradient_on_rows(&x.added, &rows, total, &mut gw)?;
                    for (v, &i) in gw.iter_mut().zip(&rows) {
                        *v += x.scale * x.base[i];
                    }
                }
                // α is the subsample's solution, whose gradient the estimate is.
                None => {
                    for (v, &i) in gw.iter_mut().zip(&rows) {
                        *v = est[i];
                    }
                }
            }
            if let Some(w) = warm.as_mut() {
                w.stats.start_gradient_seconds = pass.elapsed().as_secs_f64();
            }
            for (&i, v) in rows.iter().zip(gw) {
                g[i] = v;
            }
            if super::warm::on_any(comm, crate::budget::current().cut())?
                && let Some(mut w) = warm.take()
            {
                w.stats.stopped = Some(super::rounds::cut_stop(StopReason::TimeLimit));
                return Ok(Start::Stopped(w));
            }
        }
        None => {
            super::rounds::grow(comm, &slice, &mut in_w, &g, &alpha, sp.margin, sp)?;
        }
    }
    Ok(Start::Ready((alpha, warm, g, in_w)))
}

/// A warm-started run's first working set: the starting support and the points of lowest
/// estimated gradient (the subsample's margins), this many times the support in all, and at
/// least the support the subsample's share predicts ([`super::warm::WarmStats::share`]):
/// where the start holds fewer points than that share (the support grows more slowly than
/// the points), W still covers where it would lie if it grew in proportion — a first round on
/// a W of the starting support alone overfits it, and the rebuild then brings back most of
/// the problem (w8a: 2,000 points at the start, 17,880 after two rebuilds, 0.32 s against
/// 0.26 s).
pub(crate) const FIRST_W: f64 = 1.5;

#[cfg(test)]
mod tests {
    use super::*;

    /// The first working set: the support, then the lowest estimates (ties to the lower
    /// index) up to the size; the whole set when the size reaches it.
    #[test]
    fn first_working_set_takes_the_support_and_the_lowest_estimates() {
        let est = [0.9, 0.1, 0.5, 0.3, 0.3, 2.0];
        let mut alpha = ActiveSet::new(6);
        alpha.set(5, 1.0);
        let first = |in_w: &mut [bool], size: usize| {
            first_working_set(&SelfComm, &every_row(6), in_w, &est, &alpha, size).unwrap()
        };
        let mut in_w = vec![false; 6];
        first(&mut in_w, 2);
        assert_eq!(in_w, [false, true, false, false, false, true]);
        let mut in_w = vec![false; 6];
        first(&mut in_w, 3);
        assert_eq!(in_w, [false, true, false, true, false, true]);
        let mut in_w = vec![false; 6];
        first(&mut in_w, 10);
        assert!(in_w.iter().all(|&w| w));
    }
}
