//! The working-set rounds, once for one process and for ranks.
//!
//! A run by rounds ([`crate::solver::shrink`] for the method) repeats: solve the problem
//! restricted to a working set W, yielding when a smaller W would pay; when a round converges,
//! one exact pass over every point certifies α or rebuilds the gradients set aside, and the
//! points that break the optimality condition join W, pinned. `run` is that loop, written
//! over [`Comm`]: each process holds the gradient, the working-set marks and the pinned marks
//! of its own rows ([`RowSlice`]), and what one process computes over all points is a
//! collective — 2f from the exactly gathered entries of A (in α's order), the size of W as a
//! sum of counts, the lowest gradients outside W as a selection over every rank's own lowest
//! under the same total order (value, then index). One process is [`SelfComm`] with the slice
//! of every row, where each collective is the identity; so a distributed run's rounds, iterates
//! and result are one process's, to the bit with f64 columns. What differs — the round's
//! backend (one process's, reusing the last round's column cache; a rank's partial sums) and
//! the exact passes — is a `RoundHost`.

use super::{Observer, Progress, SolveResult, SolverParams, StopReason, YieldCheck, stop_rule_met};
use crate::active::ActiveSet;
use crate::backend::{BackendStats, Solvable};
use crate::comm::Comm;
use crate::comm::RowSlice;
#[cfg(doc)]
use crate::comm::SelfComm;
use crate::error::Result;
use std::time::Instant;

/// What a run by rounds needs from the process(es) running it: a round on W's rows, and the
/// exact pass that closes it ([`ExactPasses`]).
pub(crate) trait RoundHost: ExactPasses {
    /// Solves `prob` (the whole problem's this process holds) restricted to W as `ctx` says,
    /// from `start` (α over W's points and its gradient on this process's rows of W); the
    /// yield check ([`shrink_check`]) leaves its findings in `found`.
    fn round(
        &mut self,
        ctx: &RoundCtx<'_>,
        start: (ActiveSet, Vec<f64>),
        found: &mut Found,
        observers: &mut [&mut dyn Observer],
    ) -> Result<SolveResult>;
}

/// One round's setting, the same on every process.
pub(crate) struct RoundCtx<'c> {
    pub comm: &'c dyn Comm,
    /// This process's rows in W (its own numbering, ascending).
    pub rows: &'c [usize],
    /// Where they stand among W's rows of all processes.
    pub round: RowSlice,
    /// This process's pinned marks (own numbering).
    pub pinned: &'c [bool],
    /// The round's settings ([`Rounds::round_params`]).
    pub params: &'c SolverParams,
    pub sp: &'c ShrinkParams,
}

impl RoundCtx<'_> {
    /// The yield check of a round on the backend it runs on.
    pub(crate) fn check<'c>(
        &'c self,
        found: &'c mut Found,
    ) -> impl FnMut(&super::State, &crate::backend::Reduction, &mut dyn Solvable) -> Result<bool> + 'c
    {
        shrink_check(self, &mut found.gw, &mut found.smaller)
    }

    /// A [`YieldCheck`] around `check`, every [`check_every`] iterations.
    pub(crate) fn yield_check<'a>(
        &self,
        check: &'a mut dyn FnMut(
            &super::State,
            &crate::backend::Reduction,
            &mut dyn Solvable,
        ) -> Result<bool>,
    ) -> YieldCheck<'a> {
        YieldCheck {
            every: check_every(self.params.algorithm()),
            check,
        }
    }
}

/// What a round's yield check found: this process's gradient on its rows of W when it last
/// checked, and the smaller W (marks over this process's rows) when it yielded.
#[derive(Default)]
pub(crate) struct Found {
    pub gw: Vec<f64>,
    pub smaller: Option<Vec<bool>>,
    /// The round's gradient on this process's rows of W where [`Found::keep_gradient`] kept
    /// it (the solver's own, read from its backend when the round ended).
    pub last_g: Option<Vec<f64>>,
}

