//! Warm start of the working-set solver on large problems.
//!
//! The cold start (20 random points solved exactly, [`super::init`]) leaves the outer
//! iterations to find every support vector a working set at a time; on data where most points
//! are support vectors that is most of the run. Here the problem restricted to a random tenth of
//! its points (a half under a deadline: [`LADDER`]) is solved first — by the same rules, so a
//! large problem warm-starts recursively — and its solution is extended to every point by the
//! L2-SVM's optimality condition: at the optimum every point with α_i > 0 has
//!
//! ```text
//! g_i = y_i F(x_i) + α_i / C_i = 2f,   so   α_i = C_i · (2f − y_i F(x_i))⁺,
//! ```
//!
//! with F(x) = Σ_j α_j y_j (k(x_j, x) + 1). The subsample's F and 2f give every other point's
//! α_i at once; the subsample's own points keep their α (the same numbers to within its gap),
//! and the whole is normalised onto the simplex. So α is the subsample's solution scaled plus
//! the added points ([`Extension`]), and its gradient is the pass that computed F, scaled, plus
//! a pass with the added points alone. The guess only sets where the run starts: the gradient is then
//! computed exactly from it, and the run stops on the whole problem's duality gap like any
//! other, so it reaches the same optimum (within the certified gaps) as a cold start.
//!
//! The ladder is also taken without a deadline where the tenth, once solved, holds two thirds of
//! its points or more as support vectors, or half of them on problems whose half warm-starts
//! itself (the tenth's solve is then left unused).
//!
//! Under a deadline each rung of that ladder is a model of its own, solved on twice the points
//! of the one before at about four times its cost where most points are support vectors: a run
//! stopped by its time limit returns the largest rung it reached, so the model improves
//! steadily with the time given, and each rung's extension costs one pass over its points with
//! the support of the rung below, not over every point with a small subsample's.

use super::{Algorithm, SolveResult, SolverParams, init};
use crate::active::ActiveSet;
use crate::backend::Backends;
use crate::comm::{Comm, RowSlice, SelfComm};
use crate::error::Result;
use crate::problem::Problem;
use std::time::Instant;

/// Smallest problem that warm-starts (below it the cold start's outer iterations are few).
pub const MIN_POINTS: usize = 20_000;
/// The subsample is one point in this many.
pub const FRACTION: usize = 10;
/// Under a deadline (a time limit, or a class pair's share of one) the subsample is one point
/// in this many instead: the warm start becomes a ladder of nested subsamples, each twice the
/// one below and a model of its own, so a run stopped by its deadline returns the largest rung
/// it reached and the model improves steadily with the time given. covtype's 464,810 points
/// under `--time-limit 60` gave 80.36 % test accuracy from its 232,405-point rung, where one
/// subsample of a tenth gave 79.63 % under limits of 60 and 180 s alike (docs/BENCHMARKS.md).
/// Without a deadline the ladder costs more than it saves on the sets where it was measured
/// (ijcnn1, a9a, w8a 15–35 % slower, KDD99 50 %), so a run that goes to the end keeps
/// [`FRACTION`].
pub const LADDER: usize = 2;

/// The subsample's share of the points for the calling thread's budget: [`LADDER`] under a
/// deadline or on a ladder chosen for many support vectors ([`start`]), else [`FRACTION`].
fn fraction() -> usize {
    if crate::budget::current().deadline().is_some() || ON_LADDER.with(|c| c.get()) {
        LADDER
    } else {
        FRACTION
    }
}

thread_local! {
    /// Set while a warm start climbs the ladder because its tenth held mostly support vectors:
    /// the rungs nested in it climb too.
    static ON_LADDER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`ON_LADDER`] set until dropped, then what it was.
struct Ladder(bool);

impl Ladder {
    fn climb() -> Ladder {
        Ladder(ON_LADDER.with(|c| c.replace(true)))
    }
}

impl Drop for Ladder {
    fn drop(&mut self) {
        ON_LADDER.with(|c| c.set(self.0));
    }
}

