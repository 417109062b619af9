//! Working-set shrinking over ranks: the start of [`crate::solver::shrink`] (the warm start of
//! [`crate::solver::warm`] included, its subsamples solved over the ranks) and the rounds of
//! [`crate::solver::rounds`], with each rank holding its own rows' gradient and marks. A round
//! is a distributed run ([`DistBackend`]) over the ranks' rows in W, numbered as one process
//! numbers W (rank order, ascending); the rebuild and the certification are the exact passes
//! of the distributed backend (`Known`). Every choice — the subsamples, the extension, each W —
//! is one process's, made over all ranks' points. Both screen the warm start's estimates in
//! f32, but one process over rows that hold every support vector (each kernel value among
//! them computed once) and a rank over its own; one process also screens its rebuilds and
//! brings its exact passes forward, where the ranks compute them whole in f64.
//! So without a warm start or a rebuild (below [`crate::solver::warm::MIN_POINTS`] points,
//! in a run that converges in its first round) the iterates and the result are the
//! single-process ones, to the bit with f64 columns; with them, the same method to the same
//! stop rule, the model within the certified gaps of the single-process one.

use super::backend::DistBackend;
use super::comm::Comm;
use super::known::Known;
use super::slice::RowSlice;
use crate::active::ActiveSet;
use crate::backend::{CpuConfig, Device};
use crate::error::Result;
use crate::problem::Problem;
use crate::solver::rounds::{ExactPasses, Found, RoundCtx, RoundHost, ShrinkParams};
use crate::solver::shrink::{Start, StartHost, starting_point, with_warm};
use crate::solver::warm::WarmHost;
use crate::solver::{Observer, SolveResult, SolverParams, StopRule, init, solve_from};
use std::time::Instant;

/// A rank's rounds: its exact passes ([`Known`]), each round's distributed backend, and the
/// warm start's subsamples solved over the ranks.
struct Ranks<'a> {
    comm: &'a dyn Comm,
    known: Known<'a>,
    prob: &'a Problem<'a>,
    /// This rank's rows of the problem.
    slice: RowSlice,
    device: &'a Device,
    cpu: CpuConfig,
    sp: &'a ShrinkParams,
    partial_sums: bool,
}

impl ExactPasses for Ranks<'_> {
    /// Every rank runs the pass whole, whatever its own clock says: the ranks must agree on
    /// what it found.
    fn certify(&mut self, alpha: &ActiveSet, g: &mut Vec<f64>) -> Result<Option<(f64, f64)>> {
        crate::budget::unlimited(|| self.known.certify(alpha, g)).map(Some)
    }
}

impl RoundHost for Ranks<'_> {
    fn round(
        &mut self,
        ctx: &RoundCtx<'_>,
        start: (ActiveSet, Vec<f64>),
        found: &mut Found,
        observers: &mut [&mut dyn Observer],
    ) -> Result<SolveResult> {
        let (comm, rows) = (ctx.comm, ctx.rows);
        let sub;
        let sub_prob;
        // The round's problem: W's rows (the whole problem when W is everything, as in one
        // process), their repeats grouped when one process would group W's.
        let round_prob = if ctx.round.total == self.slice.total {
            self.prob
        } else {
            sub = self.prob.data.subset(rows);
            let group = super::backend::grouping_over_ranks(comm, &sub)?;
            let layout = super::known::layout_over_ranks(comm, &sub, group)?;
            sub_prob = self
                .prob
                .restricted(&sub, rows)?
                .with_distinct_rows(group)
                .with_layout_stats(layout);
            &sub_prob
        };
        let local = self.device.backend(round_prob, self.cpu)?;
        let mut be = DistBackend::new(comm, round_prob, local, ctx.round)?
            .with_partial_sums(self.partial_sums);
        let mut check = ctx.check(found);
        let r = solve_from(
            round_prob,
            &mut be,
            ctx.params,
            observers,
            Some((start.0, Some(start.1))),
            Some(ctx.yield_check(&mut check)),
        )?;
        drop(check);
        found.keep_gradient(ctx, self.slice.total, &r, &mut be)?;
        Ok(r)
    }
}

impl WarmHost for Ranks<'_> {
    /// The subsample's rows of this rank, their repeats grouped as one process would group
    /// the subsample's, solved over the ranks as [`solve_by_rules`] solves a problem.
    fn solve_subset(&mut self, rows: &[usize], params: &SolverParams) -> Result<SolveResult> {
        let own: Vec<usize> = rows
            .iter()
            .filter(|&&j| self.slice.range().contains(&j))
            .map(|&j| j - self.slice.first)
            .collect();
        let sub = self.prob.data.subset(&own);
        let group = super::backend::grouping_over_ranks(self.comm, &sub)?;
        let layout = super::known::layout_over_ranks(self.comm, &sub, group)?;
        let sub_prob = self
            .prob
            .restricted(&sub, &own)?
            .with_distinct_rows(group)
            .with_layout_stats(layout);
        let sub_slice = crate::solver::rounds::round_slice(self.comm, own.len())?;
        solve_by_rules(
            self.comm,
            &sub_prob,
            sub_slice,
            (self.device, self.cpu),
            params,
            self.sp,
            self.partial_sums,
            &mut [],
        )
    }

    fn gradient(&mut self, alpha: &ActiveSet, g: &mut [f64]) -> Result<()> {
        g.copy_from_slice(&self.known.estimated_gradient(alpha, None)?);
        Ok(())
    }

    fn inv_c(&self, i: usize) -> f64 {
        self.prob.inv_c(i)
    }

    /// Screened in f32 where the screen applies, as in one process; else exact (f64), the
    /// pass a block of `total` rows split over the ranks.
    fn gradient_on_rows(
        &mut self,
        alpha: &ActiveSet,
        rows: &[usize],
        total: usize,
        out: &mut [f64],
    ) -> Result<()> {
        self.known.fetch(alpha.indices())?;
        if !rows.is_empty() {
            out.copy_from_slice(&self.known.estimated_gradient(alpha, Some((rows, total)))?);
        }
        Ok(())
    }
}