impl Found {
    /// After a round that ended as `r` under `ctx` on `be` (`slice_total` points in all):
    /// keeps the backend's gradient on this process's rows where the run ends with this round
    /// and leaves it for the result ([`SolveResult::gradient`]): converged with every point in
    /// W, for a caller that asked for no certificate (a warm start's subsample).
    pub fn keep_gradient(
        &mut self,
        ctx: &RoundCtx<'_>,
        slice_total: usize,
        r: &SolveResult,
        be: &mut dyn crate::backend::Ranks,
    ) -> Result<()> {
        if !ctx.params.certify && r.stop == StopReason::Converged && ctx.round.total == slice_total
        {
            let mut g = Vec::new();
            be.gather_own(&mut g)?;
            self.last_g = Some(g);
        }
        Ok(())
    }
}

/// Runs the rounds from `alpha` (on every process), `g` (its gradient on this process's
/// rows: exact, or an estimate the first exact pass corrects) and the first W `in_w` (this
/// process's marks), this process holding rows `slice`; `kappa` is the stop rule's κ and
/// `start` when the run began. Collective.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    comm: &dyn Comm,
    slice: RowSlice,
    host: &mut dyn RoundHost,
    (alpha, mut g, mut in_w): (ActiveSet, Vec<f64>, Vec<bool>),
    kappa: f64,
    start: Instant,
    params: &SolverParams,
    sp: &ShrinkParams,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    // Points brought back by a rebuild stay in W: the rounds cannot cycle.
    let mut pinned = vec![false; slice.rows];
    let mut run = Rounds::new(alpha, slice.total, start);
    loop {
        // This process's rows in W, and where they stand among W's rows of all processes.
        let rows: Vec<usize> = (0..slice.rows).filter(|&i| in_w[i]).collect();
        let round = round_slice(comm, rows.len())?;
        run.stats.round(round.total);
        // The round starts from the gradient the last one ended with: exact after a rebuild,
        // the backend's own after a shrink.
        let start_w = round_alpha(comm, &run.alpha, (&slice, &round), &rows)?;
        let start_g: Vec<f64> = rows.iter().map(|&i| g[i]).collect();
        let elapsed = run.start.elapsed();
        let round_params = run.round_params(params, elapsed);
        let ctx = RoundCtx {
            comm,
            rows: &rows,
            round,
            pinned: &pinned,
            params: &round_params,
            sp,
        };
        let mut found = Found::default();
        let r = {
            let mut off = Offset {
                inner: &mut *observers,
                iter: run.iterations,
                seconds: elapsed.as_secs_f64(),
            };
            let mut obs: [&mut dyn Observer; 1] = [&mut off];
            host.round(&ctx, (start_w, start_g), &mut found, &mut obs)?
        };
        // Back to global numbering: each round point's owner knows its row.
        let global = from_owners(comm, &r.alpha, &round, |k| slice.first + rows[k])?;
        run.took(&r, |p, _| global[p]);
        if r.stop == StopReason::Yielded {
            in_w = run.shrunk(&mut g, &rows, &found.gw, found.smaller.take());
            continue;
        }
        // A caller that asks for no certificate (a warm start's subsample, `--no-certify`)
        // gets none where the exact pass would only certify: W held every point, none was set
        // aside to bring back. (On covtype's warm start, the passes over the 232,405- and
        // 116,203-point rungs' supports.)
        if !params.certify && r.stop == StopReason::Converged && round.total == slice.total {
            let mut result = run.end(None, true, None, Instant::now(), params, &r, observers);
            result.gradient = found.last_g.take();
            return Ok(result);
        }
        // The exact pass over every point: the certification, and the rebuild of the set-aside
        // gradients when the run goes on.
        if let Some(result) = run.close(host, &mut g, &r, params, kappa, observers)? {
            return Ok(result);
        }
        let before = in_w.clone();
        let added = grow(comm, &slice, &mut in_w, &g, &run.alpha, REBUILD_MARGIN, sp)?;
        pin_added(&before, &in_w, &mut pinned);
        run.idle = if added == 0 { run.idle + 1 } else { 0 };
    }
}

/// The exact g of α's points, in α's order (each from its owner). Collective.
pub(crate) fn gather_active(
    comm: &dyn Comm,
    alpha: &ActiveSet,
    slice: &RowSlice,
    g: &[f64],
) -> Result<Vec<f64>> {
    let mut ga: Vec<f64> = alpha
        .indices()
        .iter()
        .map(|&j| {
            if slice.range().contains(&j) {
                g[j - slice.first]
            } else {
                0.0
            }
        })
        .collect();
    comm.sum(&mut ga)?;
    Ok(ga)
}