/// What the warm start did (reported with the run's summary).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WarmStats {
    /// Points of the subsample solved first, one in `ratio` of the problem's
    /// ([`FRACTION`] or [`LADDER`]).
    pub points: usize,
    /// The problem's points per subsample point.
    pub ratio: usize,
    /// Its iterations and its half's (their own warm starts' included).
    pub iterations: u64,
    /// Points with α_i > 0 in the extended start.
    pub support: usize,
    /// Support vectors of the subsample's nested half and of the subsample, and the cap on
    /// the extension they predict with the growth exponent e (`predicted_support`).
    pub half_support: usize,
    pub sub_support: usize,
    pub cap: usize,
    pub growth: f64,
    /// Seconds: the subsample's solve and the extension.
    pub seconds: f64,
    /// Seconds of the extended start's gradient over the first working set: the added points'
    /// pass ([`Extension`]; computed by the working-set rounds that follow the warm start; 0
    /// before them).
    pub start_gradient_seconds: f64,
    /// The subsample's objective f and duality gap as its solve last tracked them (the
    /// subsample's solution is a point of the whole problem's simplex with the same f).
    pub sub_f: f64,
    pub sub_gap: f64,
    /// Set when the time limit or a stop request ended the warm start before the extension
    /// (the start is then the subsample's solution, and the run ends with it).
    pub stopped: Option<super::StopReason>,
    /// The run went on from the start but was stopped before it improved on the subsample's
    /// solution, which is the result instead ([`Warm::best_of`]).
    pub fell_back: bool,
}

/// The extension keeps at most the support the whole problem is predicted to have from the
/// subsample's: s_sub · [`FRACTION`]^e, where e is the growth of the support between a nested
/// half of the subsample and the subsample itself, e = log₂(s_sub / s_half), within
/// [[`GROWTH_MIN`], 1]. A loosely solved F_sub (margins off by up to the gap) can put whole
/// clusters of near-duplicate points just under 2f_sub, all of which the optimum leaves out
/// (KDD99: 234,000 starting support vectors for 6,000 at the end), so the extension is
/// capped; and the subsample's share of support vectors overestimates the whole problem's
/// where that share falls as points are added, which a cap of s_sub · FRACTION (e = 1) does
/// not see (ijcnn1's support grows as points^0.76, a9a's, mostly margin errors, as
/// points^0.93). A support vector too many costs its column and the steps that take it out
/// again; one too few joins W when its gradient is among the lowest.
/// Returns (the cap, e).
#[cfg(test)]
fn predicted_support(sub: usize, half: usize) -> (usize, f64) {
    predicted_growth(sub, half, FRACTION as f64)
}

/// `predicted_support` for a subsample (support `sub`) with a nested half (support `half`),
/// extended to `outer` times its points: e = log₂(sub / half) within [[`GROWTH_MIN`], 1],
/// cap = sub · outer^e.
fn predicted_growth(sub: usize, half: usize, outer: f64) -> (usize, f64) {
    let e = (sub as f64 / half.max(1) as f64)
        .log2()
        .clamp(GROWTH_MIN, 1.0);
    ((sub as f64 * outer.powf(e)).ceil() as usize, e)
}

/// The smallest growth exponent `predicted_support` uses: below it the two counts say more
/// about their noise than about the data.
pub const GROWTH_MIN: f64 = 0.5;

impl WarmStats {
    /// The support the subsample's share of support vectors predicts: its support vectors
    /// times [`ratio`](Self::ratio) (the cap were the support to grow in proportion to the
    /// points).
    pub fn share(&self) -> usize {
        self.sub_support * self.ratio
    }
}

/// The at most `cap` points of largest positive `guess` (this process's rows `slice`) over
/// every process (the most violated margins; ties to the lower index), with their guesses, in
/// index order. Alike on every process. Collective.
fn extend(
    comm: &dyn Comm,
    slice: &RowSlice,
    guess: &[f64],
    cap: usize,
) -> Result<Vec<(usize, f64)>> {
    let mine: Vec<(f64, usize)> = guess
        .iter()
        .enumerate()
        .filter(|&(_, &v)| v > 0.0 && v.is_finite())
        .map(|(i, &v)| (-v, slice.first + i))
        .collect();
    let chosen = super::rounds::lowest(comm, mine, cap.max(1))?;
    let own: Vec<f64> = chosen
        .iter()
        .flat_map(|&j| [j as f64, guess[j - slice.first]])
        .collect();
    let mut kept: Vec<(usize, f64)> = crate::comm::all_gather(comm, &own)?
        .chunks_exact(2)
        .map(|c| (c[0] as usize, c[1]))
        .collect();
    kept.sort_unstable_by_key(|k| k.0);
    Ok(kept)
}

/// The extended start from the subsample's solution `placed` (on the simplex) and the points
/// `added` with their guesses (none of them in the subsample): α = (placed + Δ)/T with
/// T = Σ placed + Σ Δ, and Δ/T alone, the part whose gradient is still to compute. None when
/// nothing is added (or the guesses do not sum to a finite positive number): α is `placed`.
fn combine(placed: &ActiveSet, added: &[(usize, f64)]) -> Option<(ActiveSet, ActiveSet, f64)> {
    let sum: f64 = added.iter().map(|a| a.1).sum();
    let total = placed.iter().map(|(_, a)| a).sum::<f64>() + sum;
    if added.is_empty() || !(sum > 0.0 && total.is_finite()) {
        return None;
    }
    let mut all: Vec<(usize, f64)> = placed.iter().chain(added.iter().copied()).collect();
    all.sort_unstable_by_key(|a| a.0);
    let (mut alpha, mut delta) = (ActiveSet::new(placed.dim()), ActiveSet::new(placed.dim()));
    for (i, v) in all {
        alpha.set(i, v / total);
    }
    for &(i, v) in added {
        delta.set(i, v / total);
    }
    Some((alpha, delta, 1.0 / total))
}

