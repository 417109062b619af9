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

use super::{
    Observer, Progress, SolveResult, SolverParams, StopReason, StopRule, YieldCheck, init,
    solve_from, stop_rule_met,
};
use crate::active::ActiveSet;
use crate::backend::{BackendStats, CpuConfig, Device};
use crate::error::Result;
use crate::problem::Problem;
use std::time::Instant;

/// Shrinking settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShrinkParams {
    /// ρ: points with α_i = 0 and g_i ≥ (1 + ρ)·2f are set aside.
    pub margin: f64,
    /// The working set holds at least this many points (the lowest gradients).
    pub min_size: usize,
    /// Problems with fewer points are solved without rounds (read by [`crate::train`]; this
    /// module's [`solve`] always runs them). Below 10⁵ points shrinking does not pay (ijcnn1,
    /// w8a, a9a: the column, not the pass over g, is the iteration's cost there) and moves the
    /// loosely converged default solution around as much as a new seed does; on larger sets
    /// such as KDD99-binary (395,216 points) it saves a good part of the run.
    pub min_points: usize,
}

/// Where a run by rounds stands when its last round has ended: what [`RoundsEnd::result`]
/// turns into the run's result (one process's rounds and a distributed run's alike).
pub(crate) struct RoundsEnd {
    pub alpha: ActiveSet,
    pub iterations: u64,
    /// 2f and the gap of the last exact pass.
    pub two_f: f64,
    pub gap: f64,
    /// Whether the exact stop rule holds.
    pub met: bool,
    pub start: Instant,
    /// Time spent in exact passes (reported apart from training).
    pub pass: std::time::Duration,
    pub backend_stats: BackendStats,
    pub stats: ShrinkStats,
}

impl RoundsEnd {
    /// The run's result after its last round `r` (whose stop it keeps, unless `r` converged
    /// while the exact rule does not hold: stalled); the observers see its end (the rounds'
    /// own ends stop at [`Offset`]).
    pub(crate) fn result(
        self,
        params: &SolverParams,
        r: &SolveResult,
        observers: &mut [&mut dyn Observer],
    ) -> SolveResult {
        let stop = if r.stop == StopReason::Converged && !self.met {
            StopReason::Stalled
        } else {
            r.stop
        };
        let result = SolveResult {
            warm: None,
            alpha: self.alpha,
            iterations: self.iterations,
            f: r.f,
            gap: r.gap,
            certified_f: params.certify.then_some(0.5 * self.two_f),
            certified_gap: params.certify.then_some(self.gap),
            stop,
            seconds: self.start.elapsed().saturating_sub(self.pass).as_secs_f64(),
            certify_seconds: self.pass.as_secs_f64(),
            stats: self.backend_stats,
            shrink: Some(self.stats),
            rho: None,
        };
        for o in observers.iter_mut() {
            o.finish(&result);
        }
        result
    }
}

/// [`ShrinkParams::min_points`] by default.
pub const SHRINK_MIN_POINTS: usize = 100_000;

/// The working-set solver shrinks from this many points on whatever `min_points` says above
/// it: its outer iteration sweeps all m gradients for q columns, and with the round's columns
/// carried over (not computed again) the rounds pay on sets such as ijcnn1 (49,990 points) and
/// w8a, and leave a9a (32,561, no point set aside at ρ = 0.5) unchanged.
pub const WS_MIN_POINTS: usize = 20_000;

impl ShrinkParams {
    /// Whether a problem of `m` points runs by rounds with `alg`.
    pub fn applies(&self, alg: super::Algorithm, m: usize) -> bool {
        let min = if alg == super::Algorithm::Ws {
            self.min_points.min(WS_MIN_POINTS)
        } else {
            self.min_points
        };
        applies_to(alg) && m >= min
    }
}

impl Default for ShrinkParams {
    fn default() -> Self {
        ShrinkParams {
            margin: 0.5,
            min_size: 2000,
            min_points: SHRINK_MIN_POINTS,
        }
    }
}