/// The `k` lowest (value, global index) over every process's candidates `mine` (this
/// process's, global indices), under value-then-index order: the same `k` one process selects
/// from all of them. Returns the chosen global indices that are this process's. Collective.
pub(crate) fn lowest(comm: &dyn Comm, mut mine: Vec<(f64, usize)>, k: usize) -> Result<Vec<usize>> {
    let order = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    // Only this process's k lowest can be among the k lowest of all.
    if mine.len() > k && k > 0 {
        mine.select_nth_unstable_by(k - 1, order);
        mine.truncate(k);
    }
    if comm.size() == 1 {
        return Ok(mine.into_iter().take(k).map(|c| c.1).collect());
    }
    let own: std::collections::HashSet<usize> = mine.iter().map(|c| c.1).collect();
    let write = |buf: &mut Vec<u8>| {
        for &(v, i) in &mine {
            buf.extend_from_slice(&v.to_le_bytes());
            buf.extend_from_slice(&(i as u64).to_le_bytes());
        }
    };
    let read = |buf: &[u8], all: &mut Vec<(f64, usize)>| {
        for c in buf.chunks_exact(16) {
            let v = f64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
            let i = u64::from_le_bytes(c[8..].try_into().expect("8 bytes")) as usize;
            all.push((v, i));
        }
        buf.len().is_multiple_of(16)
    };
    let mut all = crate::comm::gather_parts(comm, "the lowest gradients", write, read)?;
    let k = k.min(all.len());
    if k == 0 {
        return Ok(Vec::new());
    }
    all.select_nth_unstable_by(k - 1, order);
    Ok(all[..k]
        .iter()
        .filter(|c| own.contains(&c.1))
        .map(|c| c.1)
        .collect())
}

/// Adds to this process's part of W its points of supp α, its points with
/// g_i < (1 + `margin`)·2f and its share of the lowest remaining g while W is smaller than
/// `min_size`. Returns how many joined over all processes. Collective.
pub(crate) fn grow(
    comm: &dyn Comm,
    slice: &RowSlice,
    in_w: &mut [bool],
    g: &[f64],
    alpha: &ActiveSet,
    margin: f64,
    sp: &ShrinkParams,
) -> Result<usize> {
    let ga = gather_active(comm, alpha, slice, g)?;
    let two_f: f64 = alpha.iter().zip(&ga).map(|((_, a), gi)| a * gi).sum();
    let threshold = (1.0 + margin) * two_f;
    let mut added = 0;
    for &j in alpha.indices() {
        if slice.range().contains(&j) && !in_w[j - slice.first] {
            in_w[j - slice.first] = true;
            added += 1;
        }
    }
    for (i, &gi) in g.iter().enumerate() {
        if !in_w[i] && gi < threshold {
            in_w[i] = true;
            added += 1;
        }
    }
    let mut counts = [added as f64, in_w.iter().filter(|&&w| w).count() as f64];
    comm.sum(&mut counts)?;
    let (mut added, size) = (counts[0] as usize, counts[1] as usize);
    let want = sp.min_size.min(slice.total);
    if size < want {
        let k = want - size;
        let rest: Vec<(f64, usize)> = (0..g.len())
            .filter(|&i| !in_w[i])
            .map(|i| (g[i], slice.first + i))
            .collect();
        for j in lowest(comm, rest, k)? {
            in_w[j - slice.first] = true;
        }
        added += k;
    }
    Ok(added)
}

/// For every point of α, a number its owner knows (`value(local index)`), on every process,
/// in α's order. Collective.
fn from_owners(
    comm: &dyn Comm,
    alpha: &ActiveSet,
    slice: &RowSlice,
    value: impl Fn(usize) -> usize,
) -> Result<Vec<usize>> {
    let mut v: Vec<f64> = alpha
        .indices()
        .iter()
        .map(|&j| {
            if slice.range().contains(&j) {
                value(j - slice.first) as f64
            } else {
                0.0
            }
        })
        .collect();
    comm.sum(&mut v)?;
    Ok(v.into_iter().map(|x| x as usize).collect())
}