/// Whether `local` holds on any process. Collective.
pub(crate) fn on_any(comm: &dyn Comm, local: bool) -> Result<bool> {
    Ok(comm.gather_all(u64::from(local))?.iter().any(|&v| v != 0))
}

/// True when `params` asks for a warm start and the problem of `m` points is large enough.
pub fn applies(params: &SolverParams, m: usize) -> bool {
    params.warm_start && params.algorithm() == Algorithm::Ws && m >= MIN_POINTS
}

/// A warm start: the extended α, what the warm start did, an estimate of α's gradient on
/// this process's points (all of them in one process), y_i F_sub(x_i) + α_i / C_i (the
/// subsample's margins: where a run by rounds can start its working set without the whole
/// gradient of α; the rounds' exact passes bring back any point it leaves out wrongly), and
/// the subsample's own solution on the whole problem's points (the model to fall back on when
/// a stopped run has not improved on it).
pub struct Warm {
    pub alpha: ActiveSet,
    pub stats: WarmStats,
    pub estimate: Vec<f64>,
    pub subsample: ActiveSet,
    /// How α extends the subsample's solution, where it adds points: α's gradient is then the
    /// subsample's, scaled, plus that of the added part alone.
    pub extension: Option<Extension>,
}

/// α = s·placed + Δ', placed the subsample's solution (`Warm::subsample`): so α's gradient
/// is g_i = s·(Q·placed + placed/C)_i + (Q·Δ' + Δ'/C)_i, and only the added points' part is
/// a kernel pass of its own (covtype: 182,000 added to 191,000 of the subsample's support
/// vectors, a third less than α's whole pass).
pub struct Extension {
    /// Δ': the added points with their weights in α.
    pub added: ActiveSet,
    /// s: the subsample's share of α's scale, 1/T.
    pub scale: f64,
    /// (Q·placed)_i + placed_i/C_i on this process's rows: the pass that chose the added
    /// points (an estimate in f32 where the screen applies).
    pub base: Vec<f64>,
}

/// What a warm start needs from the process(es) running it ([`start_over`]): the solve of a
/// subsample as training solves a problem, and a gradient pass over this process's rows.
/// One process's is [`start`]'s; ranks' is the distributed backend's (`crate::dist`).
pub(crate) trait WarmHost {
    /// The problem restricted to the points `rows` (global, ascending), solved by the same
    /// rules with `params`; α numbered over `rows`, alike on every process. Collective.
    fn solve_subset(&mut self, rows: &[usize], params: &SolverParams) -> Result<SolveResult>;
    /// g_i = (Qα)_i + α_i/C_i for every row of this process into `g` (an estimate in f32
    /// where a screen applies: the rounds' exact passes follow). Collective.
    fn gradient(&mut self, alpha: &ActiveSet, g: &mut [f64]) -> Result<()>;
    /// α's gradient on this process's `rows` (own numbering, ascending; `total` over all
    /// processes) into `out`: an estimate in f32 where the screen applies, else exact.
    /// Collective.
    fn gradient_on_rows(
        &mut self,
        alpha: &ActiveSet,
        rows: &[usize],
        total: usize,
        out: &mut [f64],
    ) -> Result<()>;
    /// 1/C_i of this process's row `i` (its own numbering).
    fn inv_c(&self, i: usize) -> f64;
}

/// One process's warm start: its subsamples solved by `solve` on `backends`.
pub(crate) struct OneProcess<'p, 'a, 's> {
    pub prob: &'p Problem<'a>,
    pub backends: &'p dyn Backends,
    pub solve: &'p SubSolve<'s>,
}

