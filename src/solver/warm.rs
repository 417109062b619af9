//! Warm start of the working-set solver on large problems.
//!
//! The cold start (20 random points solved exactly, [`super::init`]) leaves the outer
//! iterations to find every support vector a working set at a time; on data where most points
//! are support vectors that is most of the run. Here the problem restricted to a random tenth of
//! its points is solved first — by the same rules, so a large problem warm-starts recursively
//! — and its solution is extended to every point by the L2-SVM's optimality condition: at the
//! optimum every point with α_i > 0 has
//!
//! ```text
//! g_i = y_i F(x_i) + α_i / C_i = 2f,   so   α_i = C_i · (2f − y_i F(x_i))⁺,
//! ```
//!
//! with F(x) = Σ_j α_j y_j (k(x_j, x) + 1). The subsample's F and 2f give every α_i at once,
//! normalised onto the simplex. The guess only sets where the run starts: the gradient is then
//! computed exactly from it, and the run stops on the whole problem's duality gap like any
//! other, so it reaches the same optimum (within the certified gaps) as a cold start.

use super::shrink::{self, ShrinkParams};
use super::{Algorithm, Observer, SolveResult, SolverParams, init, solve, solve_from};
use crate::active::ActiveSet;
use crate::backend::{CpuConfig, Device};
use crate::error::Result;
use crate::problem::Problem;
use std::time::Instant;

/// Smallest problem that warm-starts (below it the cold start's outer iterations are few).
pub const MIN_POINTS: usize = 20_000;
/// The subsample is one point in this many.
pub const FRACTION: usize = 10;

/// What the warm start did (reported with the run's summary).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WarmStats {
    /// Points of the subsample solved first.
    pub points: usize,
    /// Its iterations (its own warm start's included).
    pub iterations: u64,
    /// Points with α_i > 0 in the extended start.
    pub support: usize,
    /// Seconds: the subsample's solve and the extension.
    pub seconds: f64,
}

/// True when `params` asks for a warm start and the problem of `m` points is large enough.
pub fn applies(params: &SolverParams, m: usize) -> bool {
    params.warm_start && params.algorithm == Algorithm::Ws && m >= MIN_POINTS
}

/// The warm start of `prob` (see the module documentation): its subsample solved on `device`
/// (rounds where `sp` applies to it), and the extended α.
pub fn start(
    prob: &Problem<'_>,
    device: &Device,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: Option<ShrinkParams>,
) -> Result<(ActiveSet, WarmStats)> {
    let t = Instant::now();
    let m = prob.len();
    let mut rows = init::sample(m, m / FRACTION, params.seed);
    rows.sort_unstable();
    let sub = prob.data.subset(&rows);
    let sub_prob = prob.restricted(&sub, &rows)?;
    let sub_params = SolverParams {
        certify: false,
        ..params.clone()
    };
    let r = solve_on(
        &sub_prob,
        &device.restrict(&rows),
        cpu,
        &sub_params,
        sp,
        &mut [],
    )?;
    // The subsample's F on every point, exactly: g_i = y_i F(x_i) + α_i / C_i.
    let mut placed = ActiveSet::new(m);
    for (k, a) in r.alpha.iter() {
        placed.set(rows[k], a);
    }
    let mut g = vec![0.0; m];
    crate::backend::exact::full_gradient(prob, &placed, &mut g);
    let two_f: f64 = placed.iter().map(|(i, a)| a * g[i]).sum();
    let guess: Vec<f64> = (0..m)
        .map(|i| {
            let yf = g[i] - placed.get(i) * prob.inv_c(i);
            ((two_f - yf) / prob.inv_c(i)).max(0.0)
        })
        .collect();
    let total: f64 = guess.iter().sum();
    let alpha = if total > 0.0 && total.is_finite() {
        let mut a = ActiveSet::new(m);
        for (i, &v) in guess.iter().enumerate() {
            if v > 0.0 {
                a.set(i, v / total);
            }
        }
        a
    } else {
        // Every point already has margin 2f under the subsample's F: its own α is the start.
        placed
    };
    let stats = WarmStats {
        points: rows.len(),
        iterations: r.iterations + r.warm.map_or(0, |w| w.iterations),
        support: alpha.len(),
        seconds: t.elapsed().as_secs_f64(),
    };
    Ok((alpha, stats))
}

/// Solves `prob` on `device` as training solves one problem without sampling: by
/// working-set rounds where `sp` applies, else on one backend, warm-started where
/// [`applies`].
pub fn solve_on(
    prob: &Problem<'_>,
    device: &Device,
    cpu: CpuConfig,
    params: &SolverParams,
    sp: Option<ShrinkParams>,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    let m = prob.len();
    if let Some(s) = sp.filter(|s| s.applies(params.algorithm, m)) {
        return shrink::solve(prob, device, cpu, params, &s, observers);
    }
    if !applies(params, m) {
        let mut be = device.backend(prob, cpu)?;
        return solve(prob, be.as_mut(), params, observers);
    }
    let (alpha, warm) = start(prob, device, cpu, params, sp)?;
    let rest = SolverParams {
        time_limit: params
            .time_limit
            .map(|l| l.saturating_sub(std::time::Duration::from_secs_f64(warm.seconds))),
        ..params.clone()
    };
    let mut be = device.backend(prob, cpu)?;
    let mut r = solve_from(
        prob,
        be.as_mut(),
        &rest,
        observers,
        Some((alpha, None)),
        None,
    )?;
    r.seconds += warm.seconds;
    r.warm = Some(warm);
    Ok(r)
}