/// This process's `rows` of a round's W as a slice of W's rows over all processes.
/// Collective.
pub(crate) fn round_slice(comm: &dyn Comm, rows: usize) -> Result<RowSlice> {
    let counts = comm.gather_all(rows as u64)?;
    Ok(RowSlice {
        first: counts[..comm.rank()].iter().map(|&c| c as usize).sum(),
        rows,
        total: counts.iter().map(|&c| c as usize).sum(),
    })
}

/// α in the round's numbering (each point's owner knows its place in W: its `rows`, slice
/// `round` of W). Collective.
fn round_alpha(
    comm: &dyn Comm,
    alpha: &ActiveSet,
    (slice, round): (&RowSlice, &RowSlice),
    rows: &[usize],
) -> Result<ActiveSet> {
    let mut pos = vec![usize::MAX; slice.rows];
    for (k, &i) in rows.iter().enumerate() {
        pos[i] = round.first + k;
    }
    let at = from_owners(comm, alpha, slice, |i| pos[i])?;
    let mut start_w = ActiveSet::new(round.total);
    for ((_, a), &k) in alpha.iter().zip(&at) {
        start_w.set(k, a);
    }
    Ok(start_w)
}

/// The rounds' yield check: once the gap is within [`CLOSE`] times the stop rule's (LIBSVM
/// likewise reconsiders its shrinking near the end), each process gathers its rows of W's
/// gradient into `gw`, and the processes agree on the smaller W (this process's marks left in
/// `smaller`) when the rule — the points in α's support, pinned, or below (1 + ρ)·2f, and the
/// lowest others up to the minimum size — keeps at most [`SHRINK_WHEN`] of W. Collective.
fn shrink_check<'c>(
    ctx: &'c RoundCtx<'_>,
    gw: &'c mut Vec<f64>,
    smaller: &'c mut Option<Vec<bool>>,
) -> impl FnMut(&super::State, &crate::backend::Reduction, &mut dyn Solvable) -> Result<bool> + 'c {
    let (comm, rows, pinned, round) = (ctx.comm, ctx.rows, ctx.pinned, ctx.round);
    let (params, sp) = (ctx.params, ctx.sp);
    let (n, n_own) = (round.total, pinned.len());
    move |state, red, be| {
        if !worth_checking(n, sp, params, red) {
            return Ok(false);
        }
        be.gather_own(gw)?;
        let threshold = (1.0 + sp.margin) * red.alpha_g;
        let keep = |k: usize| {
            gw[k] < threshold || state.alpha.contains(round.first + k) || pinned[rows[k]]
        };
        let mut kept = [(0..rows.len()).filter(|&k| keep(k)).count() as f64];
        comm.sum(&mut kept)?;
        let kept = kept[0] as usize;
        if (kept.max(sp.min_size) as f64) > SHRINK_WHEN * n as f64 {
            return Ok(false);
        }
        let mut mask = vec![false; n_own];
        for k in 0..rows.len() {
            if keep(k) {
                mask[rows[k]] = true;
            }
        }
        let missing = sp.min_size.saturating_sub(kept);
        if missing > 0 {
            let rest: Vec<(f64, usize)> = (0..rows.len())
                .filter(|&k| !keep(k))
                .map(|k| (gw[k], round.first + k))
                .collect();
            for j in lowest(comm, rest, missing)? {
                mask[rows[j - round.first]] = true;
            }
        }
        *smaller = Some(mask);
        Ok(true)
    }
}