impl WarmHost for OneProcess<'_, '_, '_> {
    fn solve_subset(&mut self, rows: &[usize], params: &SolverParams) -> Result<SolveResult> {
        solve_subset(self.prob, rows, self.backends, params, self.solve)
    }

    fn gradient(&mut self, alpha: &ActiveSet, g: &mut [f64]) -> Result<()> {
        let all: Vec<usize> = (0..self.prob.len()).collect();
        if !crate::backend::exact::screened_gradient_rows(self.prob, alpha, &all, g) {
            crate::backend::exact::full_gradient(self.prob, alpha, g);
        }
        Ok(())
    }

    fn gradient_on_rows(
        &mut self,
        alpha: &ActiveSet,
        rows: &[usize],
        _total: usize,
        out: &mut [f64],
    ) -> Result<()> {
        if !crate::backend::exact::screened_gradient_rows(self.prob, alpha, rows, out) {
            crate::backend::exact::gradient_on_rows(self.prob, alpha, rows, out);
        }
        Ok(())
    }

    fn inv_c(&self, i: usize) -> f64 {
        self.prob.inv_c(i)
    }
}

/// The warm start of `prob` (see the module documentation): its subsample solved by `solve` on
/// `backends` and extended. When the time limit or a stop request
/// ends it first, α is the subsample's solution, [`WarmStats::stopped`] says why, and the
/// estimate is empty.
pub fn start(
    prob: &Problem<'_>,
    backends: &dyn Backends,
    params: &SolverParams,
    solve: &SubSolve<'_>,
) -> Result<Warm> {
    let mut host = OneProcess {
        prob,
        backends,
        solve,
    };
    let slice = RowSlice {
        first: 0,
        rows: prob.len(),
        total: prob.len(),
    };
    start_over(&SelfComm, slice, &mut host, params)
}

/// [`start`] over the processes of `comm`, this one holding rows `slice` of the problem
/// `host` solves: the same subsamples, the same extension, every choice made over all
/// processes' points as one process makes it over its own; the estimate is of this process's
/// rows. Collective.
pub(crate) fn start_over(
    comm: &dyn Comm,
    slice: RowSlice,
    host: &mut dyn WarmHost,
    params: &SolverParams,
) -> Result<Warm> {
    let t = Instant::now();
    let m = slice.total;
    let ratio = fraction();
    let mut rows = init::sample(m, m / ratio, params.seed);
    rows.sort_unstable();
    let sub_params = SolverParams {
        certify: false,
        ..params.clone()
    };
    let r = host.solve_subset(&rows, &sub_params)?;
    let mut placed = ActiveSet::new(m);
    for (k, a) in r.alpha.iter() {
        placed.set(rows[k], a);
    }
    let mut stats = WarmStats {
        points: rows.len(),
        ratio,
        iterations: r.iterations + r.warm.map_or(0, |w| w.iterations),
        sub_support: r.alpha.len(),
        support: r.alpha.len(),
        sub_f: r.f,
        sub_gap: r.gap,
        ..Default::default()
    };
    let stopped = |s: super::StopReason, stats: &mut WarmStats| {
        stats.stopped = Some(super::rounds::cut_stop(s));
        stats.seconds = t.elapsed().as_secs_f64();
    };
    if ended(comm, &r)? {
        stopped(r.stop, &mut stats);
        return Ok(Warm::unextended(placed, stats));
    }
    // Most of the tenth's points support vectors: the ladder instead. There each rung starts
    // from a support that is most of its points, and its rounds converge from it at q = 32
    // (covtype: the 232,405-point rung and the whole set to a 9.9 % gap in 228 s, against
    // 275 s from the tenth); where few points are support vectors the tenth costs less.
    if ratio == FRACTION && climbs(r.alpha.len(), rows.len(), m) {
        let _ladder = Ladder::climb();
        return start_over(comm, slice, host, params);
    }
    // The support's growth (see `predicted_support`) between a nested half and the
    // subsample: on a ladder the subsample's own warm start solved one, else it is solved now.
    let nested_support = match r.warm {
        Some(w) if w.stopped.is_none() && w.points > 0 && rows.len() / w.points == 2 => {
            w.sub_support
        }
        _ => {
            let mut half: Vec<usize> =
                init::sample(rows.len(), rows.len() / 2, params.seed ^ HALF_SEED)
                    .into_iter()
                    .map(|k| rows[k])
                    .collect();
            half.sort_unstable();
            let rh = host.solve_subset(&half, &sub_params)?;
            stats.iterations += rh.iterations + rh.warm.map_or(0, |w| w.iterations);
            if ended(comm, &rh)? {
                stopped(rh.stop, &mut stats);
                return Ok(Warm::unextended(placed, stats));
            }
            rh.alpha.len()
        }
    };
    // This process's rows of the subsample.
    let mut sampled = vec![false; slice.rows];
    for &j in &rows {
        if slice.range().contains(&j) {
            sampled[j - slice.first] = true;
        }
    }
    // The subsample's F on every point, g_i = y_i F(x_i) + α_i / C_i: in f32 where the screen
    // applies (the guess and the first W need no more; the rounds' exact passes follow), else
    // in f64; on the subsample's own rows its solve's gradient where it left one.
    let mut g = vec![0.0; slice.rows];
    let pass = Instant::now();
    let passed = subsample_gradient(comm, host, &placed, &sampled, r.gradient.as_deref(), &mut g)?;
    if on_any(comm, crate::budget::current().cut())? {
        stopped(super::StopReason::TimeLimit, &mut stats);
        return Ok(Warm::unextended(placed, stats));
    }
    let ga = super::rounds::gather_active(comm, &placed, &slice, &g)?;
    let two_f: f64 = placed.iter().zip(&ga).map(|((_, a), gi)| a * gi).sum();
    // The subsample's points keep their α (its solution's own margins give the same numbers
    // to within its gap); the guess picks the others.
    let guess: Vec<f64> = (0..slice.rows)
        .map(|i| {
            if sampled[i] {
                return 0.0;
            }
            let inv_c = host.inv_c(i);
            let yf = g[i] - placed.get(slice.first + i) * inv_c;
            ((two_f - yf) / inv_c).max(0.0)
        })
        .collect();
    let (predicted, growth) = predicted_growth(r.alpha.len(), nested_support, ratio as f64);
    // Under a deadline, at most the support whose first gradient pass (over about every
    // point, with the added points alone) takes half the time left, at the rate the pass
    // above ran (the slowest process's).
    let rate = (placed.len() * passed) as f64 / pass.elapsed().as_secs_f64().max(1e-6);
    let cap = crate::budget::current().deadline().map_or(predicted, |d| {
        let left = d.saturating_duration_since(Instant::now()).as_secs_f64();
        predicted.min(placed.len() + (AFFORD * left * rate / m as f64) as usize)
    });
    let cap = comm
        .gather_all(cap as u64)?
        .into_iter()
        .min()
        .map_or(cap, |c| c as usize);
    let added = if cap > placed.len() {
        extend(comm, &slice, &guess, cap - placed.len())?
    } else {
        Vec::new()
    };
    let (alpha, extension) = match combine(&placed, &added) {
        Some((alpha, added, scale)) => {
            let base = g.clone();
            (alpha, Some(Extension { added, scale, base }))
        }
        None => (placed.clone(), None),
    };
    for (i, gi) in g.iter_mut().enumerate() {
        let j = slice.first + i;
        *gi += (alpha.get(j) - placed.get(j)) * host.inv_c(i);
    }
    stats.half_support = nested_support;
    stats.cap = cap;
    stats.growth = growth;
    stats.support = alpha.len();
    stats.seconds = t.elapsed().as_secs_f64();
    Ok(Warm {
        alpha,
        stats,
        estimate: g,
        subsample: placed,
        extension,
    })
}