/// What the rounds did (printed with the run's summary).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ShrinkStats {
    /// Rounds on a working set (1 when the first one converged on the whole set).
    pub rounds: u32,
    /// |W| in the first round.
    pub first_size: usize,
    /// |W| in the last round.
    pub last_size: usize,
    /// Points in the problem.
    pub m: usize,
    /// The smallest |W|.
    pub smallest: usize,
    /// Times W was made smaller during the run.
    pub shrinks: u32,
    /// Exact passes over all points that found the stop rule unmet (each added points to W).
    pub rebuilds: u32,
    /// Seconds in those passes.
    pub rebuild_seconds: f64,
}

impl ShrinkStats {
    /// Counts a round on a working set of `n` points.
    pub(crate) fn round(&mut self, n: usize) {
        self.rounds += 1;
        if self.rounds == 1 {
            self.first_size = n;
            self.smallest = n;
        }
        self.smallest = self.smallest.min(n);
        self.last_size = n;
    }
}

/// Adds to W the support of α, the points with g_i < (1 + `margin`)·2f, and, while W is
/// smaller than `min_size`, the lowest remaining g. Returns how many joined.
fn grow(in_w: &mut [bool], g: &[f64], alpha: &ActiveSet, margin: f64, sp: &ShrinkParams) -> usize {
    let two_f: f64 = alpha.iter().map(|(i, a)| a * g[i]).sum();
    let threshold = (1.0 + margin) * two_f;
    let mut added = 0;
    for &i in alpha.indices() {
        if !in_w[i] {
            in_w[i] = true;
            added += 1;
        }
    }
    for (i, &gi) in g.iter().enumerate() {
        if !in_w[i] && gi < threshold {
            in_w[i] = true;
            added += 1;
        }
    }
    let size = in_w.iter().filter(|&&w| w).count();
    let want = sp.min_size.min(g.len());
    if size < want {
        let mut rest: Vec<(f64, usize)> = (0..g.len())
            .filter(|&i| !in_w[i])
            .map(|i| (g[i], i))
            .collect();
        let k = want - size;
        rest.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for &(_, i) in &rest[..k] {
            in_w[i] = true;
        }
        added += k;
    }
    added
}

/// The rebuild's [`grow`] (margin [`REBUILD_MARGIN`]), with the points it adds pinned (they
/// stay in W: the rounds cannot cycle).
fn grow_pinned(
    in_w: &mut [bool],
    pinned: &mut [bool],
    g: &[f64],
    alpha: &ActiveSet,
    sp: &ShrinkParams,
) -> usize {
    let before = in_w.to_vec();
    let added = grow(in_w, g, alpha, REBUILD_MARGIN, sp);
    pin_added(&before, in_w, pinned);
    added
}

/// Pins the points in W now (`in_w`) that were not before (`before`).
pub(crate) fn pin_added(before: &[bool], in_w: &[bool], pinned: &mut [bool]) {
    for (p, (&now, &was)) in pinned.iter_mut().zip(in_w.iter().zip(before)) {
        if now && !was {
            *p = true;
        }
    }
}

/// W = the support of α and the points of lowest `est` outside it (ties to the lower index),
/// `size` points in all (every point when `size` ≥ m).
fn first_working_set(in_w: &mut [bool], est: &[f64], alpha: &ActiveSet, size: usize) {
    for &i in alpha.indices() {
        in_w[i] = true;
    }
    let mut rest: Vec<(f64, usize)> = (0..est.len())
        .filter(|&i| !in_w[i])
        .map(|i| (est[i], i))
        .collect();
    let k = size.saturating_sub(alpha.len()).min(rest.len());
    if k == 0 {
        return;
    }
    rest.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for &(_, i) in &rest[..k] {
        in_w[i] = true;
    }
}

/// The exact pass over every point that closes a round: one process computes it itself, a
/// distributed run collectively (each rank its own rows).
pub(crate) trait ExactPasses {
    /// The certified (f, gap) of α, leaving in `g` the gradient Qα of every point the pass
    /// computed on the way (exact, or within the certification's screen where it applies):
    /// the rebuild of the set-aside gradients when the run goes on.
    fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<(f64, f64)>;
}

/// One process's exact passes: each brought forward from the last where α changed little
/// since ([`crate::backend::exact::certify_incremental`]), else the full pass
/// ([`crate::backend::exact::certify_with_gradient`]: screened where it can be).
struct Local<'p, 'a> {
    prob: &'p Problem<'a>,
    /// The last pass, which the next one brings forward.
    last: Option<crate::backend::exact::Certified>,
}

