//! Working-set shrinking over ranks: the rounds of [`crate::solver::rounds`] with each rank
//! holding its own rows' gradient and marks. A round is a distributed run ([`DistBackend`]) over
//! the ranks' rows in W, numbered as one process numbers W (rank order, ascending); the rebuild
//! and the certification are the exact passes of the distributed backend (`Known`). So the
//! rounds, the iterates and the result are the single-process ones, to the bit with f64
//! columns.

use super::backend::DistBackend;
use super::comm::Comm;
use super::known::Known;
use super::slice::RowSlice;
use crate::active::ActiveSet;
use crate::backend::{CpuConfig, Device};
use crate::error::Result;
use crate::problem::Problem;
use crate::solver::rounds::{ExactPasses, Found, RoundCtx, RoundHost, ShrinkParams};
use crate::solver::{Observer, SolveResult, SolverParams, StopRule, init, solve_from};
use std::time::Instant;

/// A rank's rounds: its exact passes ([`Known`]) and each round's distributed backend.
struct Ranks<'a> {
    known: Known<'a>,
    prob: &'a Problem<'a>,
    device: &'a Device,
    /// Points of the whole problem.
    m: usize,
    cpu: CpuConfig,
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
        let round_prob = if ctx.round.total == self.m {
            self.prob
        } else {
            sub = self.prob.data.subset(rows);
            let group = super::backend::grouping_over_ranks(comm, &sub)?;
            sub_prob = self.prob.restricted(&sub, rows)?.with_distinct_rows(group);
            &sub_prob
        };
        let local = self.device.backend(round_prob, self.cpu)?;
        let mut be = DistBackend::new(comm, round_prob, local, ctx.round)?
            .with_partial_sums(self.partial_sums);
        let mut check = ctx.check(found);
        solve_from(
            round_prob,
            &mut be,
            ctx.params,
            observers,
            Some((start.0, Some(start.1))),
            Some(ctx.yield_check(&mut check)),
        )
    }
}

/// Runs `params.algorithm` (an FW variant or the CVM) by working-set rounds over the ranks:
/// this rank holds rows `slice` of the problem in `prob` and runs each round's local backend
/// on `device`; every rank must call it and gets the single-process result of
/// [`crate::solver::shrink::solve`] (to the bit on the CPU with f64 columns).
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
    let (alpha, g) = initial_point(&mut known, slice.total, params)?;
    let mut in_w = vec![false; slice.rows];
    crate::solver::rounds::grow(comm, &slice, &mut in_w, &g, &alpha, sp.margin, sp)?;
    let mut host = Ranks {
        known,
        prob,
        device,
        m: slice.total,
        cpu,
        partial_sums,
    };
    crate::solver::rounds::run(
        comm,
        slice,
        &mut host,
        (alpha, g, in_w),
        kappa,
        start,
        params,
        sp,
        observers,
    )
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

/// The initial α (the single-process vertex choice over the ranks' rows) and its exact
/// gradient on this rank's rows. Collective.
fn initial_point(
    known: &mut Known<'_>,
    m: usize,
    params: &SolverParams,
) -> Result<(ActiveSet, Vec<f64>)> {
    known.fetch(&init::sample(m, params.init_size, params.seed))?;
    let alpha = init::initial_alpha_by(m, params.init_size, params.seed, params.eps, &|i, j| {
        known.q(i, j)
    });
    let g = known.exact_gradient(&alpha, None)?;
    Ok((alpha, g))
}