/// The gradient of the subsample's solution `placed` on every row of this process into `g`
/// (see [`start_over`]): on this process's rows of the subsample (`sampled`) the gradient its
/// solve kept (`kept`, over those rows in order) where every process has one — the same
/// quantity, which the working-set rounds maintain to the end (covtype's 232,405-point rung:
/// half of a 19-second pass) — and a pass over the other rows; else a pass over every row.
/// Returns the rows the pass covered over all processes. Collective.
fn subsample_gradient(
    comm: &dyn Comm,
    host: &mut dyn WarmHost,
    placed: &ActiveSet,
    sampled: &[bool],
    kept: Option<&[f64]>,
    g: &mut [f64],
) -> Result<usize> {
    let own = sampled.iter().filter(|&&s| s).count();
    let kept = kept.filter(|k| k.len() == own);
    let everywhere = !on_any(comm, kept.is_none())?;
    let (Some(kept), true) = (kept, everywhere) else {
        host.gradient(placed, g)?;
        return Ok(placed.dim());
    };
    let rest: Vec<usize> = (0..sampled.len()).filter(|&i| !sampled[i]).collect();
    let total = super::rounds::round_slice(comm, rest.len())?.total;
    let mut out = vec![0.0; rest.len()];
    host.gradient_on_rows(placed, &rest, total, &mut out)?;
    for (&i, v) in rest.iter().zip(out) {
        g[i] = v;
    }
    for (i, &v) in (0..sampled.len()).filter(|&i| sampled[i]).zip(kept) {
        g[i] = v;
    }
    Ok(total)
}