impl ExactPasses for Local<'_, '_> {
    fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<(f64, f64)> {
        g.resize(self.prob.len(), 0.0);
        let (f, gap, _) =
            crate::backend::exact::certify_incremental(self.prob, alpha, &mut self.last, g);
        Ok((f, gap))
    }
}

/// The bookkeeping of a run by rounds that outlives each round.
pub(crate) struct Rounds {
    pub alpha: ActiveSet,
    pub iterations: u64,
    pub start: Instant,
    pub backend_stats: BackendStats,
    pub stats: ShrinkStats,
    /// Consecutive rebuilds that brought no point back into W.
    pub idle: u32,
}

impl Rounds {
    /// A run of `m` points by rounds, started at `start` from `alpha`.
    pub(crate) fn new(alpha: ActiveSet, m: usize, start: Instant) -> Self {
        Rounds {
            alpha,
            iterations: 0,
            start,
            backend_stats: BackendStats::default(),
            stats: ShrinkStats {
                m,
                ..Default::default()
            },
            idle: 0,
        }
    }

    /// A round's settings: no certification (the rounds' exact pass certifies), and what is
    /// left of the iteration and time limits `elapsed` into the run.
    pub(crate) fn round_params(
        &self,
        params: &SolverParams,
        elapsed: std::time::Duration,
    ) -> SolverParams {
        SolverParams {
            certify: false,
            max_iter: params.max_iter.saturating_sub(self.iterations),
            time_limit: params.time_limit.map(|t| t.saturating_sub(elapsed)),
            ..params.clone()
        }
    }

    /// After a round that yielded to shrink W: `g` takes the gradient the yield check gathered
    /// on W's rows (that of the α the round ended with); returns the smaller W.
    pub(crate) fn shrunk(
        &mut self,
        g: &mut [f64],
        rows: &[usize],
        gw: &[f64],
        smaller: Option<Vec<bool>>,
    ) -> Vec<bool> {
        for (&i, &v) in rows.iter().zip(gw) {
            g[i] = v;
        }
        self.stats.shrinks += 1;
        smaller.expect("a yield carries the smaller set")
    }

    /// Counts round `r`'s iterations and work and takes its α, the round's point k (the p-th
    /// entry of its support) being point `at(p, k)` of the whole problem.
    pub(crate) fn took(&mut self, r: &SolveResult, at: impl Fn(usize, usize) -> usize) {
        self.iterations += r.iterations;
        self.backend_stats.add(&r.stats);
        self.alpha = ActiveSet::new(self.stats.m);
        for (p, (k, a)) in r.alpha.iter().enumerate() {
            self.alpha.set(at(p, k), a);
        }
    }

    /// The exact pass that closes round `r`: the certification, which leaves the whole
    /// gradient in `g`. The run ends with it (`Some(result)`) when the round stopped on
    /// something other than convergence, the stop rule holds, or twice in a row every point
    /// that breaks the rule was in W already (W converged on a gradient that drifted from the
    /// exact one: the arithmetic cannot do better). Otherwise (`None`) the caller grows W
    /// from `g`.
    pub(crate) fn close(
        &mut self,
        exact: &mut dyn ExactPasses,
        g: &mut Vec<f64>,
        r: &SolveResult,
        params: &SolverParams,
        kappa: f64,
        observers: &mut [&mut dyn Observer],
    ) -> Result<Option<SolveResult>> {
        let t = Instant::now();
        let (f, gap) = exact.certify(&self.alpha, g)?;
        let two_f = 2.0 * f;
        let pass = t.elapsed();
        let met = stop_rule_met(params.stop, params.eps, params.rel_eps, gap, two_f, kappa);
        if r.stop != StopReason::Converged || met || self.idle >= 2 {
            let end = RoundsEnd {
                alpha: std::mem::replace(&mut self.alpha, ActiveSet::new(0)),
                iterations: self.iterations,
                two_f,
                gap,
                met,
                start: self.start,
                pass,
                backend_stats: std::mem::take(&mut self.backend_stats),
                stats: std::mem::take(&mut self.stats),
            };
            return Ok(Some(end.result(params, r, observers)));
        }
        self.stats.rebuilds += 1;
        self.stats.rebuild_seconds += pass.as_secs_f64();
        Ok(None)
    }
}