/// Shrinking settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShrinkParams {
    /// ρ: points with α_i = 0 and g_i ≥ (1 + ρ)·2f are set aside.
    pub margin: f64,
    /// The working set holds at least this many points (the lowest gradients).
    pub min_size: usize,
    /// Problems with fewer points are solved without rounds (read by [`crate::train`]; this
    /// module's `solve` always runs them). Below 10⁵ points shrinking does not pay (ijcnn1,
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
    /// 2f and the gap of the last exact pass of α (None: the pass ran out of time).
    pub certified: Option<(f64, f64)>,
    /// Whether the exact stop rule holds.
    pub met: bool,
    /// Why the run ended, when not as its last round did (the exact pass ran out of time).
    pub stop: Option<StopReason>,
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
        let stop = match self.stop {
            Some(s) => s,
            None if r.stop == StopReason::Converged && !self.met => StopReason::Stalled,
            None => r.stop,
        };
        let certified = self.certified.filter(|_| params.certify);
        let result = SolveResult {
            warm: None,
            alpha: self.alpha,
            iterations: self.iterations,
            f: r.f,
            gap: r.gap,
            certified_f: certified.map(|c| 0.5 * c.0),
            certified_gap: certified.map(|c| c.1),
            stop,
            seconds: self.start.elapsed().saturating_sub(self.pass).as_secs_f64(),
            certify_seconds: self.pass.as_secs_f64(),
            stats: self.backend_stats,
            shrink: Some(self.stats),
            rho: None,
            gradient: None,
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

/// Pins the points in W now (`in_w`) that were not before (`before`).
pub(crate) fn pin_added(before: &[bool], in_w: &[bool], pinned: &mut [bool]) {
    for (p, (&now, &was)) in pinned.iter_mut().zip(in_w.iter().zip(before)) {
        if now && !was {
            *p = true;
        }
    }
}

/// The exact pass over every point that closes a round: one process computes it itself, a
/// distributed run collectively (each rank its own rows).
pub(crate) trait ExactPasses {
    /// The certified (f, gap) of α, leaving in `g` the gradient Qα of every point the pass
    /// computed on the way (exact, or within the certification's screen where it applies):
    /// the rebuild of the set-aside gradients when the run goes on. None when the thread's
    /// [`crate::budget`] ran out during the pass: `g` and the passes' own state are then of
    /// no use, and the run ends.
    fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<Option<(f64, f64)>>;

    /// After a certification the run goes on from (a rebuild): computes exactly every row of
    /// `g` the pass knew only within an interval reaching `level` (2f) and wider than `width`
    /// on either side (the gap the stop rule allows), so that the next pass can bring those
    /// rows forward exactly. Nothing where the passes keep no such intervals. False when the
    /// budget ran out on the way (the run then ends with the certification before it).
    fn settle_below(&mut self, _g: &mut [f64], _level: f64, _width: f64) -> Result<bool> {
        Ok(true)
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
        // A round stopped by the time limit or a request: the certification gets a short
        // budget of its own, and the model is not certified when it is not enough.
        let stopped = matches!(r.stop, StopReason::TimeLimit | StopReason::Interrupted);
        let grace = crate::budget::grace_after(params.time_limit);
        let certified = if stopped {
            crate::budget::grace(grace, || exact.certify(&self.alpha, g))?
        } else {
            crate::budget::extended(grace, || exact.certify(&self.alpha, g))?
        };
        let Some((f, gap)) = certified else {
            return Ok(Some(self.end(
                None,
                false,
                Some(cut_stop(r.stop)),
                t,
                params,
                r,
                observers,
            )));
        };
        let two_f = 2.0 * f;
        let met = stop_rule_met(params.stop, params.eps, params.rel_eps(), gap, two_f, kappa);
        if r.stop != StopReason::Converged || met || self.idle >= 2 {
            let mut end = self.end(Some((two_f, gap)), met, None, t, params, r, observers);
            // The pass left α's gradient on every row; a caller that asked for no certificate
            // (a warm start's subsample) reads its rows from it.
            if !params.certify {
                end.gradient = Some(std::mem::take(g));
            }
            return Ok(Some(end));
        }
        let width =
            crate::stop::allowed_gap(params.stop, params.eps, params.rel_eps(), two_f, kappa);
        if !crate::budget::extended(grace, || exact.settle_below(g, two_f, width))? {
            // α has not moved since the pass that certified it.
            let stop = Some(cut_stop(r.stop));
            return Ok(Some(self.end(
                Some((two_f, gap)),
                met,
                stop,
                t,
                params,
                r,
                observers,
            )));
        }
        self.stats.rebuilds += 1;
        self.stats.rebuild_seconds += t.elapsed().as_secs_f64();
        Ok(None)
    }

    /// The run's result after the exact pass begun at `t` (see [`RoundsEnd`]).
    #[allow(clippy::too_many_arguments)]
    fn end(
        &mut self,
        certified: Option<(f64, f64)>,
        met: bool,
        stop: Option<StopReason>,
        t: Instant,
        params: &SolverParams,
        r: &SolveResult,
        observers: &mut [&mut dyn Observer],
    ) -> SolveResult {
        let end = RoundsEnd {
            alpha: std::mem::replace(&mut self.alpha, ActiveSet::new(0)),
            iterations: self.iterations,
            certified,
            met,
            stop,
            start: self.start,
            pass: t.elapsed(),
            backend_stats: std::mem::take(&mut self.backend_stats),
            stats: std::mem::take(&mut self.stats),
        };
        end.result(params, r, observers)
    }
}

/// Why a run whose exact pass ran out of budget ended: the stop request, else the time limit
/// (`round`: how the round before it ended).
pub(crate) fn cut_stop(round: StopReason) -> StopReason {
    if round == StopReason::Interrupted || crate::interrupt::requested() {
        StopReason::Interrupted
    } else {
        StopReason::TimeLimit
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

/// Whether a W of `n` points may shrink now: larger than the minimum size, and the gap within
/// [`CLOSE`] times what the stop rule asks (LIBSVM likewise reconsiders its shrinking near the
/// end).
pub(crate) fn worth_checking(
    n: usize,
    sp: &ShrinkParams,
    params: &SolverParams,
    red: &crate::backend::Reduction,
) -> bool {
    let target = params.eps.min(params.rel_eps() * red.alpha_g.abs());
    n > sp.min_size && !(red.alpha_g - red.g_s > CLOSE * target)
}

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
    use crate::comm::SelfComm;

    /// A host whose rounds converge at once (α as given) and whose exact passes certify a gap
    /// the stop rule accepts, counting them.
    struct Counting {
        alpha: ActiveSet,
        passes: usize,
    }

    impl ExactPasses for Counting {
        fn certify(&mut self, _: &ActiveSet, g: &mut Vec<f64>) -> Result<Option<(f64, f64)>> {
            self.passes += 1;
            g.iter_mut().for_each(|v| *v = 1.0);
            Ok(Some((0.5, 0.0)))
        }
    }

    impl RoundHost for Counting {
        fn round(
            &mut self,
            ctx: &RoundCtx<'_>,
            _: (ActiveSet, Vec<f64>),
            _: &mut Found,
            _: &mut [&mut dyn Observer],
        ) -> Result<SolveResult> {
            // α over W's points (W's numbering).
            let mut alpha = ActiveSet::new(ctx.rows.len());
            for (k, &i) in ctx.rows.iter().enumerate() {
                if self.alpha.contains(i) {
                    alpha.set(k, self.alpha.get(i));
                }
            }
            Ok(SolveResult {
                alpha,
                iterations: 1,
                f: 0.5,
                gap: 0.0,
                certified_f: None,
                certified_gap: None,
                stop: StopReason::Converged,
                seconds: 0.0,
                certify_seconds: 0.0,
                stats: BackendStats::default(),
                shrink: None,
                warm: None,
                rho: None,
                gradient: None,
            })
        }
    }

    /// The exact pass closes a converged round unless the caller asks for no certificate and
    /// W held every point; with a point set aside it runs whatever the caller asks.
    #[test]
    fn the_exact_pass_runs_where_it_does_more_than_certify() {
        let m = 6;
        for (certify, whole, passes) in [(true, true, 1), (false, true, 0), (false, false, 1)] {
            let mut alpha = ActiveSet::new(m);
            alpha.set(1, 0.5);
            alpha.set(2, 0.5);
            let mut host = Counting {
                alpha: alpha.clone(),
                passes: 0,
            };
            let slice = RowSlice {
                first: 0,
                rows: m,
                total: m,
            };
            let in_w: Vec<bool> = (0..m).map(|i| whole || i != 4).collect();
            let params = SolverParams {
                certify,
                ..Default::default()
            };
            let r = run(
                &SelfComm,
                slice,
                &mut host,
                (alpha, vec![1.0; m], in_w),
                0.0,
                Instant::now(),
                &params,
                &ShrinkParams::default(),
                &mut [],
            )
            .unwrap();
            assert_eq!(host.passes, passes, "certify {certify}, W whole {whole}");
            assert_eq!(r.stop, StopReason::Converged);
            assert_eq!(r.certified_gap.is_some(), certify);
            assert_eq!(r.alpha.len(), 2);
        }
    }
}