/// Whether a warm start whose tenth (`points` of the problem's `m`) held `support` support
/// vectors climbs the ladder instead of extending it: where two thirds of the tenth's points
/// or more are support vectors, and from half of them where the ladder's first rung (half the
/// points) warm-starts itself ([`MIN_POINTS`]). A rung below it is solved cold, which costs
/// more than the tenth saves: a9a (60 % support vectors in its tenth, 26,008 points) 25 %
/// slower on the ladder, where the 60,000-point noisy set (52 %) trains 6–15 % faster on it
/// (550 outer iterations instead of 2,894: the half's solution predicts the whole's support
/// within 5 %, the tenth's 31 % low).
fn climbs(support: usize, points: usize, m: usize) -> bool {
    support * super::ws::MANY_SV_DEN >= points * super::ws::MANY_SV_NUM
        || (support * 2 >= points && m / LADDER >= MIN_POINTS)
}

/// True when the time limit or a stop request ended the solve `r`, or the budget is spent on
/// any process. Collective.
fn ended(comm: &dyn Comm, r: &SolveResult) -> Result<bool> {
    let own = matches!(
        r.stop,
        super::StopReason::TimeLimit | super::StopReason::Interrupted
    ) || crate::budget::spent();
    on_any(comm, own)
}

impl Warm {
    /// The run without rounds that goes on from this start: solved on `be` from the extended
    /// α within what is left of the time limit, the subsample's solution kept where the run
    /// was stopped before it improved on it ([`Warm::best_of`]).
    pub(crate) fn then_solve(
        mut self,
        prob: &Problem<'_>,
        be: &mut dyn super::Marks,
        params: &SolverParams,
        observers: &mut [&mut dyn super::Observer],
    ) -> Result<SolveResult> {
        let seconds = self.stats.seconds;
        let rest = SolverParams {
            time_limit: params
                .time_limit
                .map(|l| l.saturating_sub(std::time::Duration::from_secs_f64(seconds))),
            ..params.clone()
        };
        let alpha = std::mem::replace(&mut self.alpha, ActiveSet::new(0));
        let mut r = super::solve_from(prob, be, &rest, observers, Some((alpha, None)), None)?;
        r.seconds += seconds;
        Ok(self.best_of(r))
    }

    /// A warm start that ended before its extension: the subsample's solution.
    fn unextended(subsample: ActiveSet, stats: WarmStats) -> Warm {
        Warm {
            alpha: subsample.clone(),
            stats,
            estimate: Vec::new(),
            subsample,
            extension: None,
        }
    }

    /// The run's result when the warm start was stopped: the subsample's solution, with the
    /// subsample's last f and gap, not certified.
    pub fn stopped_result(self, start: Instant) -> SolveResult {
        let s = self.stats;
        SolveResult {
            alpha: self.subsample,
            iterations: s.iterations,
            f: s.sub_f,
            gap: s.sub_gap,
            certified_f: None,
            certified_gap: None,
            stop: s.stopped.unwrap_or(super::StopReason::TimeLimit),
            seconds: start.elapsed().as_secs_f64(),
            certify_seconds: 0.0,
            stats: Default::default(),
            shrink: None,
            warm: Some(s),
            rho: None,
            gradient: None,
        }
    }

    /// `r`, the run that went on from this start, or the subsample's solution instead when
    /// the run was stopped uncertified further from its optimum than the subsample's was
    /// from its own: a gap estimate above both 2f (some point still has a negative margin)
    /// and the subsample's gap relative to its 2f. The extended start is a guess, and a run
    /// stopped soon after it can predict worse than the subsample's model (a lower objective
    /// says little here: spreading α over more points lowers f by itself).
    pub fn best_of(self, mut r: SolveResult) -> SolveResult {
        let stopped = matches!(
            r.stop,
            super::StopReason::TimeLimit | super::StopReason::Interrupted
        );
        let rel = |gap: f64, f: f64| {
            if f > 0.0 {
                gap / (2.0 * f)
            } else {
                f64::INFINITY
            }
        };
        let worse = !(rel(r.gap, r.f) <= rel(self.stats.sub_gap, self.stats.sub_f).max(1.0));
        let mut stats = self.stats;
        if stopped && r.certified_f.is_none() && worse {
            stats.fell_back = true;
            r.gradient = None;
            r.alpha = self.subsample;
            r.f = self.stats.sub_f;
            r.gap = self.stats.sub_gap;
        }
        r.warm = Some(stats);
        r
    }
}

/// The share of the time left before a deadline that the extended start's first gradient
/// pass may take (the rest is for the iterations that improve it).
const AFFORD: f64 = 0.5;