/// Passes each observer the progress with the iterations and seconds of earlier rounds
/// added, so a run reads as one.
pub(crate) struct Offset<'o, 'b> {
    pub(crate) inner: &'o mut [&'b mut dyn Observer],
    pub(crate) iter: u64,
    pub(crate) seconds: f64,
}

impl Observer for Offset<'_, '_> {
    fn observe(&mut self, p: &Progress) {
        let q = Progress {
            iter: p.iter + self.iter,
            seconds: p.seconds + self.seconds,
            ..*p
        };
        for o in self.inner.iter_mut() {
            o.observe(&q);
        }
    }
}

/// Runs `params.algorithm` (an FW variant or CVM) on `prob` by working-set rounds on
/// `device` (see the module documentation).
pub fn solve(
    prob: &Problem<'_>,
    device: &Device,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: &ShrinkParams,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    params.check()?;
    let start = Instant::now();
    let m = prob.len();
    let kappa = match params.stop {
        StopRule::Gap => 0.0,
        StopRule::Meb => super::check_meb_kernel(prob).map(|()| prob.q_diag(0))?,
    };
    let (alpha, warm, mut g, mut in_w) = starting_point(prob, device, cpu, params, sp)?;
    // Points brought back by a rebuild stay in W: the rounds cannot cycle.
    let mut pinned = vec![false; m];
    let mut run = Rounds::new(alpha, m, start);
    // The last round's column cache restricted to the next W (after a shrink): the next round
    // starts with the columns computed so far instead of computing them again.
    let mut carried: Option<crate::backend::ColumnExport> = None;
    let mut exact = Local { prob, last: None };
    loop {
        let rows: Vec<usize> = (0..m).filter(|&i| in_w[i]).collect();
        let n = rows.len();
        run.stats.round(n);
        // The round's problem: W's rows (the whole problem when W is everything).
        let sub;
        let sub_prob;
        let (round_prob, round_dev) = if n == m {
            (prob, device.clone())
        } else {
            sub = prob.data.subset(&rows);
            sub_prob = prob.restricted(&sub, &rows)?;
            (&sub_prob, device.restrict(&rows))
        };
        // The round starts from the gradient the last one ended with (`g` holds it on W's
        // rows): exact after a rebuild, the backend's own after a shrink.
        let (start_w, start_g) = on_rows(&run.alpha, &g, &rows, m);
        let elapsed = run.start.elapsed();
        let round_params = run.round_params(params, elapsed);
        // Every CHECK_EVERY iterations: would the rule set enough points aside to pay for a
        // new backend? Then hand back, with the smaller set.
        let mut gw = vec![0.0; n];
        let mut smaller: Option<Vec<bool>> = None;
        let mut check = shrink_check(&rows, &pinned, params, sp, &mut gw, &mut smaller);
        let r = {
            let mut be = round_dev.backend_reusing(round_prob, cpu, carried.take())?;
            let mut off = Offset {
                inner: &mut *observers,
                iter: run.iterations,
                seconds: elapsed.as_secs_f64(),
            };
            let mut obs: [&mut dyn Observer; 1] = [&mut off];
            let r = solve_from(
                round_prob,
                be.as_mut(),
                &round_params,
                &mut obs,
                Some((start_w, Some(start_g))),
                Some(YieldCheck {
                    every: check_every(params.algorithm),
                    check: &mut check,
                }),
            )?;
            drop(check);
            if r.stop == StopReason::Yielded
                && let Some(mask) = &smaller
            {
                let keep: Vec<usize> = (0..n).filter(|&k| mask[rows[k]]).collect();
                carried = be.export_columns(&keep);
            } else if r.stop == StopReason::Converged {
                // No column survives a grown W, but the cache's memory does.
                carried = be.export_columns(&[]);
            }
            r
        };
        run.took(&r, |_, k| rows[k]);
        if r.stop == StopReason::Yielded {
            in_w = run.shrunk(&mut g, &rows, &gw, smaller.take());
            continue;
        }
        // The exact pass over every point: the certification, and the rebuild of the set-aside
        // gradients when the run goes on.
        if let Some(mut result) = run.close(&mut exact, &mut g, &r, params, kappa, observers)? {
            result.warm = warm;
            return Ok(result);
        }
        let added = grow_pinned(&mut in_w, &mut pinned, &g, &run.alpha, sp);
        run.idle = if added == 0 { run.idle + 1 } else { 0 };
    }
}

