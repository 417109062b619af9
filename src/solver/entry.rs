//! How training solves one problem without sampling: by working-set rounds where shrinking
//! applies ([`super::shrink`]), else on one backend, warm-started where [`super::warm`]
//! applies. The modules it calls get the way to solve a subsample from it
//! ([`super::warm::SubSolve`]), so none of them depends on another in a circle.

use super::shrink::{self, ShrinkParams};
use super::warm::{self, SubSolve};
use super::{Observer, SolveResult, SolverParams, solve};
use crate::backend::{Backends, CpuConfig};
use crate::error::Result;
use crate::problem::Problem;
use std::time::Instant;

/// Solves `prob` on `backends` as training solves one problem without sampling: by
/// working-set rounds where `sp` applies, else on one backend, warm-started where
/// [`warm::applies`].
pub fn solve_on(
    prob: &Problem<'_>,
    backends: &dyn Backends,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: Option<ShrinkParams>,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    let deadline = params
        .time_limit
        .and_then(|t| crate::budget::deadline_after(Instant::now(), t));
    crate::budget::within(deadline, || {
        solve_within(prob, backends, cpu, params, sp, observers)
    })
}

/// [`solve_on`] within the time limit's budget.
fn solve_within(
    prob: &Problem<'_>,
    backends: &dyn Backends,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: Option<ShrinkParams>,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    let m = prob.len();
    if let Some(s) = sp.filter(|s| s.applies(params.algorithm(), m)) {
        return solve_rounds(prob, backends, cpu, params, &s, observers);
    }
    if !warm::applies(params, m) {
        let mut be = backends.open(prob, cpu, None)?;
        return solve(prob, be.as_mut(), params, observers);
    }
    let t = Instant::now();
    let sub: &SubSolve<'_> = &|p, b, sub_params| solve_on(p, b, cpu, sub_params, sp, &mut []);
    let warm = warm::start(prob, backends, params, sub)?;
    if warm.stats.stopped.is_some() {
        return Ok(warm.stopped_result(t));
    }
    let mut be = backends.open(prob, cpu, None)?;
    warm.then_solve(prob, be.as_mut(), params, observers)
}

/// `prob` by working-set rounds ([`shrink::solve`]) with `sp`, whatever the problem's size,
/// warm-started where [`warm::applies`] (its subsample solved as [`solve_on`] solves it).
pub fn solve_rounds(
    prob: &Problem<'_>,
    backends: &dyn Backends,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: &ShrinkParams,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    let s = *sp;
    let sub: &SubSolve<'_> = &|p, b, sub_params| solve_on(p, b, cpu, sub_params, Some(s), &mut []);
    shrink::solve(prob, backends, cpu, params, sp, observers, sub)
}