/// Salt of the nested half's sample (any constant: the half is another draw from the
/// subsample's rows).
const HALF_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// How the warm start solves a subsample: as training solves a problem
/// ([`super::entry::solve_on`]), handed in by the caller so that this module does not depend on
/// the ones that call it.
pub type SubSolve<'s> =
    dyn Fn(&Problem<'_>, &dyn Backends, &SolverParams) -> Result<SolveResult> + 's;

/// `prob` restricted to `rows` (ascending), solved by `solve` on the backends
/// [`Backends::on_subsample`] gives it (a GPU's small subsample on the CPU, where it is
/// several times faster: measured on an H100, docs/BENCHMARKS.md).
fn solve_subset(
    prob: &Problem<'_>,
    rows: &[usize],
    backends: &dyn Backends,
    params: &SolverParams,
    solve: &SubSolve<'_>,
) -> Result<SolveResult> {
    let sub = prob.data.subset(rows);
    let sub_prob = prob.restricted(&sub, rows)?;
    let on_sub = backends.on_subsample(rows, &sub);
    solve(&sub_prob, on_sub.as_ref(), params)
}

#[cfg(test)]
mod tests {
    use super::{FRACTION, GROWTH_MIN, predicted_growth, predicted_support};
    use crate::active::ActiveSet;
    use crate::comm::{RowSlice, SelfComm};

    /// The cap grows the subsample's support by outer^e, e the growth exponent between the
    /// nested subsample and the subsample, within [GROWTH_MIN, 1].
    #[test]
    fn predicted_support_follows_the_growth_between_the_half_and_the_subsample() {
        // Support proportional to points (a9a-like): e = 1, FRACTION times the subsample's.
        assert_eq!(predicted_support(1_000, 500), (1_000 * FRACTION, 1.0));
        // Support ∝ points^0.75, extended to ten times the points: 1,000 · 10^0.75 = 5,623.4.
        let (cap, e) = predicted_growth(1_000, (1_000.0 / 2f64.powf(0.75)) as usize, 10.0);
        assert!((e - 0.75).abs() < 5e-3, "{e}");
        assert!((5_600..=5_650).contains(&cap), "{cap}");
        // The same growth extended to twice the points (a rung of the ladder).
        let (cap, e) = predicted_growth(1_000, (1_000.0 / 2f64.powf(0.75)) as usize, 2.0);
        assert!((e - 0.75).abs() < 5e-3, "{e}");
        assert_eq!(cap, (1_000.0 * 2f64.powf(e)).ceil() as usize);
        // Faster than proportional, or a nested subsample without support: never above e = 1.
        assert_eq!(predicted_growth(1_000, 300, 10.0), (10_000, 1.0));
        assert_eq!(predicted_growth(10, 0, 10.0), (100, 1.0));
        // Flat or shrinking (noise): the floor.
        let (cap, e) = predicted_growth(1_000, 1_100, 10.0);
        assert_eq!(e, GROWTH_MIN);
        assert_eq!(cap, (1_000.0 * 10f64.sqrt()).ceil() as usize);
    }

    /// The ladder from two thirds of the tenth's points support vectors; from half of them
    /// only where the ladder's first rung warm-starts itself.
    #[test]
    fn the_ladder_is_climbed_where_most_of_the_tenth_is_support() {
        use super::{MIN_POINTS, climbs};
        let big = 2 * MIN_POINTS;
        let tenth = big / FRACTION;
        // Two thirds: on any problem that warm-starts.
        assert!(climbs(tenth * 2 / 3 + 1, tenth, big));
        assert!(climbs(2_000, 3_000, MIN_POINTS));
        // Half: where the half warm-starts (m / 2 ≥ MIN_POINTS), not below.
        assert!(climbs(tenth / 2, tenth, big));
        assert!(!climbs(tenth / 2, tenth, big - 1));
        assert!(!climbs(1_400, 2_600, 26_000));
        // Fewer: never.
        assert!(!climbs(tenth / 2 - 1, tenth, 10 * big));
    }

    /// The subsample's rows take the gradient its solve kept, the other rows one pass; where
    /// the kept gradient is missing or of another length, one pass over every row.
    #[test]
    fn the_subsample_rows_take_the_kept_gradient_and_the_rest_one_pass() {
        use super::{SolveResult, SolverParams, WarmHost, subsample_gradient};
        use crate::error::Result;
        /// Every row's "gradient" is 100 + its index from a pass over all rows, 200 + its
        /// index from a pass over some; the rows each pass covered are recorded.
        #[derive(Default)]
        struct Host {
            all: usize,
            some: Vec<usize>,
        }
        impl WarmHost for Host {
            fn solve_subset(&mut self, _: &[usize], _: &SolverParams) -> Result<SolveResult> {
                unreachable!("not solved here")
            }
            fn gradient(&mut self, _: &ActiveSet, g: &mut [f64]) -> Result<()> {
                self.all += 1;
                for (i, v) in g.iter_mut().enumerate() {
                    *v = 100.0 + i as f64;
                }
                Ok(())
            }
            fn gradient_on_rows(
                &mut self,
                _: &ActiveSet,
                rows: &[usize],
                total: usize,
                out: &mut [f64],
            ) -> Result<()> {
                assert_eq!(total, rows.len(), "one process");
                self.some.extend_from_slice(rows);
                for (v, &i) in out.iter_mut().zip(rows) {
                    *v = 200.0 + i as f64;
                }
                Ok(())
            }
            fn inv_c(&self, _: usize) -> f64 {
                1.0
            }
        }
        let placed = ActiveSet::new(6);
        let sampled = [true, false, false, true, true, false];
        let kept = [-1.0, -2.0, -3.0];
        let (mut host, mut g) = (Host::default(), vec![0.0; 6]);
        let passed =
            subsample_gradient(&SelfComm, &mut host, &placed, &sampled, Some(&kept), &mut g)
                .unwrap();
        assert_eq!(g, [-1.0, 201.0, 202.0, -2.0, -3.0, 205.0]);
        assert_eq!((passed, host.all, &host.some[..]), (3, 0, &[1, 2, 5][..]));
        for kept in [None, Some(&kept[..2])] {
            let (mut host, mut g) = (Host::default(), vec![0.0; 6]);
            let passed =
                subsample_gradient(&SelfComm, &mut host, &placed, &sampled, kept, &mut g).unwrap();
            assert_eq!(g, [100.0, 101.0, 102.0, 103.0, 104.0, 105.0]);
            assert_eq!((passed, host.all, host.some.len()), (6, 1, 0));
        }
    }

    #[test]
    fn extension_keeps_the_most_violated_points_up_to_the_cap() {
        let every = |m: usize| RowSlice {
            first: 0,
            rows: m,
            total: m,
        };
        let extend = |guess: &[f64], cap: usize| {
            super::extend(&SelfComm, &every(guess.len()), guess, cap).expect("one process")
        };
        // Points 1 and 4 are the most violated; 0 and 3 tie below them; 2 is not violated.
        let guess = [0.5, 2.0, 0.0, 0.5, 3.0];
        // The lower index wins the tie, and the points come in index order with their guesses.
        assert_eq!(extend(&guess, 3), [(0, 0.5), (1, 2.0), (4, 3.0)]);
        // Under the cap every positive guess stays.
        assert_eq!(extend(&guess, 10).len(), 4);
        assert!(extend(&[0.0, -1.0], 5).is_empty());
    }

    /// The extended α keeps the subsample's weights in proportion, adds the guesses on the
    /// same scale and sums to one; the added part is α's own weights on those points.
    #[test]
    fn extended_alpha_is_the_subsample_plus_the_added_points_normalised() {
        let mut placed = ActiveSet::new(6);
        placed.set(4, 0.75);
        placed.set(1, 0.25);
        let (alpha, added, scale) =
            super::combine(&placed, &[(0, 0.5), (5, 0.5)]).expect("points added");
        assert_eq!(scale, 0.5);
        assert_eq!(alpha.indices(), [0, 1, 4, 5], "index order");
        for (i, want) in [(0, 0.25), (1, 0.125), (2, 0.0), (4, 0.375), (5, 0.25)] {
            assert_eq!(alpha.get(i), want, "point {i}");
        }
        assert_eq!(added.indices(), [0, 5]);
        assert_eq!(
            (added.get(0), added.get(5), added.get(1)),
            (0.25, 0.25, 0.0)
        );
        // α = s·placed + added, point by point.
        for i in 0..6 {
            assert_eq!(alpha.get(i), scale * placed.get(i) + added.get(i));
        }
        assert!(super::combine(&placed, &[]).is_none());
        assert!(super::combine(&placed, &[(0, f64::INFINITY)]).is_none());
    }

    /// Over ranks (threads), each holding a part of the guesses, the extension is the one
    /// process's, point for point and bit for bit.
    #[test]
    fn extension_over_ranks_is_the_one_process_extension() {
        let guess: Vec<f64> = (0..41)
            .map(|i| ((i * 7919) % 13) as f64 * 0.25 - 1.0)
            .collect();
        let one = super::extend(
            &SelfComm,
            &RowSlice {
                first: 0,
                rows: guess.len(),
                total: guess.len(),
            },
            &guess,
            9,
        )
        .unwrap();
        let parts = crate::comm::on_threads(3, |c| {
            let bounds = [0, 5, 30, 41];
            let r = crate::comm::Comm::rank(c);
            let slice = RowSlice {
                first: bounds[r],
                rows: bounds[r + 1] - bounds[r],
                total: guess.len(),
            };
            let own = &guess[slice.range()];
            super::extend(c, &slice, own, 9).unwrap()
        });
        for a in parts {
            assert_eq!(a, one);
        }
    }
}