/// Whether a W of `n` points may shrink now: larger than the minimum size, and the gap within
/// [`CLOSE`] times what the stop rule asks (LIBSVM likewise reconsiders its shrinking near the
/// end).
pub(crate) fn worth_checking(
    n: usize,
    sp: &ShrinkParams,
    params: &SolverParams,
    red: &crate::backend::Reduction,
) -> bool {
    let target = params.eps.min(params.rel_eps * red.alpha_g.abs());
    n > sp.min_size && !(red.alpha_g - red.g_s > CLOSE * target)
}

/// The rounds' yield check: once the gap is within [`CLOSE`] times what the stop rule asks
/// (LIBSVM likewise reconsiders its shrinking near the end), gathers W's gradient into `gw`
/// and yields when [`smaller_set`] gives a smaller W (left in `smaller`).
fn shrink_check<'c>(
    rows: &'c [usize],
    pinned: &'c [bool],
    params: &'c SolverParams,
    sp: &'c ShrinkParams,
    gw: &'c mut [f64],
    smaller: &'c mut Option<Vec<bool>>,
) -> impl FnMut(
    &super::State,
    &crate::backend::Reduction,
    &mut dyn crate::backend::Backend,
) -> Result<bool>
+ 'c {
    let (n, m) = (rows.len(), pinned.len());
    let all: Vec<usize> = (0..n).collect();
    move |state, red, be| {
        if !worth_checking(n, sp, params, red) {
            return Ok(false);
        }
        be.gather(&all, gw)?;
        *smaller = smaller_set(gw, rows, &state.alpha, pinned, red.alpha_g, sp, m);
        Ok(smaller.is_some())
    }
}

/// The run's start: α (warm-started or the initial vertex), the warm start's report, α's
/// gradient (on the first W's rows) and the first W.
#[allow(clippy::type_complexity)]
fn starting_point(
    prob: &Problem<'_>,
    device: &Device,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: &ShrinkParams,
) -> Result<(
    ActiveSet,
    Option<super::warm::WarmStats>,
    Vec<f64>,
    Vec<bool>,
)> {
    let m = prob.len();
    let (alpha, warm, estimate) = if super::warm::applies(params, m) {
        let (a, w, est) = super::warm::start(prob, device, cpu, params, Some(*sp))?;
        (a, Some(w), Some(est))
    } else {
        let a = init::initial_alpha(prob, params.init_size, params.seed, params.eps);
        (a, None, None)
    };
    let mut g = vec![0.0; m];
    let mut in_w = vec![false; m];
    match estimate {
        // The first W from the subsample's margins, and α's gradient on W alone: the points
        // the subsample puts far outside the margin are never computed against α's support
        // unless the first round's certification says they matter. The warm start's
        // gradient need not be exact (the rounds' exact passes follow): in f32 where the
        // screen applies, twice as fast as the f64 product.
        Some(est) => {
            let size = sp.min_size.max((FIRST_W * alpha.len() as f64) as usize);
            first_working_set(&mut in_w, &est, &alpha, size);
            let rows: Vec<usize> = (0..m).filter(|&i| in_w[i]).collect();
            let mut gw = vec![0.0; rows.len()];
            if !crate::backend::exact::screened_gradient_rows(prob, &alpha, &rows, &mut gw) {
                crate::backend::exact::gradient_on_rows(prob, &alpha, &rows, &mut gw);
            }
            for (&i, v) in rows.iter().zip(gw) {
                g[i] = v;
            }
        }
        None => {
            crate::backend::exact::full_gradient(prob, &alpha, &mut g);
            grow(&mut in_w, &g, &alpha, sp.margin, sp);
        }
    }
    Ok((alpha, warm, g, in_w))
}