impl StartHost for Ranks<'_> {
    /// The initial α (the single-process vertex choice over the ranks' rows) and its exact
    /// gradient on this rank's rows.
    fn cold(&mut self, params: &SolverParams) -> Result<(ActiveSet, Vec<f64>)> {
        let m = self.slice.total;
        self.known
            .fetch(&init::sample(m, params.init_size, params.seed))?;
        let known = &self.known;
        let alpha =
            init::initial_alpha_by(m, params.init_size, params.seed, params.eps, &|i, j| {
                known.q(i, j)
            });
        let g = self.known.exact_gradient(&alpha, None)?;
        Ok((alpha, g))
    }
}

/// Solves `prob` (this rank's rows `slice` of it) over the ranks as one process solves a
/// problem by [`crate::solver::entry::solve_on`]: by rounds where `sp` applies, else by the
/// full-gradient loop. Collective.
#[allow(clippy::too_many_arguments)]
fn solve_by_rules(
    comm: &dyn Comm,
    prob: &Problem<'_>,
    slice: RowSlice,
    (device, cpu): (&Device, CpuConfig),
    params: &SolverParams,
    sp: &ShrinkParams,
    partial_sums: bool,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    if sp.applies(params.algorithm(), slice.total) {
        return solve(
            comm,
            prob,
            slice,
            device,
            cpu,
            params,
            sp,
            partial_sums,
            observers,
        );
    }
    let local = device.backend(prob, cpu)?;
    let mut be = DistBackend::new(comm, prob, local, slice)?.with_partial_sums(partial_sums);
    crate::solver::solve(prob, &mut be, params, observers)
}

/// Runs `params.algorithm` (an FW variant or the CVM) by working-set rounds over the ranks:
/// this rank holds rows `slice` of the problem in `prob` and runs each round's local backend
/// on `device`; every rank must call it and gets the single-process result of
/// [`crate::solver::shrink::solve`]: the same warm start, rounds and stop rule, and below
/// the warm start's size ([`crate::solver::warm::MIN_POINTS`]) the same iterates, to the bit
/// on the CPU with f64 columns. Collective.
#[allow(clippy::too_many_arguments)]
pub fn solve(
    comm: &dyn Comm,
    prob: &Problem<'_>,
    slice: RowSlice,
    device: &Device,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: &ShrinkParams,
    partial_sums: bool,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    params.check()?;
    let start = Instant::now();
    let mut known = Known::new(comm, prob, slice)?;
    let kappa = meb_kappa(&mut known, prob, params.stop)?;
    let mut host = Ranks {
        comm,
        known,
        prob,
        slice,
        device,
        cpu,
        sp,
        partial_sums,
    };
    let (alpha, warm, g, in_w) = match starting_point(comm, slice, &mut host, params, sp)? {
        Start::Ready(s) => s,
        Start::Stopped(w) => return Ok(w.stopped_result(start)),
    };
    let result = crate::solver::rounds::run(
        comm,
        slice,
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

/// Warm-started without rounds (one process's [`crate::solver::entry::solve_on`] where
/// shrinking is off): the warm start over the ranks, then the distributed full-gradient loop
/// from it. Collective.
#[allow(clippy::too_many_arguments)]
pub fn solve_warm_started(
    comm: &dyn Comm,
    prob: &Problem<'_>,
    slice: RowSlice,
    device: &Device,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: &ShrinkParams,
    partial_sums: bool,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    let start = Instant::now();
    let mut host = Ranks {
        comm,
        known: Known::new(comm, prob, slice)?,
        prob,
        slice,
        device,
        cpu,
        sp,
        partial_sums,
    };
    let warm = crate::solver::warm::start_over(comm, slice, &mut host, params)?;
    if warm.stats.stopped.is_some() {
        return Ok(warm.stopped_result(start));
    }
    let local = device.backend(prob, cpu)?;
    let mut be = DistBackend::new(comm, prob, local, slice)?.with_partial_sums(partial_sums);
    warm.then_solve(prob, &mut be, params, observers)
}

/// κ = Q_ii for the MEB rule (0 for the gap rule), read from point 0's owner. Collective.
fn meb_kappa(known: &mut Known<'_>, prob: &Problem<'_>, stop: StopRule) -> Result<f64> {
    Ok(match stop {
        StopRule::Gap => 0.0,
        StopRule::Meb => {
            crate::solver::check_meb_kernel(prob)?;
            known.fetch(&[0])?;
            known.q_diag(0)
        }
    })
}