/// The smaller W the shrinking rule gives (as marks over all m points), or None when it would
/// keep more than [`SHRINK_WHEN`] of the current one: the points of W (`rows`, gradients
/// `gw`) in α's support, brought back by a rebuild (`pinned`) or below (1 + ρ)·2f, and the
/// lowest others up to the minimum size.
fn smaller_set(
    gw: &[f64],
    rows: &[usize],
    alpha: &ActiveSet,
    pinned: &[bool],
    two_f: f64,
    sp: &ShrinkParams,
    m: usize,
) -> Option<Vec<bool>> {
    let n = rows.len();
    let threshold = (1.0 + sp.margin) * two_f;
    let keep = |k: usize| gw[k] < threshold || alpha.contains(k) || pinned[rows[k]];
    let kept = (0..n).filter(|&k| keep(k)).count();
    if (kept.max(sp.min_size) as f64) > SHRINK_WHEN * n as f64 {
        return None;
    }
    let mut mask = vec![false; m];
    let mut missing = sp.min_size.saturating_sub(kept);
    for k in 0..n {
        if keep(k) {
            mask[rows[k]] = true;
        }
    }
    if missing > 0 {
        let mut rest: Vec<(f64, usize)> =
            (0..n).filter(|&k| !keep(k)).map(|k| (gw[k], k)).collect();
        missing = missing.min(rest.len());
        rest.select_nth_unstable_by(missing - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for &(_, k) in &rest[..missing] {
            mask[rows[k]] = true;
        }
    }
    Some(mask)
}

/// α and its gradient `g` restricted to the rows of W (ascending), numbered as W's points.
fn on_rows(alpha: &ActiveSet, g: &[f64], rows: &[usize], m: usize) -> (ActiveSet, Vec<f64>) {
    let start_g: Vec<f64> = rows.iter().map(|&i| g[i]).collect();
    let mut start_w = ActiveSet::new(rows.len());
    let mut pos = vec![u32::MAX; m];
    for (k, &i) in rows.iter().enumerate() {
        pos[i] = k as u32;
    }
    for (i, a) in alpha.iter() {
        start_w.set(pos[i] as usize, a);
    }
    (start_w, start_g)
}

/// A warm-started run's first working set: the starting support and the points of lowest
/// estimated gradient (the subsample's margins), this many times the support in all.
pub(crate) const FIRST_W: f64 = 1.5;
/// What a rebuild adds to W besides the support: the points with g_i < 2f, which break the
/// optimality condition g_i ≥ 2f (the margin ρ of the shrinking rule is for points W keeps,
/// not for points it takes back). Adding every point below (1 + ρ)·2f instead took 253,000 of
/// KDD99's points into W for 27 more iterations; a point that comes close later is brought in
/// by the next rebuild, which costs little ([`crate::backend::exact::certify_incremental`]).
pub(crate) const REBUILD_MARGIN: f64 = 0.0;

/// The working set shrinks only while the gap is within this factor of the stop rule's.
pub(crate) const CLOSE: f64 = 10.0;
/// Iterations between the checks for a smaller working set.
pub(crate) const CHECK_EVERY: u64 = 100;
/// A smaller working set is taken when it keeps at most this fraction of the current one.
pub(crate) const SHRINK_WHEN: f64 = 0.8;

/// Iterations between ws's checks: its outer iteration does the work of about q single steps,
/// and a check (W's gradient gathered and tested against the rule) is a pass over W of its
/// own, a fair part of an iteration's host work.
pub(crate) const WS_CHECK_EVERY: u64 = 4;

/// Iterations between the checks for a smaller working set: [`CHECK_EVERY`], or
/// [`WS_CHECK_EVERY`] for ws.
pub(crate) fn check_every(alg: super::Algorithm) -> u64 {
    if alg == super::Algorithm::Ws {
        WS_CHECK_EVERY
    } else {
        CHECK_EVERY
    }
}

/// True for the algorithms the rounds apply to: the five FW variants, ws and CVM (sparse FW
/// and SimpleSVM keep sets of their own).
pub fn applies_to(alg: super::Algorithm) -> bool {
    use super::Algorithm::*;
    matches!(alg, Fw | Mfw | Swap | Swap2 | Partan | Ws | Cvm)
}

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
        let mut in_w = vec![false; 6];
        first_working_set(&mut in_w, &est, &alpha, 2);
        assert_eq!(in_w, [false, true, false, false, false, true]);
        let mut in_w = vec![false; 6];
        first_working_set(&mut in_w, &est, &alpha, 3);
        assert_eq!(in_w, [false, true, false, true, false, true]);
        let mut in_w = vec![false; 6];
        first_working_set(&mut in_w, &est, &alpha, 10);
        assert!(in_w.iter().all(|&w| w));
    }
}
